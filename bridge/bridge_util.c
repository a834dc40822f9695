/* bridge/bridge_util.c — the first-error-wins error record and the monotonic clock.
 * Nothing here touches a file descriptor. */
#include "bridge.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* Record an error unless one is already recorded; control characters (a peer-supplied
 * reason, a path with a newline) become '?' so the message stays on one line. */
void bridge_err_set(struct bridge_err *e, int code, const char *fmt, ...) {
    va_list ap;
    char *p;

    if (e->code != 0) return;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    for (p = e->msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
}

/* Milliseconds on the monotonic clock (deadlines must not move with wall-clock jumps). */
int64_t bridge_now_ms(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
