/* base/log.c — logfmt lines on stderr (see log.h). One fprintf per line, so lines
 * from different threads never interleave. */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The level below which lines are dropped: set at start (or by a test), read by every log
 * call on any thread. Relaxed loads and stores: it orders nothing else, and a line logged
 * just around a change may use either level. */
static atomic_int threshold = LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

void log_set_level(const char *name) {
    for (int i = 0; i < 4; i++)
        if (name && !strcmp(name, names[i])) { atomic_store_explicit(&threshold, i, memory_order_relaxed); return; }
    atomic_store_explicit(&threshold, LOG_INFO, memory_order_relaxed);
}

int log_enabled(enum log_level l) { return (int)l >= atomic_load_explicit(&threshold, memory_order_relaxed); }

void log_line(enum log_level l, const char *fmt, ...) {
    char body[2048], ts[40];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    fprintf(stderr, "ts=%s.%03ldZ level=%s %s\n", ts, now.tv_nsec / 1000000, names[l], body);
}
