/* base/backoff.c — pure backoff arithmetic: capped exponential growth and additive
 * jitter, both saturating instead of overflowing. It owns no clock, no sleep and no
 * random source; the work queue and the watch reconnect loop supply those. */
#include "base/backoff.h"

/* base_ms * 2^failures capped at cap_ms; a non-positive base or cap gives 0. The loop
 * stops as soon as the cap is reached, so it runs at most 63 times for any failures. */
int64_t backoff_exponential_ms(unsigned failures, int64_t base_ms, int64_t cap_ms) {
    int64_t d = base_ms;
    unsigned i;

    if (base_ms <= 0 || cap_ms <= 0) return 0;
    if (d >= cap_ms) return cap_ms;
    for (i = 0; i < failures; i++) {
        if (d > cap_ms / 2) return cap_ms;
        d *= 2; /* d <= cap_ms / 2, so no overflow */
    }
    return d;
}

/* d + d * jitter * r, saturating at INT64_MAX. jitter is clamped to [0, 1] and r to
 * [0, 1] (NaN counts as 0); a non-positive d is returned unchanged. */
int64_t backoff_jitter_ms(int64_t d, double jitter, double r) {
    double extra;
    int64_t add;

    if (d <= 0) return d;
    if (!(jitter > 0.0)) return d; /* also catches NaN */
    if (jitter > 1.0) jitter = 1.0;
    if (!(r > 0.0)) return d;
    if (r > 1.0) r = 1.0;
    extra = (double)d * jitter * r;
    if (!(extra < 9223372036854775808.0)) return INT64_MAX; /* 2^63: the cast would be UB */
    add = (int64_t)extra;
    if (add > INT64_MAX - d) return INT64_MAX;
    return d + add;
}
