/* sandbox/manager/reconcile.h — the controller's API: make it (informers for Sandboxes, the Pods,
 * PVCs, Services and NetworkPolicies it owns and the StorageClasses their claims use, the
 * work queue, the subsystems), run its workers, run one pass, read its stats, metrics and
 * caches, stop it. The controller itself is opaque (controller.c, the manager; one Sandbox's
 * pass is reconcile.c, see pass.h). The decisions are in
 * sandbox/decide/reconcile_decide.c; object shapes in sandbox/model/builders.c. */
#ifndef YAO_SANDBOX_RECONCILE_H
#define YAO_SANDBOX_RECONCILE_H

#include <stdatomic.h>
#include <stdint.h>
#include "base/dynbuf.h"
#include "kube/rest.h"
#include "runtime/informer.h"
#include "sandbox/decide/capacity_decide.h"
#include "sandbox/io/metrics.h"
#include "sandbox/model/outcome.h"
#include "sandbox/model/spec.h"

struct sbx_controller_options {
    struct sbx_defaults defaults;
    const char *namespace_;     /* watch one namespace; NULL = all namespaces */
    /* The caps of sandbox/decide/capacity_decide.h: max_running (YAO_SANDBOX_MAX) and
     * max_running_per_user (YAO_SANDBOX_MAX_PER_USER), 0 = none. */
    struct sbx_cap_limits limits;
    int workers;
    /* --warm-workspaces (YAO_SANDBOX_WARM_WORKSPACES): claims of the flag defaults' workspace
     * kept Bound and ready in each namespace with Sandboxes of no class (no default
     * SandboxClass); 0 = none. A SandboxClass sets its own (spec.workspace.warmPool). */
    int warm_workspaces;
    int64_t resync_ms;          /* safety-net requeue of every Sandbox (0 = off) */
    /* --shards / --shard (sandbox/decide/shard_decide.h): serve only the Sandboxes of shard `shard` of
     * `shards`, and only the objects labelled with it. shards <= 1: everything, no label. */
    int shards, shard;
    const char *field_manager;
    /* The Event recorder's own client (kube/events.h): the controller takes it over and
     * frees it. NULL: no Events are recorded. */
    struct kube_client *events_client;
};

/* The controller (controller.c). Opaque: its subsystems are handed what they need
 * (sandbox/env.h) and never see it. */
struct sbx_controller;

/* Set up informers and the queue (nothing runs yet). NULL with err on failure. */
struct sbx_controller *sbx_controller_new(struct kube_client *c, const struct sbx_controller_options *o,
                                          char *err, size_t errlen);
/* Start the informers, wait until their caches are synced (or stop is set), then start
 * the workers. 0, or -1 when stopped before syncing. */
int sbx_controller_run(struct sbx_controller *ctl, const atomic_int *stop);
/* The same without the workers: the probes, the shard migration and the informers, until
 * their caches are synced. Nothing takes keys from the queue; the caller runs each pass
 * itself with sbx_reconcile (the unit tests of the pass do). Call it or
 * sbx_controller_run, once. 0, or -1 when stopped before syncing. */
int sbx_controller_start_caches(struct sbx_controller *ctl, const atomic_int *stop);
/* Stop workers and informers: the client is cancelled (requests in flight return within
 * ~20 ms), then the Events still waiting are flushed for at most SBX_EVENT_FLUSH_MS. */
#define SBX_EVENT_FLUSH_MS 2000
void sbx_controller_stop(struct sbx_controller *ctl);
void sbx_controller_free(struct sbx_controller *ctl);

/* One pass for a work key (sandbox/model/workkey.h): a Sandbox's "namespace/name", or a
 * namespace's warm pool or ownerless sweep; a text that is no key is forgotten. Done (the
 * resync looks again), after N ms, forget (the Sandbox and everything it owned are gone:
 * the key leaves the queue for good, not even the resync brings it back), or failed (err
 * set: the caller backs off, or holds a namespace whose deletion refused a create). */
struct sbx_outcome sbx_reconcile(struct sbx_controller *ctl, const char *key, struct kube_error *err);

void sbx_controller_stats(struct sbx_controller *ctl, struct sbx_controller_stats *out);
/* The Prometheus exposition of this controller (sandbox/io/metrics.h). 0 or -1. */
int sbx_controller_metrics(struct sbx_controller *ctl, int is_leader, struct dynbuf *out);
/* Does it record Events (it was given an events client)? */
int sbx_controller_records_events(struct sbx_controller *ctl);
/* One of its caches, for tests that wait for the cache to show what they wrote. */
enum sbx_cache { SBX_CACHE_SANDBOXES, SBX_CACHE_PODS, SBX_CACHE_PVCS, SBX_CACHE_SANDBOX_CLASSES };
struct informer *sbx_controller_cache(struct sbx_controller *ctl, enum sbx_cache which);
/* True once workers run (all caches synced). */
int sbx_controller_ready(struct sbx_controller *ctl);

#endif
