/* sandbox/objects.c — pure helpers on API objects (see objects.h). */
#include "sandbox/objects.h"

#include <stdio.h>
#include <string.h>

#include "kube/kjson.h"

void sbx_core_path(char *out, size_t n, const char *ns, const char *resource) {
    const char *api = strcmp(resource, "networkpolicies") == 0 ? "/apis/networking.k8s.io/v1" : "/api/v1";
    if (ns) snprintf(out, n, "%s/namespaces/%s/%s", api, ns, resource);
    else snprintf(out, n, "%s/%s", api, resource);
}

int64_t sbx_time_at(const cJSON *obj, const char *path) {
    int64_t ms;
    const char *s = kj_str(obj, path);
    return s && kj_time_parse(s, &ms) == 0 ? ms : 0;
}

void sbx_add_time_ms(cJSON *o, const char *k, int64_t ms) {
    char t[40];
    if (ms <= 0) return;
    kj_time_format(ms, t, sizeof(t));
    cJSON_AddStringToObject(o, k, t);
}

const cJSON *sbx_ready_condition(const cJSON *obj) {
    const cJSON *c;
    cJSON_ArrayForEach(c, kj_path(obj, "status.conditions")) {
        const char *type = kj_str(c, "type");
        if (type && !strcmp(type, "Ready")) return c;
    }
    return NULL;
}
