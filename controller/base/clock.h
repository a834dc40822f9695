/* base/clock.h — the monotonic clock every layer uses for timeouts, deadlines and
 * intervals (kube, runtime, sandbox, the CLI), so a wall-clock jump never moves one.
 * Wall-clock time (timestamps written to the API server) is kj_now_ms in kube/kjson.h.
 * base/ is the bottom layer: it includes nothing of the project's. */
#ifndef YAO_BASE_CLOCK_H
#define YAO_BASE_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC (an arbitrary origin: compare and subtract only). */
int64_t clock_mono_ms(void);
/* Microseconds on the same clock, for durations below a millisecond (latencies). */
int64_t clock_mono_us(void);

/* The monotonic instant at_ms (as clock_mono_ms counts) as a timespec, for
 * pthread_cond_timedwait on a condition variable made by clock_mono_cond_init. A
 * negative at_ms gives the origin (a wait that times out at once). */
void clock_mono_timespec(int64_t at_ms, struct timespec *out);

/* pthread_cond_init of a condition variable whose timed waits use CLOCK_MONOTONIC.
 * Returns pthread_cond_init's result (0 or an error number). */
int clock_mono_cond_init(pthread_cond_t *cond);

#endif
