/* sandbox/owned.c — preconditioned deletes and patches of owned objects (see owned.h). */
#include "sandbox/owned.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sandbox/objects.h"

/* ns/resource/name as an API path. */
static void object_path(char *out, size_t n, const char *ns, const char *resource, const char *name) {
    sbx_core_path(out, n, ns, resource);
    snprintf(out + strlen(out), n - strlen(out), "/%s", name);
}

int sbx_delete_owned(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                     const char *uid, char *err, size_t errlen) {
    char path[1024];
    object_path(path, sizeof(path), ns, resource, name);
    long st = kube_delete(deps->client, path, uid, err, errlen);
    if (st == 200 || st == 202 || st == 404 || st == 409) {
        sbx_count(&deps->counters->deletes);
        return 0;
    }
    return -1;
}

int sbx_patch_owned_map(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                        const char *uid, const char *map, size_t n, const char *const *keys,
                        const char *const *values, char *err, size_t errlen) {
    char path[1024];
    cJSON *patch = cJSON_CreateObject(), *md, *m;
    int ok = patch && (md = cJSON_AddObjectToObject(patch, "metadata")) && cJSON_AddStringToObject(md, "uid", uid) &&
             (m = cJSON_AddObjectToObject(md, map));
    for (size_t i = 0; ok && i < n; i++) ok = cJSON_AddStringToObject(m, keys[i], values[i]) != NULL;
    if (!ok) {
        cJSON_Delete(patch);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    object_path(path, sizeof(path), ns, resource, name);
    long st = kube_merge_patch(deps->client, path, patch, NULL, err, errlen);
    cJSON_Delete(patch);
    return st == 200 ? 0 : st == 404 || st == 409 ? 1 : -1;
}

int sbx_patch_owned_spec(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                         const char *uid, cJSON *spec, char *err, size_t errlen) {
    char path[1024];
    cJSON *patch = cJSON_CreateObject(), *md;
    if (!spec || !patch || !cJSON_AddItemToObject(patch, "spec", spec)) {
        cJSON_Delete(spec);
        cJSON_Delete(patch);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!(md = cJSON_AddObjectToObject(patch, "metadata")) || !cJSON_AddStringToObject(md, "uid", uid ? uid : "")) {
        cJSON_Delete(patch);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    object_path(path, sizeof(path), ns, resource, name);
    long st = kube_merge_patch(deps->client, path, patch, NULL, err, errlen);
    cJSON_Delete(patch);
    return st == 200 ? 0 : st == 404 || st == 409 ? 1 : -1;
}

long sbx_delete_preconditioned(const struct sbx_deps *deps, const char *path, const char *uid, const char *rv,
                               char *err, size_t errlen) {
    cJSON *opts = cJSON_CreateObject(), *pre;
    char *body = NULL;
    if (opts && cJSON_AddStringToObject(opts, "kind", "DeleteOptions") &&
        cJSON_AddStringToObject(opts, "apiVersion", "v1") &&
        cJSON_AddStringToObject(opts, "propagationPolicy", "Background") &&
        (pre = cJSON_AddObjectToObject(opts, "preconditions")) && cJSON_AddStringToObject(pre, "uid", uid) &&
        (!rv || cJSON_AddStringToObject(pre, "resourceVersion", rv)))
        body = cJSON_PrintUnformatted(opts);
    cJSON_Delete(opts);
    if (!body) { snprintf(err, errlen, "out of memory"); return -1; }
    struct kube_response resp;
    int rc = kube_request(deps->client, "DELETE", path, "application/json", body, strlen(body), &resp);
    free(body);
    long st = rc < 0 ? -1 : resp.status;
    if (rc < 0) snprintf(err, errlen, "DELETE %s: %s", path, resp.err);
    else if (st >= 300 && st != 404 && st != 409) {
        char msg[KUBE_ERR_MAX];
        kube_response_message(&resp, msg, sizeof(msg));
        snprintf(err, errlen, "DELETE %s: %s", path, msg);
    }
    kube_response_free(&resp);
    return st;
}
