/* tests/unit/test_shard_decide.c — the shard of a Sandbox: FNV-1a 64 against the published
 * vectors and values computed independently (Python), the shard of (namespace, user)
 * pinned (a change would move every Sandbox of a sharded install), an even spread of
 * 10,000 users over 2, 3 and 16 shards, the Sandbox filter, the owned kinds' selector,
 * and which objects a shard labels as its own when sharding is turned on or S changes. */
#include "check.h"
#include "kube/kjson.h"
#include "runtime/leaseview.h"
#include "sandbox/decide/shard_decide.h"

static uint64_t fnv(const char *s) { return sbx_fnv1a64(s, strlen(s), SBX_FNV1A64_INIT); }

TEST(fnv1a64_vectors) {
    CHECK(fnv("") == 0xcbf29ce484222325ULL);
    CHECK(fnv("a") == 0xaf63dc4c8601ec8cULL);
    CHECK(fnv("default/alice") == 0x706d51e1b38746c5ULL);
    CHECK(fnv("default/bob") == 0xf70d9007c64fd302ULL);
    CHECK(fnv("team-a/u-42") == 0x545c11656bc2a423ULL);
    /* incremental = whole */
    CHECK(sbx_fnv1a64("alice", 5, sbx_fnv1a64("default/", 8, SBX_FNV1A64_INIT)) == fnv("default/alice"));
}

TEST(shard_of_pinned) {
    CHECK_INT(sbx_shard_of("default", "alice", 2), 1);
    CHECK_INT(sbx_shard_of("default", "bob", 2), 0);
    CHECK_INT(sbx_shard_of("default", "alice", 16), 5);
    CHECK_INT(sbx_shard_of("default", "bob", 16), 2);
    CHECK_INT(sbx_shard_of("team-a", "u-42", 16), 3);
    CHECK_INT(sbx_shard_of("default", NULL, 16), 3);   /* "default/" */
    /* one shard (or none): always 0, whatever the key */
    CHECK_INT(sbx_shard_of("default", "alice", 1), 0);
    CHECK_INT(sbx_shard_of("default", "alice", 0), 0);
    /* the namespace is part of the key */
    int differ = 0;
    char u[32];
    for (int i = 0; i < 64; i++) {
        snprintf(u, sizeof(u), "user-%d", i);
        differ += sbx_shard_of("a", u, 16) != sbx_shard_of("b", u, 16);
    }
    CHECK(differ > 32);
}

TEST(spread_over_10000_users) {
    static const int shard_counts[] = {2, 3, 16};
    for (size_t k = 0; k < sizeof(shard_counts) / sizeof(shard_counts[0]); k++) {
        int s = shard_counts[k], count[16] = {0};
        char u[32];
        for (int i = 0; i < 10000; i++) {
            snprintf(u, sizeof(u), "user-%d", i);
            int sh = sbx_shard_of("default", u, s);
            CHECK(sh >= 0 && sh < s);
            if (sh >= 0 && sh < s) count[sh]++;
        }
        /* within 10 % of the mean (for 16 shards, 625 ± 62: about 2.5 sigma) */
        int mean = 10000 / s;
        for (int i = 0; i < s; i++) {
            if (count[i] < mean - mean / 10 || count[i] > mean + mean / 10)
                fprintf(stderr, "  shards=%d shard %d has %d of 10000\n", s, i, count[i]);
            CHECK(count[i] >= mean - mean / 10 && count[i] <= mean + mean / 10);
        }
    }
}

TEST(sandbox_filter) {
    cJSON *a = cJSON_Parse("{\"metadata\":{\"namespace\":\"default\",\"name\":\"x\"},\"spec\":{\"userID\":\"alice\"}}");
    cJSON *b = cJSON_Parse("{\"metadata\":{\"namespace\":\"default\",\"name\":\"y\"},\"spec\":{\"userID\":\"bob\"}}");
    cJSON *none = cJSON_Parse("{\"metadata\":{\"namespace\":\"default\",\"name\":\"z\"},\"spec\":{}}");
    int s0[2] = {2, 0}, s1[2] = {2, 1}, one[2] = {1, 0};
    CHECK_INT(sbx_shard_of_sandbox(a, 2), 1);
    CHECK(!sbx_shard_keep(s0, a));
    CHECK(sbx_shard_keep(s1, a));
    CHECK(sbx_shard_keep(s0, b));
    CHECK(!sbx_shard_keep(s1, b));
    /* without a userID: exactly one shard keeps it (and reports it invalid) */
    CHECK(sbx_shard_keep(s0, none) + sbx_shard_keep(s1, none) == 1);
    CHECK(sbx_shard_keep(one, a) && sbx_shard_keep(one, b) && sbx_shard_keep(one, none));
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(none);
}

TEST(selector) {
    char out[128];
    CHECK_INT(sbx_shard_selector("sandbox.yaoapps.com/name", 1, 0, out, sizeof(out)), 0);
    CHECK_STR(out, "sandbox.yaoapps.com/name");
    CHECK_INT(sbx_shard_selector("sandbox.yaoapps.com/name", 4, 3, out, sizeof(out)), 0);
    CHECK_STR(out, "sandbox.yaoapps.com/name,sandbox.yaoapps.com/shard=3,sandbox.yaoapps.com/shards=4");
    CHECK_INT(sbx_shard_selector("sandbox.yaoapps.com/name", 4, 3, out, 20), -1);
    struct sbx_shard_labels l;
    sbx_shard_labels_init(&l, 16, 7);
    CHECK_STR(l.shard, "7");
    CHECK_STR(l.shards, "16");
}

/* An owned object of user (NULL: a pool claim) in "default", labelled shard of shards
 * (NULL: no such label). */
static cJSON *owned_of(const char *user, const char *shard, const char *shards) {
    char text[640];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"namespace\":\"default\",\"name\":\"o\",\"labels\":{\"sandbox.yaoapps.com/name\":\"x\"%s%s%s%s%s%s},"
             "\"annotations\":{%s%s%s}}}",
             shard ? ",\"sandbox.yaoapps.com/shard\":\"" : "", shard ? shard : "", shard ? "\"" : "",
             shards ? ",\"sandbox.yaoapps.com/shards\":\"" : "", shards ? shards : "", shards ? "\"" : "",
             user ? "\"sandbox.yaoapps.com/user-id\":\"" : "", user ? user : "", user ? "\"" : "");
    return cJSON_Parse(text);
}

/* The same, of S = 2 when labelled. */
static cJSON *owned(const char *user, const char *shard) { return owned_of(user, shard, shard ? "2" : NULL); }

TEST(adoption_on_migration) {
    /* alice is shard 1 of 2, bob shard 0 */
    cJSON *alice_none = owned("alice", NULL), *alice_1 = owned("alice", "1"), *alice_0 = owned("alice", "0");
    cJSON *alice_bad = owned("alice", "01"), *pool_none = owned(NULL, NULL), *pool_1 = owned(NULL, "1");
    cJSON *pool_9 = owned(NULL, "9"), *pool_x = owned(NULL, "x");
    CHECK(alice_none && alice_1 && alice_0 && alice_bad && pool_none && pool_1 && pool_9 && pool_x);
    /* unlabelled (made before sharding): its user's shard takes it, the other does not */
    CHECK(sbx_shard_should_adopt(alice_none, 2, 1));
    CHECK(!sbx_shard_should_adopt(alice_none, 2, 0));
    /* labelled already: nothing to do */
    CHECK(!sbx_shard_should_adopt(alice_1, 2, 1));
    CHECK(!sbx_shard_should_adopt(alice_1, 2, 0));
    /* current labels (shard 0 of 2) are never taken, even where they disagree with the
     * user's hash (only a hand edit makes that) */
    CHECK(!sbx_shard_should_adopt(alice_0, 2, 1));
    CHECK(!sbx_shard_should_adopt(alice_0, 2, 0));
    /* a shard label that is no shard number: as unlabelled */
    CHECK(sbx_shard_should_adopt(alice_bad, 2, 1));
    CHECK(!sbx_shard_should_adopt(alice_bad, 2, 0));
    /* pool claims: unlabelled or of no shard of S → shard 0; another live shard's: left */
    CHECK(sbx_shard_should_adopt(pool_none, 2, 0));
    CHECK(!sbx_shard_should_adopt(pool_none, 2, 1));
    CHECK(!sbx_shard_should_adopt(pool_1, 2, 0));
    CHECK(!sbx_shard_should_adopt(pool_1, 2, 1));
    CHECK(sbx_shard_should_adopt(pool_9, 2, 0));
    CHECK(sbx_shard_should_adopt(pool_x, 2, 0));
    /* labelled for another S (4): taken by the shard of S = 2 the user hashes to; a pool
     * claim by shard 0, whatever its old shard */
    cJSON *alice_1_of_4 = owned_of("alice", "1", "4"), *pool_1_of_4 = owned_of(NULL, "1", "4");
    cJSON *alice_1_no_s = owned_of("alice", "1", NULL);
    CHECK(sbx_shard_should_adopt(alice_1_of_4, 2, 1));
    CHECK(!sbx_shard_should_adopt(alice_1_of_4, 2, 0));
    CHECK(sbx_shard_should_adopt(pool_1_of_4, 2, 0));
    CHECK(!sbx_shard_should_adopt(pool_1_of_4, 2, 1));
    CHECK(sbx_shard_should_adopt(alice_1_no_s, 2, 1));
    CHECK(!sbx_shard_should_adopt(alice_1_no_s, 2, 0));
    cJSON_Delete(alice_1_of_4);
    cJSON_Delete(pool_1_of_4);
    cJSON_Delete(alice_1_no_s);
    /* no sharding: never */
    CHECK(!sbx_shard_should_adopt(alice_none, 1, 0));
    CHECK(!sbx_shard_should_adopt(pool_none, 1, 0));
    cJSON *all[] = {alice_none, alice_1, alice_0, alice_bad, pool_none, pool_1, pool_9, pool_x};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) cJSON_Delete(all[i]);
}

/* A Lease as the plane would hold it: name, holder ("" = released), renewed at renew_ms for
 * 15 s, with the shards and acting labels when given. */
static cJSON *lease_of(const char *name, const char *holder, int64_t renew_ms, const char *shards, const char *acting) {
    char t[48], text[1024], labels[256] = "";
    kj_time_format_micro(renew_ms, t, sizeof t);
    if (shards || acting)
        snprintf(labels, sizeof labels, ",\"labels\":{%s%s%s%s%s%s%s}", shards ? "\"" SBX_LABEL_SHARDS "\":\"" : "",
                 shards ? shards : "", shards ? "\"" : "", shards && acting ? "," : "",
                 acting ? "\"" SBX_LABEL_ACTING "\":\"" : "", acting ? acting : "", acting ? "\"" : "");
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\"%s},\"spec\":{\"holderIdentity\":\"%s\",\"renewTime\":\"%s\","
             "\"leaseDurationSeconds\":15}}", name, labels, holder, t);
    cJSON *o = cJSON_Parse(text);
    CHECK(o != NULL);
    return o;
}

TEST(a_replica_waits_while_another_shard_count_acts) {
    const int64_t now = INT64_C(1795946400000);
    char why[256] = "";
    static const struct { const char *name, *holder; int64_t age_ms; const char *shards, *acting; int blocks; } cases[] = {
        /* another count, held and acting: wait */
        {"yao-shard-0", "old-a", 1000, "2", "true", 1},
        {"yao-shard-1", "old-b", 1000, "2", "true", 1},
        /* the same count (our other shards): never */
        {"yao-shard-2", "new-c", 1000, "3", "true", 0},
        {"yao-shard-0", "new-a", 1000, "3", NULL, 0},
        /* another count that does not act yet (waiting like us): no */
        {"yao-shard-1", "old-b", 1000, "2", NULL, 0},
        {"yao-shard-1", "old-b", 1000, "2", "false", 0},
        /* released or expired: no */
        {"yao-shard-1", "", 1000, "2", "true", 0},
        {"yao-shard-1", "old-b", 16000, "2", "true", 0},
        /* a controller from before the labels, holding another Lease of the family: it acts */
        {"yao-shard-1", "old-b", 1000, NULL, NULL, 1},
        {"yao", "unsharded", 1000, NULL, NULL, 1},
        /* ... but our own Lease is leader election's business */
        {"yao-shard-0", "old-a", 1000, NULL, NULL, 0},
        /* not of the family */
        {"yao-other", "x", 1000, NULL, NULL, 0},
        {"yao-shard-x", "x", 1000, NULL, NULL, 0},
        {"yao-shard-", "x", 1000, NULL, NULL, 0},
        {"other-shard-1", "x", 1000, "2", "true", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *l = lease_of(cases[i].name, cases[i].holder, now - cases[i].age_ms, cases[i].shards, cases[i].acting);
        int b = sbx_shard_lease_blocks(l, "yao", "yao-shard-0", 3, now, why, sizeof why);
        if (b != cases[i].blocks) fprintf(stderr, "  case %zu (%s)\n", i, cases[i].name);
        CHECK_INT(b, cases[i].blocks);
        cJSON_Delete(l);
    }
    cJSON *l = lease_of("yao-shard-1", "old-b", now - 1000, "2", "true");
    CHECK_INT(sbx_shard_lease_blocks(l, "yao", "yao-shard-0", 3, now, why, sizeof why), 1);
    CHECK_STR(why, "Lease yao-shard-1 is held by old-b of --shards 2");
    /* unsharded (1) against a 2-shard family */
    CHECK_INT(sbx_shard_lease_blocks(l, "yao", "yao", 1, now, why, sizeof why), 1);
    cJSON_Delete(l);
    l = lease_of("yao", "me", now - 1000, "1", "true");
    CHECK_INT(sbx_shard_lease_blocks(l, "yao", "yao", 1, now, why, sizeof why), 0);
    cJSON_Delete(l);
}

/* The Lease view both readers share (runtime/leaseview.h): the fields as written, the
 * renewal parsed, and "held" only with a holder renewed within its duration. */
TEST(lease_view_reads_a_lease_once) {
    cJSON *l = cJSON_Parse("{\"metadata\":{\"name\":\"yao-shard-it-shard-1\"},\"spec\":{\"holderIdentity\":\"pod-a\","
                           "\"leaseDurationSeconds\":15,\"renewTime\":\"2026-11-29T10:00:00.000000Z\","
                           "\"acquireTime\":\"2026-11-29T09:00:00.000000Z\",\"leaseTransitions\":3}}");
    CHECK(l != NULL);
    struct kube_lease_view v;
    kube_lease_view_read(l, &v);
    CHECK_STR(v.name, "yao-shard-it-shard-1");
    CHECK_STR(v.holder, "pod-a");
    CHECK_STR(v.acquire_time, "2026-11-29T09:00:00.000000Z");
    CHECK_INT(v.renewed_ms, INT64_C(1795946400000));
    CHECK_INT(v.duration_ms, 15000);
    CHECK_INT(v.transitions, 3);
    CHECK_INT(kube_lease_held_at(&v, INT64_C(1795946400000) + 15000), 1);
    CHECK_INT(kube_lease_held_at(&v, INT64_C(1795946400000) + 15001), 0);   /* expired */
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(l, "spec"), "holderIdentity",
                                           cJSON_CreateString(""));
    kube_lease_view_read(l, &v);
    CHECK_INT(kube_lease_held_at(&v, INT64_C(1795946400000)), 0);           /* released */
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(l, "spec"), "renewTime",
                                           cJSON_CreateString("yesterday"));
    kube_lease_view_read(l, &v);
    CHECK_INT(v.renewed_ms, 0);
    kube_lease_view_read(NULL, &v);
    CHECK(v.name == NULL && v.holder == NULL && v.duration_ms == 0);
    cJSON_Delete(l);
}
