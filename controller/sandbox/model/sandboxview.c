/* sandbox/model/sandboxview.c — the one place a Sandbox is read by path (see sandboxview.h). */
#include "sandbox/model/sandboxview.h"

#include <string.h>

#include "kube/kjson.h"
#include "sandbox/model/termination.h"
#include "sandbox/model/spec.h"

/* The time at obj.path in ms (0 when absent or unparseable); *text (may be NULL) as written. */
static int64_t time_of(const cJSON *obj, const char *path, const char **text) {
    int64_t ms;
    const char *s = kj_str(obj, path);
    if (text) *text = s;
    return s && kj_time_parse(s, &ms) == 0 ? ms : 0;
}

static void condition_read(const cJSON *c, struct sbx_condition_view *out) {
    out->present = 1;
    out->status = kj_str(c, "status");
    out->reason = kj_str(c, "reason");
    out->message = kj_str(c, "message");
    out->last_transition = kj_str(c, "lastTransitionTime");
}

void sbx_sandbox_view_parse(const cJSON *sb, struct sbx_sandbox_view *v) {
    memset(v, 0, sizeof(*v));
    v->run.exit_code = -1;
    v->obj = sb;
    if (!cJSON_IsObject(sb)) return;
    sbx_meta_read(sb, &v->meta);
    v->last_used_at = sbx_meta_annotation(&v->meta, SBX_ANN_LAST_USED);
    v->last_activity = sbx_meta_annotation(&v->meta, SBX_ANN_LAST_ACTIVITY);

    v->user_id = kj_str(sb, "spec.userID");
    v->chat_id = kj_str(sb, "spec.chatID");
    v->class_name = kj_str(sb, "spec.className");
    v->lifecycle = kj_str(sb, "spec.lifecycle");
    v->paused = kj_bool(sb, "spec.paused", 0);

    const cJSON *st = cJSON_GetObjectItemCaseSensitive(sb, "status");
    if (!cJSON_IsObject(st)) return;
    v->status = st;
    v->phase = kj_str(st, "phase");
    v->pod_name = kj_str(st, "podName");
    v->workspace_claim = kj_str(st, "workspaceClaim");
    v->status_lifecycle = kj_str(st, "lifecycle");
    v->status_class_name = kj_str(st, "className");
    v->ignored_last_used_at = kj_str(st, "ignoredLastUsedAt");
    v->last_used_ms = time_of(st, "lastUsedAt", &v->last_used_text);
    v->started_ms = time_of(st, "startedAt", &v->started_text);
    v->stopped_ms = time_of(st, "stoppedAt", &v->stopped_text);
    v->warm_idle_since_ms = time_of(st, "warmIdleSince", NULL);
    v->observed_generation = kj_int(st, "observedGeneration", 0);
    sbx_termination_read(kj_path(st, "lastTermination"), &v->last_termination);

    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(st, "conditions"), *c;
    if (cJSON_IsArray(conds)) {
        v->conditions = conds;
        cJSON_ArrayForEach(c, conds) {
            const char *type = kj_str(c, "type");
            struct sbx_condition_view *to = !type ? NULL
                                            : !strcmp(type, "Ready")     ? &v->ready
                                            : !strcmp(type, "Workspace") ? &v->workspace
                                            : !strcmp(type, "Accepted")  ? &v->accepted
                                                                         : NULL;
            if (to && !to->present) condition_read(c, to);   /* the first of each type */
        }
    }

    const cJSON *run = cJSON_GetObjectItemCaseSensitive(st, "run");
    if (cJSON_IsObject(run)) {
        v->run.present = 1;
        v->run.started_ms = time_of(run, "startedAt", &v->run.started_text);
        v->run.finished_ms = time_of(run, "finishedAt", &v->run.finished_text);
        if (v->run.finished_text) {
            v->run.finished = 1;
            v->run.exit_code = (int)kj_int(run, "exitCode", -1);
        }
    }
}

/* A number at obj.path: 1 with *out, or 0. */
static int number_at(const cJSON *obj, const char *path, int64_t *out) {
    const cJSON *n = kj_path(obj, path);
    if (!cJSON_IsNumber(n)) return 0;
    *out = kj_int(obj, path, 0);
    return 1;
}

static const cJSON *of_type(const cJSON *v, int array) {
    return (array ? cJSON_IsArray(v) : cJSON_IsObject(v)) ? v : NULL;
}

void sbx_sandbox_view_shown(const cJSON *sb, struct sbx_sandbox_shown *out) {
    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(sb)) return;
    out->api_version = kj_str(sb, "apiVersion");
    out->kind = kj_str(sb, "kind");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(sb, "spec");
    out->image = kj_str(spec, "image");
    out->idle_timeout = kj_str(spec, "idleTimeout");
    out->memory = kj_str(spec, "resources.memory");
    out->cpu = kj_str(spec, "resources.cpu");
    out->workspace_size = kj_str(spec, "workspace.size");
    out->mount_path = kj_str(spec, "workspace.mountPath");
    out->workspace_storage_class = kj_str(spec, "workspace.storageClassName");
    out->ports = of_type(kj_path(spec, "ports"), 1);
    out->env = of_type(kj_path(spec, "env"), 1);
    out->run = of_type(kj_path(spec, "run"), 0);
    out->has_ttl_after_finished = number_at(spec, "ttlSecondsAfterFinished", &out->ttl_after_finished_s);

    const cJSON *st = cJSON_GetObjectItemCaseSensitive(sb, "status");
    if (!cJSON_IsObject(st)) return;
    out->pod_ip = kj_str(st, "podIP");
    out->node_name = kj_str(st, "nodeName");
    out->status_idle_timeout = kj_str(st, "idleTimeout");
    out->reclaim_after = kj_str(st, "reclaimAfter");
    out->idle_at = kj_str(st, "idleAt");
    out->has_queue_position = number_at(st, "queuePosition", &out->queue_position);
    out->has_restart_count = number_at(st, "restartCount", &out->restart_count);
    out->has_observed_generation = number_at(st, "observedGeneration", &out->observed_generation);
    const cJSON *run = of_type(kj_path(st, "run"), 0);
    out->has_run_exit_code = number_at(run, "exitCode", &out->run_exit_code);
    out->run_truncated = kj_bool(run, "truncated", 0);
    out->run_stdout = kj_str(run, "stdout");
    out->run_stderr = kj_str(run, "stderr");
}

const char *sbx_sandbox_lifecycle(const struct sbx_sandbox_view *v) {
    return v->lifecycle && *v->lifecycle ? v->lifecycle : v->status_lifecycle;
}

int sbx_sandbox_phase_is(const struct sbx_sandbox_view *v, const char *want) {
    return v->phase && !strcmp(v->phase, want);
}
