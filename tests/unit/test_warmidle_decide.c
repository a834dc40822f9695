/* tests/unit/test_warmidle_decide.c — the warm-idle tier in the pure decision
 * (sandbox/decide/reconcile_decide.c) and in the reclaim order (sandbox/decide/capacity_decide.c): at
 * the idle deadline a running pod is kept with its CPU resized down to the class's floor,
 * the lifecycle's idle action follows only once the window is over, a use resizes it back
 * up, a resize the kubelet refuses falls back on the idle action with an Event, a wake
 * the kubelet cannot give its CPU back replaces the pod, and warm-idle sandboxes are the
 * first reclaimed. */
#include "check.h"
#include "observed_fixtures.h"

#include "sandbox/decide/capacity_decide.h"
#include "sandbox/decide/reconcile_decide.h"

#define SEC INT64_C(1000)
#define MIN (60 * SEC)
/* 2026-11-29T10:00:00Z */
#define T0 INT64_C(1795946400000)

/* A session spec: idle 30 min, CPU 1000m limit / 100m request, memory 2Gi / 256Mi, warm
 * idle at 50m for 10 min. Owns no memory. */
static struct sbx_spec spec_warm(enum sbx_lifecycle l) {
    struct sbx_spec s;
    memset(&s, 0, sizeof(s));
    s.lifecycle = l;
    s.idle_timeout_ms = 30 * MIN;
    s.ttl_after_finished_s = 300;
    s.cpu_millis = 1000;
    s.cpu_request_millis = 100;
    s.memory_bytes = INT64_C(2) << 30;
    s.memory_request_bytes = INT64_C(256) << 20;
    s.warm_idle_cpu_millis = 50;
    s.warm_idle_window_ms = 10 * MIN;
    return s;
}

/* A Bound claim and a pod Ready since started, running with the spec's CPU; time now. */
static struct sbx_observed running(const struct sbx_spec *s, int64_t started, int64_t now) {
    struct sbx_observed o = observed_running(started, now);
    o.pod_cpu_limit_millis = o.pod_cpu_allocated_millis = s->cpu_millis;
    o.pod_cpu_request_millis = s->cpu_request_millis;
    return o;
}

/* o as a warm-idle pass left it: the pod resized to the floor, status saying so since. */
static void made_warm(struct sbx_observed *o, int64_t since) {
    o->pod_cpu_limit_millis = o->pod_cpu_allocated_millis = 50;
    o->pod_cpu_request_millis = 50;
    o->status_warm_idle_since_ms = since;
    o->status_reason = SBX_REASON_WARM_IDLE;
}

static struct sbx_decision decide(const struct sbx_spec *s, const struct sbx_observed *o) {
    struct sbx_decision d;
    memset(&d, 0xA5, sizeof(d)); /* lifecycle_decide must write every field */
    lifecycle_decide(s, o, &d);
    return d;
}

/* ---- the floor -------------------------------------------------------------------------- */

TEST(floor_is_the_limit_and_caps_the_request) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    int64_t req, lim;
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(lim, 50);
    CHECK_INT(req, 50);
    s.cpu_request_millis = 20;   /* a request below the floor stays */
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(req, 20);
    CHECK_INT(lim, 50);
    s.cpu_millis = 30;           /* never above the spec's own limit */
    s.cpu_request_millis = 30;
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(lim, 30);
    CHECK_INT(req, 30);
}

TEST(floor_keeps_the_pods_qos_class) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    int64_t req, lim;
    /* Burstable by CPU only (memory request = limit): the request must stay below the
     * limit, or every request would equal its limit (Guaranteed, refused by the API). */
    s.memory_request_bytes = s.memory_bytes;
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(lim, 50);
    CHECK_INT(req, 49);
    /* Guaranteed stays Guaranteed: request = limit = floor. */
    s.cpu_request_millis = s.cpu_millis;
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(req, 50);
    CHECK_INT(lim, 50);
}

TEST(off_without_a_floor_a_window_or_an_idle_lifecycle) {
    int64_t req, lim;
    struct sbx_spec s = spec_warm(SBX_SESSION);
    s.warm_idle_cpu_millis = 0;
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(lim, 0);
    s = spec_warm(SBX_PERSISTENT);
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(lim, 0);
    s = spec_warm(SBX_ONE_SHOT);
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(lim, 0);
    s = spec_warm(SBX_LONG_RUNNING);
    s.warm_idle_window_ms = 0;
    lifecycle_warm_idle_cpu(&s, &req, &lim);
    CHECK_INT(lim, 0);
}

/* ---- idle → warm-idle → stop ------------------------------------------------------------ */

TEST(before_the_deadline_nothing_changes_and_the_deadline_is_the_requeue) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 10 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_READY);
    CHECK_INT(d.warm_idle_since_ms, 0);
    CHECK_INT(d.requeue_after_ms, 20 * MIN);
}

TEST(at_the_deadline_a_session_is_resized_down_not_removed) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 30 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_RESIZE_DOWN);
    CHECK_INT(d.resize_cpu_limit_millis, 50);
    CHECK_INT(d.resize_cpu_request_millis, 50);
    CHECK_STR(d.phase, "Running");
    CHECK_INT(d.ready, 1);
    CHECK_STR(d.reason, SBX_REASON_WARM_IDLE);
    CHECK(strstr(d.message, "50m") != NULL);
    CHECK_INT(d.warm_idle_since_ms, T0 + 30 * MIN);
    CHECK_INT(d.requeue_after_ms, 10 * MIN);   /* the end of the window */
    CHECK(d.warm_event == NULL);
}

TEST(warm_idle_keeps_its_since_and_resizes_only_once) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 34 * MIN);
    made_warm(&o, T0 + 30 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_WARM_IDLE);
    CHECK_INT(d.warm_idle_since_ms, T0 + 30 * MIN);
    CHECK_INT(d.requeue_after_ms, 6 * MIN);
    CHECK_INT(d.idle_at_ms, T0 + 30 * MIN);
}

TEST(past_the_window_a_session_is_removed_as_today) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 40 * MIN);
    made_warm(&o, T0 + 30 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_DELETE_POD | SBX_ACT_DELETE_SANDBOX);
    CHECK_STR(d.reason, SBX_REASON_IDLE);
    CHECK_INT(d.warm_idle_since_ms, 0);
}

TEST(past_the_window_a_long_running_one_is_stopped_and_keeps_its_workspace) {
    struct sbx_spec s = spec_warm(SBX_LONG_RUNNING);
    int64_t limit = 24 * 30 * MIN;
    struct sbx_observed o = running(&s, T0, T0 + limit + 5 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_RESIZE_DOWN);   /* its deadline is 24 x idleTimeout */
    o = running(&s, T0, T0 + limit + 10 * MIN);
    made_warm(&o, T0 + limit);
    d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_DELETE_POD);
    CHECK_STR(d.phase, "Stopping");
    /* ... then Stopped without a pod, warmIdleSince gone; a use makes a new pod. */
    o.pod = SBX_OBJ_ABSENT;
    o.pod_phase = NULL;
    o.status_phase = "Stopping";
    d = decide(&s, &o);
    CHECK_STR(d.phase, "Stopped");
    CHECK_INT(d.warm_idle_since_ms, 0);
    o.last_used_annotation_ms = o.now_ms;
    d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_CREATE_POD);
}

TEST(paused_while_warm_idle_stops_at_once) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    s.paused = 1;
    struct sbx_observed o = running(&s, T0, T0 + 32 * MIN);
    made_warm(&o, T0 + 30 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_DELETE_POD);
    CHECK_STR(d.reason, SBX_REASON_PAUSED);
}

TEST(a_spec_change_while_warm_idle_replaces_the_pod) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 32 * MIN);
    made_warm(&o, T0 + 30 * MIN);
    o.pod_template_outdated = 1;
    struct sbx_decision d = decide(&s, &o);
    /* not kept warm (its pod is not the spec's): the idle action as without warm-idle */
    CHECK(d.actions & SBX_ACT_DELETE_POD);
    CHECK(!(d.actions & (SBX_ACT_RESIZE_DOWN | SBX_ACT_RESIZE_UP)));
}

TEST(without_warm_idle_the_deadline_acts_as_today) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    s.warm_idle_cpu_millis = 0;
    struct sbx_observed o = running(&s, T0, T0 + 30 * MIN);
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_DELETE_POD | SBX_ACT_DELETE_SANDBOX);
    CHECK_INT(d.warm_idle_since_ms, 0);
}

/* ---- wake ------------------------------------------------------------------------------- */

TEST(a_use_while_warm_idle_resizes_back_up) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 35 * MIN);
    made_warm(&o, T0 + 30 * MIN);
    o.last_used_annotation_ms = T0 + 35 * MIN - 2 * SEC;   /* a touch */
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_RESIZE_UP);
    CHECK_INT(d.resize_cpu_limit_millis, 1000);
    CHECK_INT(d.resize_cpu_request_millis, 100);
    CHECK_STR(d.phase, "Running");
    CHECK_STR(d.reason, SBX_REASON_READY);
    CHECK(strstr(d.message, "waking from warm-idle") != NULL);
    CHECK_INT(d.warm_idle_since_ms, 0);
    CHECK_INT(d.requeue_after_ms, 30 * MIN - 2 * SEC);   /* a full idle period from the touch */
    /* Once the pod's spec asks for the full CPU again: nothing more to do. */
    o.pod_cpu_limit_millis = 1000;
    o.pod_cpu_request_millis = 100;
    o.status_warm_idle_since_ms = 0;
    o.status_reason = SBX_REASON_READY;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
}

TEST(warm_idle_turned_off_while_warm_wakes_the_pod) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 10 * MIN);
    made_warm(&o, T0 + 5 * MIN);
    s.warm_idle_cpu_millis = 0;   /* the class no longer says warmIdle */
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_RESIZE_UP);
}

TEST(a_pod_never_warm_is_never_resized) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 10 * MIN);
    o.pod_cpu_limit_millis = 700;   /* not the spec's, not the floor, never warm-idle */
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
}

TEST(a_wake_the_kubelet_cannot_give_cpu_back_replaces_the_pod) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 36 * MIN);
    o.last_used_annotation_ms = T0 + 35 * MIN;
    o.pod_cpu_allocated_millis = 50;   /* asked 1000m back; the kubelet still gives 50m */
    o.pod_resize_pending = "Deferred";
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_DELETE_POD);
    CHECK_STR(d.warm_event, SBX_EVENT_WAKE_FAILED);
    CHECK(strstr(d.warm_event_message, "Deferred") != NULL);
    /* while the kubelet is still at it (no verdict), it is left alone */
    o.pod_resize_pending = NULL;
    d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK(d.warm_event == NULL);
}

/* ---- a resize the kubelet refuses --------------------------------------------------------- */

TEST(infeasible_or_deferred_falls_back_on_the_idle_action_with_an_event) {
    static const char *const verdicts[] = {"Infeasible", "Deferred"};
    for (int i = 0; i < 2; i++) {
        struct sbx_spec s = spec_warm(SBX_SESSION);
        struct sbx_observed o = running(&s, T0, T0 + 31 * MIN);
        made_warm(&o, T0 + 30 * MIN);
        o.pod_cpu_allocated_millis = 1000;
        o.pod_resize_pending = verdicts[i];
        struct sbx_decision d = decide(&s, &o);
        CHECK_INT(d.actions, SBX_ACT_DELETE_POD | SBX_ACT_DELETE_SANDBOX);
        CHECK_STR(d.reason, SBX_REASON_IDLE);
        CHECK_STR(d.warm_event, SBX_EVENT_WARM_IDLE_FAILED);
        CHECK(strstr(d.warm_event_message, verdicts[i]) != NULL);
    }
    /* a long-running one is stopped, workspace kept */
    struct sbx_spec s = spec_warm(SBX_LONG_RUNNING);
    struct sbx_observed o = running(&s, T0, T0 + 24 * 30 * MIN + MIN);
    made_warm(&o, T0 + 24 * 30 * MIN);
    o.pod_resize_pending = "Infeasible";
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_DELETE_POD);
    CHECK_STR(d.warm_event, SBX_EVENT_WARM_IDLE_FAILED);
}

/* The API server refused the resize itself (noted by the I/O side, with its own Event): the
 * idle action at once, no second try and no Event from the decision; a refused wake
 * replaces the pod. */
TEST(a_resize_the_api_server_refused_falls_back_at_once) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 30 * MIN);
    o.pod_resize_api_refused = 1;
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_DELETE_POD | SBX_ACT_DELETE_SANDBOX);
    CHECK_STR(d.reason, SBX_REASON_IDLE);
    CHECK(d.warm_event == NULL);
    /* the way up: the pod is replaced, the workspace kept */
    o = running(&s, T0, T0 + 35 * MIN);
    made_warm(&o, T0 + 30 * MIN);
    o.last_used_annotation_ms = T0 + 35 * MIN - 2 * SEC;
    o.pod_resize_api_refused = 1;
    d = decide(&s, &o);
    CHECK_INT(d.actions, SBX_ACT_DELETE_POD);
    CHECK_STR(d.phase, "Creating");
}

/* ---- the predicates the I/O side asks ---------------------------------------------------- */

TEST(the_idle_deadline_is_the_idle_actions_destroying_step_or_the_resize_down) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 30 * MIN);
    struct sbx_decision d = decide(&s, &o);                 /* warm-idle: resized down */
    CHECK_INT(lifecycle_at_idle_deadline(&d), 1);
    o = running(&s, T0, T0 + 40 * MIN);                      /* past the window: removed */
    made_warm(&o, T0 + 30 * MIN);
    d = decide(&s, &o);
    CHECK_INT(lifecycle_at_idle_deadline(&d), 1);
    o = running(&s, T0, T0 + 34 * MIN);                      /* warm-idle already: nothing */
    made_warm(&o, T0 + 30 * MIN);
    d = decide(&s, &o);
    CHECK_INT(lifecycle_at_idle_deadline(&d), 0);
    o = running(&s, T0, T0 + 10 * MIN);                      /* before the deadline */
    d = decide(&s, &o);
    CHECK_INT(lifecycle_at_idle_deadline(&d), 0);
    s.paused = 1;                                            /* a stop that is not idleness */
    d = decide(&s, &o);
    CHECK(d.actions & SBX_ACT_DELETE_POD);
    CHECK_INT(lifecycle_at_idle_deadline(&d), 0);
}

TEST(the_activity_threshold_is_halved_at_the_floor_only_when_lower) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    s.activity_cpu_millis = 50;
    struct sbx_observed o = running(&s, T0, T0 + 30 * MIN);
    CHECK_INT(lifecycle_activity_threshold(&s, &o), 50);     /* not warm-idle: the class's */
    made_warm(&o, T0 + 30 * MIN);
    CHECK_INT(lifecycle_activity_threshold(&s, &o), 25);     /* held at 50m: half of it */
    s.activity_cpu_millis = 10;
    CHECK_INT(lifecycle_activity_threshold(&s, &o), 10);     /* the class's is lower */
}

TEST(a_workspace_may_be_held_only_before_a_stopped_or_waiting_sandboxs_pod) {
    struct sbx_observed o = observed_running(T0, T0 + MIN);
    struct sbx_decision d;
    memset(&d, 0, sizeof(d));
    d.actions = SBX_ACT_CREATE_POD;
    o.pvc = SBX_OBJ_PRESENT;
    o.status_phase = "Stopped";
    CHECK_INT(lifecycle_workspace_may_be_held(&o, &d), 1);
    o.status_phase = "Creating";
    o.status_reason = SBX_REASON_WORKSPACE_BUSY;
    CHECK_INT(lifecycle_workspace_may_be_held(&o, &d), 1);
    o.status_reason = SBX_REASON_CREATING;                   /* a first start: nothing held it */
    CHECK_INT(lifecycle_workspace_may_be_held(&o, &d), 0);
    o.status_phase = "Stopped";
    d.actions = 0;                                           /* no pod to start */
    CHECK_INT(lifecycle_workspace_may_be_held(&o, &d), 0);
    d.actions = SBX_ACT_CREATE_POD;
    o.pvc = SBX_OBJ_ABSENT;                                  /* a new claim */
    CHECK_INT(lifecycle_workspace_may_be_held(&o, &d), 0);
}

TEST(a_pending_resize_without_a_verdict_keeps_warm_idle) {
    struct sbx_spec s = spec_warm(SBX_SESSION);
    struct sbx_observed o = running(&s, T0, T0 + 31 * MIN);
    made_warm(&o, T0 + 30 * MIN);
    o.pod_resize_pending = "SomethingElse";
    struct sbx_decision d = decide(&s, &o);
    CHECK_INT(d.actions, 0);
    CHECK_STR(d.reason, SBX_REASON_WARM_IDLE);
    CHECK(d.warm_event == NULL);
}

/* ---- caps and reclaim ---------------------------------------------------------------------- */

/* Cap 2: "old" (idle since T0) and "warm" (idle since T0 + 20 min, warm-idle) run, both
 * reclaimable after 10 min; "wait" waits. */
TEST(warm_idle_sandboxes_are_reclaimed_first) {
    struct sbx_cap_limits l = {.max_running = 2};
    struct sbx_slots *a = sbx_slots_new(&l);
    CHECK(a != NULL);
    if (!a) return;
    static const char *const uids[] = {"old", "warm", "wait"}, *const users[] = {"alice", "bob", "carol"};
    int pos;
    for (int i = 0; i < 3; i++) {
        char key[32];
        snprintf(key, sizeof key, "ns/%s", uids[i]);
        CHECK_INT(sbx_slots_sandbox(a, uids[i], key, users[i], T0 + i, 0), 0);
    }
    for (int i = 0; i < 2; i++) {
        CHECK_INT(sbx_slots_try(a, uids[i], T0, T0 + 99 * MIN, &pos), SBX_ADMIT_YES);
        CHECK_INT(sbx_slots_pod(a, uids[i], +1), 0);
        sbx_slots_release(a, uids[i], 0);
    }
    CHECK_INT(sbx_slots_try(a, "wait", T0, T0 + 99 * MIN, &pos), SBX_ADMIT_WAIT);
    sbx_slots_reclaimable(a, "old", 10 * MIN, T0);
    sbx_slots_reclaimable(a, "warm", 10 * MIN, T0 + 20 * MIN);
    sbx_slots_reclaim_first(a, "warm", 1);
    struct sbx_reclaim_victim v[2];
    int64_t now = T0 + 60 * MIN;
    size_t n = sbx_slots_reclaim_pick(a, now, now + MIN, v, 2, NULL);
    CHECK_INT(n, 1);
    if (n >= 1) CHECK_STR(v[0].uid, "warm");
    /* Woken (no longer warm-idle): the longest idle is first again. */
    sbx_slots_reclaim_cancel(a, "warm");
    sbx_slots_reclaim_first(a, "warm", 0);
    n = sbx_slots_reclaim_pick(a, now, now + MIN, v, 2, NULL);
    CHECK_INT(n, 1);
    if (n >= 1) CHECK_STR(v[0].uid, "old");
    sbx_slots_free(a);
}
