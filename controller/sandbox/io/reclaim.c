/* sandbox/io/reclaim.c — a SandboxClass's spec.reclaim, the I/O side: while a Sandbox waits
 * in line for the global running cap, the longest-idle running session or long-running
 * Sandboxes of classes that allow it are stopped (pod deleted, workspace kept) to admit it.
 *
 * The choice is sandbox/decide/capacity_decide.c's (sbx_slots_reclaim_pick: only as many as can
 * then be admitted, longest idle first), made on what the passes reported. Each chosen
 * Sandbox is then read fresh from the API server and stopped only if that read still
 * shows it running, idle past its class's threshold and of a reclaimable lifecycle: the
 * stop is recorded first in its status (phase Stopping, Ready reason Reclaimed, and the
 * last use this read saw), written conditionally on the resourceVersion read, so a touch
 * the API server accepted before makes it fail and nothing is stopped; then the pod is
 * deleted with a uid precondition. From then on the Sandbox's own passes keep it stopped
 * exactly as an idle long-running one (sandbox/decide/reconcile_decide.c), until a newer use starts it
 * again. */
#include <stdio.h>
#include <string.h>

#include "kube/kjson.h"
#include "base/log.h"
#include "sandbox/model/objects.h"
#include "sandbox/io/owned.h"
#include "sandbox/io/reclaim.h"
#include "sandbox/io/status.h"

/* A reclaim chosen but not yet seen through (its pod not yet terminating) is not chosen
 * again for this long. */
#define RECLAIM_UNDER_WAY_MS 30000
/* At most this many Sandboxes are reclaimed by one pass. */
#define RECLAIM_BATCH 4

void sbx_reclaim_note(struct sbx_slots *slots, const char *uid, const struct sbx_spec *spec,
                              const struct sbx_decision *d, int pod_present) {
    int64_t after = 0;
    int warm = 0;
    if (spec && spec->reclaim_after_ms > 0 && !spec->paused &&
        (spec->lifecycle == SBX_SESSION || spec->lifecycle == SBX_LONG_RUNNING) && pod_present && d &&
        !strcmp(d->phase, "Running") && !d->actions) {
        after = spec->reclaim_after_ms;
        /* Warm-idle: idle past its idle timeout already, so reclaimable once idle that
         * long (a fresh read re-checks it), and before any sandbox that is not. */
        int64_t limit = lifecycle_idle_limit_ms(spec);
        warm = d->warm_idle_since_ms > 0;
        if (warm && limit > 0 && limit < after) after = limit;
    }
    sbx_slots_reclaimable(slots, uid, after, d ? d->last_used_ms : 0);
    sbx_slots_reclaim_first(slots, uid, warm);
}

/* The last use a Sandbox object shows: its last-used-at annotation (one in the future
 * counts as now), status.lastUsedAt, status.startedAt; 0 when none. */
static int64_t fresh_last_used(const struct sbx_sandbox_view *sb, int64_t now) {
    int64_t t = 0;
    lifecycle_last_used_check(sb->last_used_at, now, &t);
    if (sb->last_used_ms > t) t = sb->last_used_ms;
    if (sb->started_ms > t) t = sb->started_ms;
    return t;
}

/* Why sb (read fresh) is not to be reclaimed now, or NULL when it is. */
static const char *not_reclaimable(const struct sbx_sandbox_view *sb, const struct sbx_reclaim_victim *v, int64_t now,
                                   int64_t *last_used) {
    const char *uid = sb->meta.uid, *phase = sb->phase;
    const char *lc = sbx_sandbox_lifecycle(sb);
    if (!uid || strcmp(uid, v->uid) != 0) return "another Sandbox of that name";
    if (sb->meta.deleting) return "being deleted";
    if (sb->paused) return "paused";
    if (!lc || (strcmp(lc, "session") != 0 && strcmp(lc, "long-running") != 0)) return "its lifecycle";
    if (!phase || strcmp(phase, "Running") != 0) return "not running";
    *last_used = fresh_last_used(sb, now);
    if (*last_used <= 0 || now - *last_used < v->after_ms) return "used recently";
    return NULL;
}

/* The status recording the reclaim: sb's own, phase Stopping, Ready False with reason
 * Reclaimed, lastUsedAt the use this decision saw (its passes then keep it stopped until a
 * newer one). NULL on ENOMEM. */
static cJSON *reclaimed_status(const struct sbx_sandbox_view *sb, int64_t last_used, int64_t now, const char *msg) {
    cJSON *st = cJSON_Duplicate(sb->status, 1), *c;
    char t[40];
    if (!st) return NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(st, "podIP");
    cJSON_DeleteItemFromObjectCaseSensitive(st, "nodeName");
    cJSON_DeleteItemFromObjectCaseSensitive(st, "queuePosition");
    cJSON_DeleteItemFromObjectCaseSensitive(st, "phase");
    cJSON_DeleteItemFromObjectCaseSensitive(st, "lastUsedAt");
    cJSON_DeleteItemFromObjectCaseSensitive(st, "warmIdleSince");
    if (!cJSON_AddStringToObject(st, "phase", "Stopping")) goto fail;
    sbx_add_time_ms(st, "lastUsedAt", last_used);
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(st, "conditions");
    if (!cJSON_IsArray(conds)) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
        if (!(conds = cJSON_AddArrayToObject(st, "conditions"))) goto fail;
    }
    cJSON_ArrayForEach(c, conds) {   /* the copy's Ready condition, to be rewritten */
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
        if (cJSON_IsString(type) && !strcmp(type->valuestring, "Ready")) break;
    }
    if (!c) {
        if (!(c = cJSON_CreateObject())) goto fail;
        cJSON_AddItemToArray(conds, c);
        cJSON_AddStringToObject(c, "type", "Ready");
    }
    const char *was = sb->ready.status;
    if (!was || strcmp(was, "False") != 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(c, "lastTransitionTime");
        kj_time_format(now, t, sizeof(t));
        cJSON_AddStringToObject(c, "lastTransitionTime", t);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(c, "status");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "reason");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "message");
    if (!cJSON_AddStringToObject(c, "status", "False") || !cJSON_AddStringToObject(c, "reason", SBX_REASON_RECLAIMED) ||
        !cJSON_AddStringToObject(c, "message", msg))
        goto fail;
    return st;
fail:
    cJSON_Delete(st);
    return NULL;
}

/* Reclaim v on a fresh read. 1 when it was stopped, 0 when the read said no (or it changed
 * meanwhile), -1 on an error. */
static int reclaim_one(const struct sbx_deps *deps, struct sbx_slots *slots, const struct sbx_reclaim_victim *v, int64_t now) {
    char ns[256], name[256], path[1024], msg[512], okey[520];
    struct kube_error err;
    const char *slash = strchr(v->key, '/');
    cJSON *sb = NULL, *pod = NULL, *st = NULL;
    int rc = -1;
    if (!slash || (size_t)(slash - v->key) >= sizeof(ns) || strlen(slash + 1) >= sizeof(name)) return 0;
    snprintf(ns, sizeof(ns), "%.*s", (int)(slash - v->key), v->key);
    snprintf(name, sizeof(name), "%s", slash + 1);
    /* A list by name: a consistent read from the API server (no resourceVersion: never a
     * cache), with the verbs the controller has anyway (list, not get). */
    snprintf(path, sizeof(path), "/apis/%s/v1alpha1/namespaces/%s/%s?fieldSelector=metadata.name%%3D%s", SBX_GROUP, ns,
             SBX_PLURAL, name);
    cJSON *list = NULL;
    long code = kube_get(deps->client, path, &list, &err);
    if (code != 200 || !list) {
        cJSON_Delete(list);
        LOGW("msg=\"reclaim: reading the Sandbox failed\" sandbox=%s err=\"%s\"", v->key, err.message);
        goto out;
    }
    const cJSON *items = kj_path(list, "items");
    sb = cJSON_IsArray(items) && cJSON_GetArraySize(items) == 1
             ? cJSON_DetachItemFromArray((cJSON *)items, 0) : NULL;
    cJSON_Delete(list);
    if (!sb) { rc = 0; goto out; }   /* gone */
    struct sbx_sandbox_view sv;   /* the fresh read, parsed once; it points into sb */
    sbx_sandbox_view_parse(sb, &sv);
    int64_t last_used = 0;
    const char *why = not_reclaimable(&sv, v, now, &last_used);
    if (why) {
        LOGI("msg=\"reclaim: not reclaimed after all\" sandbox=%s why=\"%s\"", v->key, why);
        /* What the fresh read showed, until its own pass reports again. */
        sbx_slots_reclaimable(slots, v->uid, !strcmp(why, "used recently") ? v->after_ms : 0, last_used);
        rc = 0;
        goto out;
    }
    /* Its pod, as ours: named in the status, controlled by this very Sandbox. */
    const char *pod_name = sv.pod_name, *pod_uid = NULL;
    struct sbx_meta pm;
    sbx_meta_read(NULL, &pm);
    if (pod_name) {
        snprintf(okey, sizeof(okey), "%s/%s", ns, pod_name);
        pod = informer_get(deps->pods, okey);
        sbx_meta_read(pod, &pm);
        if (pm.controller_uid && !strcmp(pm.controller_uid, v->uid)) pod_uid = pm.uid;
    }
    if (!pod_uid || pm.deleting) { rc = 0; goto out; }
    long idle_s = (long)((now - last_used) / 1000), after_s = (long)(v->after_ms / 1000);
    if (v->cls[0])
        snprintf(msg, sizeof(msg), "idle for %lds (SandboxClass \"%.200s\" spec.reclaim.idleAfter: %lds): stopped to "
                 "admit a waiting sandbox; the workspace is kept, the next use starts it again", idle_s, v->cls, after_s);
    else
        snprintf(msg, sizeof(msg), "idle for %lds: stopped to admit a waiting sandbox; the workspace is kept, the "
                 "next use starts it again", idle_s);
    st = reclaimed_status(&sv, last_used, now, msg);
    if (!st) goto out;
    int w = sbx_status_write(deps, ns, name, &sv, st, sv.meta.resource_version, NULL, 0, &err);
    if (w == SBX_STALE) {
        LOGI("msg=\"reclaim: the Sandbox changed since it was read; not reclaimed\" sandbox=%s", v->key);
        rc = 0;
        goto out;
    }
    if (w != 0) { LOGW("msg=\"reclaim: recording the stop failed\" sandbox=%s err=\"%s\"", v->key, err.message); goto out; }
    if (sbx_delete_owned(deps, ns, "pods", pod_name, pod_uid, &err) < 0)
        LOGW("msg=\"reclaim: deleting the pod failed (its pass deletes it)\" sandbox=%s err=\"%s\"", v->key, err.message);
    sbx_event_record(deps, &sv, "Normal", SBX_REASON_RECLAIMED, msg);
    sbx_count(&deps->counters->reclaims);
    LOGI("msg=\"sandbox reclaimed\" sandbox=%s idle_s=%ld class=\"%s\"", v->key, idle_s, v->cls);
    queue_add(deps->queue, v->key);
    rc = 1;
out:
    cJSON_Delete(st);
    cJSON_Delete(pod);
    cJSON_Delete(sb);
    return rc;
}

int64_t sbx_reclaim_run(const struct sbx_deps *deps, struct sbx_slots *slots, int64_t now) {
    struct sbx_reclaim_victim v[RECLAIM_BATCH];
    int64_t next = 0;
    size_t n = sbx_slots_reclaim_pick(slots, now, now + RECLAIM_UNDER_WAY_MS, v, RECLAIM_BATCH, &next);
    for (size_t i = 0; i < n; i++)
        if (reclaim_one(deps, slots, &v[i], now) != 1) sbx_slots_reclaim_cancel(slots, v[i].uid);
    return next;
}
