/* tests/unit/test_sandboxview.c — the Sandbox view (sandbox/model/sandboxview.c): every field read
 * from a full Sandbox, and pointing into it (nothing copied); an empty, NULL or non-object
 * Sandbox reads as all absent; members of the wrong JSON type read as absent; unicode and
 * 500-character values come through whole; unparseable times read as 0; the first condition
 * of each type counts; status.run with and without a result; the lifecycle in force. */
#include "check.h"

#include <stdio.h>
#include <string.h>

#include "kube/kjson.h"
#include "sandbox/decide/activity_decide.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/spec.h"

static cJSON *parse(const char *js) {
    cJSON *o = cJSON_Parse(js);
    if (!o) { fprintf(stderr, "bad fixture %s\n", js); abort(); }
    return o;
}

static const char *const FULL =
    "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\","
    "\"metadata\":{\"namespace\":\"team-a\",\"name\":\"sb-1\",\"uid\":\"u-1\",\"resourceVersion\":\"42\","
    "\"generation\":7,\"creationTimestamp\":\"2026-05-28T20:26:40Z\",\"deletionTimestamp\":\"2026-05-28T20:30:00Z\","
    "\"labels\":{\"app\":\"x\"},"
    "\"annotations\":{\"sandbox.yaoapps.com/last-used-at\":\"2026-05-28T20:27:00Z\","
    "\"sandbox.yaoapps.com/last-activity\":\"2026-05-28T20:27:00Z cpu 300m\"}},"
    "\"spec\":{\"userID\":\"alice\",\"chatID\":\"c1\",\"className\":\"gpu\",\"lifecycle\":\"session\",\"paused\":true,"
    "\"image\":\"img:1\",\"idleTimeout\":\"30m\",\"resources\":{\"memory\":\"1Gi\",\"cpu\":\"500m\"},"
    "\"workspace\":{\"mountPath\":\"/w\",\"size\":\"5Gi\",\"storageClassName\":\"fast\"},"
    "\"ports\":[{\"port\":8080,\"name\":\"http\"}],\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
    "\"run\":{\"command\":[\"sh\",\"-c\",\"true\"],\"workingDir\":\"/w\"},\"ttlSecondsAfterFinished\":600},"
    "\"status\":{\"phase\":\"Running\",\"podName\":\"p-1\",\"podIP\":\"10.0.0.7\",\"nodeName\":\"n-1\","
    "\"workspaceClaim\":\"p-1-workspace\","
    "\"lifecycle\":\"long-running\",\"className\":\"gpu-old\",\"ignoredLastUsedAt\":\"yesterday\","
    "\"lastUsedAt\":\"2026-05-28T20:27:00Z\",\"startedAt\":\"2026-05-28T20:26:41Z\",\"stoppedAt\":\"2026-05-28T20:20:00Z\","
    "\"observedGeneration\":6,\"idleTimeout\":\"30m\",\"reclaimAfter\":\"10m\",\"idleAt\":\"2026-05-28T20:57:00Z\","
    "\"queuePosition\":2,\"restartCount\":1,"
    "\"lastTermination\":{\"reason\":\"OOMKilled\",\"exitCode\":137,\"finishedAt\":\"2026-05-28T20:10:00Z\"},"
    "\"run\":{\"startedAt\":\"2026-05-28T20:26:41Z\",\"finishedAt\":\"2026-05-28T20:26:50Z\",\"exitCode\":3,"
    "\"stdout\":\"out\\n\",\"stderr\":\"err\\n\",\"truncated\":true},"
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Running\",\"message\":\"ok\","
    "\"lastTransitionTime\":\"2026-05-28T20:26:41Z\"},"
    "{\"type\":\"Workspace\",\"status\":\"False\",\"reason\":\"Resizing\",\"message\":\"growing\"},"
    "{\"type\":\"Accepted\",\"status\":\"False\",\"reason\":\"InvalidSpec\",\"message\":\"bad\","
    "\"lastTransitionTime\":\"2026-05-28T20:00:00Z\"},"
    "{\"type\":\"Custom\",\"status\":\"True\"}]}}";

#define T(s) 1780000000000LL + (s) * 1000LL   /* seconds after 2026-05-28T20:26:40Z */

TEST(every_field_of_a_full_sandbox) {
    cJSON *o = parse(FULL);
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(o, &v);
    CHECK(v.obj == o);
    CHECK_STR(v.meta.namespace_, "team-a");
    CHECK_STR(v.meta.name, "sb-1");
    CHECK_STR(v.meta.uid, "u-1");
    CHECK_STR(v.meta.resource_version, "42");
    CHECK_INT(v.meta.generation, 7);
    CHECK_INT(v.meta.created_ms, T(0));
    CHECK_INT(v.meta.deleting, 1);
    CHECK_STR(v.meta.created_text, "2026-05-28T20:26:40Z");
    CHECK_STR(v.meta.deletion_text, "2026-05-28T20:30:00Z");
    CHECK_STR(v.last_used_at, "2026-05-28T20:27:00Z");
    CHECK_STR(v.last_activity, "2026-05-28T20:27:00Z cpu 300m");
    CHECK_STR(v.user_id, "alice");
    CHECK_STR(v.chat_id, "c1");
    CHECK_STR(v.class_name, "gpu");
    CHECK_STR(v.lifecycle, "session");
    CHECK_INT(v.paused, 1);
    CHECK(v.status == cJSON_GetObjectItem(o, "status"));
    CHECK_STR(v.last_used_text, "2026-05-28T20:27:00Z");
    CHECK_STR(v.started_text, "2026-05-28T20:26:41Z");
    CHECK_STR(v.stopped_text, "2026-05-28T20:20:00Z");
    CHECK_STR(v.phase, "Running");
    CHECK_STR(v.pod_name, "p-1");
    CHECK_STR(v.workspace_claim, "p-1-workspace");
    CHECK_STR(v.status_lifecycle, "long-running");
    CHECK_STR(v.status_class_name, "gpu-old");
    CHECK_STR(v.ignored_last_used_at, "yesterday");
    CHECK_INT(v.last_used_ms, T(20));
    CHECK_INT(v.started_ms, T(1));
    CHECK_INT(v.stopped_ms, T(-400));
    CHECK_INT(v.observed_generation, 6);
    CHECK_INT(v.last_termination.present, 1);
    CHECK_STR(v.last_termination.reason, "OOMKilled");
    CHECK_INT(v.last_termination.exit_code, 137);
    CHECK_STR(v.last_termination.finished_text, "2026-05-28T20:10:00Z");
    CHECK_INT(v.last_termination.finished_ms, T(-1000));
    CHECK_INT(v.run.present, 1);
    CHECK_INT(v.run.finished, 1);
    CHECK_INT(v.run.exit_code, 3);
    CHECK_INT(v.run.started_ms, T(1));
    CHECK_INT(v.run.finished_ms, T(10));
    CHECK_STR(v.run.started_text, "2026-05-28T20:26:41Z");
    CHECK_STR(v.run.finished_text, "2026-05-28T20:26:50Z");
    CHECK_INT(v.ready.present, 1);
    CHECK_STR(v.ready.status, "True");
    CHECK_STR(v.ready.reason, "Running");
    CHECK_STR(v.ready.message, "ok");
    CHECK_STR(v.ready.last_transition, "2026-05-28T20:26:41Z");
    CHECK_INT(v.workspace.present, 1);
    CHECK_STR(v.workspace.reason, "Resizing");
    CHECK(v.workspace.last_transition == NULL);
    CHECK_INT(v.accepted.present, 1);
    CHECK_STR(v.accepted.reason, "InvalidSpec");
    CHECK_STR(v.accepted.message, "bad");
    CHECK(v.conditions != NULL && cJSON_GetArraySize(v.conditions) == 4);   /* Custom is kept by the status write */
    CHECK_STR(sbx_sandbox_lifecycle(&v), "session");
    CHECK(sbx_sandbox_phase_is(&v, "Running") && !sbx_sandbox_phase_is(&v, "Run"));
    cJSON_Delete(o);
}

TEST(what_people_are_shown_of_a_full_sandbox) {
    cJSON *o = parse(FULL);
    struct sbx_sandbox_shown sh;
    sbx_sandbox_view_shown(o, &sh);
    CHECK_STR(sh.api_version, "sandbox.yaoapps.com/v1alpha1");
    CHECK_STR(sh.kind, "Sandbox");
    CHECK_STR(sh.image, "img:1");
    CHECK_STR(sh.idle_timeout, "30m");
    CHECK_STR(sh.memory, "1Gi");
    CHECK_STR(sh.cpu, "500m");
    CHECK_STR(sh.workspace_size, "5Gi");
    CHECK_STR(sh.mount_path, "/w");
    CHECK_STR(sh.workspace_storage_class, "fast");
    CHECK_INT(cJSON_GetArraySize(sh.ports), 1);
    CHECK_INT(cJSON_GetArraySize(sh.env), 1);
    CHECK_STR(kj_str(sh.run, "workingDir"), "/w");
    CHECK_INT(sh.has_ttl_after_finished, 1);
    CHECK_INT(sh.ttl_after_finished_s, 600);
    CHECK_STR(sh.pod_ip, "10.0.0.7");
    CHECK_STR(sh.node_name, "n-1");
    CHECK_STR(sh.status_idle_timeout, "30m");
    CHECK_STR(sh.reclaim_after, "10m");
    CHECK_STR(sh.idle_at, "2026-05-28T20:57:00Z");
    CHECK_INT(sh.has_queue_position && sh.has_restart_count && sh.has_observed_generation, 1);
    CHECK_INT(sh.queue_position, 2);
    CHECK_INT(sh.restart_count, 1);
    CHECK_INT(sh.observed_generation, 6);
    CHECK_INT(sh.has_run_exit_code, 1);
    CHECK_INT(sh.run_exit_code, 3);
    CHECK_INT(sh.run_truncated, 1);
    CHECK_STR(sh.run_stdout, "out\n");
    CHECK_STR(sh.run_stderr, "err\n");
    cJSON_Delete(o);
}

TEST(what_people_are_shown_of_nothing_or_wrong_types_is_absent) {
    struct sbx_sandbox_shown sh;
    sbx_sandbox_view_shown(NULL, &sh);
    CHECK(!sh.image && !sh.pod_ip && !sh.ports && !sh.run && !sh.run_stdout);
    CHECK_INT(sh.has_ttl_after_finished + sh.has_queue_position + sh.has_restart_count + sh.has_run_exit_code, 0);
    cJSON *o = parse("{\"spec\":{\"image\":1,\"ports\":{\"port\":1},\"env\":\"A=1\",\"run\":[\"sh\"],"
                     "\"ttlSecondsAfterFinished\":\"600\",\"workspace\":{\"size\":5}},"
                     "\"status\":{\"podIP\":[],\"queuePosition\":\"2\",\"restartCount\":null,"
                     "\"run\":{\"exitCode\":\"3\",\"stdout\":7,\"truncated\":\"yes\"}}}");
    sbx_sandbox_view_shown(o, &sh);
    CHECK(!sh.image && !sh.ports && !sh.env && !sh.run && !sh.workspace_size && !sh.pod_ip && !sh.run_stdout);
    CHECK_INT(sh.has_ttl_after_finished + sh.has_queue_position + sh.has_restart_count + sh.has_run_exit_code, 0);
    CHECK_INT(sh.run_truncated, 0);
    cJSON_Delete(o);
}

TEST(the_strings_point_into_the_object) {
    cJSON *o = parse(FULL);
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(o, &v);
    const cJSON *md = cJSON_GetObjectItem(o, "metadata"), *st = cJSON_GetObjectItem(o, "status");
    CHECK(v.meta.name == cJSON_GetObjectItem(md, "name")->valuestring);
    CHECK(v.phase == cJSON_GetObjectItem(st, "phase")->valuestring);
    CHECK(v.user_id == cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"), "userID")->valuestring);
    CHECK(v.meta.annotations == cJSON_GetObjectItem(md, "annotations"));
    cJSON_Delete(o);
}

static void check_all_absent(const struct sbx_sandbox_view *v) {
    CHECK(!v->meta.namespace_ && !v->meta.name && !v->meta.uid && !v->meta.resource_version);
    CHECK_INT(v->meta.generation, 0);
    CHECK_INT(v->meta.created_ms, 0);
    CHECK_INT(v->meta.deleting, 0);
    CHECK(!v->meta.labels && !v->meta.annotations);
    CHECK(!v->last_used_at && !v->last_activity);
    CHECK(!v->user_id && !v->chat_id && !v->class_name && !v->lifecycle);
    CHECK_INT(v->paused, 0);
    CHECK(!v->phase && !v->pod_name && !v->workspace_claim && !v->status_lifecycle);
    CHECK(!v->status_class_name && !v->ignored_last_used_at);
    CHECK_INT(v->last_used_ms + v->started_ms + v->stopped_ms + v->observed_generation, 0);
    CHECK_INT(v->ready.present + v->workspace.present + v->accepted.present, 0);
    CHECK(!v->ready.reason && !v->ready.status && !v->conditions);
    CHECK_INT(v->last_termination.present, 0);
    CHECK_INT(v->run.present + v->run.finished, 0);
    CHECK_INT(v->run.exit_code, -1);
    CHECK_INT(v->run.started_ms + v->run.finished_ms, 0);
    CHECK(sbx_sandbox_lifecycle(v) == NULL);
    CHECK(!sbx_sandbox_phase_is(v, "Running"));
}

TEST(nothing_there_reads_as_absent) {
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(NULL, &v);
    CHECK(v.obj == NULL && v.status == NULL);
    check_all_absent(&v);
    const char *empties[] = {"{}", "{\"metadata\":{},\"spec\":{},\"status\":{}}", "[1,2]", "\"Sandbox\"", "null",
                             "{\"metadata\":null,\"spec\":null,\"status\":null}"};
    for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
        cJSON *o = parse(empties[i]);
        sbx_sandbox_view_parse(o, &v);
        check_all_absent(&v);
        CHECK((v.status != NULL) == (i == 1));   /* an empty status is a status, kept by a write */
        cJSON_Delete(o);
    }
}

TEST(wrong_types_read_as_absent) {
    cJSON *o = parse(
        "{\"metadata\":{\"namespace\":5,\"name\":[\"x\"],\"uid\":{},\"resourceVersion\":42,\"generation\":\"7\","
        "\"creationTimestamp\":1780000000,\"deletionTimestamp\":true,\"labels\":\"app=x\",\"annotations\":[1]},"
        "\"spec\":{\"userID\":1,\"chatID\":null,\"className\":false,\"lifecycle\":[],\"paused\":\"true\"},"
        "\"status\":{\"phase\":1,\"podName\":{},\"workspaceClaim\":[],\"lifecycle\":2,\"className\":3,"
        "\"ignoredLastUsedAt\":4,\"lastUsedAt\":5,\"startedAt\":true,\"stoppedAt\":{},\"observedGeneration\":\"6\","
        "\"lastTermination\":\"OOMKilled\",\"run\":\"done\",\"conditions\":{\"type\":\"Ready\"}}}");
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(o, &v);
    CHECK(!v.meta.namespace_ && !v.meta.name && !v.meta.uid && !v.meta.resource_version);
    CHECK_INT(v.meta.generation, 0);
    CHECK_INT(v.meta.created_ms, 0);
    CHECK_INT(v.meta.deleting, 0);
    CHECK(!v.meta.labels && !v.meta.annotations && !v.last_used_at);
    CHECK(!v.user_id && !v.chat_id && !v.class_name && !v.lifecycle);
    CHECK_INT(v.paused, 0);
    CHECK(v.status != NULL);   /* an object: kept for the status write */
    CHECK(!v.phase && !v.pod_name && !v.workspace_claim && !v.status_lifecycle && !v.status_class_name);
    CHECK(!v.ignored_last_used_at);
    CHECK_INT(v.last_used_ms + v.started_ms + v.stopped_ms + v.observed_generation, 0);
    CHECK_INT(v.last_termination.present, 0);
    CHECK_INT(v.run.present, 0);
    CHECK(v.conditions == NULL && !v.ready.present);   /* not a list */
    cJSON_Delete(o);
    /* A condition without a type, or with a type of the wrong kind, is no condition of ours. */
    o = parse("{\"status\":{\"conditions\":[{\"status\":\"True\"},{\"type\":7,\"reason\":\"x\"},\"Ready\",null]}}");
    sbx_sandbox_view_parse(o, &v);
    CHECK_INT(v.ready.present + v.workspace.present + v.accepted.present, 0);
    CHECK(v.conditions != NULL);
    cJSON_Delete(o);
}

TEST(bad_and_odd_times_read_as_zero) {
    cJSON *o = parse("{\"metadata\":{\"creationTimestamp\":\"2026-13-40T99:99:99Z\"},"
                     "\"status\":{\"lastUsedAt\":\"yesterday\",\"startedAt\":\"\",\"stoppedAt\":\"2026-05-28\","
                     "\"run\":{\"startedAt\":\"2026-05-28T20:26:40+02:00\",\"finishedAt\":\"soon\"}}}");
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(o, &v);
    CHECK_INT(v.meta.created_ms, 0);
    CHECK_INT(v.last_used_ms, 0);
    CHECK_INT(v.started_ms, 0);
    CHECK_INT(v.stopped_ms, 0);
    CHECK_INT(v.run.started_ms, T(-7200));   /* an offset is a time */
    CHECK_INT(v.run.finished, 1);            /* finishedAt is there, unreadable */
    CHECK_INT(v.run.finished_ms, 0);
    CHECK_INT(v.run.exit_code, -1);          /* no exit code: -1 */
    cJSON_Delete(o);
}

TEST(unicode_and_long_values_come_through_whole) {
    char user[501], js[4096];
    memset(user, 'u', 500);
    user[500] = 0;
    snprintf(js, sizeof js,
             "{\"metadata\":{\"name\":\"s\\u00e9\",\"annotations\":{\"sandbox.yaoapps.com/last-used-at\":"
             "\"\\u65e5\\u672c\\ud83d\\ude00\"}},\"spec\":{\"userID\":\"%s\",\"chatID\":\"\\u4f1a\\u8bdd\"},"
             "\"status\":{\"phase\":\"Runn\\u0131ng\",\"conditions\":[{\"type\":\"Ready\",\"reason\":\"%s\"}]}}",
             user, user);
    cJSON *o = parse(js);
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(o, &v);
    CHECK_STR(v.meta.name, "s\xc3\xa9");
    CHECK_STR(v.last_used_at, "\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x98\x80");
    CHECK_STR(v.user_id, user);
    CHECK_INT(strlen(v.user_id), 500);
    CHECK_STR(v.chat_id, "\xe4\xbc\x9a\xe8\xaf\x9d");
    CHECK_STR(v.ready.reason, user);
    CHECK(!sbx_sandbox_phase_is(&v, "Running"));   /* a dotless i is not an i */
    cJSON_Delete(o);
}

TEST(the_first_condition_of_each_type_counts) {
    cJSON *o = parse("{\"status\":{\"conditions\":[{\"type\":\"Workspace\",\"reason\":\"W1\"},"
                     "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Idle\"},"
                     "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Running\"},"
                     "{\"type\":\"Workspace\",\"reason\":\"W2\"},{\"type\":\"ready\",\"reason\":\"lower\"}]}}");
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(o, &v);
    CHECK_STR(v.ready.reason, "Idle");
    CHECK_STR(v.ready.status, "False");
    CHECK_STR(v.workspace.reason, "W1");
    CHECK_INT(v.accepted.present, 0);
    cJSON_Delete(o);
}

TEST(a_run_under_way_and_the_lifecycle_in_force) {
    cJSON *o = parse("{\"spec\":{\"lifecycle\":\"\"},\"status\":{\"lifecycle\":\"one-shot\","
                     "\"run\":{\"startedAt\":\"2026-05-28T20:26:41Z\",\"exitCode\":9}}}");
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(o, &v);
    CHECK_INT(v.run.present, 1);
    CHECK_INT(v.run.finished, 0);
    CHECK_INT(v.run.exit_code, -1);   /* only a finished run has one */
    CHECK_INT(v.run.started_ms, T(1));
    CHECK_INT(v.run.finished_ms, 0);
    CHECK_STR(v.lifecycle, "");
    CHECK_STR(sbx_sandbox_lifecycle(&v), "one-shot");   /* an empty spec.lifecycle: the recorded default */
    cJSON_Delete(o);
    o = parse("{\"spec\":{\"lifecycle\":\"persistent\"},\"status\":{\"lifecycle\":\"session\"}}");
    sbx_sandbox_view_parse(o, &v);
    CHECK_STR(sbx_sandbox_lifecycle(&v), "persistent");
    cJSON_Delete(o);
}

TEST(an_absurd_generation_is_clamped) {
    cJSON *o = parse("{\"metadata\":{\"generation\":1e300},\"status\":{\"observedGeneration\":-1e300}}");
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(o, &v);
    CHECK(v.meta.generation == INT64_MAX);
    CHECK(v.observed_generation == INT64_MIN);
    cJSON_Delete(o);
}
