/* sandbox/reconcile_int.h — what the files of the reconcile pass share, and nothing else
 * includes: reconcile.c (informers, workers, the pass) and its satellites activity.c
 * (activity at an idle deadline), capacity.c (the running cap), class.c (SandboxClass
 * and Namespace informers), metrics.c (/metrics), orphans.c (what a deleted Sandbox left
 * behind), reclaim.c, shard.c, status.c (status, Events, last-used-at) and warm.c (warm
 * pools). Not an API: the controller's API is reconcile.h. The pure helpers they share
 * are below them, in sandbox/objects.h. */
#ifndef YAO_SANDBOX_RECONCILE_INT_H
#define YAO_SANDBOX_RECONCILE_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "sandbox/builders.h"
#include "sandbox/objects.h"   /* the pure object helpers every satellite uses */
#include "sandbox/reconcile.h"
#include "sandbox/reconcile_decide.h"

/* The answer of a conditional write whose resourceVersion no longer matched: the Sandbox
 * changed (or went) after the cache showed it, so the decision must be made again. */
#define SBX_STALE 1
/* After a conditional write found the Sandbox changed, look again this soon at the
 * latest (the watch delivers the newer version, which queues the key by itself). */
#define STALE_REQUEUE_MS 50
/* A capacity slot reserved for a pod we just created stays counted this long even if
 * the pod has not reached the cache yet. */
#define RESERVATION_MS 30000
/* A pod or claim we just created and the cache has not shown yet is waited for this
 * long before its absence counts (then a create finds it, 409, and reads it). */
#define EXPECT_MS 30000
/* A Sandbox that waits for capacity is looked at again this often, so its
 * status.queuePosition follows those ahead of it (a freed slot queues only as many
 * Sandboxes as it frees). */
#define QUEUE_REFRESH_MS 10000

/* ---- reconcile.c: shared helpers ---- */
/* Bump a stats counter under the controller's lock. */
void sbx_ctl_count(struct sbx_controller *ctl, uint64_t *field);
/* DELETE path with the preconditions uid and resourceVersion (rv NULL: uid alone). The HTTP status (err set
 * unless 2xx, 404 or 409), or -1. */
long sbx_delete_preconditioned(struct sbx_controller *ctl, const char *path, const char *uid, const char *rv,
                               char *err, size_t errlen);
/* Does the StorageClass name (NULL: the cluster's default class, its name then copied to
 * resolved when given) bind volumes only for a consumer (WaitForFirstConsumer)? An
 * unknown class counts as binding at once. */
int sbx_storage_class_binds_late(struct sbx_controller *ctl, const char *name, char *resolved, size_t len);
/* How claims of StorageClass name (NULL: the cluster's default class) bind. */
enum sbx_binding sbx_storage_class_binding(struct sbx_controller *ctl, const char *name, char *resolved, size_t len);
/* Merge-patch n entries keys[i] = values[i] into metadata.<map> ("labels", "annotations")
 * of ns/resource/name if it still has uid. 0 patched, 1 gone or replaced (404, 409), -1. */
int sbx_patch_owned_map(struct sbx_controller *ctl, const char *ns, const char *resource, const char *name,
                        const char *uid, const char *map, size_t n, const char *const *keys,
                        const char *const *values, char *err, size_t errlen);
/* Delete ns/resource/name if it still has uid. 0 or -1. */
int sbx_delete_owned(struct sbx_controller *ctl, const char *ns, const char *resource,
                     const char *name, const char *uid, char *err, size_t errlen);

/* ---- shard.c ---- */
/* Sharded (--shards > 1): label this shard's objects that lack its label (made before
 * sharding, or under another --shards; see shard_decide.h), before the informers start. One
 * patch per such object, sequential: a one-time cost when sharding is turned on (about
 * 60 objects a second on the test machine). 0, or -1 (an error, or *stop set). */
int sbx_shard_migrate(struct sbx_controller *ctl, const atomic_int *stop, char *err, size_t errlen);
/* The same for one object found by a create's 409 (ours, but not in this shard's cache). */
int sbx_shard_adopt_existing(struct sbx_controller *ctl, const char *resource, const cJSON *obj, char *err,
                             size_t errlen);

/* ---- capacity.c ---- */
/* Informer handlers: a Sandbox / a pod changed (see sandbox/capacity_decide.h). */
void sbx_capacity_on_sandbox(struct sbx_controller *ctl, const char *key, const cJSON *old, const cJSON *cur);
void sbx_capacity_on_pod(struct sbx_controller *ctl, const cJSON *old, const cJSON *cur);
/* Queue the Sandboxes first in line, as many as there are free slots. */
void sbx_capacity_wake(struct sbx_controller *ctl);
/* The pass resolved this sandbox's SandboxClass (NULL = none) with its per-user cap. */
void sbx_capacity_class(struct sbx_controller *ctl, const char *uid, const char *cls, int cap);
/* May this sandbox (its class caps its user at class_cap, 0 = none) start a pod? Reserves
 * its slot when it may; else its place in line (*position, 1 = next) or *user_capped (its
 * user's own cap, or its class's for its user, holds it). */
int sbx_capacity_admit(struct sbx_controller *ctl, const char *uid, int class_cap, int64_t now, int *position,
                       int *user_capped, int *class_capped);
/* End uid's reservation; leave_line: it wants no pod at all. */
void sbx_capacity_release(struct sbx_controller *ctl, const char *uid, int leave_line);

/* ---- reclaim.c ---- */
/* Tell the running cap whether this pass found the sandbox reclaimable (running, idle
 * clock as d->last_used_ms, a class with spec.reclaim, session or long-running). */
void sbx_capacity_reclaimable(struct sbx_controller *ctl, const char *uid, const struct sbx_spec *spec,
                              const struct sbx_decision *d, int pod_present);
/* A Sandbox waits in line for the global cap: reclaim what can be (see reclaim.c).
 * Returns when a Sandbox will have been idle long enough to be reclaimed, if none is yet
 * (0 = no such time). */
int64_t sbx_capacity_reclaim(struct sbx_controller *ctl, int64_t now);

/* ---- class.c ---- */
struct sbx_class;
/* Create the SandboxClass informer (not started). 0 or -1. */
int sbx_classes_init(struct sbx_controller *ctl);
/* Probe the read and start the informer when allowed. 0 or -1. */
int sbx_classes_start(struct sbx_controller *ctl);
/* True once the class cache is loaded (or classes are off). */
int sbx_classes_synced(struct sbx_controller *ctl);
/* The class of sb (spec.className, else its namespace's default class, else the cluster's
 * default): 0 with *found = 1 and out filled (sbx_class_free it), 0 with *found = 0 (no
 * class: the flag defaults), -1 with the InvalidSpec message in why and its reason in
 * *reason (SBX_REASON_INVALID: a named class missing or invalid; SBX_REASON_CLASS_NOT_ALLOWED:
 * the class does not serve sb's namespace). */
int sbx_class_for(struct sbx_controller *ctl, const cJSON *sb, struct sbx_class *out, int *found,
                  const char **reason, char *why, size_t whylen);

/* ---- warm.c: warm workspaces (the decisions are in sandbox/warm_decide.h) ---- */
/* The name of a namespace's pool pass in the work queue: "<ns>/#warm" (no Sandbox can
 * be named so). */
#define SBX_WARM_QUEUE_NAME "#warm"
int sbx_warm_init(struct sbx_controller *ctl);
void sbx_warm_free(struct sbx_controller *ctl);
void sbx_warm_queue_key(const char *ns, char *out, size_t n);
/* Informer handlers: a PVC, a Sandbox, a SandboxClass changed. The PVC handler runs
 * before the Sandbox of an adopted claim is queued, so its pass finds the claim. */
void sbx_warm_on_pvc(struct sbx_controller *ctl, const cJSON *old, const cJSON *cur);
void sbx_warm_on_sandbox(struct sbx_controller *ctl, const cJSON *old, const cJSON *cur);
void sbx_warm_on_class(struct sbx_controller *ctl, const cJSON *old, const cJSON *cur);
/* The Sandbox of uid gave its adopted claim up (SBX_ACT_RELEASE_CLAIM): it adopts no pool
 * claim for SBX_WARM_RELEASE_WINDOW_MS, and sbx_warm_released says so meanwhile. */
void sbx_warm_note_released(struct sbx_controller *ctl, const char *uid);
int sbx_warm_released(struct sbx_controller *ctl, const char *uid);
/* A binder pod (SBX_ANN_BINDS_CLAIM) changed in the pod cache: index it, queue its pool pass. */
void sbx_warm_on_binder_pod(struct sbx_controller *ctl, const cJSON *old, const cJSON *cur);
/* The claim the Sandbox uid controls, as the cache shows it, when it has a name of its
 * own (adopted): 1 with its name in out, or 0 (its claim, if any, is the one its IDs
 * name). */
int sbx_warm_claim_of(struct sbx_controller *ctl, const char *uid, char *out, size_t outlen);
/* Unadopted pool claims in the index (all namespaces), not being deleted: Bound, and
 * not yet (provisioning). */
void sbx_warm_stats(struct sbx_controller *ctl, unsigned *bound, unsigned *pending);
/* The pool pass of namespace ns: create and delete pool claims. *requeue_ms -1 when no
 * pool is wanted there and none is left. 0 or -1. */
int sbx_warm_reconcile(struct sbx_controller *ctl, const char *ns, int64_t *requeue_ms, char *err, size_t errlen);
/* A new Sandbox (owner, resolved spec) without a claim: adopt a Bound claim of its pool
 * in ns with one conditional PATCH. 1 adopted (*adopted the patched claim, the caller
 * deletes it; its name in claim), 0 none to adopt (make its own), -1 error (err). */
int sbx_warm_adopt(struct sbx_controller *ctl, const char *ns, const struct sbx_owner *owner,
                   const struct sbx_spec *spec, cJSON **adopted, char *claim, size_t claimlen, char *err,
                   size_t errlen);

/* ---- orphans.c ---- */
/* The Sandbox ns/name is gone: sweep what it owned after a grace period; *requeue_ms
 * asks to look again, or is -1 once nothing is left (drop the key). 0 or -1. */
int sbx_orphans_sweep(struct sbx_controller *ctl, const char *key, const char *ns, const char *name,
                      int64_t *requeue_ms, char *err, size_t errlen);
/* The Sandbox key (uid) is deleted: its record keeps the names of the pod and claim it
 * owned (user, chat from it or from an object it owned; own_claim: the claim's name when
 * the object is that claim), so the sweep looks them up instead of walking the caches. */
void sbx_orphans_deleted(struct sbx_controller *ctl, const char *key, const char *uid, const char *user,
                         const char *chat, const char *own_claim);
/* obj, controlled by the Sandbox key, is deleted or being deleted: when the Sandbox is not
 * in the (synced) cache and its deletion is not on record (deleted before this process
 * started, or its tombstone purged while the deletions it started still echo), note it
 * with the names obj carries. */
void sbx_orphans_note(struct sbx_controller *ctl, const char *key, const cJSON *obj, int obj_is_claim);

/* ---- activity.c ---- */
/* At an idle deadline of a Sandbox whose class counts activity: the pod's CPU from
 * metrics.k8s.io above threshold_millis refreshes last-used-at (conditional on sb's
 * version) and returns SBX_ACTIVE; 0 acts on the deadline (idle, or not measurable: a
 * Warning Event says which); SBX_STALE the Sandbox changed; -1 error. */
#define SBX_ACTIVE 2
int sbx_activity_probe(struct sbx_controller *ctl, const char *ns, const char *name, const cJSON *sb,
                       const char *pod_name, int64_t threshold_millis, int64_t now, char *err, size_t errlen);

/* ---- status.c ---- */
void sbx_event_record(struct sbx_controller *ctl, const cJSON *sb, const char *type, const char *reason,
                      const char *msg);
void sbx_event_transition(struct sbx_controller *ctl, const cJSON *sb, const struct sbx_observed *o,
                          const struct sbx_decision *d, const char *pod_name);
int sbx_last_used_rewrite(struct sbx_controller *ctl, const char *ns, const char *name, const cJSON *sb,
                          const char *value, int64_t now, char *err, size_t errlen);
void sbx_last_used_warn_invalid(struct sbx_controller *ctl, const cJSON *sb, const char *value);
cJSON *sbx_status_desired(const cJSON *sb, const struct sbx_decision *d, const cJSON *pod,
                          const char *pod_name, const char *claim, int64_t now);
int sbx_status_write(struct sbx_controller *ctl, const char *ns, const char *name,
                     const cJSON *sb, cJSON *st, const char *fence_rv, char *new_rv, size_t new_rv_len,
                     char *err, size_t errlen);
long sbx_sandbox_delete(struct sbx_controller *ctl, const char *ns, const char *name, const char *uid,
                        const char *rv, char *err, size_t errlen);
/* Status Pending, Ready=False/InvalidSpec, Accepted=False/reason (NULL: InvalidSpec) with
 * the message why; a Warning Event when that is new. */
int sbx_status_report_invalid(struct sbx_controller *ctl, const char *ns, const char *name, const cJSON *sb,
                              const char *reason, const char *why, char *err, size_t errlen);
/* A Warning Event of d->invalid_reason when the Accepted condition says something new. */
void sbx_event_invalid(struct sbx_controller *ctl, const cJSON *sb, const struct sbx_decision *d);

#endif
