/* tests/unit/test_reconcile_decide.c — the pure decision function (sandbox/decide/reconcile_decide.c), rule by
 * rule of SPEC §4: name conflicts, bringing up PVC and pod, waiting states, exact
 * requeue deadlines per lifecycle, session removal, long-running stop and wake-up,
 * paused/unpaused, the running cap, pod replacement, one-shot runs (their result read from
 * the pod: exit code, timeout, a lost pod) and their TTL, and
 * idle limits too large to multiply or add without saturating. */
#include "check.h"
#include "observed_fixtures.h"

#include "sandbox/decide/reconcile_decide.h"

#define SEC INT64_C(1000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
/* 2026-11-29T10:00:00Z */
#define T0 INT64_C(1795946400000)

#define A_PVC SBX_ACT_CREATE_PVC
#define A_POD SBX_ACT_CREATE_POD
#define D_POD SBX_ACT_DELETE_POD
#define D_PVC SBX_ACT_DELETE_PVC
#define D_SBX SBX_ACT_DELETE_SANDBOX

/* ---- helpers -------------------------------------------------------------------------- */

/* A spec as sbx_spec_parse would give it: idle 30 min, ttl 300 s. Owns no memory. */
static struct sbx_spec spec_of(enum sbx_lifecycle l) {
    struct sbx_spec s;
    memset(&s, 0, sizeof(s));
    s.lifecycle = l;
    s.idle_timeout_ms = 30 * MIN;
    s.ttl_after_finished_s = 300;
    return s;
}

static struct sbx_observed fresh(int64_t now) { return observed_fresh(now); }

static struct sbx_observed running(int64_t started, int64_t now) { return observed_running(started, now); }

static struct sbx_decision decide(const struct sbx_spec *s, const struct sbx_observed *o) {
    struct sbx_decision d;
    memset(&d, 0xA5, sizeof(d)); /* lifecycle_decide must write every field */
    lifecycle_decide(s, o, &d);
    return d;
}

/* ---- name conflicts ------------------------------------------------------------------- */

TEST(conflict_pod_foreign_changes_nothing) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.pod = SBX_OBJ_FOREIGN;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Pending");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "NameConflict");
    CHECK(strstr(d.message, "pod") != NULL);
    CHECK(strstr(d.message, "nothing was changed") != NULL);
    CHECK_INT(d.requeue_after_ms, 0);
    CHECK_INT(d.last_used_ms, 0);
    CHECK_INT(d.stopped_ms, 0);
    CHECK_INT(d.wants_pod, 0);
}

TEST(conflict_pvc_foreign_changes_nothing) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + MIN);
    o.pvc = SBX_OBJ_FOREIGN;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Pending");
    CHECK_STR(d.reason, SBX_REASON_CONFLICT);
    CHECK_STR(d.message, "the name of this sandbox's workspace claim is taken by an object it "
                         "does not own; nothing was changed");
    CHECK_INT(d.requeue_after_ms, 0);
}

TEST(conflict_wins_over_every_other_rule) {
    /* even when the session is long idle, or a one-shot has finished: never touch */
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + DAY);
    o.pod = SBX_OBJ_FOREIGN;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_CONFLICT);

    s = spec_of(SBX_ONE_SHOT);
    o = fresh(T0 + DAY);
    o.pvc = SBX_OBJ_FOREIGN;
    o.pod = SBX_OBJ_PRESENT;
    o.run_finished = 1;
    o.run_finished_ms = T0;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_CONFLICT);

    s = spec_of(SBX_LONG_RUNNING);
    s.paused = 1;
    o = running(T0, T0 + MIN);
    o.pod = SBX_OBJ_FOREIGN;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_CONFLICT);
}

/* ---- bringing up ---------------------------------------------------------------------- */

/* spec.workspace.from with the source not ready: no claim (it would start empty), no pod,
 * no running slot; the reason and message as given, and a look again. Once there is a
 * claim, the source no longer matters. */
TEST(workspace_source_not_ready_creates_nothing) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.workspace_source_reason = SBX_REASON_WS_SOURCE_NOT_FOUND;
    o.workspace_source_message = "spec.workspace.from: Sandbox a not found in namespace ns; waiting for it";
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Pending");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "WorkspaceSourceNotFound");
    CHECK_STR(d.message, "spec.workspace.from: Sandbox a not found in namespace ns; waiting for it");
    CHECK_INT(d.wants_pod, 0);
    CHECK_INT(d.requeue_after_ms, SBX_WS_SOURCE_RETRY_MS);
    o.workspace_source_reason = SBX_REASON_WS_SOURCE_INCOMPATIBLE;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, "WorkspaceSourceIncompatible");
    o.workspace_source_reason = NULL;   /* ready: the clone is created */
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_PVC);
    CHECK_INT(d.wants_pod, 1);
    o = running(T0, T0 + MIN);   /* the claim exists: a source gone since changes nothing */
    o.workspace_source_reason = SBX_REASON_WS_SOURCE_NOT_FOUND;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_READY);
}

/* A fork's copy runs in the Sandbox's running slot: without one it waits in line as the
 * pod would (its user's cap named); a slot that came starts the copy at once, never the
 * pod; a copy that runs or failed makes no pod and no slot request. */
TEST(a_forks_copy_waits_for_a_running_slot) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.workspace_copy = SBX_COPY_WAITING;
    o.admitted = 0;
    o.user_capped = 1;
    o.namespace_ = "ns";
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Pending");
    CHECK_STR(d.reason, "UserCapacityExceeded");
    CHECK_INT(d.wants_pod, 1);                    /* it asks for a slot (stays in line) */
    o.user_capped = 0;
    o.queue_position = 3;                         /* the global cap: its place in line */
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, "CapacityExceeded");
    CHECK_INT(d.queue_position, 3);
    o.queue_position = 0;
    o.admitted = 1;                               /* a slot came: the copier next, no pod */
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, SBX_REASON_WS_COPYING);
    CHECK_INT(d.requeue_after_ms, 1);
    o.workspace_copy = SBX_COPY_RUNNING;          /* the copier holds the slot: no pod yet */
    o.workspace_copy_message = "copying";
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_WS_COPYING);
    CHECK_INT(d.wants_pod, 0);
    o.workspace_copy = SBX_COPY_FAILED;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_WS_COPY_FAILED);
    o.workspace_copy = SBX_COPY_NONE;             /* filled: the pod */
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
}

TEST(fresh_sandbox_creates_pvc_then_pod_once_bound) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_PVC); /* the pod follows the claim's binding */
    CHECK_STR(d.phase, "Creating");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "Creating");
    CHECK_STR(d.message, "creating the workspace claim and the pod; waiting for the pod to start");
    CHECK_INT(d.wants_pod, 1);
    CHECK_INT(d.last_used_ms, 0);
    CHECK_INT(d.stopped_ms, 0);
    CHECK_INT(d.requeue_after_ms, SBX_BIND_WAIT_MS); /* look again if no bind event comes */
    CHECK_INT(d.observed_generation, 1); /* nothing from an older spec: this generation */
    /* claim there, not bound yet, 1 s old: wait the rest of the bind wait */
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_age_ms = 1000;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, "Creating");
    CHECK_INT(d.requeue_after_ms, SBX_BIND_WAIT_MS - 1000);
    /* bound: the pod is created */
    o.pvc_bound = 1;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_INT(d.requeue_after_ms, 0); /* no usage signal yet: no idle clock */
    /* never bound (a class the controller cannot see): after the wait */
    o.pvc_bound = 0;
    o.pvc_age_ms = SBX_BIND_WAIT_MS;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
}

TEST(known_immediate_class_waits_longer_for_the_binding) {
    /* A cached Immediate class: the pod waits for the claim's Bound event (a pod created
     * earlier lands in the scheduler's backoff), up to SBX_BIND_WAIT_KNOWN_MS. */
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.claim_binding = SBX_BINDING_AT_ONCE;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_PVC);
    CHECK_INT(d.requeue_after_ms, SBX_BIND_WAIT_KNOWN_MS);
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_age_ms = SBX_BIND_WAIT_MS;            /* past the short wait of an unknown class */
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.requeue_after_ms, SBX_BIND_WAIT_KNOWN_MS - SBX_BIND_WAIT_MS);
    o.pvc_bound = 1;                             /* the Bound event: the pod at once */
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    o.pvc_bound = 0;                             /* never bound: the scheduler says why */
    o.pvc_age_ms = SBX_BIND_WAIT_KNOWN_MS;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
}

TEST(wait_for_first_consumer_class_gets_its_pod_with_the_claim) {
    /* The claim binds only once a pod using it is scheduled: claim and pod in one pass. */
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.claim_binding = SBX_BINDING_LATE;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_PVC | A_POD);
    CHECK_STR(d.phase, "Creating");
    CHECK_INT(d.requeue_after_ms, 0);
    /* claim there, Pending (it waits for the pod), the pod not in the cache yet: created
     * (again: a 409 on create is ours and harmless), no waiting */
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_age_ms = 100;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    /* over the running cap: neither claim nor pod */
    o = fresh(T0);
    o.claim_binding = SBX_BINDING_LATE;
    o.admitted = 0;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_CAPACITY);
}

TEST(annotation_before_first_ready_starts_no_clock) {
    /* a client touched the Sandbox when it created it: recorded, but no idle deadline
     * before the sandbox has been Ready */
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.last_used_annotation_ms = T0 - 2 * SEC;
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_INT(d.last_used_ms, T0 - 2 * SEC);
    CHECK_INT(d.started_ms, 0);
    CHECK_INT(d.requeue_after_ms, 0);
    /* a day later, still waiting for capacity: not idle */
    o.now_ms = T0 + DAY;
    o.admitted = 0;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_CAPACITY);
}

TEST(pvc_exists_creates_only_pod) {
    struct sbx_spec s = spec_of(SBX_PERSISTENT);
    struct sbx_observed o = fresh(T0);
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_STR(d.phase, "Creating");
}

/* A volume helper pod (Yao's Volume client) holds a stopped Sandbox's workspace: the
 * pod waits (WorkspaceBusy, looked at again in a second), and starts once it has ended. */
TEST(a_volume_helper_holding_the_workspace_delays_the_pod) {
    struct sbx_spec s = spec_of(SBX_PERSISTENT);
    struct sbx_observed o = fresh(T0);
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.status_phase = "Stopped";
    o.workspace_helper = 1;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, SBX_REASON_WORKSPACE_BUSY);
    CHECK_INT(d.requeue_after_ms, SBX_WORKSPACE_BUSY_RETRY_MS);
    CHECK_INT(d.wants_pod, 1);                    /* it keeps its place for the slot */
    o.workspace_helper = 0;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
}

TEST(pvc_lost_under_running_pod_is_recreated) {
    struct sbx_spec s = spec_of(SBX_PERSISTENT);
    struct sbx_observed o = running(T0, T0 + MIN);
    o.pvc = SBX_OBJ_ABSENT;
    o.pvc_bound = 0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_PVC);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.ready, 1);
}

TEST(pvc_terminating_waits) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.pvc = SBX_OBJ_TERMINATING;
    o.last_used_annotation_ms = T0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, "Creating");
    CHECK_STR(d.message, "waiting for the old workspace claim to be deleted");
    CHECK_INT(d.last_used_ms, T0);
    CHECK_INT(d.requeue_after_ms, 0);
}

TEST(pvc_unbound_and_pod_pending) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 0;
    o.pod = SBX_OBJ_PRESENT;
    o.pod_phase = "Pending";
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "Creating");
    CHECK_STR(d.message, "creating the workspace claim and the pod; waiting for the pod to start"); /* one status write for the whole bring-up */
    CHECK_INT(d.wants_pod, 1);
}

TEST(pod_pending_with_bound_pvc) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.pod = SBX_OBJ_PRESENT;
    o.pod_phase = "Pending";
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, "Creating");
    CHECK_STR(d.message, "creating the workspace claim and the pod; waiting for the pod to start");
    /* no phase reported yet reads as Pending */
    o.pod_phase = NULL;
    d = decide(&s, &o);
    CHECK_STR(d.message, "creating the workspace claim and the pod; waiting for the pod to start");
    /* running but not ready yet: never Ready, so no idle deadline however long ago the
     * kubelet accepted it */
    o.pod_phase = "Running";
    o.pod_ready = 0;
    o.pod_started_ms = T0 - MIN;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "PodNotReady");
    CHECK_STR(d.message, "the pod is running but not ready");
    CHECK_INT(d.requeue_after_ms, 0);
    CHECK_INT(d.started_ms, 0);
    o.pod_phase = "Unknown";
    d = decide(&s, &o);
    CHECK_STR(d.message, "waiting for the pod to become ready (Unknown)");
}

/* ---- running and exact deadlines ------------------------------------------------------ */

TEST(running_session_requeues_at_idle_deadline) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + 10 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.ready, 1);
    CHECK_STR(d.reason, "PodReady");
    CHECK_STR(d.message, "the pod is running and ready");
    CHECK_INT(d.last_used_ms, T0);
    CHECK_INT(d.stopped_ms, 0);
    CHECK_INT(d.wants_pod, 1);
    CHECK_INT(d.requeue_after_ms, 20 * MIN); /* T0 + 30m - (T0 + 10m) */
}

TEST(running_session_newer_annotation_moves_deadline) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + 10 * MIN);
    o.last_used_annotation_ms = T0 + 7 * MIN + 250;
    o.status_last_used_ms = T0 + 3 * MIN; /* older, ignored */
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.last_used_ms, T0 + 7 * MIN + 250);
    CHECK_INT(d.requeue_after_ms, 27 * MIN + 250);
    /* a status.lastUsedAt newer than the annotation counts too */
    o.status_last_used_ms = T0 + 9 * MIN;
    d = decide(&s, &o);
    CHECK_INT(d.last_used_ms, T0 + 9 * MIN);
    CHECK_INT(d.requeue_after_ms, 29 * MIN);
}

TEST(running_long_running_requeues_at_24x_idle) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = running(T0, T0 + 10 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_STR(d.reason, "PodReady");
    CHECK_INT(d.requeue_after_ms, 24 * 30 * MIN - 10 * MIN);
    /* past the session limit, long-running is not idle */
    o.now_ms = T0 + 11 * HOUR;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.requeue_after_ms, HOUR);
}

TEST(running_persistent_never_requeues_or_stops) {
    struct sbx_spec s = spec_of(SBX_PERSISTENT);
    struct sbx_observed o = running(T0, T0 + MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.requeue_after_ms, 0);
    CHECK_INT(d.last_used_ms, T0);
    o.now_ms = T0 + 400 * DAY;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.requeue_after_ms, 0);
}

TEST(deadline_one_ms_before_idle_requeues_one_ms) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + 30 * MIN - 1);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.requeue_after_ms, 1);
}

TEST(last_used_is_newest_signal) {
    struct sbx_observed o;
    memset(&o, 0, sizeof(o));
    CHECK_INT(lifecycle_last_used_ms(&o), 0);
    o.last_used_annotation_ms = 40;
    o.status_last_used_ms = 30;
    o.status_started_ms = 20;
    o.pod_started_ms = 10;
    CHECK_INT(lifecycle_last_used_ms(&o), 40);
    o.status_last_used_ms = 50;
    CHECK_INT(lifecycle_last_used_ms(&o), 50);
    o.status_started_ms = 60;
    CHECK_INT(lifecycle_last_used_ms(&o), 60);
    /* the pod's startTime is not a use: the kubelet sets it before pulling the image */
    o.pod = SBX_OBJ_PRESENT;
    o.pod_started_ms = 70;
    CHECK_INT(lifecycle_last_used_ms(&o), 60);
    /* becoming Ready is: a new pod (started after the recorded startedAt) Ready at 80 */
    o.pod_ready = 1;
    o.pod_ready_since_ms = 80;
    CHECK_INT(lifecycle_started_ms(&o), 80);
    CHECK_INT(lifecycle_last_used_ms(&o), 80);
}

/* ---- session removal ------------------------------------------------------------------ */

TEST(session_idle_deletes_pod_and_sandbox) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + 30 * MIN); /* exactly at the deadline */
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD | D_SBX);
    CHECK_STR(d.phase, "Stopping");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "Idle");
    CHECK_STR(d.message, "idle for longer than idleTimeout; removing the session");
    CHECK_INT(d.last_used_ms, T0);
    CHECK_INT(d.requeue_after_ms, 0);
    CHECK_INT(d.wants_pod, 0);
}

TEST(session_idle_without_pod_deletes_only_sandbox) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + 2 * HOUR);
    o.pod = SBX_OBJ_ABSENT;
    o.pod_phase = NULL;
    o.pod_ready = 0;
    o.pod_started_ms = 0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_SBX);
    CHECK_STR(d.reason, SBX_REASON_IDLE);
    o.pod = SBX_OBJ_TERMINATING;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_SBX);
}

TEST(session_idle_uses_custom_timeout) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    s.idle_timeout_ms = 90 * SEC;
    struct sbx_observed o = running(T0, T0 + 89 * SEC);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.requeue_after_ms, SEC);
    o.now_ms = T0 + 90 * SEC;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD | D_SBX);
}

/* A paused session still ages: removal is checked before paused (reconcile_decide.c order). */
TEST(session_paused_and_idle_is_kept) {
    /* paused wins over idle removal: the user asked to keep it */
    struct sbx_spec s = spec_of(SBX_SESSION);
    s.paused = 1;
    struct sbx_observed o = running(T0, T0 + 31 * MIN);
    o.pod = SBX_OBJ_ABSENT;
    o.status_phase = "Stopped";
    o.status_reason = SBX_REASON_PAUSED;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopped");
    CHECK_STR(d.reason, SBX_REASON_PAUSED);
    /* cleared: a fresh idle period starts now, so it is started, not removed */
    s.paused = 0;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_INT(d.last_used_ms, o.now_ms);
}

/* ---- long-running stop and wake-up ---------------------------------------------------- */

TEST(long_running_idle_deletes_pod_keeps_pvc) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = running(T0, T0 + 12 * HOUR);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD);
    CHECK_STR(d.phase, "Stopping");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "Idle");
    CHECK_STR(d.message, "stopped after being idle; deleting the pod, keeping the workspace");
    CHECK_INT(d.stopped_ms, 0);
    CHECK_INT(d.last_used_ms, T0);
    CHECK_INT(d.requeue_after_ms, 0);
    CHECK_INT(d.wants_pod, 0);
    /* the pod is terminating: wait */
    o.pod = SBX_OBJ_TERMINATING;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopping");
    CHECK_STR(d.message, "stopped after being idle; waiting for the pod to terminate");
    CHECK_INT(d.stopped_ms, 0);
}

TEST(long_running_idle_pod_gone_is_stopped) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = running(T0, T0 + 13 * HOUR);
    o.pod = SBX_OBJ_ABSENT;
    o.pod_phase = NULL;
    o.pod_ready = 0;
    o.pod_started_ms = 0;
    o.admitted = 0; /* a stopped sandbox needs no slot */
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopped");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "Idle");
    CHECK_STR(d.message, "stopped after being idle; the workspace is kept");
    CHECK_INT(d.stopped_ms, T0 + 13 * HOUR);
    CHECK_INT(d.requeue_after_ms, 0);
    /* later passes keep the recorded stoppedAt */
    o.status_phase = "Stopped";
    o.status_reason = SBX_REASON_IDLE;
    o.status_stopped_ms = T0 + 12 * HOUR + 5 * SEC;
    o.now_ms = T0 + 3 * DAY;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopped");
    CHECK_INT(d.stopped_ms, T0 + 12 * HOUR + 5 * SEC);
}

static struct sbx_observed stopped_idle(int64_t now) {
    struct sbx_observed o = fresh(now);
    o.created_ms = T0 - HOUR;
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.status_started_ms = T0;
    o.status_last_used_ms = T0;
    o.status_stopped_ms = T0 + 12 * HOUR;
    o.status_phase = "Stopped";
    o.status_reason = SBX_REASON_IDLE;
    return o;
}

TEST(long_running_woken_by_newer_annotation) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = stopped_idle(T0 + 2 * DAY);
    o.last_used_annotation_ms = T0 + 2 * DAY - 3 * SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, "Creating");
    CHECK_INT(d.last_used_ms, T0 + 2 * DAY - 3 * SEC);
    CHECK_INT(d.stopped_ms, 0);
    CHECK_INT(d.requeue_after_ms, 12 * HOUR - 3 * SEC);
    /* an annotation older than the idle limit does not wake it */
    o.last_used_annotation_ms = T0 + 2 * DAY - 12 * HOUR;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopped");
    CHECK_INT(d.stopped_ms, T0 + 12 * HOUR);
}

TEST(long_running_woken_waits_for_capacity) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = stopped_idle(T0 + 2 * DAY);
    o.last_used_annotation_ms = T0 + 2 * DAY;
    o.admitted = 0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Pending");
    CHECK_STR(d.reason, "CapacityExceeded");
    CHECK_INT(d.wants_pod, 1);
}

/* ---- reclaimed (the class's spec.reclaim) ------------------------------------------------ */

/* Running, last used at T0 - 20 min; the reclaim recorded that last use and its reason. */
static struct sbx_observed reclaimed(int64_t now) {
    struct sbx_observed o = running(T0 - HOUR, now);
    o.last_used_annotation_ms = T0 - 20 * MIN;
    o.status_last_used_ms = T0 - 20 * MIN;
    o.status_phase = "Stopping";
    o.status_reason = SBX_REASON_RECLAIMED;
    return o;
}

TEST(reclaimed_deletes_the_pod_keeps_the_workspace) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = reclaimed(T0);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD);   /* not the claim, not the Sandbox */
    CHECK_STR(d.phase, "Stopping");
    CHECK_STR(d.reason, "Reclaimed");
    CHECK_STR(d.message, "reclaimed while idle to admit a waiting sandbox (the next use starts it again); "
                         "deleting the pod, keeping the workspace");
    CHECK_INT(d.wants_pod, 0);
    CHECK_INT(d.last_used_ms, T0 - 20 * MIN);
    CHECK_STR(d.lifecycle, "session");
    /* its session's own idle timeout still runs: 30 min after the last use */
    CHECK_INT(d.requeue_after_ms, 10 * MIN);
    /* the pod gone: Stopped, and it stays so */
    o.pod = SBX_OBJ_ABSENT;
    o.pod_phase = NULL;
    o.pod_ready = 0;
    o.pod_started_ms = 0;
    o.admitted = 0;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopped");
    CHECK_STR(d.reason, "Reclaimed");
    CHECK_INT(d.stopped_ms, T0);
    CHECK_INT(d.wants_pod, 0);
    /* idle past its idleTimeout: a session is removed as ever */
    o.now_ms = T0 + 10 * MIN;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_SBX);
    CHECK_STR(d.reason, "Idle");
}

TEST(reclaimed_long_running_stays_stopped_until_used) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = reclaimed(T0 + HOUR);
    o.pod = SBX_OBJ_ABSENT;
    o.pod_phase = NULL;
    o.pod_ready = 0;
    o.admitted = 0;
    o.status_stopped_ms = T0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopped");
    CHECK_INT(d.stopped_ms, T0);
    CHECK_INT(d.requeue_after_ms, 12 * HOUR - 20 * MIN - HOUR);   /* its 24 x idleTimeout */
    /* a use after the one the reclaim saw (even a client clock behind the controller's
     * stop time) starts it again: it asks for a slot like any other */
    o.last_used_annotation_ms = T0 - 10 * MIN;
    d = decide(&s, &o);
    CHECK_INT(d.wants_pod, 1);
    CHECK_STR(d.phase, "Pending");
    CHECK_STR(d.reason, "CapacityExceeded");
    o.admitted = 1;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_INT(d.last_used_ms, T0 - 10 * MIN);
}

TEST(reclaimed_status_on_other_lifecycles_is_ignored) {
    /* changed to persistent since: it runs */
    struct sbx_spec s = spec_of(SBX_PERSISTENT);
    struct sbx_observed o = reclaimed(T0);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_STR(d.lifecycle, "persistent");
}

TEST(class_cap_message_names_the_class) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.admitted = 0;
    o.user_capped = 1;
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.reason, "UserCapacityExceeded");
    CHECK_STR(d.message, "this user's limit of running sandboxes is reached; waiting for one of them to stop");
    char cls[] = "small";
    s.class_name = cls;
    s.max_running_per_user = 2;
    o.class_capped = 1;
    d = decide(&s, &o);
    CHECK_STR(d.reason, "UserCapacityExceeded");
    CHECK_STR(d.message, "this user's limit of running sandboxes of SandboxClass \"small\" "
                         "(spec.maxRunningPerUser: 2) is reached; waiting for one of them to stop");
    CHECK_INT(d.wants_pod, 1);
    /* the tenant is named: a user is counted within the namespace */
    o.namespace_ = "tenant-b";
    d = decide(&s, &o);
    CHECK_STR(d.message, "this user's limit of running sandboxes of SandboxClass \"small\" "
                         "(spec.maxRunningPerUser: 2) is reached (counted in namespace \"tenant-b\"); waiting for "
                         "one of them to stop");
    /* a class that counts a user across namespaces says so instead */
    s.per_user_across_namespaces = 1;
    d = decide(&s, &o);
    CHECK_STR(d.message, "this user's limit of running sandboxes of SandboxClass \"small\" "
                         "(spec.maxRunningPerUser: 2) is reached (counted across namespaces: "
                         "spec.maxRunningPerUserScope: Cluster); waiting for one of them to stop");
    o.class_capped = 0;   /* the controller's own cap: within the namespace still */
    d = decide(&s, &o);
    CHECK_STR(d.message, "this user's limit of running sandboxes is reached (counted in namespace \"tenant-b\"); "
                         "waiting for one of them to stop");
}

/* ---- paused --------------------------------------------------------------------------- */

TEST(paused_stops_any_lifecycle) {
    static const enum sbx_lifecycle all[] = {SBX_ONE_SHOT, SBX_SESSION, SBX_LONG_RUNNING,
                                             SBX_PERSISTENT};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        struct sbx_spec s = spec_of(all[i]);
        s.paused = 1;
        struct sbx_observed o = running(T0, T0 + MIN);
        struct sbx_decision d = decide(&s, &o);
        CHECK_INT(d.actions, D_POD);
        CHECK_STR(d.phase, "Stopping");
        CHECK_INT(d.ready, 0);
        CHECK_STR(d.reason, "Paused");
        CHECK_STR(d.message, "paused by spec.paused; deleting the pod, keeping the workspace");
        CHECK_INT(d.requeue_after_ms, 0);
        CHECK_INT(d.wants_pod, 0);
    }
}

TEST(paused_pod_gone_is_stopped) {
    struct sbx_spec s = spec_of(SBX_PERSISTENT);
    s.paused = 1;
    struct sbx_observed o = running(T0, T0 + MIN);
    o.pod = SBX_OBJ_TERMINATING;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopping");
    CHECK_STR(d.message, "paused by spec.paused; waiting for the pod to terminate");
    o.pod = SBX_OBJ_ABSENT;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopped");
    CHECK_STR(d.reason, "Paused");
    CHECK_STR(d.message, "paused by spec.paused; the workspace is kept");
    CHECK_INT(d.stopped_ms, T0 + MIN);
    /* still paused later, status already says Paused: no fresh idle period, stoppedAt kept */
    o.status_phase = "Stopped";
    o.status_reason = SBX_REASON_PAUSED;
    o.status_stopped_ms = T0 + MIN;
    o.now_ms = T0 + DAY;
    d = decide(&s, &o);
    CHECK_STR(d.phase, "Stopped");
    CHECK_INT(d.stopped_ms, T0 + MIN);
    CHECK_INT(d.last_used_ms, T0);
}

TEST(paused_wins_over_long_running_idle) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    s.paused = 1;
    struct sbx_observed o = running(T0, T0 + 2 * DAY);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD);
    CHECK_STR(d.reason, "Paused");
}

TEST(unpause_starts_fresh_idle_period) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0 + 2 * DAY);
    o.created_ms = T0 - HOUR;
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.status_started_ms = T0;
    o.status_last_used_ms = T0;       /* two days ago: idle by any measure */
    o.status_stopped_ms = T0 + 5 * MIN;
    o.status_phase = "Stopped";
    o.status_reason = SBX_REASON_PAUSED;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, "Creating");
    CHECK_INT(d.last_used_ms, T0 + 2 * DAY);
    CHECK_INT(d.stopped_ms, 0);
    CHECK_INT(d.requeue_after_ms, 30 * MIN);

    /* long-running, idle-stopped before it was paused: unpausing starts it too */
    s = spec_of(SBX_LONG_RUNNING);
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_INT(d.last_used_ms, T0 + 2 * DAY);
    CHECK_INT(d.requeue_after_ms, 12 * HOUR);

    /* the same status without the Paused reason stays stopped (idle) */
    o.status_reason = SBX_REASON_IDLE;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Stopped");
    CHECK_STR(d.reason, "Idle");
    CHECK_INT(d.last_used_ms, T0);
}

/* ---- the running cap ------------------------------------------------------------------ */

TEST(capacity_exceeded_waits_without_actions) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = fresh(T0);
    o.admitted = 0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0); /* not even the PVC */
    CHECK_STR(d.phase, "Pending");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "CapacityExceeded");
    CHECK_STR(d.message, "the controller's limit of running sandboxes is reached; waiting for "
                         "capacity");
    CHECK_INT(d.wants_pod, 1);
    CHECK_INT(d.requeue_after_ms, 0);
    /* admitted on a later pass: created (claim first) */
    o.admitted = 1;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_PVC);
    CHECK_STR(d.phase, "Creating");
}

TEST(capacity_does_not_touch_existing_pod) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + MIN);
    o.admitted = 0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_STR(d.reason, "PodReady");
    o.pod = SBX_OBJ_TERMINATING;
    d = decide(&s, &o);
    CHECK_STR(d.reason, "PodNotReady");
}

/* ---- pod replacement ------------------------------------------------------------------ */

TEST(pod_ended_is_replaced) {
    static const char *const phases[] = {"Succeeded", "Failed"};
    for (int i = 0; i < 2; i++) {
        struct sbx_spec s = spec_of(SBX_SESSION);
        struct sbx_observed o = running(T0, T0 + 5 * MIN);
        o.pod_phase = phases[i];
        o.pod_ready = 0;
        struct sbx_decision d = decide(&s, &o);
        char want[128];
        snprintf(want, sizeof(want), "the pod ended (%s); replacing it", phases[i]);
        CHECK_INT(d.actions, D_POD);
        CHECK_STR(d.phase, "Creating");
        CHECK_INT(d.ready, 0);
        CHECK_STR(d.reason, "PodNotReady");
        CHECK_STR(d.message, want);
        CHECK_INT(d.requeue_after_ms, 25 * MIN);
    }
}

TEST(pod_terminating_waits) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = running(T0, T0 + 5 * MIN);
    o.pod = SBX_OBJ_TERMINATING;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, "PodNotReady");
    CHECK_STR(d.message, "waiting for the previous pod to terminate");
    CHECK_INT(d.wants_pod, 1);
}

/* ---- one-shot ------------------------------------------------------------------------- */

TEST(one_shot_fresh_and_running) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    struct sbx_observed o = fresh(T0);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, A_PVC);
    CHECK_STR(d.phase, "Creating");
    CHECK_INT(d.run.present, 0);

    /* the pod is created: status.run.startedAt records it (a lost pod is then known) */
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    d = decide(&s, &o);
    CHECK_INT(d.actions, A_POD);
    CHECK_INT(d.run.present, 1);
    CHECK_INT(d.run.finished, 0);
    CHECK_INT(d.run.started_ms, T0);

    o = running(T0, T0 + DAY); /* never idle: no limit */
    o.ctr.running_since_ms = T0 - 5 * SEC;
    o.run_started_ms = T0 - 30 * SEC;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);   /* the run is the pod's own process: nothing to start */
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.ready, 1);
    CHECK_STR(d.reason, "RunningCommand");
    CHECK_STR(d.message, "running spec.run");
    CHECK_INT(d.requeue_after_ms, 0);
    CHECK_INT(d.run.present, 1);
    CHECK_INT(d.run.finished, 0);
    CHECK_INT(d.run.started_ms, T0 - 5 * SEC);   /* the container's own start */

    /* not ready yet */
    o.pod_ready = 0;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
}

/* A one-shot pod whose container ended: the run's result, from the terminated state. */
static struct sbx_observed one_shot_ended(const char *phase, int code, const char *message) {
    struct sbx_observed o = running(T0, T0 + 2 * MIN);
    o.pod_phase = phase;
    o.pod_ready = 0;
    o.ctr.ready = 0;
    o.run_started_ms = T0 - 30 * SEC;
    o.ctr.terminated = (struct sbx_termination){1, code ? "Error" : "Completed", code, T0 + MIN, T0 + 10 * SEC, message, NULL};
    return o;
}

TEST(one_shot_result_comes_from_the_terminated_container) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    struct sbx_observed o = one_shot_ended("Succeeded", 0, "yao-run/1 3 0\naGkK\n.\n");
    struct sbx_decision d = decide(&s, &o);
    /* recorded by the fenced status write first; the pod is kept for its log */
    CHECK_INT(d.actions, D_PVC);
    CHECK_STR(d.phase, "Succeeded");
    CHECK_STR(d.reason, SBX_REASON_SUCCEEDED);
    CHECK_STR(d.message, "the command exited with code 0");
    CHECK_INT(d.run.present, 1);
    CHECK_INT(d.run.finished, 1);
    CHECK_INT(d.run.exit_code, 0);
    CHECK_INT(d.run.started_ms, T0 + 10 * SEC);
    CHECK_INT(d.run.finished_ms, T0 + MIN);
    CHECK_STR(d.run.message, "yao-run/1 3 0\naGkK\n.\n");
    CHECK_STR(d.run.note, "");
    CHECK_INT(d.requeue_after_ms, T0 + MIN + 300 * SEC - (T0 + 2 * MIN));

    o = one_shot_ended("Failed", 3, NULL);
    d = decide(&s, &o);
    CHECK_STR(d.phase, "Failed");
    CHECK_STR(d.message, "the command exited with code 3");
    CHECK_INT(d.run.exit_code, 3);

    /* the terminated state alone is enough (restartPolicy Never), before the phase moves;
     * and a pod being deleted that has ended still gives its result */
    o = one_shot_ended("Running", 2, NULL);
    o.pod = SBX_OBJ_TERMINATING;
    d = decide(&s, &o);
    CHECK_INT(d.run.exit_code, 2);
    CHECK_INT(d.actions, D_PVC);

    /* already recorded: status.run wins, nothing rewritten */
    o = one_shot_ended("Succeeded", 0, NULL);
    o.run_finished = 1;
    o.run_exit_code = 0;
    o.run_finished_ms = T0 + MIN;
    d = decide(&s, &o);
    CHECK_INT(d.run.present, 0);
    CHECK_STR(d.phase, "Succeeded");
}

TEST(one_shot_timeout_is_124_with_a_note) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    /* activeDeadlineSeconds passed: the kubelet fails the pod, then stops the container */
    struct sbx_observed o = running(T0, T0 + 2 * MIN);
    o.pod_phase = "Failed";
    o.pod_reason = "DeadlineExceeded";
    o.run_timeout_s = 5;
    o.ctr.running_since_ms = T0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.run.finished, 0);          /* wait for the container's message */
    CHECK_INT(d.actions & (D_POD | D_PVC), 0);

    o.ctr.running_since_ms = 0;
    o.ctr.terminated = (struct sbx_termination){1, "Error", 143, T0 + 6 * SEC, T0, "yao-run/1 0 0\n.\n", NULL};
    d = decide(&s, &o);
    CHECK_INT(d.run.finished, 1);
    CHECK_INT(d.run.exit_code, 124);
    CHECK_STR(d.run.note, "yao-sandbox: the command timed out after 5s (spec.run.timeout)");
    CHECK_STR(d.phase, "Failed");
    CHECK_STR(d.message, "the command exited with code 124; the command timed out after 5s (spec.run.timeout)");
    CHECK_INT(d.actions, D_PVC);

    /* a pod that failed without a container result (evicted before it started) */
    o = running(T0, T0 + 2 * MIN);
    o.pod_phase = "Failed";
    o.pod_reason = "Evicted";
    o.ctr.running_since_ms = 0;
    d = decide(&s, &o);
    CHECK_INT(d.run.exit_code, -1);
    CHECK_STR(d.run.note, "yao-sandbox: the pod ended (Failed: Evicted) without a result from the command");
}

TEST(one_shot_pod_lost_is_recorded_never_rerun) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    struct sbx_observed o = fresh(T0 + 3 * SEC);
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.run_started_ms = T0;   /* its pod was created at T0; the cache does not show it yet */
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_INT(d.requeue_after_ms, SBX_RUN_LOST_MS - 3 * SEC);
    CHECK_INT(d.run.present, 0);

    o.now_ms = T0 + SBX_RUN_LOST_MS;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_PVC);           /* no new pod */
    CHECK_INT(d.run.finished, 1);
    CHECK_INT(d.run.exit_code, -1);
    CHECK_INT(d.run.started_ms, T0);
    CHECK_INT(d.run.finished_ms, T0 + SBX_RUN_LOST_MS);
    CHECK_STR(d.run.note, "yao-sandbox: the run's pod went away before its result was recorded; it was not run again");
    CHECK_STR(d.phase, "Failed");
}

TEST(one_shot_succeeded_cleans_up_and_waits_ttl) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    struct sbx_observed o = running(T0, T0 + 70 * SEC);
    o.run_finished = 1;
    o.run_exit_code = 0;
    o.run_finished_ms = T0 + 60 * SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_PVC);
    CHECK_STR(d.phase, "Succeeded");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, "Succeeded");
    CHECK_STR(d.message, "the command exited with code 0");
    CHECK_INT(d.requeue_after_ms, 290 * SEC);
    CHECK_INT(d.last_used_ms, 0);
    CHECK_INT(d.stopped_ms, 0);
    CHECK_INT(d.wants_pod, 0);
}

/* The finished pod stays (its container log has the whole output) until the Sandbox is
 * deleted at its TTL, when the pod goes too; only the claim's deletion is asked at once. */
TEST(one_shot_finished_pod_is_kept_until_the_sandbox_goes) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    struct sbx_observed o = one_shot_ended("Succeeded", 0, "yao-run/1 3 0\naGkK\n.\n");
    o.run_finished = 1;
    o.run_exit_code = 0;
    o.run_finished_ms = T0 + MIN;
    for (int64_t t = T0 + MIN; t < T0 + MIN + 300 * SEC; t += 7 * SEC) {
        o.now_ms = t;
        struct sbx_decision d = decide(&s, &o);
        CHECK_INT(d.actions & D_POD, 0);
        CHECK_INT(d.wants_pod, 0);
    }
    o.pvc = SBX_OBJ_TERMINATING;   /* held by pvc-protection while the pod exists */
    o.now_ms = T0 + MIN + 300 * SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD | D_SBX);
}

TEST(one_shot_failed_cleans_up_and_waits_ttl) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    struct sbx_observed o = running(T0, T0 + 70 * SEC);
    o.run_finished = 1;
    o.run_exit_code = 7;
    o.run_finished_ms = T0 + 60 * SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_PVC);
    CHECK_STR(d.phase, "Failed");
    CHECK_STR(d.reason, "Failed");
    CHECK_STR(d.message, "the command exited with code 7");
    CHECK_INT(d.requeue_after_ms, 290 * SEC);
    /* the pod and claim are on their way out: nothing more to delete */
    o.pod = SBX_OBJ_TERMINATING;
    o.pvc = SBX_OBJ_TERMINATING;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Failed");
    o.pod = SBX_OBJ_ABSENT;
    o.pvc = SBX_OBJ_ABSENT;
    o.run_exit_code = -1;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.message, "the command exited with code -1");
}

TEST(one_shot_deleted_after_ttl) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    struct sbx_observed o = fresh(T0 + 60 * SEC + 300 * SEC - 1);
    o.run_finished = 1;
    o.run_exit_code = 0;
    o.run_finished_ms = T0 + 60 * SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.requeue_after_ms, 1);
    o.now_ms += 1; /* exactly finished + ttl */
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_SBX);
    CHECK_STR(d.phase, "Succeeded");
    CHECK_INT(d.requeue_after_ms, 0);
    /* late, with leftovers: delete everything at once */
    o.now_ms = T0 + DAY;
    o.pod = SBX_OBJ_PRESENT;
    o.pvc = SBX_OBJ_PRESENT;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD | D_PVC | D_SBX);
    /* ttl 0: deleted right away */
    s.ttl_after_finished_s = 0;
    o.now_ms = o.run_finished_ms;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD | D_PVC | D_SBX);
    /* the largest ttl the spec allows does not overflow */
    s.ttl_after_finished_s = INT64_C(2147483647);
    o.now_ms = o.run_finished_ms + 10 * SEC;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_PVC);
    CHECK_INT(d.requeue_after_ms, INT64_C(2147483647) * 1000 - 10 * SEC);
}

TEST(one_shot_finished_even_when_paused) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    s.paused = 1;
    struct sbx_observed o = running(T0, T0 + 70 * SEC);
    o.run_finished = 1;
    o.run_exit_code = 3;
    o.run_finished_ms = T0 + 60 * SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.phase, "Failed");
    CHECK_INT(d.actions, D_PVC);
}

/* ---- limits --------------------------------------------------------------------------- */

TEST(idle_limit_per_lifecycle) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    CHECK_INT(lifecycle_idle_limit_ms(&s), 30 * MIN);
    s.lifecycle = SBX_LONG_RUNNING;
    CHECK_INT(lifecycle_idle_limit_ms(&s), 12 * HOUR);
    s.lifecycle = SBX_PERSISTENT;
    CHECK_INT(lifecycle_idle_limit_ms(&s), 0);
    s.lifecycle = SBX_ONE_SHOT;
    CHECK_INT(lifecycle_idle_limit_ms(&s), 0);
}

TEST(idle_limit_saturates) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    s.idle_timeout_ms = INT64_MAX / 24;
    CHECK_INT(lifecycle_idle_limit_ms(&s), (INT64_MAX / 24) * 24);
    s.idle_timeout_ms = INT64_MAX / 24 + 1;
    CHECK_INT(lifecycle_idle_limit_ms(&s), INT64_MAX);
    s.idle_timeout_ms = INT64_MAX;
    CHECK_INT(lifecycle_idle_limit_ms(&s), INT64_MAX);
    s.lifecycle = SBX_SESSION;
    CHECK_INT(lifecycle_idle_limit_ms(&s), INT64_MAX);
}

TEST(huge_idle_timeout_never_stops_nor_overflows) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    s.idle_timeout_ms = INT64_MAX / 2; /* × 24 saturates at INT64_MAX */
    struct sbx_observed o = running(T0, T0 + 365 * DAY);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.requeue_after_ms, INT64_MAX - 365 * DAY);
    /* a last-used-at from the future (client clock ahead) saturates instead of wrapping */
    o.now_ms = T0;
    o.last_used_annotation_ms = T0 + HOUR;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.requeue_after_ms, INT64_MAX);
    /* same for a session with an INT64_MAX timeout */
    s.lifecycle = SBX_SESSION;
    s.idle_timeout_ms = INT64_MAX;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.requeue_after_ms, INT64_MAX);
}

TEST(future_last_used_with_normal_limit) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + MIN);
    o.last_used_annotation_ms = T0 + 2 * MIN;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.requeue_after_ms, 31 * MIN);
}

/* ---- from a parsed object ------------------------------------------------------------- */

TEST(decides_on_parsed_spec) {
    const char *json =
        "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\","
        "\"metadata\":{\"name\":\"s1\",\"namespace\":\"default\"},"
        "\"spec\":{\"userID\":\"alice\",\"chatID\":\"c1\",\"lifecycle\":\"long-running\","
        "\"idleTimeout\":\"90s\"}}";
    cJSON *obj = cJSON_Parse(json);
    struct sbx_spec s;
    char err[256] = "";
    CHECK(obj != NULL);
    CHECK_INT(sbx_spec_parse(obj, NULL, &s, err, sizeof(err)), 0);
    CHECK_STR(err, "");
    CHECK_INT(s.lifecycle, SBX_LONG_RUNNING);
    CHECK_INT(s.idle_timeout_ms, 90 * SEC);
    CHECK_INT(lifecycle_idle_limit_ms(&s), 36 * MIN);

    struct sbx_observed o = running(T0, T0 + SEC);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.requeue_after_ms, 36 * MIN - SEC);
    o.now_ms = T0 + 36 * MIN;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD);
    CHECK_STR(d.reason, "Idle");
    sbx_spec_free(&s);
    cJSON_Delete(obj);

    /* without idleTimeout the controller default (30m) applies */
    obj = cJSON_Parse("{\"spec\":{\"userID\":\"alice\",\"chatID\":\"c2\"}}");
    CHECK(obj != NULL);
    CHECK_INT(sbx_spec_parse(obj, NULL, &s, err, sizeof(err)), 0);
    CHECK_INT(s.lifecycle, SBX_SESSION);
    o = running(T0, T0 + 30 * MIN);
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD | D_SBX);
    sbx_spec_free(&s);
    cJSON_Delete(obj);
}

/* ---- the idle clock starts at the first Ready ----------------------------------------- */

/* A pod the kubelet accepted at accepted but that never became Ready (image pull, crash
 * loop, scheduling); nothing recorded yet; time now. */
static struct sbx_observed never_ready(int64_t accepted, int64_t now) {
    struct sbx_observed o = fresh(now);
    o.created_ms = accepted - 2 * SEC;
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.pod = SBX_OBJ_PRESENT;
    o.pod_phase = "Pending";
    o.pod_started_ms = accepted;
    o.ctr.present = 1;
    o.status_phase = "Creating";
    o.status_reason = SBX_REASON_CREATING;
    return o;
}

TEST(never_ready_pod_is_never_idle) {
    static const char *const phases[] = {"Pending", "Running"};
    struct sbx_spec s = spec_of(SBX_SESSION);
    s.idle_timeout_ms = 3 * SEC;
    for (int i = 0; i < 2; i++) {
        struct sbx_observed o = never_ready(T0, T0 + 8 * SEC);
        o.pod_phase = phases[i];
        o.ctr.waiting_reason = i ? "CrashLoopBackOff" : "ImagePullBackOff";
        o.last_used_annotation_ms = T0;             /* touched at creation */
        o.status_last_used_ms = T0;
        struct sbx_decision d = decide(&s, &o);
        CHECK_INT(d.actions, 0);                      /* not removed 8 s after creation */
        CHECK_STR(d.phase, "Creating");
        CHECK_INT(d.requeue_after_ms, 0);             /* no idle deadline at all */
        CHECK_INT(d.started_ms, 0);
        CHECK_INT(lifecycle_clock_runs(&o), 0);
        o.now_ms = T0 + 400 * DAY;                    /* nor ever */
        d = decide(&s, &o);
        CHECK_INT(d.actions, 0);
        CHECK_INT(d.requeue_after_ms, 0);
        /* long-running is not stopped either */
        struct sbx_spec l = spec_of(SBX_LONG_RUNNING);
        l.idle_timeout_ms = SEC;
        d = decide(&l, &o);
        CHECK_INT(d.actions, 0);
        CHECK_STR(d.phase, "Creating");
    }
}

TEST(clock_counts_from_first_ready_not_start_time) {
    /* accepted at T0, image pulled for 10 minutes, Ready at T0 + 10m */
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = never_ready(T0, T0 + 10 * MIN + 5 * SEC);
    o.pod_phase = "Running";
    o.pod_ready = 1;
    o.pod_ready_since_ms = T0 + 10 * MIN;
    o.ctr.ready = 1;
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.started_ms, T0 + 10 * MIN);           /* recorded as status.startedAt */
    CHECK_INT(d.last_used_ms, T0 + 10 * MIN);
    CHECK_INT(d.requeue_after_ms, 30 * MIN - 5 * SEC);
    /* 35 minutes after the kubelet accepted it, 25 after it became Ready: not idle */
    o.status_started_ms = d.started_ms;
    o.status_last_used_ms = d.last_used_ms;
    o.now_ms = T0 + 35 * MIN;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.started_ms, T0 + 10 * MIN);
    CHECK_INT(d.requeue_after_ms, 5 * MIN);
    o.now_ms = T0 + 40 * MIN;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD | D_SBX);
    CHECK_STR(d.reason, SBX_REASON_IDLE);
    /* without a lastTransitionTime the Ready pass itself is the first Ready */
    o = never_ready(T0, T0 + MIN);
    o.pod_phase = "Running";
    o.pod_ready = 1;
    d = decide(&s, &o);
    CHECK_INT(d.started_ms, T0 + MIN);
}

TEST(container_restart_keeps_the_clock) {
    /* Ready at T0 + 1m and recorded; the container then crashed and restarts */
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = never_ready(T0, T0 + 20 * MIN);
    o.status_started_ms = T0 + MIN;
    o.status_last_used_ms = T0 + MIN;
    o.pod_phase = "Running";
    o.ctr.waiting_reason = "CrashLoopBackOff";
    o.ctr.restart_count = 3;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(lifecycle_clock_runs(&o), 1);           /* this pod was Ready once */
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, "CrashLoopBackOff");
    CHECK_INT(d.started_ms, T0 + MIN);                /* not lost while not Ready */
    CHECK_INT(d.requeue_after_ms, 11 * MIN);
    /* Ready again at T0 + 20m: the clock is not reset by the restart */
    o.pod_ready = 1;
    o.pod_ready_since_ms = T0 + 20 * MIN;
    o.ctr.waiting_reason = NULL;
    d = decide(&s, &o);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.started_ms, T0 + MIN);
    CHECK_INT(d.last_used_ms, T0 + MIN);
    CHECK_INT(d.requeue_after_ms, 11 * MIN);
    /* crash-looping and unused past the idle timeout: removed like any idle session */
    o.pod_ready = 0;
    o.pod_ready_since_ms = 0;
    o.now_ms = T0 + 31 * MIN;
    d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD | D_SBX);
}

TEST(a_new_pod_records_its_own_first_ready) {
    /* startedAt recorded for an earlier pod (before this pod's startTime) */
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = never_ready(T0 + 2 * DAY, T0 + 2 * DAY + MIN);
    o.status_started_ms = T0;
    o.status_last_used_ms = T0 + 2 * DAY - SEC;       /* the touch that woke it */
    o.status_stopped_ms = T0 + 13 * HOUR;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(lifecycle_clock_runs(&o), 0);           /* the new pod has not been Ready */
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.started_ms, T0);                      /* kept until the new pod is Ready */
    CHECK_INT(d.requeue_after_ms, 0);
    o.pod_phase = "Running";
    o.pod_ready = 1;
    o.pod_ready_since_ms = T0 + 2 * DAY + 50 * SEC;
    d = decide(&s, &o);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.started_ms, T0 + 2 * DAY + 50 * SEC);
    CHECK_INT(d.last_used_ms, T0 + 2 * DAY + 50 * SEC);
    CHECK_INT(d.requeue_after_ms, 12 * HOUR - 10 * SEC);
}

TEST(stopped_sandbox_keeps_its_clock_without_a_pod) {
    /* Ready once, then its pod went away (deleted by someone): the recorded clock decides */
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + 31 * MIN);
    o.pod = SBX_OBJ_ABSENT;
    o.pod_phase = NULL;
    o.pod_ready = 0;
    o.pod_ready_since_ms = 0;
    o.pod_started_ms = 0;
    o.ctr.present = 0;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_SBX);
    CHECK_INT(d.started_ms, T0);
    CHECK_INT(d.restart_count, -1);
}

/* ---- why a pod does not start ------------------------------------------------------------ */

TEST(waiting_reasons_reach_the_ready_condition) {
    static const struct { const char *phase, *reason, *message; } cases[] = {
        {"Pending", "ErrImagePull", "rpc error: code = NotFound desc = failed to pull and unpack image \"docker.io/x/y:1\""},
        {"Pending", "ImagePullBackOff", "Back-off pulling image \"x/y:1\""},
        {"Running", "CrashLoopBackOff", "back-off 40s restarting failed container=sandbox pod=p"},
        {"Pending", "CreateContainerConfigError", "secret \"s\" not found"},
        {"Pending", "InvalidImageName", "Failed to apply default image tag \"UPPER\": invalid reference format"},
        {"Pending", "RunContainerError", "failed to create containerd task"},
    };
    struct sbx_spec s = spec_of(SBX_SESSION);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sbx_observed o = never_ready(T0, T0 + MIN);
        o.pod_phase = cases[i].phase;
        o.ctr.waiting_reason = cases[i].reason;
        o.ctr.waiting_message = cases[i].message;
        struct sbx_decision d = decide(&s, &o);
        CHECK_INT(d.actions, 0);
        CHECK_STR(d.phase, "Creating");
        CHECK_INT(d.ready, 0);
        CHECK_STR(d.reason, cases[i].reason);
        CHECK_STR(d.message, cases[i].message);
        CHECK_INT(d.restart_count, 0);
    }
    /* the normal waiting reasons keep the one bring-up message */
    static const char *const normal[] = {"ContainerCreating", "PodInitializing"};
    for (int i = 0; i < 2; i++) {
        struct sbx_observed o = never_ready(T0, T0 + MIN);
        o.ctr.waiting_reason = normal[i];
        struct sbx_decision d = decide(&s, &o);
        CHECK_STR(d.reason, SBX_REASON_CREATING);
        CHECK_STR(d.message, "creating the workspace claim and the pod; waiting for the pod to start");
    }
    /* no message from the kubelet */
    struct sbx_observed o = never_ready(T0, T0 + MIN);
    o.ctr.waiting_reason = "ErrImageNeverPull";
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.reason, "ErrImageNeverPull");
    CHECK_STR(d.message, "the container is waiting");
}

/* The controller's built-in default image (nothing named an image) is published nowhere:
 * its pull failure leads with how to name one, then keeps the kubelet's words; an image the
 * operator or the user named gets the kubelet's words alone. */
TEST(a_pull_failure_of_the_builtin_default_image_says_how_to_name_one) {
    static const char *const pull[] = {"ErrImagePull", "ImagePullBackOff"};
    struct sbx_spec s = spec_of(SBX_SESSION);
    s.image = "yao-sandbox/sandbox:9.9.9";
    for (int i = 0; i < 2; i++) {
        struct sbx_observed o = never_ready(T0, T0 + MIN);
        o.ctr.waiting_reason = pull[i];
        o.ctr.waiting_message = "Back-off pulling image \"yao-sandbox/sandbox:9.9.9\"";
        s.image_builtin = 1;
        struct sbx_decision d = decide(&s, &o);
        CHECK_STR(d.reason, pull[i]);
        CHECK(strncmp(d.message, "yao-sandbox/sandbox:9.9.9 is the controller's built-in default image", 68) == 0);
        CHECK(strstr(d.message, "YAO_SANDBOX_IMAGE") != NULL);
        CHECK(strstr(d.message, "the kubelet says: Back-off pulling image \"yao-sandbox/sandbox:9.9.9\"") != NULL);
        s.image_builtin = 0;
        d = decide(&s, &o);
        CHECK_STR(d.message, "Back-off pulling image \"yao-sandbox/sandbox:9.9.9\"");
    }
    /* other troubles of a built-in image's pod say only what the kubelet said */
    struct sbx_observed o = never_ready(T0, T0 + MIN);
    o.ctr.waiting_reason = "CrashLoopBackOff";
    o.ctr.waiting_message = "back-off 40s";
    s.image_builtin = 1;
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.message, "back-off 40s");
}

TEST(unschedulable_reaches_the_ready_condition) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = never_ready(0, T0 + MIN);   /* not scheduled: no startTime */
    o.ctr.present = 0;
    o.pod_unscheduled_reason = "Unschedulable";
    o.pod_unscheduled_message = "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint.";
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, SBX_REASON_UNSCHEDULABLE);
    CHECK_STR(d.message, "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint.");
    CHECK_INT(d.requeue_after_ms, 0);
    CHECK_INT(d.restart_count, -1);                  /* no container status yet */
    o.pod_unscheduled_message = NULL;
    d = decide(&s, &o);
    CHECK_STR(d.message, "the pod cannot be scheduled");
    /* a scheduled pod (PodScheduled True: no reason) falls back to the container */
    o.pod_unscheduled_reason = NULL;
    o.ctr.present = 1;
    o.ctr.waiting_reason = "ErrImagePull";
    d = decide(&s, &o);
    CHECK_STR(d.reason, "ErrImagePull");
}

/* An adopted warm claim whose volume's node cannot take the pod: after 30 s unscheduled
 * for the volume's node affinity, and only while nothing ever ran on it, the claim is
 * given up (the pod and then the claim, by the I/O side) for a cold one. */
TEST(a_stranded_adopted_warm_claim_is_given_up) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    static const char affinity[] =
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had volume node affinity conflict.";
    struct sbx_observed o = never_ready(0, T0 + 10 * SEC);
    o.ctr.present = 0;
    o.claim_adopted_ms = T0;
    o.pod_unscheduled_reason = "Unschedulable";
    o.pod_unscheduled_message = affinity;
    o.pod_unscheduled_since_ms = T0 + SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);                               /* the scheduler may still find room */
    CHECK_STR(d.reason, SBX_REASON_UNSCHEDULABLE);
    CHECK_INT(d.requeue_after_ms, 21 * SEC);               /* looked at again when 30 s are up */
    o.now_ms = T0 + 31 * SEC;
    d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_RELEASE_CLAIM);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, SBX_REASON_WARM_RELEASED);
    CHECK(strstr(d.message, "volume node affinity conflict") != NULL);
    /* no unscheduled-since time: counted from now, so never at once */
    o.pod_unscheduled_since_ms = 0;
    CHECK_INT(decide(&s, &o).actions, 0);
    o.pod_unscheduled_since_ms = T0 + SEC;
    /* each guard alone keeps the claim */
    struct sbx_observed k = o;
    k.claim_adopted_ms = 0;                                /* a claim of its own */
    CHECK_INT(decide(&s, &k).actions, 0);
    k = o;
    k.status_started_ms = T0 + 2 * SEC;                    /* a pod of it was Ready once */
    CHECK(!(decide(&s, &k).actions & SBX_ACT_RELEASE_CLAIM));
    k = o;
    k.status_stopped_ms = T0 + 2 * SEC;                    /* it ran and was stopped */
    CHECK(!(decide(&s, &k).actions & SBX_ACT_RELEASE_CLAIM));
    /* the scheduler's wording since Kubernetes 1.33 gives the claim up the same way */
    k = o;
    k.pod_unscheduled_message =
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match PersistentVolume's node affinity. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";
    CHECK_INT(decide(&s, &k).actions, SBX_ACT_RELEASE_CLAIM);
    k.pod_unscheduled_message = "0/3 nodes are available: 3 Insufficient cpu.";   /* room, not the volume */
    CHECK_INT(decide(&s, &k).actions, 0);
    k = o;
    k.pod_started_ms = T0 + 2 * SEC;                       /* the kubelet took the pod */
    CHECK(!(decide(&s, &k).actions & SBX_ACT_RELEASE_CLAIM));
    k = o;
    k.pod_unscheduled_message = "0/3 nodes are available: 3 Insufficient cpu.";   /* not the volume's node */
    CHECK_INT(decide(&s, &k).actions, 0);
    CHECK_INT(decide(&s, &k).requeue_after_ms, 0);
    k = o;
    k.pod_unscheduled_reason = "SchedulingGated";
    CHECK_INT(decide(&s, &k).actions, 0);
    k = o;
    k.now_ms = T0 + SBX_WARM_RELEASE_WINDOW_MS + SEC;      /* adopted too long ago */
    CHECK_INT(decide(&s, &k).actions, 0);
    k = o;
    k.pvc = SBX_OBJ_TERMINATING;                           /* already going */
    CHECK(!(decide(&s, &k).actions & SBX_ACT_RELEASE_CLAIM));
}

TEST(reasons_the_schema_would_refuse_are_not_passed_on) {
    static const char *const bad[] = {
        "", "has space", "1Leading", "Trailing:", "dash-ed", "x\n",
        "AReasonThatIsFarTooLongToBeAnythingAKubeletWouldReallyEverSayAboutAContainer",
    };
    struct sbx_spec s = spec_of(SBX_SESSION);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sbx_observed o = never_ready(T0, T0 + MIN);
        o.ctr.waiting_reason = bad[i];
        o.ctr.waiting_message = "whatever";
        struct sbx_decision d = decide(&s, &o);
        CHECK_STR(d.reason, SBX_REASON_CREATING);
        o.pod_phase = "Running";
        d = decide(&s, &o);
        CHECK_STR(d.reason, SBX_REASON_NOT_READY);
    }
    struct sbx_observed o = never_ready(T0, T0 + MIN);
    o.ctr.waiting_reason = "Odd_But:Valid9";
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.reason, "Odd_But:Valid9");
}

TEST(long_messages_are_cut_on_a_character_boundary) {
    char msg[3000];
    size_t n = 0;
    /* "é" (2 bytes) repeated: any cut at an odd offset would split one */
    while (n + 2 < sizeof(msg)) { msg[n++] = '\xc3'; msg[n++] = '\xa9'; }
    msg[n] = 0;
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = never_ready(T0, T0 + MIN);
    o.ctr.waiting_reason = "ErrImagePull";
    o.ctr.waiting_message = msg;
    struct sbx_decision d = decide(&s, &o);
    size_t len = strlen(d.message);
    CHECK(len < SBX_MESSAGE_MAX);
    CHECK(len > SBX_MESSAGE_MAX - 8);
    CHECK(!strcmp(d.message + len - 3, "..."));
    CHECK_INT(len % 2, 1);                            /* whole characters + "..." */
    CHECK_INT((unsigned char)d.message[len - 4], 0xa9);
    /* a short one is untouched */
    o.ctr.waiting_message = "short";
    d = decide(&s, &o);
    CHECK_STR(d.message, "short");
}

TEST(oom_killed_and_restarted_shows_in_status) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + 10 * MIN);
    o.ctr.restart_count = 2;
    o.ctr.last = (struct sbx_termination){1, "OOMKilled", 137, T0 + 9 * MIN, 0, NULL, NULL};
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.phase, "Running");
    CHECK_STR(d.reason, SBX_REASON_READY);
    CHECK_INT(d.restart_count, 2);
    CHECK_INT(d.last_termination.present, 1);
    CHECK_STR(d.last_termination.reason, "OOMKilled");
    CHECK_INT(d.last_termination.exit_code, 137);
    CHECK_INT(d.last_termination.finished_ms, T0 + 9 * MIN);
    /* crash-looping on it: the kubelet's reason, with the last termination in the message */
    o.pod_ready = 0;
    o.pod_ready_since_ms = 0;
    o.ctr.ready = 0;
    o.ctr.waiting_reason = "CrashLoopBackOff";
    o.ctr.waiting_message = "back-off 20s restarting failed container";
    d = decide(&s, &o);
    CHECK_STR(d.reason, "CrashLoopBackOff");
    CHECK_STR(d.message, "back-off 20s restarting failed container; last termination: OOMKilled (exit code 137)");
    CHECK_STR(d.last_termination.reason, "OOMKilled");
    /* a current terminated state is newer than lastState */
    o.ctr.waiting_reason = NULL;
    o.ctr.terminated = (struct sbx_termination){1, "Error", 1, T0 + 10 * MIN, 0, NULL, NULL};
    d = decide(&s, &o);
    CHECK_STR(d.last_termination.reason, "Error");
}

TEST(last_termination_is_kept_without_a_pod_and_not_taken_from_a_deleted_one) {
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    s.paused = 1;
    struct sbx_observed o = running(T0, T0 + MIN);
    o.status_last_termination = (struct sbx_termination){1, "OOMKilled", 137, T0 - MIN, 0, NULL, NULL};
    /* the pod the pause deletes ends with SIGTERM: that says nothing about the sandbox */
    o.pod = SBX_OBJ_TERMINATING;
    o.ctr.terminated = (struct sbx_termination){1, "Error", 143, T0 + MIN, 0, NULL, NULL};
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.last_termination.reason, "OOMKilled");
    CHECK_INT(d.restart_count, -1);
    o.pod = SBX_OBJ_ABSENT;
    d = decide(&s, &o);
    CHECK_STR(d.phase, "Stopped");
    CHECK_STR(d.last_termination.reason, "OOMKilled");
    CHECK_INT(d.last_termination.exit_code, 137);
    /* nothing recorded, nothing reported */
    o.status_last_termination.present = 0;
    d = decide(&s, &o);
    CHECK_INT(d.last_termination.present, 0);
}

TEST(ended_pod_says_how_it_ended) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0, T0 + 5 * MIN);
    o.pod_phase = "Failed";
    o.pod_ready = 0;
    o.ctr.terminated = (struct sbx_termination){1, "OOMKilled", 137, T0 + 4 * MIN, 0, NULL, NULL};
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, D_POD);
    CHECK_STR(d.reason, SBX_REASON_NOT_READY);
    CHECK_STR(d.message, "the pod ended (Failed: OOMKilled, exit code 137); replacing it");
    CHECK_STR(d.last_termination.reason, "OOMKilled");
}

TEST(one_shot_oom_killed_says_so) {
    struct sbx_spec s = spec_of(SBX_ONE_SHOT);
    struct sbx_observed o = running(T0, T0 + 70 * SEC);
    o.pod_phase = "Failed";
    o.pod_ready = 0;
    o.ctr.terminated = (struct sbx_termination){1, "OOMKilled", 137, T0 + 60 * SEC, 0, NULL, NULL};
    o.run_finished = 1;
    o.run_exit_code = 137;
    o.run_finished_ms = T0 + 60 * SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.phase, "Failed");
    CHECK_STR(d.message, "the command exited with code 137; the container was OOMKilled");
    CHECK_STR(d.last_termination.reason, "OOMKilled");
    /* after cleanup, from status.lastTermination: the same message */
    o.pod = SBX_OBJ_ABSENT;
    o.pvc = SBX_OBJ_ABSENT;
    o.ctr.present = 0;
    o.status_last_termination = d.last_termination;
    d = decide(&s, &o);
    CHECK_STR(d.message, "the command exited with code 137; the container was OOMKilled");
    /* a plain failure says nothing more */
    o.status_last_termination.present = 0;
    o.run_exit_code = 2;
    d = decide(&s, &o);
    CHECK_STR(d.message, "the command exited with code 2");
}

TEST(foreign_pod_status_is_not_reported) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = never_ready(T0, T0 + MIN);
    o.pod = SBX_OBJ_FOREIGN;
    o.ctr.restart_count = 5;
    o.ctr.waiting_reason = "CrashLoopBackOff";
    o.ctr.last = (struct sbx_termination){1, "OOMKilled", 137, T0, 0, NULL, NULL};
    struct sbx_decision d = decide(&s, &o);
    CHECK_STR(d.reason, SBX_REASON_CONFLICT);
    CHECK_INT(d.restart_count, -1);
    CHECK_INT(d.last_termination.present, 0);
}

/* ---- validated last-used-at ------------------------------------------------------------ */

TEST(last_used_check_classifies_the_annotation) {
    int64_t ms = -1;
    CHECK_INT(lifecycle_last_used_check(NULL, T0, &ms), SBX_LAST_USED_NONE);
    CHECK_INT(ms, 0);
    /* a plain past value is taken as it is, with fractions and offsets */
    CHECK_INT(lifecycle_last_used_check("2026-11-29T09:59:00Z", T0, &ms), SBX_LAST_USED_OK);
    CHECK_INT(ms, T0 - MIN);
    CHECK_INT(lifecycle_last_used_check("2026-11-29T11:00:00.250+01:00", T0, &ms), SBX_LAST_USED_OK);
    CHECK_INT(ms, T0 + 250);
    /* within the clock-skew allowance ahead: still the client's time */
    CHECK_INT(lifecycle_last_used_check("2026-11-29T10:00:10Z", T0, &ms), SBX_LAST_USED_OK);
    CHECK_INT(ms, T0 + SBX_LAST_USED_SKEW_MS);
    /* beyond it: now, whatever the value (2099 would keep a session alive forever) */
    CHECK_INT(lifecycle_last_used_check("2026-11-29T10:00:10.001Z", T0, &ms), SBX_LAST_USED_FUTURE);
    CHECK_INT(ms, T0);
    CHECK_INT(lifecycle_last_used_check("2099-01-01T00:00:00Z", T0, &ms), SBX_LAST_USED_FUTURE);
    CHECK_INT(ms, T0);
    /* not RFC 3339: ignored (0), never "now" */
    static const char *const bad[] = {"yesterday", "", "2026-11-29", "2026-11-29T10:00:00", "1795946400",
                                      "2026-13-01T00:00:00Z", "2026-11-29T10:00:00Zjunk"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ms = -1;
        CHECK_INT(lifecycle_last_used_check(bad[i], T0, &ms), SBX_LAST_USED_INVALID);
        CHECK_INT(ms, 0);
    }
}

TEST(a_future_last_used_at_taken_as_now_does_not_keep_a_session_forever) {
    /* The controller feeds lifecycle_decide what the check returned: "now" when first seen
     * (and it rewrites the annotation to that time), so the session is idle idleTimeout later. */
    struct sbx_spec s = spec_of(SBX_SESSION);
    struct sbx_observed o = running(T0 - HOUR, T0);
    struct sbx_decision d;
    lifecycle_last_used_check("2099-01-01T00:00:00Z", T0, &o.last_used_annotation_ms);
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions & D_SBX, 0);
    CHECK_INT(d.requeue_after_ms, 30 * MIN);
    CHECK_INT(d.last_used_ms, T0);
    o.now_ms = T0 + 30 * MIN;
    lifecycle_decide(&s, &o, &d);
    CHECK(d.actions & D_SBX);
    /* an unparseable value counts for nothing: idle from Ready an hour ago */
    o = running(T0 - HOUR, T0);
    CHECK_INT(lifecycle_last_used_check("yesterday", T0, &o.last_used_annotation_ms), SBX_LAST_USED_INVALID);
    lifecycle_decide(&s, &o, &d);
    CHECK(d.actions & D_SBX);
}

/* ---- spec changes reach the pod -------------------------------------------------------- */

TEST(a_changed_spec_replaces_the_pod_and_observed_generation_waits_for_it) {
    struct sbx_spec s = spec_of(SBX_PERSISTENT);
    struct sbx_observed o = running(T0 - HOUR, T0);
    struct sbx_decision d;
    o.generation = 3;
    o.status_observed_generation = 3;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.observed_generation, 3);          /* the running pod matches */
    CHECK_STR(d.reason, SBX_REASON_READY);
    /* image/env/resources changed: generation 4, the pod's hash is another */
    o.generation = 4;
    o.pod_template_outdated = 1;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, D_POD);                  /* the claim stays */
    CHECK_STR(d.phase, "Creating");
    CHECK_INT(d.ready, 0);
    CHECK_STR(d.reason, SBX_REASON_UPDATING);
    CHECK_STR(d.message, "the spec changed (generation 4); replacing the pod, the workspace is kept");
    CHECK_INT(d.observed_generation, 3);          /* not before a pod matches */
    /* the old pod terminating, then gone: still 3, a new pod is created */
    o.pod = SBX_OBJ_TERMINATING;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, 0);
    CHECK_INT(d.observed_generation, 3);
    o = running(T0 - HOUR, T0);
    o.generation = 4;
    o.status_observed_generation = 3;
    o.pod = SBX_OBJ_ABSENT;
    o.pod_phase = NULL;
    o.pod_ready = 0;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, A_POD);
    CHECK_INT(d.observed_generation, 3);
    /* the new pod, built from generation 4: 4 */
    o = running(T0 - HOUR, T0);
    o.generation = 4;
    o.status_observed_generation = 3;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.observed_generation, 4);
}

TEST(stopped_sandboxes_observe_their_generation_and_one_shot_pods_are_not_replaced) {
    /* paused: no pod wanted, nothing to apply: observedGeneration is the generation */
    struct sbx_spec s = spec_of(SBX_LONG_RUNNING);
    struct sbx_observed o = fresh(T0);
    struct sbx_decision d;
    s.paused = 1;
    o.generation = 2;
    o.status_observed_generation = 1;
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    lifecycle_decide(&s, &o, &d);
    CHECK_STR(d.phase, "Stopped");
    CHECK_INT(d.observed_generation, 2);
    /* while its pod is still being stopped: the recorded one */
    o = running(T0 - HOUR, T0);
    o.generation = 2;
    o.status_observed_generation = 1;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, D_POD);
    CHECK_INT(d.observed_generation, 1);
    /* a one-shot pod runs its command to the end, even when the spec changed */
    struct sbx_spec j = spec_of(SBX_ONE_SHOT);
    o = running(T0 - MIN, T0);
    o.pod_template_outdated = 1;
    o.generation = 2;
    lifecycle_decide(&j, &o, &d);
    CHECK_INT(d.actions & D_POD, 0);
    CHECK_STR(d.reason, SBX_REASON_RUNNING_COMMAND);
}

/* ---- workspace size ------------------------------------------------------------------- */

TEST(workspace_grows_where_the_class_allows_and_never_shrinks) {
    struct sbx_spec s = spec_of(SBX_PERSISTENT);
    struct sbx_observed o = running(T0 - HOUR, T0);
    struct sbx_decision d;
    s.workspace_bytes = INT64_C(10) << 30;
    o.claim_request_bytes = INT64_C(10) << 30;
    o.claim_capacity_bytes = INT64_C(10) << 30;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, 0);
    CHECK(d.workspace_reason == NULL);
    /* grown, class allows expansion: the claim's request is raised, the pod stays */
    s.workspace_bytes = INT64_C(20) << 30;
    o.claim_expandable = 1;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, SBX_ACT_EXPAND_PVC);
    CHECK_STR(d.workspace_reason, SBX_WS_RESIZING);
    CHECK_STR(d.workspace_message, "expanding the workspace claim from 10Gi to 20Gi");
    CHECK_STR(d.reason, SBX_REASON_READY);
    /* requested, the volume not resized yet */
    o.claim_request_bytes = INT64_C(20) << 30;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.workspace_reason, SBX_WS_RESIZING);
    CHECK_STR(d.workspace_message, "the workspace claim asks for 20Gi; the volume has 10Gi so far");
    o.claim_capacity_bytes = INT64_C(20) << 30;
    lifecycle_decide(&s, &o, &d);
    CHECK(d.workspace_reason == NULL);
    /* grown on a class without expansion: said, nothing done */
    s.workspace_bytes = INT64_C(30) << 30;
    o.claim_expandable = 0;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.workspace_reason, SBX_WS_NOT_EXPANDABLE);
    CHECK_STR(d.workspace_message, "spec.workspace.size 30Gi: the claim's StorageClass does not allow volume "
                                   "expansion (allowVolumeExpansion); the workspace stays 20Gi");
    /* shrunk: refused, even where expansion is allowed */
    s.workspace_bytes = INT64_C(1) << 30;
    o.claim_expandable = 1;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.workspace_reason, SBX_WS_SHRINK_REFUSED);
    CHECK_STR(d.workspace_message, "spec.workspace.size 1Gi is below the claim's 20Gi: a volume cannot shrink; "
                                   "the workspace stays 20Gi");
    /* the size of a claim not known (not cached yet): nothing said */
    o.claim_request_bytes = 0;
    lifecycle_decide(&s, &o, &d);
    CHECK(d.workspace_reason == NULL);
}

/* ---- the effective policy in status, forks at their source's size (issue 23) ----------- */

TEST(effective_idle_policy_is_published) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    s.idle_timeout_ms = 5 * SEC;
    s.reclaim_after_ms = 2 * MIN;
    s.class_name = "small";
    struct sbx_observed o = running(T0, T0 + 2 * SEC);
    o.last_used_annotation_ms = T0 + SEC;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.idle_timeout_ms, 5 * SEC);
    CHECK_INT(d.reclaim_after_ms, 2 * MIN);
    CHECK_INT(d.idle_at_ms, T0 + 6 * SEC);   /* the last use + the limit */
    CHECK_INT(d.requeue_after_ms, 4 * SEC);
    CHECK_STR(d.class_name, "small");
    CHECK(d.invalid_reason == NULL);
    /* long-running: idle at ×24 of the timeout */
    s.lifecycle = SBX_LONG_RUNNING;
    d = decide(&s, &o);
    CHECK_INT(d.idle_timeout_ms, 5 * SEC);
    CHECK_INT(d.idle_at_ms, T0 + SEC + 24 * 5 * SEC);
    /* persistent: never idle, never reclaimed: nothing to publish */
    s.lifecycle = SBX_PERSISTENT;
    d = decide(&s, &o);
    CHECK_INT(d.idle_timeout_ms, 0);
    CHECK_INT(d.reclaim_after_ms, 0);
    CHECK_INT(d.idle_at_ms, 0);
    /* paused: no idle instant while it wants no pod */
    s.lifecycle = SBX_SESSION;
    s.paused = 1;
    d = decide(&s, &o);
    CHECK_INT(d.idle_at_ms, 0);
    CHECK_INT(d.idle_timeout_ms, 5 * SEC);
    /* not Ready yet: the idle clock does not run */
    s.paused = 0;
    o = fresh(T0);
    d = decide(&s, &o);
    CHECK_INT(d.idle_at_ms, 0);
}

TEST(a_fork_at_its_sources_size_is_not_a_shrink) {
    struct sbx_spec s = spec_of(SBX_SESSION);
    s.workspace_bytes = INT64_C(1) << 30;          /* asked 1Gi */
    struct sbx_observed o = running(T0, T0 + SEC);
    o.claim_request_bytes = INT64_C(2) << 30;      /* cloned from a 2Gi source */
    o.claim_capacity_bytes = INT64_C(2) << 30;
    o.claim_cloned_bytes = INT64_C(2) << 30;
    struct sbx_decision d = decide(&s, &o);
    CHECK(d.workspace_reason == NULL);
    CHECK_INT(d.actions, 0);
    /* grown past the source on a class that expands: expanded as any workspace */
    s.workspace_bytes = INT64_C(3) << 30;
    o.claim_expandable = 1;
    d = decide(&s, &o);
    CHECK_STR(d.workspace_reason, SBX_WS_RESIZING);
    CHECK(d.actions & SBX_ACT_EXPAND_PVC);
    /* once grown to 3Gi, asking 1Gi again is a shrink below the claim */
    o.claim_request_bytes = o.claim_capacity_bytes = INT64_C(3) << 30;
    s.workspace_bytes = INT64_C(1) << 30;
    d = decide(&s, &o);
    CHECK_STR(d.workspace_reason, SBX_WS_SHRINK_REFUSED);
    CHECK_STR(d.workspace_message, "spec.workspace.size 2Gi is below the claim's 3Gi: a volume cannot shrink; "
                                   "the workspace stays 3Gi");
}
