/* sandbox/decide/activity_decide.h — is a sandbox at work? The pure half of activity-aware idle: the CPU
 * a pod uses, from its PodMetrics (metrics.k8s.io/v1beta1, served by metrics-server from the
 * kubelet's resource metrics), against its class's threshold (SandboxClass
 * spec.activity.cpu), and the text that records it (annotation, status, Event).
 *
 * The controller asks only at an idle deadline (once per sandbox reaching one, not every
 * pass), so the cost is O(sandboxes at their deadline); a busy one gets its last-used-at
 * refreshed (one write per idle period, not per sample) and a new idle period. The I/O is
 * reconcile.c's; nothing here reads a clock or the network. */
#ifndef YAO_SANDBOX_ACTIVITY_DECIDE_H
#define YAO_SANDBOX_ACTIVITY_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/model/podmetrics.h"
#include "sandbox/model/spec.h"

/* SBX_ANN_LAST_ACTIVITY, written with the last-used-at it refreshes: spec.h. */
#define SBX_REASON_ACTIVE "ActiveAtIdleDeadline"

/* Busy: more than threshold_millis (> 0), in a sample that ended after the idle deadline
 * began to run out — at most max_age_ms before now (an old sample says nothing of now). */
int sbx_activity_busy(const struct sbx_activity *a, int64_t threshold_millis, int64_t now_ms, int64_t max_age_ms);

/* "cpu=250m threshold=100m window=15s" (the annotation's text after its time). */
void sbx_activity_describe(const struct sbx_activity *a, int64_t threshold_millis, char *out, size_t outlen);

#endif
