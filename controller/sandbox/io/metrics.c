/* sandbox/io/metrics.c — Prometheus text for the controller (see metrics.h). */
#include "sandbox/io/metrics.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/heap.h"
#include "kube/kjson.h"
#include <pthread.h>
#include <stdlib.h>

#define NPHASES SBX_METRIC_PHASES
static const char *const phases[NPHASES] = {"Pending", "Creating", "Running", "Stopping",
                                            "Stopped", "Succeeded", "Failed", "Unknown"};
static const char *const lifecycles[SBX_METRIC_LIFECYCLES] = {"one-shot", "session", "long-running", "persistent"};

/* The (phase, lifecycle) slot of a Sandbox. */
static void slot_of(const struct sbx_sandbox_view *sb, int *p, int *l) {
    const char *phase = sb->phase;
    const char *lc = sbx_sandbox_lifecycle(sb);   /* the spec's, else the default in force */
    *p = NPHASES - 1;
    *l = 1;
    for (int i = 0; phase && i < NPHASES - 1; i++) if (!strcmp(phase, phases[i])) *p = i;
    for (int i = 0; lc && i < SBX_METRIC_LIFECYCLES; i++) if (!strcmp(lc, lifecycles[i])) *l = i;
}

struct sbx_metrics {
    pthread_mutex_t lock;   /* guards counts */
    /* Cached Sandboxes by phase and lifecycle, kept by the Sandbox handler: a scrape never
     * walks the cache. */
    unsigned counts[NPHASES][SBX_METRIC_LIFECYCLES];
    struct sbx_starts *starts;   /* create → Ready and wake latencies (starts.h) */
};

struct sbx_metrics *sbx_metrics_new(void) {
    struct sbx_metrics *m = calloc(1, sizeof(*m));
    if (!m) return NULL;
    if (!(m->starts = sbx_starts_new())) {
        free(m);
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    return m;
}

void sbx_metrics_free(struct sbx_metrics *m) {
    if (!m) return;
    sbx_starts_free(m->starts);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void sbx_metrics_on_sandbox(struct sbx_metrics *m, const struct sbx_sandbox_view *old,
                            const struct sbx_sandbox_view *cur) {
    int op = 0, ol = 0, cp = 0, cl = 0;
    if (old) slot_of(old, &op, &ol);
    if (cur) slot_of(cur, &cp, &cl);
    pthread_mutex_lock(&m->lock);
    if (old && m->counts[op][ol]) m->counts[op][ol]--;
    if (cur) m->counts[cp][cl]++;
    pthread_mutex_unlock(&m->lock);
    sbx_starts_observe(m->starts, old, cur, clock_mono_ms(), kj_now_ms());
}

/* The boot time (seconds since the epoch), from /proc/stat's btime; 0 if unknown. */
static unsigned long long boot_time(void) {
    unsigned long long btime = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    char line[256];
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "btime %llu", &btime) == 1) break;
    fclose(f);
    return btime;
}

/* CPU seconds, start time (seconds since the epoch; 0 if unknown) and resident bytes of
 * this process. */
static void process_usage(double *cpu_s, double *start_s, long *rss_bytes, long *hwm_bytes) {
    *cpu_s = *start_s = 0;
    *rss_bytes = *hwm_bytes = 0;
    FILE *f = fopen("/proc/self/stat", "r");
    if (f) {
        unsigned long ut = 0, st = 0;
        unsigned long long started = 0;
        /* fields 14 and 15: utime, stime; 22: starttime, in ticks after boot (after the
         * parenthesised comm) */
        int n = fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d %llu",
                       &ut, &st, &started);
        double tick = (double)sysconf(_SC_CLK_TCK);
        if (n >= 2) *cpu_s = (double)(ut + st) / tick;
        unsigned long long btime = n == 3 ? boot_time() : 0;
        if (btime) *start_s = (double)btime + (double)started / tick;
        fclose(f);
    }
    f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        long kb;
        while (fgets(line, sizeof(line), f)) {
            if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) *rss_bytes = kb * 1024;
            if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) *hwm_bytes = kb * 1024;
        }
        fclose(f);
    }
}

/* The compiler, as a label value (no quote or backslash in it). */
static const char *build_compiler(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

/* One un-labelled counter or gauge with its HELP and TYPE lines. */
static int metric(struct dynbuf *out, const char *name, const char *type, const char *help,
                  unsigned long long value) {
    return dynbuf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, value);
}

/* List, watch, relist, stall and error counts of each informer, labelled by resource. */
static int informer_metrics(const struct sbx_metrics_sources *src, struct dynbuf *out) {
    const struct sbx_deps *deps = src->deps;
    const struct { const char *resource; struct informer *inf; } infs[] = {
        {"sandboxes", deps->sandboxes},   {"pods", deps->pods},
        {"persistentvolumeclaims", deps->pvcs}, {"services", deps->services},
        {"networkpolicies", deps->netpols}, {"storageclasses", deps->storage_classes},
        {"sandboxclasses", src->sandbox_classes},
    };
    const struct { const char *name, *help; } kinds[] = {
        {"lists", "Full lists (initial, and relists after an expired resourceVersion)."},
        {"watches", "Watch requests opened."},
        {"relists_expired", "Relists because the watch's resourceVersion expired (410)."},
        {"stalls", "Watches ended for silence (no event or bookmark within the stall timeout)."},
        {"errors", "Failed list or watch requests."},
    };
    const size_t n = sizeof(infs) / sizeof(infs[0]);
    struct informer_stats st[sizeof(infs) / sizeof(infs[0])];
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (infs[i].inf) informer_stats(infs[i].inf, &st[i]);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        rc |= dynbuf_printf(out, "# HELP yao_sandbox_informer_%s_total %s\n# TYPE yao_sandbox_informer_%s_total counter\n",
                            kinds[k].name, kinds[k].help, kinds[k].name);
        for (size_t i = 0; i < n; i++) {
            if (!infs[i].inf) continue;
            const unsigned long v[] = {st[i].lists, st[i].watches, st[i].relists_expired, st[i].stalls, st[i].errors};
            rc |= dynbuf_printf(out, "yao_sandbox_informer_%s_total{resource=\"%s\"} %lu\n", kinds[k].name,
                                infs[i].resource, v[k]);
        }
    }
    return rc;
}

int sbx_metrics_render(struct sbx_metrics *m, const struct sbx_metrics_sources *src, int is_leader,
                       struct dynbuf *out) {
    const struct sbx_deps *deps = src->deps;
    static const char *const verbs[6] = {"GET", "POST", "PUT", "PATCH", "DELETE", "WATCH"};
    static const char *const classes[6] = {"error", "1xx", "2xx", "3xx", "4xx", "5xx"};
    static const char *const bounds[11] = {"0.001", "0.002", "0.005", "0.01", "0.025", "0.05",
                                           "0.1", "0.25", "0.5", "1", "2.5"};
    const struct sbx_controller_stats s = src->stats;
    int rc = 0;
#define P(...) rc |= dynbuf_printf(out, __VA_ARGS__)
    rc |= metric(out, "yao_sandbox_reconcile_total", "counter", "Reconcile passes.", s.reconciles);
    rc |= metric(out, "yao_sandbox_reconcile_errors_total", "counter",
                 "Reconcile passes that failed and were retried.", s.errors);
    P("# HELP yao_sandbox_reconcile_duration_seconds Time of one reconcile pass.\n");
    P("# TYPE yao_sandbox_reconcile_duration_seconds histogram\n");
    unsigned long long cum = 0;
    for (int i = 0; i < 11; i++) {
        cum += s.latency_buckets[i];
        P("yao_sandbox_reconcile_duration_seconds_bucket{le=\"%s\"} %llu\n", bounds[i], cum);
    }
    cum += s.latency_buckets[11];
    P("yao_sandbox_reconcile_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    P("yao_sandbox_reconcile_duration_seconds_sum %.6f\n", s.latency_sum_ms / 1000.0);
    P("yao_sandbox_reconcile_duration_seconds_count %llu\n", cum);

    rc |= metric(out, "yao_sandbox_workqueue_depth", "gauge", "Keys ready to be reconciled.", queue_len(deps->queue));
    rc |= metric(out, "yao_sandbox_workqueue_waiting", "gauge", "Keys waiting for their deadline or backoff.",
                 queue_waiting(deps->queue));

    unsigned counts[NPHASES][SBX_METRIC_LIFECYCLES];
    pthread_mutex_lock(&m->lock);
    memcpy(counts, m->counts, sizeof(counts));
    pthread_mutex_unlock(&m->lock);
    P("# HELP yao_sandbox_sandboxes Sandboxes in the cache by phase and lifecycle.\n# TYPE yao_sandbox_sandboxes gauge\n");
    for (int p = 0; p < NPHASES; p++)
        for (int l = 0; l < SBX_METRIC_LIFECYCLES; l++)
            P("yao_sandbox_sandboxes{phase=\"%s\",lifecycle=\"%s\"} %u\n", phases[p], lifecycles[l], counts[p][l]);

    struct kube_request_counts rq;
    kube_client_counts(deps->client, &rq);
    P("# HELP yao_sandbox_api_requests_total Requests to the API server by verb and status class.\n");
    P("# TYPE yao_sandbox_api_requests_total counter\n");
    for (int v = 0; v < 6; v++)
        for (int c = 0; c < 6; c++)
            if (rq.by_verb[v][c])
                P("yao_sandbox_api_requests_total{verb=\"%s\",code=\"%s\"} %llu\n", verbs[v], classes[c],
                  (unsigned long long)rq.by_verb[v][c]);

    P("# HELP yao_sandbox_objects_written_total Objects the controller created, deleted, and status writes.\n");
    P("# TYPE yao_sandbox_objects_written_total counter\n");
    P("yao_sandbox_objects_written_total{op=\"create\"} %llu\n", (unsigned long long)s.creates);
    P("yao_sandbox_objects_written_total{op=\"delete\"} %llu\n", (unsigned long long)s.deletes);
    P("yao_sandbox_objects_written_total{op=\"status\"} %llu\n", (unsigned long long)s.status_writes);
    rc |= metric(out, "yao_sandbox_events_total", "counter",
                 "Kubernetes Events recorded (occurrences handed to the recorder).", s.events);
    struct kube_recorder_stats ev;
    kube_recorder_stats(deps->recorder, &ev);
    rc |= metric(out, "yao_sandbox_events_sent_total", "counter",
                 "Event writes the API server accepted (new Events and count updates).", ev.writes);
    rc |= metric(out, "yao_sandbox_events_created_total", "counter",
                 "Occurrences that made a new Event object.", ev.created);
    rc |= metric(out, "yao_sandbox_events_aggregated_total", "counter",
                 "Occurrences counted into an existing Event (count raised).", ev.aggregated);
    P("# HELP yao_sandbox_events_dropped_total Occurrences not written: queue full, rate limit, write failed.\n");
    P("# TYPE yao_sandbox_events_dropped_total counter\n");
    P("yao_sandbox_events_dropped_total{reason=\"queue_full\"} %llu\n", (unsigned long long)ev.dropped_queue);
    P("yao_sandbox_events_dropped_total{reason=\"rate_limited\"} %llu\n", (unsigned long long)ev.dropped_rate);
    P("yao_sandbox_events_dropped_total{reason=\"failed\"} %llu\n", (unsigned long long)ev.failed);
    rc |= metric(out, "yao_sandbox_events_pending", "gauge", "Events waiting to be written.", ev.pending);
    rc |= metric(out, "yao_sandbox_runs_started_total", "counter", "One-shot run pods this controller created.",
                 s.runs_started);
    rc |= metric(out, "yao_sandbox_reclaims_total", "counter",
                 "Idle sandboxes stopped to admit a waiting one (SandboxClass spec.reclaim).", s.reclaims);
    unsigned warm_bound, warm_pending;
    sbx_warm_stats(src->warm, &warm_bound, &warm_pending);
    P("# HELP yao_sandbox_warm_claims Warm-pool claims not yet adopted, by state (bound: ready to adopt).\n");
    P("# TYPE yao_sandbox_warm_claims gauge\n");
    P("yao_sandbox_warm_claims{state=\"bound\"} %u\n", warm_bound);
    P("yao_sandbox_warm_claims{state=\"pending\"} %u\n", warm_pending);
    rc |= metric(out, "yao_sandbox_warm_adoptions_total", "counter",
                 "New Sandboxes that adopted a Bound warm-pool claim (no wait for provisioning).", s.warm_adoptions);
    rc |= metric(out, "yao_sandbox_warm_misses_total", "counter",
                 "New Sandboxes whose namespace keeps a warm pool of their workspace shape but had no Bound "
                 "claim in it (a cold claim was made; raise the pool's size if this grows).", s.warm_misses);
    /* The name before runs became pods (no exec any more); kept for dashboards and
     * test_operate.sh. Same value as yao_sandbox_runs_started_total. */
    rc |= metric(out, "yao_sandbox_exec_sessions_total", "counter", "Deprecated: yao_sandbox_runs_started_total.",
                 s.runs_started);
    rc |= metric(out, "yao_sandbox_runs_finished_total", "counter", "One-shot results this controller recorded.",
                 s.runs_finished);
    rc |= metric(out, "yao_sandbox_leader", "gauge", "1 when this replica leads (or runs without election).",
                 is_leader ? 1 : 0);
    rc |= informer_metrics(src, out);

    rc |= sbx_starts_render(m->starts, out);
    rc |= metric(out, "yao_sandbox_starts_pending", "gauge",
                 "Creates and wakes under way (timed once the Sandbox is Running and Ready).",
                 sbx_starts_pending(m->starts));
    P("# HELP yao_sandbox_build_info The controller's version and the compiler that built it (value 1).\n");
    P("# TYPE yao_sandbox_build_info gauge\n");
    P("yao_sandbox_build_info{version=\"%s\",compiler=\"%s\"} 1\n", YAO_VERSION, build_compiler());

    double cpu, started;
    long rss, hwm;
    process_usage(&cpu, &started, &rss, &hwm);
    P("# HELP process_cpu_seconds_total User and system CPU time.\n# TYPE process_cpu_seconds_total counter\n");
    P("process_cpu_seconds_total %.2f\n", cpu);
    if (started > 0) {
        P("# HELP process_start_time_seconds Start time of the process since the epoch, in seconds.\n");
        P("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n", started);
    }
    rc |= metric(out, "process_resident_memory_bytes", "gauge", "Resident memory.", (unsigned long long)rss);
    rc |= metric(out, "process_resident_memory_peak_bytes", "gauge", "Peak resident memory.",
                 (unsigned long long)hwm);
    /* The heap as malloc sees it: bytes in use, and bytes free but still held (the
     * difference between these and the resident set is fragmentation and code). */
    size_t heap_inuse, heap_free;
    if (heap_usage(&heap_inuse, &heap_free) == 0) {
        rc |= metric(out, "process_heap_inuse_bytes", "gauge", "Heap bytes allocated and not freed (glibc mallinfo2).",
                     (unsigned long long)heap_inuse);
        rc |= metric(out, "process_heap_free_bytes", "gauge", "Heap bytes free but still held by malloc.",
                     (unsigned long long)heap_free);
    }
#undef P
    return rc ? -1 : 0;
}
