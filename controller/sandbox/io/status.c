/* sandbox/io/status.c — what the controller tells about a Sandbox: its status (written only
 * when it changed, or conditionally as the fence before anything is destroyed), the
 * Sandbox DELETE with its preconditions, Events on transitions, and the checks of the
 * last-used-at annotation (in the future: rewritten to now; unparseable: ignored). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/kjson.h"
#include "base/log.h"
#include "sandbox/model/objects.h"
#include "sandbox/decide/activity_decide.h"
#include "sandbox/io/owned.h"
#include "sandbox/io/status.h"
#include "kube/events.h"
#include "sandbox/model/oneshot.h"
#include "sandbox/model/quantity.h"
#include "sandbox/decide/reconcile_observe.h"
#include "sandbox/model/spec.h"

/* ---- events ---------------------------------------------------------------------------------- */

/* Record one Event on the Sandbox sb: queued for the recorder's thread, never waits. */
void sbx_event_record(const struct sbx_deps *deps, const struct sbx_sandbox_view *sb, const char *type, const char *reason,
                         const char *msg) {
    struct kube_object_ref ref = {SBX_API_VERSION, SBX_KIND, sb->meta.namespace_, sb->meta.name, sb->meta.uid};
    kube_recorder_event(deps->recorder, &ref, type, reason, msg);
    sbx_count(&deps->counters->events);
}

/* Record an Event on the Sandbox when its state changed in a way a user cares about
 * (its removal is recorded once the DELETE was accepted, see sbx_reconcile). */
void sbx_event_transition(const struct sbx_deps *deps, const struct sbx_sandbox_view *sb, const struct sbx_observed *o,
                              const struct sbx_decision *d, const char *pod_name) {
    const char *old_reason = o->status_reason ? o->status_reason : "";
    const char *old_phase = o->status_phase ? o->status_phase : "";
    const char *type = "Normal", *reason = NULL;
    char msg[SBX_MESSAGE_MAX + 64];
    if (!strcmp(d->phase, "Running") && strcmp(old_phase, "Running") != 0) {
        reason = "Started";
        snprintf(msg, sizeof(msg), "pod %s is running", pod_name);
    } else if (!strcmp(d->phase, "Stopped") && strcmp(old_phase, "Stopped") != 0) {
        reason = "Stopped";
        snprintf(msg, sizeof(msg), "%s", d->message);
    } else if ((!strcmp(d->phase, "Succeeded") || !strcmp(d->phase, "Failed")) && strcmp(old_phase, d->phase) != 0) {
        reason = "RunFinished";
        type = !strcmp(d->phase, "Failed") ? "Warning" : "Normal";
        snprintf(msg, sizeof(msg), "%s", d->message);
    } else if (!strcmp(d->reason, SBX_REASON_WARM_IDLE) && strcmp(old_reason, SBX_REASON_WARM_IDLE) != 0) {
        reason = SBX_REASON_WARM_IDLE;
        snprintf(msg, sizeof(msg), "%s", d->message);
    } else if (!strcmp(old_reason, SBX_REASON_WARM_IDLE) && !strcmp(d->phase, "Running") &&
               strcmp(d->reason, SBX_REASON_WARM_IDLE) != 0) {
        reason = "WarmIdleWoken";
        snprintf(msg, sizeof(msg), "used again while warm-idle: pod %s is resized back up to the spec's CPU", pod_name);
    } else if (strcmp(old_reason, d->reason) != 0 &&
               (!strcmp(d->reason, SBX_REASON_CAPACITY) || !strcmp(d->reason, SBX_REASON_USER_CAPACITY) ||
                !strcmp(d->reason, SBX_REASON_CONFLICT) ||
                !strcmp(d->reason, SBX_REASON_INVALID) ||
                !strcmp(d->reason, SBX_REASON_WS_SOURCE_NOT_FOUND) ||
                !strcmp(d->reason, SBX_REASON_WS_SOURCE_INCOMPATIBLE) ||
                !strcmp(d->reason, SBX_REASON_WS_COPY_FAILED))) {
        reason = d->reason;
        type = "Warning";
        snprintf(msg, sizeof(msg), "%s", d->message);
    }
    if (reason) sbx_event_record(deps, sb, type, reason, msg);
    /* A warm-idle resize the kubelet refused (the decision falls back on the idle action,
     * or replaces the pod). */
    if (d->warm_event) sbx_event_record(deps, sb, "Warning", d->warm_event, d->warm_event_message);
    /* The workspace: a refusal is a Warning, an expansion started a Normal Event. */
    const char *old_ws = sb->workspace.reason;
    if (d->workspace_reason && (!old_ws || strcmp(old_ws, d->workspace_reason) != 0) &&
        (strcmp(d->workspace_reason, SBX_WS_RESIZING) != 0 || (d->actions & SBX_ACT_EXPAND_PVC)))
        sbx_event_record(deps, sb, strcmp(d->workspace_reason, SBX_WS_RESIZING) ? "Warning" : "Normal",
                         !strcmp(d->workspace_reason, SBX_WS_RESIZING) ? "WorkspaceExpanding" : d->workspace_reason,
                         d->workspace_message);
}

/* ---- last-used-at ------------------------------------------------------------------- */

/* How much of a bad last-used-at value status.ignoredLastUsedAt and Events quote. */
#define LAST_USED_QUOTE_MAX 64

/* v as quoted in messages and in status.ignoredLastUsedAt: control characters as '?',
 * cut after LAST_USED_QUOTE_MAX bytes on a UTF-8 boundary with "..." appended. The same
 * value always gives the same text, so the status can tell a value already warned about. */
static void quote_value(const char *v, char *out, size_t outlen) {
    size_t o = 0, i;
    for (i = 0; v[i] && o + 4 < outlen; i++) {
        unsigned char c = (unsigned char)v[i];
        if (i >= LAST_USED_QUOTE_MAX && (c & 0xC0) != 0x80) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        out[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[o] = 0;
}

/* The annotation lies in the future beyond the skew allowance: set it to now with a merge
 * patch conditional on the version read (a 409 means a client wrote meanwhile: that
 * value is looked at next), and say so in a Warning Event. 0, SBX_STALE or -1. */
int sbx_last_used_rewrite(const struct sbx_deps *deps, const char *ns, const char *name, const struct sbx_sandbox_view *sb,
                             const char *value, int64_t now, struct kube_error *err) {
    char path[1024], t[48], q[LAST_USED_QUOTE_MAX * 2 + 8], msg[512];
    const char *rv = sb->meta.resource_version;
    if (!rv) { kube_error_set(err, "sandbox %s/%s has no resourceVersion", ns, name); return -1; }
    kj_time_format_micro(now, t, sizeof(t));
    cJSON *patch = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(patch, "metadata");
    cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
    if (!ann || !cJSON_AddStringToObject(md, "resourceVersion", rv) || !cJSON_AddStringToObject(ann, SBX_ANN_LAST_USED, t)) {
        cJSON_Delete(patch);
        kube_error_oom(err);
        return -1;
    }
    snprintf(path, sizeof(path), "/apis/%s/v1alpha1/namespaces/%s/%s/%s", SBX_GROUP, ns, SBX_PLURAL, name);
    long st = kube_merge_patch(deps->client, path, patch, NULL, err);
    cJSON_Delete(patch);
    if (st == 409 || st == 404) return SBX_STALE;
    if (st != 200) return -1;
    quote_value(value, q, sizeof(q));
    snprintf(msg, sizeof(msg), "%s \"%s\" is more than %d s ahead of the controller's clock; taken as now (%s)",
             SBX_ANN_LAST_USED, q, SBX_LAST_USED_SKEW_MS / 1000, t);
    sbx_event_record(deps, sb, "Warning", "LastUsedAtInFuture", msg);
    LOGW("msg=\"last-used-at in the future, taken as now\" sandbox=%s/%s value=\"%s\"", ns, name, q);
    return 0;
}

/* The annotation is not an RFC 3339 time: it is ignored, with a Warning Event the first
 * time this value is seen (status.ignoredLastUsedAt remembers it, see desired_status). */
void sbx_last_used_warn_invalid(const struct sbx_deps *deps, const struct sbx_sandbox_view *sb, const char *value) {
    char q[LAST_USED_QUOTE_MAX * 2 + 8], msg[512];
    quote_value(value, q, sizeof(q));
    const char *seen = sb->ignored_last_used_at;
    if (seen && !strcmp(seen, q)) return;
    snprintf(msg, sizeof(msg), "%s \"%s\" is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z); ignored",
             SBX_ANN_LAST_USED, q);
    sbx_event_record(deps, sb, "Warning", "LastUsedAtInvalid", msg);
}

/* ---- status --------------------------------------------------------------------------- */


/* Copy item key from src to dst if present. */
static void keep(cJSON *dst, const cJSON *src, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, key);
    if (v) cJSON_AddItemToObject(dst, key, cJSON_Duplicate(v, 1));
}

/* A duration member in the spec's own grammar ("5s", "1h30m"); nothing when ms is 0. */
static void add_duration(cJSON *o, const char *k, int64_t ms) {
    char t[48];
    if (ms > 0 && qty_format_duration(ms, t, sizeof(t)) == 0) cJSON_AddStringToObject(o, k, t);
}

/* Condition type with status False, reason and message; its lastTransitionTime kept from
 * the old one of that type while the reason stays the same. */
static void add_false_condition(cJSON *conds, const struct sbx_condition_view *old, const char *type,
                                const char *reason, const char *msg, int64_t generation, int64_t now) {
    cJSON *w = cJSON_CreateObject();
    if (!w) return;
    cJSON_AddItemToArray(conds, w);
    cJSON_AddStringToObject(w, "type", type);
    cJSON_AddStringToObject(w, "status", "False");
    cJSON_AddNumberToObject(w, "observedGeneration", (double)generation);
    const char *old_reason = old->reason, *old_time = old->last_transition;
    if (old_reason && old_time && !strcmp(old_reason, reason))
        cJSON_AddStringToObject(w, "lastTransitionTime", old_time);
    else
        sbx_add_time_ms(w, "lastTransitionTime", now);
    cJSON_AddStringToObject(w, "reason", reason);
    cJSON_AddStringToObject(w, "message", msg);
}

/* status.run from the decision: startedAt while the run goes on; with the result, the exit
 * code, the finish time and the output tails read from the termination message. NULL on
 * ENOMEM. */
static cJSON *run_json(const struct sbx_run_result *r) {
    cJSON *run = cJSON_CreateObject();
    struct sbx_run_output out;
    if (!run) return NULL;
    if (r->finished && !cJSON_AddNumberToObject(run, "exitCode", r->exit_code)) goto err;
    sbx_add_time_ms(run, "startedAt", r->started_ms);
    if (!r->finished) return run;
    sbx_add_time_ms(run, "finishedAt", r->finished_ms);
    if (sbx_run_output_parse(r->message, r->note, &out) < 0) goto err;
    int ok = cJSON_AddStringToObject(run, "stdout", out.out) && cJSON_AddStringToObject(run, "stderr", out.err) &&
             cJSON_AddBoolToObject(run, "truncated", out.truncated);
    sbx_run_output_free(&out);
    if (ok) return run;
err:
    cJSON_Delete(run);
    return NULL;
}

/* The status the Sandbox should have. */
cJSON *sbx_status_desired(const struct sbx_sandbox_view *sb, const struct sbx_decision *d, const cJSON *pod,
                             const char *pod_name, const char *claim, int64_t now) {
    const cJSON *cur = sb->status;
    cJSON *st = cJSON_CreateObject();
    if (!st) return NULL;
    cJSON_AddStringToObject(st, "phase", d->phase);
    if (pod_name) cJSON_AddStringToObject(st, "podName", pod_name);
    if (claim) cJSON_AddStringToObject(st, "workspaceClaim", claim);
    const char *ip = sbx_pod_ip(pod);
    const char *node = sbx_pod_node(pod);
    int running = !strcmp(d->phase, "Running");
    if (ip && running) cJSON_AddStringToObject(st, "podIP", ip);
    if (node && running) cJSON_AddStringToObject(st, "nodeName", node);
    sbx_add_time_ms(st, "startedAt", d->started_ms);
    if (d->restart_count >= 0) cJSON_AddNumberToObject(st, "restartCount", d->restart_count);
    cJSON *term = sbx_termination_json(&d->last_termination);
    if (term) cJSON_AddItemToObject(st, "lastTermination", term);
    sbx_add_time_ms(st, "stoppedAt", d->stopped_ms);
    sbx_add_time_ms(st, "warmIdleSince", d->warm_idle_since_ms);
    sbx_add_time_ms(st, "lastUsedAt", d->last_used_ms);
    const char *lu = sb->last_used_at;
    int64_t lu_ms;
    if (lifecycle_last_used_check(lu, now, &lu_ms) == SBX_LAST_USED_INVALID) {
        char q[LAST_USED_QUOTE_MAX * 2 + 8];
        quote_value(lu, q, sizeof(q));
        cJSON_AddStringToObject(st, "ignoredLastUsedAt", q);
    }
    /* What the controller saw when it last found the pod busy at an idle deadline (why
     * lastUsedAt, and so idleAt, moved without a client's touch). */
    const char *act = sb->last_activity;
    if (act) {
        char q[LAST_USED_QUOTE_MAX * 2 + 8];
        quote_value(act, q, sizeof(q));
        cJSON_AddStringToObject(st, "lastActivity", q);
    }
    cJSON_AddNumberToObject(st, "observedGeneration", (double)d->observed_generation);
    if (d->lifecycle) {
        cJSON_AddStringToObject(st, "lifecycle", d->lifecycle);
        if (d->class_name) cJSON_AddStringToObject(st, "className", d->class_name);
        add_duration(st, "idleTimeout", d->idle_timeout_ms);
        add_duration(st, "reclaimAfter", d->reclaim_after_ms);
        sbx_add_time_ms(st, "idleAt", d->idle_at_ms);
    } else {
        /* InvalidSpec: the policy recorded under the last valid spec stays. */
        static const char *const recorded[] = {"lifecycle", "className", "idleTimeout", "reclaimAfter"};
        for (size_t i = 0; i < sizeof(recorded) / sizeof(recorded[0]); i++) keep(st, cur, recorded[i]);
    }
    if (d->queue_position > 0) cJSON_AddNumberToObject(st, "queuePosition", d->queue_position);
    if (d->run.present) {
        cJSON *run = run_json(&d->run);
        if (!run) { cJSON_Delete(st); return NULL; }
        cJSON_AddItemToObject(st, "run", run);
    } else {
        keep(st, cur, "run");
    }

    cJSON *conds = cJSON_AddArrayToObject(st, "conditions");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(conds, c);
    cJSON_AddStringToObject(c, "type", "Ready");
    const char *status = d->ready ? "True" : "False";
    cJSON_AddStringToObject(c, "status", status);
    cJSON_AddNumberToObject(c, "observedGeneration", (double)d->observed_generation);
    /* lastTransitionTime moves only when the condition's status changes. */
    const char *old_status = sb->ready.status;
    const char *old_time = sb->ready.last_transition;
    if (old_status && old_time && !strcmp(old_status, status))
        cJSON_AddStringToObject(c, "lastTransitionTime", old_time);
    else
        sbx_add_time_ms(c, "lastTransitionTime", now);
    cJSON_AddStringToObject(c, "reason", d->reason);
    cJSON_AddStringToObject(c, "message", d->message);
    /* Workspace: only while the claim is not the size the spec asks for. */
    if (d->workspace_reason)
        add_false_condition(conds, &sb->workspace, "Workspace", d->workspace_reason, d->workspace_message,
                            d->observed_generation, now);
    /* Accepted: only while the spec as it is cannot be applied. */
    if (d->invalid_reason)
        add_false_condition(conds, &sb->accepted, "Accepted", d->invalid_reason, d->invalid_message,
                            sb->meta.generation, now);
    /* Keep other condition types someone else may own. */
    const cJSON *oc;
    cJSON_ArrayForEach(oc, sb->conditions) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(oc, "type");
        const char *type = cJSON_IsString(t) ? t->valuestring : NULL;
        if (type && strcmp(type, "Ready") != 0 && strcmp(type, "Workspace") != 0 && strcmp(type, "Accepted") != 0)
            cJSON_AddItemToArray(conds, cJSON_Duplicate(oc, 1));
    }
    return st;
}


/* Write status via a merge patch on /status if it differs from what is there. Keys the
 * old status has and the new one lacks are set to null so they are removed. Every write
 * is conditional on the resourceVersion the decision was made on (a 409 means the Sandbox
 * changed since: decide again on the newer version, never overwrite what it says with a
 * status made from an older one).
 * With fence_rv (that same resourceVersion, before anything is destroyed) the write is
 * always sent, even when nothing changed: it proves the Sandbox is still as the decision
 * saw it, and records the stop on the Sandbox first.
 * new_rv (may be NULL) receives the resourceVersion after the write. 0, SBX_STALE (409, or
 * a fenced write found the Sandbox gone), or -1. */
int sbx_status_write(const struct sbx_deps *deps, const char *ns, const char *name,
                        const struct sbx_sandbox_view *sb, cJSON *st, const char *fence_rv, char *new_rv, size_t new_rv_len,
                        struct kube_error *err) {
    const cJSON *cur = sb->status;
    if (new_rv && new_rv_len) snprintf(new_rv, new_rv_len, "%s", fence_rv ? fence_rv : "");
    if (!fence_rv && cur && cJSON_Compare(cur, st, 1)) return 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, cur) {
        if (!cJSON_GetObjectItemCaseSensitive(st, k->string)) cJSON_AddNullToObject(st, k->string);
    }
    cJSON *patch = cJSON_CreateObject();
    if (!patch) { kube_error_oom(err); return -1; }
    const char *rv = fence_rv ? fence_rv : sb->meta.resource_version;
    if (rv) {
        cJSON *md = cJSON_AddObjectToObject(patch, "metadata");
        if (!md || !cJSON_AddStringToObject(md, "resourceVersion", rv)) {
            cJSON_Delete(patch);
            kube_error_oom(err);
            return -1;
        }
    }
    cJSON_AddItemReferenceToObject(patch, "status", st);
    char path[1024];
    snprintf(path, sizeof(path), "/apis/%s/v1alpha1/namespaces/%s/%s/%s/status", SBX_GROUP, ns, SBX_PLURAL, name);
    cJSON *out = NULL;
    long rc = kube_merge_patch(deps->client, path, patch, fence_rv ? &out : NULL, err);
    cJSON_Delete(patch);
    if (rc == 200 && fence_rv && new_rv && new_rv_len) {
        struct sbx_meta written;   /* the Sandbox as the write left it */
        sbx_meta_read(out, &written);
        snprintf(new_rv, new_rv_len, "%s", written.resource_version ? written.resource_version : "");
    }
    cJSON_Delete(out);
    if (rc == 404) return fence_rv ? SBX_STALE : 0; /* deleted meanwhile */
    if (rc == 409) return SBX_STALE;
    if (rc != 200) return -1;
    sbx_count(&deps->counters->status_writes);
    return 0;
}

/* DELETE the Sandbox ns/name if it still has uid and resourceVersion rv: nothing written
 * to it since the decision (a touch after the stop was recorded wakes it instead). The
 * HTTP status (200/202 deleted, 404 already gone, 409 changed), or -1. */
long sbx_sandbox_delete(const struct sbx_deps *deps, const char *ns, const char *name, const char *uid,
                           const char *rv, struct kube_error *err) {
    char path[1024];
    snprintf(path, sizeof(path), "/apis/%s/v1alpha1/namespaces/%s/%s/%s", SBX_GROUP, ns, SBX_PLURAL, name);
    return sbx_delete_preconditioned(deps, path, uid, rv, err);
}

/* The spec cannot be applied (d->invalid_reason set): a Warning Event when the Accepted
 * condition says something new. */
void sbx_event_invalid(const struct sbx_deps *deps, const struct sbx_sandbox_view *sb, const struct sbx_decision *d) {
    const char *r = sb->accepted.reason, *m = sb->accepted.message;
    if (!d->invalid_reason || (r && m && !strcmp(r, d->invalid_reason) && !strcmp(m, d->invalid_message))) return;
    sbx_event_record(deps, sb, "Warning", d->invalid_reason, d->invalid_message);
}

/* Status for a spec the controller cannot act on (and no pod of an earlier spec runs). */
int sbx_status_report_invalid(const struct sbx_deps *deps, const char *ns, const char *name, const struct sbx_sandbox_view *sb,
                              const char *reason, const char *why, struct kube_error *err) {
    struct sbx_decision d;
    memset(&d, 0, sizeof(d));
    d.phase = "Pending";
    d.reason = SBX_REASON_INVALID;
    d.observed_generation = sb->meta.generation;   /* this status is about it */
    snprintf(d.message, sizeof(d.message), "%s", why);
    d.invalid_reason = reason ? reason : SBX_REASON_INVALID;
    snprintf(d.invalid_message, sizeof(d.invalid_message), "%s", why);
    /* What the status recorded about earlier pods stays. */
    d.started_ms = sb->started_ms;
    d.restart_count = -1;
    d.last_termination = sb->last_termination;
    cJSON *st = sbx_status_desired(sb, &d, NULL, NULL, NULL, kj_now_ms());
    if (!st) { kube_error_oom(err); return -1; }
    int rc = sbx_status_write(deps, ns, name, sb, st, NULL, NULL, 0, err);
    cJSON_Delete(st);
    if (rc == 0) sbx_event_invalid(deps, sb, &d);
    return rc;
}
