/* sandbox/io/storage.c — the StorageClass cache's shape and answers (see storage.h). */
#include "sandbox/io/storage.h"

#include <stdio.h>
#include <string.h>

#include "kube/kjson.h"
#include "sandbox/model/objects.h"
#include "sandbox/model/workspacecopy.h"

void sbx_storage_class_shrink(cJSON *sc) {
    cJSON *keep_md = cJSON_CreateObject();
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(sc, "metadata");
    const char *keys[] = {"name", "resourceVersion", "uid", "annotations"};
    for (size_t i = 0; keep_md && i < sizeof(keys) / sizeof(keys[0]); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, keys[i]);
        if (v) cJSON_AddItemToObject(keep_md, keys[i], cJSON_Duplicate(v, 1));
    }
    cJSON *mode = cJSON_DetachItemFromObjectCaseSensitive(sc, "volumeBindingMode");
    cJSON *expand = cJSON_DetachItemFromObjectCaseSensitive(sc, "allowVolumeExpansion");
    cJSON *child;
    while ((child = sc->child)) cJSON_Delete(cJSON_DetachItemViaPointer(sc, child));
    if (keep_md) cJSON_AddItemToObject(sc, "metadata", keep_md);
    if (mode) cJSON_AddItemToObject(sc, "volumeBindingMode", mode);
    if (expand) cJSON_AddItemToObject(sc, "allowVolumeExpansion", expand);
    kj_strip_metadata(sc);
}

struct default_class_ctx { char name[256]; int found; };

/* The class marked default (the GA annotation, or the beta one). */
static int find_default_class(void *ud, const char *key, const cJSON *sc) {
    struct default_class_ctx *c = ud;
    struct sbx_meta m;
    sbx_meta_read(sc, &m);
    const char *ga = sbx_meta_annotation(&m, "storageclass.kubernetes.io/is-default-class");
    const char *beta = sbx_meta_annotation(&m, "storageclass.beta.kubernetes.io/is-default-class");
    if ((ga && !strcmp(ga, "true")) || (beta && !strcmp(beta, "true"))) {
        snprintf(c->name, sizeof(c->name), "%s", key);
        c->found = 1;
        return 1;
    }
    return 0;
}

enum sbx_binding sbx_storage_class_binding(const struct sbx_deps *deps, const char *name, char *resolved, size_t len) {
    struct default_class_ctx dc = {.found = 0};
    if (!name) {
        informer_foreach(deps->storage_classes, find_default_class, &dc);
        if (!dc.found) return SBX_BINDING_UNKNOWN;
        name = dc.name;
    }
    if (resolved && len) snprintf(resolved, len, "%s", name);
    cJSON *sc = informer_get(deps->storage_classes, name);
    if (!sc) return SBX_BINDING_UNKNOWN;
    const char *mode = kj_str(sc, "volumeBindingMode");
    enum sbx_binding b = mode && !strcmp(mode, "WaitForFirstConsumer") ? SBX_BINDING_LATE : SBX_BINDING_AT_ONCE;
    cJSON_Delete(sc);
    return b;
}

int sbx_storage_class_binds_late(const struct sbx_deps *deps, const char *name, char *resolved, size_t len) {
    return sbx_storage_class_binding(deps, name, resolved, len) == SBX_BINDING_LATE;
}

int sbx_storage_class_expands(const struct sbx_deps *deps, const char *name) {
    if (!name) return 0;
    cJSON *sc = informer_get(deps->storage_classes, name);
    int yes = kj_bool(sc, "allowVolumeExpansion", 0);
    cJSON_Delete(sc);
    return yes;
}

int sbx_storage_class_clones_by_name(const struct sbx_deps *deps, const char *name) {
    char resolved[256] = "";
    if (!name) {
        sbx_storage_class_binding(deps, NULL, resolved, sizeof(resolved));
        if (!resolved[0]) return 0;
        name = resolved;
    }
    cJSON *sc = informer_get(deps->storage_classes, name);
    int yes = sbx_storage_class_clones(sc);
    cJSON_Delete(sc);
    return yes;
}
