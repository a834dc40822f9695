/* sandbox/model/objects.c — pure helpers on API objects (see objects.h). */
#include "sandbox/model/objects.h"

#include <stdio.h>
#include <string.h>

#include "kube/kjson.h"
#include "sandbox/model/builders.h"

void sbx_core_path(char *out, size_t n, const char *ns, const char *resource) {
    const char *api = strcmp(resource, "networkpolicies") == 0 ? "/apis/networking.k8s.io/v1" : "/api/v1";
    if (ns) snprintf(out, n, "%s/namespaces/%s/%s", api, ns, resource);
    else snprintf(out, n, "%s/%s", api, resource);
}

void sbx_object_path(char *out, size_t n, const char *ns, const char *resource, const char *name) {
    sbx_core_path(out, n, ns, resource);
    size_t used = strlen(out);
    if (used < n) snprintf(out + used, n - used, "/%s", name);
}

void sbx_add_time_ms(cJSON *o, const char *k, int64_t ms) {
    char t[40];
    if (ms <= 0) return;
    kj_time_format(ms, t, sizeof(t));
    cJSON_AddStringToObject(o, k, t);
}

/* A string member of a JSON object, or NULL (absent, or not a string). */
static const char *str_member(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void sbx_meta_read(const cJSON *obj, struct sbx_meta *m) {
    memset(m, 0, sizeof(*m));
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(md)) return;
    m->namespace_ = str_member(md, "namespace");
    m->name = str_member(md, "name");
    m->uid = str_member(md, "uid");
    m->resource_version = str_member(md, "resourceVersion");
    m->generation = kj_int(md, "generation", 0);
    const char *ts = m->created_text = str_member(md, "creationTimestamp");
    if (!ts || kj_time_parse(ts, &m->created_ms) != 0) m->created_ms = 0;
    m->deletion_text = str_member(md, "deletionTimestamp");
    m->deleting = m->deletion_text != NULL;
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    m->labels = cJSON_IsObject(labels) ? labels : NULL;
    m->annotations = cJSON_IsObject(ann) ? ann : NULL;
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(md, "ownerReferences"), *r;
    m->owner_refs = cJSON_IsArray(refs) ? refs : NULL;
    cJSON_ArrayForEach(r, m->owner_refs) {
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller"))) continue;
        m->controller_uid = str_member(r, "uid");
        break;   /* one controller at most */
    }
    const cJSON *owner = sbx_sandbox_controller_ref(obj);
    m->sandbox_owner = str_member(owner, "name");
    m->sandbox_owner_uid = str_member(owner, "uid");
}

const char *sbx_meta_annotation(const struct sbx_meta *m, const char *key) {
    return m ? str_member(m->annotations, key) : NULL;
}

const char *sbx_meta_label(const struct sbx_meta *m, const char *key) {
    return m ? str_member(m->labels, key) : NULL;
}
