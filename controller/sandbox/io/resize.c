/* sandbox/io/resize.c — warm-idle's I/O (see resize.h): the PATCH of a pod's resize
 * subresource that moves the sandbox container's CPU down to its class's floor or back up,
 * memory untouched. The kubelet then applies it to the running container (no restart:
 * the CPU resizePolicy is NotRequired by default) or reports why not in the pod's
 * PodResizePending condition, which the next pass reads (reconcile_observe.c). */
#include "sandbox/io/resize.h"

#include <stdio.h>
#include <string.h>

#include "base/errfmt.h"
#include "base/log.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "sandbox/model/objects.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/spec.h"

/* {"metadata":{uid, resourceVersion}, "spec":{"containers":[{name, resources:{requests:
 * {cpu}, limits:{cpu}}}]}}, or NULL (ENOMEM, or a quantity that cannot be written). */
static cJSON *resize_patch(const char *uid, const char *rv, int64_t request_millis, int64_t limit_millis) {
    char req[32], lim[32];
    if (qty_format_cpu(request_millis, req, sizeof(req)) < 0 || qty_format_cpu(limit_millis, lim, sizeof(lim)) < 0)
        return NULL;
    cJSON *p = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(p, "metadata");
    cJSON *spec = cJSON_AddObjectToObject(p, "spec");
    cJSON *list = spec ? cJSON_AddArrayToObject(spec, "containers") : NULL, *c = cJSON_CreateObject();
    if (!md || !list || !c || !cJSON_AddItemToArray(list, c)) {
        cJSON_Delete(c);
        cJSON_Delete(p);
        return NULL;
    }
    cJSON *res = cJSON_AddObjectToObject(c, "resources");
    cJSON *rq = res ? cJSON_AddObjectToObject(res, "requests") : NULL;
    cJSON *lm = res ? cJSON_AddObjectToObject(res, "limits") : NULL;
    if (!cJSON_AddStringToObject(md, "uid", uid) || !cJSON_AddStringToObject(md, "resourceVersion", rv) ||
        !cJSON_AddStringToObject(c, "name", SBX_CONTAINER_NAME) || !rq || !lm ||
        !cJSON_AddStringToObject(rq, "cpu", req) || !cJSON_AddStringToObject(lm, "cpu", lim)) {
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}

/* After a 404 on the resize subresource: is pod ns/name (uid) still there? Then the 404
 * was the subresource's (a cluster older than 1.33), not the pod's. A failed GET says no:
 * the pass runs again and finds out. */
static int pod_still_there(const struct sbx_deps *deps, const char *ns, const char *name, const char *uid) {
    char path[1024];
    cJSON *pod = NULL;
    sbx_object_path(path, sizeof(path), ns, "pods", name);
    long st = kube_get(deps->client, path, &pod, NULL);
    struct sbx_meta m;
    sbx_meta_read(st == 200 ? pod : NULL, &m);
    const char *got = m.uid;
    int there = got && !strcmp(got, uid);
    cJSON_Delete(pod);
    return there;
}

int sbx_pod_resize_cpu(const struct sbx_deps *deps, const char *ns, const char *name, const char *uid,
                       const char *resource_version, int64_t request_millis, int64_t limit_millis, struct kube_error *err) {
    char path[1024];
    if (!uid || !resource_version) {
        kube_error_set(err, "pod %s/%s: no uid or resourceVersion to resize it on", ns, name);
        return -1;
    }
    cJSON *patch = resize_patch(uid, resource_version, request_millis, limit_millis);
    if (!patch) {
        kube_error_oom(err);
        return -1;
    }
    sbx_core_path(path, sizeof(path), ns, "pods");
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s/resize", name);
    long st = kube_strategic_patch(deps->client, path, patch, NULL, err);
    cJSON_Delete(patch);
    if (st == 409) return SBX_STALE;
    if (st == 404) return pod_still_there(deps, ns, name, uid) ? SBX_RESIZE_REFUSED : SBX_STALE;
    if (st == 400 || st == 403 || st == 405 || st == 422) return SBX_RESIZE_REFUSED;
    if (st != 200) return -1;
    LOGI("msg=\"pod resized\" pod=%s/%s cpu_request_m=%lld cpu_limit_m=%lld", ns, name, (long long)request_millis,
         (long long)limit_millis);
    return 0;
}
