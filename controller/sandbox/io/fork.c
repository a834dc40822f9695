/* sandbox/io/fork.c — a fork's workspace (spec.workspace.from), the I/O side (see fork.h;
 * the copier pod is built in workspacecopy.c; its running slot is capacity.c's). */
#include "sandbox/io/fork.h"

#include <stdio.h>
#include <string.h>

#include "base/errfmt.h"
#include "base/log.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "sandbox/io/children.h"
#include "sandbox/model/claimview.h"
#include "sandbox/model/naming.h"
#include "sandbox/model/objects.h"
#include "sandbox/io/owned.h"
#include "sandbox/model/quantity.h"
#include "sandbox/decide/reconcile_observe.h"
#include "sandbox/io/status.h"
#include "sandbox/io/storage.h"
#include "sandbox/model/workspacecopy.h"

const char *sbx_fork_source(const struct sbx_deps *deps, struct sbx_warm *warm, const char *ns,
                            const struct sbx_spec *spec, struct sbx_ws_source *src, cJSON **held, char *why,
                            size_t whylen) {
    char pod[SBX_NAME_MAX + 1], claim[128], a[32], b[32];
    const char *reason = SBX_REASON_WS_SOURCE_NOT_FOUND;
    const char *api = "/apis/" SBX_GROUP "/v1alpha1";
    *held = NULL;
    memset(src, 0, sizeof(*src));
    cJSON *sb = sbx_cached_or_read(deps, deps->sandboxes, ns, api, SBX_PLURAL, spec->workspace_from);
    struct sbx_sandbox_view sv;
    struct sbx_claim_view cv;
    sbx_sandbox_view_parse(sb, &sv);
    if (!sb || sv.meta.deleting) {
        snprintf(why, whylen, "spec.workspace.from: Sandbox %s not found in namespace %s%s; waiting for it",
                 spec->workspace_from, ns, sb ? " (it is being deleted)" : "");
        goto out;
    }
    const char *user = sv.user_id, *chat = sv.chat_id;
    if (!spec->forks_across_users && (!user || strcmp(user, spec->user_id) != 0)) {
        /* The same words whether the source exists under another user or not at all would
         * be kinder to privacy, but the Sandbox list of a namespace is readable by its
         * editors anyway; the message names the rule, not the other user. */
        snprintf(why, whylen, "spec.workspace.from: Sandbox %s belongs to another user (spec.userID); a workspace "
                 "can be forked only from a Sandbox of the same user%s", spec->workspace_from,
                 spec->class_name ? ", unless the SandboxClass allows it (spec.workspace.allowForksAcrossUsers)" : "");
        reason = SBX_REASON_WS_SOURCE_FORBIDDEN;
        goto out;
    }
    /* The claim it controls in the cache first (an adopted claim has a name of its own),
     * then what its status says, then the name its IDs give. */
    const char *name = sv.meta.uid && sbx_warm_claim_of(warm, sv.meta.uid, claim, sizeof(claim)) ? claim
                       : sv.workspace_claim;
    if (!name && user && chat && sbx_name_pod(user, chat, pod, sizeof(pod)) == 0) {
        sbx_claim_name(pod, claim, sizeof(claim));
        name = claim;
    }
    if (!name) {
        snprintf(why, whylen, "spec.workspace.from: Sandbox %s has no workspace claim; waiting for it",
                 spec->workspace_from);
        goto out;
    }
    *held = sbx_cached_or_read(deps, deps->pvcs, ns, "/api/v1", "persistentvolumeclaims", name);
    sbx_claim_view_parse(*held, &cv);
    const char *uid = sv.meta.uid;
    if (!uid || sbx_child_state(*held, &cv.meta, uid) != SBX_OBJ_PRESENT || !cv.bound) {
        snprintf(why, whylen, "spec.workspace.from: the workspace claim %s of Sandbox %s is %s; waiting for it",
                 name, spec->workspace_from, !*held ? "not there" : sbx_child_state(*held, &cv.meta, uid ? uid : "") ==
                 SBX_OBJ_PRESENT ? "not bound yet" : "not its own, or being deleted");
        goto out;
    }
    src->claim = cv.meta.name;
    src->storage_class = cv.storage_class;
    src->bytes = sbx_clone_bytes(cv.request_bytes, cv.capacity_bytes);
    if (!src->claim) goto out;
    int64_t clone = sbx_clone_bytes(spec->workspace_bytes, src->bytes);
    if (spec->workspace_max_bytes && clone > spec->workspace_max_bytes) {
        if (qty_format_memory(clone, a, sizeof(a)) || qty_format_memory(spec->workspace_max_bytes, b, sizeof(b)))
            a[0] = b[0] = '\0';
        snprintf(why, whylen, "spec.workspace.from: the workspace of Sandbox %s is %s, above the maximum %s of "
                 "SandboxClass \"%s\" (spec.workspace.maxSize); a fork is at least its source's size",
                 spec->workspace_from, a, b, spec->class_name ? spec->class_name : "");
        reason = SBX_REASON_INVALID;
        goto out;
    }
    /* Cloned only where the operator says the StorageClass's driver clones; otherwise
     * copied (a clone request to a driver that ignores dataSource binds an empty volume). */
    src->copy = !sbx_storage_class_clones_by_name(deps, src->storage_class);
    if (!src->copy && sbx_ws_source_check(spec, src, why, whylen) < 0) {
        reason = SBX_REASON_WS_SOURCE_INCOMPATIBLE;
        goto out;
    }
    reason = NULL;
out:
    cJSON_Delete(sb);
    if (reason && !why[0]) snprintf(why, whylen, "spec.workspace.from: the source claim has no name");
    return reason;
}

/* The node a running pod of the Sandbox ns/name (the fork's source) is on, into node
 * (""= none known): a ReadWriteOnce volume in use is attached there. */
static void source_node(const struct sbx_deps *deps, const char *ns, const char *name, char *node, size_t nodelen) {
    char okey[600];
    node[0] = '\0';
    cJSON *sb = sbx_cached_or_read(deps, deps->sandboxes, ns, "/apis/" SBX_GROUP "/v1alpha1", SBX_PLURAL, name);
    struct sbx_sandbox_view sv;
    sbx_sandbox_view_parse(sb, &sv);
    if (sv.pod_name) {
        snprintf(okey, sizeof(okey), "%s/%s", ns, sv.pod_name);
        cJSON *pod = informer_get(deps->pods, okey);
        struct sbx_meta pm;
        sbx_meta_read(pod, &pm);
        const char *n = sbx_pod_node(pod);
        if (n && !pm.deleting) snprintf(node, nodelen, "%s", n);
        cJSON_Delete(pod);
    }
    cJSON_Delete(sb);
}

/* Whether the claim, read fresh from the API server, is filled already (SBX_ANN_FORK_COPIED)
 * or cannot be read: the pass saw it unfilled in the cache, which may be behind the pass
 * that finished the copy and deleted its copier. A second copier would copy the source
 * again over the workspace the sandbox then writes. 1 = do not start a copier now. */
static int claim_filled_or_unknown(const struct sbx_deps *deps, const char *ns, const char *claim) {
    char path[1024];
    cJSON *fresh = NULL;
    sbx_object_path(path, sizeof(path), ns, "persistentvolumeclaims", claim);
    long st = kube_get(deps->client, path, &fresh, NULL);
    struct sbx_claim_view cv;
    sbx_claim_view_parse(fresh, &cv);
    int filled = st != 200 || cv.fork_copied != NULL;
    cJSON_Delete(fresh);
    return filled;
}

int sbx_fork_fill(const struct sbx_deps *deps, struct sbx_capacity *cap, const char *ns, const struct sbx_sandbox_view *sb,
                  const struct sbx_owner *owner, const struct sbx_spec *spec, const struct sbx_claim_view *pvc,
                  struct sbx_observed *o, char *msg, size_t msglen, struct kube_error *err) {
    char copier[96], okey[600], path[1024], node[256];
    const char *claim = pvc->meta.name, *claim_uid = pvc->meta.uid, *source = pvc->fork_from;
    sbx_copier_name(owner->uid, copier, sizeof(copier));
    snprintf(okey, sizeof(okey), "%s/%s", ns, copier);
    cJSON *pod = informer_get(deps->pods, okey);
    struct sbx_meta pm;
    sbx_meta_read(pod, &pm);
    int rc = 0;
    o->workspace_copy = SBX_COPY_RUNNING;
    o->workspace_copy_message = msg;
    snprintf(msg, msglen, "copying the workspace of Sandbox %s (claim %s) into claim %s", spec->workspace_from,
             source, claim ? claim : "?");
    const char *for_name = sbx_meta_annotation(&pm, SBX_ANN_COPY_FOR);
    if (pod && (!for_name || strcmp(for_name, owner->name) != 0)) {
        o->workspace_copy = SBX_COPY_FAILED;
        snprintf(msg, msglen, "a pod named %s that is not this sandbox's copier is in the way of the workspace copy",
                 copier);
        goto out;
    }
    if (!pod) {
        if (sbx_records_expecting(deps->records, owner->uid, SBX_EXPECT_COPIER, kj_now_ms()) > 0) goto out;
        if (!claim || claim_filled_or_unknown(deps, ns, claim)) goto out;   /* its echo brings the next pass */
        /* A copier runs in the Sandbox's running slot: none without one (its user's caps and
         * the global cap hold during copies). The pass's admission says where it waits. */
        int pos, user_capped, class_capped;
        if (!sbx_capacity_admit(cap, owner->uid, spec->max_running_per_user, kj_now_ms(), &pos, &user_capped,
                                &class_capped)) {
            o->workspace_copy = SBX_COPY_WAITING;
            goto out;
        }
        source_node(deps, ns, spec->workspace_from, node, sizeof(node));
        cJSON *obj = sbx_build_copier(owner, spec, copier, deps->defaults->image ? deps->defaults->image
                                                                                   : SBX_DEFAULT_IMAGE,
                                      source, claim, node[0] ? node : NULL);
        if (!obj) { kube_error_oom(err); rc = -1; goto out; }
        cJSON *made = NULL;
        sbx_core_path(path, sizeof(path), ns, "pods");
        long st = kube_create(deps->client, path, obj, &made, err);
        cJSON_Delete(obj);
        if (st == 201 || st == 200) {
            struct sbx_meta mm;
            sbx_meta_read(made, &mm);
            const char *u = mm.uid;
            if (u) sbx_records_expect(deps->records, owner->uid, SBX_EXPECT_COPIER, u, kj_now_ms() + EXPECT_MS);
            sbx_count(&deps->counters->creates);
            LOGI("msg=\"workspace copy started\" sandbox=%s/%s copier=%s source=%s claim=%s node=%s", ns, owner->name,
                 copier, source, claim ? claim : "", node[0] ? node : "(scheduler)");
        } else if (st != 409) {
            sbx_capacity_release(cap, owner->uid, 0);
            rc = -1;
        }
        cJSON_Delete(made);
        goto out;
    }
    struct sbx_observed co;
    memset(&co, 0, sizeof(co));
    sbx_pod_observe(pod, &co);
    const char *pod_uid = pm.uid;
    if (pm.deleting) goto out;   /* a retry: the next one comes once it is gone */
    if (co.pod_phase && !strcmp(co.pod_phase, "Succeeded")) {
        char t[48];
        kj_time_format(kj_now_ms(), t, sizeof(t));
        if (!claim || !claim_uid ||
            sbx_patch_owned_map(deps, ns, "persistentvolumeclaims", claim, claim_uid, "annotations", 1,
                                (const char *const[]){SBX_ANN_FORK_COPIED}, (const char *const[]){t}, err) < 0) {
            rc = -1;
            goto out;
        }
        LOGI("msg=\"workspace copied\" sandbox=%s/%s claim=%s source=%s", ns, owner->name, claim, source);
        sbx_capacity_keep(cap, owner->uid);   /* the copier's slot passes to the sandbox pod */
        sbx_event_record(deps, sb, "Normal", "WorkspaceCopied", msg);
        if (pod_uid && sbx_delete_owned(deps, ns, "pods", copier, pod_uid, err) < 0) rc = -1;
        goto out;   /* the claim's echo brings the pass that makes the pod */
    }
    if (co.pod_phase && !strcmp(co.pod_phase, "Failed")) {
        const struct sbx_termination *t = &co.ctr.terminated;
        o->workspace_copy = SBX_COPY_FAILED;
        const char *why = co.pod_reason ? co.pod_reason : t->reason ? t->reason : "Error";
        const char *said = t->message && *t->message ? t->message : "no message";
        if (t->present)
            snprintf(msg, msglen, "copying the workspace of Sandbox %s failed (%s, exit code %d): %.400s; trying again "
                     "in %d s", spec->workspace_from, why, t->exit_code, said, SBX_COPY_RETRY_MS / 1000);
        else
            snprintf(msg, msglen, "copying the workspace of Sandbox %s failed (%s): %.400s; trying again in %d s",
                     spec->workspace_from, why, said, SBX_COPY_RETRY_MS / 1000);
        int64_t ended = t->finished_ms ? t->finished_ms : pm.created_ms;
        if (kj_now_ms() - ended >= SBX_COPY_RETRY_MS && pod_uid) {
            LOGW("msg=\"workspace copy failed; trying again\" sandbox=%s/%s copier=%s", ns, owner->name, copier);
            if (sbx_delete_owned(deps, ns, "pods", copier, pod_uid, err) < 0) rc = -1;
        }
        goto out;
    }
    if (co.pod_unscheduled_message)
        snprintf(msg + strlen(msg), msglen - strlen(msg), "; the copier waits: %.300s", co.pod_unscheduled_message);
    else if (co.ctr.waiting_reason && strcmp(co.ctr.waiting_reason, "ContainerCreating") != 0)
        snprintf(msg + strlen(msg), msglen - strlen(msg), "; the copier waits: %s", co.ctr.waiting_reason);
out:
    cJSON_Delete(pod);
    return rc;
}
