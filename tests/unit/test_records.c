/* tests/unit/test_records.c — one record per Sandbox keyed by UID (sandbox/model/records.c): a
 * same-named successor starts from nothing (no inherited expectation or names), a deleted
 * Sandbox keeps the names of what it owned until swept, then stays a tombstone for a minute, create expectations are met by the cache or expire,
 * a record at rest is small (heap per record, plain build), nothing leaks. (One-shot runs keep no state here: their result comes from the pod.) */
#include "check.h"

#include "sandbox/model/records.h"

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
    CHECK_INT(sbx_records_count(&r), 1);   /* nothing reaches the deleted one's record now */
    sbx_records_swept(&r, "uid-1", 1000);
    CHECK_INT(sbx_records_count(&r), 1);
    CHECK_INT(sbx_records_gone(&r, "ns/a", uid, sizeof(uid), &g), 0);   /* still the new one's */
    CHECK_INT(sbx_records_expecting(&r, "uid-2", SBX_EXPECT_POD, 0), 0);
    sbx_records_free(&r);
}

TEST(a_deletion_noted_from_an_owned_object_gives_way_to_the_sandboxs_own) {
    struct sbx_records r;
    struct sbx_gone g;
    char uid[64];
    sbx_records_init(&r);
    /* a pod's deletion arrived before its Sandbox's: noted under the synthetic uid */
    sbx_records_deleted(&r, "ns/d", "deleted:ns/d", "yao-sb-u-d", "yao-sb-u-d-workspace");
    CHECK_INT(sbx_records_gone(&r, "ns/d", uid, sizeof(uid), &g), 1);
    CHECK_STR(uid, "deleted:ns/d");
    CHECK_STR(g.pod, "yao-sb-u-d");
    /* then the Sandbox's own deletion: one record, with the real uid */
    sbx_records_deleted(&r, "ns/d", "uid-d", "yao-sb-u-d", "yao-sb-u-d-workspace");
    CHECK_INT(sbx_records_count(&r), 1);
    CHECK_INT(sbx_records_gone(&r, "ns/d", uid, sizeof(uid), &g), 1);
    CHECK_STR(uid, "uid-d");
    /* a tombstone superseded the same way leaves a stale entry in the purge list: harmless */
    sbx_records_swept(&r, "uid-d", 1000);
    sbx_records_deleted(&r, "ns/d", "deleted:ns/d", "yao-sb-u-d", "");
    CHECK_INT(sbx_records_count(&r), 1);
    sbx_records_swept(&r, "uid-none", 1000 + SBX_RECORD_TOMBSTONE_MS);
    CHECK_INT(sbx_records_gone(&r, "ns/d", uid, sizeof(uid), &g), 1);   /* not swept: stays */
    CHECK_STR(uid, "deleted:ns/d");
    sbx_records_free(&r);
}

TEST(a_deleted_sandbox_keeps_its_names_then_a_tombstone_for_a_while) {
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
    sbx_records_orphans_deleted(&r, "uid-b", 4500);                    /* the sweep acted: */
    CHECK_INT(sbx_records_orphans_seen(&r, "uid-b", 4600), 4500);    /* the grace restarts */
    CHECK_INT(g.swept_ms, 0);
    sbx_records_swept(&r, "uid-b", 5000);
    sbx_records_swept(&r, "uid-b", 6000);                              /* once is enough */
    CHECK_INT(sbx_records_gone(&r, "ns/b", uid, sizeof(uid), &g), 1);  /* the tombstone */
    CHECK_INT(g.swept_ms, 5000);
    CHECK_STR(g.pod, "pod-b");
    /* a second deleted Sandbox swept a minute later drops the first tombstone */
    sbx_records_seen(&r, "ns/c", "uid-c");
    sbx_records_deleted(&r, "ns/c", "uid-c", "pod-c", "claim-c");
    sbx_records_swept(&r, "uid-c", 5000 + SBX_RECORD_TOMBSTONE_MS - 1);
    CHECK_INT(sbx_records_count(&r), 2);
    sbx_records_swept(&r, "uid-none", 5000 + SBX_RECORD_TOMBSTONE_MS);
    CHECK_INT(sbx_records_gone(&r, "ns/b", uid, sizeof(uid), &g), 0);
    CHECK_INT(sbx_records_gone(&r, "ns/c", uid, sizeof(uid), &g), 1);
    CHECK_INT(sbx_records_count(&r), 1);
    /* many tombstones: all dropped once old, the list compacts */
    char u[32], k[32];
    for (int i = 0; i < 500; i++) {
        snprintf(u, sizeof u, "t-%d", i);
        snprintf(k, sizeof k, "ns/t-%d", i);
        sbx_records_deleted(&r, k, u, "p", "c");
        sbx_records_swept(&r, u, 100000 + i);
    }
    CHECK_INT(sbx_records_count(&r), 501);   /* uid-c (swept at 64999) stays until 124999 */
    sbx_records_swept(&r, "uid-none", 100000 + 250 + SBX_RECORD_TOMBSTONE_MS);
    CHECK_INT(sbx_records_count(&r), 249);
    sbx_records_swept(&r, "uid-none", 100000 + 500 + SBX_RECORD_TOMBSTONE_MS);
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

TEST(a_record_at_rest_is_small) {
    /* 10,000 Sandboxes whose pods and claims were created and seen: what stays is the
     * record, its two index entries and the uid copy. With the expectation slots and the
     * deleted names inline it was ~750 bytes a Sandbox (~15 % of the 4 KiB budget). */
    enum { N = 10000 };
    struct sbx_records r;
    char key[64], uid[64], obj[64];
    long long before = check_heap_inuse();
    if (before < 0) { printf("  (heap figures need glibc's malloc: skipped under ASan/valgrind)\n"); return; }
    sbx_records_init(&r);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "team-a/sandbox-%05d", i);
        snprintf(uid, sizeof uid, "6f1c2a7e-0000-4000-8000-%012d", i);
        CHECK_INT(sbx_records_seen(&r, key, uid), 0);
        for (int k = 0; k < 2; k++) {
            snprintf(obj, sizeof obj, "0b9d7c2e-%d000-4000-8000-%012d", k, i);
            CHECK_INT(sbx_records_expect(&r, uid, (enum sbx_expect_kind)k, obj, 5000), 0);
        }
        for (int k = 0; k < 2; k++) {
            snprintf(obj, sizeof obj, "0b9d7c2e-%d000-4000-8000-%012d", k, i);
            sbx_records_observed(&r, uid, (enum sbx_expect_kind)k, obj);
            CHECK_INT(sbx_records_expecting(&r, uid, (enum sbx_expect_kind)k, 0), 0);
        }
    }
    long long per_record = (check_heap_inuse() - before) / N;
    printf("  %lld bytes of heap per record at rest\n", per_record);
    CHECK(per_record > 0 && per_record <= 320);
    /* still working: a deletion keeps the names */
    struct sbx_gone g;
    snprintf(uid, sizeof uid, "6f1c2a7e-0000-4000-8000-%012d", 7);
    sbx_records_deleted(&r, "team-a/sandbox-00007", uid, "yao-sb-u-7", "yao-sb-u-7-workspace");
    CHECK_INT(sbx_records_gone(&r, "team-a/sandbox-00007", obj, sizeof obj, &g), 1);
    CHECK_STR(g.claim, "yao-sb-u-7-workspace");
    CHECK_INT(sbx_records_count(&r), N);
    sbx_records_free(&r);
}
