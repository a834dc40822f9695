/* sandbox/reconcile.h — the controller: informers for Sandboxes, the Pods, PVCs and
 * Services it owns and the StorageClasses their claims use, the work queue between them and the workers, and the reconcile pass for one
 * Sandbox key (cache → decide → act → status). The decisions themselves are in
 * sandbox/reconcile_decide.c; object shapes in sandbox/builders.c; this file is the I/O glue. */
#ifndef YAO_SANDBOX_RECONCILE_H
#define YAO_SANDBOX_RECONCILE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "kube/events.h"
#include "kube/rest.h"
#include "runtime/informer.h"
#include "runtime/queue.h"
#include "base/strmap.h"
#include "sandbox/capacity_decide.h"
#include "sandbox/netpol.h"
#include "sandbox/records.h"
#include "sandbox/shard_decide.h"

#define SBX_METRIC_PHASES 8        /* Pending ... Unknown (sandbox/metrics.c) */
#define SBX_METRIC_LIFECYCLES 4
#include "sandbox/spec.h"
#include "sandbox/starts.h"

struct sbx_controller_options {
    struct sbx_defaults defaults;
    const char *namespace_;     /* watch one namespace; NULL = all namespaces */
    /* The caps of sandbox/capacity_decide.h: max_running (YAO_SANDBOX_MAX) and
     * max_running_per_user (YAO_SANDBOX_MAX_PER_USER), 0 = none. */
    struct sbx_admission_limits limits;
    int workers;
    /* --warm-workspaces (YAO_SANDBOX_WARM_WORKSPACES): claims of the flag defaults' workspace
     * kept Bound and ready in each namespace with Sandboxes of no class (no default
     * SandboxClass); 0 = none. A SandboxClass sets its own (spec.workspace.warmPool). */
    int warm_workspaces;
    int64_t resync_ms;          /* safety-net requeue of every Sandbox (0 = off) */
    /* --shards / --shard (sandbox/shard_decide.h): serve only the Sandboxes of shard `shard` of
     * `shards`, and only the objects labelled with it. shards <= 1: everything, no label. */
    int shards, shard;
    const char *field_manager;
    /* The Event recorder's own client (kube/events.h): the controller takes it over and
     * frees it. NULL: no Events are recorded. */
    struct kube_client *events_client;
};

/* Reconcile outcome counters, for metrics. */
struct sbx_controller_stats {
    uint64_t reconciles, errors, status_writes, creates, deletes, conflicts, events;
    uint64_t runs_started, runs_finished;   /* one-shot pods created, results recorded */
    uint64_t reclaims;             /* idle sandboxes stopped to admit a waiting one */
    uint64_t warm_adoptions;       /* warm-pool claims adopted by a new Sandbox */
    uint64_t warm_misses;          /* a new Sandbox found its shape's pool without a Bound claim */
    uint64_t latency_buckets[12];  /* le 1,2,5,10,25,50,100,250,500,1000,2500,+Inf ms */
    double latency_sum_ms;
};

struct sbx_controller {
    struct kube_client *client;
    struct sbx_controller_options opt;
    struct informer *sandboxes, *pods, *pvcs;
    struct informer *services;     /* the Services of Sandboxes with spec.service.enabled */
    struct informer *netpols;      /* the NetworkPolicies of Sandboxes of an isolated class */
    struct informer *classes;      /* StorageClasses: binding mode of a workspace claim */
    struct informer *sandbox_classes;  /* SandboxClasses (class.c) */
    int sandbox_classes_on;        /* readable at start; otherwise the flag defaults alone */
    struct informer *namespaces;   /* Namespaces, with their labels only (class.c) */
    int namespaces_on;             /* readable at start; otherwise scoped classes refuse */
    struct workqueue *queue;
    struct kube_recorder *recorder; /* Events, written by their own thread (NULL: none) */
    pthread_t *threads;
    atomic_int nthreads;           /* workers started: also read by /readyz (probe thread) */
    atomic_int stopping;           /* set by sbx_controller_stop */
    pthread_mutex_t lock;          /* guards stats, the trim fields and terminating */
    uint64_t passes_since_trim;    /* reconciles since the heap was last trimmed */
    /* Cached Sandboxes by phase and lifecycle, kept by the Sandbox handler for /metrics
     * (sandbox/metrics.c): a scrape never walks the cache. Under lock. */
    unsigned sandbox_counts[SBX_METRIC_PHASES][SBX_METRIC_LIFECYCLES];
    int64_t trimmed_ms;            /* when (monotonic) */
    struct sbx_records records;    /* one record per Sandbox, by UID (sandbox/records.h) */
    /* Namespaces that refused a create because they are being deleted -> int64_t * (the
     * monotonic ms until which their passes are skipped). Under lock. */
    struct strmap terminating;
    struct sbx_admission *admission; /* the running cap, kept by the handlers (sandbox/capacity_decide.h) */
    struct sbx_controller_stats stats;
    /* The API server addresses this controller knows (the in-cluster
     * KUBERNETES_SERVICE_HOST when it is an IP): excepted from the egress of an isolated
     * sandbox unless its class allows the API server (sandbox/netpol.h). */
    struct sbx_cidr apiserver[1];
    size_t napiserver;
    int netpols_on;                /* readable at start; otherwise isolated classes are InvalidSpec */
    struct sbx_warm *warm;         /* warm workspaces: claims by owner, pool claims (warm.c) */
    struct sbx_starts *starts;     /* create → Ready and wake latencies for /metrics (starts.h) */
    /* Sharding (sandbox/shard_decide.h): {shards, shard}, the Sandbox informer's filter argument,
     * and the shard labels of what this shard creates (NULL when shards <= 1). */
    int shard_key[2];
    struct sbx_shard_labels shard_labels;
    const struct sbx_shard_labels *shard_label;
};

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

/* One reconcile pass for "namespace/name". 0 on success (*requeue_ms > 0 asks to look
 * again after that long; < 0 says the Sandbox and everything it owned are gone: the key
 * leaves the queue for good, not even the resync brings it back), -1 on failure (err
 * set; the caller backs off). */
int sbx_reconcile(struct sbx_controller *ctl, const char *key, int64_t *requeue_ms,
                  char *err, size_t errlen);

void sbx_controller_stats(struct sbx_controller *ctl, struct sbx_controller_stats *out);
/* True once workers run (all caches synced). */
int sbx_controller_ready(struct sbx_controller *ctl);

#endif
