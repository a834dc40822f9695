/* tests/unit/reconcile_env.h — what the test_reconcile_*.c suites share: a controller
 * (sandbox/manager/reconcile.h) on the in-process fake API server (fakeapi.h) with its caches
 * synced and no workers, so each test runs single passes (sbx_reconcile) and asserts on
 * the requests they made and the objects they left. The test plays the other parties:
 * the user (creates, patches, deletes Sandboxes), the kubelet (pod status) and the
 * provisioner (claim phase), through the fake's store, whose watch events reach the
 * controller's informers. Header-only. */
#ifndef YAO_TEST_RECONCILE_ENV_H
#define YAO_TEST_RECONCILE_ENV_H

#include "check.h"
#include "fakeapi.h"
#include "kube/kjson.h"
#include "runtime/informer.h"
#include "sandbox/model/builders.h"
#include "sandbox/model/naming.h"
#include "sandbox/manager/reconcile.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/spec.h"

#define NS "t"
#define SBX_COLL "/apis/sandbox.yaoapps.com/v1alpha1/namespaces/" NS "/sandboxes"
#define CLASS_COLL "/apis/sandbox.yaoapps.com/v1alpha1/sandboxclasses"
#define POD_COLL "/api/v1/namespaces/" NS "/pods"
#define PVC_COLL "/api/v1/namespaces/" NS "/persistentvolumeclaims"
#define SC_COLL "/apis/storage.k8s.io/v1/storageclasses"
#define SC_IMMEDIATE "fast"

struct env {
    struct fakeapi fa;
    struct kube_client *client;
    struct sbx_controller *ctl;
    int up;
};

/* Names of the Sandbox `name` of (user, chat): its paths and those of its pod and claim. */
struct names {
    char key[128], sb[256], status[300], pod_name[SBX_NAME_MAX + 1], claim_name[128], pod[512], pvc[512];
};

static inline void names_of(struct names *n, const char *name, const char *user, const char *chat) {
    snprintf(n->key, sizeof n->key, NS "/%s", name);
    snprintf(n->sb, sizeof n->sb, SBX_COLL "/%s", name);
    snprintf(n->status, sizeof n->status, "%s/status", n->sb);
    if (sbx_name_pod(user, chat, n->pod_name, sizeof n->pod_name) < 0) n->pod_name[0] = '\0';
    sbx_claim_name(n->pod_name, n->claim_name, sizeof n->claim_name);
    snprintf(n->pod, sizeof n->pod, POD_COLL "/%s", n->pod_name);
    snprintf(n->pvc, sizeof n->pvc, PVC_COLL "/%s", n->claim_name);
}

/* Start the fake (with a default StorageClass that binds at the first consumer, so a
 * pod is created with its claim in one pass, and SC_IMMEDIATE, which binds at once) and
 * a controller on it watching NS.
 * tweak (may be NULL) adjusts the options first. 0 or -1. */
static inline int env_start(struct env *e, void (*tweak)(struct sbx_controller_options *)) {
    char err[512];
    memset(e, 0, sizeof(*e));
    kj_now_offset_set(0);
    if (fakeapi_start(&e->fa) < 0) return -1;
    e->up = 1;
    if (fakeapi_seed(&e->fa, SC_COLL,
                     "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"local\","
                     "\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"true\"}},"
                     "\"provisioner\":\"fake\",\"volumeBindingMode\":\"WaitForFirstConsumer\"}") < 0)
        return -1;
    /* and one that binds at once (a warm pool keeps claims only of such a class) */
    if (fakeapi_seed(&e->fa, SC_COLL,
                     "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"" SC_IMMEDIATE
                     "\"},\"provisioner\":\"fake\",\"volumeBindingMode\":\"Immediate\"}") < 0)
        return -1;
    if (!(e->client = fakeapi_client(&e->fa))) return -1;
    /* Retries back off 200 ms, 400 ms ...: a fault test waits for them, the others never. */
    kube_client_set_timeout(e->client, 5000);
    struct sbx_controller_options o;
    memset(&o, 0, sizeof(o));
    sbx_defaults_init(&o.defaults);
    o.namespace_ = NS;
    o.workers = 1;
    if (tweak) tweak(&o);
    e->ctl = sbx_controller_new(e->client, &o, err, sizeof err);
    if (!e->ctl) { fprintf(stderr, "controller: %s\n", err); return -1; }
    if (sbx_controller_start_caches(e->ctl, NULL) < 0) { fprintf(stderr, "caches did not sync\n"); return -1; }
    return 0;
}

static inline void env_stop(struct env *e) {
    if (e->ctl) sbx_controller_free(e->ctl);
    if (e->client) kube_client_free(e->client);
    if (e->up) fakeapi_stop(&e->fa);
    kj_now_offset_set(0);
    memset(e, 0, sizeof(*e));
}

/* One environment per test binary, started on first use and stopped at exit (a start
 * and a stop take seconds under valgrind). Tests keep apart by their Sandboxes' names
 * and users, and count requests from a mark to their own paths. NULL when it could not
 * start. */
static struct env shared_env;
static int shared_env_state;   /* 0 not tried, 1 up, -1 failed */
static inline void shared_env_stop(void) { env_stop(&shared_env); }
static inline struct env *env_tweaked(void (*tweak)(struct sbx_controller_options *)) {
    if (!shared_env_state) {
        shared_env_state = env_start(&shared_env, tweak) == 0 ? 1 : -1;
        atexit(shared_env_stop);
    }
    kj_now_offset_set(0);
    return shared_env_state == 1 ? &shared_env : NULL;
}
static inline struct env *env(void) { return env_tweaked(NULL); }

static inline void env_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

/* Does the informer's copy of key carry the store's resourceVersion of path (or are both
 * absent), with the handlers done with it? */
static inline int cache_current(struct env *e, struct informer *inf, const char *key, const char *path) {
    cJSON *stored = fakeapi_get(&e->fa, path), *cached = informer_get(inf, key);
    const char *a = fa_md_str(stored, "resourceVersion"), *b = fa_md_str(cached, "resourceVersion");
    /* ... and its handler has run (what it keeps, e.g. the warm index, is current too) */
    int same = ((!stored && !cached) || (a && b && !strcmp(a, b))) && informer_quiescent(inf);
    cJSON_Delete(stored);
    cJSON_Delete(cached);
    return same;
}

/* Wait (at most 10 s) until the controller's pod cache shows the pod at path (any pod of
 * NS: a copier, one not labelled for a shard yet) as the store has it. 1 when it does. */
static inline int pod_cached(struct env *e, const char *path) {
    char key[300];
    snprintf(key, sizeof key, NS "/%s", strrchr(path, '/') + 1);
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(5))
        if (cache_current(e, sbx_controller_cache(e->ctl, SBX_CACHE_PODS), key, path)) return 1;
    return 0;
}

/* Wait (at most 10 s) until the controller's caches show the Sandbox, its pod and its
 * claim as the store has them. 1 when they do. */
static inline int settle(struct env *e, const struct names *n) {
    char pod_key[300], pvc_key[300];
    snprintf(pod_key, sizeof pod_key, NS "/%s", n->pod_name);
    snprintf(pvc_key, sizeof pvc_key, NS "/%s", n->claim_name);
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(5))
        if (cache_current(e, sbx_controller_cache(e->ctl, SBX_CACHE_SANDBOXES), n->key, n->sb) && cache_current(e, sbx_controller_cache(e->ctl, SBX_CACHE_PODS), pod_key, n->pod) &&
            cache_current(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), pvc_key, n->pvc))
            return 1;
    fprintf(stderr, "  caches did not catch up with the store for %s\n", n->key);
    return 0;
}

/* An outcome as the suites assert it: -1 failed, else 0 with *requeue_ms (may be NULL)
 * the wait it asked for (after: N ms, forget: -1, done: 0). A stale outcome never leaves
 * a pass (it is decided again after a short wait): 1, which no assertion expects. */
static inline int outcome_rc(struct sbx_outcome r, const struct kube_error *err, const char *key,
                             int64_t *requeue_ms) {
    if (requeue_ms) *requeue_ms = r.kind == SBX_OUTCOME_AFTER ? r.after_ms : r.kind == SBX_OUTCOME_FORGET ? -1 : 0;
    if (r.kind == SBX_OUTCOME_FAILED) fprintf(stderr, "  pass %s: %s\n", key, err->message);
    return r.kind == SBX_OUTCOME_FAILED ? -1 : r.kind == SBX_OUTCOME_STALE ? 1 : 0;
}

/* One pass over the Sandbox of n as the caches are now (a test that holds one behind the
 * store). See outcome_rc. */
static inline int pass_now(struct env *e, const struct names *n, int64_t *requeue_ms) {
    struct kube_error err;
    kube_error_clear(&err);
    return outcome_rc(sbx_reconcile(e->ctl, n->key, &err), &err, n->key, requeue_ms);
}

/* One pass over the Sandbox of n once the caches show the store. */
static inline int pass(struct env *e, const struct names *n, int64_t *requeue_ms) {
    settle(e, n);
    return pass_now(e, n, requeue_ms);
}

/* A string field of the stored object at path ("status.phase"), copied into out ("" when
 * absent). */
static inline const char *stored_str(struct env *e, const char *path, const char *field, char *out, size_t n) {
    cJSON *o = fakeapi_get(&e->fa, path);
    const char *v = kj_str(o, field);
    snprintf(out, n, "%s", v ? v : "");
    cJSON_Delete(o);
    return out;
}

/* Does the store hold an object at path? */
static inline int stored_exists(struct env *e, const char *path) {
    cJSON *o = fakeapi_get(&e->fa, path);
    cJSON_Delete(o);
    return o != NULL;
}

/* The reason of the stored Sandbox's Ready condition, into out. */
static inline const char *ready_reason(struct env *e, const char *path, char *out, size_t n) {
    cJSON *o = fakeapi_get(&e->fa, path);
    const cJSON *c;
    out[0] = '\0';
    cJSON_ArrayForEach(c, kj_path(o, "status.conditions")) {
        const char *t = kj_str(c, "type"), *r = kj_str(c, "reason");
        if (t && !strcmp(t, "Ready")) snprintf(out, n, "%s", r ? r : "");
    }
    cJSON_Delete(o);
    return out;
}

/* An RFC 3339 time ago_ms before the controller's now. */
static inline void time_ago(int64_t ago_ms, char *out, size_t n) { kj_time_format(kj_now_ms() - ago_ms, out, n); }

/* Play the kubelet: the pod at path runs, Ready, since since_ago_ms. 0 or -1. */
static inline int pod_running(struct env *e, const char *path, int64_t since_ago_ms) {
    char t[40], patch[1024];
    time_ago(since_ago_ms, t, sizeof t);
    snprintf(patch, sizeof patch,
             "{\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\",\"conditions\":["
             "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"},"
             "{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"}],"
             "\"containerStatuses\":[{\"name\":\"sandbox\",\"ready\":true,\"restartCount\":0,"
             "\"state\":{\"running\":{\"startedAt\":\"%s\"}}}]}}", t, t, t, t);
    return fakeapi_patch(&e->fa, path, patch);
}

/* Play the provisioner: the claim at path is Bound. */
static inline int claim_bound(struct env *e, const char *path) {
    return fakeapi_patch(&e->fa, path, "{\"status\":{\"phase\":\"Bound\"}}");
}

/* Seed a Sandbox: name, user, chat, and extra spec members (a JSON fragment that starts
 * with ',' or is ""). */
static inline int seed_sandbox(struct env *e, const char *name, const char *user, const char *chat, const char *spec_extra,
                        const char *metadata_extra) {
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\",\"metadata\":{\"name\":\"%s\"%s},"
             "\"spec\":{\"userID\":\"%s\",\"chatID\":\"%s\"%s}}", name, metadata_extra ? metadata_extra : "", user,
             chat, spec_extra ? spec_extra : "");
    return fakeapi_seed(&e->fa, SBX_COLL, doc);
}

/* Seed the SandboxClass name with the given spec members (unless the store has it), and
 * wait until the controller's class cache holds count classes. 0 or -1. */
static inline int seed_class(struct env *e, const char *name, const char *spec, int count) {
    char path[256], doc[1024];
    snprintf(path, sizeof path, CLASS_COLL "/%s", name);
    if (!stored_exists(e, path)) {
        snprintf(doc, sizeof doc, "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"SandboxClass\","
                 "\"metadata\":{\"name\":\"%s\"},\"spec\":{%s}}", name, spec);
        if (fakeapi_seed(&e->fa, CLASS_COLL, doc) < 0) return -1;
    }
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(5))
        if (informer_count(sbx_controller_cache(e->ctl, SBX_CACHE_SANDBOX_CLASSES)) >= (size_t)count) return 0;
    return -1;
}

/* Does obj's controller ownerReference name the Sandbox with uid? */
static inline int controlled_by(const cJSON *obj, const char *uid) {
    const cJSON *r;
    cJSON_ArrayForEach(r, kj_path(obj, "metadata.ownerReferences")) {
        const char *u = kj_str(r, "uid"), *k = kj_str(r, "kind");
        if (kj_bool(r, "controller", 0) && u && uid && !strcmp(u, uid) && k && !strcmp(k, "Sandbox")) return 1;
    }
    return 0;
}

/* The precondition `field` of a logged DELETE body (NULL when none). */
static inline const char *precondition(const cJSON *delete_body, const char *field) {
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(delete_body, "preconditions"), field));
}

/* Pool claims carry this label until a Sandbox adopts one. */
#define WARM_SEL "sandbox.yaoapps.com/warm-pool"

/* One pool pass of NS (sandbox/io/warm.c). See outcome_rc. */
static inline int pool_pass(struct env *e) {
    struct kube_error err;
    kube_error_clear(&err);
    return outcome_rc(sbx_reconcile(e->ctl, NS "/#warm", &err), &err, NS "/#warm", NULL);
}

/* The name of the one pool claim in the store not yet adopted (out "" when none or
 * several). */
static inline void pool_claim(struct env *e, char *out, size_t n) {
    cJSON *l = fakeapi_list(&e->fa, PVC_COLL, WARM_SEL);
    const char *name = cJSON_GetArraySize(l) == 1 ? kj_str(cJSON_GetArrayItem(l, 0), "metadata.name") : NULL;
    snprintf(out, n, "%s", name ? name : "");
    cJSON_Delete(l);
}

#endif
