/* tests/unit/test_reconcile_warmidle.c — warm-idle through single passes against the
 * in-process fake API server (fakeapi.h, reconcile_env.h), a SandboxClass with
 * spec.warmIdle: at the idle deadline the pass records WarmIdle in the status first
 * (conditional on the Sandbox's version: the fence of a stop) and then resizes the pod's
 * CPU down through pods/NAME/resize, with the pod's uid and resourceVersion as
 * preconditions; the same pod stays. A touch resizes it back up (status Running, PodReady,
 * no warmIdleSince). A resize that meets a changed pod (409) is decided again; one the
 * kubelet refuses (PodResizePending Infeasible) falls back on the idle removal; past the
 * window the session is removed as without warm-idle. A class that counts activity (as
 * the shipped default class does) without metrics-server acts on the deadline as before;
 * a pod at work at the warm-idle deadline keeps its CPU and gets a new idle period. */
#include "reconcile_env.h"

#define WARM_CLASS "warm"

/* The class: idle 1 min, warm-idle at 50m for 5 min. */
static int class_ready(struct env *e) {
    return seed_class(e, WARM_CLASS, "\"idleTimeout\":\"1m\",\"warmIdle\":{\"cpu\":\"50m\",\"window\":\"5m\"}", 1);
}

/* A session Sandbox of the class, Running. */
static int running(struct env *e, struct names *n, const char *name, const char *user) {
    char ph[32];
    kj_now_offset_set(0);
    names_of(n, name, user, "c1");
    if (class_ready(e) < 0 ||
        seed_sandbox(e, name, user, "c1", ",\"className\":\"" WARM_CLASS "\",\"lifecycle\":\"session\"", NULL) < 0 ||
        pass(e, n, NULL) != 0 || pod_running(e, n->pod, 1000) < 0 || claim_bound(e, n->pvc) < 0 || pass(e, n, NULL) != 0)
        return -1;
    return strcmp(stored_str(e, n->sb, "status.phase", ph, sizeof ph), "Running") ? -1 : 0;
}

/* The position in the request log (after mark) of the first method to path, or -1. */
static long first_at(struct env *e, size_t mark, const char *method, const char *path) {
    long at = -1;
    pthread_mutex_lock(&e->fa.lock);
    for (size_t i = mark; i < e->fa.nlog && at < 0; i++)
        if (!strcmp(e->fa.log[i].method, method) && !strcmp(e->fa.log[i].path, path)) at = (long)i;
    pthread_mutex_unlock(&e->fa.lock);
    return at;
}

/* The stored pod's sandbox container CPU (resources.<kind>.cpu), into out. */
static const char *pod_cpu(struct env *e, const char *pod, const char *kind, char *out, size_t n) {
    cJSON *o = fakeapi_get(&e->fa, pod);
    const cJSON *c;
    out[0] = '\0';
    cJSON_ArrayForEach(c, kj_path(o, "spec.containers")) {
        const char *name = kj_str(c, "name");
        char path[64];
        snprintf(path, sizeof path, "resources.%s.cpu", kind);
        if (name && !strcmp(name, SBX_CONTAINER_NAME) && kj_str(c, path)) snprintf(out, n, "%s", kj_str(c, path));
    }
    cJSON_Delete(o);
    return out;
}

static void touch(struct env *e, const struct names *n) {
    char t[40], ann[256];
    time_ago(0, t, sizeof t);
    snprintf(ann, sizeof ann, "{\"metadata\":{\"annotations\":{\"" SBX_ANN_LAST_USED "\":\"%s\"}}}", t);
    CHECK_INT(fakeapi_patch(&e->fa, n->sb, ann), 0);
}

TEST(idle_session_goes_warm_idle_with_a_fenced_preconditioned_resize_and_a_touch_wakes_it) {
    struct env *e = env();
    struct names n;
    char v[256], resize[600], pod_uid[64], pod_rv[64];
    if (!e || running(e, &n, "w-cycle", "alice") < 0) { CHECK(!"running"); return; }
    snprintf(resize, sizeof resize, "%s/resize", n.pod);
    cJSON *pod = fakeapi_get(&e->fa, n.pod);
    snprintf(pod_uid, sizeof pod_uid, "%s", kj_str(pod, "metadata.uid") ? kj_str(pod, "metadata.uid") : "?");
    snprintf(pod_rv, sizeof pod_rv, "%s", kj_str(pod, "metadata.resourceVersion") ? kj_str(pod, "metadata.resourceVersion") : "?");
    cJSON_Delete(pod);
    CHECK_STR(pod_cpu(e, n.pod, "limits", v, sizeof v), "1");

    /* Past the idle timeout (1 min): warm-idle, not removed. */
    kj_now_offset_set(70 * 1000);
    size_t m = fakeapi_mark(&e->fa);
    int64_t rq = 0;
    CHECK_INT(pass(e, &n, &rq), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", n.sb), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", n.pod), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", resize, 200), 1);
    /* the status first (the fence), conditional on the Sandbox's version; then the resize */
    long st_at = first_at(e, m, "PATCH", n.status), rs_at = first_at(e, m, "PATCH", resize);
    CHECK(st_at >= 0 && rs_at > st_at);
    cJSON *fence = fakeapi_last_body(&e->fa, m, "PATCH", n.status);
    CHECK(kj_str(fence, "metadata.resourceVersion") != NULL);
    cJSON_Delete(fence);
    cJSON *body = fakeapi_last_body(&e->fa, m, "PATCH", resize);
    CHECK_STR(kj_str(body, "metadata.uid"), pod_uid);
    CHECK_STR(kj_str(body, "metadata.resourceVersion"), pod_rv);
    const cJSON *c0 = cJSON_GetArrayItem(kj_path(body, "spec.containers"), 0);
    CHECK_STR(kj_str(c0, "name"), SBX_CONTAINER_NAME);
    CHECK_STR(kj_str(c0, "resources.limits.cpu"), "50m");
    CHECK_STR(kj_str(c0, "resources.requests.cpu"), "50m");
    CHECK(kj_path(c0, "resources.limits.memory") == NULL);   /* memory kept as it is */
    cJSON_Delete(body);
    CHECK_STR(pod_cpu(e, n.pod, "limits", v, sizeof v), "50m");
    CHECK_STR(stored_str(e, n.sb, "status.phase", v, sizeof v), "Running");
    CHECK_STR(ready_reason(e, n.sb, v, sizeof v), SBX_REASON_WARM_IDLE);
    CHECK(*stored_str(e, n.sb, "status.warmIdleSince", v, sizeof v));
    CHECK(rq > 4 * 60 * 1000 && rq <= 5 * 60 * 1000);   /* next: the end of the window */

    /* Level-triggered: nothing more while warm-idle. */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_writes(&e->fa, m), 0);
    if (fakeapi_count_writes(&e->fa, m)) fakeapi_dump(&e->fa, m);

    /* A touch: resized back up, the same pod, status Running/PodReady without warmIdleSince. */
    touch(e, &n);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", resize, 200), 1);
    body = fakeapi_last_body(&e->fa, m, "PATCH", resize);
    c0 = cJSON_GetArrayItem(kj_path(body, "spec.containers"), 0);
    CHECK_STR(kj_str(c0, "resources.limits.cpu"), "1");
    CHECK_STR(kj_str(c0, "resources.requests.cpu"), "100m");
    CHECK_STR(kj_str(body, "metadata.uid"), pod_uid);
    cJSON_Delete(body);
    CHECK_STR(pod_cpu(e, n.pod, "limits", v, sizeof v), "1");
    CHECK_STR(ready_reason(e, n.sb, v, sizeof v), SBX_REASON_READY);
    CHECK_STR(stored_str(e, n.sb, "status.warmIdleSince", v, sizeof v), "");
    pod = fakeapi_get(&e->fa, n.pod);
    CHECK_STR(kj_str(pod, "metadata.uid"), pod_uid);
    cJSON_Delete(pod);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", n.pod), 0);
}

TEST(a_resize_that_meets_a_changed_pod_is_decided_again) {
    struct env *e = env();
    struct names n;
    char v[256], resize[600];
    if (!e || running(e, &n, "w-stale", "bob") < 0) { CHECK(!"running"); return; }
    snprintf(resize, sizeof resize, "%s/resize", n.pod);
    kj_now_offset_set(70 * 1000);
    fakeapi_fault(&e->fa, "PATCH", resize, 409, -1, 1);
    size_t m = fakeapi_mark(&e->fa);
    int64_t rq = 0;
    CHECK_INT(pass(e, &n, &rq), 0);   /* SBX_STALE: looked at again soon */
    CHECK(rq > 0 && rq <= 1000);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", resize, 409), 1);
    CHECK_STR(pod_cpu(e, n.pod, "limits", v, sizeof v), "1");
    /* the next pass resizes it */
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", resize, 200), 1);
    CHECK_STR(pod_cpu(e, n.pod, "limits", v, sizeof v), "50m");
}

TEST(a_resize_the_kubelet_refuses_falls_back_on_removal) {
    struct env *e = env();
    struct names n;
    if (!e || running(e, &n, "w-infeasible", "carol") < 0) { CHECK(!"running"); return; }
    kj_now_offset_set(70 * 1000);
    CHECK_INT(pass(e, &n, NULL), 0);   /* warm-idle, resized down */
    /* The kubelet: the resize cannot be done on this node. */
    CHECK_INT(fakeapi_patch(&e->fa, n.pod,
                            "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
                            "{\"type\":\"PodResizePending\",\"status\":\"True\",\"reason\":\"Infeasible\","
                            "\"message\":\"Node didn't have enough capacity\"}]}}"), 0);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.sb, 200), 1);
    CHECK(!stored_exists(e, n.sb));
}

/* The API server will not resize this pod at all (422: its node has no in-place resize; 404
 * with the pod there: no resize subresource, Kubernetes < 1.33): one try (with a Warning
 * Event, seen by test_security on the plane), and the next pass, at once, acts on the idle deadline as without warm-idle. */
static void api_refusal_falls_back(const char *name, const char *user, int status) {
    struct env *e = env();
    struct names n;
    char resize[600];
    if (!e || running(e, &n, name, user) < 0) { CHECK(!"running"); return; }
    snprintf(resize, sizeof resize, "%s/resize", n.pod);
    kj_now_offset_set(70 * 1000);
    fakeapi_fault(&e->fa, "PATCH", resize, status, -1, 1);   /* once: it is not asked again */
    size_t m = fakeapi_mark(&e->fa);
    int64_t rq = 0;
    CHECK_INT(pass(e, &n, &rq), 0);
    CHECK(rq > 0 && rq <= 1000);                              /* looked at again at once */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", resize, status), 1);
    CHECK_INT(fakeapi_count(&e->fa, m, "DELETE", n.pod), 0);
    m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count(&e->fa, m, "PATCH", resize), 0);  /* not tried again on this pod */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.sb, 200), 1);
    CHECK(!stored_exists(e, n.sb));
}

TEST(a_resize_the_api_server_refuses_falls_back_on_removal_at_once) {
    api_refusal_falls_back("w-noresize", "gina", 422);
}

TEST(a_cluster_without_the_resize_subresource_falls_back_on_removal_at_once) {
    api_refusal_falls_back("w-oldcluster", "hank", 404);
}

TEST(past_the_window_the_session_is_removed) {
    struct env *e = env();
    struct names n;
    char v[64];
    if (!e || running(e, &n, "w-window", "dave") < 0) { CHECK(!"running"); return; }
    kj_now_offset_set(70 * 1000);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_STR(ready_reason(e, n.sb, v, sizeof v), SBX_REASON_WARM_IDLE);
    kj_now_offset_set((60 + 5 * 60 + 5) * 1000);   /* idle 1 min + window 5 min, and then some */
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.pod, 200), 1);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.sb, 200), 1);
    CHECK(!stored_exists(e, n.sb));
}

/* ---- activity (the shipped default class counts it) ----------------------------------- */

#define METRICS "/apis/metrics.k8s.io/v1beta1/namespaces/" NS "/pods"

/* A session of class cls, Running. */
static int running_of(struct env *e, struct names *n, const char *name, const char *user, const char *cls) {
    char ph[32], extra[128];
    kj_now_offset_set(0);
    names_of(n, name, user, "c1");
    snprintf(extra, sizeof extra, ",\"className\":\"%s\",\"lifecycle\":\"session\"", cls);
    if (seed_sandbox(e, name, user, "c1", extra, NULL) < 0 || pass(e, n, NULL) != 0 || pod_running(e, n->pod, 1000) < 0 ||
        claim_bound(e, n->pvc) < 0 || pass(e, n, NULL) != 0)
        return -1;
    return strcmp(stored_str(e, n->sb, "status.phase", ph, sizeof ph), "Running") ? -1 : 0;
}

TEST(without_metrics_server_a_class_counting_activity_acts_on_the_deadline) {
    struct env *e = env();
    struct names n;
    char mpath[512];
    /* as the shipped default class: activity 50m (the fake serves no metrics.k8s.io) */
    if (!e || class_ready(e) < 0 || seed_class(e, "act", "\"idleTimeout\":\"1m\",\"activity\":{\"cpu\":\"50m\"}", 2) < 0 ||
        running_of(e, &n, "a-nometrics", "erin", "act") < 0) {
        CHECK(!"running");
        return;
    }
    snprintf(mpath, sizeof mpath, METRICS "/%s", n.pod_name);
    kj_now_offset_set(70 * 1000);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "GET", mpath, 404), 1);   /* asked once */
    CHECK_INT(fakeapi_count_status(&e->fa, m, "DELETE", n.sb, 200), 1);  /* removed as today */
}

TEST(busy_at_the_warm_idle_deadline_keeps_its_cpu) {
    struct env *e = env();
    struct names n;
    char v[256], resize[600], metrics[1024], t[40];
    if (!e || class_ready(e) < 0 || seed_class(e, "act", "\"idleTimeout\":\"1m\",\"activity\":{\"cpu\":\"50m\"}", 2) < 0 ||
        seed_class(e, "warmact", "\"idleTimeout\":\"1m\",\"activity\":{\"cpu\":\"50m\"},"
                   "\"warmIdle\":{\"cpu\":\"50m\",\"window\":\"5m\"}", 3) < 0 ||
        running_of(e, &n, "a-busy", "frank", "warmact") < 0) {
        CHECK(!"running");
        return;
    }
    snprintf(resize, sizeof resize, "%s/resize", n.pod);
    kj_now_offset_set(70 * 1000);
    time_ago(0, t, sizeof t);
    /* metrics-server: the pod uses 400m now */
    snprintf(metrics, sizeof metrics,
             "{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"PodMetrics\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"" NS "\"},\"timestamp\":\"%s\",\"window\":\"15s\","
             "\"containers\":[{\"name\":\"sandbox\",\"usage\":{\"cpu\":\"400m\",\"memory\":\"10Mi\"}}]}", n.pod_name, t);
    CHECK_INT(fakeapi_seed(&e->fa, METRICS, metrics), 0);
    size_t m = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    /* at work: a new idle period (last-used-at refreshed), no resize */
    CHECK_INT(fakeapi_count(&e->fa, m, "PATCH", resize), 0);
    CHECK_INT(fakeapi_count_status(&e->fa, m, "PATCH", n.sb, 200), 1);
    cJSON *sb = fakeapi_get(&e->fa, n.sb);
    const char *act = kj_map_get(sb, "metadata.annotations", "sandbox.yaoapps.com/last-activity");
    CHECK(act && strstr(act, "cpu=400m threshold=50m"));
    cJSON_Delete(sb);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_STR(ready_reason(e, n.sb, v, sizeof v), SBX_REASON_READY);
    CHECK_STR(pod_cpu(e, n.pod, "limits", v, sizeof v), "1");
}
