/* sandbox/decide/reconcile_decide.c — the pure decisions of the reconcile pass (reconcile.c does
 * the I/O): lifecycle_decide (see reconcile_decide.h). Reads top to bottom in the order the
 * rules apply: name conflicts, one-shot results (from the pod), stopping
 * (session removal, long-running idle, paused), the running cap, then bringing the
 * workspace claim and the pod up and reporting their state — with the scheduler's or the
 * kubelet's own reason when the pod does not start. The idle clock starts when the
 * sandbox first becomes Ready, never before. */
#include "sandbox/decide/reconcile_decide.h"

#include <stdio.h>
#include <string.h>

#include "kube/kjson.h"
#include "sandbox/model/quantity.h"

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

/* Was status.startedAt recorded for the current pod? The pod's startTime and its Ready
 * condition's time come from the same kubelet clock and a pod becomes Ready only after it
 * started, so a recorded time before startTime belongs to an earlier pod. */
static int started_with_this_pod(const struct sbx_observed *o) {
    return o->status_started_ms > 0 && o->status_started_ms >= o->pod_started_ms;
}

/* The first Ready of the current pod, not pod.status.startTime (the kubelet sets that
 * when it accepts the pod, before the image pull, which on a real node can take minutes
 * or fail for good), nor the container's state.running.startedAt (set before any
 * readiness check passes, and again on every restart): the Ready condition's
 * lastTransitionTime is the moment the sandbox became usable. Recorded in
 * status.startedAt, so a restarting container neither resets nor loses it. */
int64_t lifecycle_started_ms(const struct sbx_observed *o) {
    if (o->pod != SBX_OBJ_PRESENT || !o->pod_ready || started_with_this_pod(o))
        return o->status_started_ms;
    return o->pod_ready_since_ms > 0 ? o->pod_ready_since_ms : o->now_ms;
}

int lifecycle_clock_runs(const struct sbx_observed *o) {
    if (lifecycle_started_ms(o) <= 0) return 0;          /* never Ready */
    if (o->pod != SBX_OBJ_PRESENT) return 1;
    return o->pod_ready || (o->pod_started_ms > 0 && started_with_this_pod(o));
}

int64_t lifecycle_last_used_ms(const struct sbx_observed *o) {
    int64_t t = newest(o->last_used_annotation_ms, o->status_last_used_ms);
    return newest(t, lifecycle_started_ms(o));
}

enum sbx_last_used lifecycle_last_used_check(const char *value, int64_t now_ms, int64_t *ms) {
    int64_t t;
    *ms = 0;
    if (!value) return SBX_LAST_USED_NONE;
    if (kj_time_parse(value, &t) < 0) return SBX_LAST_USED_INVALID;
    if (now_ms < INT64_MAX - SBX_LAST_USED_SKEW_MS && t > now_ms + SBX_LAST_USED_SKEW_MS) {
        *ms = now_ms;
        return SBX_LAST_USED_FUTURE;
    }
    *ms = t;
    return SBX_LAST_USED_OK;
}

/* Set the status part of the decision. */
static void say(struct sbx_decision *d, const char *phase, int ready, const char *reason,
                const char *fmt, const char *arg) {
    d->phase = phase;
    d->ready = ready;
    d->reason = reason;
    snprintf(d->message, sizeof(d->message), fmt, arg ? arg : "");
}

/* Append text to the message, cut on a UTF-8 boundary with "..." when it does not fit:
 * the scheduler's and the kubelet's messages (image pull errors) can be long. */
static void append_message(struct sbx_decision *d, const char *text) {
    size_t used = strlen(d->message), room = sizeof(d->message) - used - 1, n = strlen(text);
    if (n > room) {
        n = room >= 3 ? room - 3 : 0;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--;   /* not mid-character */
        memcpy(d->message + used, text, n);
        memcpy(d->message + used + n, "...", room >= 3 ? 3 : 0);
        d->message[used + n + (room >= 3 ? 3 : 0)] = 0;
        return;
    }
    memcpy(d->message + used, text, n + 1);
}

/* A reason the Ready condition can carry: CamelCase as the CRD's pattern
 * ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$ demands, and short; anything else a kubelet
 * might report is not passed on (the status write would be refused). */
static int valid_reason(const char *r) {
    size_t n = r ? strlen(r) : 0;
    if (n == 0 || n > 64 || !((r[0] >= 'A' && r[0] <= 'Z') || (r[0] >= 'a' && r[0] <= 'z'))) return 0;
    for (size_t i = 1; i < n; i++) {
        char c = r[i];
        int word = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (!word && !((c == ',' || c == ':') && i + 1 < n)) return 0;
    }
    return 1;
}

/* The status fields that only report the pod: restarts and the last termination. Read
 * from a pod that is ours and not being deleted (a pod the controller stops ends with
 * SIGTERM, which says nothing about the sandbox); otherwise the last one recorded. */
static void report_container(const struct sbx_observed *o, struct sbx_decision *d) {
    d->restart_count = -1;
    d->last_termination = o->status_last_termination;
    if (o->pod != SBX_OBJ_PRESENT || !o->ctr.present) return;
    d->restart_count = o->ctr.restart_count;
    if (o->ctr.terminated.present) d->last_termination = o->ctr.terminated;
    else if (o->ctr.last.present) d->last_termination = o->ctr.last;
}

/* A pod that is not Ready and says why: the scheduler cannot place it, its container
 * waits for a reason other than the normal ContainerCreating / PodInitializing (image
 * pull errors, CrashLoopBackOff, configuration errors), or its container ended and waits
 * for the kubelet to restart it (OOMKilled, Error: until the kubelet's next sync says
 * CrashLoopBackOff, which can take 10 s or more). Sets the decision's status to Creating
 * with that reason and message and returns 1; 0 when there is nothing to say. */
static int pod_trouble(const struct sbx_observed *o, struct sbx_decision *d) {
    const char *reason = o->pod_unscheduled_reason, *msg = o->pod_unscheduled_message;
    int waiting = 0;
    if (!valid_reason(reason)) {
        reason = o->ctr.waiting_reason;
        msg = o->ctr.waiting_message;
        waiting = 1;
        const struct sbx_termination *t = &o->ctr.terminated;
        if (!reason && t->present && valid_reason(t->reason)) {
            char why[96];
            snprintf(why, sizeof(why), " (exit code %d); the kubelet restarts it", t->exit_code);
            say(d, "Creating", 0, t->reason, "the container ended: %s", t->reason);
            append_message(d, why);
            return 1;
        }
        if (!valid_reason(reason) || !strcmp(reason, "ContainerCreating") || !strcmp(reason, "PodInitializing"))
            return 0;
    }
    say(d, "Creating", 0, reason, "%s", "");
    append_message(d, msg && *msg ? msg : waiting ? "the container is waiting" : "the pod cannot be scheduled");
    /* Why a crash-looping container ended last time (OOMKilled, Error and its exit code). */
    const struct sbx_termination *t = &o->ctr.last;
    if (waiting && t->present && valid_reason(t->reason)) {
        char last[128];
        snprintf(last, sizeof(last), "; last termination: %s (exit code %d)", t->reason, t->exit_code);
        append_message(d, last);
    }
    return 1;
}

/* A pull failure of the controller's built-in default image (no --image, no class default,
 * no spec.image): nobody publishes that image, so the message leads with how to name one
 * that the nodes can pull, then the kubelet's own words (which may be cut). */
static void builtin_image_hint(const struct sbx_spec *s, struct sbx_decision *d) {
    char kubelet[SBX_MESSAGE_MAX];
    snprintf(kubelet, sizeof kubelet, "%s", d->message);
    snprintf(d->message, sizeof d->message,
             "%s is the controller's built-in default image, which no public registry serves: push the "
             "project's images to a registry the nodes pull from (images/build.sh push) and name it with "
             "the controller's --image / YAO_SANDBOX_IMAGE (chart: image.registry or "
             "sandboxDefaults.image), a SandboxClass's spec.image.default or the Sandbox's spec.image; "
             "the kubelet says: ", s->image);
    append_message(d, kubelet);
}

/* An adopted warm claim whose volume's node cannot take the pod: how long until it is
 * given up (0 = now), or -1 when it is not such a case. Only a claim adopted within
 * SBX_WARM_RELEASE_WINDOW_MS that no pod of the Sandbox has used: no status.startedAt or
 * stoppedAt, and a pod the kubelet never took (no startTime), left unscheduled by the
 * scheduler because of the volume's node affinity (it places the pod nowhere else). */
/* Whether the scheduler's message says some node was refused for a PersistentVolume's node
 * affinity. Its wording changed in Kubernetes 1.33 ("node(s) had volume node affinity
 * conflict" before, "node(s) didn't match PersistentVolume's node affinity" since); both are
 * recognized, as clusters of either age run the controller. */
static int volume_node_affinity_refused(const char *message) {
    return message && (strstr(message, "volume node affinity conflict") ||
                       strstr(message, "didn't match PersistentVolume's node affinity"));
}

static int64_t warm_claim_stranded_in(const struct sbx_observed *o) {
    if (o->claim_adopted_ms <= 0 || o->pvc != SBX_OBJ_PRESENT || o->pod != SBX_OBJ_PRESENT || o->pod_started_ms ||
        o->status_started_ms || o->status_stopped_ms || o->now_ms - o->claim_adopted_ms > SBX_WARM_RELEASE_WINDOW_MS)
        return -1;
    if (!o->pod_unscheduled_reason || strcmp(o->pod_unscheduled_reason, "Unschedulable") != 0 ||
        !volume_node_affinity_refused(o->pod_unscheduled_message))
        return -1;
    int64_t since = o->pod_unscheduled_since_ms > 0 ? o->pod_unscheduled_since_ms : o->now_ms;
    int64_t left = since + SBX_WARM_STRANDED_MS - o->now_ms;
    return left > 0 ? left : 0;
}

/* The sandbox should have no pod now (paused, or long-running and idle): delete it and
 * report Stopping until it is gone, then Stopped. */
static void stop(const struct sbx_observed *o, struct sbx_decision *d, const char *reason) {
    const char *why = !strcmp(reason, SBX_REASON_PAUSED)      ? "paused by spec.paused"
                      : !strcmp(reason, SBX_REASON_RECLAIMED) ? "reclaimed while idle to admit a waiting sandbox "
                                                                "(the next use starts it again)"
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

/* ---- warm-idle ------------------------------------------------------------------------ */

/* Does s put an idle sandbox first into warm-idle? Only session and long-running ones
 * have an idle deadline to begin it at. */
static int warm_idle_on(const struct sbx_spec *s) {
    return s->warm_idle_cpu_millis > 0 && s->warm_idle_window_ms > 0 &&
           (s->lifecycle == SBX_SESSION || s->lifecycle == SBX_LONG_RUNNING);
}

void lifecycle_warm_idle_cpu(const struct sbx_spec *s, int64_t *request_millis, int64_t *limit_millis) {
    *request_millis = *limit_millis = 0;
    if (!warm_idle_on(s)) return;
    int64_t lim = s->cpu_millis > 0 && s->cpu_millis < s->warm_idle_cpu_millis ? s->cpu_millis : s->warm_idle_cpu_millis;
    int64_t req = s->cpu_request_millis > 0 && s->cpu_request_millis < lim ? s->cpu_request_millis : lim;
    int burstable_cpu = s->cpu_request_millis < s->cpu_millis;
    int memory_equal = s->memory_request_bytes >= s->memory_bytes;
    if (burstable_cpu && memory_equal && req == lim && lim > 1) req = lim - 1;
    *request_millis = req;
    *limit_millis = lim;
}

/* Did the kubelet say it cannot make the pod's pending resize (PodResizePending)? */
static int resize_refused(const struct sbx_observed *o) {
    const char *r = o->pod_resize_pending;
    return r && (!strcmp(r, "Infeasible") || !strcmp(r, "Deferred"));
}

/* At or past its idle deadline (last_used + limit), is the sandbox warm-idle rather than
 * stopped? With warm-idle on, a pod of ours running from the spec as it is, within the
 * window after the deadline, unless the kubelet refused the resize to the floor: then the
 * idle action goes on as without warm-idle, with an Event saying why (in d). */
static int warm_idle_tier(const struct sbx_spec *s, const struct sbx_observed *o, int64_t last_used, int64_t limit,
                          struct sbx_decision *d) {
    if (!warm_idle_on(s) || o->pod != SBX_OBJ_PRESENT || o->pod_template_outdated || !o->pod_phase ||
        strcmp(o->pod_phase, "Running") != 0)
        return 0;
    int64_t deadline = last_used > INT64_MAX - limit ? INT64_MAX : last_used + limit;
    if (o->now_ms - deadline >= s->warm_idle_window_ms) return 0;   /* the window is over */
    int64_t req, lim;
    lifecycle_warm_idle_cpu(s, &req, &lim);
    if (o->pod_resize_api_refused) return 0;   /* the Event was recorded when it was refused */
    if (resize_refused(o) && o->pod_cpu_limit_millis == lim) {
        d->warm_event = SBX_EVENT_WARM_IDLE_FAILED;
        snprintf(d->warm_event_message, sizeof(d->warm_event_message),
                 "the kubelet did not resize the pod's CPU down for warm-idle (PodResizePending: %.40s); "
                 "acting on the idle deadline instead", o->pod_resize_pending);
        return 0;
    }
    return 1;
}

/* Warm-idle: the pod is kept, its CPU resized down to the floor unless the pod's spec asks
 * for it already; status Running with reason WarmIdle since the first pass that saw it. */
static void warm_idle_report(const struct sbx_spec *s, const struct sbx_observed *o, struct sbx_decision *d) {
    int64_t req, lim;
    char cpu[32];
    lifecycle_warm_idle_cpu(s, &req, &lim);
    d->warm_idle_since_ms = o->status_warm_idle_since_ms > 0 ? o->status_warm_idle_since_ms : o->now_ms;
    if (o->pod_cpu_limit_millis != lim || o->pod_cpu_request_millis != req) {
        d->actions |= SBX_ACT_RESIZE_DOWN;
        d->resize_cpu_request_millis = req;
        d->resize_cpu_limit_millis = lim;
    }
    if (qty_format_cpu(lim, cpu, sizeof(cpu)) < 0) snprintf(cpu, sizeof(cpu), "%lldm", (long long)lim);
    say(d, "Running", o->pod_ready, SBX_REASON_WARM_IDLE,
        "idle for longer than idleTimeout: kept warm-idle, the pod's CPU resized down to %s (memory kept); "
        "the next use resizes it back up", cpu);
}

/* Not warm-idle (used again, or warm-idle turned off) while the pod's spec still asks for
 * the floor, or for anything but the spec's CPU after having been warm-idle: resize it
 * back up. When the kubelet refuses that (PodResizePending Infeasible or Deferred: the node
 * has no room for the CPU it gave back), the pod is replaced, workspace kept, with an
 * Event. Only a running pod built from the spec as it is. */
static void warm_idle_wake(const struct sbx_spec *s, const struct sbx_observed *o, struct sbx_decision *d) {
    if (o->pod != SBX_OBJ_PRESENT || o->pod_template_outdated || s->cpu_millis <= 0 || o->pod_cpu_limit_millis <= 0 ||
        (d->actions & SBX_ACT_DELETE_POD) || !o->pod_phase || strcmp(o->pod_phase, "Running") != 0)
        return;
    int64_t req, lim;
    lifecycle_warm_idle_cpu(s, &req, &lim);
    int was_warm = o->status_warm_idle_since_ms > 0 || (lim > 0 && o->pod_cpu_limit_millis == lim);
    int below_spec = was_warm && (o->pod_cpu_limit_millis != s->cpu_millis || o->pod_cpu_request_millis != s->cpu_request_millis);
    if (below_spec && o->pod_resize_api_refused) {
        /* the API server would not resize it back up (its Event recorded then) */
        d->actions |= SBX_ACT_DELETE_POD;
        say(d, "Creating", 0, SBX_REASON_NOT_READY,
            "the API server refused to give the warm-idle pod its CPU back; replacing the pod, the workspace is kept%s", "");
        return;
    }
    if (below_spec) {
        d->actions |= SBX_ACT_RESIZE_UP;
        d->resize_cpu_request_millis = s->cpu_request_millis;
        d->resize_cpu_limit_millis = s->cpu_millis;
        append_message(d, "; waking from warm-idle: the pod's CPU is resized back up");
        return;
    }
    /* Asked back up (the pod's spec says the spec's CPU; warmIdleSince went with the wake)
     * and the kubelet says it cannot. */
    if (o->pod_cpu_limit_millis == s->cpu_millis && resize_refused(o) && o->pod_cpu_allocated_millis > 0 &&
        o->pod_cpu_allocated_millis < s->cpu_millis) {
        d->actions |= SBX_ACT_DELETE_POD;
        d->warm_event = SBX_EVENT_WAKE_FAILED;
        snprintf(d->warm_event_message, sizeof(d->warm_event_message),
                 "the kubelet did not give the warm-idle pod its CPU back (PodResizePending: %.40s); "
                 "replacing the pod, the workspace is kept", o->pod_resize_pending);
        say(d, "Creating", 0, SBX_REASON_NOT_READY, "%s", d->warm_event_message);
    }
}

static void decide(const struct sbx_spec *s, const struct sbx_observed *o, struct sbx_decision *d);

/* Every note the controller adds to a run's stderr starts so. */
#define NOTE_PREFIX "yao-sandbox: "

/* Is the one-shot run over, and how? From status.run once recorded there; else from the
 * pod once its container has ended (restartPolicy Never: its first termination is the
 * run's); else, when status.run says a pod was started and the pod is gone without a
 * result, lost (never started again: at most once). Fills d->run when the result is new.
 * 1 with the exit code and finish time when the run is over. */
static int oneshot_result(const struct sbx_observed *o, struct sbx_decision *d, int *code, int64_t *finished) {
    struct sbx_run_result *r = &d->run;
    const struct sbx_termination *t = &o->ctr.terminated;
    if (o->run_finished) {
        *code = o->run_exit_code;
        *finished = o->run_finished_ms;
        return 1;
    }
    int ours = o->pod == SBX_OBJ_PRESENT || o->pod == SBX_OBJ_TERMINATING;
    int ended = o->pod_phase && (!strcmp(o->pod_phase, "Succeeded") || !strcmp(o->pod_phase, "Failed"));
    int deadline = o->pod_reason && !strcmp(o->pod_reason, "DeadlineExceeded");
    if (ours && (t->present || ended)) {
        /* Timed out, but the container is still being stopped: its termination message
         * (the output so far) comes with its terminated state. */
        if (deadline && !t->present && o->ctr.running_since_ms > 0) return 0;
        r->present = r->finished = 1;
        r->started_ms = t->started_ms ? t->started_ms : o->run_started_ms;
        r->finished_ms = t->finished_ms ? t->finished_ms : o->now_ms;
        r->message = t->message;
        if (deadline) {
            /* As timeout(1) reports it. */
            r->exit_code = 124;
            snprintf(r->note, sizeof(r->note), NOTE_PREFIX "the command timed out after %llds (spec.run.timeout)",
                     (long long)o->run_timeout_s);
        } else if (t->present) {
            r->exit_code = t->exit_code;
        } else {
            r->exit_code = -1;
            snprintf(r->note, sizeof(r->note), NOTE_PREFIX "the pod ended (%s%s%s) without a result from the command",
                     o->pod_phase, valid_reason(o->pod_reason) ? ": " : "",
                     valid_reason(o->pod_reason) ? o->pod_reason : "");
        }
    } else if (o->pod == SBX_OBJ_ABSENT && o->run_started_ms > 0 && o->now_ms - o->run_started_ms >= SBX_RUN_LOST_MS) {
        r->present = r->finished = 1;
        r->exit_code = -1;
        r->started_ms = o->run_started_ms;
        r->finished_ms = o->now_ms;
        snprintf(r->note, sizeof(r->note), "%s",
                 NOTE_PREFIX "the run's pod went away before its result was recorded; it was not run again");
    } else {
        return 0;
    }
    *code = r->exit_code;
    *finished = r->finished_ms;
    return 1;
}

/* observedGeneration means "the running pod matches": the generation when the pod was
 * built from it, or when no pod is wanted (nothing to apply: the next pod is built from
 * the spec as it is then); otherwise the generation recorded before. */
/* The workspace claim against spec.workspace.size: a volume can grow where its class
 * allows it (the claim's request is raised; the storage driver does the rest) and never
 * shrink. Sets the Workspace condition when the sizes differ. */
static void workspace(const struct sbx_spec *s, const struct sbx_observed *o, struct sbx_decision *d) {
    char want[32], have[32], cap[32];
    if (o->pvc != SBX_OBJ_PRESENT || o->claim_request_bytes <= 0 || (d->actions & SBX_ACT_DELETE_PVC) ||
        (s->lifecycle == SBX_ONE_SHOT && o->run_finished))
        return;
    /* A fork asked smaller than its source took the source's size: that is its size. */
    int64_t wanted = s->workspace_bytes > o->claim_cloned_bytes ? s->workspace_bytes : o->claim_cloned_bytes;
    if (qty_format_memory(wanted, want, sizeof(want)) ||
        qty_format_memory(o->claim_request_bytes, have, sizeof(have)))
        return;
    if (wanted < o->claim_request_bytes) {
        d->workspace_reason = SBX_WS_SHRINK_REFUSED;
        snprintf(d->workspace_message, sizeof(d->workspace_message),
                 "spec.workspace.size %s is below the claim's %s: a volume cannot shrink; the workspace stays %s",
                 want, have, have);
    } else if (wanted > o->claim_request_bytes && o->claim_expandable) {
        d->actions |= SBX_ACT_EXPAND_PVC;
        d->workspace_reason = SBX_WS_RESIZING;
        snprintf(d->workspace_message, sizeof(d->workspace_message),
                 "expanding the workspace claim from %s to %s", have, want);
    } else if (wanted > o->claim_request_bytes) {
        d->workspace_reason = SBX_WS_NOT_EXPANDABLE;
        snprintf(d->workspace_message, sizeof(d->workspace_message),
                 "spec.workspace.size %s: the claim's StorageClass does not allow volume expansion "
                 "(allowVolumeExpansion); the workspace stays %s", want, have);
    } else if (o->claim_capacity_bytes > 0 && o->claim_capacity_bytes < o->claim_request_bytes &&
               !qty_format_memory(o->claim_capacity_bytes, cap, sizeof(cap))) {
        d->workspace_reason = SBX_WS_RESIZING;
        snprintf(d->workspace_message, sizeof(d->workspace_message),
                 "the workspace claim asks for %s; the volume has %s so far", have, cap);
    }
}

void lifecycle_decide(const struct sbx_spec *s, const struct sbx_observed *o, struct sbx_decision *d) {
    decide(s, o, d);
    d->lifecycle = sbx_lifecycle_name(s->lifecycle);
    d->class_name = s->class_name;
    if (s->lifecycle == SBX_SESSION || s->lifecycle == SBX_LONG_RUNNING) {
        d->idle_timeout_ms = s->idle_timeout_ms;
        d->reclaim_after_ms = s->reclaim_after_ms;
    }
    if (o->pod != SBX_OBJ_FOREIGN && o->pvc != SBX_OBJ_FOREIGN) workspace(s, o, d);
    int matches = o->pod == SBX_OBJ_PRESENT ? !o->pod_template_outdated && !(d->actions & SBX_ACT_DELETE_POD)
                                            : !d->wants_pod && o->pod == SBX_OBJ_ABSENT;
    if (o->pod == SBX_OBJ_FOREIGN || o->pvc == SBX_OBJ_FOREIGN) matches = 1; /* nothing of ours to match */
    if (s->lifecycle == SBX_ONE_SHOT && o->pod == SBX_OBJ_PRESENT) matches = 1; /* never replaced */
    /* A new Sandbox (no generation recorded yet, no pod): nothing built from an older spec
     * exists, so the first status already speaks of this one (one status write fewer on
     * every bring-up). */
    if (o->pod == SBX_OBJ_ABSENT && o->status_observed_generation == 0) matches = 1;
    d->observed_generation = matches ? o->generation : o->status_observed_generation;
}

static void decide(const struct sbx_spec *s, const struct sbx_observed *o, struct sbx_decision *d) {
    memset(d, 0, sizeof(*d));
    d->started_ms = o->status_started_ms;
    d->restart_count = -1;
    d->last_termination = o->status_last_termination;

    if (o->pod == SBX_OBJ_FOREIGN || o->pvc == SBX_OBJ_FOREIGN) {
        say(d, "Pending", 0, SBX_REASON_CONFLICT,
            "the name of this sandbox's %s is taken by an object it does not own; nothing was changed",
            o->pod == SBX_OBJ_FOREIGN ? "pod" : "workspace claim");
        return;
    }

    d->started_ms = lifecycle_started_ms(o);
    report_container(o, d);

    /* A finished one-shot: record the result, clean up, keep the Sandbox for
     * ttlSecondsAfterFinished. */
    int code;
    int64_t finished;
    if (s->lifecycle == SBX_ONE_SHOT && oneshot_result(o, d, &code, &finished)) {
        char text[32];
        snprintf(text, sizeof(text), "%d", code);
        if (code == 0)
            say(d, "Succeeded", 0, SBX_REASON_SUCCEEDED, "the command exited with code %s", text);
        else
            say(d, "Failed", 0, SBX_REASON_FAILED, "the command exited with code %s", text);
        if (d->run.note[0]) {
            append_message(d, "; ");
            append_message(d, d->run.note + strlen(NOTE_PREFIX));
        }
        /* The container itself was killed for memory (a one-shot pod never restarts, so
         * a recorded termination is this run's); kept in status.lastTermination once the
         * pod is gone, so the message stays the same. */
        if (d->last_termination.present && d->last_termination.reason &&
            !strcmp(d->last_termination.reason, "OOMKilled"))
            append_message(d, "; the container was OOMKilled");
        /* The finished pod is kept, as a Job keeps its pods: its container log holds the
         * run's whole output (status.run only the tails), read with pods/log until the
         * Sandbox goes and takes the pod with it (ownerReference). A terminated pod holds
         * no CPU, memory or running slot. The claim's deletion is asked for now; the
         * API server's pvc-protection keeps it until the pod is gone. */
        if (o->pvc == SBX_OBJ_PRESENT) d->actions |= SBX_ACT_DELETE_PVC;
        int64_t expires = finished + s->ttl_after_finished_s * 1000;
        if (o->now_ms >= expires) {
            d->actions |= SBX_ACT_DELETE_SANDBOX;
            if (o->pod == SBX_OBJ_PRESENT) d->actions |= SBX_ACT_DELETE_POD;   /* not left to the GC */
        } else {
            d->requeue_after_ms = expires - o->now_ms;
        }
        return;
    }
    if (s->lifecycle == SBX_ONE_SHOT && o->pod_phase && !strcmp(o->pod_phase, "Failed") &&
        (o->pod == SBX_OBJ_PRESENT || o->pod == SBX_OBJ_TERMINATING)) {
        /* Past its deadline, the container not stopped yet (see oneshot_result). */
        say(d, "Running", 0, SBX_REASON_RUNNING_COMMAND,
            "the command ran past spec.run.timeout; waiting for it to stop%s", "");
        return;
    }
    if (s->lifecycle == SBX_ONE_SHOT && o->pod == SBX_OBJ_ABSENT && o->run_started_ms > 0) {
        /* Its pod was created moments ago and the cache has not shown it yet. */
        say(d, "Creating", 0, SBX_REASON_CREATING, "waiting for the run's pod to appear%s", "");
        d->requeue_after_ms = o->run_started_ms + SBX_RUN_LOST_MS - o->now_ms;
        return;
    }

    int64_t last_used = lifecycle_last_used_ms(o);
    /* Clearing spec.paused counts as a use: a resumed sandbox starts a fresh idle period. */
    if (!s->paused && o->status_reason && !strcmp(o->status_reason, SBX_REASON_PAUSED))
        last_used = o->now_ms;
    d->last_used_ms = last_used;

    /* No idle deadline before the sandbox has been Ready (see lifecycle_clock_runs). */
    int64_t limit = lifecycle_clock_runs(o) ? lifecycle_idle_limit_ms(s) : 0;
    int idle = limit > 0 && last_used > 0 && o->now_ms - last_used >= limit;
    /* Warm-idle first, when the class says so: the pod kept, its CPU at the floor, until
     * its window after the deadline is over (then idle as without warm-idle). */
    int warm = idle && !s->paused && warm_idle_tier(s, o, last_used, limit, d);
    if (warm) idle = 0;

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
    /* Reclaimed (the status says so, written with the last use the reclaim saw): stopped
     * like an idle long-running sandbox until a newer use. Only session and long-running
     * sandboxes are ever reclaimed; one changed to another lifecycle since starts again. */
    if ((s->lifecycle == SBX_SESSION || s->lifecycle == SBX_LONG_RUNNING) && o->status_reason &&
        !strcmp(o->status_reason, SBX_REASON_RECLAIMED) && last_used <= o->status_last_used_ms) {
        stop(o, d, SBX_REASON_RECLAIMED);
        if (limit > 0 && last_used > 0) d->requeue_after_ms = last_used + limit - o->now_ms;  /* idle */
        return;
    }

    /* The workspace is to be a clone and the source is not ready: nothing is created (and
     * no running slot held) until it is. */
    if (o->pvc == SBX_OBJ_ABSENT && o->workspace_source_reason) {
        say(d, "Pending", 0, o->workspace_source_reason, "%s",
            o->workspace_source_message ? o->workspace_source_message : "the workspace source is not ready");
        d->requeue_after_ms = SBX_WS_SOURCE_RETRY_MS;
        return;
    }
    /* A fork's claim being filled by a copy: no pod until it is. The copier holds the
     * Sandbox's running slot (it counts as its pod would); one that has no slot yet waits
     * in line below, as the pod would, and a slot that came starts the copy at once. */
    int copy_waits = o->workspace_copy == SBX_COPY_WAITING && !o->admitted;
    if (o->pvc == SBX_OBJ_PRESENT && o->workspace_copy != SBX_COPY_NONE && !copy_waits) {
        const char *m = o->workspace_copy_message ? o->workspace_copy_message : "copying the workspace";
        d->requeue_after_ms = SBX_WS_COPY_RETRY_MS;
        if (o->workspace_copy == SBX_COPY_FAILED) {
            say(d, "Pending", 0, SBX_REASON_WS_COPY_FAILED, "%s", m);
        } else if (o->workspace_copy == SBX_COPY_WAITING) {
            say(d, "Creating", 0, SBX_REASON_WS_COPYING, "%s", "a running slot is free; the workspace copy starts");
            d->requeue_after_ms = 1;   /* the next pass makes the copier in the slot reserved now */
        } else {
            say(d, "Creating", 0, SBX_REASON_WS_COPYING, "%s", m);
        }
        return;
    }
    d->wants_pod = 1;
    if (o->pod == SBX_OBJ_ABSENT && !o->admitted) {
        /* A user is counted within the Sandbox's namespace (the tenant): say which. A class
         * may count its per-user cap across namespaces: say so. */
        char where[96] = "";
        if (o->user_capped && o->class_capped && s->per_user_across_namespaces)
            snprintf(where, sizeof(where), " (counted across namespaces: spec.maxRunningPerUserScope: Cluster)");
        else if (o->namespace_)
            snprintf(where, sizeof(where), " (counted in namespace \"%.63s\")", o->namespace_);
        if (o->user_capped && o->class_capped && s->class_name) {
            char cap[32];
            snprintf(cap, sizeof(cap), "%d", s->max_running_per_user);
            say(d, "Pending", 0, SBX_REASON_USER_CAPACITY, "%s", "");
            snprintf(d->message, sizeof(d->message),
                     "this user's limit of running sandboxes of SandboxClass \"%.253s\" (spec.maxRunningPerUser: %s) "
                     "is reached%s; waiting for one of them to stop", s->class_name, cap, where);
        } else if (o->user_capped) {
            say(d, "Pending", 0, SBX_REASON_USER_CAPACITY,
                "this user's limit of running sandboxes is reached%s; waiting for one of them to stop", where);
        } else if (o->queue_position > 0) {
            char pos[24];
            snprintf(pos, sizeof(pos), "%d", o->queue_position);
            d->queue_position = o->queue_position;
            say(d, "Pending", 0, SBX_REASON_CAPACITY,
                "the controller's limit of running sandboxes is reached; waiting for capacity (position %s in line)", pos);
        } else {
            say(d, "Pending", 0, SBX_REASON_CAPACITY,
                "the controller's limit of running sandboxes is reached; waiting for capacity%s", "");
        }
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
        /* A WaitForFirstConsumer claim binds only once this pod is scheduled: waiting for
         * it would only cost the whole delay. */
        const int late = o->claim_binding == SBX_BINDING_LATE;
        const int64_t bind_wait = o->claim_binding == SBX_BINDING_AT_ONCE ? SBX_BIND_WAIT_KNOWN_MS : SBX_BIND_WAIT_MS;
        if (o->pvc == SBX_OBJ_ABSENT && !late) {
            d->requeue_after_ms = bind_wait;
            return;
        }
        if (o->pvc != SBX_OBJ_ABSENT && !o->pvc_bound && !late && o->pvc_age_ms < bind_wait) {
            d->requeue_after_ms = bind_wait - (o->pvc_age_ms > 0 ? o->pvc_age_ms : 0);
            return;
        }
        if (o->workspace_helper && o->pvc != SBX_OBJ_ABSENT) {
            say(d, "Creating", 0, SBX_REASON_WORKSPACE_BUSY,
                "a volume helper pod holds the workspace (files read or written while the sandbox was stopped); "
                "the pod starts once it has ended%s", "");
            d->requeue_after_ms = SBX_WORKSPACE_BUSY_RETRY_MS;
            return;
        }
        d->actions |= SBX_ACT_CREATE_POD;
        if (s->lifecycle == SBX_ONE_SHOT) {
            /* Recorded with the pod: should it vanish without a result, the run is
             * reported lost rather than started a second time. */
            d->run.present = 1;
            d->run.started_ms = o->now_ms;
        }
    } else if (o->pod == SBX_OBJ_TERMINATING) {
        say(d, "Creating", 0, SBX_REASON_NOT_READY, "waiting for the previous pod to terminate%s", "");
    } else if (o->pod_phase && (!strcmp(o->pod_phase, "Succeeded") || !strcmp(o->pod_phase, "Failed"))) {
        /* The main process ended (or the pod was evicted): replace the pod. */
        d->actions |= SBX_ACT_DELETE_POD;
        const struct sbx_termination *t = &o->ctr.terminated;
        if (t->present && valid_reason(t->reason)) {
            char why[160];
            snprintf(why, sizeof(why), "%s: %s, exit code %d", o->pod_phase, t->reason, t->exit_code);
            say(d, "Creating", 0, SBX_REASON_NOT_READY, "the pod ended (%s); replacing it", why);
        } else {
            say(d, "Creating", 0, SBX_REASON_NOT_READY, "the pod ended (%s); replacing it", o->pod_phase);
        }
    } else if (o->pod_template_outdated && s->lifecycle != SBX_ONE_SHOT) {
        /* The spec changed since this pod was built (image, command, env, resources, mount
         * path): replace it; the claim, and so the workspace, stays. (A one-shot pod runs
         * its command to the end.) */
        char gen[32];
        snprintf(gen, sizeof(gen), "%lld", (long long)o->generation);
        d->actions |= SBX_ACT_DELETE_POD;
        say(d, "Creating", 0, SBX_REASON_UPDATING,
            "the spec changed (generation %s); replacing the pod, the workspace is kept", gen);
    } else if (warm) {
        warm_idle_report(s, o, d);
    } else if (o->pod_phase && !strcmp(o->pod_phase, "Running") && o->pod_ready) {
        if (s->lifecycle == SBX_ONE_SHOT) {
            d->run.present = 1;
            d->run.started_ms = o->ctr.running_since_ms ? o->ctr.running_since_ms : o->run_started_ms;
            say(d, "Running", 1, SBX_REASON_RUNNING_COMMAND, "running spec.run%s", "");
        } else {
            say(d, "Running", 1, SBX_REASON_READY, "the pod is running and ready%s", "");
        }
    } else if (warm_claim_stranded_in(o) == 0) {
        d->actions |= SBX_ACT_RELEASE_CLAIM;
        say(d, "Creating", 0, SBX_REASON_WARM_RELEASED,
            "the adopted warm workspace's node cannot take this sandbox; giving the unused claim up for a new one (%s)",
            o->pod_unscheduled_message);
    } else if (pod_trouble(o, d)) {
        /* the scheduler's or the kubelet's reason, set by pod_trouble */
        if (s->image_builtin && d->reason && (!strcmp(d->reason, "ErrImagePull") || !strcmp(d->reason, "ImagePullBackOff")))
            builtin_image_hint(s, d);
        int64_t left = warm_claim_stranded_in(o);
        if (left > 0) d->requeue_after_ms = left;
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
        int64_t idle_in = left > 0 ? left : 1;
        if (d->requeue_after_ms <= 0 || idle_in < d->requeue_after_ms) d->requeue_after_ms = idle_in;
        d->idle_at_ms = last_used > INT64_MAX - limit ? 0 : last_used + limit;
        /* Warm-idle: the next deadline is the end of its window (the stop). */
        if (warm) d->requeue_after_ms = d->idle_at_ms + s->warm_idle_window_ms - o->now_ms;
        if (warm && d->requeue_after_ms <= 0) d->requeue_after_ms = 1;
    }
    if (!warm) warm_idle_wake(s, o, d);
}

int lifecycle_at_idle_deadline(const struct sbx_decision *d) {
    return d->reason && ((!strcmp(d->reason, SBX_REASON_IDLE) && (d->actions & SBX_ACTS_DESTRUCTIVE)) ||
                         (!strcmp(d->reason, SBX_REASON_WARM_IDLE) && (d->actions & SBX_ACT_RESIZE_DOWN)));
}

int64_t lifecycle_activity_threshold(const struct sbx_spec *s, const struct sbx_observed *o) {
    int64_t threshold = s->activity_cpu_millis, half = o->pod_cpu_limit_millis / 2;
    if (o->status_warm_idle_since_ms > 0 && half > 0 && half < threshold) threshold = half;
    return threshold;
}

int lifecycle_workspace_may_be_held(const struct sbx_observed *o, const struct sbx_decision *d) {
    return (d->actions & SBX_ACT_CREATE_POD) && o->pvc == SBX_OBJ_PRESENT &&
           ((o->status_phase && !strcmp(o->status_phase, "Stopped")) ||
            (o->status_reason && !strcmp(o->status_reason, SBX_REASON_WORKSPACE_BUSY)));
}
