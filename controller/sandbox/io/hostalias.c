/* sandbox/io/hostalias.c — reads the Services a SandboxClass's spec.hostAliases names and
 * builds the pod's hostAliases from their cluster IPs (see hostalias.h). One GET a Service
 * a pod creation: a creation is rare beside the passes, and the address is then the API
 * server's word of the moment, never a cache's. */
#include "sandbox/io/hostalias.h"

#include <stdio.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/rest.h"
#include "sandbox/decide/hostalias_decide.h"

int sbx_host_aliases_resolve(const struct sbx_deps *deps, const cJSON *aliases, cJSON **out, struct kube_error *err) {
    const char *ips[SBX_HOST_ALIASES_MAX] = {0};
    cJSON *svcs[SBX_HOST_ALIASES_MAX] = {0};
    const cJSON *e;
    int i = 0, rc = -1;

    *out = NULL;
    if (!aliases || cJSON_GetArraySize(aliases) == 0) return 0;
    if (cJSON_GetArraySize(aliases) > SBX_HOST_ALIASES_MAX)
        return kube_error_set(err, "spec.hostAliases: at most %d entries", SBX_HOST_ALIASES_MAX);
    cJSON_ArrayForEach(e, aliases) {
        const cJSON *svc = cJSON_GetObjectItemCaseSensitive(e, "service");
        if (cJSON_IsObject(svc)) {
            const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(svc, "namespace"));
            const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(svc, "name"));
            char path[512];
            struct kube_error rerr;
            snprintf(path, sizeof path, "/api/v1/namespaces/%s/services/%s", ns ? ns : "", name ? name : "");
            long st = kube_get(deps->client, path, &svcs[i], &rerr);
            if (st != 200) {
                kube_error_set(err, "spec.hostAliases[%d]: cannot read Service %s/%s: %s%s", i, ns, name,
                       st == 404 ? "not found" : rerr.message,
                       st == 403 ? " (the controller needs get on services in that namespace: the chart's "
                                   "sandboxClass.serverNamespaces grants it)" : "");
                goto out;
            }
            ips[i] = sbx_service_cluster_ip(svcs[i]);
        }
        i++;
    }
    char why[KUBE_ERR_MAX];
    *out = sbx_host_aliases_build(aliases, ips, why, sizeof why);
    if (!*out) kube_error_set(err, "%s", why);
    rc = *out ? 0 : -1;
out:
    for (int j = 0; j < SBX_HOST_ALIASES_MAX; j++) cJSON_Delete(svcs[j]);
    return rc;
}
