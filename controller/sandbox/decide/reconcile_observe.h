/* sandbox/decide/reconcile_observe.h — the reconcile pass's observe stage, pure (its I/O is
 * reconcile.c): what the controller reads of a sandbox Pod's status: the slim form the pod
 * cache keeps (sbx_pod_shrink), the observations lifecycle_decide needs from it
 * (sbx_pod_observe: phase, readiness and since when, the scheduler's verdict, the sandbox
 * container's state, restarts and last termination), and status.lastTermination of a
 * Sandbox in and out of JSON. Pure: cJSON in, cJSON or structs out, no I/O and no clock.
 * Not here: the decisions (reconcile_decide.c) and writing status (reconcile.c). */
#ifndef YAO_SANDBOX_RECONCILE_OBSERVE_H
#define YAO_SANDBOX_RECONCILE_OBSERVE_H

#include <cjson/cJSON.h>
#include "sandbox/decide/reconcile_decide.h"

/* Cut a Pod down to what the controller reads, in place: metadata (without managedFields
 * and the last-applied annotation), spec.nodeName, and of the status phase, reason,
 * message, podIP, startTime, the Ready and PodScheduled conditions, and a slice of the
 * sandbox container's status (ready, restartCount, state.waiting reason/message,
 * state.running.startedAt, state.terminated reason/exitCode/startedAt/finishedAt/message
 * (a one-shot run's result and output tails, at most 4096 bytes as the kubelet keeps
 * them), lastState.terminated reason/exitCode/finishedAt, resources.limits.cpu), the
 * PodResizePending condition, spec.activeDeadlineSeconds, and of the sandbox container in
 * the spec its name and CPU request and limit (warm-idle's resize).
 * Messages are cut to SBX_MESSAGE_MAX bytes on a UTF-8 boundary. A pod holds a few hundred
 * bytes in the cache however much its kubelet reports (up to ~4.5 KiB for a finished run). */
void sbx_pod_shrink(cJSON *pod);

/* Fill the pod fields of o (pod_phase, pod_reason, run_timeout_s, pod_ready, pod_ready_since_ms, pod_started_ms,
 * pod_unscheduled_reason/message, ctr, pod_cpu_*, pod_resize_pending) from a pod, full or shrunk; pod NULL clears them.
 * The strings point into pod, which must outlive o's use. Leaves o->pod (ownership) to
 * the caller. */
void sbx_pod_observe(const cJSON *pod, struct sbx_observed *o);

/* 1 when the pod has ended for good (status.phase Succeeded or Failed: a finished one-shot
 * run's pod, kept for its log): it runs nothing and holds no running slot. */
int sbx_pod_finished(const cJSON *pod);
/* Whether the scheduler placed the pod (spec.nodeName) or the kubelet took it (status.startTime). */
int sbx_pod_placed(const cJSON *pod);
/* The pod's node (spec.nodeName) and IP (status.podIP), or NULL; they point into pod. */
const char *sbx_pod_node(const cJSON *pod);
const char *sbx_pod_ip(const cJSON *pod);


#endif
