/* sandbox/io/volhelper.c — asks the API server whether a volume helper pod holds a
 * Sandbox's workspace (see volhelper.h). */
#include "sandbox/io/volhelper.h"

#include <stdio.h>

#include "base/errfmt.h"
#include "kube/rest.h"
#include "sandbox/decide/volhelper_decide.h"

int sbx_volume_helper_busy(const struct sbx_deps *deps, const char *ns, const char *uid, struct kube_error *err) {
    char name[128], path[512];
    if (sbx_volume_helper_name(uid, name, sizeof name) < 0) return 0;
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    cJSON *pod = NULL;
    struct kube_error got;
    long st = kube_get(deps->client, path, &pod, &got);
    if (st == 404) return 0;   /* no helper: the usual answer, no error of the pass's */
    if (st != 200) {
        cJSON_Delete(pod);
        if (err) *err = got;
        return -1;
    }
    int busy = sbx_volume_helper_holds(pod, uid);
    cJSON_Delete(pod);
    return busy;
}
