/* tests/unit/test_reconcile_reclaim.c — a SandboxClass's spec.reclaim (sandbox/io/reclaim.c,
 * capacity.c) through single passes against the in-process fake API server (fakeapi.h,
 * reconcile_env.h), with a running cap of 1: a Sandbox that waits in line (Pending,
 * CapacityExceeded) has the idle running Sandbox of a reclaimable class stopped for
 * it — read fresh by name, the stop recorded in its status (Stopping, Reclaimed) with the
 * version read as precondition, its pod deleted with its uid, its claim kept — and is
 * admitted once that pod is gone; the reclaimed one stays stopped (Reclaimed). A reclaim whose status write meets a 409 (touched meanwhile) stops nothing. */
#include "reconcile_env.h"

static void cap_one(struct sbx_controller_options *o) { o->limits.max_running = 1; }

#define RECLAIM_CLASS "recl"

/* The class (idle after 1 minute), once the controller's class cache has it. 0 or -1. */
static int class_ready(struct env *e) {
    cJSON *have = fakeapi_get(&e->fa, CLASS_COLL "/" RECLAIM_CLASS);
    int seeded = have != NULL;
    cJSON_Delete(have);
    if (!seeded && fakeapi_seed(&e->fa, CLASS_COLL,
                                "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"SandboxClass\","
                                "\"metadata\":{\"name\":\"" RECLAIM_CLASS "\"},"
                                "\"spec\":{\"reclaim\":{\"idleAfter\":\"1m\"}}}") < 0)
        return -1;
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(5))
        if (informer_count(sbx_controller_cache(e->ctl, SBX_CACHE_SANDBOX_CLASSES)) >= 1) return 0;
    return -1;
}

/* A session Sandbox `name` of user, class RECLAIM_CLASS, brought up to Running. */
static int running(struct env *e, struct names *n, const char *name, const char *user) {
    char ph[32];
    names_of(n, name, user, "c1");
    if (seed_sandbox(e, name, user, "c1", ",\"className\":\"" RECLAIM_CLASS "\",\"lifecycle\":\"session\"", NULL) < 0 ||
        pass(e, n, NULL) != 0 || pod_running(e, n->pod, 1000) < 0 || pass(e, n, NULL) != 0)
        return -1;
    return strcmp(stored_str(e, n->sb, "status.phase", ph, sizeof ph), "Running") ? -1 : 0;
}

TEST(waiting_sandbox_reclaims_the_idle_one_and_starts_when_its_pod_is_gone) {
    struct env *e = env_tweaked(cap_one);
    struct names a, b;
    char v[256], pod_uid[64];
    if (!e || class_ready(e) < 0 || running(e, &a, "s-idle", "nora") < 0) { CHECK(!"running"); return; }
    cJSON *pod = fakeapi_get(&e->fa, a.pod);
    snprintf(pod_uid, sizeof pod_uid, "%s", kj_str(pod, "metadata.uid"));
    cJSON_Delete(pod);

    /* Ten minutes on (idle past the class's minute, not past the 30 m idle timeout), a's
     * pass reports it reclaimable; then b arrives and finds the cap taken. */
    kj_now_offset_set(10 * 60 * 1000);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &a, NULL), 0);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 0);
    names_of(&b, "s-wait", "omar", "c1");
    CHECK_INT(seed_sandbox(e, "s-wait", "omar", "c1", ",\"className\":\"" RECLAIM_CLASS "\"", NULL), 0);
    cJSON *sa = fakeapi_get(&e->fa, a.sb);
    char a_rv[32];
    snprintf(a_rv, sizeof a_rv, "%s", kj_str(sa, "metadata.resourceVersion"));
    cJSON_Delete(sa);
    struct sbx_controller_stats before, after;
    sbx_controller_stats(e->ctl, &before);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &b, NULL), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);
    CHECK_STR(stored_str(e, b.sb, "status.phase", v, sizeof v), "Pending");
    CHECK_STR(ready_reason(e, b.sb, v, sizeof v), "CapacityExceeded");
    /* a: read fresh (a list by name), stop recorded fenced on that version, pod deleted. */
    CHECK(fakeapi_count(&e->fa, m, "GET", SBX_COLL) >= 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", a.status, 200), 1);
    cJSON *st = fakeapi_last_body(&e->fa, m, "PATCH", a.status);
    CHECK_STR(kj_str(st, "metadata.resourceVersion"), a_rv);
    CHECK_STR(kj_str(st, "status.phase"), "Stopping");
    cJSON_Delete(st);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", a.pod, 200), 1);
    cJSON *d = fakeapi_last_body(&e->fa, m, "DELETE", a.pod);
    CHECK_STR(precondition(d, "uid"), pod_uid);
    cJSON_Delete(d);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", a.pvc), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", a.sb), 0);
    CHECK(!stored_exists(e, a.pod));
    CHECK(stored_exists(e, a.pvc));
    CHECK_STR(ready_reason(e, a.sb, v, sizeof v), "Reclaimed");
    sbx_controller_stats(e->ctl, &after);
    CHECK_INT(after.reclaims - before.reclaims, 1);

    /* a's pod gone: b is admitted and gets its pod; a stays stopped, Reclaimed. */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &a, NULL), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);
    CHECK_STR(stored_str(e, a.sb, "status.phase", v, sizeof v), "Stopped");
    CHECK_STR(ready_reason(e, a.sb, v, sizeof v), "Reclaimed");
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &b, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    CHECK(stored_exists(e, b.pod));
    CHECK_STR(stored_str(e, b.sb, "status.phase", v, sizeof v), "Creating");

    /* Cleanup for the next test: both go (their pods and claims with them). */
    const char *paths[] = {a.sb, a.pvc, b.sb, b.pod, b.pvc};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) fakeapi_remove(&e->fa, paths[i]);
}

TEST(reclaim_meeting_a_touch_stops_nothing) {
    struct env *e = env_tweaked(cap_one);
    struct names a, b;
    char v[64];
    if (!e || class_ready(e) < 0 || running(e, &a, "s-busy", "pia") < 0) { CHECK(!"running"); return; }
    kj_now_offset_set(10 * 60 * 1000);
    CHECK_INT(pass(e, &a, NULL), 0);
    names_of(&b, "s-next", "quinn", "c1");
    CHECK_INT(seed_sandbox(e, "s-next", "quinn", "c1", ",\"className\":\"" RECLAIM_CLASS "\"", NULL), 0);
    /* The stop's status write finds a changed since the read (a touch): 409. */
    fakeapi_fault(&e->fa, "PATCH", a.status, 409, -1, 1);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &b, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", a.status, 409), 1);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", a.pod), 0);
    CHECK(stored_exists(e, a.pod));
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);
    CHECK_STR(stored_str(e, b.sb, "status.phase", v, sizeof v), "Pending");
    CHECK_STR(stored_str(e, a.sb, "status.phase", v, sizeof v), "Running");
}
