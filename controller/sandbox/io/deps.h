/* sandbox/io/deps.h — what the controller hands each of its subsystems (status, owned
 * objects, StorageClasses, SandboxClasses, the running cap, reclaim, warm pools, orphans,
 * sharding, activity, metrics) when it makes them: the API client, the work queue, the
 * Event recorder, the per-Sandbox records, the caches of the kinds it watches, the
 * outcome counters and the flag defaults. Handles only: the controller owns everything
 * here and outlives every subsystem; a subsystem owns its own state and never sees the
 * controller itself (sandbox/manager/controller.c), which sits above all of them. */
#ifndef YAO_SANDBOX_DEPS_H
#define YAO_SANDBOX_DEPS_H

#include <stdatomic.h>
#include <stdint.h>

#include "kube/events.h"
#include "kube/rest.h"
#include "runtime/informer.h"
#include "runtime/queue.h"
#include "sandbox/model/records.h"
#include "sandbox/decide/shard_decide.h"
#include "sandbox/model/spec.h"

/* The answer of a conditional write whose resourceVersion no longer matched: the Sandbox
 * changed (or went) after the cache showed it, so the decision must be made again. */
#define SBX_STALE 1
/* A pod or claim we just created and the cache has not shown yet is waited for this
 * long before its absence counts (then a create finds it, 409, and reads it). */
#define EXPECT_MS 30000

/* What the controller did, counted where it is done (by any thread; read by /metrics). */
struct sbx_counters {
    atomic_uint_least64_t status_writes, creates, deletes, conflicts, events;
    atomic_uint_least64_t runs_started, runs_finished;   /* one-shot pods created, results recorded */
    atomic_uint_least64_t reclaims;        /* idle sandboxes stopped to admit a waiting one */
    atomic_uint_least64_t warm_adoptions;  /* warm-pool claims adopted by a new Sandbox */
    atomic_uint_least64_t warm_misses;     /* a new Sandbox found its shape's pool without a Bound claim */
};

static inline void sbx_count(atomic_uint_least64_t *counter) {
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

struct sbx_deps {
    struct kube_client *client;
    struct workqueue *queue;
    struct kube_recorder *recorder;        /* Events (NULL: none are recorded) */
    struct sbx_records *records;           /* one record per Sandbox, by UID */
    struct sbx_counters *counters;
    /* The caches: Sandboxes (this shard's), and the Pods, PVCs, Services and
     * NetworkPolicies they own; StorageClasses (only read). */
    struct informer *sandboxes, *pods, *pvcs, *services, *netpols, *storage_classes;
    const struct sbx_defaults *defaults;   /* the flag defaults of a Sandbox of no class */
    const char *namespace_;                /* the one namespace watched; NULL = all */
    /* Sharding (sandbox/decide/shard_decide.h): {shards, shard}, and the shard labels of what this
     * shard creates (NULL when not sharded). */
    int shard_key[2];
    const struct sbx_shard_labels *shard_label;
    /* NetworkPolicies readable (probed at start); otherwise isolated classes are InvalidSpec. */
    atomic_int netpols_on;
};

#endif
