/* tests/unit/test_reconcile_lifecycle.c — single reconcile passes (sandbox/manager/reconcile.c,
 * status.c) against the in-process fake API server (fakeapi.h, reconcile_env.h), one per
 * decision of a Sandbox's life: create (claim + pod + status), a second pass that changes
 * nothing, Running once the pod is Ready; stop by spec.paused and wake by clearing it;
 * stop of an idle long-running Sandbox and wake by a touch (last-used-at); removal of an
 * idle session (the Sandbox deleted with uid and resourceVersion preconditions); a spec
 * change (resources) that replaces the pod and keeps the claim; an invalid spec that makes
 * nothing; a create refused as the namespace goes (a failure of that typed reason, an RBAC
 * refusal in the same words only Forbidden). Each asserts on the requests made and on the objects left in the store. */
#include "reconcile_env.h"

/* A Sandbox `name` of (user, c1) brought up to Running: created, one pass, pod Ready,
 * one more pass. extra: spec members. 0 or -1. */
static int bring_up(struct env *e, struct names *n, const char *name, const char *user, const char *extra) {
    char ph[32];
    names_of(n, name, user, "c1");
    if (seed_sandbox(e, name, user, "c1", extra, NULL) < 0 || pass(e, n, NULL) != 0) return -1;
    if (pod_running(e, n->pod, 1000) < 0 || claim_bound(e, n->pvc) < 0 || pass(e, n, NULL) != 0) return -1;
    return strcmp(stored_str(e, n->sb, "status.phase", ph, sizeof ph), "Running") ? -1 : 0;
}

TEST(create_makes_claim_pod_and_status_then_nothing_more) {
    struct env *e = env();
    struct names n;
    char v[256];
    names_of(&n, "s-create", "alice", "c1");
    if (!e) { CHECK(!"environment started"); return; }
    CHECK_INT(seed_sandbox(e, "s-create", "alice", "c1", "", NULL), 0);
    cJSON *sb = fakeapi_get(&e->fa, n.sb);
    const char *uid = kj_str(sb, "metadata.uid");

    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", PVC_COLL, 201), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 200), 1);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 3);
    /* The status write is conditional on the version the decision saw. */
    cJSON *st = fakeapi_last_body(&e->fa, m, "PATCH", n.status);
    CHECK_STR(kj_str(st, "metadata.resourceVersion"), kj_str(sb, "metadata.resourceVersion"));
    cJSON_Delete(st);

    cJSON *pod = fakeapi_get(&e->fa, n.pod), *pvc = fakeapi_get(&e->fa, n.pvc);
    CHECK(pod && pvc);
    CHECK(controlled_by(pod, uid));
    CHECK(controlled_by(pvc, uid));
    CHECK_STR(kj_map_get(pod, "metadata.labels", SBX_LABEL_NAME), "s-create");
    CHECK_STR(kj_map_get(pod, "metadata.annotations", SBX_ANN_USER_ID), "alice");
    /* The pod mounts the claim just made. */
    const cJSON *vol;
    int mounts_claim = 0;
    cJSON_ArrayForEach(vol, kj_path(pod, "spec.volumes")) {
        const char *c = kj_str(vol, "persistentVolumeClaim.claimName");
        if (c && !strcmp(c, n.claim_name)) mounts_claim = 1;
    }
    CHECK(mounts_claim);
    cJSON_Delete(pod);
    cJSON_Delete(pvc);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Creating");
    CHECK_STR(stored_str(e, n.sb, "status.podName", v, sizeof v), n.pod_name);

    /* Level-triggered: the same state again asks for nothing. */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 0);
    if (fakeapi_count_writes(&e->fa, m)) fakeapi_dump(&e->fa, m);

    /* The kubelet reports the pod Ready: Running, written once. */
    CHECK_INT(pod_running(e, n.pod, 1000), 0);
    CHECK_INT(claim_bound(e, n.pvc), 0);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 200), 1);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Running");
    CHECK(*stored_str(e, n.sb, "status.startedAt", v, sizeof v));
    CHECK(stored_exists(e, n.pod));
    CHECK(stored_exists(e, n.pvc));   /* the workspace stays */
    cJSON_Delete(sb);
}

/* A create the API server refuses because the namespace is being deleted fails the pass
 * with that reason (the manager then holds the namespace instead of backing off); an RBAC
 * refusal in the same words is only Forbidden. */
TEST(a_create_refused_as_the_namespace_goes_fails_with_that_reason) {
    struct env *e = env();
    struct names n;
    names_of(&n, "s-nsgoing", "nora", "c1");
    if (!e) { CHECK(!"environment started"); return; }
    CHECK_INT(seed_sandbox(e, "s-nsgoing", "nora", "c1", "", NULL), 0);
    static const char refusal[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"code\":403,"
        "\"message\":\"persistentvolumeclaims \\\"x\\\" is forbidden: unable to create new content in namespace t "
        "because it is being terminated\",\"details\":{\"kind\":\"persistentvolumeclaims\",\"causes\":[{\"reason\":"
        "\"NamespaceTerminating\",\"message\":\"namespace t is being terminated\",\"field\":\"metadata.namespace\"}]}}";
    static const char rbac[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"code\":403,"
        "\"message\":\"unable to create new content in namespace t because it is being terminated\"}";
    settle(e, &n);
    struct kube_error err;
    fakeapi_fault_body(&e->fa, "POST", PVC_COLL, 403, refusal, 1);
    struct sbx_outcome r = sbx_reconcile(e->ctl, n.key, &err);
    CHECK_INT(r.kind, SBX_OUTCOME_FAILED);
    CHECK_INT(err.status, 403);
    CHECK_INT(err.reason, KUBE_REASON_NAMESPACE_TERMINATING);
    fakeapi_fault_body(&e->fa, "POST", PVC_COLL, 403, rbac, 1);
    r = sbx_reconcile(e->ctl, n.key, &err);
    CHECK_INT(r.kind, SBX_OUTCOME_FAILED);
    CHECK_INT(err.reason, KUBE_REASON_FORBIDDEN);
    fakeapi_clear_faults(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);   /* the namespace stays after all: served */
}

TEST(pause_stops_the_pod_keeps_the_claim_and_unpause_wakes_it) {
    struct env *e = env();
    struct names n;
    char v[256];
    if (!e || bring_up(e, &n, "s-pause", "bob", "") < 0) { CHECK(!"running"); return; }
    cJSON *pod = fakeapi_get(&e->fa, n.pod);
    char pod_uid[64];
    snprintf(pod_uid, sizeof pod_uid, "%s", kj_str(pod, "metadata.uid") ? kj_str(pod, "metadata.uid") : "?");
    cJSON_Delete(pod);

    CHECK_INT(fakeapi_patch(&e->fa, n.sb, "{\"spec\":{\"paused\":true}}"), 0);
    cJSON *sb = fakeapi_get(&e->fa, n.sb);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    /* The stop is recorded first, fenced on the version decided on; then the pod goes,
     * with its uid as precondition. */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 200), 1);
    cJSON *st = fakeapi_last_body(&e->fa, m, "PATCH", n.status);
    CHECK_STR(kj_str(st, "metadata.resourceVersion"), kj_str(sb, "metadata.resourceVersion"));
    CHECK_STR(kj_str(st, "status.phase"), "Stopping");
    cJSON_Delete(st);
    cJSON_Delete(sb);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    cJSON *del = fakeapi_last_body(&e->fa, m, "DELETE", n.pod);
    CHECK_STR(precondition(del, "uid"), pod_uid);
    cJSON_Delete(del);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", n.pvc), 0);
    CHECK(!stored_exists(e, n.pod));
    CHECK(stored_exists(e, n.pvc));   /* the workspace stays */
    CHECK_STR(ready_reason(e, n.sb, v, sizeof v), "Paused");

    /* Pod gone: Stopped, and nothing is created while paused. */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Stopped");
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);

    /* Unpaused: a new pod on the same claim. */
    CHECK_INT(fakeapi_patch(&e->fa, n.sb, "{\"spec\":{\"paused\":false}}"), 0);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", PVC_COLL), 0);
    pod = fakeapi_get(&e->fa, n.pod);
    CHECK(pod && strcmp(kj_str(pod, "metadata.uid"), pod_uid) != 0);
    cJSON_Delete(pod);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Creating");
}

TEST(idle_long_running_stops_and_a_touch_wakes_it) {
    struct env *e = env();
    struct names n;
    char v[256], ann[256];
    if (!e || bring_up(e, &n, "s-idle", "carol", ",\"lifecycle\":\"long-running\",\"idleTimeout\":\"10m\"") < 0) {
        CHECK(!"running");
        return;
    }
    /* Not idle yet (a long-running Sandbox is idle after 24 idleTimeouts): nothing
     * happens. */
    size_t m = fakeapi_mark(&e->fa);
    int64_t rq = 0;
    CHECK_INT(pass(e, &n, &rq), 0);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 0);
    CHECK(rq > 239 * 60 * 1000 && rq <= 240 * 60 * 1000);   /* looks again at the idle deadline */

    /* Five hours later (the controller's clock) it is idle: pod deleted, claim kept. */
    kj_now_offset_set(5 * 3600 * 1000);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", n.sb), 0);   /* long-running: the Sandbox stays */
    CHECK_STR(ready_reason(e, n.sb, v, sizeof v), "Idle");
    CHECK(!stored_exists(e, n.pod));
    CHECK(stored_exists(e, n.pvc));   /* the workspace stays */
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Stopped");

    /* A client touches it (last-used-at = now): the pod comes back. */
    char t[40];
    time_ago(0, t, sizeof t);
    snprintf(ann, sizeof ann, "{\"metadata\":{\"annotations\":{\"" SBX_ANN_LAST_USED "\":\"%s\"}}}", t);
    CHECK_INT(fakeapi_patch(&e->fa, n.sb, ann), 0);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Creating");
}

TEST(idle_session_is_removed_with_preconditions) {
    struct env *e = env();
    struct names n;
    if (!e || bring_up(e, &n, "s-session", "dave", ",\"lifecycle\":\"session\",\"idleTimeout\":\"10m\"") < 0) {
        CHECK(!"running");
        return;
    }
    cJSON *sb = fakeapi_get(&e->fa, n.sb);
    char uid[64];
    snprintf(uid, sizeof uid, "%s", kj_str(sb, "metadata.uid"));
    cJSON_Delete(sb);
    kj_now_offset_set(20 * 60 * 1000);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    /* Recorded (fenced status write), then the pod and the Sandbox are deleted; the
     * Sandbox DELETE names the version the status write produced. */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 200), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.sb, 200), 1);
    cJSON *del = fakeapi_last_body(&e->fa, m, "DELETE", n.sb);
    CHECK_STR(precondition(del, "uid"), uid);
    CHECK(precondition(del, "resourceVersion") != NULL);
    cJSON_Delete(del);
    CHECK(!stored_exists(e, n.sb));
    CHECK(!stored_exists(e, n.pod));
}

TEST(touch_between_the_stop_record_and_the_delete_keeps_the_session) {
    struct env *e = env();
    struct names n;
    if (!e || bring_up(e, &n, "s-touch", "erin", ",\"lifecycle\":\"session\",\"idleTimeout\":\"10m\"") < 0) {
        CHECK(!"running");
        return;
    }
    kj_now_offset_set(20 * 60 * 1000);
    /* The Sandbox DELETE finds it changed (a touch after the stop was recorded): 409. */
    fakeapi_fault(&e->fa, "DELETE", n.sb, 409, -1, 1);
    size_t m = fakeapi_mark(&e->fa);
    int64_t rq = 0;
    CHECK_INT(pass(e, &n, &rq), 0);   /* SBX_STALE: decided again soon */
    CHECK(rq > 0 && rq <= 1000);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.sb, 409), 1);
    cJSON *sb = fakeapi_get(&e->fa, n.sb);
    CHECK(sb != NULL);
    cJSON_Delete(sb);
    struct sbx_controller_stats s;
    sbx_controller_stats(e->ctl, &s);
    CHECK_INT(s.conflicts, 1);
}

TEST(resources_change_replaces_the_pod_and_keeps_the_claim) {
    struct env *e = env();
    struct names n;
    char v[256];
    if (!e || bring_up(e, &n, "s-resize", "frank", ",\"resources\":{\"memory\":\"1Gi\",\"cpu\":\"500m\"}") < 0) {
        CHECK(!"running");
        return;
    }
    cJSON *pod = fakeapi_get(&e->fa, n.pod), *pvc = fakeapi_get(&e->fa, n.pvc);
    char old_pod_uid[64], pvc_uid[64];
    snprintf(old_pod_uid, sizeof old_pod_uid, "%s", kj_str(pod, "metadata.uid"));
    snprintf(pvc_uid, sizeof pvc_uid, "%s", kj_str(pvc, "metadata.uid"));
    cJSON_Delete(pod);
    cJSON_Delete(pvc);

    CHECK_INT(fakeapi_patch(&e->fa, n.sb, "{\"spec\":{\"resources\":{\"memory\":\"2Gi\"}}}"), 0);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", n.pvc), 0);
    cJSON *del = fakeapi_last_body(&e->fa, m, "DELETE", n.pod);
    CHECK_STR(precondition(del, "uid"), old_pod_uid);
    cJSON_Delete(del);
    /* The old pod is gone (the fake deletes at once): the next pass builds the new one,
     * with the new limit, on the same claim. */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "POST", POD_COLL, 201), 1);
    pod = fakeapi_get(&e->fa, n.pod);
    const cJSON *ctr = cJSON_GetArrayItem(kj_path(pod, "spec.containers"), 0);
    CHECK_STR(kj_str(ctr, "resources.limits.memory"), "2Gi");
    cJSON_Delete(pod);
    pvc = fakeapi_get(&e->fa, n.pvc);
    CHECK_STR(kj_str(pvc, "metadata.uid"), pvc_uid);
    cJSON_Delete(pvc);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Creating");
}

TEST(invalid_spec_makes_nothing_and_says_why) {
    struct env *e = env();
    struct names n;
    char v[512];
    names_of(&n, "s-invalid", "grace", "c1");
    if (!e) { CHECK(!"environment started"); return; }
    CHECK_INT(seed_sandbox(e, "s-invalid", "grace", "c1", ",\"resources\":{\"memory\":\"lots\"}", NULL), 0);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", POD_COLL), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "POST", PVC_COLL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.status, 200), 1);
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Pending");
    CHECK_STR(ready_reason(e, n.sb, v, sizeof v), "InvalidSpec");
}
