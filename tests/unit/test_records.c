/* tests/unit/test_records.c — one record per Sandbox keyed by UID (sandbox/records.c): a
 * same-named successor starts from nothing (no inherited reservation or names), a deleted
 * Sandbox keeps the names of what it owned until it is forgotten, reservations expire,
 * nothing leaks. (One-shot runs keep no state here: their result comes from the pod.) */
#include "check.h"

#include "sandbox/records.h"

TEST(a_successor_of_the_same_name_inherits_nothing) {
    struct sbx_records r;
    struct sbx_gone g;
    char uid[64];
    sbx_records_init(&r);
    CHECK_INT(sbx_records_seen(&r, "ns/a", "uid-1"), 0);
    CHECK_INT(sbx_records_reserve(&r, "uid-1", 5000), 0);
    sbx_records_deleted(&r, "ns/a", "uid-1", "yao-sb-u-a", "yao-sb-u-a-workspace");
    CHECK_INT(sbx_records_live_reservations(&r, 0, NULL), 0);   /* a deleted one holds no slot */
    /* a new Sandbox of the same name */
    CHECK_INT(sbx_records_seen(&r, "ns/a", "uid-2"), 0);
    CHECK_INT(sbx_records_reserved(&r, "uid-2", 0), 0);
    CHECK_INT(sbx_records_gone(&r, "ns/a", uid, sizeof(uid), &g), 0);   /* the key is the new one's */
    CHECK_INT(sbx_records_count(&r), 2);
    sbx_records_forget(&r, "uid-1");
    CHECK_INT(sbx_records_count(&r), 1);
    CHECK_INT(sbx_records_reserved(&r, "uid-2", 0), 0);
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

TEST(reservations_expire_and_are_counted_once_per_sandbox) {
    struct sbx_records r;
    sbx_records_init(&r);
    sbx_records_seen(&r, "ns/x", "ux");
    sbx_records_seen(&r, "ns/y", "uy");
    CHECK_INT(sbx_records_reserve(&r, "nobody", 100), -1);
    sbx_records_reserve(&r, "ux", 1000);
    sbx_records_reserve(&r, "uy", 2000);
    CHECK_INT(sbx_records_live_reservations(&r, 500, NULL), 2);
    CHECK_INT(sbx_records_live_reservations(&r, 500, "ux"), 1);
    CHECK_INT(sbx_records_live_reservations(&r, 1000, NULL), 1);  /* ux expired */
    CHECK_INT(sbx_records_reserved(&r, "uy", 1500), 1);
    sbx_records_release(&r, "uy");
    CHECK_INT(sbx_records_reserved(&r, "uy", 1500), 0);
    CHECK_INT(sbx_records_live_reservations(&r, 0, NULL), 1);
    sbx_records_free(&r);
}
