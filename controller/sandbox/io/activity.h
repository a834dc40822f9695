/* sandbox/io/activity.h — the I/O half of activity-aware idle (activity.c; the decisions
 * are sandbox/decide/activity_decide.h). */
#ifndef YAO_SANDBOX_ACTIVITY_H
#define YAO_SANDBOX_ACTIVITY_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/io/deps.h"
#include "sandbox/model/sandboxview.h"

/* At an idle deadline of a Sandbox whose class counts activity: the pod's CPU from
 * metrics.k8s.io above threshold_millis refreshes last-used-at (conditional on sb's
 * version) and returns SBX_ACTIVE; 0 acts on the deadline (idle, or not measurable: a
 * Warning Event says which); SBX_STALE the Sandbox changed; -1 error. */
#define SBX_ACTIVE 2
int sbx_activity_probe(const struct sbx_deps *deps, const char *ns, const char *name,
                       const struct sbx_sandbox_view *sb,
                       const char *pod_name, int64_t threshold_millis, int64_t now, struct kube_error *err);

#endif
