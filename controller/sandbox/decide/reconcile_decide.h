/* sandbox/decide/reconcile_decide.h — the controller's decisions, as one pure function: given a
 * Sandbox's spec, what the cache says about it and its Pod and PVC, and the time, decide
 * what to do (create/delete what, record a one-shot result, delete the Sandbox), what the
 * status should say, and when to look again. No I/O and no clock: everything comes in
 * through struct sbx_observed, so every rule of SPEC §4 is unit-testable. */
#ifndef YAO_SANDBOX_RECONCILE_DECIDE_H
#define YAO_SANDBOX_RECONCILE_DECIDE_H

#include <stddef.h>
#include <stdint.h>
#include "sandbox/model/spec.h"
#include "sandbox/model/termination.h"   /* struct sbx_termination */

/* How claims of a StorageClass bind (its volumeBindingMode), as far as the controller knows. */
enum sbx_binding { SBX_BINDING_UNKNOWN = 0, SBX_BINDING_AT_ONCE, SBX_BINDING_LATE };

/* What the cache says about one owned object. */
enum sbx_object_state {
    SBX_OBJ_ABSENT = 0,
    SBX_OBJ_PRESENT,      /* exists, ours (controller ownerReference to this Sandbox's uid) */
    SBX_OBJ_TERMINATING,  /* ours, deletionTimestamp set */
    SBX_OBJ_FOREIGN,      /* the name is taken by an object this Sandbox does not own */
};


/* The sandbox container's status in the pod (the container named SBX_CONTAINER_NAME). */
struct sbx_container_status {
    int present;                     /* the pod reports a status for it */
    int ready;
    int restart_count;
    const char *waiting_reason;      /* state.waiting: ContainerCreating, ErrImagePull, ... */
    const char *waiting_message;
    int64_t running_since_ms;        /* state.running.startedAt */
    struct sbx_termination terminated;  /* state.terminated: the current run ended */
    struct sbx_termination last;        /* lastState.terminated: the run before this one */
};

struct sbx_observed {
    int64_t now_ms;
    int64_t created_ms;            /* Sandbox creationTimestamp */
    int64_t generation;            /* metadata.generation */
    /* Usage signals (0 = unknown). */
    int64_t last_used_annotation_ms; /* sandbox.yaoapps.com/last-used-at */
    int64_t status_last_used_ms;     /* status.lastUsedAt as last written */
    int64_t status_started_ms;       /* status.startedAt: when the sandbox became Ready */
    int64_t status_stopped_ms;       /* status.stoppedAt */
    const char *status_phase;        /* status.phase, NULL if none */
    const char *status_reason;       /* status Ready condition reason, NULL if none */
    struct sbx_termination status_last_termination; /* status.lastTermination */
    /* One-shot result already recorded in status.run. */
    int run_finished;
    int run_exit_code;
    int64_t run_finished_ms;
    /* status.run.startedAt: written when the run's pod is created (then the container's own
     * start). Set with no result and no pod: the pod went away before its result was seen. */
    int64_t run_started_ms;
    /* Owned objects. */
    enum sbx_object_state pvc;
    int pvc_bound;
    int64_t pvc_age_ms;              /* now - the claim's creationTimestamp */
    /* How the claim's StorageClass binds, while there is no pod and no Bound claim: LATE
     * (WaitForFirstConsumer: the claim stays Pending until a pod that uses it is scheduled,
     * so the pod is created at once), AT_ONCE (a cached Immediate class: the pod waits
     * for the claim to be Bound, SBX_BIND_WAIT_KNOWN_MS), UNKNOWN (SBX_BIND_WAIT_MS). */
    enum sbx_binding claim_binding;
    int64_t claim_request_bytes;     /* the claim's spec.resources.requests.storage (0 = unknown) */
    int64_t claim_cloned_bytes;      /* a fork's claim: the size it was cloned at (0 = not a fork) */
    int64_t claim_capacity_bytes;    /* its status.capacity.storage (0 = unknown) */
    int claim_expandable;            /* its StorageClass says allowVolumeExpansion: true */
    /* A warm pool claim this Sandbox adopted: when (SBX_ANN_WARM_ADOPTED; 0 = a claim of
     * its own, or adopted before the annotation existed). */
    int64_t claim_adopted_ms;
    /* spec.workspace.from, while there is no claim: why the source's claim cannot be
     * cloned yet (SBX_REASON_WS_SOURCE_*) and a message; NULL when it can, or when the
     * workspace starts empty. No claim is created meanwhile: one made without its
     * dataSource would start empty, and a claim's dataSource cannot be set later. */
    const char *workspace_source_reason, *workspace_source_message;
    /* A fork filled by a copy (sandbox/model/workspacecopy.h), while its claim is not filled yet:
     * the copier runs (or is being made), or it failed; with a message. No pod meanwhile.
     * The copier holds the Sandbox's running slot like the pod it fills: SBX_COPY_WAITING,
     * no copier yet and no slot for one (its user's caps or the global cap are reached):
     * the copy waits in line as the pod would (admitted says whether a slot came since). */
    enum sbx_copy { SBX_COPY_NONE = 0, SBX_COPY_RUNNING, SBX_COPY_FAILED, SBX_COPY_WAITING } workspace_copy;
    const char *workspace_copy_message;
    /* A volume helper pod (Yao's Volume client, volhelper_decide.h) holds the workspace
     * claim of this stopped Sandbox: no sandbox pod on the claim until it has ended. */
    int workspace_helper;
    enum sbx_object_state pod;
    /* The spec changed since the pod was built: its template-hash annotation differs from
     * the desired pod's, so it is to be replaced. 0: built from the spec as it is now, or
     * it carries no hash (made before hashes existed: not replaced just for that). */
    int pod_template_outdated;
    int64_t status_observed_generation; /* status.observedGeneration as last written */
    const char *pod_phase;           /* Pending, Running, Succeeded, Failed, Unknown */
    const char *pod_reason;          /* status.reason: DeadlineExceeded, Evicted, ... (NULL if none) */
    int64_t run_timeout_s;           /* the pod's activeDeadlineSeconds, for the message (0 = none) */
    int pod_ready;                   /* Ready condition True */
    int64_t pod_ready_since_ms;      /* its lastTransitionTime while True (0 = unknown) */
    /* status.startTime: when the kubelet accepted the pod, before the image is pulled and
     * the container started. Never a usage signal; it only tells whether
     * status.startedAt was recorded for this pod or for an earlier one. */
    int64_t pod_started_ms;
    /* PodScheduled=False: the scheduler's reason (Unschedulable) and message, else NULL. */
    const char *pod_unscheduled_reason, *pod_unscheduled_message;
    int64_t pod_unscheduled_since_ms;   /* that condition's lastTransitionTime (0 = unknown) */
    struct sbx_container_status ctr;
    /* Warm-idle. The sandbox container's CPU as the pod's spec asks it now (what the last
     * resize set; millicores, 0 = unset), what the kubelet has actually given it
     * (containerStatuses[].resources.limits.cpu; 0 = not reported), and the kubelet's
     * verdict on a resize it cannot make (PodResizePending's reason: "Infeasible",
     * "Deferred"; NULL = none pending). status.warmIdleSince as last written (0 = not
     * warm-idle). */
    int64_t pod_cpu_limit_millis, pod_cpu_request_millis, pod_cpu_allocated_millis;
    const char *pod_resize_pending;
    /* The API server refused to resize this pod at all (sandbox/io/resize.h: no in-place
     * resize on its node or cluster, no RBAC for it), as the controller noted it. */
    int pod_resize_api_refused;
    int64_t status_warm_idle_since_ms;
    /* The running cap: may this Sandbox have a pod? (already has one, or within the cap,
     * first in line). When not: its place in line (1 = next), or user_capped when its
     * user's own cap holds it. */
    int admitted;
    int queue_position;
    int user_capped;
    /* user_capped by its class's per-user cap (spec.class_name, spec.max_running_per_user),
     * not the controller's --max-running-per-user. */
    int class_capped;
    /* The Sandbox's namespace: per-user caps count a user within it (the tenant), and the
     * messages of a user cap say so. NULL: not named. */
    const char *namespace_;
};

enum sbx_action {
    SBX_ACT_CREATE_PVC = 1 << 0,
    SBX_ACT_CREATE_POD = 1 << 1,
    SBX_ACT_DELETE_POD = 1 << 2,
    SBX_ACT_DELETE_PVC = 1 << 3,
    SBX_ACT_DELETE_SANDBOX = 1 << 4,
    SBX_ACT_EXPAND_PVC = 1 << 6,   /* raise the claim's storage request to spec.workspace.size */
    /* Give up an adopted warm claim no sandbox pod has used (a WaitForFirstConsumer
     * pool's volume on a node that cannot take the pod): delete the unscheduled pod (if
     * it is still unscheduled, fresh from the API server) and then the claim; the next
     * pass makes a cold claim, which binds where the new pod is scheduled. */
    SBX_ACT_RELEASE_CLAIM = 1 << 7,
    /* Resize the running pod's CPU in place (the pods/resize subresource) to
     * resize_cpu_request/limit_millis: down to the warm-idle floor (fenced like a stop:
     * recorded in the status first, conditional on the Sandbox's version), or back up to
     * the spec's (a wake; conditional on the pod's uid and version). */
    SBX_ACT_RESIZE_DOWN = 1 << 8,
    SBX_ACT_RESIZE_UP = 1 << 9,
};
/* The actions that destroy: made only on a Sandbox proven unchanged since the decision. */
#define SBX_ACTS_DESTRUCTIVE (SBX_ACT_DELETE_POD | SBX_ACT_DELETE_PVC | SBX_ACT_DELETE_SANDBOX | SBX_ACT_RELEASE_CLAIM)

/* Warm-idle: the Ready reason while the pod is kept with its CPU at the floor (phase
 * Running, Ready True: it runs and takes commands, slowly); the Events of a resize the
 * kubelet refused (the lifecycle's idle action follows at once) and of a wake whose CPU
 * did not come back (the pod is replaced, workspace kept). */
#define SBX_REASON_WARM_IDLE "WarmIdle"
#define SBX_EVENT_WARM_IDLE_FAILED "WarmIdleResizeFailed"
#define SBX_EVENT_WAKE_FAILED "WarmIdleWakeFailed"

/* An adopted warm claim's pod that cannot be scheduled because of its volume's node
 * (the scheduler's "volume node affinity conflict", or since 1.33 "didn't match
 * PersistentVolume's node affinity", on every other node) for this long
 * gives the claim up, if no pod of the Sandbox ever started and the adoption is at most
 * SBX_WARM_RELEASE_WINDOW_MS old: the workspace is then as the provisioner made it. */
#define SBX_WARM_STRANDED_MS 30000
#define SBX_WARM_RELEASE_WINDOW_MS 600000
#define SBX_REASON_WARM_RELEASED "WarmClaimReleased"

/* The Workspace condition's reasons. */
#define SBX_WS_RESIZING "Resizing"
#define SBX_WS_NOT_EXPANDABLE "ExpansionNotSupported"
#define SBX_WS_SHRINK_REFUSED "ShrinkRefused"

/* Why the sandbox is not running (or is): the Ready condition's reason. */
#define SBX_REASON_READY "PodReady"
#define SBX_REASON_NOT_READY "PodNotReady"
#define SBX_REASON_CREATING "Creating"
#define SBX_REASON_CAPACITY "CapacityExceeded"
#define SBX_REASON_USER_CAPACITY "UserCapacityExceeded"   /* --max-running-per-user */
#define SBX_REASON_INVALID "InvalidSpec"
#define SBX_REASON_CONFLICT "NameConflict"
#define SBX_REASON_IDLE "Idle"
/* Stopped while idle to admit a waiting sandbox (the class's spec.reclaim, see
 * sandbox/io/reclaim.c): it stays stopped, workspace kept, until a newer use. */
#define SBX_REASON_RECLAIMED "Reclaimed"
#define SBX_REASON_PAUSED "Paused"
#define SBX_REASON_RUNNING_COMMAND "RunningCommand"
#define SBX_REASON_SUCCEEDED "Succeeded"
#define SBX_REASON_FAILED "Failed"
#define SBX_REASON_EXPIRED "Expired"
#define SBX_REASON_UPDATING "SpecChanged"   /* the pod is replaced to apply a spec change */
/* Besides these, a pod that does not start lends its own reason: the scheduler's
 * (Unschedulable) or the container's waiting reason as the kubelet reports it
 * (ErrImagePull, ImagePullBackOff, CrashLoopBackOff, CreateContainerConfigError,
 * InvalidImageName, ...), with the scheduler's or kubelet's message. */
#define SBX_REASON_UNSCHEDULABLE "Unschedulable"
/* spec.workspace.from: the source Sandbox, or its bound claim, is not there (yet); or
 * its claim cannot be cloned into the claim the spec asks for (another StorageClass). */
#define SBX_REASON_WS_SOURCE_NOT_FOUND "WorkspaceSourceNotFound"
#define SBX_REASON_WS_SOURCE_INCOMPATIBLE "WorkspaceSourceIncompatible"
/* spec.workspace.from names another user's Sandbox (spec.userID differs) and the class
 * does not allow forks across users (spec.workspace.allowForksAcrossUsers): InvalidSpec,
 * no claim. */
#define SBX_REASON_WS_SOURCE_FORBIDDEN "WorkspaceSourceForbidden"
/* A fork on a StorageClass that does not clone: its workspace is being copied from the
 * source's, or the copy failed (the copier's own message); the pod waits for it. */
#define SBX_REASON_WS_COPYING "WorkspaceCopying"
#define SBX_REASON_WS_COPY_FAILED "WorkspaceCopyFailed"
/* A volume helper pod (clients/go/yaovolume) still holds the workspace of a Sandbox that
 * is to start: the pod waits for it to end (the client deletes it when it sees the
 * Sandbox start; its activeDeadlineSeconds bounds it in any case). */
#define SBX_REASON_WORKSPACE_BUSY "WorkspaceBusy"
#define SBX_WORKSPACE_BUSY_RETRY_MS 1000
/* How often a Sandbox whose workspace is being copied looks again (the copier's pod
 * events queue it too). */
#define SBX_WS_COPY_RETRY_MS 5000

/* The Ready condition's message, at most this many bytes (cut on a UTF-8 boundary). */
#define SBX_MESSAGE_MAX 1024

/* A one-shot run as status.run should show it. */
struct sbx_run_result {
    int present;                   /* write status.run from this (else keep what is there) */
    int finished;                  /* the result: exitCode, finishedAt, output */
    int exit_code;                 /* the container's; 124 for a timeout, -1 when unknown */
    int64_t started_ms, finished_ms;
    const char *message;           /* the container's termination message (points into o), or NULL */
    char note[256];                /* the controller's line for stderr ("" = none) */
};

struct sbx_decision {
    unsigned actions;              /* SBX_ACT_* */
    const char *phase;             /* status.phase to write */
    int ready;                     /* Ready condition status */
    const char *reason;            /* Ready condition reason (may point into o's strings) */
    char message[SBX_MESSAGE_MAX]; /* Ready condition message */
    int64_t started_ms;            /* status.startedAt: when the sandbox became Ready (0 = never) */
    int restart_count;             /* status.restartCount of the current pod (-1 = no pod: omit) */
    struct sbx_termination last_termination; /* status.lastTermination (strings may point into o) */
    int64_t last_used_ms;          /* status.lastUsedAt to write (0 = leave unset) */
    int64_t stopped_ms;            /* status.stoppedAt to write (0 = clear) */
    int64_t requeue_after_ms;      /* look again after this long (0 = only on change) */
    int wants_pod;                 /* the policy wants a pod now (used for capacity) */
    int queue_position;            /* status.queuePosition while it waits for the cap (0 = omit) */
    /* status.observedGeneration: the generation once the pod matches it (or no pod is
     * wanted, or none was ever built: a new Sandbox); while a changed spec has not reached
     * a pod, the one recorded before (the reconciler raises it when it creates the pod). */
    int64_t observed_generation;
    struct sbx_run_result run;     /* status.run (one-shot) */
    const char *lifecycle;         /* status.lifecycle: the effective lifecycle (static string) */
    /* The Workspace condition (status False) when the claim is not the size the spec asks
     * for: reason SBX_WS_RESIZING, SBX_WS_NOT_EXPANDABLE or SBX_WS_SHRINK_REFUSED and a
     * message; NULL when there is nothing to say (the condition is then removed). */
    const char *workspace_reason;
    char workspace_message[256];
    /* The effective idle policy, as status publishes it for clients that keep the sandbox
     * in use (0 = omitted): status.idleTimeout (session and long-running: the spec's, else
     * the class's, else the controller's), status.reclaimAfter (the class's reclaim
     * window, for session and long-running), status.idleAt (when the sandbox becomes idle:
     * the last use plus its idle limit, while the idle clock runs and a pod is wanted). */
    int64_t idle_timeout_ms, reclaim_after_ms, idle_at_ms;
    const char *class_name;        /* status.className: the SandboxClass applied (NULL = none) */
    /* Warm-idle: status.warmIdleSince (0 = omitted: not warm-idle); the CPU a resize sets
     * (SBX_ACT_RESIZE_*); the Event to record with this decision's action when a resize
     * failed (warm_event NULL = none; warm_event_message its text). */
    int64_t warm_idle_since_ms;
    int64_t resize_cpu_request_millis, resize_cpu_limit_millis;
    const char *warm_event;
    char warm_event_message[256];
    /* The Accepted condition (status False) when the spec as it is now cannot be applied:
     * its reason (SBX_REASON_INVALID or a more precise one) and message; NULL = accepted
     * (the condition is then removed). Set by the reconciler, not by lifecycle_decide. */
    const char *invalid_reason;
    char invalid_message[SBX_MESSAGE_MAX];
};

/* The idle limit of a lifecycle: idleTimeout (session), ×24 (long-running), none
 * (persistent, one-shot: 0). */
int64_t lifecycle_idle_limit_ms(const struct sbx_spec *s);

/* When the sandbox became Ready, as status.startedAt should record it: the moment the
 * current pod first became Ready (its Ready condition's lastTransitionTime), kept while
 * that pod lives on through container restarts, replaced once a new pod becomes Ready;
 * otherwise the recorded status.startedAt (0 = never Ready). */
int64_t lifecycle_started_ms(const struct sbx_observed *o);

/* Whether the idle clock runs: only once the sandbox has been Ready. A pod that is still
 * being scheduled, pulling its image or failing to start, and has never been Ready, was
 * never usable, so it is never idle: no idle deadline at all until it is Ready. A pod that
 * was Ready and is restarting keeps its clock; without a pod (stopped, or about to be
 * created again) the recorded clock of the sandbox applies. */
int lifecycle_clock_runs(const struct sbx_observed *o);

/* The newest usage signal: last-used-at annotation, status.lastUsedAt, and the time the
 * sandbox became Ready (lifecycle_started_ms). */
int64_t lifecycle_last_used_ms(const struct sbx_observed *o);

/* How far a last-used-at may lie ahead of the controller's clock (clients' clocks are not
 * the controller's) before it is taken as "now" instead. */
#define SBX_LAST_USED_SKEW_MS 10000

/* What the controller makes of a last-used-at annotation value. */
enum sbx_last_used {
    SBX_LAST_USED_NONE,      /* no annotation */
    SBX_LAST_USED_OK,        /* an RFC 3339 time, not in the future beyond the skew */
    SBX_LAST_USED_FUTURE,    /* ahead by more than SBX_LAST_USED_SKEW_MS: taken as now */
    SBX_LAST_USED_INVALID,   /* not an RFC 3339 time: ignored */
};

/* Classify the annotation value (NULL = absent) at now_ms; *ms receives the usage time to
 * count: the parsed time (OK), now_ms (FUTURE), 0 (NONE, INVALID). A value far in the
 * future would otherwise keep a session alive forever; one that does not parse would be
 * ignored without a word. */
enum sbx_last_used lifecycle_last_used_check(const char *value, int64_t now_ms, int64_t *ms);

/* A new pod waits for its workspace claim to be Bound: a pod created before is put into the
 * scheduler's backoff (1 s, 2 s, 4 s, ... doubled on every failed attempt, and every other
 * claim's binding makes it try again), so waiting for the claim's Bound event is faster.
 * On a class known to bind at once (Immediate) the pod waits up to SBX_BIND_WAIT_KNOWN_MS
 * (provisioning takes seconds on cloud volumes, and longer when many claims are created
 * together); the pod is then created anyway, so that a claim that never binds shows the
 * scheduler's reason. A class the controller cannot see (a namespaced install cannot read
 * StorageClasses) might bind only for a consumer: its pod waits SBX_BIND_WAIT_MS only.
 * A class that binds only for a consumer (WaitForFirstConsumer) gets its pod at once, in
 * the pass that creates the claim. */
#define SBX_BIND_WAIT_MS 3000
#define SBX_BIND_WAIT_KNOWN_MS 30000
/* How often a Sandbox whose workspace source is not there looks again. */
#define SBX_WS_SOURCE_RETRY_MS 5000

/* A one-shot whose status.run says its pod was created, but whose pod the cache does not
 * show, is waited for this long (the pod's watch event may come after the status's), then
 * recorded as lost (exit code -1): a run is never started twice. */
#define SBX_RUN_LOST_MS 10000

/* The warm-idle CPU of a pod of spec s: the limit is the floor (never above the spec's
 * limit), the request the spec's request capped at the floor. A pod keeps its QoS class
 * through a resize (the API server refuses a change): when the spec's CPU request is
 * below its limit (Burstable) and its memory request equals its limit, a request equal
 * to the floor would make every request equal its limit (Guaranteed), so the request
 * stays one millicore below the floor. 0 for both when warm-idle is off for s. */
void lifecycle_warm_idle_cpu(const struct sbx_spec *s, int64_t *request_millis, int64_t *limit_millis);

/* Does d act on an idle deadline — the idle action's destroying step (reason Idle), or the
 * resize down into warm-idle? A class counting activity asks the pod's metrics then, once
 * per deadline reached, before anything is taken from it. */
int lifecycle_at_idle_deadline(const struct sbx_decision *d);

/* The CPU (millicores) above which the pod counts as at work at that deadline: the class's
 * spec.activity.cpu, or half the pod's CPU limit when it is warm-idle and that is less (a
 * pod held at its floor cannot use the class's threshold). */
int64_t lifecycle_activity_threshold(const struct sbx_spec *s, const struct sbx_observed *o);

/* Before d's new pod starts on the workspace claim: may a volume helper pod hold it? Only
 * when the Sandbox was Stopped (a helper may have been started on the idle claim) or
 * already waits for one (WorkspaceBusy); the I/O side then asks the API server. */
int lifecycle_workspace_may_be_held(const struct sbx_observed *o, const struct sbx_decision *d);

/* Decide. Never fails; d is fully written. */
void lifecycle_decide(const struct sbx_spec *s, const struct sbx_observed *o, struct sbx_decision *d);

#endif
