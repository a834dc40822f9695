/* sandbox/io/warm.c — warm workspaces, the I/O side (decisions in warm_decide.c): an index kept
 * by the informer handlers (which claim each Sandbox owns, the unadopted pool claims of
 * each namespace, how many Sandboxes of each class each namespace holds), the pool pass
 * of one namespace (queued as "<ns>/#warm", a key no Sandbox can have) that creates and
 * deletes pool claims, and the adoption of a pool claim by a new Sandbox.
 *
 * The truth is the claim in the cache: a claim whose controller reference is a Sandbox
 * belongs to it, whatever its name; a claim labelled SBX_LABEL_WARM_POOL without such a
 * reference is in a pool. The index only mirrors the cache, so a restart rebuilds it from
 * the initial list.
 *
 * Pools of a WaitForFirstConsumer StorageClass: the pool pass keeps one binder pod
 * (warmbinder.c) per pending pool claim and deletes it once the claim is Bound, adopted or
 * gone; the binders are indexed from the pod informer like the claims. */
#include "sandbox/io/warm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/kjson.h"
#include "base/log.h"
#include "sandbox/model/objects.h"
#include "sandbox/model/builders.h"
#include "sandbox/decide/class_decide.h"
#include "sandbox/decide/shard_decide.h"
#include "sandbox/decide/warm_decide.h"
#include "sandbox/io/owned.h"
#include "sandbox/io/storage.h"
#include "sandbox/model/warmbinder.h"
#include "sandbox/model/workkey.h"

/* A pool claim as the index keeps it (owned strings). */
struct pool_entry {
    char ns[64], key[SBX_WARM_KEY_LEN];
    char *name, *uid, *rv, *storage_class, *request;
    char *node;               /* SBX_ANN_SELECTED_NODE (WaitForFirstConsumer), or NULL */
    int bound, terminating;
    int64_t created_ms;
    /* Put here by our own create, not by the watch yet: counted until the watch shows it,
     * for at most EXPECT_MS (a claim created and deleted before the watch caught up would
     * otherwise stay counted). */
    int64_t expected_until_ms;
};

struct sbx_warm {
    const struct sbx_deps *deps;
    struct sbx_classes *classes;
    int unclassed_pool;       /* --warm-workspaces: the pool of Sandboxes of no class */
    pthread_mutex_t lock;
    /* Sandbox uid -> the name of the claim it controls (char *), for claims not named
     * "<pod>-workspace" (adopted ones): the others are found by the name its IDs give. */
    struct strmap owners;
    struct strmap pool;       /* "ns/name" -> struct pool_entry * */
    struct strmap counts;     /* "ns/className" ("" = none) -> Sandboxes, as (intptr_t) */
    struct strmap late_noted; /* StorageClasses noted as WaitForFirstConsumer (logged once) */
    /* ns -> struct wanted_keys: the pools its last pool pass kept (size > 0), so an
     * adoption that finds none of its shape can tell a miss from a shape without a pool. */
    struct strmap wanted;
    struct strmap binders;    /* "ns/claim" -> struct binder_entry *: binder pods in the cache */
    /* Sandbox uid -> (intptr_t) until when (ms) it adopts no pool claim: it gave one up
     * (SBX_ACT_RELEASE_CLAIM) and waits for that claim to go, then makes a cold one. */
    struct strmap released;
    /* The refill's yield to starts in flight (warm_decide.h): per namespace, its sandbox
     * pods starting (a count kept by the pod handler), since when its refill waits, and
     * its last adoption (ms); all (intptr_t), absent = 0. */
    struct strmap starting, yielding, adopted_at;
};

/* A binder pod as the index keeps it. */
struct binder_entry {
    char *pod, *uid;
    int deleting;       /* terminating, or deleted by us (the watch confirms) */
    int64_t expected_until_ms;  /* created by us, not shown by the watch yet */
};

static void binder_entry_free(void *v) {
    struct binder_entry *b = v;
    if (!b) return;
    free(b->pod);
    free(b->uid);
    free(b);
}

struct wanted_keys { size_t n; char key[SBX_WARM_WANTS_MAX][SBX_WARM_KEY_LEN]; };

static void pool_entry_free(void *v) {
    struct pool_entry *e = v;
    if (!e) return;
    free(e->name);
    free(e->uid);
    free(e->rv);
    free(e->storage_class);
    free(e->request);
    free(e->node);
    free(e);
}

struct sbx_warm *sbx_warm_new(const struct sbx_deps *deps, struct sbx_classes *classes, int unclassed_pool) {
    struct sbx_warm *w = calloc(1, sizeof(*w));
    if (!w) return NULL;
    w->deps = deps;
    w->classes = classes;
    w->unclassed_pool = unclassed_pool;
    pthread_mutex_init(&w->lock, NULL);
    strmap_init(&w->owners);
    strmap_init(&w->pool);
    strmap_init(&w->counts);
    strmap_init(&w->late_noted);
    strmap_init(&w->wanted);
    strmap_init(&w->binders);
    strmap_init(&w->released);
    strmap_init(&w->starting);
    strmap_init(&w->yielding);
    strmap_init(&w->adopted_at);
    return w;
}

void sbx_warm_free(struct sbx_warm *w) {
    if (!w) return;
    strmap_clear(&w->owners, free);
    strmap_clear(&w->pool, pool_entry_free);
    strmap_clear(&w->counts, NULL);
    strmap_clear(&w->late_noted, NULL);
    strmap_clear(&w->wanted, free);
    strmap_clear(&w->binders, binder_entry_free);
    strmap_clear(&w->released, NULL);
    strmap_clear(&w->starting, NULL);
    strmap_clear(&w->yielding, NULL);
    strmap_clear(&w->adopted_at, NULL);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* Is ns one this controller serves? A controller started with --namespace keeps to it: a
 * class's warmPool.namespaces naming others is for the controllers that serve those. */
static int serves(const struct sbx_warm *w, const char *ns) {
    return !w->deps->namespace_ || (ns && !strcmp(ns, w->deps->namespace_));
}

/* Queue the pool pass of ns. */
static void queue_pools(struct sbx_warm *w, const char *ns) {
    char key[SBX_WORK_KEY_MAX];
    if (!ns || !serves(w, ns)) return;
    if (sbx_work_key_format(SBX_WORK_WARM_POOL, ns, NULL, key, sizeof(key)) == 0) queue_add(w->deps->queue, key);
}

/* Set a per-namespace number (absent = 0). Called with the lock held. */
static void ns_number_set(struct strmap *m, const char *ns, int64_t v) {
    if (v == 0) {
        strmap_remove(m, ns);
    } else if (strmap_put(m, ns, (void *)(intptr_t)v, NULL) < 0) {
        LOGW("msg=\"warm pool: out of memory keeping the refill's yield\" namespace=%s", ns);
    }
}

void sbx_warm_on_sandbox_pod(struct sbx_warm *w, const cJSON *old, const cJSON *cur) {
    int was = old && sbx_warm_pod_starting(old), is = cur && sbx_warm_pod_starting(cur);
    const char *ns = kj_str(cJSON_GetObjectItemCaseSensitive(cur ? cur : old, "metadata"), "namespace");
    if (was == is || !ns) return;
    int ended = 0;
    pthread_mutex_lock(&w->lock);
    int64_t n = (intptr_t)strmap_get(&w->starting, ns) + (is ? 1 : -1);
    ns_number_set(&w->starting, ns, n > 0 ? n : 0);
    if (is) ns_number_set(&w->adopted_at, ns, 0);   /* the adopted claim's pod is counted now */
    ended = n <= 0 && strmap_get(&w->yielding, ns) != NULL;
    pthread_mutex_unlock(&w->lock);
    if (ended) queue_pools(w, ns);   /* the last start is over: the waiting refill goes now */
}

/* How long the refill of ns waits for starts in flight (0: not at all); see warm_decide.h. */
static int64_t refill_wait(struct sbx_warm *w, const char *ns) {
    int64_t now = kj_now_ms();
    pthread_mutex_lock(&w->lock);
    int64_t adopted = (intptr_t)strmap_get(&w->adopted_at, ns);
    int starting = strmap_get(&w->starting, ns) != NULL || (adopted && now - adopted < SBX_WARM_ADOPT_SETTLE_MS);
    int64_t since = (intptr_t)strmap_get(&w->yielding, ns);
    int was_waiting = since > 0;
    int64_t wait = sbx_warm_refill_wait(starting, &since, now);
    ns_number_set(&w->yielding, ns, since);
    pthread_mutex_unlock(&w->lock);
    if (wait > 0 && !was_waiting)
        LOGI("msg=\"warm pool: the refill waits for the sandbox pods starting\" namespace=%s max_ms=%d", ns,
             SBX_WARM_REFILL_YIELD_MAX_MS);
    return wait;
}

/* The refill's yield is over for ns (nothing to refill). */
static void refill_done(struct sbx_warm *w, const char *ns) {
    pthread_mutex_lock(&w->lock);
    ns_number_set(&w->yielding, ns, 0);
    pthread_mutex_unlock(&w->lock);
}

/* Is the claim an unadopted pool claim? Its pool key, or NULL. */
static const char *pool_key_of(const struct sbx_claim_view *c) {
    const char *key = c->warm_pool;
    if (!key || strlen(key) >= SBX_WARM_KEY_LEN || c->meta.sandbox_owner_uid) return NULL;
    return key;
}

static char *dup_str(const char *s, int *failed) {
    char *d = strdup(s ? s : "");
    if (!d) *failed = 1;
    return d;
}

/* A pool_entry for the pool claim c of pool key; NULL on ENOMEM or a claim without name. */
static struct pool_entry *entry_of(const struct sbx_claim_view *c, const char *key) {
    const char *ns = c->meta.namespace_, *name = c->meta.name;
    int failed = 0;
    if (!ns || !name || strlen(ns) >= 64) return NULL;
    struct pool_entry *e = calloc(1, sizeof(*e));
    if (!e) return NULL;
    snprintf(e->ns, sizeof(e->ns), "%s", ns);
    snprintf(e->key, sizeof(e->key), "%s", key);
    e->name = dup_str(name, &failed);
    e->uid = dup_str(c->meta.uid, &failed);
    e->rv = dup_str(c->meta.resource_version, &failed);
    e->storage_class = c->storage_class ? dup_str(c->storage_class, &failed) : NULL;
    e->request = dup_str(c->request, &failed);
    e->node = c->selected_node ? dup_str(c->selected_node, &failed) : NULL;
    e->bound = c->bound;
    e->terminating = c->meta.deleting;
    e->created_ms = c->meta.created_ms;
    if (failed) { pool_entry_free(e); return NULL; }
    return e;
}

/* Put (or replace) the pool entry of the claim c; the caller holds the lock. */
static void pool_put(struct sbx_warm *w, const struct sbx_claim_view *c, const char *key, int64_t expected_until_ms) {
    char pkey[512];
    struct pool_entry *e = entry_of(c, key);
    void *old = NULL;
    if (!e) { LOGW("msg=\"warm pool: a claim could not be indexed (out of memory)\""); return; }
    e->expected_until_ms = expected_until_ms;
    snprintf(pkey, sizeof(pkey), "%s/%s", e->ns, e->name);
    if (strmap_put(&w->pool, pkey, e, &old) < 0) { pool_entry_free(e); return; }
    pool_entry_free(old);
}

void sbx_warm_on_pvc(struct sbx_warm *w, const struct sbx_claim_view *old, const struct sbx_claim_view *cur) {
    const struct sbx_claim_view *obj = cur ? cur : old;
    const char *ns = obj ? obj->meta.namespace_ : NULL, *name = obj ? obj->meta.name : NULL;
    char pkey[512];
    if (!ns || !name) return;
    const char *old_owner = old ? old->meta.sandbox_owner_uid : NULL;
    const char *cur_owner = cur ? cur->meta.sandbox_owner_uid : NULL;
    const char *old_pool = old ? pool_key_of(old) : NULL, *cur_pool = cur ? pool_key_of(cur) : NULL;
    snprintf(pkey, sizeof(pkey), "%s/%s", ns, name);
    pthread_mutex_lock(&w->lock);
    if (old_owner && (!cur_owner || strcmp(old_owner, cur_owner) != 0)) {
        const char *have = strmap_get(&w->owners, old_owner);
        if (have && !strcmp(have, name)) free(strmap_remove(&w->owners, old_owner));
    }
    /* Only a claim of a name of its own (an adopted one): one named as the Sandbox's IDs
     * name it ends in SBX_CLAIM_SUFFIX and is found by that name, so 10,000 cold claims
     * cost the index nothing. */
    size_t nl = strlen(name), sl = strlen(SBX_CLAIM_SUFFIX);
    int own_name = nl < sl || strcmp(name + nl - sl, SBX_CLAIM_SUFFIX) != 0;
    if (cur_owner && own_name) {
        char *copy = strdup(name);
        void *prev = NULL;
        if (!copy || strmap_put(&w->owners, cur_owner, copy, &prev) < 0) {
            free(copy);
            LOGW("msg=\"warm pool: a claim's owner could not be indexed (out of memory)\" claim=%s", pkey);
        } else {
            free(prev);
        }
    }
    if (cur_pool) pool_put(w, cur, cur_pool, 0);
    else pool_entry_free(strmap_remove(&w->pool, pkey));
    pthread_mutex_unlock(&w->lock);
    if (old_pool || cur_pool) queue_pools(w, ns);
}

int sbx_warm_claim_of(struct sbx_warm *w, const char *uid, char *out, size_t outlen) {
    int found = 0;
    pthread_mutex_lock(&w->lock);
    const char *name = strmap_get(&w->owners, uid);
    if (name && strlen(name) < outlen) {
        memcpy(out, name, strlen(name) + 1);
        found = 1;
    }
    pthread_mutex_unlock(&w->lock);
    return found;
}

/* Add d to the count of "ns/class"; returns the count after. The caller holds the lock. */
static intptr_t count_add(struct sbx_warm *w, const char *ns, const char *cls, intptr_t d) {
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns, cls ? cls : "");
    intptr_t n = (intptr_t)strmap_get(&w->counts, key) + d;
    if (n <= 0) strmap_remove(&w->counts, key);
    else if (strmap_put(&w->counts, key, (void *)n, NULL) < 0) LOGW("msg=\"warm pool: out of memory\"");
    return n < 0 ? 0 : n;
}

static intptr_t count_of(struct sbx_warm *w, const char *ns, const char *cls) {
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns, cls ? cls : "");
    return (intptr_t)strmap_get(&w->counts, key);
}

void sbx_warm_on_sandbox(struct sbx_warm *w, const struct sbx_sandbox_view *old, const struct sbx_sandbox_view *cur) {
    const char *oc = old ? old->class_name : NULL, *cc = cur ? cur->class_name : NULL;
    const char *ons = old ? old->meta.namespace_ : NULL, *cns = cur ? cur->meta.namespace_ : NULL;
    if (old && cur && !strcmp(oc ? oc : "", cc ? cc : "")) return;   /* the usual update: nothing moves */
    int requeue_old = 0, requeue_cur = 0;
    pthread_mutex_lock(&w->lock);
    if (ons) requeue_old = count_add(w, ons, oc, -1) == 0;
    if (cns) requeue_cur = count_add(w, cns, cc, +1) == 1;
    pthread_mutex_unlock(&w->lock);
    if (requeue_old) queue_pools(w, ons);
    if (requeue_cur) queue_pools(w, cns);
}

struct ns_walk { struct sbx_warm *w; char last[64]; };

/* Queue the pool pass of the namespace of a "ns/..." key (each once in a row). */
static int queue_ns_of_key(void *ud, const char *key, void *value) {
    struct ns_walk *nw = ud;
    const char *slash = strchr(key, '/');
    (void)value;
    if (!slash || (size_t)(slash - key) >= sizeof(nw->last)) return 0;
    char ns[64];
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = 0;
    if (strcmp(ns, nw->last) != 0) {
        queue_pools(nw->w, ns);
        snprintf(nw->last, sizeof(nw->last), "%s", ns);
    }
    return 0;
}

void sbx_warm_on_class(struct sbx_warm *w, const cJSON *old, const cJSON *cur) {
    struct ns_walk nw = {.w = w};
    /* Every namespace that has Sandboxes or pool claims, and those the class names. Few
     * keys (one per namespace and class, one per pool claim); classes change rarely. The
     * walk only queues (queue_add takes the queue's lock, never this one). */
    pthread_mutex_lock(&w->lock);
    strmap_foreach(&w->counts, queue_ns_of_key, &nw);
    strmap_foreach(&w->pool, queue_ns_of_key, &nw);
    pthread_mutex_unlock(&w->lock);
    /* ... and the namespaces the class (before and after the change) keeps warm; a class
     * that cannot be parsed keeps no pool. */
    const cJSON *objs[2] = {old, cur};
    for (int i = 0; i < 2; i++) {
        struct sbx_class cls;
        char why[256];
        if (!objs[i] || sbx_class_parse(objs[i], &cls, why, sizeof(why)) < 0) continue;
        for (size_t j = 0; j < cls.warm_pool_namespaces.n; j++) queue_pools(w, cls.warm_pool_namespaces.v[j]);
        sbx_class_free(&cls);
    }
}

void sbx_warm_on_binder_pod(struct sbx_warm *w, const cJSON *old, const cJSON *cur) {
    const cJSON *obj = cur ? cur : old;
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    const char *ns = m.namespace_, *pod = m.name;
    const char *claim = sbx_meta_annotation(&m, SBX_ANN_BINDS_CLAIM);
    char bkey[512];
    if (!ns || !pod || !claim) return;
    snprintf(bkey, sizeof(bkey), "%s/%s", ns, claim);
    pthread_mutex_lock(&w->lock);
    if (!cur) {
        struct binder_entry *have = strmap_get(&w->binders, bkey);
        if (have && !strcmp(have->pod, pod)) binder_entry_free(strmap_remove(&w->binders, bkey));
    } else {
        struct binder_entry *b = calloc(1, sizeof(*b));
        int failed = !b;
        void *prev = NULL;
        if (b) {
            b->pod = dup_str(pod, &failed);
            b->uid = dup_str(m.uid, &failed);   /* m is cur's: obj is cur here */
            b->deleting = m.deleting;
        }
        if (failed || strmap_put(&w->binders, bkey, b, &prev) < 0) {
            binder_entry_free(b);
            LOGW("msg=\"warm pool: a binder pod could not be indexed (out of memory)\" pod=%s/%s", ns, pod);
        } else {
            binder_entry_free(prev);
        }
    }
    pthread_mutex_unlock(&w->lock);
    queue_pools(w, ns);
}

/* ---- the pool pass --------------------------------------------------------------------- */

struct wants_ctx {
    struct sbx_warm *w;
    const char *ns, *default_class;
    intptr_t unclassed;     /* Sandboxes of ns without spec.className */
    struct sbx_warm_wants *wants;
    int failed;
};

/* The workspace a class gives a Sandbox that asks for nothing: resolved exactly as a
 * Sandbox of it would be. 0 or -1 (an invalid class keeps no pool). */
#define POOL_PROBE_SANDBOX "{\"metadata\":{\"name\":\"warm\"},\"spec\":{\"userID\":\"warm\",\"chatID\":\"warm\"}}"

static int class_shape(const struct sbx_class *cls, const struct sbx_defaults *d, char **storage_class,
                       int64_t *bytes) {
    cJSON *sb = cJSON_Parse(POOL_PROBE_SANDBOX);
    struct sbx_spec spec;
    char why[512];
    int rc = -1;
    if (sb && sbx_class_resolve(sb, cls, d, &spec, why, sizeof(why)) == 0) {
        *bytes = spec.workspace_bytes;
        *storage_class = spec.storage_class ? strdup(spec.storage_class) : NULL;
        rc = spec.storage_class && !*storage_class ? -1 : 0;
        sbx_spec_free(&spec);
    }
    cJSON_Delete(sb);
    return rc;
}

/* A SandboxClass: does it want a pool in ns? Added to the wants when it does. */
static int want_of_class(void *ud, const char *key, const cJSON *obj) {
    struct wants_ctx *c = ud;
    struct sbx_class cls;
    char why[512];
    (void)key;
    if (sbx_class_parse(obj, &cls, why, sizeof(why)) < 0) return 0;
    int here = 0;
    if (cls.warm_pool_size > 0) {
        pthread_mutex_lock(&c->w->lock);
        here = count_of(c->w, c->ns, cls.name) > 0;
        pthread_mutex_unlock(&c->w->lock);
        if (!here && c->default_class && !strcmp(c->default_class, cls.name)) here = c->unclassed > 0;
        for (size_t i = 0; !here && i < cls.warm_pool_namespaces.n; i++)
            here = !strcmp(cls.warm_pool_namespaces.v[i], c->ns);
    }
    if (here && cls.namespace_selector) {
        /* No pool where the class may not be used. */
        here = sbx_classes_allow_namespace(c->w->classes, &cls, c->ns, why, sizeof(why));
    }
    char *sc = NULL;
    int64_t bytes = 0;
    if (here && class_shape(&cls, c->w->deps->defaults, &sc, &bytes) == 0) {
        struct sbx_meta cm;
        sbx_meta_read(obj, &cm);
        int r = sbx_warm_wants_add(c->wants, sc, bytes, cls.warm_pool_size, cls.name, cm.uid);
        if (r < 0) c->failed = 1;
        else if (r == 1) LOGW("msg=\"warm pool: too many pool shapes in one namespace; class ignored\" namespace=%s "
                              "class=%s max=%d", c->ns, cls.name, SBX_WARM_WANTS_MAX);
    }
    free(sc);
    sbx_class_free(&cls);
    return 0;
}

/* The pools ns wants: each SandboxClass with spec.workspace.warmPool.size > 0 that has a
 * Sandbox there (the default class counting those without spec.className) or names ns,
 * and the --warm-workspaces pool of the flag defaults when ns has Sandboxes without a
 * class and no class is the default. 0 or -1 (ENOMEM). */
static int pool_wants(struct sbx_warm *w, const char *ns, struct sbx_warm_wants *wants) {
    struct wants_ctx c = {.w = w, .ns = ns, .wants = wants};
    struct sbx_class dflt;
    int have_default = 0;
    char why[512];
    const char *reason;
    /* A Sandbox of ns naming no class: the namespace's default class, else the cluster's. */
    struct sbx_sandbox_view probe;
    sbx_sandbox_view_parse(NULL, &probe);
    probe.meta.namespace_ = ns;
    if (sbx_class_for(w->classes, &probe, &dflt, &have_default, &reason, why, sizeof(why)) < 0) have_default = 0;
    pthread_mutex_lock(&w->lock);
    c.unclassed = count_of(w, ns, "");
    pthread_mutex_unlock(&w->lock);
    c.default_class = have_default ? dflt.name : NULL;
    sbx_classes_foreach(w->classes, want_of_class, &c);
    if (!have_default && w->unclassed_pool > 0 && c.unclassed > 0 &&
        sbx_warm_wants_add(wants, w->deps->defaults->storage_class, w->deps->defaults->workspace_bytes,
                           w->unclassed_pool, NULL, NULL) < 0)
        c.failed = 1;
    if (have_default) sbx_class_free(&dflt);
    return c.failed ? -1 : 0;
}

/* A copy of the pool claims of ns (and, key set, of that pool only). */
struct pool_copy { struct pool_entry *v; size_t n, cap; const char *ns, *key; int64_t now; int failed; };

/* Put here by our own create and never shown by the watch within EXPECT_MS: not counted
 * (the claim was most likely deleted before the watch caught up). */
static int pool_entry_lapsed(const struct pool_entry *e, int64_t now) {
    return e->expected_until_ms && e->expected_until_ms < now;
}

static int copy_pool_entry(void *ud, const char *k, void *value) {
    struct pool_copy *pc = ud;
    struct pool_entry *e = value;
    (void)k;
    if (strcmp(e->ns, pc->ns) != 0 || (pc->key && strcmp(e->key, pc->key) != 0)) return 0;
    if (pool_entry_lapsed(e, pc->now)) return 0;
    if (pc->n == pc->cap) {
        size_t cap = pc->cap ? pc->cap * 2 : 16;
        struct pool_entry *v = realloc(pc->v, cap * sizeof(*v));
        if (!v) { pc->failed = 1; return 1; }
        pc->v = v;
        pc->cap = cap;
    }
    struct pool_entry *d = &pc->v[pc->n];
    int failed = 0;
    *d = *e;
    d->name = dup_str(e->name, &failed);
    d->uid = dup_str(e->uid, &failed);
    d->rv = dup_str(e->rv, &failed);
    d->storage_class = e->storage_class ? dup_str(e->storage_class, &failed) : NULL;
    d->request = dup_str(e->request, &failed);
    d->node = e->node ? dup_str(e->node, &failed) : NULL;
    pc->n++;
    if (failed) { pc->failed = 1; return 1; }
    return 0;
}

static void pool_copy_free(struct pool_copy *pc) {
    for (size_t i = 0; i < pc->n; i++) {
        free(pc->v[i].name);
        free(pc->v[i].uid);
        free(pc->v[i].rv);
        free(pc->v[i].storage_class);
        free(pc->v[i].request);
        free(pc->v[i].node);
    }
    free(pc->v);
}

/* Copy the pool claims of ns (key NULL: all its pools). 0 or -1 (ENOMEM). */
static int pool_snapshot(struct sbx_warm *w, const char *ns, const char *key, struct pool_copy *pc) {
    memset(pc, 0, sizeof(*pc));
    pc->ns = ns;
    pc->key = key;
    pc->now = kj_now_ms();
    pthread_mutex_lock(&w->lock);
    strmap_foreach(&w->pool, copy_pool_entry, pc);
    pthread_mutex_unlock(&w->lock);
    if (pc->failed) { pool_copy_free(pc); memset(pc, 0, sizeof(*pc)); return -1; }
    return 0;
}

/* Forget the pool entry ns/name (adopted or deleted by us; the watch confirms). */
static void pool_forget(struct sbx_warm *w, const char *ns, const char *name) {
    char pkey[512];
    snprintf(pkey, sizeof(pkey), "%s/%s", ns, name);
    pthread_mutex_lock(&w->lock);
    pool_entry_free(strmap_remove(&w->pool, pkey));
    pthread_mutex_unlock(&w->lock);
}

/* DELETE the pool claim e if it is still at e->rv (uid and resourceVersion
 * preconditions: one adopted since is never deleted). 0 (deleted, gone, or changed: 409)
 * or -1. */
static int delete_pool_claim(struct sbx_warm *w, const char *ns, const struct pool_entry *e, struct kube_error *err) {
    char path[1024];
    sbx_object_path(path, sizeof(path), ns, "persistentvolumeclaims", e->name);
    long st = sbx_delete_preconditioned(w->deps, path, e->uid, e->rv, err);
    if (st == 200 || st == 202 || st == 404) {
        sbx_count(&w->deps->counters->deletes);
        LOGI("msg=\"warm pool: claim deleted\" namespace=%s pool=%s claim=%s", ns, e->key, e->name);
        return 0;
    }
    if (st == 409) { sbx_count(&w->deps->counters->conflicts); return 0; }
    return -1;
}

/* Has the StorageClass of want (or the cluster default) volumeBindingMode
 * WaitForFirstConsumer? Logged once per class. */
static int pool_binds_late(struct sbx_warm *w, const struct sbx_warm_want *want) {
    char name[256];
    if (!sbx_storage_class_binds_late(w->deps, want->storage_class, name, sizeof(name))) return 0;
    pthread_mutex_lock(&w->lock);
    int noted = strmap_get(&w->late_noted, name) != NULL;
    if (!noted) strmap_put(&w->late_noted, name, (void *)1, NULL);
    pthread_mutex_unlock(&w->lock);
    if (!noted)
        LOGI("msg=\"warm pool: StorageClass binds on first consumer (WaitForFirstConsumer): its pool claims are bound "
             "ahead by binder pods\" storageclass=%s", name);
    return 1;
}

/* Remember which pools ns keeps now (those of size > 0); none: forget ns. On ENOMEM the
 * old note stays (only the miss count can be off). */
static void note_wanted(struct sbx_warm *w, const char *ns, const struct sbx_warm_wants *wants) {
    struct wanted_keys *k = NULL;
    for (size_t i = 0; i < wants->n; i++) {
        if (wants->v[i].size <= 0) continue;
        if (!k && !(k = calloc(1, sizeof(*k)))) return;
        memcpy(k->key[k->n++], wants->v[i].key, SBX_WARM_KEY_LEN);
    }
    pthread_mutex_lock(&w->lock);
    if (!k) {
        free(strmap_remove(&w->wanted, ns));
    } else {
        void *old = NULL;
        if (strmap_put(&w->wanted, ns, k, &old) < 0) old = k;
        free(old);
    }
    pthread_mutex_unlock(&w->lock);
}

/* Does ns keep a pool of key (as its last pool pass saw it)? Caller holds w->lock. */
static int is_wanted(struct sbx_warm *w, const char *ns, const char *key) {
    const struct wanted_keys *k = strmap_get(&w->wanted, ns);
    for (size_t i = 0; k && i < k->n; i++)
        if (!strcmp(k->key[i], key)) return 1;
    return 0;
}

struct claim_tally { int64_t now; unsigned bound, pending; };

static int tally_claim(void *ud, const char *key, void *value) {
    struct claim_tally *t = ud;
    const struct pool_entry *e = value;
    (void)key;
    if (e->terminating || pool_entry_lapsed(e, t->now)) return 0;
    if (e->bound) t->bound++;
    else t->pending++;
    return 0;
}

void sbx_warm_stats(struct sbx_warm *w, unsigned *bound, unsigned *pending) {
    struct claim_tally t = {kj_now_ms(), 0, 0};
    if (w) {
        pthread_mutex_lock(&w->lock);
        strmap_foreach(&w->pool, tally_claim, &t);
        pthread_mutex_unlock(&w->lock);
    }
    *bound = t.bound;
    *pending = t.pending;
}

/* ---- binders (WaitForFirstConsumer pools) ----------------------------------------------- */

/* The spec a Sandbox of want's pool gets: its class's (from the cache), or the flag
 * defaults'. 0, or -1 with the reason in why. */
static int want_spec(struct sbx_warm *w, const struct sbx_warm_want *want, struct sbx_spec *out, char *why,
                     size_t whylen) {
    cJSON *sb = cJSON_Parse(POOL_PROBE_SANDBOX);
    int rc = -1;
    if (!sb) { errfmt_oom(why, whylen); return -1; }
    if (!want->owner_class) {
        rc = sbx_spec_parse(sb, w->deps->defaults, out, why, whylen);
    } else {
        cJSON *obj = sbx_classes_get(w->classes, want->owner_class);
        struct sbx_class cls;
        if (!obj) snprintf(why, whylen, "SandboxClass %s is not in the cache", want->owner_class);
        else if (sbx_class_parse(obj, &cls, why, whylen) == 0) {
            rc = sbx_class_resolve(sb, &cls, w->deps->defaults, out, why, whylen);
            sbx_class_free(&cls);
        }
        cJSON_Delete(obj);
    }
    cJSON_Delete(sb);
    return rc;
}

/* Does pool claim e want a binder: pending, not going, and known by uid? */
static int needs_binder(const struct pool_entry *e) { return !e->bound && !e->terminating && e->uid && *e->uid; }

/* Is there a binder of ns/claim in the index (or created by us within EXPECT_MS)? */
static int has_binder(struct sbx_warm *w, const char *ns, const char *claim, int64_t now) {
    char bkey[512];
    snprintf(bkey, sizeof(bkey), "%s/%s", ns, claim);
    pthread_mutex_lock(&w->lock);
    const struct binder_entry *b = strmap_get(&w->binders, bkey);
    int have = b && !b->deleting && (!b->expected_until_ms || b->expected_until_ms >= now);
    pthread_mutex_unlock(&w->lock);
    return have;
}

/* Index the binder we just created (counted until the watch shows it). */
static void expect_binder(struct sbx_warm *w, const char *ns, const char *claim, const cJSON *made) {
    char bkey[512];
    struct binder_entry *b = calloc(1, sizeof(*b));
    int failed = !b;
    void *prev = NULL;
    snprintf(bkey, sizeof(bkey), "%s/%s", ns, claim);
    if (b) {
        struct sbx_meta mm;
        sbx_meta_read(made, &mm);
        b->pod = dup_str(mm.name, &failed);
        b->uid = dup_str(mm.uid, &failed);
        b->expected_until_ms = kj_now_ms() + EXPECT_MS;
    }
    pthread_mutex_lock(&w->lock);
    if (failed || strmap_put(&w->binders, bkey, b, &prev) < 0) binder_entry_free(b);
    else binder_entry_free(prev);
    pthread_mutex_unlock(&w->lock);
}

/* One binder pod per pending claim of the WaitForFirstConsumer pool want of ns (pc: the
 * pool claims of ns). A spec that cannot be resolved binds nothing (logged). 0 or -1. */
static int bind_pool(struct sbx_warm *w, const char *ns, const struct sbx_warm_want *want,
                     const struct pool_copy *pc, struct kube_error *err) {
    const char **node = calloc(pc->n + 1, sizeof(*node)), *avoid[SBX_BINDER_AVOID_MAX];
    size_t n = 0;
    int rc = 0, have_spec = 0;
    struct sbx_spec spec;
    int64_t now = kj_now_ms();
    if (!node) { kube_error_oom(err); return -1; }
    for (size_t i = 0; i < pc->n; i++)
        if (!strcmp(pc->v[i].key, want->key) && !pc->v[i].terminating) node[n++] = pc->v[i].node;
    size_t navoid = sbx_binder_crowded_nodes(node, n, avoid, SBX_BINDER_AVOID_MAX);
    for (size_t i = 0; i < pc->n && rc == 0; i++) {
        const struct pool_entry *e = &pc->v[i];
        if (strcmp(e->key, want->key) != 0 || !needs_binder(e) || has_binder(w, ns, e->name, now)) continue;
        if (!have_spec) {
            char why[512];
            if (want_spec(w, want, &spec, why, sizeof(why)) < 0) {
                LOGW("msg=\"warm pool: no binder pods: the pool's sandbox spec does not resolve\" namespace=%s "
                     "pool=%s error=\"%s\"", ns, want->key, why);
                break;
            }
            have_spec = 1;
        }
        char path[512];
        cJSON *pod = sbx_build_binder(ns, want->key, e->name, e->uid, &spec, avoid, navoid), *made = NULL;
        cJSON *labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels");
        if (pod && w->deps->shard_label &&
            (!cJSON_AddStringToObject(labels, SBX_LABEL_SHARD, w->deps->shard_label->shard) ||
             !cJSON_AddStringToObject(labels, SBX_LABEL_SHARDS, w->deps->shard_label->shards))) {
            cJSON_Delete(pod);
            pod = NULL;
        }
        if (!pod) { kube_error_oom(err); rc = -1; break; }
        sbx_core_path(path, sizeof(path), ns, "pods");
        long st = kube_create(w->deps->client, path, pod, &made, err);
        cJSON_Delete(pod);
        if (st == 201 || st == 200) {
            sbx_count(&w->deps->counters->creates);
            expect_binder(w, ns, e->name, made);
            LOGI("msg=\"warm pool: binder pod created\" namespace=%s pool=%s claim=%s avoiding=%zu", ns, want->key,
                 e->name, navoid);
        } else if (st == 409) {
            sbx_count(&w->deps->counters->conflicts);   /* there already (the watch will show it) */
        } else {
            rc = -1;
        }
        cJSON_Delete(made);
    }
    if (have_spec) sbx_spec_free(&spec);
    free(node);
    return rc;
}

struct binder_ref { char claim[256], pod[256], uid[64]; };
struct binder_list { const char *ns; struct binder_ref *v; size_t n, cap; int failed; };

static int collect_binder(void *ud, const char *key, void *value) {
    struct binder_list *l = ud;
    const struct binder_entry *b = value;
    size_t nsl = strlen(l->ns);
    /* (one we made that the watch has not shown yet counts: its uid is known) */
    if (strncmp(key, l->ns, nsl) != 0 || key[nsl] != '/' || b->deleting || !b->uid || !*b->uid) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        struct binder_ref *v = realloc(l->v, cap * sizeof(*v));
        if (!v) { l->failed = 1; return 1; }
        l->v = v;
        l->cap = cap;
    }
    struct binder_ref *r = &l->v[l->n++];
    snprintf(r->claim, sizeof(r->claim), "%s", key + nsl + 1);
    snprintf(r->pod, sizeof(r->pod), "%s", b->pod);
    snprintf(r->uid, sizeof(r->uid), "%s", b->uid);
    return 0;
}

/* Delete the binders of ns whose claim needs none any more: Bound, adopted, gone, or of a
 * pool that is not bound ahead (late[k] says which wants are). uid precondition: a pod
 * made again under the name since is not deleted blind. 0 or -1. */
static int sweep_binders(struct sbx_warm *w, const char *ns, const struct sbx_warm_wants *wants,
                         const int *late, const struct pool_copy *pc, struct kube_error *err) {
    struct binder_list l = {.ns = ns};
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    strmap_foreach(&w->binders, collect_binder, &l);
    pthread_mutex_unlock(&w->lock);
    if (l.failed) { free(l.v); kube_error_oom(err); return -1; }
    for (size_t j = 0; j < l.n && rc == 0; j++) {
        int keep = 0;
        for (size_t i = 0; i < pc->n && !keep; i++) {
            if (strcmp(pc->v[i].name, l.v[j].claim) != 0 || !needs_binder(&pc->v[i])) continue;
            for (size_t k = 0; k < wants->n && !keep; k++)
                keep = late[k] && wants->v[k].size > 0 && !strcmp(wants->v[k].key, pc->v[i].key);
        }
        if (keep) continue;
        char path[1024], bkey[512];
        sbx_object_path(path, sizeof(path), ns, "pods", l.v[j].pod);
        long st = sbx_delete_preconditioned(w->deps, path, l.v[j].uid, NULL, err);
        if (st == 200 || st == 202 || st == 404) {
            sbx_count(&w->deps->counters->deletes);
            snprintf(bkey, sizeof(bkey), "%s/%s", ns, l.v[j].claim);
            pthread_mutex_lock(&w->lock);
            struct binder_entry *b = strmap_get(&w->binders, bkey);
            if (b && !strcmp(b->uid, l.v[j].uid)) b->deleting = 1;
            pthread_mutex_unlock(&w->lock);
            LOGI("msg=\"warm pool: binder pod deleted\" namespace=%s claim=%s pod=%s", ns, l.v[j].claim, l.v[j].pod);
        } else if (st == 409) {
            sbx_count(&w->deps->counters->conflicts);
        } else {
            rc = -1;
        }
    }
    free(l.v);
    return rc;
}

struct sbx_outcome sbx_warm_reconcile(struct sbx_warm *w, const char *ns, struct kube_error *err) {
    struct sbx_warm_wants wants;
    struct pool_copy pc;
    struct sbx_outcome res = sbx_failed();
    memset(&wants, 0, sizeof(wants));
    if (!serves(w, ns)) return sbx_forget();   /* not ours: forget the key */
    if (pool_wants(w, ns, &wants) < 0 || pool_snapshot(w, ns, NULL, &pc) < 0) {
        sbx_warm_wants_free(&wants);
        kube_error_oom(err);
        return sbx_failed();
    }
    int late[SBX_WARM_WANTS_MAX] = {0};
    for (size_t i = 0; i < wants.n; i++) late[i] = pool_binds_late(w, &wants.v[i]);
    note_wanted(w, ns, &wants);
    /* Every pool key that is wanted or has claims. */
    const char *keys[SBX_WARM_WANTS_MAX * 2];
    size_t nkeys = 0;
    for (size_t i = 0; i < wants.n; i++) keys[nkeys++] = wants.v[i].key;
    for (size_t i = 0; i < pc.n && nkeys < sizeof(keys) / sizeof(keys[0]); i++) {
        size_t k = 0;
        while (k < nkeys && strcmp(keys[k], pc.v[i].key) != 0) k++;
        if (k == nkeys) keys[nkeys++] = pc.v[i].key;
    }
    struct sbx_warm_claim *claims = calloc(pc.n + 1, sizeof(*claims));
    size_t *idx = calloc(pc.n + 1, sizeof(*idx)), *del = calloc(pc.n + 1, sizeof(*del));
    if (!claims || !idx || !del) { kube_error_oom(err); goto out; }
    int wanted_any = 0;
    /* The refill (claims to make, pending claims of a late pool to bind) yields to starts in
     * flight; what is in excess is deleted all the same. Asked only when there is one. */
    int64_t wait = 0;
    int refill = 0;
    for (size_t i = 0; i < wants.n && !refill; i++) {
        if (wants.v[i].size <= 0) continue;
        int live = 0, pending = 0;
        for (size_t j = 0; j < pc.n; j++) {
            if (strcmp(pc.v[j].key, wants.v[i].key) != 0 || pc.v[j].terminating) continue;
            live++;
            if (!pc.v[j].bound) pending++;
        }
        refill = live < wants.v[i].size || (late[i] && pending > 0);
    }
    if (refill) wait = refill_wait(w, ns);
    else refill_done(w, ns);
    for (size_t k = 0; k < nkeys; k++) {
        const struct sbx_warm_want *want = sbx_warm_wants_find(&wants, keys[k]);
        size_t n = 0, ndel = 0;
        for (size_t i = 0; i < pc.n; i++) {
            if (strcmp(pc.v[i].key, keys[k]) != 0) continue;
            claims[n] = (struct sbx_warm_claim){.name = pc.v[i].name, .uid = pc.v[i].uid, .rv = pc.v[i].rv,
                                                .bound = pc.v[i].bound, .terminating = pc.v[i].terminating,
                                                .created_ms = pc.v[i].created_ms};
            idx[n++] = i;
        }
        int size = want ? want->size : 0;
        if (size > 0) wanted_any = 1;
        int create = sbx_warm_plan(size, claims, n, del, &ndel);
        if (wait > 0) create = 0;
        for (size_t j = 0; j < ndel; j++) {
            if (delete_pool_claim(w, ns, &pc.v[idx[del[j]]], err) < 0) goto out;
            pc.v[idx[del[j]]].terminating = 1;   /* no binder for it below */
        }
        for (int j = 0; j < create; j++) {
            char path[512];
            cJSON *obj = sbx_warm_build_claim(ns, want), *made = NULL;
            /* Sharded: each shard keeps its own pools (sized by its own Sandboxes), and
             * its claim informer sees only claims of its label. */
            cJSON *labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");
            if (obj && w->deps->shard_label &&
                (!cJSON_AddStringToObject(labels, SBX_LABEL_SHARD, w->deps->shard_label->shard) ||
                 !cJSON_AddStringToObject(labels, SBX_LABEL_SHARDS, w->deps->shard_label->shards))) {
                cJSON_Delete(obj);
                obj = NULL;
            }
            if (!obj) { kube_error_oom(err); goto out; }
            sbx_core_path(path, sizeof(path), ns, "persistentvolumeclaims");
            long st = kube_create(w->deps->client, path, obj, &made, err);
            cJSON_Delete(obj);
            if (st != 201 && st != 200) { cJSON_Delete(made); goto out; }
            sbx_count(&w->deps->counters->creates);
            /* Counted from now on, before the watch shows it: the next pass does not
             * create it again. */
            pthread_mutex_lock(&w->lock);
            struct sbx_claim_view mv;
            sbx_claim_view_parse(made, &mv);
            if (!mv.meta.deleting) pool_put(w, &mv, want->key, kj_now_ms() + EXPECT_MS);
            pthread_mutex_unlock(&w->lock);
            LOGI("msg=\"warm pool: claim created\" namespace=%s pool=%s claim=%s storageclass=%s", ns, want->key,
                 mv.meta.name ? mv.meta.name : "?",
                 want->storage_class ? want->storage_class : "(default)");
            cJSON_Delete(made);
        }
    }
    /* The binders: one per pending claim of a WaitForFirstConsumer pool, none left over.
     * (Claims created above get theirs in the pass their watch event queues.) */
    for (size_t i = 0; i < wants.n; i++)
        if (!wait && late[i] && wants.v[i].size > 0 && bind_pool(w, ns, &wants.v[i], &pc, err) < 0) goto out;
    if (sweep_binders(w, ns, &wants, late, &pc, err) < 0) goto out;
    /* Nothing wanted and nothing left: the key leaves the queue until a Sandbox, a class
     * or a pool claim brings it back. */
    res = wait > 0 ? sbx_after(wait) : !wanted_any && pc.n == 0 ? sbx_forget() : sbx_done();
out:
    free(claims);
    free(idx);
    free(del);
    pool_copy_free(&pc);
    sbx_warm_wants_free(&wants);
    return res;
}

/* ---- adoption ---------------------------------------------------------------------------- */

void sbx_warm_note_released(struct sbx_warm *w, const char *uid) {
    if (!uid) return;
    intptr_t until = (intptr_t)(kj_now_ms() + SBX_WARM_RELEASE_WINDOW_MS);
    pthread_mutex_lock(&w->lock);
    if (strmap_put(&w->released, uid, (void *)until, NULL) < 0)
        LOGW("msg=\"warm pool: out of memory noting a released claim\" uid=%s", uid);
    pthread_mutex_unlock(&w->lock);
}

int sbx_warm_released(struct sbx_warm *w, const char *uid) {
    if (!uid) return 0;
    int64_t now = kj_now_ms();
    pthread_mutex_lock(&w->lock);
    intptr_t until = (intptr_t)strmap_get(&w->released, uid);
    if (until && until < now) strmap_remove(&w->released, uid);
    pthread_mutex_unlock(&w->lock);
    return until >= now;
}

/* How many pool claims one pass tries before it makes its own claim. */
#define ADOPT_TRIES 4

int sbx_warm_adopt(struct sbx_warm *w, const char *ns, const struct sbx_owner *owner,
                   const struct sbx_spec *spec, cJSON **adopted, char *claim, size_t claimlen, struct kube_error *err) {
    char key[SBX_WARM_KEY_LEN];
    struct pool_copy pc;
    *adopted = NULL;
    if (!sbx_warm_sandbox_key(spec, key) || sbx_warm_released(w, owner->uid)) return 0;
    if (pool_snapshot(w, ns, key, &pc) < 0) { kube_error_oom(err); return -1; }
    int rc = 0, tries = 0;
    struct sbx_warm_claim *claims = NULL;
    size_t *order = NULL;
    if (pc.n == 0) goto out;
    claims = calloc(pc.n, sizeof(*claims));
    order = calloc(pc.n, sizeof(*order));
    if (!claims || !order) { rc = -1; kube_error_oom(err); goto out; }
    for (size_t i = 0; i < pc.n; i++)
        claims[i] = (struct sbx_warm_claim){.name = pc.v[i].name, .uid = pc.v[i].uid, .rv = pc.v[i].rv,
                                            .bound = pc.v[i].bound, .terminating = pc.v[i].terminating,
                                            .created_ms = pc.v[i].created_ms};
    size_t n = sbx_warm_candidates(claims, pc.n, owner->uid, order);
    for (size_t j = 0; j < n && tries < ADOPT_TRIES; j++) {
        const struct pool_entry *e = &pc.v[order[j]];
        if (!sbx_warm_claim_fits(spec, e->storage_class, e->request, NULL) || strlen(e->name) >= claimlen) continue;
        tries++;
        char path[1024];
        cJSON *patch = sbx_warm_adopt_patch(owner, spec, e->name, e->rv, kj_now_ms()), *out = NULL;
        if (!patch) { rc = -1; kube_error_oom(err); goto out; }
        sbx_object_path(path, sizeof(path), ns, "persistentvolumeclaims", e->name);
        long st = kube_merge_patch(w->deps->client, path, patch, &out, err);
        cJSON_Delete(patch);
        if (st == 200) {
            /* Expected as the Sandbox's claim until the watch shows it so: a pass before
             * then waits instead of adopting (or creating) a second one. */
            struct sbx_claim_view av;   /* the claim as the adoption left it */
            sbx_claim_view_parse(out, &av);
            const char *made_uid = av.meta.uid;
            sbx_records_expect(w->deps->records, owner->uid, SBX_EXPECT_CLAIM, made_uid ? made_uid : e->uid,
                               kj_now_ms() + EXPECT_MS);
            pool_forget(w, ns, e->name);
            memcpy(claim, e->name, strlen(e->name) + 1);
            *adopted = out;
            LOGI("msg=\"warm pool: claim adopted\" sandbox=%s/%s claim=%s pool=%s", ns, owner->name, e->name, key);
            sbx_count(&w->deps->counters->warm_adoptions);
            pthread_mutex_lock(&w->lock);
            ns_number_set(&w->adopted_at, ns, kj_now_ms());   /* its pod is being made: see refill_wait */
            pthread_mutex_unlock(&w->lock);
            queue_pools(w, ns);   /* refill */
            rc = 1;
            goto out;
        }
        cJSON_Delete(out);
        if (st == 409 || st == 404) {
            /* Taken by another Sandbox (or gone) since the cache showed it: the next one. */
            sbx_count(&w->deps->counters->conflicts);
            LOGD("msg=\"warm pool: claim taken meanwhile\" sandbox=%s/%s claim=%s status=%ld", ns, owner->name,
                 e->name, st);
            continue;
        }
        /* No answer (or an unexpected one): the claim may have been adopted all the same.
         * Expect it, so no pass creates or adopts another before the watch tells. */
        sbx_records_expect(w->deps->records, owner->uid, SBX_EXPECT_CLAIM, e->uid, kj_now_ms() + EXPECT_MS);
        rc = -1;
        goto out;
    }
out:
    if (rc == 0) {
        /* None to adopt: a miss when ns keeps a pool of this shape (it was drained, or
         * its claims are still provisioning). */
        pthread_mutex_lock(&w->lock);
        int miss = is_wanted(w, ns, key);
        pthread_mutex_unlock(&w->lock);
        if (miss) sbx_count(&w->deps->counters->warm_misses);
    }
    free(claims);
    free(order);
    pool_copy_free(&pc);
    return rc;
}
