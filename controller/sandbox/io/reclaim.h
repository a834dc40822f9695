/* sandbox/io/reclaim.h — a SandboxClass's spec.reclaim, the I/O side (reclaim.c): stop the
 * longest-idle reclaimable Sandboxes, each decided on a fresh read with a fenced status
 * write, to admit one waiting for the running cap. The running cap (capacity.c) calls
 * it with its state. */
#ifndef YAO_SANDBOX_RECLAIM_H
#define YAO_SANDBOX_RECLAIM_H

#include <stdint.h>

#include "sandbox/decide/capacity_decide.h"
#include "sandbox/io/deps.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/spec.h"

/* Record whether this pass found the sandbox reclaimable (running, idle clock as
 * d->last_used_ms, a class with spec.reclaim, session or long-running). */
void sbx_reclaim_note(struct sbx_slots *slots, const char *uid, const struct sbx_spec *spec,
                      const struct sbx_decision *d, int pod_present);
/* A Sandbox waits in line for the global cap: reclaim what can be. Returns when a Sandbox
 * will have been idle long enough to be reclaimed, if none is yet (0 = no such time). */
int64_t sbx_reclaim_run(const struct sbx_deps *deps, struct sbx_slots *slots, int64_t now);

#endif
