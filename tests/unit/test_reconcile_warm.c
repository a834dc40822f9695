/* tests/unit/test_reconcile_warm.c — warm workspaces (sandbox/io/warm.c) through single
 * passes against the in-process fake API server (fakeapi.h, reconcile_env.h), with
 * --warm-workspaces 1: the namespace's pool pass creates a pool claim once a Sandbox
 * without a class is there; a new Sandbox adopts the Bound pool claim with one PATCH
 * conditional on the claim's resourceVersion (ownerReference and labels moved to it, the
 * pool label removed) and its pod mounts that claim in the same pass, no claim of its
 * own created; the pool pass refills; an adoption refused with 409 (another Sandbox took
 * the claim first) falls back to a claim of its own. */
#include "reconcile_env.h"
#include "sandbox/decide/warm_decide.h"

/* The flag defaults' class is SC_IMMEDIATE here, which binds at once (pools of a
 * WaitForFirstConsumer class, bound by binder pods: test_reconcile_binder.c). */
static void warm_one(struct sbx_controller_options *o) {
    o->warm_workspaces = 1;
    o->defaults.storage_class = SC_IMMEDIATE;
}

/* Bind the pool claim `name` (the provisioner) and wait for the claim cache to show it. */
static int bind_pool_claim(struct env *e, const char *name) {
    char path[512], key[300];
    snprintf(path, sizeof path, PVC_COLL "/%s", name);
    snprintf(key, sizeof key, NS "/%s", name);
    if (claim_bound(e, path) < 0) return -1;
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(5))
        if (cache_current(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), key, path)) return 0;
    return -1;
}

/* A Sandbox of no class in NS makes the pool wanted: the pool pass creates its claim,
 * which the provisioner binds. The claim's name in out. 0 or -1. */
static int pool_ready(struct env *e, char *out, size_t n) {
    struct names first;
    names_of(&first, "s-first", "kim", "c1");
    cJSON *have = fakeapi_get(&e->fa, first.sb);
    int seeded = have != NULL;
    cJSON_Delete(have);
    if (!seeded && seed_sandbox(e, "s-first", "kim", "c1", "", NULL) < 0) return -1;
    settle(e, &first);
    size_t m = fakeapi_mark(&e->fa);
    if (pool_pass(e) != 0) return -1;
    if (fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 201) != 1) {
        fakeapi_dump(&e->fa, m);
        return -1;
    }
    pool_claim(e, out, n);
    return out[0] && bind_pool_claim(e, out) == 0 ? 0 : -1;
}

TEST(new_sandbox_adopts_the_bound_pool_claim_and_the_pool_refills) {
    struct env *e = env_tweaked(warm_one);
    struct names n;
    char claim[256], path[512], v[64];
    if (!e || pool_ready(e, claim, sizeof claim) < 0) { CHECK(!"pool claim made and bound"); return; }
    snprintf(path, sizeof path, PVC_COLL "/%s", claim);
    cJSON *pc = fakeapi_get(&e->fa, path);
    char claim_rv[32];
    snprintf(claim_rv, sizeof claim_rv, "%s", kj_str(pc, "metadata.resourceVersion"));
    CHECK(kj_path(pc, "metadata.ownerReferences") == NULL);   /* nobody's yet */
    cJSON_Delete(pc);

    names_of(&n, "s-adopt", "leo", "c1");
    CHECK_INT(seed_sandbox(e, "s-adopt", "leo", "c1", "", NULL), 0);
    cJSON *sb = fakeapi_get(&e->fa, n.sb);
    char uid[64];
    snprintf(uid, sizeof uid, "%s", kj_str(sb, "metadata.uid"));
    cJSON_Delete(sb);
    struct sbx_controller_stats before, after;
    sbx_controller_stats(e->ctl, &before);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    /* One conditional PATCH of the pool claim, no claim of its own, the pod on the
     * adopted claim in the same pass. */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", path, 200), 1);
    cJSON *patch = fakeapi_last_body(&e->fa, m, "PATCH", path);
    CHECK_STR(kj_str(patch, "metadata.resourceVersion"), claim_rv);
    cJSON_Delete(patch);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", PVC_COLL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    cJSON *pod = fakeapi_get(&e->fa, n.pod);
    const cJSON *vol;
    int mounts = 0;
    cJSON_ArrayForEach(vol, kj_path(pod, "spec.volumes")) {
        const char *c = kj_str(vol, "persistentVolumeClaim.claimName");
        if (c && !strcmp(c, claim)) mounts = 1;
    }
    CHECK(mounts);
    cJSON_Delete(pod);
    pc = fakeapi_get(&e->fa, path);
    CHECK(controlled_by(pc, uid));
    CHECK(kj_map_get(pc, "metadata.labels", WARM_SEL) == NULL);
    CHECK_STR(kj_map_get(pc, "metadata.labels", SBX_LABEL_NAME), "s-adopt");
    cJSON_Delete(pc);
    sbx_controller_stats(e->ctl, &after);
    CHECK_INT(after.warm_adoptions - before.warm_adoptions, 1);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Creating");
    CHECK_STR(stored_str(e, n.sb, "status.workspaceClaim", v, sizeof v), claim);

    /* The adopted claim is no longer the pool's, but the refill yields to the pod starting
     * on it: the pool pass makes nothing and looks again within a second. */
    char key[300];
    struct kube_error err;
    snprintf(key, sizeof key, NS "/%s", claim);
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end && !cache_current(e, sbx_controller_cache(e->ctl, SBX_CACHE_PVCS), key, path);)
        env_sleep_ms(5);
    CHECK(pod_cached(e, n.pod));
    m = fakeapi_mark(&e->fa);
    struct sbx_outcome r = sbx_reconcile(e->ctl, NS "/#warm", &err);
    CHECK_INT(r.kind, SBX_OUTCOME_AFTER);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", PVC_COLL), 0);
    CHECK(r.after_ms > 0 && r.after_ms <= SBX_WARM_REFILL_RECHECK_MS);
    /* Its pod Ready: the pool pass makes a new one. */
    CHECK_INT(pod_running(e, n.pod, 0), 0);
    CHECK(pod_cached(e, n.pod));
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pool_pass(e), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 201), 1);
    char refill[256];
    pool_claim(e, refill, sizeof refill);
    CHECK(refill[0] && strcmp(refill, claim) != 0);
}

TEST(adoption_lost_to_another_sandbox_makes_a_claim_of_its_own) {
    struct env *e = env_tweaked(warm_one);
    struct names n;
    char claim[256], path[512];
    if (!e) { CHECK(!"environment started"); return; }
    pool_claim(e, claim, sizeof claim);   /* the refill of the test before, if it ran */
    if (!claim[0] && pool_ready(e, claim, sizeof claim) < 0) { CHECK(!"pool claim made"); return; }
    if (bind_pool_claim(e, claim) < 0) { CHECK(!"pool claim bound"); return; }
    snprintf(path, sizeof path, PVC_COLL "/%s", claim);

    names_of(&n, "s-race", "mia", "c1");
    CHECK_INT(seed_sandbox(e, "s-race", "mia", "c1", "", NULL), 0);
    fakeapi_fault(&e->fa, "PATCH", path, 409, -1, 1);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", path, 409), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 201), 1);
    CHECK(stored_exists(e, n.pvc));   /* named by its IDs */
    cJSON *pc = fakeapi_get(&e->fa, path);
    CHECK(kj_map_get(pc, "metadata.labels", WARM_SEL) != NULL);   /* still the pool's */
    cJSON_Delete(pc);
    /* Its own claim binds at once (SC_IMMEDIATE): the pod waits for that, then comes. */
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);
    CHECK_INT(claim_bound(e, n.pvc), 0);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
}

/* A controller started with --namespace keeps to it: a class whose warmPool.namespaces
 * names another namespace makes no pool claim there (that namespace's controller does);
 * its pool key, if queued, is forgotten. */
TEST(a_namespaced_controller_makes_no_pool_claims_in_other_namespaces) {
    struct env *e = env_tweaked(warm_one);
    if (!e || seed_class(e, "pool-elsewhere",
                         "\"workspace\":{\"storageClassName\":\"" SC_IMMEDIATE "\",\"warmPool\":{\"size\":2,"
                         "\"namespaces\":[\"team-other\"]}}", 1) < 0) {
        CHECK(!"class");
        return;
    }
    size_t m = fakeapi_mark(&e->fa);
    struct kube_error err;
    CHECK_INT(sbx_reconcile(e->ctl, "team-other/#warm", &err).kind, SBX_OUTCOME_FORGET);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", "/api/v1/namespaces/team-other/persistentvolumeclaims"), 0);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 0);   /* nothing written anywhere */
}
