/* sandbox/decide/reconcile_observe.c — the reconcile pass's observe stage: the slim cached Pod and
 * what lifecycle_decide observes in it (see reconcile_observe.h). Owns the choice of which pod fields the controller keeps: anything read
 * here must survive sbx_pod_shrink, and the unit tests check that both agree. */
#include "sandbox/decide/reconcile_observe.h"

#include <string.h>


#include "kube/kjson.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/spec.h"

/* ---- shrinking ------------------------------------------------------------------------ */

/* Reasons are CamelCase words; one this long is no reason reconcile_decide.c passes on anyway. */
#define REASON_MAX 128
/* A termination message: the kubelet keeps at most 4096 bytes (a one-shot run's tails). */
#define TERMINATION_MESSAGE_MAX 4096

/* Copy src[key] into dst if it is there; strings longer than max bytes are cut on a
 * UTF-8 boundary (max 0: any length). -1 on ENOMEM. */
static int keep(cJSON *dst, const cJSON *src, const char *key, size_t max) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, key);
    cJSON *copy;
    if (!v) return 0;
    if (max && cJSON_IsString(v) && strlen(v->valuestring) > max) {
        char buf[TERMINATION_MESSAGE_MAX + 1];
        size_t n = max < sizeof(buf) - 1 ? max : sizeof(buf) - 1;
        while (n > 0 && ((unsigned char)v->valuestring[n] & 0xC0) == 0x80) n--;
        memcpy(buf, v->valuestring, n);
        buf[n] = 0;
        copy = cJSON_CreateString(buf);
    } else {
        copy = cJSON_Duplicate(v, 1);
    }
    if (!copy || !cJSON_AddItemToObject(dst, key, copy)) {
        cJSON_Delete(copy);
        return -1;
    }
    return 0;
}

/* {reason, exitCode, finishedAt} of a terminated state into a new member key of dst;
 * with full, also startedAt and the message (the current state: a one-shot run's result). */
static int keep_terminated(cJSON *dst, const char *key, const cJSON *term, int full) {
    if (!term) return 0;
    cJSON *t = cJSON_AddObjectToObject(dst, key);
    if (!t) return -1;
    int rc = keep(t, term, "reason", REASON_MAX);
    rc |= keep(t, term, "exitCode", 0);
    rc |= keep(t, term, "finishedAt", 0);
    if (full) {
        rc |= keep(t, term, "startedAt", 0);
        rc |= keep(t, term, "message", TERMINATION_MESSAGE_MAX);
    }
    return rc;
}

/* The sandbox container's status, or the first one when none is named so. */
static const cJSON *sandbox_container(const cJSON *pod) {
    const cJSON *c, *first = NULL;
    cJSON_ArrayForEach(c, kj_path(pod, "status.containerStatuses")) {
        const char *name = kj_str(c, "name");
        if (name && !strcmp(name, SBX_CONTAINER_NAME)) return c;
        if (!first) first = c;
    }
    return first;
}

/* The sandbox container of the pod's spec (by name), or NULL. */
static const cJSON *spec_container(const cJSON *pod) {
    const cJSON *c;
    cJSON_ArrayForEach(c, kj_path(pod, "spec.containers")) {
        const char *name = kj_str(c, "name");
        if (name && !strcmp(name, SBX_CONTAINER_NAME)) return c;
    }
    return NULL;
}

/* Copy src.<a>.<b> into dst.<a>.<b> when it is there. -1 on ENOMEM. */
static int keep2(cJSON *dst, const cJSON *src, const char *a, const char *b) {
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(src, a);
    if (!cJSON_GetObjectItemCaseSensitive(in, b)) return 0;
    cJSON *out = cJSON_GetObjectItemCaseSensitive(dst, a);
    if (!out && !(out = cJSON_AddObjectToObject(dst, a))) return -1;
    return keep(out, in, b, 0);
}

/* [{name, resources: {requests: {cpu}, limits: {cpu}}}] of the sandbox container in a
 * pod's spec (what a warm-idle resize set), or NULL (none, or ENOMEM). */
static cJSON *slim_spec_containers(const cJSON *spec) {
    const cJSON *c, *found = NULL;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers")) {
        const char *name = kj_str(c, "name");
        if (name && !strcmp(name, SBX_CONTAINER_NAME)) { found = c; break; }
    }
    if (!found) return NULL;
    cJSON *arr = cJSON_CreateArray(), *one = cJSON_CreateObject(), *res;
    if (!arr || !one || !cJSON_AddItemToArray(arr, one)) { cJSON_Delete(arr); cJSON_Delete(one); return NULL; }
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(found, "resources");
    if (keep(one, found, "name", 0) || !(res = cJSON_AddObjectToObject(one, "resources")) ||
        keep2(res, r, "requests", "cpu") || keep2(res, r, "limits", "cpu")) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

/* The slice of a containerStatus the controller reads. */
static cJSON *slim_container(const cJSON *c) {
    cJSON *s = cJSON_CreateObject(), *state;
    const cJSON *w = kj_path(c, "state.waiting"), *r = kj_path(c, "state.running");
    int rc = 0;
    if (!s) return NULL;
    rc |= keep(s, c, "name", 0);
    rc |= keep(s, c, "ready", 0);
    rc |= keep(s, c, "restartCount", 0);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
    if (!rc && res) {   /* what the kubelet gave it: a warm-idle resize done or not */
        cJSON *sres = cJSON_AddObjectToObject(s, "resources");
        rc |= !sres ? -1 : keep2(sres, res, "limits", "cpu");
    }
    if (!(state = cJSON_AddObjectToObject(s, "state"))) rc = -1;
    if (!rc && w) {
        cJSON *sw = cJSON_AddObjectToObject(state, "waiting");
        if (!sw) rc = -1;
        else {
            rc |= keep(sw, w, "reason", REASON_MAX);
            rc |= keep(sw, w, "message", SBX_MESSAGE_MAX);
        }
    }
    if (!rc && r) {
        cJSON *sr = cJSON_AddObjectToObject(state, "running");
        rc |= !sr ? -1 : keep(sr, r, "startedAt", 0);
    }
    if (!rc) rc |= keep_terminated(state, "terminated", kj_path(c, "state.terminated"), 1);
    const cJSON *last = kj_path(c, "lastState.terminated");
    if (!rc && last) {
        cJSON *ls = cJSON_AddObjectToObject(s, "lastState");
        rc |= !ls ? -1 : keep_terminated(ls, "terminated", last, 0);
    }
    if (rc) { cJSON_Delete(s); return NULL; }
    return s;
}

/* The slim status: phase, reason, message, podIP, startTime, the Ready and PodScheduled
 * conditions, the sandbox container. NULL on ENOMEM. */
static cJSON *slim_status(const cJSON *pod) {
    const cJSON *st = kj_path(pod, "status"), *c;
    cJSON *s = cJSON_CreateObject(), *conds;
    int rc = 0;
    if (!s) return NULL;
    static const struct { const char *key; size_t max; } fields[] = {
        {"phase", 0}, {"reason", REASON_MAX}, {"message", SBX_MESSAGE_MAX}, {"podIP", 0}, {"startTime", 0},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) rc |= keep(s, st, fields[i].key, fields[i].max);
    if (!(conds = cJSON_AddArrayToObject(s, "conditions"))) rc = -1;
    cJSON_ArrayForEach(c, kj_path(st, "conditions")) {
        const char *type = kj_str(c, "type");
        if (rc || !type || (strcmp(type, "Ready") && strcmp(type, "PodScheduled") && strcmp(type, "PodResizePending")))
            continue;
        cJSON *sc = cJSON_CreateObject();
        if (!sc) { rc = -1; break; }
        cJSON_AddItemToArray(conds, sc);
        rc |= keep(sc, c, "type", 0);
        rc |= keep(sc, c, "status", 0);
        rc |= keep(sc, c, "lastTransitionTime", 0);
        rc |= keep(sc, c, "reason", REASON_MAX);
        rc |= keep(sc, c, "message", SBX_MESSAGE_MAX);
    }
    const cJSON *ctr = sandbox_container(pod);
    if (!rc && ctr) {
        cJSON *arr = cJSON_AddArrayToObject(s, "containerStatuses"), *slim = slim_container(ctr);
        if (!arr || !slim) { cJSON_Delete(slim); rc = -1; }
        else cJSON_AddItemToArray(arr, slim);
    }
    if (rc) { cJSON_Delete(s); return NULL; }
    return s;
}

void sbx_pod_shrink(cJSON *pod) {
    if (!cJSON_IsObject(pod)) return;
    kj_strip_metadata(pod);
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    if (spec) {
        cJSON *node = cJSON_DetachItemFromObjectCaseSensitive(spec, "nodeName");
        cJSON *deadline = cJSON_DetachItemFromObjectCaseSensitive(spec, "activeDeadlineSeconds");
        cJSON *cpu = slim_spec_containers(spec);
        cJSON_DeleteItemFromObjectCaseSensitive(pod, "spec");
        cJSON *small = cJSON_AddObjectToObject(pod, "spec");
        if (!small || !node || !cJSON_AddItemToObject(small, "nodeName", node)) cJSON_Delete(node);
        if (!small || !deadline || !cJSON_AddItemToObject(small, "activeDeadlineSeconds", deadline))
            cJSON_Delete(deadline);
        if (!small || !cpu || !cJSON_AddItemToObject(small, "containers", cpu)) cJSON_Delete(cpu);
    }
    if (!cJSON_GetObjectItemCaseSensitive(pod, "status")) return;
    /* Out of memory: keep the full status rather than lose what the controller reads.
     * The key is allocated here because cJSON_ReplaceItemInObject (1.7.15) does not check
     * its own copy of it and would leave a status without a name. */
    cJSON *slim = slim_status(pod);
    char *key = slim ? cJSON_malloc(sizeof("status")) : NULL;
    if (!key) { cJSON_Delete(slim); return; }
    memcpy(key, "status", sizeof("status"));
    slim->string = key;
    cJSON_ReplaceItemViaPointer(pod, cJSON_GetObjectItemCaseSensitive(pod, "status"), slim);
}

/* ---- observing ------------------------------------------------------------------------ */

/* Timestamp at path, or 0. */
static int64_t time_at(const cJSON *obj, const char *path) {
    int64_t ms;
    const char *s = kj_str(obj, path);
    return s && kj_time_parse(s, &ms) == 0 ? ms : 0;
}

/* A CPU quantity at path in millicores, or 0 (absent or not a quantity). */
static int64_t cpu_at(const cJSON *obj, const char *path) {
    int64_t m;
    const char *s = kj_str(obj, path);
    return s && qty_parse_cpu(s, &m) == 0 ? m : 0;
}

void sbx_pod_observe(const cJSON *pod, struct sbx_observed *o) {
    const cJSON *ready = kj_condition(pod, "Ready"), *sched = kj_condition(pod, "PodScheduled");
    const cJSON *c = sandbox_container(pod);
    const char *st;
    o->pod_phase = kj_str(pod, "status.phase");
    o->pod_reason = kj_str(pod, "status.reason");
    o->run_timeout_s = kj_int(pod, "spec.activeDeadlineSeconds", 0);
    st = kj_str(ready, "status");
    o->pod_ready = st && !strcmp(st, "True");
    o->pod_ready_since_ms = o->pod_ready ? time_at(ready, "lastTransitionTime") : 0;
    o->pod_started_ms = time_at(pod, "status.startTime");
    st = kj_str(sched, "status");
    o->pod_unscheduled_reason = st && !strcmp(st, "False") ? kj_str(sched, "reason") : NULL;
    o->pod_unscheduled_message = o->pod_unscheduled_reason ? kj_str(sched, "message") : NULL;
    o->pod_unscheduled_since_ms = o->pod_unscheduled_reason ? time_at(sched, "lastTransitionTime") : 0;
    const cJSON *resize = kj_condition(pod, "PodResizePending"), *sc = spec_container(pod);
    st = kj_str(resize, "status");
    o->pod_resize_pending = st && !strcmp(st, "True") ? kj_str(resize, "reason") : NULL;
    o->pod_cpu_limit_millis = cpu_at(sc, "resources.limits.cpu");
    o->pod_cpu_request_millis = cpu_at(sc, "resources.requests.cpu");
    o->pod_cpu_allocated_millis = cpu_at(c, "resources.limits.cpu");
    memset(&o->ctr, 0, sizeof(o->ctr));
    if (!c) return;
    o->ctr.present = 1;
    o->ctr.ready = kj_bool(c, "ready", 0);
    o->ctr.restart_count = (int)kj_int(c, "restartCount", 0);
    o->ctr.waiting_reason = kj_str(c, "state.waiting.reason");
    o->ctr.waiting_message = kj_str(c, "state.waiting.message");
    o->ctr.running_since_ms = time_at(c, "state.running.startedAt");
    sbx_termination_read(kj_path(c, "state.terminated"), &o->ctr.terminated);
    sbx_termination_read(kj_path(c, "lastState.terminated"), &o->ctr.last);
}

/* Whether the pod has ended for good (phase Succeeded or Failed). */
int sbx_pod_finished(const cJSON *pod) {
    const char *phase = kj_str(pod, "status.phase");
    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

int sbx_pod_placed(const cJSON *pod) {
    return kj_str(pod, "spec.nodeName") || kj_str(pod, "status.startTime");
}

const char *sbx_pod_node(const cJSON *pod) { return kj_str(pod, "spec.nodeName"); }

const char *sbx_pod_ip(const cJSON *pod) { return kj_str(pod, "status.podIP"); }
