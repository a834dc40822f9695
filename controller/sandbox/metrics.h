/* sandbox/metrics.h — the controller's Prometheus metrics in the text exposition format
 * (version 0.0.4): reconcile counts, errors and latency histogram, work-queue depth,
 * Sandboxes by phase and lifecycle (counted as the cache changes), API requests by verb and status
 * class, one-shot exec sessions, leadership, create → Ready and wake latency histograms
 * (sandbox/starts.h), build_info, and process CPU/memory/start time from /proc. */
#ifndef YAO_SANDBOX_METRICS_H
#define YAO_SANDBOX_METRICS_H

#include "base/dynbuf.h"
#include "sandbox/reconcile.h"

/* The Sandbox cache changed (old -> cur, either may be NULL): move its count between
 * (phase, lifecycle) slots. Called by the Sandbox informer's handler. */
void sbx_metrics_on_sandbox(struct sbx_controller *ctl, const cJSON *old, const cJSON *cur);

/* Append the whole exposition to out. is_leader: 1 leading (or no election), 0 standby. */
int sbx_metrics_render(struct sbx_controller *ctl, int is_leader, struct dynbuf *out);

#endif
