/* tests/unit/test_reconcile_cleanup.c — single reconcile passes (sandbox/manager/reconcile.c,
 * orphans.c, status.c) against the in-process fake API server (fakeapi.h,
 * reconcile_env.h): what a deleted Sandbox owned is swept after the garbage collector's
 * grace period, with uid preconditions, and then the key is dropped; a pod of our labels
 * whose Sandbox this process never saw is swept too, one controlled by another API
 * group's Sandbox kind is not; a status write refused with 409 makes the pass decide again
 * soon (no error) and the next one writes it; 429 with Retry-After and 503 on a create are
 * retried after the wait, 500 on a status PATCH (idempotent) is retried, 500 and dropped
 * connections on a create (not idempotent) fail the pass, whose retry then creates. */
#include "reconcile_env.h"
#include "sandbox/decide/orphans_decide.h"
#include "sandbox/model/workkey.h"

/* The sweep's grace (orphans.c SWEEP_GRACE_MS) and a little more. */
#define PAST_GRACE_MS 31000

/* A Sandbox `name` of (user, c1) with a claim and a pod (one pass). 0 or -1. */
static int created(struct env *e, struct names *n, const char *name, const char *user) {
    names_of(n, name, user, "c1");
    if (seed_sandbox(e, name, user, "c1", "", NULL) < 0 || pass(e, n, NULL) != 0) return -1;
    return stored_exists(e, n->pod) && stored_exists(e, n->pvc) ? 0 : -1;
}

static void uid_of(struct env *e, const char *path, char *out, size_t n) {
    cJSON *o = fakeapi_get(&e->fa, path);
    snprintf(out, n, "%s", kj_str(o, "metadata.uid") ? kj_str(o, "metadata.uid") : "?");
    cJSON_Delete(o);
}

TEST(deleted_sandbox_leaves_nothing_after_the_grace) {
    struct env *e = env();
    struct names n;
    char pod_uid[64], pvc_uid[64];
    if (!e || created(e, &n, "s-gone", "gina") < 0) { CHECK(!"created"); return; }
    uid_of(e, n.pod, pod_uid, sizeof pod_uid);
    uid_of(e, n.pvc, pvc_uid, sizeof pvc_uid);

    /* The user deletes the Sandbox; the fake has no garbage collector. */
    CHECK_INT(fakeapi_remove(&e->fa, n.sb), 0);
    size_t m = fakeapi_mark(&e->fa);
    int64_t rq = 0;
    CHECK_INT(pass(e, &n, &rq), 0);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 0);   /* within the grace: the collector's turn */
    CHECK(rq > 25000 && rq <= 30000);

    kj_now_offset_set(PAST_GRACE_MS);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, &rq), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pvc, 200), 1);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 2);
    cJSON *d = fakeapi_last_body(&e->fa, m, "DELETE", n.pod);
    CHECK_STR(precondition(d, "uid"), pod_uid);
    cJSON_Delete(d);
    d = fakeapi_last_body(&e->fa, m, "DELETE", n.pvc);
    CHECK_STR(precondition(d, "uid"), pvc_uid);
    cJSON_Delete(d);
    CHECK(!stored_exists(e, n.pod));
    CHECK(!stored_exists(e, n.pvc));
    CHECK(rq > 0);   /* looks once more */

    /* Once the caches show them gone, the key leaves the queue for good. */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, &rq), 0);
    CHECK_INT(rq, -1);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 0);
}

/* A pod as a controller of an earlier process made it for the Sandbox `owner` (uid
 * owner_uid) of API version api. */
static int seed_orphan_pod(struct env *e, const char *pod, const char *owner, const char *owner_uid, const char *api) {
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"" SBX_LABEL_NAME
             "\":\"%s\"},\"ownerReferences\":[{\"apiVersion\":\"%s\",\"kind\":\"Sandbox\",\"name\":\"%s\","
             "\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"containers\":[{\"name\":\"sandbox\",\"image\":\"x\"}]}}",
             pod, owner, api, owner, owner_uid);
    return fakeapi_seed(&e->fa, POD_COLL, doc);
}

TEST(pod_of_a_sandbox_never_seen_is_swept_another_groups_is_not) {
    struct env *e = env();
    struct names ghost, other;
    if (!e) { CHECK(!"environment started"); return; }
    names_of(&ghost, "ghost", "nobody", "c1");
    names_of(&other, "other", "nobody2", "c1");
    CHECK_INT(seed_orphan_pod(e, ghost.pod_name, "ghost", "uid-ghost", SBX_API_VERSION), 0);
    CHECK_INT(seed_orphan_pod(e, other.pod_name, "other", "uid-other", "example.com/v1"), 0);
    settle(e, &ghost);
    settle(e, &other);

    size_t m = fakeapi_mark(&e->fa);
    int64_t rq = 0;
    CHECK_INT(pass(e, &ghost, &rq), 0);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 0);
    CHECK(rq > 25000 && rq <= 30000);
    CHECK_INT(pass(e, &other, &rq), 0);
    CHECK_INT(rq, -1);   /* nothing of ours: dropped at once */

    kj_now_offset_set(PAST_GRACE_MS);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &ghost, &rq), 0);
    CHECK_INT(pass(e, &other, &rq), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", ghost.pod, 200), 1);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", other.pod), 0);
    CHECK(!stored_exists(e, ghost.pod));
    CHECK(stored_exists(e, other.pod));
}

/* An object of coll named name with the controller's labels (warm: also the warm-pool
 * label) and owner refs (JSON array text, or NULL for none). */
static int seed_labelled(struct env *e, const char *coll, const char *kind, const char *name, int warm, const char *refs) {
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{\"apiVersion\":\"v1\",\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"" SBX_LABEL_MANAGED_BY
             "\":\"" SBX_MANAGED_BY "\",\"" SBX_LABEL_NAME "\":\"%s\"%s}%s%s},\"spec\":%s}",
             kind, name, warm ? "" : "s-orph", warm ? ",\"sandbox.yaoapps.com/warm-pool\":\"k\"" : "",
             refs ? ",\"ownerReferences\":" : "", refs ? refs : "",
             strcmp(kind, "Pod") ? "{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}"
                                 : "{\"containers\":[{\"name\":\"sandbox\",\"image\":\"x\"}]}");
    return fakeapi_seed(&e->fa, coll, doc);
}

/* Wait (10 s at most) until the pod and claim caches hold key. */
static int cached(struct env *e, const char *pod_key, const char *pvc_key) {
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(5)) {
        cJSON *a = informer_get(sbx_controller_cache(e->ctl, SBX_CACHE_PODS), pod_key);
        cJSON *b = informer_get(sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), pvc_key);
        int both = a && b;
        cJSON_Delete(a);
        cJSON_Delete(b);
        if (both) return 1;
    }
    return 0;
}

/* `kubectl delete sandbox --cascade=orphan` leaves the pod and claim with the controller's
 * labels and no owner: the namespace's ownerless sweep deletes them at once, with uid
 * preconditions; an owned pod and a warm pool's claim (no owner by design) stay. */
TEST(ownerless_objects_are_deleted_at_once) {
    struct env *e = env();
    if (!e) { CHECK(!"environment started"); return; }
    kj_now_offset_set(0);
    CHECK_INT(seed_labelled(e, POD_COLL, "Pod", "orph-pod", 0, NULL), 0);
    CHECK_INT(seed_labelled(e, PVC_COLL, "PersistentVolumeClaim", "orph-pvc", 0, "[]"), 0);
    CHECK_INT(seed_labelled(e, POD_COLL, "Pod", "owned-pod", 0,
                            "[{\"apiVersion\":\"" SBX_API_VERSION "\",\"kind\":\"Sandbox\",\"name\":\"s-orph\","
                            "\"uid\":\"live\",\"controller\":true}]"), 0);
    CHECK_INT(seed_labelled(e, PVC_COLL, "PersistentVolumeClaim", "pool-pvc", 1, NULL), 0);
    CHECK(cached(e, NS "/orph-pod", NS "/orph-pvc"));
    CHECK(cached(e, NS "/owned-pod", NS "/pool-pvc"));
    char pod_uid[64], pvc_uid[64];
    struct kube_error err;
    uid_of(e, POD_COLL "/orph-pod", pod_uid, sizeof pod_uid);
    uid_of(e, PVC_COLL "/orph-pvc", pvc_uid, sizeof pvc_uid);

    size_t m = fakeapi_mark(&e->fa);
    char sweep[SBX_WORK_KEY_MAX];
    CHECK_INT(sbx_work_key_format(SBX_WORK_OWNERLESS, NS, NULL, sweep, sizeof sweep), 0);
    CHECK_INT(sbx_reconcile(e->ctl, sweep, &err).kind, SBX_OUTCOME_DONE);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", POD_COLL "/orph-pod", 200), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", PVC_COLL "/orph-pvc", 200), 1);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 2);
    cJSON *d = fakeapi_last_body(&e->fa, m, "DELETE", POD_COLL "/orph-pod");
    CHECK_STR(precondition(d, "uid"), pod_uid);
    cJSON_Delete(d);
    d = fakeapi_last_body(&e->fa, m, "DELETE", PVC_COLL "/orph-pvc");
    CHECK_STR(precondition(d, "uid"), pvc_uid);
    cJSON_Delete(d);
    CHECK(!stored_exists(e, POD_COLL "/orph-pod"));
    CHECK(stored_exists(e, POD_COLL "/owned-pod"));
    CHECK(stored_exists(e, PVC_COLL "/pool-pvc"));
    /* the controller's own cleanup: the owned pod goes with the test's other objects */
    CHECK_INT(fakeapi_remove(&e->fa, POD_COLL "/owned-pod"), 0);
    CHECK_INT(fakeapi_remove(&e->fa, PVC_COLL "/pool-pvc"), 0);
}

TEST(status_409_decides_again_soon_and_the_next_pass_writes) {
    struct env *e = env();
    struct names n;
    char v[64];
    if (!e) { CHECK(!"environment started"); return; }
    names_of(&n, "s-409", "hank", "c1");
    CHECK_INT(seed_sandbox(e, "s-409", "hank", "c1", "", NULL), 0);
    fakeapi_fault(&e->fa, "PATCH", n.status, 409, -1, 1);
    struct sbx_controller_stats before, after;
    sbx_controller_stats(e->ctl, &before);
    size_t m = fakeapi_mark(&e->fa);
    int64_t rq = 0;
    CHECK_INT(pass(e, &n, &rq), 0);
    CHECK(rq > 0 && rq <= 1000);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 409), 1);
    CHECK_INT(fakeapi_count(&e->fa, m, "PATCH", n.status), 1);   /* a 409 is not retried blindly */
    sbx_controller_stats(e->ctl, &after);
    CHECK_INT(after.conflicts - before.conflicts, 1);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "");
    /* What was created is not created again; the status follows. */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, &rq), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", PVC_COLL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 200), 1);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Creating");
}

TEST(create_429_with_retry_after_and_503_are_retried) {
    struct env *e = env();
    struct names n;
    if (!e) { CHECK(!"environment started"); return; }
    names_of(&n, "s-429", "ivan", "c1");
    CHECK_INT(seed_sandbox(e, "s-429", "ivan", "c1", "", NULL), 0);
    settle(e, &n);
    fakeapi_fault(&e->fa, "POST", POD_COLL, 429, 1, 1);
    fakeapi_fault(&e->fa, "POST", PVC_COLL, 503, -1, 1);
    size_t m = fakeapi_mark(&e->fa);
    int64_t t0 = clock_mono_ms();
    CHECK_INT(pass(e, &n, NULL), 0);
    int64_t took = clock_mono_ms() - t0;
    CHECK(took >= 950);   /* Retry-After: 1 was waited for */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 429), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 503), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 201), 1);
    CHECK(stored_exists(e, n.pod));
    CHECK(stored_exists(e, n.pvc));
}

TEST(status_500_is_retried_create_500_and_a_drop_fail_the_pass) {
    struct env *e = env();
    struct names n;
    char v[64];
    if (!e) { CHECK(!"environment started"); return; }
    names_of(&n, "s-500", "judy", "c1");
    CHECK_INT(seed_sandbox(e, "s-500", "judy", "c1", "", NULL), 0);
    settle(e, &n);
    /* A create is not idempotent: a 500 may have created it, so no blind retry; the pass
     * fails and the worker backs off. */
    fakeapi_fault(&e->fa, "POST", POD_COLL, 500, -1, 1);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), -1);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 1);
    CHECK(!stored_exists(e, n.pod));
    CHECK(stored_exists(e, n.pvc));
    /* The same for a connection dropped before the answer. (libcurl itself sends a
     * request once more on a fresh connection when a reused one died before any answer
     * came: a create by name is safe so, its 409 is handled. Two drops defeat that.) */
    fakeapi_fault(&e->fa, "POST", POD_COLL, 0, -1, 2);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), -1);
    int dropped = fakeapi_count(&e->fa, m, "POST", POD_COLL);
    CHECK(dropped >= 1 && dropped <= 2);
    CHECK(!stored_exists(e, n.pod));
    fakeapi_clear_faults(&e->fa);
    /* The retried pass creates the pod; its status PATCH gets a 500 first and is
     * retried (PATCH is idempotent). */
    fakeapi_fault(&e->fa, "PATCH", n.status, 500, -1, 1);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 500), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 200), 1);
    CHECK(stored_exists(e, n.pod));
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Creating");
}
