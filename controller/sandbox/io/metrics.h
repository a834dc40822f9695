/* sandbox/io/metrics.h — the controller's Prometheus metrics in the text exposition format
 * (version 0.0.4): reconcile counts, errors and latency histogram, work-queue depth,
 * Sandboxes by phase and lifecycle (counted as the cache changes), API requests by verb and status
 * class, one-shot exec sessions, leadership, create → Ready and wake latency histograms
 * (sandbox/model/starts.h), build_info, and process CPU/memory/start time from /proc.
 * Owns the per-phase counts and the start timings; everything else it renders is handed
 * to it per scrape (struct sbx_metrics_sources). */
#ifndef YAO_SANDBOX_METRICS_H
#define YAO_SANDBOX_METRICS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/model/sandboxview.h"

#include "base/dynbuf.h"
#include "sandbox/io/deps.h"
#include "sandbox/model/starts.h"
#include "sandbox/io/warm.h"

#define SBX_METRIC_PHASES 8        /* Pending ... Unknown */
#define SBX_METRIC_LIFECYCLES 4

/* Reconcile outcome counters, for metrics. */
struct sbx_controller_stats {
    uint64_t reconciles, errors, status_writes, creates, deletes, conflicts, events;
    uint64_t runs_started, runs_finished;   /* one-shot pods created, results recorded */
    uint64_t reclaims;             /* idle sandboxes stopped to admit a waiting one */
    uint64_t warm_adoptions;       /* warm-pool claims adopted by a new Sandbox */
    uint64_t warm_misses;          /* a new Sandbox found its shape's pool without a Bound claim */
    uint64_t latency_buckets[12];  /* le 1,2,5,10,25,50,100,250,500,1000,2500,+Inf ms */
    double latency_sum_ms;
};

/* What one scrape reads besides the metrics' own state. */
struct sbx_metrics_sources {
    struct sbx_controller_stats stats;    /* a snapshot */
    const struct sbx_deps *deps;            /* client, queue, recorder, caches */
    struct sbx_warm *warm;
    struct informer *sandbox_classes;
};

struct sbx_metrics;
struct sbx_metrics *sbx_metrics_new(void);
void sbx_metrics_free(struct sbx_metrics *m);

/* The Sandbox cache changed (old -> cur, either may be NULL): move its count between
 * (phase, lifecycle) slots, and time its start. Called by the Sandbox informer's handler. */
void sbx_metrics_on_sandbox(struct sbx_metrics *m, const struct sbx_sandbox_view *old,
                            const struct sbx_sandbox_view *cur);

/* Append the whole exposition to out. is_leader: 1 leading (or no election), 0 standby. */
int sbx_metrics_render(struct sbx_metrics *m, const struct sbx_metrics_sources *src, int is_leader,
                       struct dynbuf *out);

#endif
