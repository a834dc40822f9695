/* tests/unit/test_clock.c — the shared monotonic clock: it never goes back, it advances
 * with a sleep by about the time slept, its timespec form is the same instant, its
 * microseconds agree with its milliseconds, and a
 * condition variable made by clock_mono_cond_init times out at a monotonic deadline. */
#include "check.h"
#include "base/clock.h"

#include <errno.h>

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

TEST(never_goes_back) {
    int64_t prev = clock_mono_ms();
    for (int i = 0; i < 100000; i++) {
        int64_t now = clock_mono_ms();
        CHECK(now >= prev);
        prev = now;
    }
}

TEST(advances_by_the_time_slept) {
    int64_t t0 = clock_mono_ms();
    sleep_ms(120);
    int64_t d = clock_mono_ms() - t0;
    CHECK(d >= 120);
    CHECK(d < 5000);
}

TEST(microseconds_agree_with_milliseconds) {
    int64_t ms0 = clock_mono_ms(), us = clock_mono_us(), ms1 = clock_mono_ms();
    CHECK(us / 1000 >= ms0);
    CHECK(us / 1000 <= ms1);
    int64_t t0 = clock_mono_us();
    sleep_ms(20);
    int64_t d = clock_mono_us() - t0;
    CHECK(d >= 20000);
    CHECK(d < 5000000);
}

TEST(matches_clock_gettime) {
    struct timespec ts;
    int64_t before = clock_mono_ms();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t after = clock_mono_ms();
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    CHECK(before <= ms);
    CHECK(ms <= after);
}

TEST(timespec_of_an_instant) {
    struct timespec ts;
    clock_mono_timespec(12345, &ts);
    CHECK_INT(ts.tv_sec, 12);
    CHECK_INT(ts.tv_nsec, 345000000L);
    clock_mono_timespec(7000, &ts);
    CHECK_INT(ts.tv_sec, 7);
    CHECK_INT(ts.tv_nsec, 0);
    clock_mono_timespec(-5, &ts);   /* before the origin: the origin */
    CHECK_INT(ts.tv_sec, 0);
    CHECK_INT(ts.tv_nsec, 0);
}

TEST(cond_times_out_at_a_monotonic_deadline) {
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv;
    CHECK_INT(clock_mono_cond_init(&cv), 0);
    struct timespec until;
    int64_t t0 = clock_mono_ms();
    clock_mono_timespec(t0 + 150, &until);
    pthread_mutex_lock(&mu);
    int rc;
    while ((rc = pthread_cond_timedwait(&cv, &mu, &until)) == 0) {}
    pthread_mutex_unlock(&mu);
    int64_t waited = clock_mono_ms() - t0;
    CHECK_INT(rc, ETIMEDOUT);
    /* on a CLOCK_REALTIME condition variable a monotonic deadline (seconds since boot)
     * lies decades in the past and the wait ends at once */
    CHECK(waited >= 150);
    CHECK(waited < 5000);
    pthread_cond_destroy(&cv);
    pthread_mutex_destroy(&mu);
}
