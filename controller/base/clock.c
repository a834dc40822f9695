/* base/clock.c — the monotonic clock (see clock.h). */
#include "base/clock.h"

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t clock_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Microseconds on CLOCK_MONOTONIC. */
int64_t clock_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* at_ms as a timespec on the same clock. */
void clock_mono_timespec(int64_t at_ms, struct timespec *out) {
    if (at_ms < 0) at_ms = 0;
    out->tv_sec = (time_t)(at_ms / 1000);
    out->tv_nsec = (long)(at_ms % 1000) * 1000000L;
}

/* A condition variable on CLOCK_MONOTONIC. */
int clock_mono_cond_init(pthread_cond_t *cond) {
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);
    if (rc) return rc;
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!rc) rc = pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}
