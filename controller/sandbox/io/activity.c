/* sandbox/io/activity.c — the I/O half of activity-aware idle (the decisions are
 * sandbox/decide/activity_decide.c): at a sandbox's idle deadline, read its pod's PodMetrics from
 * metrics.k8s.io and, when it is busy, refresh last-used-at (a merge patch conditional on
 * the version decided on) with the annotation saying what was seen, and an Event. */
#include <stdio.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/kjson.h"
#include "base/log.h"
#include "sandbox/decide/activity_decide.h"
#include "sandbox/io/activity.h"
#include "sandbox/io/status.h"

/* A sample older than this says nothing of now (metrics-server scrapes every 15–60 s). */
#define ACTIVITY_MAX_AGE_MS 120000

int sbx_activity_probe(const struct sbx_deps *deps, const char *ns, const char *name,
                       const struct sbx_sandbox_view *sb,
                       const char *pod_name, int64_t threshold_millis, int64_t now, struct kube_error *err) {
    char path[1024], desc[160], t[48], note[256], msg[512];
    struct kube_error rerr = {0};
    snprintf(path, sizeof(path), "/apis/metrics.k8s.io/v1beta1/namespaces/%s/pods/%s", ns, pod_name);
    cJSON *pm = NULL;
    long st = kube_get(deps->client, path, &pm, &rerr);
    struct sbx_activity a;
    int readable = st == 200 && pm && sbx_activity_read(pm, &a, rerr.message, sizeof(rerr.message)) == 0;
    cJSON_Delete(pm);
    if (!readable) {
        /* No metrics-server, no sample yet for a new pod, no RBAC: the deadline stands. */
        LOGW("msg=\"activity unknown at the idle deadline; acting on it\" sandbox=%s/%s status=%ld error=\"%s\"", ns, name,
             st, rerr.message);
        snprintf(msg, sizeof(msg), "the class counts activity (spec.activity.cpu) but the pod's metrics could not be read "
                 "(metrics.k8s.io, HTTP %ld: %.200s); acting on the idle deadline", st, rerr.message);
        sbx_event_record(deps, sb, "Warning", "ActivityUnknown", msg);
        return 0;
    }
    sbx_activity_describe(&a, threshold_millis, desc, sizeof(desc));
    if (!sbx_activity_busy(&a, threshold_millis, now, ACTIVITY_MAX_AGE_MS)) {
        LOGD("msg=\"idle at its deadline\" sandbox=%s/%s %s", ns, name, desc);
        return 0;
    }
    const char *rv = sb->meta.resource_version;
    if (!rv) { kube_error_set(err, "sandbox %s/%s has no resourceVersion", ns, name); return -1; }
    kj_time_format(now, t, sizeof(t));
    snprintf(note, sizeof(note), "%s %s", t, desc);
    cJSON *patch = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(patch, "metadata");
    cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
    if (!ann || !cJSON_AddStringToObject(md, "resourceVersion", rv) || !cJSON_AddStringToObject(ann, SBX_ANN_LAST_USED, t) ||
        !cJSON_AddStringToObject(ann, SBX_ANN_LAST_ACTIVITY, note)) {
        cJSON_Delete(patch);
        kube_error_oom(err);
        return -1;
    }
    snprintf(path, sizeof(path), "/apis/%s/v1alpha1/namespaces/%s/%s/%s", SBX_GROUP, ns, SBX_PLURAL, name);
    st = kube_merge_patch(deps->client, path, patch, NULL, err);
    cJSON_Delete(patch);
    if (st == 409 || st == 404) return SBX_STALE;   /* changed since the decision: decide again */
    if (st != 200) return -1;
    snprintf(msg, sizeof(msg), "busy at its idle deadline (%s, metrics.k8s.io): last-used-at set to %s, a new idle "
             "period begins", desc, t);
    sbx_event_record(deps, sb, "Normal", SBX_REASON_ACTIVE, msg);
    LOGI("msg=\"busy at the idle deadline: kept\" sandbox=%s/%s %s", ns, name, desc);
    return SBX_ACTIVE;
}
