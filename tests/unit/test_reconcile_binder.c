/* tests/unit/test_reconcile_binder.c — warm pools of a WaitForFirstConsumer class
 * (sandbox/io/warm.c, warmbinder.c) through single passes against the in-process fake API
 * server (fakeapi.h, reconcile_env.h), with --warm-workspaces 1 on the default class,
 * which binds at the first consumer: the pool pass makes a pending pool claim, then one
 * binder pod for it (its claim as a volume, owned by the claim), never a second; once the
 * provisioner has bound the claim the binder is deleted under a uid precondition. A
 * Sandbox adopts the Bound claim; when its pod then stays unschedulable for its volume's
 * node affinity, the pass gives the unused claim up (the pod deleted with its uid and
 * resourceVersion, then the claim) and, once both are gone, makes a cold claim of its own
 * instead of adopting the pool's next one. */
#include "reconcile_env.h"

#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/decide/warm_decide.h"
#include "sandbox/model/warmbinder.h"

static void warm_late(struct sbx_controller_options *o) {
    o->warm_workspaces = 1;   /* the default StorageClass "local": WaitForFirstConsumer */
}

/* Wait (at most 10 s) until the informer shows path as the store has it. 1 when it does. */
static int cached(struct env *e, struct informer *inf, const char *path) {
    const char *name = strrchr(path, '/');
    char key[300];
    snprintf(key, sizeof key, NS "/%s", name ? name + 1 : path);
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(5))
        if (cache_current(e, inf, key, path)) return 1;
    return 0;
}

/* Play the scheduler and the provisioner: the claim's node chosen, the claim Bound. */
static int bind_on(struct env *e, const char *path, const char *node) {
    char patch[256];
    snprintf(patch, sizeof patch,
             "{\"metadata\":{\"annotations\":{\"" SBX_ANN_SELECTED_NODE "\":\"%s\"}},\"status\":{\"phase\":\"Bound\"}}", node);
    return fakeapi_patch(&e->fa, path, patch);
}

/* The pool pass keeps a pending pool claim and its binder; returns the claim's name in
 * claim, or "" on failure. */
static void pending_pool_claim_with_binder(struct env *e, char *claim, size_t n, char *binder_path, size_t bn) {
    char path[512];
    claim[0] = binder_path[0] = '\0';
    pool_claim(e, claim, n);
    if (!claim[0]) {
        size_t m = fakeapi_mark(&e->fa);
        if (pool_pass(e) != 0 || fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 201) != 1) return;
        pool_claim(e, claim, n);
    }
    snprintf(path, sizeof path, PVC_COLL "/%s", claim);
    if (!claim[0] || !cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), path)) { claim[0] = '\0'; return; }
    char bname[256];
    sbx_binder_name(claim, bname, sizeof bname);
    snprintf(binder_path, bn, POD_COLL "/%s", bname);
    if (!stored_exists(e, binder_path)) pool_pass(e);
}

TEST(a_pending_pool_claim_gets_one_binder_until_it_is_bound) {
    struct env *e = env_tweaked(warm_late);
    struct names first;
    char claim[256], path[512], binder[512];
    if (!e) { CHECK(!"environment started"); return; }
    names_of(&first, "s-first", "kim", "c1");
    CHECK_INT(seed_sandbox(e, "s-first", "kim", "c1", "", NULL), 0);
    settle(e, &first);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pool_pass(e), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 201), 1);   /* kept, though it binds late */
    pool_claim(e, claim, sizeof claim);
    CHECK(claim[0] != '\0');
    snprintf(path, sizeof path, PVC_COLL "/%s", claim);
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), path));

    /* The claim in the cache, pending: one binder pod for it. */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pool_pass(e), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    cJSON *body = fakeapi_last_body(&e->fa, m, "POST", POD_COLL);
    CHECK_STR(kj_map_get(body, "metadata.annotations", SBX_ANN_BINDS_CLAIM), claim);
    CHECK_STR(kj_str(cJSON_GetArrayItem(kj_path(body, "spec.volumes"), 0), "persistentVolumeClaim.claimName"), claim);
    const cJSON *ref = cJSON_GetArrayItem(kj_path(body, "metadata.ownerReferences"), 0);
    CHECK_STR(kj_str(ref, "kind"), "PersistentVolumeClaim");
    CHECK_STR(kj_str(ref, "name"), claim);
    char bname[256];
    snprintf(bname, sizeof bname, "%s", kj_str(body, "metadata.name") ? kj_str(body, "metadata.name") : "");
    cJSON_Delete(body);
    snprintf(binder, sizeof binder, POD_COLL "/%s", bname);
    cJSON *bp = fakeapi_get(&e->fa, binder);
    CHECK(bp != NULL);
    char buid[64];
    snprintf(buid, sizeof buid, "%s", kj_str(bp, "metadata.uid") ? kj_str(bp, "metadata.uid") : "");
    cJSON_Delete(bp);
    /* not a second one, whether or not the cache shows the first yet */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pool_pass(e), 0);
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PODS), binder));
    CHECK_INT(pool_pass(e), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", binder), 0);
    /* the binder is no sandbox pod of anyone: s-first's pass leaves it alone */
    CHECK_INT(pass(e, &first, NULL), 0);
    CHECK(stored_exists(e, binder));

    /* Bound: the binder goes, under its uid. */
    CHECK_INT(bind_on(e, path, "node-a"), 0);
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), path));
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pool_pass(e), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", binder, 200), 1);
    cJSON *del = fakeapi_last_body(&e->fa, m, "DELETE", binder);
    CHECK_STR(precondition(del, "uid"), buid);
    cJSON_Delete(del);
    CHECK(!stored_exists(e, binder));
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PODS), binder));
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pool_pass(e), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);   /* none for a Bound claim */
}

TEST(an_adopted_claim_whose_node_cannot_take_the_pod_is_given_up_for_a_cold_one) {
    struct env *e = env_tweaked(warm_late);
    struct names n;
    char claim[256], path[512], binder[512], v[128];
    if (!e) { CHECK(!"environment started"); return; }
    pending_pool_claim_with_binder(e, claim, sizeof claim, binder, sizeof binder);
    if (!claim[0]) { CHECK(!"pool claim made"); return; }
    snprintf(path, sizeof path, PVC_COLL "/%s", claim);
    cJSON *pc = fakeapi_get(&e->fa, path);
    int bound = pc && kj_str(pc, "status.phase") && !strcmp(kj_str(pc, "status.phase"), "Bound");
    cJSON_Delete(pc);
    if (!bound) CHECK_INT(bind_on(e, path, "node-a"), 0);
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), path));
    pool_pass(e);   /* the binder goes */

    names_of(&n, "s-strand", "lou", "c1");
    CHECK_INT(seed_sandbox(e, "s-strand", "lou", "c1", "", NULL), 0);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", path, 200), 1);   /* adopted */
    cJSON *patch = fakeapi_last_body(&e->fa, m, "PATCH", path);
    CHECK(kj_map_get(patch, "metadata.annotations", SBX_ANN_WARM_ADOPTED) != NULL);
    cJSON_Delete(patch);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);

    /* The scheduler: the volume's node cannot take it, for 40 s already. */
    char t[40], st[1024];
    time_ago(40000, t, sizeof t);
    snprintf(st, sizeof st,
             "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
             "\"reason\":\"Unschedulable\",\"lastTransitionTime\":\"%s\",\"message\":\"0/2 nodes are available: 1 "
             "Insufficient cpu, 1 node(s) had volume node affinity conflict.\"}]}}", t);
    CHECK_INT(fakeapi_patch(&e->fa, n.pod, st), 0);
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PODS), n.pod));
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), path));   /* the adoption's echo */
    cJSON *pod = fakeapi_get(&e->fa, n.pod);
    char pod_uid[64], pod_rv[32];
    snprintf(pod_uid, sizeof pod_uid, "%s", kj_str(pod, "metadata.uid"));
    snprintf(pod_rv, sizeof pod_rv, "%s", kj_str(pod, "metadata.resourceVersion"));
    cJSON_Delete(pod);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_STR(ready_reason(e, n.sb, v, sizeof v), SBX_REASON_WARM_RELEASED);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "GET", n.pod, 200), 1);        /* read fresh */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    cJSON *del = fakeapi_last_body(&e->fa, m, "DELETE", n.pod);
    CHECK_STR(precondition(del, "uid"), pod_uid);
    CHECK_STR(precondition(del, "resourceVersion"), pod_rv);
    cJSON_Delete(del);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", path, 200), 1);
    CHECK(!stored_exists(e, path));

    /* A Bound pool claim is there again, but the Sandbox makes a cold claim of its own.
     * (The pool refills once the pod cache no longer shows the pod it deleted starting.) */
    char refill[256], rpath[512] = "", pkey[300];
    struct names first;   /* the Sandbox that made the pool wanted: its pod runs by now */
    names_of(&first, "s-first", "kim", "c1");
    CHECK_INT(pod_running(e, first.pod, 0), 0);
    CHECK(pod_cached(e, first.pod));
    snprintf(pkey, sizeof pkey, NS "/%s", strrchr(n.pod, '/') + 1);
    for (int64_t end = clock_mono_ms() + 10000;
         clock_mono_ms() < end && (informer_has(sbx_controller_cache(e->ctl, SBX_CACHE_PODS), pkey) ||
                                   !informer_quiescent(sbx_controller_cache(e->ctl, SBX_CACHE_PODS)));)
        env_sleep_ms(5);
    pool_pass(e);
    pool_claim(e, refill, sizeof refill);
    CHECK(refill[0] != '\0');
    if (refill[0]) {
        snprintf(rpath, sizeof rpath, PVC_COLL "/%s", refill);
        CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), rpath));
        CHECK_INT(bind_on(e, rpath, "node-b"), 0);
        CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), rpath));
    }
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), path));
    CHECK(cached(e, sbx_controller_cache(e->ctl, SBX_CACHE_PODS), n.pod));
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    if (rpath[0]) CHECK_INT(fakeapi_count(&e->fa, m, "PATCH", rpath), 0);   /* not adopted */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 201), 1);
    CHECK(stored_exists(e, n.pvc));   /* named by its IDs */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
}
