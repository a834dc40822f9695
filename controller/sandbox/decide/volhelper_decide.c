/* sandbox/decide/volhelper_decide.c — is this pod a volume helper holding the workspace (see
 * volhelper_decide.h). */
#include "sandbox/decide/volhelper_decide.h"

#include <stdio.h>
#include <string.h>

int sbx_volume_helper_name(const char *uid, char *out, size_t n) {
    int w = snprintf(out, n, SBX_VOLUME_HELPER_PREFIX "%s", uid ? uid : "");
    return w < 0 || (size_t)w >= n || !uid || !*uid ? -1 : 0;
}

static const char *str_at(const cJSON *obj, const char *a, const char *b) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(obj, a);
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, b));
}

int sbx_volume_helper_holds(const cJSON *pod, const char *uid) {
    if (!pod || !uid || !*uid) return 0;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    const char *component = str_at(meta, "labels", "app.kubernetes.io/component");
    if (!component || strcmp(component, SBX_VOLUME_HELPER_COMPONENT) != 0) return 0;
    int owned = 0;
    const cJSON *ref;
    cJSON_ArrayForEach(ref, cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences")) {
        const char *ruid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "uid"));
        if (ruid && !strcmp(ruid, uid)) owned = 1;
    }
    if (!owned) return 0;
    const char *phase = str_at(pod, "status", "phase");
    return !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
}
