/* sandbox/model/podmetrics.h — the typed view of a PodMetrics object (metrics.k8s.io/v1beta1,
 * served by metrics-server from the kubelet's resource metrics): the CPU a pod's containers
 * use together, and the window the sample covers. Pure. */
#ifndef YAO_SANDBOX_PODMETRICS_H
#define YAO_SANDBOX_PODMETRICS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* A metrics.k8s.io CPU quantity ("12345678n", "250u", "5m", "1", "0.5") in nanocores. 0, or
 * -1 for anything else (negative, junk, overflow). */
int sbx_activity_parse_cpu(const char *s, int64_t *nanocores);

struct sbx_activity {
    int64_t cpu_millis;       /* the pod's containers together, rounded to the nearest 1m */
    int64_t timestamp_ms;     /* the end of the sample's window (0 = not given) */
    int64_t window_ms;        /* its length (0 = not given) */
};

/* Read a PodMetrics object. 0, or -1 with a one-line reason in err (no containers, an
 * unparseable usage). */
int sbx_activity_read(const cJSON *pod_metrics, struct sbx_activity *out, char *err, size_t errlen);

#endif
