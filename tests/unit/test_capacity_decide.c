/* tests/unit/test_capacity_decide.c — the running cap's bookkeeping (sandbox/decide/capacity_decide.c): only
 * pods controlled by a cached Sandbox hold a slot (a stranger's labelled pod does not), a
 * Sandbox holds one slot however many pods name it, reservations expire, three users are
 * served round-robin (fewest slots held first, in turn between equals, oldest first within
 * a user) with the
 * positions each waiting Sandbox is told, a per-user cap keeps a user's extra Sandboxes
 * out of the line, a freed slot wakes as many as are free, a SandboxClass's per-user cap
 * counts only the user's Sandboxes of that class (two classes, caps 1 and 2: per class,
 * a user is counted within its namespace (the same userID in another namespace is another
 * user, for the flag's cap and a class's),
 * a class change, a Sandbox gone, with the global and the flag's caps), and the cost of a
 * decision does not grow with the number of pods. Nothing leaks (valgrind). */
#include "check.h"

#include <stdio.h>
#include <time.h>

#include "sandbox/decide/capacity_decide.h"

#define FAR 1000000000LL   /* a reservation that does not expire during the test */

struct woken { char keys[16][64]; int n; };

static void collect(void *ud, const char *key) {
    struct woken *w = ud;
    if (w->n < 16) snprintf(w->keys[w->n], sizeof(w->keys[0]), "%s", key);
    w->n++;
}

/* Register Sandbox "ns/<uid>" of user, created at t. */
static void sb(struct sbx_slots *a, const char *uid, const char *user, int64_t t) {
    char key[64];
    snprintf(key, sizeof(key), "ns/%s", uid);
    CHECK_INT(sbx_slots_sandbox(a, uid, key, user, t, 0), 0);
}

/* Admitted and then its pod reaches the cache (the reservation gives way to the pod). */
static void run(struct sbx_slots *a, const char *uid) {
    int pos;
    CHECK_INT(sbx_slots_try(a, uid, 0, FAR, &pos), SBX_ADMIT_YES);
    CHECK_INT(sbx_slots_pod(a, uid, +1), 0);
    sbx_slots_release(a, uid, 0);
}

static int pos_of(struct sbx_slots *a, const char *uid) {
    int pos;
    enum sbx_admit r = sbx_slots_try(a, uid, 0, FAR, &pos);
    return r == SBX_ADMIT_YES ? -1 : r == SBX_ADMIT_WAIT_USER || r == SBX_ADMIT_WAIT_CLASS ? 0 : pos;
}

/* The answer itself (which cap holds it). */
static enum sbx_admit admit_of(struct sbx_slots *a, const char *uid) {
    int pos;
    return sbx_slots_try(a, uid, 0, FAR, &pos);
}

TEST(stranger_pods_hold_no_slot) {
    struct sbx_cap_limits l = {.max_running = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    /* pods that name no cached Sandbox: no ownerReference at all never gets here; one that
     * names a uid the cache does not have counts for nothing */
    for (int i = 0; i < 50; i++) CHECK_INT(sbx_slots_pod(a, "not-a-sandbox", +1), 0);
    CHECK_INT(sbx_slots_held(a, 0), 0);
    sb(a, "s1", "alice", 10);
    int pos;
    CHECK_INT(sbx_slots_try(a, "s1", 0, FAR, &pos), SBX_ADMIT_YES);
    for (int i = 0; i < 50; i++) sbx_slots_pod(a, "not-a-sandbox", -1);
    sbx_slots_free(a);
}

TEST(a_pod_seen_before_its_sandbox_counts_once_the_sandbox_is_cached) {
    struct sbx_cap_limits l = {.max_running = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    CHECK_INT(sbx_slots_pod(a, "s1", +1), 0);     /* the pod informer synced first */
    CHECK_INT(sbx_slots_held(a, 0), 0);
    sb(a, "s1", "alice", 10);
    CHECK_INT(sbx_slots_held(a, 0), 1);
    CHECK_INT(sbx_slots_pod(a, "s1", +1), 0);     /* a second pod naming it */
    CHECK_INT(sbx_slots_held(a, 0), 1);           /* still one slot */
    sb(a, "s2", "bob", 20);
    CHECK_INT(pos_of(a, "s2"), 1);
    sbx_slots_sandbox_gone(a, "s1");              /* its pods count no more */
    CHECK_INT(sbx_slots_held(a, 0), 0);
    CHECK_INT(pos_of(a, "s2"), -1);
    sbx_slots_pod(a, "s1", -1);
    sbx_slots_pod(a, "s1", -1);
    sbx_slots_free(a);
}

TEST(reservations_expire_and_release) {
    struct sbx_cap_limits l = {.max_running = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    int pos;
    sb(a, "s1", "alice", 10);
    sb(a, "s2", "alice", 20);
    CHECK_INT(sbx_slots_try(a, "s1", 0, 100, &pos), SBX_ADMIT_YES);
    CHECK_INT(sbx_slots_held(a, 50), 1);
    CHECK_INT(sbx_slots_try(a, "s2", 50, 150, &pos), SBX_ADMIT_WAIT);
    CHECK_INT(pos, 1);
    CHECK_INT(sbx_slots_held(a, 100), 0);         /* its pod never came */
    CHECK_INT(sbx_slots_try(a, "s2", 100, 200, &pos), SBX_ADMIT_YES);
    sbx_slots_release(a, "s2", 1);                /* creating it failed */
    CHECK_INT(sbx_slots_held(a, 100), 0);
    CHECK_INT(sbx_slots_waiting(a), 0);
    sbx_slots_free(a);
}

TEST(three_users_round_robin_with_positions) {
    struct sbx_cap_limits l = {.max_running = 2};
    struct sbx_slots *a = sbx_slots_new(&l);
    /* alice came first with three, then bob with two, then carol with one */
    sb(a, "a1", "alice", 1); sb(a, "a2", "alice", 2); sb(a, "a3", "alice", 3);
    sb(a, "b1", "bob", 4); sb(a, "b2", "bob", 5); sb(a, "c1", "carol", 6);
    run(a, "a1");
    run(a, "a2");
    CHECK_INT(sbx_slots_user_held(a, "ns", "alice", 0), 2);
    /* each joins the line on its first pass */
    CHECK(pos_of(a, "a3") > 0 && pos_of(a, "b1") > 0 && pos_of(a, "b2") > 0 && pos_of(a, "c1") > 0);
    /* alice holds both slots: the others go first, one per user in turn */
    CHECK_INT(pos_of(a, "a3"), 4);
    CHECK_INT(pos_of(a, "b1"), 1);
    CHECK_INT(pos_of(a, "b2"), 3);
    CHECK_INT(pos_of(a, "c1"), 2);
    CHECK_INT(sbx_slots_waiting(a), 4);

    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 0);   /* nothing is free */
    sbx_slots_pod(a, "a1", -1);                        /* a1's pod went */
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);   /* one slot: one woken */
    CHECK_STR(w.keys[0], "ns/b1");
    CHECK_INT(pos_of(a, "c1"), 2);                         /* b1 is woken, not yet admitted: still ahead */
    CHECK_INT(pos_of(a, "b1"), -1);                        /* b1 reconciles: admitted */
    sbx_slots_pod(a, "b1", +1);
    sbx_slots_release(a, "b1", 0);
    /* alice 1, bob 1, carol 0: carol, then alice's (older) before bob's second */
    CHECK_INT(pos_of(a, "c1"), 1);
    CHECK_INT(pos_of(a, "a3"), 2);
    CHECK_INT(pos_of(a, "b2"), 3);

    sbx_slots_pod(a, "a2", -1);
    sbx_slots_pod(a, "b1", -1);                        /* two slots free, nobody holds any */
    /* all hold none: carol never had a turn, alice's was before bob's */
    w.n = 0;
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 2);
    CHECK_STR(w.keys[0], "ns/c1");
    CHECK_STR(w.keys[1], "ns/a3");
    CHECK_INT(pos_of(a, "c1"), -1);
    CHECK_INT(pos_of(a, "a3"), -1);
    CHECK_INT(pos_of(a, "b2"), 1);
    sbx_slots_release(a, "b2", 1);                     /* b2 wants no pod after all */
    CHECK_INT(sbx_slots_waiting(a), 0);
    sbx_slots_free(a);
}

TEST(per_user_cap) {
    struct sbx_cap_limits l = {.max_running = 0, .max_running_per_user = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    sb(a, "a1", "alice", 1); sb(a, "a2", "alice", 2); sb(a, "b1", "bob", 3);
    run(a, "a1");
    CHECK_INT(pos_of(a, "a2"), 0);                         /* alice's own cap */
    CHECK_INT(pos_of(a, "b1"), -1);                        /* bob is not held up by alice */
    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 0);
    sbx_slots_pod(a, "a1", -1);
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/a2");
    CHECK_INT(pos_of(a, "a2"), -1);
    sbx_slots_free(a);

    /* with a global cap as well: alice's capped ones do not stand in anyone's way */
    struct sbx_cap_limits l2 = {.max_running = 3, .max_running_per_user = 2};
    a = sbx_slots_new(&l2);
    sb(a, "a1", "alice", 1); sb(a, "a2", "alice", 2); sb(a, "a3", "alice", 3); sb(a, "a4", "alice", 4);
    sb(a, "b1", "bob", 5);
    run(a, "a1");
    run(a, "a2");
    CHECK_INT(pos_of(a, "a3"), 0);
    CHECK_INT(pos_of(a, "a4"), 0);
    CHECK_INT(pos_of(a, "b1"), -1);
    sbx_slots_free(a);
}

/* Register Sandbox "<ns>/<uid>" of user, created at t. */
static void sbn(struct sbx_slots *a, const char *ns, const char *uid, const char *user, int64_t t) {
    char key[64];
    snprintf(key, sizeof(key), "%s/%s", ns, uid);
    CHECK_INT(sbx_slots_sandbox(a, uid, key, user, t, 0), 0);
}

TEST(a_user_is_counted_within_its_namespace) {
    /* the flag's per-user cap: tenant c's "bob" running takes nothing from tenant b's bob */
    struct sbx_cap_limits l = {.max_running = 0, .max_running_per_user = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    sbn(a, "tenant-c", "c1", "bob", 1); sbn(a, "tenant-c", "c2", "bob", 2);
    sbn(a, "tenant-b", "b1", "bob", 3); sbn(a, "tenant-b", "b2", "bob", 4);
    run(a, "c1");
    CHECK_INT(pos_of(a, "c2"), 0);                         /* c's bob is at his cap */
    CHECK_INT(admit_of(a, "b1"), SBX_ADMIT_YES);           /* b's bob holds nothing: he goes */
    CHECK_INT(sbx_slots_pod(a, "b1", +1), 0);
    sbx_slots_release(a, "b1", 0);
    CHECK_INT(pos_of(a, "b2"), 0);                         /* and then his own cap holds him */
    CHECK_INT(sbx_slots_user_held(a, "tenant-c", "bob", 0), 1);
    CHECK_INT(sbx_slots_user_held(a, "tenant-b", "bob", 0), 1);
    CHECK_INT(sbx_slots_user_held(a, "tenant-a", "bob", 0), 0);
    /* c's bob stops: c's second wakes, not b's */
    struct woken w = {.n = 0};
    sbx_slots_pod(a, "c1", -1);
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "tenant-c/c2");
    sbx_slots_free(a);

    /* a class's per-user cap (1): the same, bucket by bucket */
    struct sbx_cap_limits none = {0};
    a = sbx_slots_new(&none);
    sbn(a, "tenant-c", "c1", "bob", 1); CHECK(sbx_slots_class(a, "c1", "capped", 1, 0) >= 0);
    sbn(a, "tenant-c", "c2", "bob", 2); CHECK(sbx_slots_class(a, "c2", "capped", 1, 0) >= 0);
    sbn(a, "tenant-b", "b1", "bob", 3); CHECK(sbx_slots_class(a, "b1", "capped", 1, 0) >= 0);
    run(a, "c1");
    CHECK_INT(admit_of(a, "c2"), SBX_ADMIT_WAIT_CLASS);
    CHECK_INT(admit_of(a, "b1"), SBX_ADMIT_YES);
    sbx_slots_free(a);
}

/* A class whose operator counts users across namespaces (maxRunningPerUserScope: Cluster):
 * one userID's Sandboxes of that class in every namespace share its per-user cap; the
 * same userID's Sandboxes of another class, and the controller's own per-user cap, still
 * count within the namespace. */
TEST(a_class_may_count_a_user_across_namespaces) {
    struct sbx_cap_limits none = {0};
    struct sbx_slots *a = sbx_slots_new(&none);
    sbn(a, "tenant-c", "c1", "bob", 1); CHECK_INT(sbx_slots_class(a, "c1", "shared", 1, 1), 1);
    sbn(a, "tenant-b", "b1", "bob", 2); CHECK_INT(sbx_slots_class(a, "b1", "shared", 1, 1), 1);
    sbn(a, "tenant-b", "b2", "bob", 3); CHECK_INT(sbx_slots_class(a, "b2", "local", 1, 0), 1);
    sbn(a, "tenant-b", "b3", "alice", 4); CHECK_INT(sbx_slots_class(a, "b3", "shared", 1, 1), 1);
    run(a, "c1");
    CHECK_INT(admit_of(a, "b1"), SBX_ADMIT_WAIT_CLASS);    /* c's bob holds the class's one */
    CHECK_INT(admit_of(a, "b2"), SBX_ADMIT_YES);           /* another class: within tenant-b */
    CHECK_INT(admit_of(a, "b3"), SBX_ADMIT_YES);           /* another userID */
    /* c's bob stops: b's bob, of the same class, wakes */
    struct woken w = {.n = 0};
    sbx_slots_pod(a, "c1", -1);
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "tenant-b/b1");
    CHECK_INT(admit_of(a, "b1"), SBX_ADMIT_YES);
    CHECK_INT(sbx_slots_pod(a, "b1", +1), 0);
    sbx_slots_release(a, "b1", 0);
    CHECK_INT(admit_of(a, "c1"), SBX_ADMIT_WAIT_CLASS);    /* and now c's bob waits for b's */
    /* the operator sets the class back to Namespace: each bob has his own slot again */
    CHECK_INT(sbx_slots_class(a, "c1", "shared", 1, 0), 1);
    CHECK_INT(sbx_slots_class(a, "b1", "shared", 1, 0), 1);
    CHECK_INT(sbx_slots_class(a, "b1", "shared", 1, 0), 0);   /* idempotent */
    CHECK_INT(admit_of(a, "c1"), SBX_ADMIT_YES);
    sbx_slots_free(a);

    /* after a restart: a slot whose class no pass has resolved yet may be of the shared
     * class in any namespace, so the shared class admits nobody until it is resolved */
    a = sbx_slots_new(&none);
    sbn(a, "tenant-c", "c1", "bob", 1); CHECK_INT(sbx_slots_class(a, "c1", "shared", -1, 1), 1);
    CHECK_INT(sbx_slots_pod(a, "c1", +1), 0);              /* its pod, before its first pass */
    sbn(a, "tenant-b", "b1", "bob", 2); CHECK_INT(sbx_slots_class(a, "b1", "shared", 1, 1), 1);
    CHECK_INT(admit_of(a, "b1"), SBX_ADMIT_WAIT_CLASS);
    CHECK_INT(sbx_slots_class(a, "c1", "shared", 1, 1), 1);  /* c1's pass: it is the shared class */
    CHECK_INT(admit_of(a, "b1"), SBX_ADMIT_WAIT_CLASS);    /* and holds bob's one slot */
    CHECK_INT(sbx_slots_class(a, "c1", "other", 0, 0), 1);   /* the user moved it to another class */
    CHECK_INT(admit_of(a, "b1"), SBX_ADMIT_YES);
    sbx_slots_free(a);
}

/* `kubectl delete sandbox --cascade=orphan`: the pod runs on with no owner until the
 * ownerless sweep deletes it, and holds its user's slot (and its class's) meanwhile. */
TEST(an_ownerless_pod_holds_a_slot_until_it_goes) {
    struct sbx_cap_limits l = {.max_running = 2, .max_running_per_user = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    sbn(a, "tenant-b", "b1", "bob", 1);
    sbn(a, "tenant-b", "b2", "alice", 2);
    run(a, "b1");
    /* b1 is deleted with --cascade=orphan: its pod loses its owner (its slot moves to the
     * orphan in the same update), then the Sandbox goes */
    CHECK_INT(sbx_slots_orphan(a, "pod-1", "tenant-b/yao-sb-bob-b1", "bob", NULL, 1, 1), 0);
    CHECK_INT(sbx_slots_orphan(a, "pod-1", "tenant-b/yao-sb-bob-b1", "bob", NULL, 1, 1), 0);   /* idempotent */
    sbx_slots_pod(a, "b1", -1);
    sbx_slots_sandbox_gone(a, "b1");
    CHECK_INT(sbx_slots_held(a, 0), 1);
    CHECK_INT(sbx_slots_user_held(a, "tenant-b", "bob", 0), 1);
    sbn(a, "tenant-b", "b3", "bob", 3);
    CHECK_INT(admit_of(a, "b3"), SBX_ADMIT_WAIT_USER);     /* bob runs one still: his orphan */
    sbn(a, "tenant-c", "c1", "bob", 4);
    CHECK_INT(admit_of(a, "c1"), SBX_ADMIT_YES);           /* another tenant's bob is not held */
    CHECK_INT(admit_of(a, "b2"), SBX_ADMIT_WAIT);          /* the global cap (2) counts it too */
    /* the sweep deletes it: the slot is free, bob's next one goes */
    CHECK_INT(sbx_slots_orphan(a, "pod-1", NULL, NULL, NULL, 0, 0), 0);
    CHECK_INT(sbx_slots_held(a, 0), 1);
    CHECK_INT(sbx_slots_user_held(a, "tenant-b", "bob", 0), 0);
    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    sbx_slots_free(a);

    /* of a class with a per-user cap: it counts in the class's bucket of its user */
    struct sbx_cap_limits none = {0};
    a = sbx_slots_new(&none);
    sbn(a, "ns", "s1", "bob", 1); CHECK_INT(sbx_slots_class(a, "s1", "capped", 1, 0), 1);
    CHECK_INT(sbx_slots_orphan(a, "pod-9", "ns/yao-sb-bob-old", "bob", "capped", 0, 1), 0);
    CHECK_INT(admit_of(a, "s1"), SBX_ADMIT_WAIT_CLASS);
    CHECK_INT(sbx_slots_orphan(a, "pod-9", NULL, NULL, NULL, 0, 0), 0);
    CHECK_INT(admit_of(a, "s1"), SBX_ADMIT_YES);
    sbx_slots_free(a);
}

/* A pass may see a new pod in the cache before the pod's handler has counted it: the
 * reservation must hold the slot until the pod does (found by test_reconcile_workers
 * under load: a seventh pod under a cap of six). */
TEST(a_reservation_holds_until_its_pod_is_counted) {
    struct sbx_cap_limits l = {.max_running = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    sb(a, "s1", "alice", 1); sb(a, "s2", "bob", 2);
    int pos;
    CHECK_INT(sbx_slots_try(a, "s1", 0, 1000, &pos), SBX_ADMIT_YES);   /* reserved; its pod is made */
    sbx_slots_pod_seen(a, "s1");                           /* the pass sees it; the handler has not run */
    CHECK_INT(sbx_slots_held(a, 0), 1);
    CHECK_INT(admit_of(a, "s2"), SBX_ADMIT_WAIT);          /* so nobody else gets the slot */
    CHECK_INT(sbx_slots_pod(a, "s1", +1), 0);              /* the handler counts the pod */
    CHECK_INT(sbx_slots_held(a, 0), 1);
    CHECK_INT(sbx_slots_held(a, 5000), 1);                 /* the pod holds it, past the reservation */
    sbx_slots_pod_seen(a, "s1");                           /* idempotent */
    sbx_slots_pod(a, "s1", -1);
    CHECK_INT(sbx_slots_held(a, 5000), 0);                 /* and no reservation lingers */
    CHECK_INT(admit_of(a, "s2"), SBX_ADMIT_YES);
    sbx_slots_free(a);
}

/* A fork's copier holds its Sandbox's slot (its pod, +1); when it succeeded, the slot is
 * kept by a reservation while the copier goes, for the sandbox pod and no one else. */
TEST(a_copier_holds_the_slot_and_hands_it_to_the_pod) {
    struct sbx_cap_limits l = {.max_running = 0, .max_running_per_user = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    sb(a, "f1", "alice", 1); sb(a, "f2", "alice", 2); sb(a, "f3", "alice", 3); sb(a, "f4", "alice", 4);
    run(a, "f1");                                          /* f1's copier: admitted, then seen */
    CHECK_INT(sbx_slots_user_held(a, "ns", "alice", 0), 1);
    CHECK_INT(pos_of(a, "f2"), 0);                         /* the other forks wait: no copier */
    CHECK_INT(pos_of(a, "f3"), 0);
    CHECK_INT(pos_of(a, "f4"), 0);
    CHECK_INT(sbx_slots_keep(a, "f2", 0, FAR), 0);         /* holds nothing: nothing kept */
    CHECK_INT(sbx_slots_keep(a, "f1", 0, FAR), 1);         /* f1's copy succeeded */
    sbx_slots_pod(a, "f1", -1);                            /* its copier goes */
    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 0);       /* nobody: the slot is f1's still */
    CHECK_INT(pos_of(a, "f2"), 0);
    CHECK_INT(admit_of(a, "f1"), SBX_ADMIT_YES);           /* its sandbox pod is admitted */
    CHECK_INT(sbx_slots_pod(a, "f1", +1), 0);
    sbx_slots_release(a, "f1", 0);
    CHECK_INT(sbx_slots_user_held(a, "ns", "alice", 0), 1);
    sbx_slots_pod(a, "f1", -1);                            /* f1 stops: f2's copy may start */
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/f2");
    CHECK_INT(sbx_slots_keep(a, "f2", 0, 5), 0);
    sbx_slots_free(a);

    /* a kept slot is a reservation: it lapses if the pod never comes */
    struct sbx_cap_limits g = {.max_running = 1, .max_running_per_user = 0};
    a = sbx_slots_new(&g);
    sb(a, "f1", "alice", 1); sb(a, "b1", "bob", 2);
    run(a, "f1");
    CHECK_INT(sbx_slots_keep(a, "f1", 0, 100), 1);
    sbx_slots_pod(a, "f1", -1);
    CHECK_INT(sbx_slots_held(a, 50), 1);
    CHECK_INT(sbx_slots_held(a, 100), 0);
    int pos;
    CHECK_INT(sbx_slots_try(a, "b1", 100, FAR, &pos), SBX_ADMIT_YES);
    sbx_slots_free(a);
}

TEST(a_sandbox_that_no_longer_wants_a_pod_leaves_the_line) {
    struct sbx_cap_limits l = {.max_running = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    sb(a, "s1", "alice", 1); sb(a, "s2", "bob", 2); sb(a, "s3", "carol", 3);
    run(a, "s1");
    CHECK_INT(pos_of(a, "s2"), 1);
    CHECK_INT(pos_of(a, "s3"), 2);
    sbx_slots_release(a, "s2", 1);                     /* paused */
    CHECK_INT(pos_of(a, "s3"), 1);
    sbx_slots_sandbox_gone(a, "s3");
    CHECK_INT(sbx_slots_waiting(a), 0);
    /* the status says it waits: after a restart it keeps its place before its first pass */
    CHECK_INT(sbx_slots_sandbox(a, "s2", "ns/s2", "bob", 2, 1), 0);
    CHECK_INT(sbx_slots_waiting(a), 1);
    sbx_slots_pod(a, "s1", -1);
    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/s2");
    sbx_slots_free(a);
}

TEST(a_changed_user_moves_the_slot) {
    struct sbx_cap_limits l = {.max_running = 2, .max_running_per_user = 1};
    struct sbx_slots *a = sbx_slots_new(&l);
    sb(a, "s1", "alice", 1);
    run(a, "s1");
    CHECK_INT(sbx_slots_user_held(a, "ns", "alice", 0), 1);
    sb(a, "s1", "bob", 1);
    CHECK_INT(sbx_slots_user_held(a, "ns", "alice", 0), 0);
    CHECK_INT(sbx_slots_user_held(a, "ns", "bob", 0), 1);
    CHECK_INT(sbx_slots_held(a, 0), 1);
    sbx_slots_free(a);
}

/* Register Sandbox "ns/<uid>" of user in class cls (cap: its maxRunningPerUser). */
static void sbc(struct sbx_slots *a, const char *uid, const char *user, int64_t t, const char *cls, int cap) {
    sb(a, uid, user, t);
    CHECK(sbx_slots_class(a, uid, cls, cap, 0) >= 0);
}

TEST(class_cap_is_per_user_and_per_class) {
    /* no controller-wide cap at all: the classes' caps alone (small: 1, medium: 2) */
    struct sbx_cap_limits l = {0};
    struct sbx_slots *a = sbx_slots_new(&l);
    sbc(a, "as1", "alice", 1, "small", 1); sbc(a, "as2", "alice", 2, "small", 1);
    sbc(a, "as3", "alice", 3, "small", 1);
    sbc(a, "am1", "alice", 4, "medium", 2); sbc(a, "am2", "alice", 5, "medium", 2);
    sbc(a, "am3", "alice", 6, "medium", 2);
    sbc(a, "bs1", "bob", 7, "small", 1); sbc(a, "bs2", "bob", 8, "small", 1);
    sbc(a, "an1", "alice", 9, NULL, 0);
    run(a, "as1");
    CHECK_INT(pos_of(a, "as2"), 0);                        /* alice's one small slot is taken */
    CHECK_INT(pos_of(a, "as3"), 0);
    run(a, "am1");                                         /* not held up by the small class */
    run(a, "am2");
    CHECK_INT(pos_of(a, "am3"), 0);                        /* two in medium */
    run(a, "an1");                                         /* nor is one without a class */
    run(a, "bs1");                                         /* bob's small slot is his own */
    CHECK_INT(pos_of(a, "bs2"), 0);
    CHECK_INT(sbx_slots_user_held(a, "ns", "alice", 0), 4);
    CHECK_INT(sbx_slots_waiting(a), 4);
    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 0);   /* nobody may go */
    /* alice's medium slot frees: her medium one wakes, not her small ones nor bob's */
    sbx_slots_pod(a, "am1", -1);
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/am3");
    CHECK_INT(pos_of(a, "as2"), 0);
    CHECK_INT(pos_of(a, "am3"), -1);
    /* her small slot frees: the oldest of her small ones wakes, and only it */
    sbx_slots_pod(a, "as1", -1);
    w.n = 0;
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/as2");
    CHECK_INT(pos_of(a, "as3"), 0);
    CHECK_INT(pos_of(a, "as2"), -1);
    CHECK_INT(pos_of(a, "as3"), 0);                        /* as2's reservation holds the slot */
    /* the class raises its cap to 2: alice's third small one may go, bob's second too */
    CHECK_INT(sbx_slots_class(a, "as3", "small", 2, 0), 1);
    CHECK_INT(sbx_slots_class(a, "bs2", "small", 2, 0), 1);
    CHECK_INT(sbx_slots_class(a, "bs2", "small", 2, 0), 0);   /* idempotent */
    w.n = 0;
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 2);
    CHECK_INT(pos_of(a, "as3"), -1);
    CHECK_INT(pos_of(a, "bs2"), -1);
    CHECK_INT(sbx_slots_waiting(a), 0);
    sbx_slots_free(a);
}

TEST(class_change_and_sandbox_gone_move_the_slot) {
    struct sbx_cap_limits l = {0};
    struct sbx_slots *a = sbx_slots_new(&l);
    sbc(a, "s1", "alice", 1, "small", 1); sbc(a, "s2", "alice", 2, "small", 1);
    sbc(a, "m1", "alice", 3, "medium", 2); sbc(a, "m2", "alice", 4, "medium", 2);
    run(a, "s1");
    run(a, "m1");
    CHECK_INT(pos_of(a, "s2"), 0);
    /* s1 (running) moves to medium: its slot goes with it, so small has room (s2 goes)
     * and medium is full (m2 waits) */
    CHECK_INT(sbx_slots_class(a, "s1", "medium", 2, 0), 1);
    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/s2");
    CHECK_INT(pos_of(a, "m2"), 0);
    CHECK_INT(pos_of(a, "s2"), -1);
    run(a, "s2");   /* (already admitted: its pod comes) */
    /* a waiting one that moves to a class with room is in line at once */
    sbc(a, "x1", "alice", 5, "small", 1);
    CHECK_INT(pos_of(a, "x1"), 0);
    CHECK_INT(sbx_slots_class(a, "x1", "large", 0, 0), 1);   /* no cap in large */
    w.n = 0;
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/x1");
    CHECK_INT(pos_of(a, "x1"), -1);
    /* a Sandbox gone frees its class's slot: the next of that class wakes */
    sbx_slots_sandbox_gone(a, "m1");
    w.n = 0;
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/m2");
    CHECK_INT(pos_of(a, "m2"), -1);
    /* a waiting one gone leaves no trace; a changed user takes its class along */
    sbc(a, "s3", "alice", 6, "small", 1);
    CHECK_INT(pos_of(a, "s3"), 0);
    sbx_slots_sandbox_gone(a, "s3");
    CHECK_INT(sbx_slots_waiting(a), 0);
    sbc(a, "s4", "alice", 7, "small", 1);
    CHECK_INT(pos_of(a, "s4"), 0);
    CHECK_INT(sbx_slots_sandbox(a, "s4", "ns/s4", "bob", 7, 0), 0);   /* bob's small: empty */
    w.n = 0;
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/s4");
    CHECK_INT(pos_of(a, "s4"), -1);
    sbx_slots_pod(a, "s1", -1);
    sbx_slots_pod(a, "s2", -1);
    sbx_slots_free(a);
}

TEST(after_a_restart_a_class_cap_waits_for_the_classes_of_running_ones) {
    /* the controller restarts: alice's running r1 (its pod is in the cache) takes the
     * default class, which no pass has told yet; her new w1 of that class (cap 1) must
     * not start beside it */
    struct sbx_cap_limits l = {0};
    struct sbx_slots *a = sbx_slots_new(&l);
    sb(a, "r1", "alice", 1);
    CHECK_INT(sbx_slots_pod(a, "r1", +1), 0);
    sbc(a, "w1", "alice", 2, "dflt", 1);
    CHECK_INT(pos_of(a, "w1"), 0);
    CHECK_INT(sbx_slots_class(a, "r1", "dflt", 1, 0), 1);   /* r1's pass: it is of that class */
    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 0);
    CHECK_INT(pos_of(a, "w1"), 0);
    CHECK_INT(sbx_slots_class(a, "r1", "dflt", 1, 0), 0);
    /* a hint (the className a Sandbox names, first seen) does not resolve: r2 names
     * another class, and until its pass w1... still waits for r1's slot in dflt */
    sb(a, "r2", "alice", 3);
    CHECK_INT(sbx_slots_pod(a, "r2", +1), 0);
    CHECK_INT(sbx_slots_class(a, "r2", "other", -1, 0), 1);
    sbx_slots_pod(a, "r1", -1);                        /* r1 stopped */
    CHECK_INT(pos_of(a, "w1"), 0);                         /* r2 is not resolved yet */
    CHECK_INT(sbx_slots_class(a, "r2", "other", 0, 0), 1);   /* r2's pass: other class */
    w.n = 0;
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/w1");
    CHECK_INT(pos_of(a, "w1"), -1);
    sbx_slots_pod(a, "r2", -1);
    sbx_slots_free(a);
}

TEST(class_cap_with_the_global_and_the_flag_caps) {
    /* 3 slots in all, 2 per user by the flag, small: 1 per user */
    struct sbx_cap_limits l = {.max_running = 3, .max_running_per_user = 2};
    struct sbx_slots *a = sbx_slots_new(&l);
    sbc(a, "as1", "alice", 1, "small", 1); sbc(a, "as2", "alice", 2, "small", 1);
    sbc(a, "am1", "alice", 3, "medium", 2); sbc(a, "am2", "alice", 4, "medium", 2);
    sbc(a, "bs1", "bob", 5, "small", 1); sbc(a, "bm1", "bob", 6, "medium", 2);
    sbc(a, "cm1", "carol", 7, "medium", 2);
    run(a, "as1");
    CHECK_INT(pos_of(a, "as2"), 0);                        /* the class: out of the line */
    CHECK_INT(admit_of(a, "as2"), SBX_ADMIT_WAIT_CLASS);   /* ... and it says which cap */
    run(a, "am1");
    CHECK_INT(pos_of(a, "am2"), 0);                        /* the flag: alice holds 2 */
    CHECK_INT(admit_of(a, "am2"), SBX_ADMIT_WAIT_USER);
    run(a, "bs1");                                         /* the third slot */
    /* the global line holds bob's medium and carol's, not alice's capped ones */
    CHECK_INT(pos_of(a, "cm1"), 1);                        /* carol holds none */
    CHECK_INT(pos_of(a, "bm1"), 2);
    CHECK_INT(sbx_slots_waiting(a), 4);
    /* alice's small slot frees: it is a global slot too, and carol (holding none) is first
     * for it; alice's second small one is within the class's cap and the flag's (she holds
     * 1 of 2) now, so it is in the global line, behind carol */
    sbx_slots_pod(a, "as1", -1);
    struct woken w = {.n = 0};
    CHECK_INT(sbx_slots_wake(a, 0, collect, &w), 1);
    CHECK_STR(w.keys[0], "ns/cm1");
    CHECK(pos_of(a, "as2") > 1);
    CHECK_INT(pos_of(a, "cm1"), -1);
    CHECK_INT(pos_of(a, "am2"), 0);                        /* still out: the class's slot is not medium's */
    sbx_slots_free(a);
}

/* ---- reclaim ---------------------------------------------------------------------------- */

#define MINUTE 60000

TEST(reclaim_picks_the_longest_idle_only_when_someone_can_be_admitted) {
    /* cap 2: alice's a1 (idle 40 min) and bob's b1 (idle 50 min) run, both reclaimable
     * after 30 min; carol's c1 arrives */
    struct sbx_cap_limits l = {.max_running = 2};
    struct sbx_slots *a = sbx_slots_new(&l);
    struct sbx_reclaim_victim v[4];
    int64_t now = 100 * MINUTE, next;
    sb(a, "a1", "alice", 1); sb(a, "b1", "bob", 2); sb(a, "c1", "carol", 3);
    run(a, "a1"); run(a, "b1");
    sbx_slots_reclaimable(a, "a1", 30 * MINUTE, now - 40 * MINUTE);
    sbx_slots_reclaimable(a, "b1", 30 * MINUTE, now - 50 * MINUTE);
    /* nobody waits yet: nothing */
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + MINUTE, v, 4, &next), 0);
    CHECK_INT(pos_of(a, "c1"), 1);                 /* c1 waits, first in line */
    /* one waits: one victim, the longest idle, however many are asked for */
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + MINUTE, v, 4, &next), 1);
    CHECK_STR(v[0].uid, "b1");
    CHECK_STR(v[0].key, "ns/b1");
    CHECK_INT(v[0].last_used_ms, now - 50 * MINUTE);
    CHECK_INT(v[0].after_ms, 30 * MINUTE);
    /* under way: not chosen again, and no second victim for the same waiter */
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + MINUTE, v, 4, &next), 0);
    /* the fresh read said no (b1 was touched): cancelled; its pass reports the touch */
    sbx_slots_reclaim_cancel(a, "b1");
    sbx_slots_reclaimable(a, "b1", 30 * MINUTE, now);
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + 40 * MINUTE, v, 4, &next), 1);
    CHECK_STR(v[0].uid, "a1");
    /* a1's pass reports the stop (not reclaimable now) while its pod is still there; 31
     * minutes on, b1 is idle past its threshold again: a1 is still under way, so b1 is
     * not taken for the same waiter */
    sbx_slots_reclaimable(a, "a1", 0, now - 40 * MINUTE);
    CHECK_INT(sbx_slots_reclaim_pick(a, now + 31 * MINUTE, now + 32 * MINUTE, v, 4, &next), 0);
    /* a1's pod stops: its slot is free, c1 is admitted, nothing more is reclaimed */
    sbx_slots_pod(a, "a1", -1);
    sbx_slots_reclaimable(a, "a1", 0, now - 40 * MINUTE);
    CHECK_INT(pos_of(a, "c1"), -1);
    CHECK_INT(sbx_slots_reclaim_pick(a, now + 31 * MINUTE, now + 32 * MINUTE, v, 4, &next), 0);
    sbx_slots_free(a);
}

TEST(reclaim_respects_thresholds_and_kinds) {
    struct sbx_cap_limits l = {.max_running = 3};
    struct sbx_slots *a = sbx_slots_new(&l);
    struct sbx_reclaim_victim v[4];
    int64_t now = 100 * MINUTE, next = -1;
    sb(a, "r1", "u1", 1); sb(a, "r2", "u2", 2); sb(a, "r3", "u3", 3);
    sb(a, "w1", "x", 4); sb(a, "w2", "y", 5);
    run(a, "r1"); run(a, "r2"); run(a, "r3");
    sbx_slots_reclaimable(a, "r1", 30 * MINUTE, now - 10 * MINUTE);   /* used recently */
    sbx_slots_reclaimable(a, "r2", 0, now - 90 * MINUTE);             /* not reclaimable */
    sbx_slots_reclaimable(a, "r3", 60 * MINUTE, now - 45 * MINUTE);   /* its class: 1 h */
    CHECK_INT(pos_of(a, "w1"), 1);
    CHECK_INT(pos_of(a, "w2"), 2);
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + MINUTE, v, 4, &next), 0);
    CHECK_INT(next, now + 15 * MINUTE);          /* r3 first, in 15 min */
    /* later both are past their threshold: two waiting, two victims, longest idle first */
    now += 30 * MINUTE;
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + MINUTE, v, 4, &next), 2);
    CHECK_STR(v[0].uid, "r3");
    CHECK_STR(v[1].uid, "r1");
    /* a reclaim under way ends when its time is up (the pod never went) */
    CHECK_INT(sbx_slots_reclaim_pick(a, now + 2 * MINUTE, now + 3 * MINUTE, v, 1, &next), 1);
    CHECK_STR(v[0].uid, "r3");
    /* a Sandbox gone is no candidate */
    sbx_slots_sandbox_gone(a, "r3");
    sbx_slots_sandbox_gone(a, "r1");
    CHECK_INT(sbx_slots_reclaim_pick(a, now + 10 * MINUTE, now + 11 * MINUTE, v, 4, &next), 0);
    sbx_slots_free(a);
}

TEST(reclaim_only_for_the_global_cap_and_those_it_admits) {
    /* no global cap: never */
    struct sbx_cap_limits l0 = {.max_running_per_user = 1};
    struct sbx_slots *a = sbx_slots_new(&l0);
    struct sbx_reclaim_victim v[4];
    int64_t now = 100 * MINUTE;
    sb(a, "a1", "alice", 1); sb(a, "a2", "alice", 2);
    run(a, "a1");
    sbx_slots_reclaimable(a, "a1", MINUTE, now - 50 * MINUTE);
    CHECK_INT(pos_of(a, "a2"), 0);
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + MINUTE, v, 4, NULL), 0);
    sbx_slots_free(a);
    /* global cap 1, per user 1: alice's a2 waits for her own cap, a freed global slot would
     * not admit it: nothing is reclaimed for it */
    struct sbx_cap_limits l1 = {.max_running = 1, .max_running_per_user = 1};
    a = sbx_slots_new(&l1);
    sb(a, "a1", "alice", 1); sb(a, "a2", "alice", 2);
    run(a, "a1");
    sbx_slots_reclaimable(a, "a1", MINUTE, now - 50 * MINUTE);
    CHECK_INT(pos_of(a, "a2"), 0);
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + MINUTE, v, 4, NULL), 0);
    /* bob's b1 is admissible: one victim */
    sb(a, "b1", "bob", 3);
    CHECK_INT(pos_of(a, "b1"), 1);
    CHECK_INT(sbx_slots_reclaim_pick(a, now, now + MINUTE, v, 4, NULL), 1);
    CHECK_STR(v[0].uid, "a1");
    sbx_slots_free(a);
}

TEST(deciding_does_not_walk_the_pods) {
    /* 20000 pods of 20000 running Sandboxes and 2000 waiting of 4 users: each decision
     * looks at the 4 users, not at the pods; 2000 decisions take well under a second */
    struct sbx_cap_limits l = {.max_running = 20000};
    struct sbx_slots *a = sbx_slots_new(&l);
    char uid[32], key[40], user[16];
    for (int i = 0; i < 20000; i++) {
        snprintf(uid, sizeof(uid), "r%d", i);
        snprintf(key, sizeof(key), "ns/r%d", i);
        snprintf(user, sizeof(user), "u%d", i % 97);
        sbx_slots_sandbox(a, uid, key, user, i, 0);
        sbx_slots_pod(a, uid, +1);
    }
    CHECK_INT(sbx_slots_held(a, 0), 20000);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int waits = 0, pos;
    for (int i = 0; i < 2000; i++) {
        snprintf(uid, sizeof(uid), "w%d", i);
        snprintf(key, sizeof(key), "ns/w%d", i);
        snprintf(user, sizeof(user), "waiter%d", i % 4);
        sbx_slots_sandbox(a, uid, key, user, 100000 + i, 0);
        waits += sbx_slots_try(a, uid, 0, FAR, &pos) == SBX_ADMIT_WAIT;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    CHECK_INT(waits, 2000);
    CHECK_INT(sbx_slots_waiting(a), 2000);
    printf("  2000 decisions with 20000 pods held: %.1f ms\n", ms);
    CHECK(ms < 1000);
    sbx_slots_free(a);
}
