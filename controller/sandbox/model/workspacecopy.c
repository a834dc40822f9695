/* sandbox/model/workspacecopy.c — the copier pod of a fork filled by a copy (see workspacecopy.h). */
#include "sandbox/model/workspacecopy.h"

#include <stdio.h>
#include <string.h>

void sbx_copier_name(const char *sandbox_uid, char *out, size_t outlen) {
    snprintf(out, outlen, "yao-copy-%.50s", sandbox_uid ? sandbox_uid : "");
}

int sbx_storage_class_clones(const cJSON *sc) {
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sc, "metadata"), "annotations");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ann, SBX_ANN_STORAGE_CLONES);
    return cJSON_IsString(v) && !strcmp(v->valuestring, "true");
}

static int add_mount(cJSON *mounts, const char *name, const char *path, int read_only) {
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddItemToArray(mounts, m)) { cJSON_Delete(m); return -1; }
    if (!cJSON_AddStringToObject(m, "name", name) || !cJSON_AddStringToObject(m, "mountPath", path) ||
        (read_only && !cJSON_AddTrueToObject(m, "readOnly")))
        return -1;
    return 0;
}

/* A small fixed size: a copy is I/O bound. */
static int add_resources(cJSON *ctr) {
    cJSON *res = cJSON_AddObjectToObject(ctr, "resources"), *req, *lim;
    return res && (req = cJSON_AddObjectToObject(res, "requests")) && (lim = cJSON_AddObjectToObject(res, "limits")) &&
                   cJSON_AddStringToObject(req, "cpu", "100m") && cJSON_AddStringToObject(req, "memory", "64Mi") &&
                   cJSON_AddStringToObject(lim, "cpu", "1") && cJSON_AddStringToObject(lim, "memory", "256Mi")
               ? 0 : -1;
}

cJSON *sbx_build_copier(const struct sbx_owner *o, const struct sbx_spec *s, const char *name, const char *image,
                        const char *src_claim, const char *dst_claim, const char *node) {
    if (!o || !s || !name || !image || !src_claim || !dst_claim) return NULL;
    cJSON *pod = cJSON_CreateObject(), *meta = sbx_build_owned_meta(o, s, name), *ref, *spec, *sc, *ctrs, *ctr, *cmd,
          *vols, *mounts;
    if (!pod || !meta || !cJSON_AddStringToObject(pod, "apiVersion", "v1") || !cJSON_AddStringToObject(pod, "kind", "Pod") ||
        !cJSON_AddItemToObject(pod, "metadata", meta)) {
        if (meta && !cJSON_GetObjectItemCaseSensitive(pod, "metadata")) cJSON_Delete(meta);
        goto err;
    }
    /* Not the controller reference: the pod is no sandbox pod of the Sandbox. */
    cJSON_ArrayForEach(ref, cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences"))
        cJSON_ReplaceItemInObjectCaseSensitive(ref, "controller", cJSON_CreateFalse());
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    if (!ann || !cJSON_AddStringToObject(ann, SBX_ANN_COPY_FOR, o->name)) goto err;
    if (!(spec = cJSON_AddObjectToObject(pod, "spec")) || !cJSON_AddStringToObject(spec, "restartPolicy", "Never") ||
        !cJSON_AddFalseToObject(spec, "automountServiceAccountToken") ||
        !cJSON_AddFalseToObject(spec, "enableServiceLinks") ||
        !cJSON_AddNumberToObject(spec, "activeDeadlineSeconds", SBX_COPY_DEADLINE_S) ||
        !cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", 5))
        goto err;
    if (node) {
        /* A ReadWriteOnce source in use is attached to its pod's node: copy there. */
        cJSON *na = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "affinity"), "nodeAffinity");
        cJSON *req = cJSON_AddObjectToObject(na, "requiredDuringSchedulingIgnoredDuringExecution");
        cJSON *terms = cJSON_AddArrayToObject(req, "nodeSelectorTerms"), *term = cJSON_CreateObject(), *fields, *f;
        if (!terms || !term || !cJSON_AddItemToArray(terms, term)) { cJSON_Delete(term); goto err; }
        if (!(fields = cJSON_AddArrayToObject(term, "matchFields")) || !(f = cJSON_CreateObject()) ||
            !cJSON_AddItemToArray(fields, f) || !cJSON_AddStringToObject(f, "key", "metadata.name") ||
            !cJSON_AddStringToObject(f, "operator", "In") ||
            !cJSON_AddItemToObject(f, "values", cJSON_CreateStringArray(&node, 1)))
            goto err;
    }
    /* The tolerations and node selector of the sandbox's class: the copy may need its nodes. */
    if ((s->node_selector && !cJSON_AddItemToObject(spec, "nodeSelector", cJSON_Duplicate(s->node_selector, 1))) ||
        (s->tolerations && !cJSON_AddItemToObject(spec, "tolerations", cJSON_Duplicate(s->tolerations, 1))))
        goto err;
    sc = cJSON_AddObjectToObject(spec, "securityContext");
    if (!sc || !cJSON_AddTrueToObject(sc, "runAsNonRoot") ||
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(sc, "seccompProfile"), "type", "RuntimeDefault"))
        goto err;
    if (s->run_as_user != SBX_RUN_AS_AUTO &&
        (!cJSON_AddNumberToObject(sc, "runAsUser", (double)s->run_as_user) ||
         !cJSON_AddNumberToObject(sc, "runAsGroup", (double)s->run_as_user) ||
         !cJSON_AddNumberToObject(sc, "fsGroup", (double)s->run_as_user) ||
         !cJSON_AddStringToObject(sc, "fsGroupChangePolicy", "OnRootMismatch")))
        goto err;
    if (!(ctrs = cJSON_AddArrayToObject(spec, "containers")) || !(ctr = cJSON_CreateObject()) ||
        !cJSON_AddItemToArray(ctrs, ctr))
        goto err;
    static const char *const argv[] = {"/bin/sh", "-c", SBX_COPY_SCRIPT};
    if (!cJSON_AddStringToObject(ctr, "name", SBX_CONTAINER_NAME) || !cJSON_AddStringToObject(ctr, "image", image) ||
        !cJSON_AddStringToObject(ctr, "imagePullPolicy",
                                 sbx_pull_policy_name(sbx_pull_policy_for(s->pull_policy, image))) ||
        !(cmd = cJSON_CreateStringArray(argv, 3)) || !cJSON_AddItemToObject(ctr, "command", cmd) ||
        /* cp's own words when it fails (the log's tail is the termination message) */
        !cJSON_AddStringToObject(ctr, "terminationMessagePolicy", "FallbackToLogsOnError") || add_resources(ctr))
        goto err;
    if (sbx_add_helper_hardening(ctr) < 0) goto err;
    if (!(mounts = cJSON_AddArrayToObject(ctr, "volumeMounts")) || add_mount(mounts, "source", "/yao/source", 1) ||
        add_mount(mounts, "workspace", "/yao/workspace", 0))
        goto err;
    if (!(vols = cJSON_AddArrayToObject(spec, "volumes")) || sbx_add_claim_volume(vols, "source", src_claim, 1) ||
        sbx_add_claim_volume(vols, "workspace", dst_claim, 0))
        goto err;
    if (sbx_add_pull_secrets(spec, s) < 0) goto err;
    return pod;
err:
    cJSON_Delete(pod);
    return NULL;
}
