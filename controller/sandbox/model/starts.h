/* sandbox/model/starts.h — how long users wait for a sandbox: the create → Ready and the
 * stopped → Running (wake, resume) histograms of /metrics, by lifecycle and class.
 *
 * Fed with every change the Sandbox informer sees (old → cur). A start is marked when it
 * begins (a Sandbox first seen without a phase; for a wake, the last touch or spec change
 * seen while it was Stopped, else the moment it leaves Stopped) and observed when
 * the Sandbox turns Running with Ready=True; a deletion, a finished one-shot or a stop
 * before Ready drops the mark. A Sandbox created while no controller ran is timed from its
 * creationTimestamp; a start already under way when this controller started is not timed
 * (whether it is a create or a wake, and when it began, are not known).
 * Owns its state and its lock; knows nothing of the controller. Times are handed in, so
 * the decisions are unit-tested (tests/unit/test_starts.c). */
#ifndef YAO_SANDBOX_STARTS_H
#define YAO_SANDBOX_STARTS_H

#include <stdint.h>

#include "base/dynbuf.h"
#include <cjson/cJSON.h>

#include "sandbox/model/sandboxview.h"

/* At most this many distinct class labels per histogram; later classes count as "_other". */
#define SBX_STARTS_MAX_CLASSES 64

struct sbx_starts;

struct sbx_starts *sbx_starts_new(void);
void sbx_starts_free(struct sbx_starts *s);

/* The Sandbox went from old to cur (either may be NULL: added, deleted). mono_ms is the
 * monotonic clock (base/clock.h), wall_ms the wall clock (kj_now_ms), both now. */
void sbx_starts_observe(struct sbx_starts *s, const struct sbx_sandbox_view *old, const struct sbx_sandbox_view *cur,
                        int64_t mono_ms, int64_t wall_ms);

/* Starts under way (marks not yet observed or dropped). */
unsigned sbx_starts_pending(struct sbx_starts *s);

/* Append both histograms (HELP, TYPE, buckets, sum, count) to out. 0 or -1 (ENOMEM). */
int sbx_starts_render(struct sbx_starts *s, struct dynbuf *out);

#endif
