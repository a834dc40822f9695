/* sandbox/manager/reconcile.c — the reconcile pass over one Sandbox (see pass.h): gate → resolve
 * policy → observe → admit → fence → act → report → requeue at the next deadline. It
 * takes a narrow environment (struct sbx_pass_env), never the controller, and acts through
 * the modules below: status, Events and last-used-at (status.c), the owned objects' state,
 * lookup and creation (children.c), forks (fork.c), the Service and NetworkPolicy
 * (expose.c), preconditioned writes (owned.c), StorageClasses (storage.c), the running
 * cap (capacity.c), warm pools (warm.c), a deleted Sandbox's orphans (orphans.c). The
 * decisions are reconcile_decide.c's; the manager that calls the pass is controller.c. */
#include "base/errfmt.h"
#include "sandbox/manager/pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "kube/kjson.h"
#include "sandbox/io/activity.h"
#include "sandbox/io/capacity.h"
#include "sandbox/io/children.h"
#include "sandbox/io/expose.h"
#include "sandbox/io/fork.h"
#include "sandbox/io/hostalias.h"
#include "sandbox/model/naming.h"
#include "sandbox/io/orphans.h"
#include "sandbox/io/owned.h"
#include "sandbox/model/quantity.h"
#include "sandbox/decide/hostalias_decide.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/decide/reconcile_observe.h"
#include "sandbox/io/resize.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/io/status.h"
#include "sandbox/io/storage.h"
#include "sandbox/io/volhelper.h"
#include "sandbox/io/warm.h"

/* After a conditional write found the Sandbox changed, look again this soon at the
 * latest (the watch delivers the newer version, which queues the key by itself). */
#define STALE_REQUEUE_MS SBX_STALE_AGAIN_MS
/* A Sandbox that waits for capacity is looked at again this often, so its
 * status.queuePosition follows those ahead of it (a freed slot queues only as many
 * Sandboxes as it frees). */
#define QUEUE_REFRESH_MS 10000

/* ---- observing ------------------------------------------------------------------------ */

/* How the workspace claim binds. Its class is the claim's own spec.storageClassName, else
 * the one the spec asks for, else the cluster's default class; it binds late when that
 * StorageClass says volumeBindingMode: WaitForFirstConsumer. */
static enum sbx_binding claim_binding(struct sbx_pass_env *env, const struct sbx_claim_view *pvc,
                                     const struct sbx_spec *spec) {
    const char *name = pvc->obj ? pvc->storage_class : spec->storage_class;
    return sbx_storage_class_binding(env->deps, name, NULL, 0);
}

/* The request, capacity and expandability of the Sandbox's claim pvc, into o; for a fork
 * (spec->workspace_from), the size it was cloned at (its annotation; a fork made by an
 * earlier controller: its request, as a fork never shrinks below its source). */
static void observe_claim_size(struct sbx_pass_env *env, const struct sbx_claim_view *pvc, struct sbx_observed *o,
                               const struct sbx_spec *spec) {
    o->claim_request_bytes = pvc->request_bytes;
    o->claim_capacity_bytes = pvc->capacity_bytes;
    o->claim_expandable = sbx_storage_class_expands(env->deps, pvc->storage_class);
    o->claim_cloned_bytes = 0;
    if (spec->workspace_from) {
        if (!pvc->cloned_size) o->claim_cloned_bytes = o->claim_request_bytes;
        else if (qty_parse_memory(pvc->cloned_size, &o->claim_cloned_bytes) < 0) o->claim_cloned_bytes = 0;
    }
}

/* Raise the claim's storage request to bytes (merge patch). 0 or -1. */
static int expand_claim(struct sbx_pass_env *env, const char *ns, const char *claim, int64_t bytes,
                        struct kube_error *err) {
    char path[1024], size[32];
    if (qty_format_memory(bytes, size, sizeof(size))) { kube_error_set(err, "bad workspace size"); return -1; }
    sbx_object_path(path, sizeof(path), ns, "persistentvolumeclaims", claim);
    cJSON *patch = cJSON_CreateObject();
    cJSON *req = cJSON_AddObjectToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "spec"), "resources"),
                                         "requests");
    if (!req || !cJSON_AddStringToObject(req, "storage", size)) {
        cJSON_Delete(patch);
        kube_error_oom(err);
        return -1;
    }
    long st = kube_merge_patch(env->deps->client, path, patch, NULL, err);
    cJSON_Delete(patch);
    return st == 200 || st == 404 ? 0 : -1;
}

/* Controlled by an earlier Sandbox of this very name (deleted, then created again before
 * the garbage collector caught up)? One name cannot hold two Sandboxes at once, so that
 * owner is gone for sure. */
static int predecessor_owned(const struct sbx_meta *m, const char *sandbox, const char *uid) {
    const char *rname = m->sandbox_owner, *ruid = m->sandbox_owner_uid;
    return rname && !strcmp(rname, sandbox) && ruid && strcmp(ruid, uid) != 0;
}

/* ---- acting --------------------------------------------------------------------------- */

/* SBX_ACT_RELEASE_CLAIM: give up the adopted warm claim `claim` whose volume's node cannot
 * take the pod. The pod is read fresh: one the scheduler placed since the cache showed it
 * (or that the kubelet took) is left alone, and the DELETE carries its uid and
 * resourceVersion, so a pod placed in between answers 409. Only once no pod of the Sandbox
 * can be using it, the claim is deleted (uid precondition), and the Sandbox adopts no pool
 * claim for a while: the next pass makes a cold claim, bound where its pod is scheduled.
 * 0 (done, or nothing to do now) or -1. */
static int release_warm_claim(struct sbx_pass_env *env, const char *ns, const char *key, const char *uid,
                              const char *pod_name, const char *claim, const char *claim_uid, struct kube_error *err) {
    char path[1024];
    cJSON *pod = NULL;
    if (!claim_uid) return 0;
    sbx_object_path(path, sizeof(path), ns, "pods", pod_name);
    long st = kube_get(env->deps->client, path, &pod, err);
    if (st != 200 && st != 404) { cJSON_Delete(pod); return -1; }
    if (st == 200) {
        struct sbx_meta pm;
        sbx_meta_read(pod, &pm);
        const char *owner = pm.sandbox_owner_uid;
        if (!owner || strcmp(owner, uid) != 0 || sbx_pod_placed(pod) || !pm.uid || !pm.resource_version) {
            LOGI("msg=\"warm claim kept: its pod was placed meanwhile\" sandbox=%s claim=%s", key, claim);
            cJSON_Delete(pod);
            return 0;
        }
        long d = sbx_delete_preconditioned(env->deps, path, pm.uid, pm.resource_version, err);
        cJSON_Delete(pod);
        if (d == 409) { sbx_count(&env->counters->conflicts); return 0; }
        if (d != 200 && d != 202 && d != 404) return -1;
        sbx_count(&env->counters->deletes);
    } else {
        cJSON_Delete(pod);
    }
    if (sbx_delete_owned(env->deps, ns, "persistentvolumeclaims", claim, claim_uid, err) < 0) return -1;
    sbx_warm_note_released(env->warm, uid);
    LOGI("msg=\"warm claim released\" sandbox=%s claim=%s", key, claim);
    return 0;
}

/* ---- the pass ------------------------------------------------------------------------- */

/* status.endpoints and status.service: the pod's IP as the status reports it (running
 * only), the Service's clusterIP when it is ours and wanted. 0 or -1 (ENOMEM). */
static int status_endpoints(cJSON *st, const struct sbx_spec *spec, const char *ns, const char *pod_name,
                            const cJSON *svc, enum sbx_object_state svc_state) {
    const char *cip = spec->service && svc_state == SBX_OBJ_PRESENT ? sbx_service_cluster_ip(svc) : NULL;
    return sbx_status_add_endpoints(st, spec, ns, pod_name, kj_str(st, "podIP"), cip);
}

/* The spec cannot be applied and no pod of an earlier spec runs: the Sandbox holds no
 * slot and waits, Pending/InvalidSpec, with the Accepted condition saying why. */
static int invalid_without_pod(struct sbx_pass_env *env, const char *ns, const char *name, const struct sbx_sandbox_view *sb,
                               const char *uid, const char *reason, const char *why, struct kube_error *err) {
    sbx_capacity_class(env->capacity, uid, NULL, 0, 0);   /* no class: its pod (if any) counts in none */
    sbx_capacity_reclaimable(env->capacity, uid, NULL, NULL, 0);
    sbx_capacity_release(env->capacity, uid, 1);   /* it wants no pod until the spec is fixed */
    return sbx_status_report_invalid(env->deps, ns, name, sb, reason, why, err);
}

/* A running pod whose Sandbox's spec can no longer be applied goes on under the policy
 * its last valid pass recorded: idle stop and removal, pause, reclaim, TTL and the running
 * cap as before, but nothing is built from the spec (no pod, no claim, no expansion), and
 * the Accepted condition says what is invalid. observedGeneration stays: the pod does not
 * match the spec. */
static void govern(struct sbx_decision *d, const struct sbx_observed *o, const char *reason, const char *why) {
    d->actions &= ~(unsigned)(SBX_ACT_CREATE_POD | SBX_ACT_CREATE_PVC | SBX_ACT_EXPAND_PVC);
    d->observed_generation = o->status_observed_generation;
    d->invalid_reason = reason;
    snprintf(d->invalid_message, sizeof(d->invalid_message),
             "%.900s; the running pod continues under the previous spec until it is next replaced", why);
}

/* About to adopt a warm claim for sb, which the cache shows without one: does it still
 * control the claim its status names (made by another replica, e.g. of another shard
 * count, and not in this one's cache)? Then an adoption would give it a second workspace:
 * refused, logged, a Warning Event (the create path that follows finds that claim). Only a
 * Sandbox that had a claim asks the API server; a new one costs nothing. */
static int controls_unseen_claim(struct sbx_pass_env *env, const char *ns, const struct sbx_sandbox_view *sb, const char *uid) {
    const char *had = sb->workspace_claim;
    char path[1024], msg[512];
    if (!had) return 0;
    cJSON *pvc = NULL;
    sbx_object_path(path, sizeof(path), ns, "persistentvolumeclaims", had);
    long st = kube_get(env->deps->client, path, &pvc, NULL);
    int ours = st == 200 && sbx_child_state_of(pvc, uid) == SBX_OBJ_PRESENT;
    cJSON_Delete(pvc);
    if (!ours) return 0;
    LOGW("msg=\"warm adoption refused: the Sandbox still controls its claim, which this replica's cache does not "
         "show\" sandbox=%s/%s claim=%s", ns, sb->meta.name, had);
    snprintf(msg, sizeof(msg), "no warm claim adopted: the sandbox still has its workspace claim %.200s", had);
    sbx_event_record(env->deps, sb, "Warning", "WarmAdoptionRefused", msg);
    return 1;
}

/* Fenced like a stop (the status recording it written first, conditional on the version
 * decided on): what destroys, and the warm-idle resize down, which takes a pod's CPU. */
#define FENCED (SBX_ACTS_DESTRUCTIVE | SBX_ACT_RESIZE_DOWN)

/* ---- the pass: observe → resolve policy → admit → fence → act → report ---------------------
 *
 * reconcile_object runs the stages in order over one Sandbox. Each stage takes what the
 * stages before it produced (read-only, but for the observation the admission updates) and
 * fills its own output; it returns GO_ON, or END_PASS with the pass's outcome in *res
 * (done, after N ms, failed with err, or stale: decide again on a fresh read). */

enum stage_end { GO_ON = 0, END_PASS = 1 };

/* Who the pass is about. */
struct pass_ids { const char *key, *ns, *name, *uid; };

/* resolve policy: the effective spec (its class applied), or the one its last valid pass
 * recorded (governed: the spec as it is cannot be applied, a pod of an earlier one runs). */
struct policy {
    struct sbx_spec spec;
    int have_spec;
    struct sbx_network net;
    int governed, governed_net;     /* governed_net: net is the class's, narrowed, for that pod */
    const char *why_reason;         /* why the spec cannot be applied (governed) */
    char why[1024];
};

/* observe: what the caches (and, where needed, the API server) show of the Sandbox's
 * objects, as lifecycle_decide reads it. The objects are owned copies. */
struct observation {
    char pod_name[SBX_NAME_MAX + 1], claim[128];
    cJSON *pod, *pvc, *svc, *np, *src_pvc;
    struct sbx_meta pod_meta, svc_meta, np_meta;   /* of pod, svc, np (they point into them) */
    struct sbx_claim_view claim_view;              /* of pvc (points into it) */
    enum sbx_object_state svc_state, np_state;
    struct sbx_observed o;
    struct sbx_ws_source src;       /* a fork's source claim (its strings point into src_pvc) */
    char src_why[512], copy_msg[SBX_MESSAGE_MAX];
};

/* admit + fence: the decision, and the resourceVersion the fence wrote. */
struct verdict {
    struct sbx_decision d;
    int64_t reclaim_at;             /* when a running one will be reclaimable (0: none) */
    int fenced;                     /* the status was written as the fence */
    char rv[64];                    /* the Sandbox's resourceVersion after the fence */
};

/* The outcome of a stage's act that answers 0, -1 (err set) or SBX_STALE; after_ms when 0. */
static struct sbx_outcome outcome_of(int rc, int64_t after_ms) {
    return rc == SBX_STALE ? sbx_stale() : rc < 0 ? sbx_failed() : sbx_after(after_ms);
}

static enum stage_end end_pass(struct sbx_outcome *res, struct sbx_outcome o) {
    *res = o;
    return END_PASS;
}

/* The pass's one place of deciding: lifecycle_decide on what is observed, governed when
 * the spec is the one the last valid pass recorded (see govern). Admission and the act
 * steps that change the observation call it again; nothing else decides. */
static void decide(const struct policy *p, const struct sbx_observed *o, struct sbx_decision *d) {
    lifecycle_decide(&p->spec, o, d);
    if (p->governed) govern(d, o, p->why_reason, p->why);
}

/* Before anything: a Sandbox being deleted, or in a namespace being deleted, is not
 * served. */
static enum stage_end pass_gate(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb,
                                struct sbx_outcome *res, struct kube_error *err) {
    if (sb->meta.deleting) {
        sbx_capacity_release(env->capacity, id->uid, 1);
        return end_pass(res, sbx_done());   /* going: owner references and the sweep finish the job */
    }
    if (sbx_records_seen(env->records, id->key, id->uid) < 0) {
        kube_error_oom(err);
        return end_pass(res, sbx_failed());
    }
    int64_t held = sbx_terminating_left(env->terminating, id->ns, clock_mono_ms());
    if (held > 0) {
        /* Its namespace is being deleted: nothing to create or report; look again after
         * the hold (level-triggered: a namespace that is not going after all is served). */
        LOGD("msg=\"namespace is being deleted: pass skipped\" sandbox=%s", id->key);
        return end_pass(res, sbx_after(held));
    }
    return GO_ON;
}

/* The policy: the Sandbox's class, the effective spec and network. A spec that cannot be
 * applied is governed by the one its last valid pass recorded while a pod of it runs (see
 * govern); without one the Sandbox waits, InvalidSpec, with no pod. */
static enum stage_end pass_resolve_policy(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb,
                                          struct policy *p, struct sbx_outcome *res, struct kube_error *err) {
    struct sbx_class cls;
    int have_class = 0;
    p->why_reason = SBX_REASON_INVALID;
    int bad = sbx_class_for(env->sandbox_classes, sb, &cls, &have_class, &p->why_reason, p->why, sizeof(p->why)) < 0 ||
              sbx_class_resolve(sb->obj, have_class ? &cls : NULL, env->defaults, &p->spec, p->why, sizeof(p->why)) < 0;
    if (!bad) {
        p->have_spec = 1;   /* resolved: freed at the end whatever follows */
        if (have_class && !sbx_class_allows_lifecycle(&cls, &p->spec, p->why, sizeof(p->why))) {
            p->why_reason = SBX_REASON_LIFECYCLE_NOT_ALLOWED;
            bad = 1;
        } else if (!sbx_class_allows_secrets(have_class ? &cls : NULL, env->defaults, &p->spec, p->why,
                                             sizeof(p->why))) {
            p->why_reason = SBX_REASON_SECRET_NOT_ALLOWED;
            bad = 1;
        }
    }
    if (!bad) {
        bad = sbx_network_resolve(sb->obj, have_class ? &cls.network : NULL, have_class ? cls.name : NULL, &p->net, p->why,
                                  sizeof(p->why)) < 0;
        if (!bad && p->net.mode == SBX_NET_ISOLATED && !env->deps->netpols_on) {
            snprintf(p->why, sizeof(p->why), "spec.className: SandboxClass \"%.253s\" has spec.network.mode isolated, "
                     "but the controller cannot manage NetworkPolicies (no RBAC for networking.k8s.io "
                     "networkpolicies)", cls.name);
            bad = 1;
        }
    }
    /* A running pod whose spec the class no longer allows keeps the class's network as it
     * is now, narrowed to what the Sandbox asked (a class that narrows, narrows at once). */
    if (bad && have_class) {
        struct sbx_network narrowed;
        char nerr[256];
        size_t dropped = 0;
        if (sbx_network_narrow(sb->obj, &cls.network, cls.name, &narrowed, &dropped, nerr, sizeof(nerr)) == 0 &&
            (narrowed.mode != SBX_NET_ISOLATED || env->deps->netpols_on)) {
            sbx_network_free(&p->net);
            p->net = narrowed;
            p->governed_net = 1;
        }
    }
    if (have_class) sbx_class_free(&cls);
    if (bad) {
        if (p->have_spec) sbx_spec_free(&p->spec);
        if (!p->governed_net) sbx_network_free(&p->net);
        p->have_spec = 0;
        char rerr[256];
        if (sbx_spec_recorded(sb->obj, env->defaults, &p->spec, rerr, sizeof(rerr)) < 0)
            return end_pass(res, outcome_of(invalid_without_pod(env, id->ns, id->name, sb, id->uid, p->why_reason, p->why, err), 0));
        p->have_spec = p->governed = 1;
    }
    p->have_spec = 1;
    sbx_capacity_class(env->capacity, id->uid, p->spec.class_name, p->spec.max_running_per_user,
                       p->spec.per_user_across_namespaces);
    return GO_ON;
}

/* The status fields lifecycle_decide reads (what the Sandbox says of itself). */
static void observe_sandbox(const struct sbx_sandbox_view *sb, struct sbx_observed *o) {
    o->created_ms = sb->meta.created_ms;
    o->generation = sb->meta.generation;
    o->status_last_used_ms = sb->last_used_ms;
    o->status_started_ms = sb->started_ms;
    o->status_stopped_ms = sb->stopped_ms;
    o->status_warm_idle_since_ms = sb->warm_idle_since_ms;
    o->status_phase = sb->phase;
    o->status_reason = sb->ready.reason;
    o->status_last_termination = sb->last_termination;
    if (sb->run.finished) {
        o->run_finished = 1;
        o->run_exit_code = sb->run.exit_code;
        o->run_finished_ms = sb->run.finished_ms;
    }
    o->run_started_ms = sb->run.started_ms;
    o->status_observed_generation = sb->observed_generation;
}

/* What a deleted predecessor of this name left is removed now (uid precondition), not
 * after the garbage collector's discovery resync (30 s for a new CRD): a Sandbox deleted
 * and created again does not wait for it. 0 or -1. */
static int remove_predecessors_objects(struct sbx_pass_env *env, const struct pass_ids *id, struct observation *ob,
                                       struct kube_error *err) {
    const struct sbx_meta *left[4] = {&ob->pod_meta, &ob->claim_view.meta, &ob->svc_meta, &ob->np_meta};
    enum sbx_object_state *state[4] = {&ob->o.pod, &ob->o.pvc, &ob->svc_state, &ob->np_state};
    static const char *const left_res[4] = {"pods", "persistentvolumeclaims", "services", "networkpolicies"};
    for (int i = 0; i < 4; i++) {
        if (*state[i] != SBX_OBJ_FOREIGN || !predecessor_owned(left[i], id->name, id->uid)) continue;
        const char *lname = left[i]->name, *luid = left[i]->uid;
        if (!lname || !luid) continue;
        if (!left[i]->deleting) {
            if (sbx_delete_owned(env->deps, id->ns, left_res[i], lname, luid, err) < 0) return -1;
            LOGI("msg=\"deleted what an earlier Sandbox of this name left\" sandbox=%s %s=%s", id->key, left_res[i],
                 lname);
        }
        *state[i] = SBX_OBJ_TERMINATING;
    }
    return 0;
}

/* Is the running pod built from another template than the spec's now (or under another
 * SandboxClass than the Sandbox's now: spec.className changed, or the namespace's default
 * class did)? 0 or -1 (out of memory). */
static int observe_pod_template(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb,
                                const struct policy *p, struct observation *ob, struct kube_error *err) {
    const char *have = sbx_meta_annotation(&ob->pod_meta, SBX_ANN_TEMPLATE_HASH);
    const char *built_class = sbx_pod_built_class(ob->pod ? &ob->pod_meta : NULL, sb);
    if (built_class && strcmp(built_class, p->spec.class_name ? p->spec.class_name : "") != 0)
        ob->o.pod_template_outdated = 1;
    if (!have || ob->o.pod_template_outdated) return 0;
    struct sbx_owner me = {.name = id->name, .namespace_ = id->ns, .uid = id->uid, .shard = env->deps->shard_label};
    cJSON *want = sbx_build_pod(&me, &p->spec, ob->pod_name, ob->claim);
    struct sbx_meta wm;
    sbx_meta_read(want, &wm);
    const char *h = sbx_meta_annotation(&wm, SBX_ANN_TEMPLATE_HASH);
    if (!h) {
        cJSON_Delete(want);
        kube_error_oom(err);
        return -1;
    }
    ob->o.pod_template_outdated = strcmp(have, h) != 0;
    cJSON_Delete(want);
    return 0;
}

/* Observe: the Sandbox's pod, claim, Service and NetworkPolicy from the caches, what its
 * status and last-used-at say, a fork's source and copy. Ends the pass while what was just
 * created is not in the cache yet, on a last-used-at in the future (rewritten), and when
 * the Sandbox cannot be served at all (no pod name, another user's workspace). */
static enum stage_end pass_observe(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb,
                                   const struct policy *p, struct observation *ob, struct sbx_outcome *res, struct kube_error *err) {
    char okey[512];
    const char *ns = id->ns, *uid = id->uid;
    struct sbx_observed *o = &ob->o;
    if (sbx_name_pod(p->spec.user_id, p->spec.chat_id, ob->pod_name, sizeof(ob->pod_name)) < 0) {
        sbx_capacity_release(env->capacity, uid, 1);
        return end_pass(res, outcome_of(sbx_status_report_invalid(env->deps, ns, id->name, sb, NULL,
                                                       "spec.userID and spec.chatID must not be empty", err), 0));
    }
    /* The claim it controls in the cache (an adopted pool claim keeps its own name), else
     * the one its IDs name. */
    if (!sbx_warm_claim_of(env->warm, uid, ob->claim, sizeof(ob->claim)))
        sbx_claim_name(ob->pod_name, ob->claim, sizeof(ob->claim));
    snprintf(okey, sizeof(okey), "%s/%s", ns, ob->pod_name);
    ob->pod = informer_get(env->deps->pods, okey);
    ob->svc = informer_get(env->deps->services, okey);   /* the Service is named like the pod */
    ob->np = informer_get(env->deps->netpols, okey);     /* and the NetworkPolicy too */
    snprintf(okey, sizeof(okey), "%s/%s", ns, ob->claim);
    ob->pvc = informer_get(env->deps->pvcs, okey);
    sbx_meta_read(ob->pod, &ob->pod_meta);
    sbx_meta_read(ob->svc, &ob->svc_meta);
    sbx_meta_read(ob->np, &ob->np_meta);
    sbx_claim_view_parse(ob->pvc, &ob->claim_view);
    ob->svc_state = sbx_child_state(ob->svc, &ob->svc_meta, uid);
    ob->np_state = sbx_child_state(ob->np, &ob->np_meta, uid);
    if (p->governed && sbx_child_state(ob->pod, &ob->pod_meta, uid) != SBX_OBJ_PRESENT &&
        !(p->spec.lifecycle == SBX_ONE_SHOT && sb->run.finished)) {
        /* No pod of an earlier spec is left to govern: the Sandbox waits for a valid spec. */
        return end_pass(res, outcome_of(invalid_without_pod(env, ns, id->name, sb, uid, p->why_reason, p->why, err), 0));
    }

    int64_t now = kj_now_ms();
    /* Created moments ago and not in the cache yet (this pass is most likely the echo of
     * our own status write): wait for the watch, which queues the key when it shows the
     * object, rather than POST it again. */
    int64_t expecting = 0, e;
    if (!ob->pod && (e = sbx_records_expecting(env->records, uid, SBX_EXPECT_POD, now)) > expecting) expecting = e;
    if (!ob->pvc && (e = sbx_records_expecting(env->records, uid, SBX_EXPECT_CLAIM, now)) > expecting) expecting = e;
    if (expecting > 0) {
        LOGD("msg=\"waiting for the cache to show what was just created\" sandbox=%s", id->key);
        return end_pass(res, sbx_after(expecting));
    }
    o->now_ms = now;
    o->namespace_ = id->ns;
    const char *lu = sb->last_used_at;
    switch (lifecycle_last_used_check(lu, now, &o->last_used_annotation_ms)) {
    case SBX_LAST_USED_FUTURE: {
        /* Taken as now, once: the annotation is rewritten to now (conditionally: a
         * client's newer touch wins), so it cannot keep the sandbox alive forever. */
        int rc = sbx_last_used_rewrite(env->deps, ns, id->name, sb, lu, now, err);
        return end_pass(res, outcome_of(rc, STALE_REQUEUE_MS));   /* the watch brings the rewritten value */
    }
    case SBX_LAST_USED_INVALID:
        sbx_last_used_warn_invalid(env->deps, sb, lu);
        break;
    default:
        break;
    }
    observe_sandbox(sb, o);
    const struct sbx_claim_view *cv = &ob->claim_view;
    o->pvc = sbx_child_state(ob->pvc, &cv->meta, uid);
    o->pvc_bound = cv->bound;
    o->pvc_age_ms = ob->pvc ? now - cv->meta.created_ms : 0;
    o->claim_adopted_ms = cv->adopted_ms;
    /* An adopted claim given up moments ago, its deletion not in the cache yet: gone for
     * this pass (no new pod on it). */
    if (o->pvc == SBX_OBJ_PRESENT && o->claim_adopted_ms && sbx_warm_released(env->warm, uid))
        o->pvc = SBX_OBJ_TERMINATING;
    o->pod = sbx_child_state(ob->pod, &ob->pod_meta, uid);
    if (remove_predecessors_objects(env, id, ob, err) < 0) return end_pass(res, sbx_failed());
    sbx_pod_observe(ob->pod, o);
    o->pod_resize_api_refused = o->pod == SBX_OBJ_PRESENT && sbx_records_resize_was_refused(env->records, uid, ob->pod_meta.uid);
    if (o->pvc == SBX_OBJ_PRESENT && !p->governed) observe_claim_size(env, cv, o, &p->spec);
    if (o->pod == SBX_OBJ_PRESENT && !p->governed && observe_pod_template(env, id, sb, p, ob, err) < 0)
        return end_pass(res, sbx_failed());
    if (o->pod == SBX_OBJ_ABSENT && !o->pvc_bound) o->claim_binding = claim_binding(env, cv, &p->spec);
    if (p->spec.workspace_from && o->pvc == SBX_OBJ_ABSENT && !p->governed) {
        ob->src_why[0] = '\0';
        o->workspace_source_reason = sbx_fork_source(env->deps, env->warm, ns, &p->spec, &ob->src, &ob->src_pvc,
                                                     ob->src_why, sizeof(ob->src_why));
        o->workspace_source_message = ob->src_why;
        if (o->workspace_source_reason && (!strcmp(o->workspace_source_reason, SBX_REASON_WS_SOURCE_FORBIDDEN) ||
                                           !strcmp(o->workspace_source_reason, SBX_REASON_INVALID))) {
            /* Another user's workspace, or a clone beyond the class's ceiling: not a wait
             * but a spec that cannot be applied (no claim is made). */
            return end_pass(res, outcome_of(invalid_without_pod(env, ns, id->name, sb, uid, o->workspace_source_reason,
                                                     ob->src_why, err), 0));
        }
    }
    if (o->pvc == SBX_OBJ_PRESENT && p->spec.workspace_from && !p->governed) {
        if (cv->fork_from && !cv->fork_copied) {
            struct sbx_owner me = {.name = id->name, .namespace_ = ns, .uid = uid, .shard = env->deps->shard_label};
            if (sbx_fork_fill(env->deps, env->capacity, ns, sb, &me, &p->spec, cv, o, ob->copy_msg,
                              sizeof(ob->copy_msg), err) < 0)
                return end_pass(res, sbx_failed());
        }
    }
    return GO_ON;
}

/* Admit: the decision (lifecycle_decide, governed when the spec is the recorded one), a
 * slot of the running cap for a pod it wants, what reclaim may make room, and, at an idle
 * deadline of a class that counts activity, whether the pod is at work after all. */
static enum stage_end pass_admit(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb,
                                 const struct policy *p, struct observation *ob, struct verdict *v,
                                 struct sbx_outcome *res, struct kube_error *err) {
    struct sbx_observed *o = &ob->o;
    struct sbx_decision *d = &v->d;
    const char *uid = id->uid;
    o->admitted = o->pod != SBX_OBJ_ABSENT;
    if (o->pod == SBX_OBJ_PRESENT) sbx_capacity_pod_seen(env->capacity, uid, ob->pod);
    decide(p, o, d);
    if (d->wants_pod && o->pod == SBX_OBJ_ABSENT && o->pvc != SBX_OBJ_FOREIGN) {
        o->admitted = sbx_capacity_admit(env->capacity, uid, p->spec.max_running_per_user, o->now_ms,
                                         &o->queue_position, &o->user_capped, &o->class_capped);
        decide(p, o, d);   /* on the admission */
    } else if (!d->wants_pod && o->workspace_copy != SBX_COPY_RUNNING) {
        /* (A running copy keeps its reservation: its copier, made in this pass, holds the
         * slot once the cache shows it.) */
        sbx_capacity_release(env->capacity, uid, 1);
    }
    sbx_capacity_reclaimable(env->capacity, uid, &p->spec, d, o->pod == SBX_OBJ_PRESENT);
    /* In line for the global cap: idle sandboxes of classes that allow it may make room. */
    if (!o->admitted && o->pod == SBX_OBJ_ABSENT && d->wants_pod && o->queue_position > 0)
        v->reclaim_at = sbx_capacity_reclaim(env->capacity, o->now_ms);

    /* An idle deadline of a class that counts activity: a pod at work is not idle. Asked
     * here, once per deadline reached (not every pass), before anything is destroyed. */
    if (!p->governed && p->spec.activity_cpu_millis > 0 && lifecycle_at_idle_deadline(d) &&
        o->pod == SBX_OBJ_PRESENT && o->pod_phase && !strcmp(o->pod_phase, "Running")) {
        int act = sbx_activity_probe(env->deps, id->ns, id->name, sb, ob->pod_name,
                                     lifecycle_activity_threshold(&p->spec, o), o->now_ms, err);
        if (act < 0) return end_pass(res, sbx_failed());
        if (act == SBX_STALE || act == SBX_ACTIVE) return end_pass(res, act == SBX_STALE ? sbx_stale() : sbx_done());
    }
    return GO_ON;
}

/* Write the status the decision describes, with the Events of its transition. fence_rv:
 * conditional on that version and always sent (the fence); new_rv receives the version it
 * made. 0, SBX_STALE or -1. */
static int write_status(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb, const struct policy *p,
                        const struct observation *ob, const struct sbx_decision *d, const char *fence_rv,
                        char *new_rv, size_t new_rv_len, struct kube_error *err) {
    cJSON *st = sbx_status_desired(sb, d, ob->pod, ob->pod_name, ob->claim, ob->o.now_ms);
    if (st && status_endpoints(st, &p->spec, id->ns, ob->pod_name, ob->svc, ob->svc_state) < 0) {
        cJSON_Delete(st);
        st = NULL;
    }
    if (!st) {
        kube_error_oom(err);
        return -1;
    }
    int rc = sbx_status_write(env->deps, id->ns, id->name, sb, st, fence_rv, new_rv, new_rv_len, err);
    cJSON_Delete(st);
    if (rc != 0) return rc;   /* SBX_STALE: changed since; decide again on the newer version */
    sbx_event_transition(env->deps, sb, &ob->o, d, ob->pod_name);
    sbx_event_invalid(env->deps, sb, d);
    return 0;
}

/* Fence: nothing is destroyed on a stale view. The status write that records the decision
 * (a stop: Stopping, reason Idle or Paused) goes first and is conditional on the
 * resourceVersion the decision was made on. A touch the API server accepted before it
 * makes it fail (decide again, on a fresh read); one accepted after it finds the stop
 * recorded and wakes the sandbox, because the Sandbox DELETE of the report stage is
 * conditional on the version this write produced. */
static enum stage_end pass_fence(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb,
                                 const struct policy *p, const struct observation *ob, struct verdict *v,
                                 struct sbx_outcome *res, struct kube_error *err) {
    if (!(v->d.actions & FENCED)) return GO_ON;
    const char *cur_rv = sb->meta.resource_version;
    if (!cur_rv) {
        kube_error_set(err, "sandbox %s has no resourceVersion", id->key);
        return end_pass(res, sbx_failed());
    }
    int rc = write_status(env, id, sb, p, ob, &v->d, cur_rv, v->rv, sizeof(v->rv), err);
    if (rc != 0) return end_pass(res, outcome_of(rc, 0));
    v->fenced = 1;
    if (v->d.run.finished) {
        sbx_count(&env->counters->runs_finished);
        LOGI("msg=\"run finished\" sandbox=%s exit_code=%d", id->key, v->d.run.exit_code);
    }
    return GO_ON;
}

/* ---- act: steps in order, each change of the observation decided on in one place ---------
 *
 * Each step acts on the decision as it stands. A step whose act changed what is observed
 * (a warm claim adopted, a name taken by a stranger, a fork's claim waiting for its copy,
 * the workspace held by a volume helper) says so, and the pass decides once more on the
 * new observation, in decide(), before the next step; no step decides itself. The steps
 * run once each, so a pass decides at most once per step. */

enum act_end { ACT_NEXT, ACT_CHANGED, ACT_END };

/* What the steps share: the pass's inputs, its decision, its outcome and error. */
struct act {
    struct sbx_pass_env *env;
    const struct pass_ids *id;
    const struct sbx_sandbox_view *sb;
    const struct policy *p;
    struct observation *ob;
    struct sbx_decision *d;
    struct sbx_owner owner;
    struct sbx_outcome *res;
    struct kube_error *err;
};

static enum act_end act_failed(struct act *a) {
    *a->res = sbx_failed();
    return ACT_END;
}

/* The NetworkPolicy first: an isolated sandbox's pod starts only once it is in place. */
static enum act_end act_netpol(struct act *a) {
    struct sbx_pass_env *env = a->env;
    struct observation *ob = a->ob;
    const struct policy *p = a->p;
    if ((a->d->actions & SBX_ACT_DELETE_SANDBOX) || !env->deps->netpols_on || (p->governed && !p->governed_net))
        return ACT_NEXT;
    if (sbx_expose_netpol(env->deps, a->id->ns, a->sb, &a->owner, &p->spec, &p->net, ob->pod_name, ob->pod,
                          &ob->pod_meta, ob->np, ob->np_state, env->apiserver, env->napiserver, a->err) < 0) {
        if (a->d->actions & SBX_ACT_CREATE_POD) sbx_capacity_release(env->capacity, a->id->uid, 0);
        return act_failed(a);
    }
    return ACT_NEXT;
}

/* A warm workspace: a Bound claim of its pool becomes its own (one conditional PATCH), and
 * the pod can start in this very pass. */
static enum act_end act_adopt_claim(struct act *a) {
    struct sbx_pass_env *env = a->env;
    struct observation *ob = a->ob;
    struct sbx_observed *o = &ob->o;
    const struct policy *p = a->p;
    if (!(a->d->actions & SBX_ACT_CREATE_PVC) || p->spec.workspace_from ||
        controls_unseen_claim(env, a->id->ns, a->sb, a->id->uid))
        return ACT_NEXT;
    cJSON *adopted = NULL;
    int r = sbx_warm_adopt(env->warm, a->id->ns, &a->owner, &p->spec, &adopted, ob->claim, sizeof(ob->claim), a->err);
    if (r < 0) return act_failed(a);
    if (r == 0) return ACT_NEXT;
    cJSON_Delete(ob->pvc);
    ob->pvc = adopted;
    sbx_claim_view_parse(ob->pvc, &ob->claim_view);
    o->pvc = SBX_OBJ_PRESENT;
    o->pvc_bound = 1;
    o->pvc_age_ms = 0;
    o->claim_binding = SBX_BINDING_UNKNOWN;
    observe_claim_size(env, &ob->claim_view, o, &p->spec);
    return ACT_CHANGED;
}

/* The workspace claim (a clone only once its source is ready: the decision makes none
 * before). */
static enum act_end act_create_claim(struct act *a) {
    struct sbx_pass_env *env = a->env;
    struct observation *ob = a->ob;
    struct sbx_observed *o = &ob->o;
    const struct policy *p = a->p;
    if (!(a->d->actions & SBX_ACT_CREATE_PVC)) return ACT_NEXT;
    cJSON *obj = !p->spec.workspace_from ? sbx_build_pvc(&a->owner, &p->spec, ob->pod_name, ob->claim)
                 : ob->src.claim ? sbx_build_pvc_from(&a->owner, &p->spec, ob->pod_name, ob->claim, &ob->src) : NULL;
    int r = obj ? sbx_child_create(env->deps, a->id->ns, "persistentvolumeclaims", SBX_EXPECT_CLAIM, obj, ob->claim,
                                   a->id->uid, a->err)
          : p->spec.workspace_from && !ob->src.claim ? kube_error_set(a->err, "the workspace source's claim is not known")
                                                      : kube_error_oom(a->err);
    cJSON_Delete(obj);
    if (r < 0) return act_failed(a);
    if (r == 1) {
        o->pvc = SBX_OBJ_FOREIGN;   /* the name is a stranger's */
        sbx_count(&env->counters->conflicts);
        return ACT_CHANGED;
    }
    if (p->spec.workspace_from && ob->src.copy) {
        /* A fork's claim that a copy fills, made just now: no pod on it before the copy is
         * done. The next pass makes the copier in the slot admitted for the pod (or it
         * waits in line for one). */
        o->pvc = SBX_OBJ_PRESENT;
        o->workspace_copy = SBX_COPY_WAITING;
        return ACT_CHANGED;
    }
    return ACT_NEXT;
}

/* A stopped Sandbox's workspace may be held by a volume helper pod (Yao's Volume client
 * reading or writing its files): asked of the API server just before the pod would start
 * on the claim. */
static enum act_end act_check_helper(struct act *a) {
    struct sbx_observed *o = &a->ob->o;
    if (!lifecycle_workspace_may_be_held(o, a->d)) return ACT_NEXT;
    int busy = sbx_volume_helper_busy(a->env->deps, a->id->ns, a->id->uid, a->err);
    if (busy < 0) return act_failed(a);
    if (!busy) return ACT_NEXT;
    o->workspace_helper = 1;
    return ACT_CHANGED;
}

/* The pod, with the class's host aliases at the API server's addresses of the moment. */
static enum act_end act_create_pod(struct act *a) {
    struct sbx_pass_env *env = a->env;
    struct observation *ob = a->ob;
    const struct policy *p = a->p;
    const char *uid = a->id->uid;
    if (!(a->d->actions & SBX_ACT_CREATE_POD)) return ACT_NEXT;
    struct sbx_spec with_hosts = p->spec;   /* a shallow copy: it owns only what it adds */
    if (sbx_host_aliases_resolve(env->deps, p->spec.host_aliases, &with_hosts.host_aliases_resolved, a->err) < 0) {
        sbx_event_record(env->deps, a->sb, "Warning", "HostAliasUnresolved", a->err->message);
        sbx_capacity_release(env->capacity, uid, 0);
        return act_failed(a);
    }
    cJSON *obj = sbx_build_pod(&a->owner, &with_hosts, ob->pod_name, ob->claim);
    cJSON_Delete(with_hosts.host_aliases_resolved);
    int r = obj ? sbx_child_create(env->deps, a->id->ns, "pods", SBX_EXPECT_POD, obj, ob->pod_name, uid, a->err)
                : kube_error_oom(a->err);
    cJSON_Delete(obj);
    if (r < 0) {
        sbx_capacity_release(env->capacity, uid, 0);
        return act_failed(a);
    }
    if (r == 1) {
        sbx_capacity_release(env->capacity, uid, 1);
        ob->o.pod = SBX_OBJ_FOREIGN;   /* the name is a stranger's */
        sbx_count(&env->counters->conflicts);
        return ACT_CHANGED;
    }
    LOGI("msg=\"pod created\" sandbox=%s pod=%s", a->id->key, ob->pod_name);
    a->d->observed_generation = ob->o.generation;   /* the pod just built from this spec */
    if (p->spec.lifecycle == SBX_ONE_SHOT) sbx_count(&env->counters->runs_started);
    return ACT_NEXT;
}

/* A claim grown, what the decision deletes (fenced), an adopted claim given up. */
static enum act_end act_change_workspace(struct act *a) {
    struct sbx_pass_env *env = a->env;
    struct observation *ob = a->ob;
    const struct sbx_decision *d = a->d;
    const char *ns = a->id->ns;
    if (((d->actions & SBX_ACT_EXPAND_PVC) && expand_claim(env, ns, ob->claim, a->p->spec.workspace_bytes, a->err) < 0) ||
        ((d->actions & SBX_ACT_DELETE_POD) &&
         sbx_delete_owned(env->deps, ns, "pods", ob->pod_name, ob->pod_meta.uid, a->err) < 0) ||
        ((d->actions & SBX_ACT_DELETE_PVC) &&
         sbx_delete_owned(env->deps, ns, "persistentvolumeclaims", ob->claim, ob->claim_view.meta.uid, a->err) < 0) ||
        ((d->actions & SBX_ACT_RELEASE_CLAIM) &&
         release_warm_claim(env, ns, a->id->key, a->id->uid, ob->pod_name, ob->claim, ob->claim_view.meta.uid,
                            a->err) < 0))
        return act_failed(a);
    return ACT_NEXT;
}

/* Warm-idle: the pod's CPU down to the floor (fenced) or back up (a wake), in place. */
static enum act_end act_resize(struct act *a) {
    struct sbx_pass_env *env = a->env;
    struct observation *ob = a->ob;
    const struct sbx_decision *d = a->d;
    if (!(d->actions & (SBX_ACT_RESIZE_DOWN | SBX_ACT_RESIZE_UP))) return ACT_NEXT;
    int r = sbx_pod_resize_cpu(env->deps, a->id->ns, ob->pod_name, ob->pod_meta.uid, ob->pod_meta.resource_version,
                               d->resize_cpu_request_millis, d->resize_cpu_limit_millis, a->err);
    if (r == SBX_STALE) {
        *a->res = sbx_stale();
        return ACT_END;
    }
    if (r == SBX_RESIZE_REFUSED) {
        /* Never on this pod: noted, and the next pass (at once) acts as without warm-idle —
         * the idle action, or a wake's replacement of the pod. */
        char msg[KUBE_ERR_MAX + 128];
        snprintf(msg, sizeof(msg), "the API server refused to resize the pod's CPU in place (pods/resize): %s; %s",
                 a->err->message, (d->actions & SBX_ACT_RESIZE_DOWN) ? "acting on the idle deadline instead"
                                                                      : "replacing the pod, the workspace is kept");
        LOGW("msg=\"pod resize refused\" sandbox=%s pod=%s err=\"%s\"", a->id->key, ob->pod_name, a->err->message);
        sbx_records_resize_refused(env->records, a->id->uid, ob->pod_meta.uid);
        sbx_event_record(env->deps, a->sb, "Warning",
                         (d->actions & SBX_ACT_RESIZE_DOWN) ? SBX_EVENT_WARM_IDLE_FAILED : SBX_EVENT_WAKE_FAILED, msg);
        *a->res = sbx_stale();
        return ACT_END;
    }
    if (r < 0) {
        char msg[KUBE_ERR_MAX + 96];
        snprintf(msg, sizeof(msg), "resizing the pod's CPU in place (pods/resize) failed: %s", a->err->message);
        sbx_event_record(env->deps, a->sb, "Warning", SBX_EVENT_WARM_IDLE_FAILED, msg);
        return act_failed(a);
    }
    return ACT_NEXT;
}

/* The Service (not for a Sandbox going, nor one governed by an earlier spec). */
static enum act_end act_service(struct act *a) {
    if ((a->d->actions & SBX_ACT_DELETE_SANDBOX) || a->p->governed) return ACT_NEXT;
    struct observation *ob = a->ob;
    if (sbx_expose_service(a->env->deps, a->id->ns, a->sb, &a->owner, &a->p->spec, ob->pod_name, ob->svc, ob->svc_state,
                           a->err) < 0)
        return act_failed(a);
    return ACT_NEXT;
}

static enum act_end (*const act_steps[])(struct act *) = {
    act_netpol, act_adopt_claim, act_create_claim, act_check_helper, act_create_pod, act_change_workspace, act_resize,
    act_service,
};

/* Act: the steps in order; after a step that changed the observation, the pass decides
 * again (decide) before the next. */
static enum stage_end pass_act(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb,
                               const struct policy *p, struct observation *ob, struct verdict *v,
                               struct sbx_outcome *res, struct kube_error *err) {
    struct act a = {.env = env, .id = id, .sb = sb, .p = p, .ob = ob, .d = &v->d, .res = res, .err = err,
                    .owner = {.name = id->name, .namespace_ = id->ns, .uid = id->uid, .shard = env->deps->shard_label}};
    for (size_t i = 0; i < sizeof(act_steps) / sizeof(act_steps[0]); i++) {
        enum act_end e = act_steps[i](&a);
        if (e == ACT_END) return END_PASS;
        if (e == ACT_CHANGED) decide(p, &ob->o, &v->d);
    }
    return GO_ON;
}

/* Report: the status (unless the fence wrote it), the Sandbox removed when the decision
 * says so (conditional on the fence's version: a touch since wakes it instead), and when
 * to look again. Always ends the pass. */
static enum stage_end pass_report(struct sbx_pass_env *env, const struct pass_ids *id, const struct sbx_sandbox_view *sb,
                                  const struct policy *p, const struct observation *ob, const struct verdict *v,
                                  struct sbx_outcome *res, struct kube_error *err) {
    const struct sbx_observed *o = &ob->o;
    const struct sbx_decision *d = &v->d;
    if (!v->fenced) {
        int rc = write_status(env, id, sb, p, ob, d, NULL, NULL, 0, err);
        if (rc != 0) return end_pass(res, outcome_of(rc, 0));
    }
    if (d->actions & SBX_ACT_DELETE_SANDBOX) {
        long st = sbx_sandbox_delete(env->deps, id->ns, id->name, id->uid, v->rv, err);
        if (st == 409) {
            /* Written to since the stop was recorded (a touch): it wakes instead. */
            LOGI("msg=\"sandbox changed after the stop was recorded; not removed\" sandbox=%s", id->key);
            return end_pass(res, sbx_stale());
        }
        if (st != 200 && st != 202 && st != 404) return end_pass(res, sbx_failed());
        if (st != 404) {
            sbx_event_record(env->deps, sb, "Normal", "Removed", d->message);
            LOGI("msg=\"sandbox removed\" sandbox=%s reason=%s", id->key, d->reason);
        }
    }
    int64_t requeue = d->requeue_after_ms;
    /* Waiting for the cap: a freed slot queues those first in line; the others look
     * again now and then to keep status.queuePosition current. */
    if (!o->admitted && o->pod == SBX_OBJ_ABSENT && d->wants_pod && (requeue <= 0 || requeue > QUEUE_REFRESH_MS))
        requeue = QUEUE_REFRESH_MS;
    /* ... and once a running one will have been idle long enough to be reclaimed. */
    if (v->reclaim_at > o->now_ms && v->reclaim_at - o->now_ms < requeue) requeue = v->reclaim_at - o->now_ms;
    return end_pass(res, sbx_after(requeue));
}

/* One pass over the Sandbox sb (from the cache, or a fresh read after a conflict): done,
 * after, failed (err set), or stale: sb is no longer current, decide again. */
static struct sbx_outcome reconcile_object(struct sbx_pass_env *env, const char *key, const char *ns, const char *name,
                                           const struct sbx_sandbox_view *sb, struct kube_error *err) {
    struct pass_ids id = {.key = key, .ns = ns, .name = name, .uid = sb->meta.uid};
    struct sbx_outcome res = sbx_failed();
    struct policy p;
    struct observation ob;
    struct verdict v;
    memset(&p, 0, sizeof(p));
    memset(&ob, 0, sizeof(ob));
    memset(&v, 0, sizeof(v));
    if (!id.uid) {
        kube_error_set(err, "sandbox %s has no uid", key);
    } else if (pass_gate(env, &id, sb, &res, err) == GO_ON &&
               pass_resolve_policy(env, &id, sb, &p, &res, err) == GO_ON &&
               pass_observe(env, &id, sb, &p, &ob, &res, err) == GO_ON &&
               pass_admit(env, &id, sb, &p, &ob, &v, &res, err) == GO_ON &&
               pass_fence(env, &id, sb, &p, &ob, &v, &res, err) == GO_ON &&
               pass_act(env, &id, sb, &p, &ob, &v, &res, err) == GO_ON) {
        pass_report(env, &id, sb, &p, &ob, &v, &res, err);
    }
    if (p.have_spec) sbx_spec_free(&p.spec);
    sbx_network_free(&p.net);
    cJSON_Delete(ob.np);
    cJSON_Delete(ob.pod);
    cJSON_Delete(ob.pvc);
    cJSON_Delete(ob.svc);
    cJSON_Delete(ob.src_pvc);
    return res;
}

struct sbx_outcome sbx_pass_reconcile(struct sbx_pass_env *env, const char *key, const char *ns, const char *name,
                                      struct kube_error *err) {
    cJSON *sb = informer_get(env->deps->sandboxes, key);
    if (!sb) {
        /* Gone: the garbage collector deletes what it owned, but only once it knows the
         * Sandbox kind (its discovery resyncs every 30 s); sweep our orphans now. (Its
         * record's reservation ended with the deletion.) */
        return sbx_orphans_sweep(env->deps, key, ns, name, err);
    }
    struct sbx_sandbox_view view;   /* parsed once for the whole pass; it points into sb */
    sbx_sandbox_view_parse(sb, &view);
    struct sbx_outcome res = reconcile_object(env, key, ns, name, &view, err);
    cJSON_Delete(sb);
    if (res.kind == SBX_OUTCOME_STALE) {
        /* The cache was behind the API server: nothing was destroyed; decide again on the
         * newer version once the cache has it. */
        sbx_count(&env->counters->conflicts);
        LOGI("msg=\"sandbox changed since the decision; deciding again\" sandbox=%s", key);
        res = sbx_after(STALE_REQUEUE_MS);
    }
    return res;
}
