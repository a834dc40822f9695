/* sandbox/io/expose.c — a Sandbox's Service and NetworkPolicy, level-triggered (see
 * expose.h; both objects are built in builders.c and netpol.c). */
#include "sandbox/io/expose.h"

#include <stdio.h>
#include <string.h>

#include "base/errfmt.h"
#include "base/log.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "sandbox/io/children.h"
#include "sandbox/model/objects.h"
#include "sandbox/io/owned.h"
#include "sandbox/io/status.h"

int sbx_expose_service(const struct sbx_deps *deps, const char *ns, const struct sbx_sandbox_view *sb,
                       const struct sbx_owner *owner, const struct sbx_spec *spec, const char *pod_name,
                       const cJSON *svc, enum sbx_object_state state, struct kube_error *err) {
    struct sbx_meta sm;
    sbx_meta_read(svc, &sm);
    if (!spec->service) {
        if (state != SBX_OBJ_PRESENT) return 0;
        if (sbx_delete_owned(deps, ns, "services", pod_name, sm.uid, err) < 0) return -1;
        LOGI("msg=\"service deleted (spec.service.enabled is off)\" sandbox=%s/%s service=%s", ns, owner->name, pod_name);
        return 0;
    }
    if (state == SBX_OBJ_TERMINATING) return 0;   /* created again once it is gone */
    if (state == SBX_OBJ_FOREIGN) {
        sbx_event_record(deps, sb, "Warning", "ServiceNameConflict",
                         "a Service of the sandbox's name belongs to someone else; no Service was made");
        return 0;
    }
    cJSON *want = sbx_build_service(owner, spec, pod_name);
    if (!want) { kube_error_oom(err); return -1; }
    int rc = 0;
    if (state == SBX_OBJ_ABSENT &&
        sbx_records_expecting(deps->records, owner->uid, SBX_EXPECT_SERVICE, kj_now_ms()) > 0) {
        /* created by an earlier pass; the cache has not shown it yet: no second POST */
    } else if (state == SBX_OBJ_ABSENT) {
        int r = sbx_child_create(deps, ns, "services", SBX_EXPECT_SERVICE, want, pod_name, owner->uid, err);
        if (r < 0) rc = -1;
        else if (r == 1) {
            sbx_count(&deps->counters->conflicts);
            sbx_event_record(deps, sb, "Warning", "ServiceNameConflict",
                             "a Service of the sandbox's name belongs to someone else; no Service was made");
        } else {
            LOGI("msg=\"service created\" sandbox=%s/%s service=%s", ns, owner->name, pod_name);
        }
    } else if (!sbx_service_matches(svc, want)) {
        /* Its ports and selector, each list replaced whole; the uid precondition keeps a
         * same-named successor's Service safe. */
        const cJSON *ws = cJSON_GetObjectItemCaseSensitive(want, "spec");
        cJSON *part = cJSON_CreateObject();
        cJSON *ports = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ws, "ports"), 1);
        cJSON *selector = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ws, "selector"), 1);
        int r = -1;
        if (part && cJSON_AddItemToObject(part, "ports", ports) && (ports = NULL, 1) &&
            cJSON_AddItemToObject(part, "selector", selector) && (selector = NULL, 1))
            r = sbx_patch_owned_spec(deps, ns, "services", pod_name, sm.uid, part, err);
        else {
            cJSON_Delete(part);
            kube_error_oom(err);
        }
        cJSON_Delete(ports);      /* what was not added */
        cJSON_Delete(selector);
        if (r < 0) rc = -1;
        else if (r == 0) LOGI("msg=\"service updated\" sandbox=%s/%s service=%s", ns, owner->name, pod_name);
    }
    cJSON_Delete(want);
    return rc;
}

int sbx_expose_netpol(const struct sbx_deps *deps, const char *ns, const struct sbx_sandbox_view *sb,
                      const struct sbx_owner *owner, const struct sbx_spec *spec, const struct sbx_network *net,
                      const char *pod_name, const cJSON *pod, const struct sbx_meta *pod_meta, const cJSON *np,
                      enum sbx_object_state state, const struct sbx_cidr *apiserver, size_t napiserver, struct kube_error *err) {
    struct sbx_meta nm;
    sbx_meta_read(np, &nm);
    /* A pod built under another class (spec.className changed) still runs, or is still
     * stopping: the policy it was built under stays until it is gone (the pass that finds
     * it gone applies the new class's before the new pod is made). A policy missing is
     * made at once: a class that isolates applies before anything else changes. */
    enum sbx_object_state pod_state = sbx_child_state(pod, pod_meta, owner->uid);
    const char *built = sbx_pod_built_class(pod ? pod_meta : NULL, sb);
    int older_pod = (pod_state == SBX_OBJ_PRESENT || pod_state == SBX_OBJ_TERMINATING) && built &&
                    strcmp(built, spec->class_name ? spec->class_name : "") != 0;
    if (older_pod && state == SBX_OBJ_PRESENT) {
        LOGD("msg=\"network policy kept until the pod built under the previous class is gone\" sandbox=%s/%s",
             ns, owner->name);
        return 0;
    }
    if (net->mode != SBX_NET_ISOLATED) {
        if (state != SBX_OBJ_PRESENT) return 0;
        if (sbx_delete_owned(deps, ns, "networkpolicies", pod_name, nm.uid, err) < 0)
            return -1;
        LOGI("msg=\"network policy deleted (the class's network mode is none)\" sandbox=%s/%s networkpolicy=%s", ns,
             owner->name, pod_name);
        return 0;
    }
    if (state == SBX_OBJ_TERMINATING) {
        kube_error_set(err, "the sandbox's NetworkPolicy %s is being deleted; waiting to create it again", pod_name);
        return -1;
    }
    if (state == SBX_OBJ_FOREIGN) {
        sbx_event_record(deps, sb, "Warning", "NetworkPolicyNameConflict",
                         "a NetworkPolicy of the sandbox's name belongs to someone else; the pod waits");
        kube_error_set(err, "NetworkPolicy %s/%s belongs to someone else", ns, pod_name);
        return -1;
    }
    cJSON *want = sbx_build_netpol(owner, spec, net, pod_name, apiserver, napiserver);
    if (!want) { kube_error_oom(err); return -1; }
    int rc = 0;
    if (state == SBX_OBJ_ABSENT &&
        sbx_records_expecting(deps->records, owner->uid, SBX_EXPECT_NETPOL, kj_now_ms()) > 0) {
        /* created by an earlier pass; the cache has not shown it yet: no second POST */
    } else if (state == SBX_OBJ_ABSENT) {
        int r = sbx_child_create(deps, ns, "networkpolicies", SBX_EXPECT_NETPOL, want, pod_name, owner->uid, err);
        if (r == 1) {
            sbx_count(&deps->counters->conflicts);
            sbx_event_record(deps, sb, "Warning", "NetworkPolicyNameConflict",
                             "a NetworkPolicy of the sandbox's name belongs to someone else; the pod waits");
            kube_error_set(err, "NetworkPolicy %s/%s belongs to someone else", ns, pod_name);
        }
        if (r != 0) rc = -1;
        else LOGI("msg=\"network policy created\" sandbox=%s/%s networkpolicy=%s", ns, owner->name, pod_name);
    } else if (!sbx_netpol_matches(np, want)) {
        /* Its whole spec; the uid precondition keeps a same-named successor's policy safe. */
        int r = sbx_patch_owned_spec(deps, ns, "networkpolicies", pod_name, nm.uid,
                                     cJSON_DetachItemFromObjectCaseSensitive(want, "spec"), err);
        if (r < 0) rc = -1;
        else if (r == 0) LOGI("msg=\"network policy updated\" sandbox=%s/%s networkpolicy=%s", ns, owner->name, pod_name);
    }
    cJSON_Delete(want);
    return rc;
}
