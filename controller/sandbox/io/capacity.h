/* sandbox/io/capacity.h — the running cap's glue to the caches (capacity.c; the decisions
 * are sandbox/decide/capacity_decide.h): it owns the cap's state, fed by the informer handlers,
 * and answers the pass whether its Sandbox may start a pod. */
#ifndef YAO_SANDBOX_CAPACITY_H
#define YAO_SANDBOX_CAPACITY_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/model/sandboxview.h"

#include "sandbox/decide/capacity_decide.h"
#include "sandbox/io/deps.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/spec.h"

struct sbx_capacity;
/* The caps of limits (max_running, max_running_per_user; 0 = none). NULL: out of memory. */
struct sbx_capacity *sbx_capacity_new(const struct sbx_deps *deps, const struct sbx_cap_limits *limits);
void sbx_capacity_free(struct sbx_capacity *cap);
/* Informer handlers: a Sandbox / a pod changed. */
void sbx_capacity_on_sandbox(struct sbx_capacity *cap, const char *key, const struct sbx_sandbox_view *old,
                             const struct sbx_sandbox_view *cur);
void sbx_capacity_on_pod(struct sbx_capacity *cap, const cJSON *old, const cJSON *cur);
/* Queue the Sandboxes first in line, as many as there are free slots. */
void sbx_capacity_wake(struct sbx_capacity *cap);
/* The pass resolved this sandbox's SandboxClass (NULL = none) with its per-user cap
 * (counting a userID across namespaces when across is set). */
void sbx_capacity_class(struct sbx_capacity *cap, const char *uid, const char *cls, int class_cap, int across);
/* May this sandbox (its class caps its user at class_cap, 0 = none) start a pod? Reserves
 * its slot when it may; else its place in line (*position, 1 = next) or *user_capped (its
 * user's own cap, or its class's for its user, holds it; *class_capped: the class's). */
int sbx_capacity_admit(struct sbx_capacity *cap, const char *uid, int class_cap, int64_t now, int *position,
                       int *user_capped, int *class_capped);
/* uid's slot, held by its fork's copier that is about to go, passes to its sandbox pod: a
 * reservation keeps it meanwhile. 1 when it held one. */
int sbx_capacity_keep(struct sbx_capacity *cap, const char *uid);
/* A pass saw uid's pod (the cache's): its reservation passes to the pod when the pod holds
 * a slot (sbx_slots_pod_seen), else (finished, terminating) it ends. */
void sbx_capacity_pod_seen(struct sbx_capacity *cap, const char *uid, const cJSON *pod);
/* End uid's reservation; leave_line: it wants no pod at all. */
void sbx_capacity_release(struct sbx_capacity *cap, const char *uid, int leave_line);
/* Whether this pass found the sandbox reclaimable (see reclaim.h). */
void sbx_capacity_reclaimable(struct sbx_capacity *cap, const char *uid, const struct sbx_spec *spec,
                              const struct sbx_decision *d, int pod_present);
/* A Sandbox waits in line for the global cap: reclaim what can be (reclaim.h). */
int64_t sbx_capacity_reclaim(struct sbx_capacity *cap, int64_t now);

#endif
