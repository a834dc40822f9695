/* sandbox/decide/activity_decide.c — a pod's CPU (its PodMetrics read by model/podmetrics.c)
 * against its class's threshold (see activity_decide.h). */
#include "sandbox/decide/activity_decide.h"

#include <stdio.h>
#include <string.h>

#include "sandbox/model/quantity.h"

int sbx_activity_busy(const struct sbx_activity *a, int64_t threshold_millis, int64_t now_ms, int64_t max_age_ms) {
    if (threshold_millis <= 0 || a->cpu_millis <= threshold_millis) return 0;
    /* metrics-server stamps the end of its window; no stamp: taken as current */
    if (a->timestamp_ms > 0 && now_ms - a->timestamp_ms > max_age_ms) return 0;
    return 1;
}

void sbx_activity_describe(const struct sbx_activity *a, int64_t threshold_millis, char *out, size_t outlen) {
    char cpu[32], thr[32], win[32] = "";
    if (qty_format_cpu(a->cpu_millis, cpu, sizeof cpu) < 0) snprintf(cpu, sizeof cpu, "%lldm", (long long)a->cpu_millis);
    if (qty_format_cpu(threshold_millis, thr, sizeof thr) < 0) snprintf(thr, sizeof thr, "%lldm", (long long)threshold_millis);
    /* the window to the second (metrics-server's is its resolution plus a few ms) */
    int64_t w = a->window_ms >= 1000 ? (a->window_ms + 500) / 1000 * 1000 : a->window_ms;
    if (w > 0 && qty_format_duration(w, win, sizeof win) < 0) win[0] = '\0';
    snprintf(out, outlen, "cpu=%s threshold=%s%s%s", cpu, thr, win[0] ? " window=" : "", win);
}
