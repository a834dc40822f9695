/* sandbox/io/children.c — the objects a Sandbox owns: their state, lookup and creation (see
 * children.h). */
#include "sandbox/io/children.h"

#include <stdio.h>
#include <string.h>

#include "kube/kjson.h"
#include "kube/rest.h"
#include "sandbox/io/shard.h"
#include "sandbox/model/spec.h"

enum sbx_object_state sbx_child_state(const cJSON *obj, const struct sbx_meta *m, const char *uid) {
    if (!obj) return SBX_OBJ_ABSENT;
    if (!m->controller_uid || strcmp(m->controller_uid, uid) != 0) return SBX_OBJ_FOREIGN;
    return m->deleting ? SBX_OBJ_TERMINATING : SBX_OBJ_PRESENT;
}

enum sbx_object_state sbx_child_state_of(const cJSON *obj, const char *uid) {
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    return sbx_child_state(obj, &m, uid);
}

cJSON *sbx_cached_or_read(const struct sbx_deps *deps, struct informer *inf, const char *ns, const char *api,
                          const char *resource, const char *name) {
    char key[512], path[1024];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    cJSON *obj = informer_get(inf, key), *list = NULL;
    if (obj || !deps->shard_label) return obj;
    snprintf(path, sizeof(path), "%s/namespaces/%s/%s?fieldSelector=metadata.name%%3D%s", api, ns, resource, name);
    if (kube_get(deps->client, path, &list, NULL) == 200) {
        const cJSON *items = kj_path(list, "items");
        if (cJSON_IsArray(items) && cJSON_GetArraySize(items) == 1) obj = cJSON_DetachItemFromArray((cJSON *)items, 0);
    }
    cJSON_Delete(list);
    return obj;
}

int sbx_child_create(const struct sbx_deps *deps, const char *ns, const char *resource, enum sbx_expect_kind kind,
                     cJSON *obj, const char *name, const char *uid, struct kube_error *err) {
    char path[1024];
    cJSON *made = NULL;
    sbx_core_path(path, sizeof(path), ns, resource);
    long st = kube_create(deps->client, path, obj, &made, err);
    if (st == 201 || st == 200) {
        struct sbx_meta mm;
        sbx_meta_read(made, &mm);
        if (mm.uid) sbx_records_expect(deps->records, uid, kind, mm.uid, kj_now_ms() + EXPECT_MS);
        cJSON_Delete(made);
        sbx_count(&deps->counters->creates);
        return 0;
    }
    cJSON_Delete(made);
    if (st != 409) return -1;
    /* Already exists: ours (the cache is behind) or a stranger's? */
    cJSON *existing = NULL;
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
    st = kube_get(deps->client, path, &existing, err);
    if (st != 200) { cJSON_Delete(existing); return -1; }
    enum sbx_object_state s = sbx_child_state_of(existing, uid);
    /* Ours but not in the cache: sharded, and made without this shard's label (by a
     * replica not sharded yet): labelled now, the watch then shows it. */
    int rc = s == SBX_OBJ_FOREIGN ? 1 : 0;
    if (!rc && sbx_shard_adopt_existing(deps, resource, existing, err) < 0) rc = -1;
    cJSON_Delete(existing);
    return rc;
}

const char *sbx_pod_built_class(const struct sbx_meta *pod, const struct sbx_sandbox_view *sb) {
    const char *c = sbx_meta_annotation(pod, SBX_ANN_CLASS);
    return c || !pod ? c : sb->status_class_name;
}
