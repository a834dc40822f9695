/* sandbox/lifecycle.c — the pure decision function (see lifecycle.h). Reads top to
 * bottom in the order the rules apply: name conflicts, finished one-shot runs, stopping
 * (session removal, long-running idle, paused), the running cap, then bringing the
 * workspace claim and the pod up and reporting their state. */
#include "sandbox/lifecycle.h"

#include <stdio.h>
#include <string.h>

int64_t lifecycle_idle_limit_ms(const struct sbx_spec *s) {
    switch (s->lifecycle) {
    case SBX_SESSION: return s->idle_timeout_ms;
    case SBX_LONG_RUNNING:
        return s->idle_timeout_ms > INT64_MAX / 24 ? INT64_MAX : s->idle_timeout_ms * 24;
    case SBX_PERSISTENT:
    case SBX_ONE_SHOT:
    default: return 0;
    }
}

/* Larger of two timestamps. */
static int64_t newest(int64_t a, int64_t b) { return a > b ? a : b; }

int64_t lifecycle_last_used_ms(const struct sbx_observed *o) {
    int64_t t = newest(o->last_used_annotation_ms, o->status_last_used_ms);
    t = newest(t, o->status_started_ms);
    return newest(t, o->pod_started_ms);
}

/* Set the status part of the decision. */
static void say(struct sbx_decision *d, const char *phase, int ready, const char *reason,
                const char *fmt, const char *arg) {
    d->phase = phase;
    d->ready = ready;
    d->reason = reason;
    snprintf(d->message, sizeof(d->message), fmt, arg ? arg : "");
}

/* The sandbox should have no pod now (paused, or long-running and idle): delete it and
 * report Stopping until it is gone, then Stopped. */
static void stop(const struct sbx_observed *o, struct sbx_decision *d, const char *reason) {
    const char *why = !strcmp(reason, SBX_REASON_PAUSED) ? "paused by spec.paused"
                                                        : "stopped after being idle";
    if (o->pod == SBX_OBJ_PRESENT) {
        d->actions |= SBX_ACT_DELETE_POD;
        say(d, "Stopping", 0, reason, "%s; deleting the pod, keeping the workspace", why);
    } else if (o->pod == SBX_OBJ_TERMINATING) {
        say(d, "Stopping", 0, reason, "%s; waiting for the pod to terminate", why);
    } else {
        say(d, "Stopped", 0, reason, "%s; the workspace is kept", why);
        d->stopped_ms = o->status_stopped_ms ? o->status_stopped_ms : o->now_ms;
    }
}

void lifecycle_decide(const struct sbx_spec *s, const struct sbx_observed *o, struct sbx_decision *d) {
    memset(d, 0, sizeof(*d));

    if (o->pod == SBX_OBJ_FOREIGN || o->pvc == SBX_OBJ_FOREIGN) {
        say(d, "Pending", 0, SBX_REASON_CONFLICT,
            "the name of this sandbox's %s is taken by an object it does not own; nothing was changed",
            o->pod == SBX_OBJ_FOREIGN ? "pod" : "workspace claim");
        return;
    }

    /* A finished one-shot: clean up, keep the result for ttlSecondsAfterFinished. */
    if (s->lifecycle == SBX_ONE_SHOT && o->run_finished) {
        char code[32];
        snprintf(code, sizeof(code), "%d", o->run_exit_code);
        if (o->run_exit_code == 0)
            say(d, "Succeeded", 0, SBX_REASON_SUCCEEDED, "the command exited with code %s", code);
        else
            say(d, "Failed", 0, SBX_REASON_FAILED, "the command exited with code %s", code);
        if (o->pod == SBX_OBJ_PRESENT) d->actions |= SBX_ACT_DELETE_POD;
        if (o->pvc == SBX_OBJ_PRESENT) d->actions |= SBX_ACT_DELETE_PVC;
        int64_t expires = o->run_finished_ms + s->ttl_after_finished_s * 1000;
        if (o->now_ms >= expires) d->actions |= SBX_ACT_DELETE_SANDBOX;
        else d->requeue_after_ms = expires - o->now_ms;
        return;
    }

    int64_t last_used = lifecycle_last_used_ms(o);
    /* Clearing spec.paused counts as a use: a resumed sandbox starts a fresh idle period. */
    if (!s->paused && o->status_reason && !strcmp(o->status_reason, SBX_REASON_PAUSED))
        last_used = o->now_ms;
    d->last_used_ms = last_used;

    int64_t limit = lifecycle_idle_limit_ms(s);
    int idle = limit > 0 && last_used > 0 && o->now_ms - last_used >= limit;

    /* A pause is the user's explicit word: it keeps even an idle session (and its
     * workspace) until it is cleared, which then counts as a use. */
    if (s->paused) { stop(o, d, SBX_REASON_PAUSED); return; }
    if (idle && s->lifecycle == SBX_SESSION) {
        if (o->pod == SBX_OBJ_PRESENT) d->actions |= SBX_ACT_DELETE_POD;
        d->actions |= SBX_ACT_DELETE_SANDBOX;
        say(d, "Stopping", 0, SBX_REASON_IDLE, "idle for longer than idleTimeout; removing the session%s", "");
        return;
    }
    if (idle) { stop(o, d, SBX_REASON_IDLE); return; }

    d->wants_pod = 1;
    if (o->pod == SBX_OBJ_ABSENT && !o->admitted) {
        say(d, "Pending", 0, SBX_REASON_CAPACITY,
            "the controller's limit of running sandboxes is reached; waiting for capacity%s", "");
        return;
    }
    if (o->pvc == SBX_OBJ_ABSENT) d->actions |= SBX_ACT_CREATE_PVC;
    if (o->pvc == SBX_OBJ_TERMINATING) {
        say(d, "Creating", 0, SBX_REASON_CREATING, "waiting for the old workspace claim to be deleted%s", "");
        return;
    }

    /* Bringing a pod up reads as one state (one status write) however many steps the
     * claim, the scheduler and the node take; only departures from the normal path get
     * their own message. */
    static const char creating[] = "creating the workspace claim and the pod; waiting for the pod to start%s";
    if (o->pod == SBX_OBJ_ABSENT) {
        say(d, "Creating", 0, SBX_REASON_CREATING, creating, "");
        if (o->pvc == SBX_OBJ_ABSENT) {
            d->requeue_after_ms = SBX_BIND_WAIT_MS;
            return;
        }
        if (!o->pvc_bound && o->pvc_age_ms < SBX_BIND_WAIT_MS) {
            d->requeue_after_ms = SBX_BIND_WAIT_MS - (o->pvc_age_ms > 0 ? o->pvc_age_ms : 0);
            return;
        }
        d->actions |= SBX_ACT_CREATE_POD;
    } else if (o->pod == SBX_OBJ_TERMINATING) {
        say(d, "Creating", 0, SBX_REASON_NOT_READY, "waiting for the previous pod to terminate%s", "");
    } else if (o->pod_phase && (!strcmp(o->pod_phase, "Succeeded") || !strcmp(o->pod_phase, "Failed"))) {
        /* The main process ended (or the pod was evicted): replace the pod. */
        d->actions |= SBX_ACT_DELETE_POD;
        say(d, "Creating", 0, SBX_REASON_NOT_READY, "the pod ended (%s); replacing it", o->pod_phase);
    } else if (o->pod_phase && !strcmp(o->pod_phase, "Running") && o->pod_ready) {
        if (s->lifecycle == SBX_ONE_SHOT) {
            if (!o->run_in_progress) d->actions |= SBX_ACT_RUN;
            say(d, "Running", 1, SBX_REASON_RUNNING_COMMAND, "running spec.run%s", "");
        } else {
            say(d, "Running", 1, SBX_REASON_READY, "the pod is running and ready%s", "");
        }
    } else if (!o->pod_phase || !strcmp(o->pod_phase, "Pending")) {
        say(d, "Creating", 0, SBX_REASON_CREATING, creating, "");
    } else if (!strcmp(o->pod_phase, "Running")) {
        say(d, "Creating", 0, SBX_REASON_NOT_READY, "the pod is running but not ready%s", "");
    } else {
        say(d, "Creating", 0, SBX_REASON_NOT_READY, "waiting for the pod to become ready (%s)", o->pod_phase);
    }

    if (limit > 0 && last_used > 0) {
        /* last_used + limit - now without overflow: limit may be INT64_MAX (saturated
         * ×24) and last_used may lie ahead of now (a client's clock). */
        int64_t elapsed = o->now_ms - last_used;
        int64_t left = elapsed < 0 && limit > INT64_MAX + elapsed ? INT64_MAX : limit - elapsed;
        d->requeue_after_ms = left > 0 ? left : 1;
    }
}
