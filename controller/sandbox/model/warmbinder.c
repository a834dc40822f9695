/* sandbox/model/warmbinder.c — the binder pod of a pending pool claim of a WaitForFirstConsumer
 * class, and the spread preference of binders (see warmbinder.h). No I/O. */
#include "sandbox/model/warmbinder.h"

#include <stdio.h>
#include <string.h>

#include "sandbox/model/builders.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/spec.h"

/* The binder's uid and gid: "nobody", a non-root uid every image accepts (the binder
 * writes nothing, so the volume's ownership is left as the provisioner made it). */
#define BINDER_UID 65534

void sbx_binder_name(const char *claim, char *out, size_t outlen) {
    snprintf(out, outlen, "%.200s-binder", claim ? claim : "");
}

size_t sbx_binder_crowded_nodes(const char *const *node, size_t n, const char **out, size_t max) {
    size_t most = 0, k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!node[i] || !*node[i]) continue;
        size_t count = 0;
        for (size_t j = 0; j < n; j++)
            if (node[j] && !strcmp(node[j], node[i])) count++;
        if (count > most) most = count;
    }
    for (size_t i = 0; most && i < n && k < max; i++) {
        if (!node[i] || !*node[i]) continue;
        size_t count = 0, seen = 0;
        for (size_t j = 0; j < n; j++)
            if (node[j] && !strcmp(node[j], node[i])) count++;
        for (size_t j = 0; j < k; j++)
            if (!strcmp(out[j], node[i])) seen = 1;
        if (count == most && !seen) out[k++] = node[i];
    }
    return k;
}

/* requests and limits as the sandbox pod's (so the scheduler places the volume where such a
 * pod fits); the ephemeral-storage request written out (the sandbox's is its limit by
 * Kubernetes' default). 0 or -1. */
static int add_resources(cJSON *ctr, const struct sbx_spec *s) {
    char eph[32];
    if (sbx_add_resources(ctr, s) < 0) return -1;
    if (s->ephemeral_bytes <= 0) return 0;
    cJSON *req = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ctr, "resources"), "requests");
    return qty_format_memory(s->ephemeral_bytes, eph, sizeof eph) == 0 && cJSON_AddStringToObject(req, "ephemeral-storage", eph)
               ? 0 : -1;
}

/* spec.affinity: the class's, with one more preferred node term (weight 100) that avoids
 * the crowded nodes. 0 or -1. */
static int add_affinity(cJSON *spec, const struct sbx_spec *s, const char *const *avoid, size_t navoid) {
    if (!s->affinity && !navoid) return 0;
    cJSON *aff = s->affinity ? cJSON_Duplicate(s->affinity, 1) : cJSON_CreateObject();
    if (!aff || !cJSON_AddItemToObject(spec, "affinity", aff)) { cJSON_Delete(aff); return -1; }
    if (!navoid) return 0;
    cJSON *na = cJSON_GetObjectItemCaseSensitive(aff, "nodeAffinity");
    if (!na && !(na = cJSON_AddObjectToObject(aff, "nodeAffinity"))) return -1;
    cJSON *pref = cJSON_GetObjectItemCaseSensitive(na, "preferredDuringSchedulingIgnoredDuringExecution");
    if (!cJSON_IsArray(pref)) {
        cJSON_DeleteItemFromObjectCaseSensitive(na, "preferredDuringSchedulingIgnoredDuringExecution");
        if (!(pref = cJSON_AddArrayToObject(na, "preferredDuringSchedulingIgnoredDuringExecution"))) return -1;
    }
    cJSON *term = cJSON_CreateObject(), *p, *fields, *f;
    if (!term || !cJSON_AddItemToArray(pref, term)) { cJSON_Delete(term); return -1; }
    if (!cJSON_AddNumberToObject(term, "weight", 100) || !(p = cJSON_AddObjectToObject(term, "preference")) ||
        !(fields = cJSON_AddArrayToObject(p, "matchFields")) || !(f = cJSON_CreateObject()) ||
        !cJSON_AddItemToArray(fields, f) || !cJSON_AddStringToObject(f, "key", "metadata.name") ||
        !cJSON_AddStringToObject(f, "operator", "NotIn") ||
        !cJSON_AddItemToObject(f, "values", cJSON_CreateStringArray(avoid, (int)navoid)))
        return -1;
    return 0;
}

cJSON *sbx_build_binder(const char *ns, const char *pool_key, const char *claim, const char *claim_uid,
                        const struct sbx_spec *s, const char *const *avoid, size_t navoid) {
    if (!ns || !pool_key || !claim || !claim_uid || !s || !s->image || navoid > SBX_BINDER_AVOID_MAX) return NULL;
    char name[256];
    sbx_binder_name(claim, name, sizeof(name));
    cJSON *pod = cJSON_CreateObject(), *md, *labels, *ann, *refs, *ref, *spec, *sc, *ctrs, *ctr, *vols;
    static const char *const argv[] = {"/bin/sh", "-c", "exit 0"};
    if (!pod || !cJSON_AddStringToObject(pod, "apiVersion", "v1") || !cJSON_AddStringToObject(pod, "kind", "Pod") ||
        !(md = cJSON_AddObjectToObject(pod, "metadata")) || !cJSON_AddStringToObject(md, "name", name) ||
        !cJSON_AddStringToObject(md, "namespace", ns) || !(labels = cJSON_AddObjectToObject(md, "labels")) ||
        !cJSON_AddStringToObject(labels, SBX_LABEL_MANAGED_BY, SBX_MANAGED_BY) ||
        !cJSON_AddStringToObject(labels, SBX_LABEL_NAME, "") ||
        !cJSON_AddStringToObject(labels, SBX_LABEL_WARM_POOL, pool_key) ||
        !(ann = cJSON_AddObjectToObject(md, "annotations")) || !cJSON_AddStringToObject(ann, SBX_ANN_BINDS_CLAIM, claim) ||
        !(refs = cJSON_AddArrayToObject(md, "ownerReferences")) || !(ref = cJSON_CreateObject()) ||
        !cJSON_AddItemToArray(refs, ref) || !cJSON_AddStringToObject(ref, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(ref, "kind", "PersistentVolumeClaim") || !cJSON_AddStringToObject(ref, "name", claim) ||
        !cJSON_AddStringToObject(ref, "uid", claim_uid))
        goto err;
    if (!(spec = cJSON_AddObjectToObject(pod, "spec")) || !cJSON_AddStringToObject(spec, "restartPolicy", "Never") ||
        !cJSON_AddFalseToObject(spec, "automountServiceAccountToken") ||
        !cJSON_AddFalseToObject(spec, "enableServiceLinks") ||
        !cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", 0))
        goto err;
    /* Where a sandbox of the class may run: its node selector, tolerations, affinity and
     * runtime class (a RuntimeClass's own scheduling rules come with it). */
    if ((s->node_selector && !cJSON_AddItemToObject(spec, "nodeSelector", cJSON_Duplicate(s->node_selector, 1))) ||
        (s->tolerations && !cJSON_AddItemToObject(spec, "tolerations", cJSON_Duplicate(s->tolerations, 1))) ||
        (s->runtime_class && !cJSON_AddStringToObject(spec, "runtimeClassName", s->runtime_class)) ||
        add_affinity(spec, s, avoid, navoid) < 0)
        goto err;
    if (!(sc = cJSON_AddObjectToObject(spec, "securityContext")) || !cJSON_AddTrueToObject(sc, "runAsNonRoot") ||
        !cJSON_AddNumberToObject(sc, "runAsUser", BINDER_UID) || !cJSON_AddNumberToObject(sc, "runAsGroup", BINDER_UID) ||
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(sc, "seccompProfile"), "type", "RuntimeDefault"))
        goto err;
    /* The sandbox's image: the node pulls it now, not when a Sandbox adopts the claim. */
    if (!(ctrs = cJSON_AddArrayToObject(spec, "containers")) || !(ctr = cJSON_CreateObject()) ||
        !cJSON_AddItemToArray(ctrs, ctr) || !cJSON_AddStringToObject(ctr, "name", SBX_BINDER_CONTAINER) ||
        !cJSON_AddStringToObject(ctr, "image", s->image) ||
        !cJSON_AddStringToObject(ctr, "imagePullPolicy", sbx_pull_policy_name(sbx_pull_policy_for(s->pull_policy, s->image))) ||
        !cJSON_AddItemToObject(ctr, "command", cJSON_CreateStringArray(argv, 3)) || add_resources(ctr, s) < 0)
        goto err;
    if (sbx_add_helper_hardening(ctr) < 0) goto err;
    /* The claim as a volume of the pod is what makes the scheduler bind it; no container
     * mounts it. */
    if (!(vols = cJSON_AddArrayToObject(spec, "volumes")) || sbx_add_claim_volume(vols, "workspace", claim, 0) < 0)
        goto err;
    if (sbx_add_pull_secrets(spec, s) < 0) goto err;
    return pod;
err:
    cJSON_Delete(pod);
    return NULL;
}
