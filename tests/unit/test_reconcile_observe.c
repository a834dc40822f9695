/* tests/unit/test_reconcile_observe.c — the slim cached Pod and what the controller observes in
 * it (sandbox/decide/reconcile_observe.c): shrinking keeps exactly what sbx_pod_observe reads (the same
 * observations before and after), drops the rest, cuts long kubelet messages safely and
 * survives allocation failure; real kubelet-shaped pods (tests/unit/data/pod/: an image
 * that cannot be pulled, an OOMKilled container crash-looping next to a sidecar, an
 * unschedulable pod, a ready pod after an OOM restart) lead to the right Ready reason,
 * restart count, last termination and first-Ready time; status.lastTermination in and out
 * of JSON. */
#include "check.h"

#include "kube/kjson.h"
#include "sandbox/model/oneshot.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/decide/reconcile_observe.h"

/* 2026-11-29T10:00:00Z */
#define T0 INT64_C(1795946400000)
#define SEC INT64_C(1000)
#define MIN (60 * SEC)

/* Reads tests/unit/data/<rel> and parses it; NULL (and a failed CHECK) on error. */
static cJSON *load_fixture(const char *rel) {
    char path[1024];
    const char *dir = getenv("YAO_TEST_DATA");
    if (dir && *dir) {
        snprintf(path, sizeof path, "%s/%s", dir, rel);
    } else {
        const char *slash = strrchr(__FILE__, '/');
        int len = slash ? (int)(slash - __FILE__) + 1 : 0;
        snprintf(path, sizeof path, "%.*sdata/%s", len, __FILE__, rel);
    }
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    cJSON *json = cJSON_Parse(buf);
    free(buf);
    CHECK(json != NULL);
    return json;
}

static const char *const fixtures[] = {
    "pod/image-pull-backoff.json", "pod/oom-crashloop.json", "pod/unschedulable.json",
    "pod/ready-restarted.json", "pod/oneshot-timed-out.json", "pod/warm-idle-resize-pending.json",
};

/* Same string (both NULL counts as the same). */
static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* full: also startedAt and the message (kept for the current termination only). */
static int same_term(const struct sbx_termination *a, const struct sbx_termination *b, int full) {
    return a->present == b->present && same_str(a->reason, b->reason) && a->exit_code == b->exit_code &&
           a->finished_ms == b->finished_ms &&
           (!full || (a->started_ms == b->started_ms && same_str(a->message, b->message)));
}

/* Every pod observation of a and b agrees. */
static int same_observation(const struct sbx_observed *a, const struct sbx_observed *b) {
    return same_str(a->pod_phase, b->pod_phase) && same_str(a->pod_reason, b->pod_reason) &&
           a->run_timeout_s == b->run_timeout_s && a->pod_ready == b->pod_ready &&
           a->pod_ready_since_ms == b->pod_ready_since_ms && a->pod_started_ms == b->pod_started_ms &&
           same_str(a->pod_unscheduled_reason, b->pod_unscheduled_reason) &&
           same_str(a->pod_unscheduled_message, b->pod_unscheduled_message) &&
           a->ctr.present == b->ctr.present && a->ctr.ready == b->ctr.ready &&
           a->ctr.restart_count == b->ctr.restart_count &&
           same_str(a->ctr.waiting_reason, b->ctr.waiting_reason) &&
           same_str(a->ctr.waiting_message, b->ctr.waiting_message) &&
           a->ctr.running_since_ms == b->ctr.running_since_ms && same_term(&a->ctr.terminated, &b->ctr.terminated, 1) &&
           same_term(&a->ctr.last, &b->ctr.last, 0) && a->pod_cpu_limit_millis == b->pod_cpu_limit_millis &&
           a->pod_cpu_request_millis == b->pod_cpu_request_millis &&
           a->pod_cpu_allocated_millis == b->pod_cpu_allocated_millis &&
           same_str(a->pod_resize_pending, b->pod_resize_pending);
}

/* The keys of obj, comma-separated, in order. */
static const char *keys_of(const cJSON *obj, char *out, size_t n) {
    const cJSON *k;
    out[0] = 0;
    cJSON_ArrayForEach(k, obj) {
        if (out[0]) strncat(out, ",", n - strlen(out) - 1);
        strncat(out, k->string ? k->string : "?", n - strlen(out) - 1);
    }
    return out;
}

/* A pod seen by a session Sandbox that owns it, decided at now. */
static struct sbx_decision decide_pod(const cJSON *pod, int64_t now) {
    struct sbx_spec s;
    memset(&s, 0, sizeof(s));
    s.lifecycle = SBX_SESSION;
    s.idle_timeout_ms = 30 * MIN;
    struct sbx_observed o;
    memset(&o, 0, sizeof(o));
    o.now_ms = now;
    o.created_ms = T0;
    o.admitted = 1;
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.pod = SBX_OBJ_PRESENT;
    sbx_pod_observe(pod, &o);
    struct sbx_decision d;
    lifecycle_decide(&s, &o, &d);
    return d;
}

/* ---- shrinking -------------------------------------------------------------------------- */

TEST(shrink_keeps_only_what_is_read) {
    char keys[512];
    cJSON *pod = load_fixture("pod/image-pull-backoff.json");
    if (!pod) return;
    sbx_pod_shrink(pod);
    CHECK(kj_path(pod, "metadata.managedFields") == NULL);
    CHECK(kj_map_get(pod, "metadata.annotations", "kubectl.kubernetes.io/last-applied-configuration") == NULL);
    CHECK_STR(kj_map_get(pod, "metadata.annotations", "sandbox.yaoapps.com/user-id"), "alice");
    CHECK_STR(kj_str(pod, "metadata.uid"), "0b6c2d1e-1111-4a2b-9c3d-000000000001");
    CHECK_STR(kj_str(pod, "metadata.creationTimestamp"), "2026-11-29T10:00:00Z");
    CHECK(kj_path(pod, "metadata.ownerReferences") != NULL);
    CHECK_STR(keys_of(kj_path(pod, "spec"), keys, sizeof(keys)), "nodeName,containers");   /* containers: the sandbox one's CPU */
    CHECK_STR(keys_of(kj_path(pod, "status"), keys, sizeof(keys)),
              "phase,podIP,startTime,conditions,containerStatuses");
    const cJSON *conds = kj_path(pod, "status.conditions");
    CHECK_INT(cJSON_GetArraySize(conds), 2);
    CHECK_STR(keys_of(cJSON_GetArrayItem(conds, 0), keys, sizeof(keys)), "type,status,lastTransitionTime,reason,message");
    CHECK_STR(kj_str(cJSON_GetArrayItem(conds, 0), "type"), "Ready");
    CHECK_STR(kj_str(cJSON_GetArrayItem(conds, 1), "type"), "PodScheduled");
    const cJSON *ctrs = kj_path(pod, "status.containerStatuses");
    CHECK_INT(cJSON_GetArraySize(ctrs), 1);
    const cJSON *c = cJSON_GetArrayItem(ctrs, 0);
    CHECK_STR(keys_of(c, keys, sizeof(keys)), "name,ready,restartCount,state");   /* empty lastState dropped */
    CHECK_STR(keys_of(kj_path(c, "state.waiting"), keys, sizeof(keys)), "reason,message");
    /* a shrunk pod stays small */
    char *text = cJSON_PrintUnformatted(pod);
    CHECK(text && strlen(text) < 1500);
    free(text);
    cJSON_Delete(pod);
}

TEST(shrink_keeps_the_sandbox_containers_cpu_and_the_resize_verdict) {
    char keys[512];
    cJSON *pod = load_fixture("pod/warm-idle-resize-pending.json");
    if (!pod) return;
    struct sbx_observed o;
    memset(&o, 0, sizeof(o));
    sbx_pod_observe(pod, &o);
    CHECK_INT(o.pod_cpu_limit_millis, 50);      /* the spec as the resize set it */
    CHECK_INT(o.pod_cpu_request_millis, 50);
    CHECK_INT(o.pod_cpu_allocated_millis, 1000);   /* what the kubelet still gives */
    CHECK_STR(o.pod_resize_pending, "Infeasible");
    sbx_pod_shrink(pod);
    CHECK_STR(keys_of(kj_path(pod, "spec"), keys, sizeof(keys)), "nodeName,containers");
    const cJSON *cs = kj_path(pod, "spec.containers");
    CHECK_INT(cJSON_GetArraySize(cs), 1);       /* the sandbox container only, not the sidecar */
    CHECK_STR(keys_of(cJSON_GetArrayItem(cs, 0), keys, sizeof(keys)), "name,resources");
    CHECK(kj_path(cJSON_GetArrayItem(cs, 0), "resources.limits.memory") == NULL);
    CHECK_STR(kj_str(cJSON_GetArrayItem(cs, 0), "resources.limits.cpu"), "50m");
    const cJSON *c;
    int resize = 0;
    cJSON_ArrayForEach(c, kj_path(pod, "status.conditions")) resize += !strcmp(kj_str(c, "type"), "PodResizePending");
    CHECK_INT(resize, 1);
    cJSON_Delete(pod);
}

TEST(shrink_picks_the_sandbox_container_and_its_last_termination) {
    char keys[512];
    cJSON *pod = load_fixture("pod/oom-crashloop.json");
    if (!pod) return;
    sbx_pod_shrink(pod);
    CHECK(kj_path(pod, "status.initContainerStatuses") == NULL);
    const cJSON *ctrs = kj_path(pod, "status.containerStatuses");
    CHECK_INT(cJSON_GetArraySize(ctrs), 1);
    const cJSON *c = cJSON_GetArrayItem(ctrs, 0);
    CHECK_STR(kj_str(c, "name"), "sandbox");            /* not the sidecar listed first */
    CHECK_STR(keys_of(kj_path(c, "lastState.terminated"), keys, sizeof(keys)), "reason,exitCode,finishedAt");
    CHECK(kj_path(c, "image") == NULL && kj_path(c, "containerID") == NULL);
    cJSON_Delete(pod);
}

TEST(observations_survive_shrinking) {
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
        cJSON *full = load_fixture(fixtures[i]);
        cJSON *slim = cJSON_Duplicate(full, 1);
        if (!full || !slim) { cJSON_Delete(full); cJSON_Delete(slim); continue; }
        sbx_pod_shrink(slim);
        struct sbx_observed a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0x5a, sizeof(b));
        sbx_pod_observe(full, &a);
        sbx_pod_observe(slim, &b);
        if (!same_observation(&a, &b)) {
            fprintf(stderr, "  %s: observations differ after shrinking\n", fixtures[i]);
            CHECK(0);
        }
        /* shrinking twice changes nothing */
        cJSON *again = cJSON_Duplicate(slim, 1);
        sbx_pod_shrink(again);
        CHECK(cJSON_Compare(again, slim, 1));
        cJSON_Delete(again);
        cJSON_Delete(full);
        cJSON_Delete(slim);
    }
}

TEST(long_kubelet_messages_are_cut_in_the_cache) {
    char *msg = malloc(6001);
    if (!msg) return;
    for (int i = 0; i < 3000; i++) memcpy(msg + 2 * i, "\xc3\xa9", 2);   /* é */
    msg[6000] = 0;
    cJSON *pod = cJSON_Parse("{\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"sandbox\","
                             "\"state\":{\"waiting\":{\"reason\":\"ErrImagePull\"}}}]}}");
    cJSON *w = (cJSON *)kj_path(cJSON_GetArrayItem(kj_path(pod, "status.containerStatuses"), 0), "state.waiting");
    cJSON_AddStringToObject(w, "message", msg);
    free(msg);
    sbx_pod_shrink(pod);
    struct sbx_observed o;
    memset(&o, 0, sizeof(o));
    sbx_pod_observe(pod, &o);
    CHECK_STR(o.ctr.waiting_reason, "ErrImagePull");
    size_t n = o.ctr.waiting_message ? strlen(o.ctr.waiting_message) : 0;
    CHECK(n <= SBX_MESSAGE_MAX && n >= SBX_MESSAGE_MAX - 1);
    CHECK_INT(n % 2, 0);                                 /* whole characters only */
    cJSON_Delete(pod);
}

static long alloc_budget = -1;
static void *failing_malloc(size_t n) {
    if (alloc_budget == 0) return NULL;
    if (alloc_budget > 0) alloc_budget--;
    return malloc(n);
}

TEST(shrink_survives_allocation_failure) {
    cJSON_Hooks hooks = {failing_malloc, free};
    cJSON *full = load_fixture("pod/oom-crashloop.json");
    if (!full) return;
    struct sbx_observed want, got;
    memset(&want, 0, sizeof(want));
    sbx_pod_observe(full, &want);
    int slim_seen = 0;
    for (long k = 0; k < 400 && !slim_seen; k++) {
        cJSON *pod = cJSON_Duplicate(full, 1);
        if (!pod) break;
        cJSON_InitHooks(&hooks);
        alloc_budget = k;
        sbx_pod_shrink(pod);
        alloc_budget = -1;
        cJSON_InitHooks(NULL);
        /* slim or still complete: either way the controller sees the same pod */
        memset(&got, 0, sizeof(got));
        sbx_pod_observe(pod, &got);
        CHECK(same_observation(&want, &got));
        slim_seen = kj_path(pod, "status.initContainerStatuses") == NULL;
        cJSON_Delete(pod);
    }
    CHECK(slim_seen);
    cJSON_Delete(full);
}

TEST(odd_pods) {
    struct sbx_observed o;
    memset(&o, 0x5a, sizeof(o));
    sbx_pod_shrink(NULL);
    sbx_pod_observe(NULL, &o);
    CHECK(o.pod_phase == NULL);
    CHECK_INT(o.pod_ready, 0);
    CHECK_INT(o.pod_started_ms, 0);
    CHECK(o.pod_unscheduled_reason == NULL);
    CHECK_INT(o.ctr.present, 0);
    cJSON *pod = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
                             "\"status\":\"True\"}],\"containerStatuses\":[{\"name\":\"other\",\"restartCount\":4}]}}");
    sbx_pod_shrink(pod);
    sbx_pod_observe(pod, &o);
    CHECK_INT(o.pod_ready, 1);
    CHECK_INT(o.pod_ready_since_ms, 0);                  /* no lastTransitionTime */
    CHECK_INT(o.ctr.present, 1);                         /* the only container, whatever its name */
    CHECK_INT(o.ctr.restart_count, 4);
    cJSON_Delete(pod);
    pod = cJSON_Parse("{\"metadata\":{\"name\":\"p\"}}");  /* no status yet */
    sbx_pod_shrink(pod);
    CHECK(kj_path(pod, "status") == NULL);
    cJSON_Delete(pod);
}

/* ---- from the kubelet's words to the Sandbox's ------------------------------------------ */

TEST(image_pull_backoff_pod) {
    cJSON *pod = load_fixture("pod/image-pull-backoff.json");
    if (!pod) return;
    sbx_pod_shrink(pod);
    struct sbx_decision d = decide_pod(pod, T0 + 8 * SEC);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, "ImagePullBackOff");
    CHECK(strstr(d.message, "pull access denied") != NULL);
    CHECK_INT(d.restart_count, 0);
    CHECK_INT(d.started_ms, 0);
    CHECK_INT(d.requeue_after_ms, 0);                    /* never Ready: no idle deadline */
    cJSON_Delete(pod);
}

/* Between an OOM kill and the kubelet's next sync (10 s or more on a busy node) the
 * container is terminated, not yet waiting in CrashLoopBackOff: the reason is the kill. */
TEST(oom_killed_container_before_its_restart) {
    cJSON *pod = load_fixture("pod/oom-terminated.json");
    if (!pod) return;
    sbx_pod_shrink(pod);
    struct sbx_decision d = decide_pod(pod, T0 + 4 * MIN);
    CHECK_STR(d.phase, "Creating");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "OOMKilled");
    CHECK_STR(d.message, "the container ended: OOMKilled (exit code 137); the kubelet restarts it");
    CHECK_INT(d.restart_count, 2);
    CHECK_INT(d.last_termination.present, 1);
    CHECK_STR(d.last_termination.reason, "OOMKilled");
    CHECK_INT(d.actions, 0);
    cJSON_Delete(pod);
}

TEST(oom_crashloop_pod) {
    cJSON *pod = load_fixture("pod/oom-crashloop.json");
    if (!pod) return;
    sbx_pod_shrink(pod);
    struct sbx_decision d = decide_pod(pod, T0 + 4 * MIN);
    CHECK_STR(d.reason, "CrashLoopBackOff");
    CHECK(strstr(d.message, "back-off 40s restarting failed container") == d.message);
    CHECK(strstr(d.message, "; last termination: OOMKilled (exit code 137)") != NULL);
    CHECK_INT(d.restart_count, 3);
    CHECK_INT(d.last_termination.present, 1);
    CHECK_STR(d.last_termination.reason, "OOMKilled");
    CHECK_INT(d.last_termination.exit_code, 137);
    CHECK_INT(d.last_termination.finished_ms, T0 + 3 * MIN + 9 * SEC);
    cJSON_Delete(pod);
}

TEST(unschedulable_pod) {
    cJSON *pod = load_fixture("pod/unschedulable.json");
    if (!pod) return;
    sbx_pod_shrink(pod);
    struct sbx_decision d = decide_pod(pod, T0 + MIN);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, "Unschedulable");
    CHECK(strstr(d.message, "0/3 nodes are available: 1 Insufficient cpu") == d.message);
    CHECK_INT(d.restart_count, -1);
    cJSON_Delete(pod);
}

TEST(ready_pod_after_an_oom_restart) {
    cJSON *pod = load_fixture("pod/ready-restarted.json");
    if (!pod) return;
    sbx_pod_shrink(pod);
    struct sbx_decision d = decide_pod(pod, T0 + 6 * MIN);
    CHECK_STR(d.phase, "Running");
    CHECK_STR(d.reason, "PodReady");
    CHECK_INT(d.restart_count, 1);
    CHECK_STR(d.last_termination.reason, "OOMKilled");
    CHECK_INT(d.started_ms, T0 + 5 * MIN);               /* the Ready transition, not startTime */
    CHECK_INT(d.requeue_after_ms, 29 * MIN);
    cJSON_Delete(pod);
}

TEST(one_shot_pod_keeps_its_result_in_the_cache) {
    char keys[512];
    cJSON *pod = load_fixture("pod/oneshot-timed-out.json");
    if (!pod) return;
    sbx_pod_shrink(pod);
    CHECK_STR(keys_of(kj_path(pod, "spec"), keys, sizeof(keys)), "nodeName,activeDeadlineSeconds,containers");
    const cJSON *c = cJSON_GetArrayItem(kj_path(pod, "status.containerStatuses"), 0);
    CHECK_STR(keys_of(kj_path(c, "state.terminated"), keys, sizeof(keys)), "reason,exitCode,finishedAt,startedAt,message");
    struct sbx_observed o;
    memset(&o, 0, sizeof(o));
    sbx_pod_observe(pod, &o);
    CHECK_STR(o.pod_phase, "Failed");
    CHECK_STR(o.pod_reason, "DeadlineExceeded");
    CHECK_INT(o.run_timeout_s, 5);
    CHECK_INT(o.ctr.terminated.exit_code, 143);
    CHECK_INT(o.ctr.terminated.started_ms, T0 + 2 * SEC);
    CHECK_INT(o.ctr.terminated.finished_ms, T0 + 7 * SEC);
    CHECK_STR(o.ctr.terminated.message, "yao-run/1 3 0\naGkK\n.\n");
    /* decided as a one-shot: 124, the tails, the note */
    struct sbx_spec s;
    memset(&s, 0, sizeof(s));
    s.lifecycle = SBX_ONE_SHOT;
    s.ttl_after_finished_s = 300;
    o.now_ms = T0 + 8 * SEC;
    o.admitted = 1;
    o.pvc = SBX_OBJ_PRESENT;
    o.pod = SBX_OBJ_PRESENT;
    struct sbx_decision d;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.run.exit_code, 124);
    CHECK_STR(d.phase, "Failed");
    struct sbx_run_output out;
    CHECK_INT(sbx_run_output_parse(d.run.message, d.run.note, &out), 0);
    CHECK_STR(out.out, "hi\n");
    CHECK_STR(out.err, "yao-sandbox: the command timed out after 5s (spec.run.timeout)\n");
    sbx_run_output_free(&out);
    cJSON_Delete(pod);
}

/* ---- status.lastTermination ------------------------------------------------------------- */

TEST(termination_json_round_trip) {
    struct sbx_termination t = {1, "OOMKilled", 137, T0 + 5 * SEC, 0, NULL, NULL}, back;
    cJSON *j = sbx_termination_json(&t);
    CHECK(j != NULL);
    char *text = cJSON_PrintUnformatted(j);
    CHECK_STR(text, "{\"reason\":\"OOMKilled\",\"exitCode\":137,\"finishedAt\":\"2026-11-29T10:00:05Z\"}");
    free(text);
    sbx_termination_read(j, &back);
    CHECK(same_term(&t, &back, 1));
    cJSON_Delete(j);
    /* no reason, no time */
    t = (struct sbx_termination){1, NULL, 1, 0, 0, NULL, NULL};
    j = sbx_termination_json(&t);
    text = cJSON_PrintUnformatted(j);
    CHECK_STR(text, "{\"exitCode\":1}");
    free(text);
    cJSON_Delete(j);
    t.present = 0;
    CHECK(sbx_termination_json(&t) == NULL);
    sbx_termination_read(NULL, &back);
    CHECK_INT(back.present, 0);
}

/* A pod that has ended for good (a finished one-shot's, kept for its log) holds no running
 * slot; a running, pending or phase-less one does. */
TEST(finished_pods_are_told_apart) {
    static const struct { const char *json; int finished; } cases[] = {
        {"{\"status\":{\"phase\":\"Succeeded\"}}", 1},
        {"{\"status\":{\"phase\":\"Failed\",\"reason\":\"DeadlineExceeded\"}}", 1},
        {"{\"status\":{\"phase\":\"Running\"}}", 0},
        {"{\"status\":{\"phase\":\"Pending\"}}", 0},
        {"{\"status\":{}}", 0},
        {"{\"metadata\":{\"name\":\"p\"}}", 0},
        {"{\"status\":{\"phase\":7}}", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        cJSON *pod = cJSON_Parse(cases[i].json);
        CHECK(pod != NULL);
        CHECK_INT(sbx_pod_finished(pod), cases[i].finished);
        cJSON_Delete(pod);
    }
    CHECK_INT(sbx_pod_finished(NULL), 0);
}
