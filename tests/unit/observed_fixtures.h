/* tests/unit/observed_fixtures.h — what the lifecycle decision's unit tests observe
 * (sandbox/decide/reconcile_decide.h struct sbx_observed): a Sandbox just created, and one running
 * with a Bound claim and a Ready pod. Header-only. */
#ifndef YAO_TEST_OBSERVED_FIXTURES_H
#define YAO_TEST_OBSERVED_FIXTURES_H

#include <stdint.h>
#include <string.h>

#include "sandbox/decide/reconcile_decide.h"

/* Nothing exists yet, the sandbox was just created at now, capacity is free. */
static inline struct sbx_observed observed_fresh(int64_t now) {
    struct sbx_observed o;
    memset(&o, 0, sizeof(o));
    o.now_ms = now;
    o.created_ms = now;
    o.generation = 1;
    o.admitted = 1;
    return o;
}

/* Bound PVC and a Running pod that became Ready at started (the kubelet accepted it 20 s
 * earlier: image pull), already recorded in status.startedAt; time now. */
static inline struct sbx_observed observed_running(int64_t started, int64_t now) {
    struct sbx_observed o = observed_fresh(now);
    o.created_ms = started - 25000;
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.pod = SBX_OBJ_PRESENT;
    o.pod_phase = "Running";
    o.pod_ready = 1;
    o.pod_ready_since_ms = started;
    o.pod_started_ms = started - 20000;
    o.ctr.present = 1;
    o.ctr.ready = 1;
    o.ctr.running_since_ms = started;
    o.status_started_ms = started;
    o.status_phase = "Running";
    o.status_reason = SBX_REASON_READY;
    return o;
}

#endif
