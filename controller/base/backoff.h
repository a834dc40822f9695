/* base/backoff.h — pure backoff arithmetic shared by the work queue (per-item retry)
 * and the watch reconnect loop. No clocks, no sleeping: callers pass the failure count
 * and a random source. */
#ifndef YAO_BASE_BACKOFF_H
#define YAO_BASE_BACKOFF_H

#include <stdint.h>

/* base_ms * 2^failures, capped at cap_ms, without overflow for any failures value.
 * failures == 0 → base_ms (or cap_ms if smaller); base_ms or cap_ms <= 0 → 0. */
int64_t backoff_exponential_ms(unsigned failures, int64_t base_ms, int64_t cap_ms);
/* Adds up to `jitter` (0.0–1.0) fraction of d: d + d*jitter*r, with r in [0,1) from
 * rand01 (a caller-supplied uniform sample), never exceeding INT64_MAX. The added part is
 * truncated to whole ms; jitter and r are clamped to [0, 1] (NaN counts as 0); d <= 0 is
 * returned unchanged. */
int64_t backoff_jitter_ms(int64_t d, double jitter, double r);

#endif
