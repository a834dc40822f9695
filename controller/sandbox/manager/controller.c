/* sandbox/manager/controller.c — the manager (see reconcile.h, the controller's API): it makes the
 * informers for Sandboxes and what they own, their handlers (each change queues the
 * Sandbox key it concerns), the work queue, the workers, the subsystems (the running cap,
 * SandboxClasses, warm pools, /metrics) and the stats, and hands each subsystem struct
 * sbx_deps (deps.h). Data flows one way: watch → cache → handlers → queue key → a worker →
 * the key's reconciler: a Sandbox's pass (reconcile.c, through struct sbx_pass_env), a
 * namespace's warm pool (warm.c) or its ownerless-object sweep (orphans.c) → requeue. No
 * module below sees struct sbx_controller; the build fails if one calls back up here. */
#include "base/errfmt.h"
#include "sandbox/model/objects.h"
#include "sandbox/manager/reconcile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/heap.h"
#include "base/log.h"
#include "kube/events.h"
#include "kube/kjson.h"
#include "sandbox/io/capacity.h"
#include "sandbox/io/class.h"
#include "sandbox/io/metrics.h"
#include "sandbox/io/orphans.h"
#include "sandbox/decide/orphans_decide.h"
#include "sandbox/manager/pass.h"
#include "sandbox/decide/reconcile_observe.h"
#include "sandbox/decide/shapes.h"
#include "sandbox/io/shard.h"
#include "sandbox/io/storage.h"
#include "sandbox/model/terminating.h"
#include "sandbox/io/warm.h"
#include "sandbox/model/warmbinder.h"
#include "sandbox/model/workkey.h"
#include "sandbox/model/workspacecopy.h"

/* How long the controller waits for the StorageClass cache before it starts anyway. */
#define CLASS_SYNC_WAIT_MS 5000

/* The controller: what it hands its subsystems (deps), the subsystems, the workers. */
struct sbx_controller {
    struct sbx_controller_options opt;
    struct sbx_deps deps;            /* client, queue, recorder, records, caches, counters */
    struct sbx_counters counters;  /* deps.counters */
    struct sbx_records records;    /* deps.records: one record per Sandbox, by UID (records.h) */
    struct sbx_shard_labels shard_labels;   /* deps.shard_label when sharded */
    struct sbx_capacity *capacity; /* the running cap (capacity.h) */
    struct sbx_classes *sandbox_classes;   /* SandboxClasses and Namespaces (class.h) */
    struct sbx_warm *warm;         /* warm workspaces (warm.h) */
    struct sbx_metrics *metrics;   /* per-phase counts and start timings (metrics.h) */
    pthread_t *threads;
    atomic_int nthreads;           /* workers started: also read by /readyz (probe thread) */
    atomic_int stopping;           /* set by sbx_controller_stop */
    pthread_mutex_t lock;          /* guards the pass counts and latencies, and the trim fields */
    uint64_t reconciles, errors;
    uint64_t latency_buckets[12];  /* le 1,2,5,10,25,50,100,250,500,1000,2500,+Inf ms */
    double latency_sum_ms;
    uint64_t passes_since_trim;    /* reconciles since the heap was last trimmed */
    int64_t trimmed_ms;            /* when (monotonic) */
    struct sbx_terminating *terminating;   /* namespaces being deleted (terminating.h) */
    /* The API server addresses this controller knows (the in-cluster
     * KUBERNETES_SERVICE_HOST when it is an IP): excepted from the egress of an isolated
     * sandbox unless its class allows the API server (sandbox/model/netpol.h). */
    struct sbx_cidr apiserver[1];
    size_t napiserver;
    struct sbx_pass_env pass;      /* what a Sandbox's pass reads and writes (pass.h) */
};

/* ---- paths ------------------------------------------------------------------------- */

/* Collection path of sandboxes in ns (or all namespaces when ns is NULL). */
static void sandboxes_path(char *out, size_t n, const char *ns) {
    if (ns) snprintf(out, n, "/apis/%s/v1alpha1/namespaces/%s/%s", SBX_GROUP, ns, SBX_PLURAL);
    else snprintf(out, n, "/apis/%s/v1alpha1/%s", SBX_GROUP, SBX_PLURAL);
}

/* ---- informer handlers --------------------------------------------------------------- */

/* A Sandbox changed: the running cap learns of it, and it is queued. A deleted one
 * leaves, in its record, the names of what it owned, so its orphans are found by name. */
static void on_sandbox(void *ud, const char *key, const cJSON *old, const cJSON *cur) {
    struct sbx_controller *ctl = ud;
    struct sbx_sandbox_view ov, cv;   /* parsed once for every subsystem; they live for this call */
    sbx_sandbox_view_parse(old, &ov);
    sbx_sandbox_view_parse(cur, &cv);
    const struct sbx_sandbox_view *o = old ? &ov : NULL, *c = cur ? &cv : NULL;
    sbx_capacity_on_sandbox(ctl->capacity, key, o, c);
    sbx_warm_on_sandbox(ctl->warm, o, c);
    sbx_metrics_on_sandbox(ctl->metrics, o, c);
    if (!cur && ov.meta.uid)
        sbx_orphans_deleted(&ctl->deps, ctl->warm, key, ov.meta.uid, ov.user_id, ov.chat_id, NULL);
    queue_add(ctl->deps.queue, key);
}

/* An object with the controller's labels and no owner left (orphans_decide.h): its
 * namespace's ownerless sweep is queued. */
static void note_ownerless(struct sbx_controller *ctl, const cJSON *cur) {
    if (!sbx_orphan_ownerless(cur)) return;
    char skey[SBX_WORK_KEY_MAX];
    if (sbx_work_key_format(SBX_WORK_OWNERLESS, kj_str(kj_path(cur, "metadata"), "namespace"), NULL, skey,
                            sizeof(skey)) == 0)
        queue_add(ctl->deps.queue, skey);
}

/* A Pod or PVC we own changed: a create expectation for it is met, and its Sandbox is
 * queued. */
static void on_owned_kind(struct sbx_controller *ctl, enum sbx_expect_kind kind_of, const struct sbx_meta *m,
                          int gone) {
    /* The name label may be sanitised; the controller ownerReference has the exact name. */
    const char *ns = m->namespace_, *owner = m->sandbox_owner;
    if (m->sandbox_owner_uid && m->uid) sbx_records_observed(&ctl->records, m->sandbox_owner_uid, kind_of, m->uid);
    if (ns && owner) {
        char skey[512];
        snprintf(skey, sizeof(skey), "%s/%s", ns, owner);
        if (gone || m->deleting) sbx_orphans_note(&ctl->deps, ctl->warm, skey, m, kind_of == SBX_EXPECT_CLAIM);
        queue_add(ctl->deps.queue, skey);
    }
}

/* on_owned_kind for the object of an informer event (cur, else old). */
static void on_owned_object(struct sbx_controller *ctl, enum sbx_expect_kind kind_of, const cJSON *old,
                            const cJSON *cur) {
    struct sbx_meta m;
    note_ownerless(ctl, cur);
    sbx_meta_read(cur ? cur : old, &m);
    on_owned_kind(ctl, kind_of, &m, !cur);
}

/* A PVC changed: the warm-workspace index first (which claim each Sandbox owns, the
 * pool claims), so the pass it queues finds an adopted claim by its owner. */
static void on_pvc(void *ud, const char *key, const cJSON *old, const cJSON *cur) {
    struct sbx_claim_view ov, cv;   /* parsed once; they live for this call */
    sbx_claim_view_parse(old, &ov);
    sbx_claim_view_parse(cur, &cv);
    sbx_warm_on_pvc(((struct sbx_controller *)ud)->warm, old ? &ov : NULL, cur ? &cv : NULL);
    note_ownerless(ud, cur);
    on_owned_kind(ud, SBX_EXPECT_CLAIM, cur ? &cv.meta : &ov.meta, !cur);
}

/* A Service changed: as a PVC. */
static void on_service(void *ud, const char *key, const cJSON *old, const cJSON *cur) {
    on_owned_object(ud, SBX_EXPECT_SERVICE, old, cur);
}

/* A NetworkPolicy changed: as a PVC. */
static void on_netpol(void *ud, const char *key, const cJSON *old, const cJSON *cur) {
    on_owned_object(ud, SBX_EXPECT_NETPOL, old, cur);
}

/* A Pod changed: as a PVC, and the running cap counts the slot it holds; one that went
 * away (or started terminating) wakes the first in line (sandbox/io/capacity.c). */
static void on_pod(void *ud, const char *key, const cJSON *old, const cJSON *cur) {
    struct sbx_controller *ctl = ud;
    const cJSON *obj = cur ? cur : old;
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    note_ownerless(ctl, cur);
    if (sbx_meta_annotation(&m, SBX_ANN_BINDS_CLAIM)) {
        /* A warm pool's binder (no sandbox pod): the pool pass looks after it. */
        sbx_warm_on_binder_pod(ctl->warm, old, cur);
        return;
    }
    const char *copy_for = sbx_meta_annotation(&m, SBX_ANN_COPY_FOR);
    if (copy_for) {
        /* A fork's copier (no sandbox pod): its Sandbox looks at the copy's progress. */
        char skey[512];
        const char *ns = m.namespace_, *cuid = m.uid;
        const cJSON *r;
        cJSON_ArrayForEach(r, m.owner_refs) {
            if (kj_str(r, "uid") && cuid) sbx_records_observed(&ctl->records, kj_str(r, "uid"), SBX_EXPECT_COPIER, cuid);
        }
        /* It holds its Sandbox's running slot as the sandbox pod would. */
        sbx_capacity_on_pod(ctl->capacity, old, cur);
        if (ns) {
            snprintf(skey, sizeof(skey), "%s/%s", ns, copy_for);
            queue_add(ctl->deps.queue, skey);
        }
        return;
    }
    /* The running cap counts the pod before its Sandbox is queued: the pass the queue starts
     * must find the slot held by the pod, not only by the reservation it ends. */
    sbx_capacity_on_pod(ctl->capacity, old, cur);
    sbx_warm_on_sandbox_pod(ctl->warm, old, cur);
    on_owned_kind(ctl, SBX_EXPECT_POD, &m, !cur);
}

/* A SandboxClass changed (its Sandboxes are queued already, class.c): the warm pools
 * follow it. */
static void on_sandbox_class(void *ud, const cJSON *old, const cJSON *cur) {
    struct sbx_controller *ctl = ud;
    sbx_warm_on_class(ctl->warm, old, cur);
}

/* ---- controller lifecycle ------------------------------------------------------------ */

struct sbx_controller *sbx_controller_new(struct kube_client *c, const struct sbx_controller_options *o,
                                          char *err, size_t errlen) {
    char path[1024];
    struct sbx_controller *ctl = calloc(1, sizeof(*ctl));
    if (!ctl) { errfmt_oom(err, errlen); return NULL; }
    ctl->deps.client = c;
    ctl->opt = *o;
    if (ctl->opt.workers < 1) ctl->opt.workers = 4;
    if (!ctl->opt.field_manager) ctl->opt.field_manager = "yao-sandbox-controller";
    pthread_mutex_init(&ctl->lock, NULL);
    sbx_records_init(&ctl->records);
    ctl->terminating = sbx_terminating_new();
    ctl->deps.records = &ctl->records;
    ctl->deps.counters = &ctl->counters;
    ctl->deps.defaults = &ctl->opt.defaults;
    ctl->deps.namespace_ = ctl->opt.namespace_;
    ctl->deps.queue = queue_new(5, 1000 * 1000);
    /* Watching every namespace: one namespace's reconciles never take every worker (one
     * stuck behind a slow webhook or quota there leaves the others served); while they
     * are quick, the last worker helps too (a busy namespace alone keeps all busy). */
    if (ctl->deps.queue && !o->namespace_ && ctl->opt.workers > 1)
        queue_set_namespace_limit(ctl->deps.queue, ctl->opt.workers - 1, 1);
    ctl->opt.events_client = NULL;     /* the recorder owns it from here */
    if (o->events_client) {
        struct kube_recorder_options ro = {.component = "yao-sandbox-controller"};
        ctl->deps.recorder = kube_recorder_new(o->events_client, &ro);
        if (!ctl->deps.recorder) LOGW("msg=\"no event recorder (out of memory): Events are not recorded\"");
    }

    /* Sharding: this replica caches only its shard's Sandboxes (a client-side filter:
     * Sandboxes are created by users and carry no shard label), and selects its owned
     * objects by the label it puts on them (server-side: other shards' are never sent). */
    ctl->deps.shard_key[0] = ctl->opt.shards > 1 ? ctl->opt.shards : 1;
    ctl->deps.shard_key[1] = ctl->opt.shards > 1 ? ctl->opt.shard : 0;
    sandboxes_path(path, sizeof(path), o->namespace_);
    struct informer_options io = {.path = path, .on_change = on_sandbox, .ud = ctl};
    if (ctl->opt.shards > 1) {
        sbx_shard_labels_init(&ctl->shard_labels, ctl->opt.shards, ctl->opt.shard);
        ctl->deps.shard_label = &ctl->shard_labels;
        io.filter = sbx_shard_keep;
        io.filter_ud = ctl->deps.shard_key;
    }
    ctl->deps.sandboxes = informer_new(c, &io);

    /* Owned objects are selected by the project's own label (every one carries it), not
     * by app.kubernetes.io/managed-by, which any workload may use; what counts for the
     * running cap is decided by the controller ownerReference (sandbox/io/capacity.c). */
    char selector[128];
    sbx_shard_selector(SBX_LABEL_NAME, ctl->deps.shard_key[0], ctl->deps.shard_key[1], selector, sizeof(selector));
    sbx_core_path(path, sizeof(path), o->namespace_, "pods");
    io = (struct informer_options){.path = path, .label_selector = selector, .on_change = on_pod,
                                   .ud = ctl, .transform = sbx_pod_shrink};
    ctl->deps.pods = informer_new(c, &io);
    sbx_core_path(path, sizeof(path), o->namespace_, "persistentvolumeclaims");
    io.path = path;
    io.on_change = on_pvc;
    io.transform = sbx_pvc_shrink;
    ctl->deps.pvcs = informer_new(c, &io);
    sbx_core_path(path, sizeof(path), o->namespace_, "services");
    io.path = path;
    io.on_change = on_service;
    io.transform = sbx_service_shrink;
    ctl->deps.services = informer_new(c, &io);
    sbx_core_path(path, sizeof(path), o->namespace_, "networkpolicies");
    io.path = path;
    io.on_change = on_netpol;
    io.transform = kj_strip_metadata;   /* the spec is what is compared: kept whole */
    ctl->deps.netpols = informer_new(c, &io);
    /* In a cluster, the API server's Service address (an IP there) is the one the
     * controller knows; its endpoints' host addresses it does not (docs/security.md). */
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    char cidr[80];
    if (host && strlen(host) < 64) {
        snprintf(cidr, sizeof(cidr), "%s/%d", host, strchr(host, ':') ? 128 : 32);
        if (sbx_cidr_parse(cidr, &ctl->apiserver[0], NULL, 0) == 0) ctl->napiserver = 1;
    }

    /* StorageClasses are cluster-scoped, and only read: nothing is queued when they change. */
    io = (struct informer_options){.path = "/apis/storage.k8s.io/v1/storageclasses",
                                   .transform = sbx_storage_class_shrink};
    ctl->deps.storage_classes = informer_new(c, &io);

    /* The subsystems, each handed the deps (and the warm pools the class cache). */
    ctl->capacity = sbx_capacity_new(&ctl->deps, &ctl->opt.limits);
    ctl->metrics = sbx_metrics_new();
    ctl->sandbox_classes = sbx_classes_new(&ctl->deps, on_sandbox_class, ctl);
    ctl->warm = ctl->sandbox_classes ? sbx_warm_new(&ctl->deps, ctl->sandbox_classes, ctl->opt.warm_workspaces) : NULL;
    if (!ctl->deps.queue || !ctl->terminating || !ctl->capacity || !ctl->metrics || !ctl->deps.sandboxes || !ctl->deps.pods ||
        !ctl->deps.pvcs || !ctl->deps.services || !ctl->deps.netpols || !ctl->deps.storage_classes ||
        !ctl->sandbox_classes || !ctl->warm) {
        errfmt_oom(err, errlen);
        sbx_controller_free(ctl);
        return NULL;
    }
    ctl->pass = (struct sbx_pass_env){.deps = &ctl->deps, .counters = &ctl->counters, .records = &ctl->records,
                                      .capacity = ctl->capacity, .sandbox_classes = ctl->sandbox_classes,
                                      .warm = ctl->warm, .terminating = ctl->terminating,
                                      .defaults = &ctl->opt.defaults, .apiserver = ctl->apiserver,
                                      .napiserver = ctl->napiserver};
    return ctl;
}

/* Record one reconcile's latency in the histogram. */
static void observe_latency(struct sbx_controller *ctl, double ms, int failed) {
    static const double bounds[11] = {1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500};
    int b = 0;
    while (b < 11 && ms > bounds[b]) b++;
    pthread_mutex_lock(&ctl->lock);
    ctl->reconciles++;
    if (failed) ctl->errors++;
    ctl->latency_buckets[b]++;
    ctl->latency_sum_ms += ms;
    pthread_mutex_unlock(&ctl->lock);
}

void sbx_controller_stats(struct sbx_controller *ctl, struct sbx_controller_stats *out) {
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&ctl->lock);
    out->reconciles = ctl->reconciles;
    out->errors = ctl->errors;
    memcpy(out->latency_buckets, ctl->latency_buckets, sizeof(out->latency_buckets));
    out->latency_sum_ms = ctl->latency_sum_ms;
    pthread_mutex_unlock(&ctl->lock);
    const struct sbx_counters *c = &ctl->counters;
    out->status_writes = atomic_load(&c->status_writes);
    out->creates = atomic_load(&c->creates);
    out->deletes = atomic_load(&c->deletes);
    out->conflicts = atomic_load(&c->conflicts);
    out->events = atomic_load(&c->events);
    out->runs_started = atomic_load(&c->runs_started);
    out->runs_finished = atomic_load(&c->runs_finished);
    out->reclaims = atomic_load(&c->reclaims);
    out->warm_adoptions = atomic_load(&c->warm_adoptions);
    out->warm_misses = atomic_load(&c->warm_misses);
}

int sbx_controller_metrics(struct sbx_controller *ctl, int is_leader, struct dynbuf *out) {
    struct sbx_metrics_sources src = {.deps = &ctl->deps, .warm = ctl->warm,
                                      .sandbox_classes = sbx_classes_cache(ctl->sandbox_classes)};
    sbx_controller_stats(ctl, &src.stats);
    return sbx_metrics_render(ctl->metrics, &src, is_leader, out);
}

struct informer *sbx_controller_cache(struct sbx_controller *ctl, enum sbx_cache which) {
    switch (which) {
    case SBX_CACHE_SANDBOXES: return ctl->deps.sandboxes;
    case SBX_CACHE_PODS: return ctl->deps.pods;
    case SBX_CACHE_PVCS: return ctl->deps.pvcs;
    case SBX_CACHE_SANDBOX_CLASSES: return sbx_classes_cache(ctl->sandbox_classes);
    }
    return NULL;
}

int sbx_controller_records_events(struct sbx_controller *ctl) { return ctl->deps.recorder != NULL; }

/* After a burst of work (a bring-up of many Sandboxes, a relist), the heap is full of
 * free chunks between the small cached objects, and glibc gives back only the top of
 * each arena: once the queue has run dry, return the free pages inside too (as after a
 * list, runtime/informer.c). At most every TRIM_EVERY_MS, and only after TRIM_AFTER
 * passes: an idle controller never trims. */
#define TRIM_AFTER 64
#define TRIM_EVERY_MS 10000
static void trim_when_idle(struct sbx_controller *ctl) {
    int64_t now = clock_mono_ms();
    int trim = 0;
    pthread_mutex_lock(&ctl->lock);
    ctl->passes_since_trim++;
    if (ctl->passes_since_trim >= TRIM_AFTER && now - ctl->trimmed_ms >= TRIM_EVERY_MS && queue_len(ctl->deps.queue) == 0) {
        ctl->passes_since_trim = 0;
        ctl->trimmed_ms = now;
        trim = 1;
    }
    pthread_mutex_unlock(&ctl->lock);
    if (trim) heap_trim();
}

/* A worker: take keys until shutdown. */
static void *worker(void *arg) {
    struct sbx_controller *ctl = arg;
    char *key;
    while ((key = queue_get(ctl->deps.queue))) {
        struct kube_error err;
        kube_error_clear(&err);
        int64_t t0 = clock_mono_us();
        struct sbx_outcome res = sbx_reconcile(ctl, key, &err);
        int failed = res.kind == SBX_OUTCOME_FAILED;
        observe_latency(ctl, (double)(clock_mono_us() - t0) / 1e3, failed);
        if (failed && err.reason == KUBE_REASON_NAMESPACE_TERMINATING) {
            LOGI("msg=\"namespace is being deleted: not retried; its passes wait\" sandbox=%s err=\"%s\"", key,
                 err.message);
            struct sbx_work_key k;
            if (sbx_work_key_parse(key, &k) == 0) sbx_terminating_note(ctl->terminating, k.ns, clock_mono_ms());
            queue_forget(ctl->deps.queue, key);
        } else if (failed) {
            LOGW("msg=\"reconcile failed\" sandbox=%s failures=%u status=%ld reason=%s err=\"%s\"", key,
                 queue_failures(ctl->deps.queue, key) + 1, err.status, kube_reason_name(err.reason), err.message);
            queue_add_rate_limited(ctl->deps.queue, key);
        } else {
            LOGD("msg=\"reconciled\" sandbox=%s outcome=%s after_ms=%lld", key, sbx_outcome_name(res.kind),
                 (long long)res.after_ms);
            queue_forget(ctl->deps.queue, key);
            if (res.kind == SBX_OUTCOME_AFTER) queue_add_after(ctl->deps.queue, key, res.after_ms);
            else if (res.kind == SBX_OUTCOME_STALE) queue_add_after(ctl->deps.queue, key, SBX_STALE_AGAIN_MS);
            else if (res.kind == SBX_OUTCOME_DONE && ctl->opt.resync_ms > 0)
                queue_add_after(ctl->deps.queue, key, ctl->opt.resync_ms);
            /* forget: the Sandbox and all it owned are gone; the key is not queued again */
        }
        queue_done(ctl->deps.queue, key);
        free(key);
        trim_when_idle(ctl);
    }
    return NULL;
}

static int sbx_controller_sync(struct sbx_controller *ctl, int classes_on, const atomic_int *stop);

int sbx_controller_start_caches(struct sbx_controller *ctl, const atomic_int *stop) {
    /* A namespaced install's Role cannot grant the cluster-scoped StorageClass read: ask
     * once, and without it go on with binding modes unknown instead of a relist that is
     * refused every 30 s. */
    struct kube_error perr;
    long probe = kube_get(ctl->deps.client, "/apis/storage.k8s.io/v1/storageclasses?limit=1", NULL, &perr);
    int classes_on = probe != 403 && probe != 401;
    if (!classes_on)
        LOGI("msg=\"StorageClasses are not readable with this controller's role; binding modes unknown: a new pod "
             "waits for its claim as on an Immediate class\" status=%ld", probe);
    /* NetworkPolicies: only a definite "no" (an upgrade that kept the old RBAC) turns them
     * off, as for SandboxClasses; the workers then refuse isolated classes (InvalidSpec)
     * instead of waiting forever for a cache that is refused every relist. */
    char np_path[512];
    sbx_core_path(np_path, sizeof(np_path) - 16, ctl->opt.namespace_, "networkpolicies");
    strcat(np_path, "?limit=1");
    probe = kube_get(ctl->deps.client, np_path, NULL, &perr);
    ctl->deps.netpols_on = !(probe == 401 || probe == 403 || probe == 404);
    if (!ctl->deps.netpols_on)
        LOGW("msg=\"NetworkPolicies are not readable (no RBAC for networking.k8s.io networkpolicies): a Sandbox of a "
             "class with spec.network.mode isolated is InvalidSpec; apply the current RBAC and restart the "
             "controller\" status=%ld", probe);
    /* Sharded: take over (label) this shard's objects made without its label, before the
     * label-selected informers list. On failure the controller does not start (exits and
     * is restarted) rather than run blind to objects it owns. */
    if (ctl->deps.shard_label && sbx_shard_migrate(&ctl->deps, stop, &perr) < 0) {
        if (stop && atomic_load(stop)) return -1;
        LOGE("msg=\"shard: labelling this shard's objects failed\" err=\"%s\"", perr.message);
        return -1;
    }
    return sbx_controller_sync(ctl, classes_on, stop);
}

/* Start the informers and wait for their caches (the StorageClass cache only a while). */
static int sbx_controller_sync(struct sbx_controller *ctl, int classes_on, const atomic_int *stop) {
    if (informer_start(ctl->deps.pods) < 0 || informer_start(ctl->deps.pvcs) < 0 || informer_start(ctl->deps.services) < 0 ||
        (ctl->deps.netpols_on && informer_start(ctl->deps.netpols) < 0) ||
        informer_start(ctl->deps.sandboxes) < 0 ||
        (classes_on && informer_start(ctl->deps.storage_classes) < 0) || sbx_classes_start(ctl->sandbox_classes) < 0)
        return -1;
    /* The StorageClass cache is waited for only a while: without it (a namespaced install
     * cannot be granted cluster-scoped reads by its Role) every class counts as unknown and
     * a new pod waits for its claim as on an Immediate class. */
    int waited = 0;
    while (!(informer_synced(ctl->deps.pods) && informer_synced(ctl->deps.pvcs) && informer_synced(ctl->deps.services) &&
             (!ctl->deps.netpols_on || informer_synced(ctl->deps.netpols)) &&
             informer_synced(ctl->deps.sandboxes) && sbx_classes_synced(ctl->sandbox_classes) &&
             (!classes_on || informer_synced(ctl->deps.storage_classes) || waited >= CLASS_SYNC_WAIT_MS))) {
        if (stop && atomic_load(stop)) return -1;
        usleep(20000);
        waited += 20;
    }
    LOGI("msg=\"caches synced\" sandboxes=%zu pods=%zu pvcs=%zu storageclasses=%zu%s", informer_count(ctl->deps.sandboxes),
        informer_count(ctl->deps.pods), informer_count(ctl->deps.pvcs), informer_count(ctl->deps.storage_classes),
        informer_synced(ctl->deps.storage_classes) ? "" : " (StorageClasses not readable yet: binding modes unknown)");
    return 0;
}

int sbx_controller_run(struct sbx_controller *ctl, const atomic_int *stop) {
    if (sbx_controller_start_caches(ctl, stop) < 0) return -1;
    ctl->threads = calloc((size_t)ctl->opt.workers, sizeof(pthread_t));
    if (!ctl->threads) return -1;
    for (int i = 0; i < ctl->opt.workers; i++) {
        if (pthread_create(&ctl->threads[i], NULL, worker, ctl) != 0) break;
        ctl->nthreads++;
    }
    return ctl->nthreads > 0 ? 0 : -1;
}

int sbx_controller_ready(struct sbx_controller *ctl) { return atomic_load(&ctl->nthreads) > 0; }

void sbx_controller_stop(struct sbx_controller *ctl) {
    if (!ctl) return;
    atomic_store(&ctl->stopping, 1);
    if (ctl->deps.queue) queue_shutdown(ctl->deps.queue);
    /* The stop flag of every request: a worker in a slow call or a back-off returns now. */
    kube_client_cancel(ctl->deps.client);
    for (int i = 0; i < ctl->nthreads; i++) pthread_join(ctl->threads[i], NULL);
    ctl->nthreads = 0;
    if (ctl->deps.sandboxes) informer_stop(ctl->deps.sandboxes);
    if (ctl->deps.pods) informer_stop(ctl->deps.pods);
    if (ctl->deps.pvcs) informer_stop(ctl->deps.pvcs);
    if (ctl->deps.services) informer_stop(ctl->deps.services);
    if (ctl->deps.netpols) informer_stop(ctl->deps.netpols);
    if (ctl->deps.storage_classes) informer_stop(ctl->deps.storage_classes);
    sbx_classes_stop(ctl->sandbox_classes);
    if (ctl->deps.recorder && kube_recorder_flush(ctl->deps.recorder, SBX_EVENT_FLUSH_MS) < 0)
        LOGW("msg=\"events still waiting after the flush deadline\" deadline_ms=%d", SBX_EVENT_FLUSH_MS);
}

void sbx_controller_free(struct sbx_controller *ctl) {
    if (!ctl) return;
    sbx_controller_stop(ctl);
    informer_free(ctl->deps.sandboxes);
    informer_free(ctl->deps.pods);
    informer_free(ctl->deps.pvcs);
    informer_free(ctl->deps.services);
    informer_free(ctl->deps.netpols);
    informer_free(ctl->deps.storage_classes);
    sbx_classes_free(ctl->sandbox_classes);
    queue_free(ctl->deps.queue);
    kube_recorder_free(ctl->deps.recorder);
    sbx_records_free(&ctl->records);
    sbx_terminating_free(ctl->terminating);
    sbx_capacity_free(ctl->capacity);
    sbx_metrics_free(ctl->metrics);
    sbx_warm_free(ctl->warm);
    pthread_mutex_destroy(&ctl->lock);
    free(ctl->threads);
    free(ctl);
}

struct sbx_outcome sbx_reconcile(struct sbx_controller *ctl, const char *key, struct kube_error *err) {
    struct sbx_work_key k;
    if (sbx_work_key_parse(key, &k) < 0) {
        LOGW("msg=\"not a work key: dropped\" key=\"%.300s\"", key);
        return sbx_forget();
    }
    switch (k.kind) {
    case SBX_WORK_WARM_POOL: {
        int64_t held = sbx_terminating_left(ctl->terminating, k.ns, clock_mono_ms());
        if (held > 0) return sbx_after(held);   /* no pool to keep in a namespace going */
        return sbx_warm_reconcile(ctl->warm, k.ns, err);
    }
    case SBX_WORK_OWNERLESS:
        return sbx_orphans_sweep_ownerless(&ctl->deps, k.ns, err);
    case SBX_WORK_SANDBOX:
        break;
    }
    return sbx_pass_reconcile(&ctl->pass, key, k.ns, k.name, err);
}
