/* tests/unit/test_warm_decide.c — warm workspaces, the pure part (sandbox/decide/warm_decide.c): pool
 * keys by shape, merging the pools a namespace wants, how many claims to create or
 * delete, the order a Sandbox tries pool claims in, which claims fit a spec, the pool
 * claim and the adoption patch. */
#include "check.h"

#include "kube/kjson.h"
#include "sandbox/model/builders.h"
#include "sandbox/decide/warm_decide.h"

#define GIB (INT64_C(1) << 30)

TEST(keys_differ_by_class_and_size_and_are_label_values) {
    char a[SBX_WARM_KEY_LEN], b[SBX_WARM_KEY_LEN], c[SBX_WARM_KEY_LEN], d[SBX_WARM_KEY_LEN];
    sbx_warm_key("fast", 10 * GIB, a);
    sbx_warm_key("fast", 10 * GIB, b);
    sbx_warm_key("fast", 5 * GIB, c);
    sbx_warm_key(NULL, 10 * GIB, d);
    CHECK_STR(a, b);
    CHECK(strcmp(a, c) != 0);
    CHECK(strcmp(a, d) != 0);
    CHECK_INT(strlen(a), SBX_WARM_KEY_LEN - 1);
    CHECK(!strncmp(a, "ws-", 3));
    for (const char *p = a + 3; *p; p++) CHECK((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'));
    /* the parts cannot run into each other */
    sbx_warm_key("fast1", 0, c);
    sbx_warm_key("fast", 10, d);
    CHECK(strcmp(c, d) != 0);
}

TEST(wants_merge_by_shape) {
    struct sbx_warm_wants w;
    memset(&w, 0, sizeof(w));
    CHECK_INT(sbx_warm_wants_add(&w, "slow", 10 * GIB, 2, "zeta", "uid-z"), 0);
    CHECK_INT(sbx_warm_wants_add(&w, "slow", 10 * GIB, 5, "alpha", "uid-a"), 0);
    CHECK_INT(sbx_warm_wants_add(&w, "slow", 10 * GIB, 1, NULL, NULL), 0);   /* the flag pool */
    CHECK_INT(sbx_warm_wants_add(&w, "slow", 20 * GIB, 1, NULL, NULL), 0);
    CHECK_INT(w.n, 2);
    char key[SBX_WARM_KEY_LEN];
    sbx_warm_key("slow", 10 * GIB, key);
    const struct sbx_warm_want *x = sbx_warm_wants_find(&w, key);
    CHECK(x != NULL);
    if (x) {
        CHECK_INT(x->size, 5);                  /* the larger */
        CHECK_STR(x->owner_class, "alpha");     /* the class that sorts first, not the flags */
        CHECK_STR(x->owner_uid, "uid-a");
        CHECK_STR(x->storage_class, "slow");
    }
    sbx_warm_key("slow", 20 * GIB, key);
    x = sbx_warm_wants_find(&w, key);
    CHECK(x && x->owner_class == NULL && x->size == 1);
    CHECK_INT(sbx_warm_wants_add(&w, "x", 1, 5000, NULL, NULL), 0);
    CHECK_INT(w.v[2].size, SBX_WARM_SIZE_MAX);
    for (int i = 0; i < SBX_WARM_WANTS_MAX; i++) sbx_warm_wants_add(&w, "many", GIB + i, 1, NULL, NULL);
    CHECK_INT(w.n, SBX_WARM_WANTS_MAX);
    CHECK_INT(sbx_warm_wants_add(&w, "one-more", 1, 1, NULL, NULL), 1);   /* full */
    sbx_warm_wants_free(&w);
    CHECK_INT(w.n, 0);
}

TEST(plan_creates_the_missing_and_ignores_terminating) {
    struct sbx_warm_claim c[] = {
        {.name = "a", .bound = 1, .created_ms = 1},
        {.name = "b", .terminating = 1, .bound = 1, .created_ms = 2},
    };
    size_t del[2], ndel = 9;
    CHECK_INT(sbx_warm_plan(3, c, 2, del, &ndel), 2);
    CHECK_INT(ndel, 0);
    CHECK_INT(sbx_warm_plan(1, c, 2, del, &ndel), 0);
    CHECK_INT(ndel, 0);
    CHECK_INT(sbx_warm_plan(0, NULL, 0, del, &ndel), 0);
    CHECK_INT(sbx_warm_plan(-2, NULL, 0, del, &ndel), 0);
}

TEST(plan_deletes_pending_then_newest) {
    struct sbx_warm_claim c[] = {
        {.name = "old-bound", .bound = 1, .created_ms = 100},
        {.name = "new-bound", .bound = 1, .created_ms = 300},
        {.name = "pending", .bound = 0, .created_ms = 50},
        {.name = "going", .bound = 0, .terminating = 1, .created_ms = 400},
        {.name = "mid-bound", .bound = 1, .created_ms = 200},
    };
    size_t del[5], ndel = 0;
    CHECK_INT(sbx_warm_plan(2, c, 5, del, &ndel), 0);
    CHECK_INT(ndel, 2);
    CHECK_STR(c[del[0]].name, "pending");
    CHECK_STR(c[del[1]].name, "new-bound");
    CHECK_INT(sbx_warm_plan(0, c, 5, del, &ndel), 0);   /* the pool is gone: all live ones */
    CHECK_INT(ndel, 4);
    for (size_t i = 0; i < ndel; i++) CHECK(strcmp(c[del[i]].name, "going") != 0);
}

TEST(candidates_are_bound_sorted_and_rotated_by_uid) {
    struct sbx_warm_claim c[] = {
        {.name = "c", .rv = "1", .bound = 1}, {.name = "a", .rv = "1", .bound = 1},
        {.name = "p", .rv = "1", .bound = 0}, {.name = "b", .rv = "1", .bound = 1},
        {.name = "t", .rv = "1", .bound = 1, .terminating = 1},
    };
    size_t order[5];
    CHECK_INT(sbx_warm_candidates(c, 5, NULL, order), 3);
    CHECK_STR(c[order[0]].name, "a");
    CHECK_STR(c[order[1]].name, "b");
    CHECK_STR(c[order[2]].name, "c");
    /* Any uid gives a rotation of the same cycle; different uids spread their first tries. */
    int firsts[3] = {0, 0, 0};
    char uid[32];
    for (int i = 0; i < 60; i++) {
        snprintf(uid, sizeof(uid), "uid-%d", i);
        CHECK_INT(sbx_warm_candidates(c, 5, uid, order), 3);
        const char *f = c[order[0]].name, *s = c[order[1]].name, *t = c[order[2]].name;
        CHECK((!strcmp(f, "a") && !strcmp(s, "b") && !strcmp(t, "c")) ||
              (!strcmp(f, "b") && !strcmp(s, "c") && !strcmp(t, "a")) ||
              (!strcmp(f, "c") && !strcmp(s, "a") && !strcmp(t, "b")));
        firsts[f[0] - 'a']++;
    }
    CHECK(firsts[0] > 0 && firsts[1] > 0 && firsts[2] > 0);
    /* the same uid, the same order */
    size_t o2[5];
    sbx_warm_candidates(c, 5, "uid-7", order);
    sbx_warm_candidates(c, 5, "uid-7", o2);
    CHECK(!memcmp(order, o2, 3 * sizeof(size_t)));
    CHECK_INT(sbx_warm_candidates(c, 0, "x", order), 0);
}

TEST(only_a_sandbox_without_a_source_uses_a_pool) {
    struct sbx_spec s;
    char key[SBX_WARM_KEY_LEN], want[SBX_WARM_KEY_LEN];
    memset(&s, 0, sizeof(s));
    s.storage_class = "slow";
    s.workspace_bytes = 10 * GIB;
    CHECK_INT(sbx_warm_sandbox_key(&s, key), 1);
    sbx_warm_key("slow", 10 * GIB, want);
    CHECK_STR(key, want);
    s.workspace_from = "other";
    CHECK_INT(sbx_warm_sandbox_key(&s, key), 0);   /* a clone is made from its source */
}

TEST(claim_fits_only_the_exact_workspace) {
    struct sbx_spec s;
    memset(&s, 0, sizeof(s));
    s.storage_class = "slow";
    s.workspace_bytes = 10 * GIB;
    cJSON *rwo = cJSON_Parse("[\"ReadWriteOnce\"]"), *rwx = cJSON_Parse("[\"ReadWriteMany\"]");
    CHECK_INT(sbx_warm_claim_fits(&s, "slow", "10Gi", NULL), 1);
    CHECK_INT(sbx_warm_claim_fits(&s, "slow", "10Gi", rwo), 1);
    CHECK_INT(sbx_warm_claim_fits(&s, "slow", "10Gi", rwx), 0);
    CHECK_INT(sbx_warm_claim_fits(&s, "slow", "5Gi", NULL), 0);
    CHECK_INT(sbx_warm_claim_fits(&s, "fast", "10Gi", NULL), 0);
    CHECK_INT(sbx_warm_claim_fits(&s, NULL, "10Gi", NULL), 0);
    CHECK_INT(sbx_warm_claim_fits(&s, "slow", NULL, NULL), 0);
    CHECK_INT(sbx_warm_claim_fits(&s, "slow", "lots", NULL), 0);
    s.storage_class = NULL;   /* the cluster default: whatever class the claim got */
    CHECK_INT(sbx_warm_claim_fits(&s, "standard", "10Gi", NULL), 1);
    cJSON_Delete(rwo);
    cJSON_Delete(rwx);
}

TEST(pool_claim_shape) {
    struct sbx_warm_wants w;
    memset(&w, 0, sizeof(w));
    CHECK_INT(sbx_warm_wants_add(&w, "slow", 10 * GIB, 3, "small", "class-uid"), 0);
    cJSON *pvc = sbx_warm_build_claim("team", &w.v[0]);
    CHECK(pvc != NULL);
    CHECK_STR(kj_str(pvc, "kind"), "PersistentVolumeClaim");
    CHECK_STR(kj_str(pvc, "metadata.generateName"), SBX_WARM_NAME_PREFIX);
    CHECK(kj_str(pvc, "metadata.name") == NULL);
    CHECK_STR(kj_str(pvc, "metadata.namespace"), "team");
    CHECK_STR(kj_map_get(pvc, "metadata.labels", SBX_LABEL_WARM_POOL), w.v[0].key);
    CHECK_STR(kj_map_get(pvc, "metadata.labels", SBX_LABEL_NAME), "");
    CHECK_STR(kj_map_get(pvc, "metadata.labels", SBX_LABEL_MANAGED_BY), SBX_MANAGED_BY);
    CHECK_STR(kj_str(pvc, "spec.storageClassName"), "slow");
    CHECK_STR(kj_str(pvc, "spec.resources.requests.storage"), "10Gi");
    CHECK_STR(cJSON_GetArrayItem(kj_path(pvc, "spec.accessModes"), 0)->valuestring, "ReadWriteOnce");
    const cJSON *ref = cJSON_GetArrayItem(kj_path(pvc, "metadata.ownerReferences"), 0);
    CHECK_STR(kj_str(ref, "kind"), "SandboxClass");
    CHECK_STR(kj_str(ref, "name"), "small");
    CHECK_STR(kj_str(ref, "uid"), "class-uid");
    CHECK_INT(kj_bool(ref, "controller", 0), 0);
    CHECK_INT(kj_bool(ref, "blockOwnerDeletion", 0), 0);
    cJSON_Delete(pvc);
    /* the flag pool: no owner, the cluster-default class */
    CHECK_INT(sbx_warm_wants_add(&w, NULL, GIB, 1, NULL, NULL), 0);
    pvc = sbx_warm_build_claim("team", &w.v[1]);
    CHECK(pvc && !kj_path(pvc, "metadata.ownerReferences") && !kj_str(pvc, "spec.storageClassName"));
    CHECK_STR(kj_str(pvc, "spec.resources.requests.storage"), "1Gi");
    cJSON_Delete(pvc);
    sbx_warm_wants_free(&w);
}

TEST(adoption_patch_moves_ownership_under_a_precondition) {
    struct sbx_spec s;
    memset(&s, 0, sizeof(s));
    s.user_id = "alice";
    s.chat_id = "chat-1";
    s.lifecycle = SBX_SESSION;
    struct sbx_owner o = {.name = "box", .namespace_ = "team", .uid = "sb-uid"};
    cJSON *p = sbx_warm_adopt_patch(&o, &s, "yao-warm-x1", "4711", INT64_C(1764633600000));
    CHECK(p != NULL);
    CHECK_STR(kj_str(p, "metadata.resourceVersion"), "4711");
    CHECK(kj_str(p, "metadata.name") == NULL);          /* only what moves */
    CHECK(kj_str(p, "metadata.namespace") == NULL);
    CHECK(kj_path(p, "spec") == NULL);
    const cJSON *labels = kj_path(p, "metadata.labels");
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(labels, SBX_LABEL_WARM_POOL)));   /* removed */
    CHECK_STR(kj_map_get(p, "metadata.labels", SBX_LABEL_NAME), "box");
    CHECK_STR(kj_map_get(p, "metadata.labels", SBX_LABEL_USER), "alice");
    CHECK_STR(kj_map_get(p, "metadata.annotations", SBX_ANN_CHAT_ID), "chat-1");
    CHECK_STR(kj_map_get(p, "metadata.annotations", SBX_ANN_WARM_ADOPTED), "2025-12-02T00:00:00Z");
    const cJSON *refs = kj_path(p, "metadata.ownerReferences");
    CHECK_INT(cJSON_GetArraySize(refs), 1);             /* the class's reference is dropped */
    const cJSON *ref = cJSON_GetArrayItem(refs, 0);
    CHECK_STR(kj_str(ref, "kind"), "Sandbox");
    CHECK_STR(kj_str(ref, "uid"), "sb-uid");
    CHECK_INT(kj_bool(ref, "controller", 0), 1);
    cJSON_Delete(p);
    CHECK(sbx_warm_adopt_patch(&o, &s, "c", NULL, 0) == NULL);
    struct sbx_owner nouid = {.name = "box"};
    CHECK(sbx_warm_adopt_patch(&nouid, &s, "c", "1", 0) == NULL);
}

/* The refill's yield to starts in flight: a sandbox pod not Ready counts as starting; a
 * binder, a pod being deleted, a Ready one, or another controller's do not. */
TEST(a_pod_starts_until_it_is_ready) {
    const char *tmpl = "{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":\"%s\","
                       "\"sandbox.yaoapps.com/name\":\"%s\"%s}%s},\"status\":{\"conditions\":[{\"type\":\"Ready\","
                       "\"status\":\"%s\"}]}}";
    struct { const char *by, *name, *extra_label, *extra_md, *ready; int starting; } cases[] = {
        {"yao-sandbox", "s1", "", "", "False", 1},
        {"yao-sandbox", "s1", "", "", "True", 0},
        {"yao-sandbox", "s1", ",\"sandbox.yaoapps.com/warm-pool\":\"ws-1\"", "", "False", 0},   /* a binder */
        {"yao-sandbox", "s1", "", ",\"deletionTimestamp\":\"2026-12-06T10:00:00Z\"", "False", 0},
        {"someone-else", "s1", "", "", "False", 0},
        {"yao-sandbox", "", "", "", "False", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024];
        snprintf(text, sizeof text, tmpl, cases[i].by, cases[i].name, cases[i].extra_label, cases[i].extra_md,
                 cases[i].ready);
        cJSON *pod = cJSON_Parse(text);
        CHECK(pod != NULL);
        CHECK_INT(sbx_warm_pod_starting(pod), cases[i].starting);
        cJSON_Delete(pod);
    }
    cJSON *no_status = cJSON_Parse("{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":\"yao-sandbox\","
                                   "\"sandbox.yaoapps.com/name\":\"s1\"}}}");
    CHECK_INT(sbx_warm_pod_starting(no_status), 1);   /* just made: no status yet */
    cJSON_Delete(no_status);
    CHECK_INT(sbx_warm_pod_starting(NULL), 0);
}

TEST(the_refill_waits_for_starts_at_most_its_bound) {
    int64_t since = 0, t0 = 1000000;
    CHECK_INT(sbx_warm_refill_wait(0, &since, t0), 0);   /* nothing starting: refill now */
    CHECK_INT(since, 0);
    CHECK_INT(sbx_warm_refill_wait(1, &since, t0), SBX_WARM_REFILL_RECHECK_MS);
    CHECK_INT(since, t0);
    CHECK_INT(sbx_warm_refill_wait(1, &since, t0 + 5000), SBX_WARM_REFILL_RECHECK_MS);
    CHECK_INT(since, t0);   /* from when it first waited */
    CHECK_INT(sbx_warm_refill_wait(1, &since, t0 + SBX_WARM_REFILL_YIELD_MAX_MS - 300), 300);
    CHECK_INT(sbx_warm_refill_wait(1, &since, t0 + SBX_WARM_REFILL_YIELD_MAX_MS), 0);   /* bound reached */
    CHECK_INT(sbx_warm_refill_wait(1, &since, t0 + 2 * SBX_WARM_REFILL_YIELD_MAX_MS), 0);   /* and stays so */
    CHECK_INT(sbx_warm_refill_wait(0, &since, t0 + 2 * SBX_WARM_REFILL_YIELD_MAX_MS), 0);   /* starts over */
    CHECK_INT(since, 0);
    CHECK_INT(sbx_warm_refill_wait(1, &since, t0 + 3 * SBX_WARM_REFILL_YIELD_MAX_MS), SBX_WARM_REFILL_RECHECK_MS);
}
