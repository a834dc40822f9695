/* tests/unit/test_reconcile_shard.c — the I/O side of sharding (sandbox/io/shard.c) on the fake
 * API server (reconcile_env.h), a controller serving shard 0 of 2: at its start it labels
 * the objects made before sharding that are its own (a pod of one of its users, a
 * warm-pool claim, which shard 0 takes) with a uid precondition, and leaves alone what is
 * another shard's (a pod of a user of shard 1, a pod already labelled for shard 1). Its
 * Sandbox cache holds only its users' Sandboxes. A pod of its own found by a create's 409
 * (made unlabelled after the start) is labelled then, and no second pod is made; a
 * stranger's pod of the name is not. */
#include <stdio.h>
#include <string.h>

#include "reconcile_env.h"
#include "sandbox/decide/shard_decide.h"

#define SHARDS 2
#define ME 0

/* A user of namespace NS in shard `want` (u0, u1, ... the first that hashes there). */
static const char *user_of_shard(int want, char *out, size_t n) {
    for (int i = 0; i < 1000; i++) {
        snprintf(out, n, "u%d", i);
        if (sbx_shard_of(NS, out, SHARDS) == want) return out;
    }
    return NULL;
}

static char mine[16], theirs[16];

/* A pod the controller made before sharding: its name label and user annotation, an
 * ownerReference to the Sandbox of owner_uid when given, and labels_extra (a JSON fragment
 * starting with ',' or ""). */
static int seed_owned_pod(const char *name, const char *user, const char *owner_uid, const char *labels_extra) {
    char doc[1536], owner[512] = "";
    if (owner_uid)
        snprintf(owner, sizeof owner,
                 ",\"ownerReferences\":[{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\","
                 "\"name\":\"x\",\"uid\":\"%s\",\"controller\":true}]", owner_uid);
    snprintf(doc, sizeof doc,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"" SBX_LABEL_NAME
             "\":\"%s\"%s},\"annotations\":{\"" SBX_ANN_USER_ID "\":\"%s\"}%s},\"spec\":{\"containers\":[{\"name\":"
             "\"sandbox\",\"image\":\"busybox\"}]}}", name, name, labels_extra, user, owner);
    return fakeapi_seed(&shared_env.fa, POD_COLL, doc);
}

/* Before the controller starts: what an install without sharding left, then shard 0 of 2. */
static void sharded(struct sbx_controller_options *o) {
    user_of_shard(ME, mine, sizeof mine);
    user_of_shard(1, theirs, sizeof theirs);
    seed_owned_pod("old-mine", mine, NULL, "");
    seed_owned_pod("old-theirs", theirs, NULL, "");
    seed_owned_pod("labelled-theirs", mine, NULL, ",\"" SBX_LABEL_SHARD "\":\"1\",\"" SBX_LABEL_SHARDS "\":\"2\"");
    fakeapi_seed(&shared_env.fa, PVC_COLL,
                 "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"pool-1\","
                 "\"labels\":{\"" SBX_LABEL_NAME "\":\"pool-1\"}},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
                 "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}");
    o->shards = SHARDS;
    o->shard = ME;
}
#define env() env_tweaked(sharded)

/* The shard labels of the stored object at path, as "shard/shards" ("/" when none). */
static const char *shard_labels(struct env *e, const char *path, char *out, size_t n) {
    cJSON *o = fakeapi_get(&e->fa, path);
    const char *a = kj_map_get(o, "metadata.labels", SBX_LABEL_SHARD), *b = kj_map_get(o, "metadata.labels", SBX_LABEL_SHARDS);
    snprintf(out, n, "%s/%s", a ? a : "", b ? b : "");
    cJSON_Delete(o);
    return out;
}

TEST(the_start_labels_this_shards_objects_and_no_others) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    CHECK(mine[0] && theirs[0]);
    char buf[64];
    CHECK_STR(shard_labels(e, POD_COLL "/old-mine", buf, sizeof buf), "0/2");
    CHECK_STR(shard_labels(e, PVC_COLL "/pool-1", buf, sizeof buf), "0/2");   /* no user: shard 0's */
    CHECK_STR(shard_labels(e, POD_COLL "/old-theirs", buf, sizeof buf), "/");
    CHECK_STR(shard_labels(e, POD_COLL "/labelled-theirs", buf, sizeof buf), "1/2");
    /* each label patch carried the object's uid */
    cJSON *patch = fakeapi_last_body(&e->fa, 0, "PATCH", POD_COLL "/old-mine");
    CHECK(kj_str(patch, "metadata.uid") != NULL);
    cJSON_Delete(patch);
    CHECK_INT(fakeapi_count(&e->fa, 0, "PATCH", POD_COLL "/old-theirs"), 0);
    CHECK_INT(fakeapi_count(&e->fa, 0, "PATCH", POD_COLL "/labelled-theirs"), 0);
    /* the pod cache holds what is labelled for this shard */
    cJSON *c = informer_get(sbx_controller_cache(e->ctl, SBX_CACHE_PODS), NS "/old-mine");
    for (int64_t end = clock_mono_ms() + 10000; !c && clock_mono_ms() < end; env_sleep_ms(10))
        c = informer_get(sbx_controller_cache(e->ctl, SBX_CACHE_PODS), NS "/old-mine");
    CHECK(c != NULL);
    cJSON_Delete(c);
    c = informer_get(sbx_controller_cache(e->ctl, SBX_CACHE_PODS), NS "/old-theirs");
    CHECK(c == NULL);
    cJSON_Delete(c);
}

TEST(the_sandbox_cache_holds_only_this_shards_users) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    struct names a, b;
    names_of(&a, "sa", mine, "c");
    names_of(&b, "sb", theirs, "c");
    CHECK_INT(seed_sandbox(e, "sa", mine, "c", "", NULL), 0);
    CHECK_INT(seed_sandbox(e, "sb", theirs, "c", "", NULL), 0);
    struct informer *sbs = sbx_controller_cache(e->ctl, SBX_CACHE_SANDBOXES);
    cJSON *got = NULL;
    for (int64_t end = clock_mono_ms() + 10000; !got && clock_mono_ms() < end; env_sleep_ms(10))
        got = informer_get(sbs, a.key);
    CHECK(got != NULL);
    cJSON_Delete(got);
    env_sleep_ms(100);   /* sb's event came with sa's or before it */
    got = informer_get(sbs, b.key);
    CHECK(got == NULL);
    cJSON_Delete(got);
}

/* One pass once the Sandbox cache has it (the pod is not in this shard's cache until it is
 * labelled, so reconcile_env.h's pass would wait for it in vain). */
static int pass_sandbox_cached(struct env *e, const struct names *n) {
    cJSON *sb = NULL;
    for (int64_t end = clock_mono_ms() + 10000; !sb && clock_mono_ms() < end; env_sleep_ms(5))
        sb = informer_get(sbx_controller_cache(e->ctl, SBX_CACHE_SANDBOXES), n->key);
    cJSON_Delete(sb);
    return pass_now(e, n, NULL);
}

TEST(a_pod_of_its_own_found_by_a_409_is_labelled_not_made_twice) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    struct names n;
    names_of(&n, "sx", mine, "late");
    CHECK_INT(seed_sandbox(e, "sx", mine, "late", ",\"lifecycle\":\"persistent\"", NULL), 0);
    char uid[128], buf[64];
    stored_str(e, n.sb, "metadata.uid", uid, sizeof uid);
    /* its pod, made unlabelled after the start (an old replica's last act): no shard sees it */
    CHECK_INT(seed_owned_pod(n.pod_name, mine, uid, ""), 0);
    size_t mark = fakeapi_mark(&e->fa);
    pass_sandbox_cached(e, &n);
    CHECK_INT(fakeapi_count_status(&e->fa, mark, "POST", POD_COLL, 409), 1);
    CHECK_STR(shard_labels(e, n.pod, buf, sizeof buf), "0/2");
    /* then it is in the cache, and the next pass makes no pod */
    CHECK(pod_cached(e, n.pod));
    mark = fakeapi_mark(&e->fa);
    pass_sandbox_cached(e, &n);
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", POD_COLL), 0);
}

/* A pod of the name that is not the Sandbox's (no ownerReference to it) is a stranger's,
 * whatever its annotations say: not labelled, not adopted. */
TEST(a_strangers_pod_found_by_a_409_is_not_labelled) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    struct names n;
    names_of(&n, "sy", mine, "squat");
    CHECK_INT(seed_owned_pod(n.pod_name, mine, NULL, ""), 0);
    CHECK_INT(seed_sandbox(e, "sy", mine, "squat", ",\"lifecycle\":\"persistent\"", NULL), 0);
    size_t mark = fakeapi_mark(&e->fa);
    pass_sandbox_cached(e, &n);
    char buf[64];
    CHECK_INT(fakeapi_count_status(&e->fa, mark, "POST", POD_COLL, 409), 1);
    CHECK_INT(fakeapi_count(&e->fa, mark, "PATCH", n.pod), 0);
    CHECK_STR(shard_labels(e, n.pod, buf, sizeof buf), "/");
}
