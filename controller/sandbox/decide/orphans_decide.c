/* sandbox/decide/orphans_decide.c — objects with the controller's labels and no owner (see
 * orphans_decide.h). Pure. */
#include "sandbox/decide/orphans_decide.h"

#include "sandbox/model/objects.h"
#include "sandbox/model/spec.h"
#include "sandbox/decide/warm_decide.h"

#include <string.h>

int sbx_orphan_ownerless(const cJSON *obj) {
    struct sbx_meta m;
    const cJSON *md, *refs;
    const char *by, *name;

    if (!cJSON_IsObject(obj)) return 0;
    sbx_meta_read(obj, &m);
    if (!m.namespace_ || !m.name || !m.uid || m.deleting) return 0;
    by = sbx_meta_label(&m, SBX_LABEL_MANAGED_BY);
    name = sbx_meta_label(&m, SBX_LABEL_NAME);
    if (!by || strcmp(by, SBX_MANAGED_BY) != 0 || !name || !*name) return 0;
    if (sbx_meta_label(&m, SBX_LABEL_WARM_POOL)) return 0;
    md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    refs = cJSON_GetObjectItemCaseSensitive(md, "ownerReferences");
    return !refs || cJSON_IsNull(refs) || (cJSON_IsArray(refs) && cJSON_GetArraySize(refs) == 0);
}
