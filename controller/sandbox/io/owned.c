/* sandbox/io/owned.c — preconditioned deletes and patches of owned objects (see owned.h). */
#include "sandbox/io/owned.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/errfmt.h"
#include "sandbox/model/objects.h"

int sbx_delete_owned(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                     const char *uid, struct kube_error *err) {
    char path[1024];
    sbx_object_path(path, sizeof(path), ns, resource, name);
    long st = kube_delete(deps->client, path, uid, err);
    if (st == 200 || st == 202 || st == 404 || st == 409) {
        sbx_count(&deps->counters->deletes);
        return 0;
    }
    return -1;
}

/* A merge patch {metadata: {uid}} (uid NULL: ""), its metadata in *md; NULL on ENOMEM. */
static cJSON *uid_patch(const char *uid, cJSON **md) {
    cJSON *patch = cJSON_CreateObject();
    if (!patch || !(*md = cJSON_AddObjectToObject(patch, "metadata")) ||
        !cJSON_AddStringToObject(*md, "uid", uid ? uid : "")) {
        cJSON_Delete(patch);
        return NULL;
    }
    return patch;
}

/* Send patch (deleted here) to ns/resource/name when ok, else report ENOMEM. 0 patched,
 * 1 gone or replaced (404, 409), -1. */
static int send_owned_patch(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                            cJSON *patch, int ok, struct kube_error *err) {
    char path[1024];
    if (!ok) {
        cJSON_Delete(patch);
        kube_error_oom(err);
        return -1;
    }
    sbx_object_path(path, sizeof(path), ns, resource, name);
    long st = kube_merge_patch(deps->client, path, patch, NULL, err);
    cJSON_Delete(patch);
    return st == 200 ? 0 : st == 404 || st == 409 ? 1 : -1;
}

int sbx_patch_owned_map(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                        const char *uid, const char *map, size_t n, const char *const *keys,
                        const char *const *values, struct kube_error *err) {
    cJSON *md = NULL, *m = NULL, *patch = uid_patch(uid, &md);
    int ok = patch && (m = cJSON_AddObjectToObject(md, map));
    for (size_t i = 0; ok && i < n; i++) ok = cJSON_AddStringToObject(m, keys[i], values[i]) != NULL;
    return send_owned_patch(deps, ns, resource, name, patch, ok, err);
}

int sbx_patch_owned_spec(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                         const char *uid, cJSON *spec, struct kube_error *err) {
    cJSON *md, *patch = uid_patch(uid, &md);
    int ok = patch && spec && cJSON_AddItemToObject(patch, "spec", spec);
    if (!ok) cJSON_Delete(spec);   /* not in the patch: ours to free */
    return send_owned_patch(deps, ns, resource, name, patch, ok, err);
}

long sbx_delete_preconditioned(const struct sbx_deps *deps, const char *path, const char *uid, const char *rv,
                               struct kube_error *err) {
    cJSON *opts = cJSON_CreateObject(), *pre;
    char *body = NULL;
    if (opts && cJSON_AddStringToObject(opts, "kind", "DeleteOptions") &&
        cJSON_AddStringToObject(opts, "apiVersion", "v1") &&
        cJSON_AddStringToObject(opts, "propagationPolicy", "Background") &&
        (pre = cJSON_AddObjectToObject(opts, "preconditions")) && cJSON_AddStringToObject(pre, "uid", uid) &&
        (!rv || cJSON_AddStringToObject(pre, "resourceVersion", rv)))
        body = cJSON_PrintUnformatted(opts);
    cJSON_Delete(opts);
    if (!body) { kube_error_oom(err); return -1; }
    struct kube_response resp;
    int rc = kube_request(deps->client, "DELETE", path, "application/json", body, strlen(body), &resp);
    free(body);
    long st = rc < 0 ? -1 : resp.status;
    if (rc < 0 || (st >= 300 && st != 404 && st != 409)) kube_error_from_response(&resp, "DELETE", path, err);
    kube_response_free(&resp);
    return st;
}
