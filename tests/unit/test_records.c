/* tests/unit/test_records.c — one record per Sandbox keyed by UID (sandbox/records.c): a
 * same-named successor starts from nothing (no inherited expectation or names), a deleted
 * Sandbox keeps the names of what it owned until it is forgotten, create expectations are met by the cache or expire,
 * nothing leaks. (One-shot runs keep no state here: their result comes from the pod.) */
#include "check.h"

#include "sandbox/records.h"

TEST(a_successor_of_the_same_name_inherits_nothing) {
    struct sbx_records r;
    struct sbx_gone g;
    char uid[64];
    sbx_records_init(&r);
    CHECK_INT(sbx_records_seen(&r, "ns/a", "uid-1"), 0);
    CHECK_INT(sbx_records_expect(&r, "uid-1", SBX_EXPECT_POD, "pod-uid", 5000), 0);
    sbx_records_deleted(&r, "ns/a", "uid-1", "yao-sb-u-a", "yao-sb-u-a-workspace");
    CHECK_INT(sbx_records_expecting(&r, "uid-1", SBX_EXPECT_POD, 0), 0);   /* a deleted one expects nothing */
    /* a new Sandbox of the same name */
    CHECK_INT(sbx_records_seen(&r, "ns/a", "uid-2"), 0);
    CHECK_INT(sbx_records_expecting(&r, "uid-2", SBX_EXPECT_POD, 0), 0);
    CHECK_INT(sbx_records_gone(&r, "ns/a", uid, sizeof(uid), &g), 0);   /* the key is the new one's */
    CHECK_INT(sbx_records_count(&r), 2);
    sbx_records_forget(&r, "uid-1");
    CHECK_INT(sbx_records_count(&r), 1);
    CHECK_INT(sbx_records_expecting(&r, "uid-2", SBX_EXPECT_POD, 0), 0);
    sbx_records_free(&r);
}

TEST(a_deleted_sandbox_keeps_its_names_until_forgotten) {
    struct sbx_records r;
    struct sbx_gone g;
    char uid[64];
    sbx_records_init(&r);
    CHECK_INT(sbx_records_gone(&r, "ns/b", uid, sizeof(uid), &g), 0);   /* unknown */
    sbx_records_seen(&r, "ns/b", "uid-b");
    CHECK_INT(sbx_records_gone(&r, "ns/b", uid, sizeof(uid), &g), 0);   /* alive */
    sbx_records_deleted(&r, "ns/b", "uid-b", "pod-b", "claim-b");
    CHECK_INT(sbx_records_gone(&r, "ns/b", uid, sizeof(uid), &g), 1);
    CHECK_STR(uid, "uid-b");
    CHECK_STR(g.pod, "pod-b");
    CHECK_STR(g.claim, "claim-b");
    CHECK_INT(g.orphans_seen_ms, 0);
    CHECK_INT(sbx_records_orphans_seen(&r, "uid-b", 1000), 1000);
    CHECK_INT(sbx_records_orphans_seen(&r, "uid-b", 4000), 1000);    /* the first time stays */
    sbx_records_forget(&r, "uid-b");
    CHECK_INT(sbx_records_gone(&r, "ns/b", uid, sizeof(uid), &g), 0);
    CHECK_INT(sbx_records_count(&r), 0);
    sbx_records_free(&r);
}

TEST(create_expectations_are_met_by_the_cache_or_expire) {
    struct sbx_records r;
    sbx_records_init(&r);
    sbx_records_seen(&r, "ns/x", "ux");
    CHECK_INT(sbx_records_expect(&r, "nobody", SBX_EXPECT_POD, "p0", 100), -1);
    CHECK_INT(sbx_records_expect(&r, "ux", SBX_EXPECT_POD, "pod-1", 1000), 0);
    CHECK_INT(sbx_records_expect(&r, "ux", SBX_EXPECT_CLAIM, "pvc-1", 2000), 0);
    CHECK_INT(sbx_records_expecting(&r, "ux", SBX_EXPECT_POD, 400), 600);
    sbx_records_observed(&r, "ux", SBX_EXPECT_POD, "pod-0");   /* an earlier pod's event */
    CHECK_INT(sbx_records_expecting(&r, "ux", SBX_EXPECT_POD, 400), 600);
    sbx_records_observed(&r, "ux", SBX_EXPECT_POD, "pod-1");
    CHECK_INT(sbx_records_expecting(&r, "ux", SBX_EXPECT_POD, 400), 0);
    CHECK_INT(sbx_records_expecting(&r, "ux", SBX_EXPECT_CLAIM, 400), 1600);
    CHECK_INT(sbx_records_expecting(&r, "ux", SBX_EXPECT_CLAIM, 2000), 0);  /* expired */
    CHECK_INT(sbx_records_expecting(&r, "ux", SBX_EXPECT_CLAIM, 0), 0);     /* and dropped */
    /* a successor of the same name expects nothing its predecessor did */
    sbx_records_expect(&r, "ux", SBX_EXPECT_POD, "pod-2", 5000);
    sbx_records_deleted(&r, "ns/x", "ux", "pod", "claim");
    sbx_records_seen(&r, "ns/x", "uy");
    CHECK_INT(sbx_records_expecting(&r, "uy", SBX_EXPECT_POD, 0), 0);
    CHECK_INT(sbx_records_expecting(&r, "ux", SBX_EXPECT_POD, 0), 0);
    sbx_records_free(&r);
}
