/* sandbox/decide/shapes.c — what the caches keep of the owned kinds other than Pods (see
 * shapes.h; a Pod's shape is reconcile_observe.c's, a StorageClass's storage.c's). */
#include "sandbox/decide/shapes.h"

#include "kube/kjson.h"

/* Move src[key] (if there) into a new object path under dst ("spec" → "resources" → ...). */
static void carry(cJSON *dst, const cJSON *src, const char *const *path, int depth) {
    const cJSON *v = src;
    for (int i = 0; i < depth && v; i++) v = cJSON_GetObjectItemCaseSensitive(v, path[i]);
    if (!v) return;
    cJSON *at = dst;
    for (int i = 0; i < depth - 1; i++) {
        cJSON *next = cJSON_GetObjectItemCaseSensitive(at, path[i]);
        if (!next) next = cJSON_AddObjectToObject(at, path[i]);
        if (!next) return;
        at = next;
    }
    cJSON_AddItemToObject(at, path[depth - 1], cJSON_Duplicate(v, 1));
}

/* Keep only metadata, spec.storageClassName, the storage request, status.phase and the
 * storage capacity of a PVC. */
void sbx_pvc_shrink(cJSON *pvc) {
    static const char *const keep[][4] = {
        {"spec", "storageClassName"}, {"spec", "resources", "requests", "storage"},
        {"status", "phase"}, {"status", "capacity", "storage"},
    };
    static const int depth[] = {2, 4, 2, 3};
    kj_strip_metadata(pvc);
    cJSON *slim = cJSON_CreateObject();
    if (!slim) return;
    for (size_t i = 0; i < sizeof(depth) / sizeof(depth[0]); i++) carry(slim, pvc, keep[i], depth[i]);
    cJSON_DeleteItemFromObjectCaseSensitive(pvc, "spec");
    cJSON_DeleteItemFromObjectCaseSensitive(pvc, "status");
    cJSON *item;
    while ((item = slim->child)) {
        cJSON_DetachItemViaPointer(slim, item);
        cJSON_AddItemToObject(pvc, item->string, item);
    }
    cJSON_Delete(slim);
}

/* Keep only metadata and what the controller compares or reports of a Service: its
 * ports, selector and clusterIP. */
void sbx_service_shrink(cJSON *svc) {
    static const char *const keep[][2] = {{"spec", "ports"}, {"spec", "selector"}, {"spec", "clusterIP"}};
    kj_strip_metadata(svc);
    cJSON *slim = cJSON_CreateObject();
    if (!slim) return;
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) carry(slim, svc, keep[i], 2);
    cJSON_DeleteItemFromObjectCaseSensitive(svc, "spec");
    cJSON_DeleteItemFromObjectCaseSensitive(svc, "status");
    cJSON *item;
    while ((item = slim->child)) {
        cJSON_DetachItemViaPointer(slim, item);
        cJSON_AddItemToObject(svc, item->string, item);
    }
    cJSON_Delete(slim);
}
