/* sandbox/io/orphans.c — what a deleted Sandbox left behind: its pod, claim, Service and
 * NetworkPolicy (both named like the pod) are found by the names its record kept (from
 * the Sandbox's deletion, or from the deletion of an object it owned; a walk over the
 * caches only when this process saw neither), and deleted, with uid preconditions, once
 * the garbage collector had its grace period. Objects that lost every owner reference
 * (`kubectl delete sandbox --cascade=orphan`) are not found by name: no garbage collector
 * comes for them, so sbx_orphans_sweep_ownerless deletes them as soon as the informers
 * show them (orphans_decide.c says which). Until then such a pod holds its user's slot
 * (capacity.c, sbx_slots_orphan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/kjson.h"
#include "base/log.h"
#include "sandbox/model/builders.h"
#include "sandbox/model/naming.h"
#include "sandbox/io/orphans.h"
#include "sandbox/decide/orphans_decide.h"
#include "sandbox/io/owned.h"
#include "sandbox/io/warm.h"
#include "sandbox/decide/shard_decide.h"
#include "sandbox/model/spec.h"

struct orphan_ctx {
    const char *ns, *owner;
    const int *shard_key;   /* {shards, shard}: an object of another shard's user is never ours to delete */
    struct { char name[256], uid[64]; } found[8];
    int n;
};

/* Collect objects in ns whose controller reference names the (deleted) owner. */
static int find_orphans(void *ud, const char *key, const cJSON *obj) {
    struct orphan_ctx *o = ud;
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    const char *ns = m.namespace_;
    if (!ns || strcmp(ns, o->ns) != 0) return 0;
    /* Sharded: the Sandbox of an object made for a user of another shard is not in this
     * shard's cache whether or not it exists (a label left by another --shards, not yet
     * relabelled): its absence here says nothing. */
    const char *user = sbx_meta_annotation(&m, SBX_ANN_USER_ID);
    if (o->shard_key[0] > 1 && user && sbx_shard_of(ns, user, o->shard_key[0]) != o->shard_key[1]) return 0;
    /* Controlled by a Sandbox of this API group of that name (another group's Sandbox kind
     * is not ours to sweep). */
    const char *name = m.sandbox_owner;
    if (name && !strcmp(name, o->owner) && o->n < 8 && !m.deleting) {
        snprintf(o->found[o->n].name, sizeof(o->found[o->n].name), "%s", m.name ? m.name : "");
        snprintf(o->found[o->n].uid, sizeof(o->found[o->n].uid), "%s", m.uid ? m.uid : "");
        o->n++;
    }
    return o->n >= 8;
}

/* The uid under which a deletion this process did not see is recorded. */
static void unseen_deletion_uid(const char *key, char *uid, size_t uidlen) {
    snprintf(uid, uidlen, "deleted:%s", key);
}

void sbx_orphans_deleted(const struct sbx_deps *deps, struct sbx_warm *warm, const char *key, const char *uid, const char *user,
                         const char *chat, const char *own_claim) {
    char pod[SBX_NAME_MAX + 1] = "", claim[128] = "";
    if (user && chat && sbx_name_pod(user, chat, pod, sizeof(pod)) == 0) {
        if (own_claim) snprintf(claim, sizeof(claim), "%s", own_claim);
        else if (!sbx_warm_claim_of(warm, uid, claim, sizeof(claim)))   /* an adopted claim keeps its own name */
            sbx_claim_name(pod, claim, sizeof(claim));
    }
    sbx_records_deleted(deps->records, key, uid, pod, claim);
}

/* Deleting a namespace of 10,000 Sandboxes takes minutes: the deletions of their pods and
 * claims go on echoing long after each Sandbox's tombstone was purged, and each echo of a
 * Sandbox without a record made the sweep walk every cache (a quadratic delete: a core for
 * 10 minutes). The object of the echo names what the walk would have looked for. */
void sbx_orphans_note(const struct sbx_deps *deps, struct sbx_warm *warm, const char *key, const struct sbx_meta *m,
                      int obj_is_claim) {
    char uid[600];
    struct sbx_gone names;
    if (sbx_records_gone(deps->records, key, uid, sizeof(uid), &names)) return;
    /* Before the cache is synced a missing Sandbox may simply not be listed yet; a present
     * one (maybe a same-named successor) is reconciled, not swept. */
    if (!informer_synced(deps->sandboxes) || informer_has(deps->sandboxes, key)) return;
    unseen_deletion_uid(key, uid, sizeof(uid));
    sbx_orphans_deleted(deps, warm, key, uid, sbx_meta_annotation(m, SBX_ANN_USER_ID),
                        sbx_meta_annotation(m, SBX_ANN_CHAT_ID), obj_is_claim ? m->name : NULL);
}

/* The garbage collector normally deletes a removed Sandbox's objects within moments; the
 * controller steps in only for what is still there after this grace period: one whole
 * discovery resync of the garbage collector (30 s; it learns a new CRD's kind only then),
 * so it acts only where the collector did not. With 3 s it deleted, on a mass delete
 * (a namespace of 1000 Sandboxes), 1.5 objects per Sandbox that the backlogged collector
 * and namespace controller were about to delete themselves: requests, 404s and 409s for
 * nothing. */
#define SWEEP_GRACE_MS 30000

/* The Sandbox ns/name no longer exists: once its objects have outlived the grace period,
 * delete the pods, PVCs, Services and NetworkPolicies it controlled (uid preconditions keep a same-named
 * successor's objects safe). After: look again when the grace ends; forget once nothing
 * of it is left (the key leaves the queue for good). */
struct sbx_outcome sbx_orphans_sweep(const struct sbx_deps *deps, const char *key, const char *ns, const char *name,
                                     struct kube_error *err) {
#define KINDS 4
    static const char *const resources[KINDS] = {"pods", "persistentvolumeclaims", "services", "networkpolicies"};
    struct informer *caches[KINDS] = {deps->pods, deps->pvcs, deps->services, deps->netpols};
    struct orphan_ctx o[KINDS];
    for (int i = 0; i < KINDS; i++) o[i] = (struct orphan_ctx){.ns = ns, .owner = name, .shard_key = deps->shard_key};
    struct sbx_gone names;
    char uid[600] = "";
    int known = sbx_records_gone(deps->records, key, uid, sizeof(uid), &names);
    if (known && names.swept_ms) {
        /* Swept already (a tombstone): this pass is an echo of the deletions the sweep
         * waited for. (The garbage collector deletes what a race may still create.) */
        return sbx_forget();
    }
    if (known && names.pod[0]) {
        /* The usual case: the names are known, two cache lookups. */
        const char *objs[KINDS] = {names.pod, names.claim, names.pod, names.pod};
        for (int i = 0; i < KINDS; i++) {
            char okey[512];
            snprintf(okey, sizeof(okey), "%s/%s", ns, objs[i]);
            cJSON *obj = informer_get(caches[i], okey);
            if (obj) find_orphans(&o[i], okey, obj);
            cJSON_Delete(obj);
        }
    } else {
        /* Deleted before this process saw it: walk the caches (once: with nothing found,
         * the key becomes a tombstone). */
        for (int i = 0; i < KINDS; i++) informer_foreach(caches[i], find_orphans, &o[i]);
    }
    if (!uid[0]) {
        /* No record (deleted before this process saw it, a restart): note the deletion
         * now, so the tombstone or the grace below run from here. */
        unseen_deletion_uid(key, uid, sizeof(uid));
        sbx_records_deleted(deps->records, key, uid, "", "");
    }
    if (o[0].n + o[1].n + o[2].n + o[3].n == 0) {
        /* Nothing left: a tombstone keeps the next echo from walking again. */
        sbx_records_swept(deps->records, uid, kj_now_ms());
        return sbx_forget();
    }
    int64_t now = kj_now_ms();
    int64_t first = sbx_records_orphans_seen(deps->records, uid, now);
    if (now - first < SWEEP_GRACE_MS) return sbx_after(SWEEP_GRACE_MS - (now - first));
    for (int i = 0; i < KINDS; i++)
        for (int j = 0; j < o[i].n; j++) {
            if (sbx_delete_owned(deps, ns, resources[i], o[i].found[j].name, o[i].found[j].uid, err) < 0) return sbx_failed();
            LOGI("msg=\"deleted orphan\" sandbox=%s/%s %s=%s", ns, name, resources[i], o[i].found[j].name);
        }
    /* Look once more after another grace: deleted objects leave the cache (or show their
     * deletionTimestamp), then the record goes. */
    sbx_records_orphans_deleted(deps->records, uid, kj_now_ms());
    return sbx_after(SWEEP_GRACE_MS);
#undef KINDS
}

#define OWNERLESS_PER_PASS 64

struct ownerless_ctx {
    const char *ns;
    const int *shard_key;
    struct { char name[256], uid[64]; } found[OWNERLESS_PER_PASS];
    int n, more;
};

static int find_ownerless(void *ud, const char *key, const cJSON *obj) {
    struct ownerless_ctx *o = ud;
    struct sbx_meta m;
    (void)key;
    if (!sbx_orphan_ownerless(obj)) return 0;
    sbx_meta_read(obj, &m);
    if (strcmp(m.namespace_, o->ns) != 0) return 0;
    /* Sharded: an object made for a user of another shard is that shard's to judge. */
    const char *user = sbx_meta_annotation(&m, SBX_ANN_USER_ID);
    if (o->shard_key[0] > 1 && user && sbx_shard_of(m.namespace_, user, o->shard_key[0]) != o->shard_key[1]) return 0;
    if (o->n == OWNERLESS_PER_PASS) {
        o->more = 1;
        return 1;
    }
    snprintf(o->found[o->n].name, sizeof(o->found[o->n].name), "%s", m.name);
    snprintf(o->found[o->n].uid, sizeof(o->found[o->n].uid), "%s", m.uid);
    o->n++;
    return 0;
}

struct sbx_outcome sbx_orphans_sweep_ownerless(const struct sbx_deps *deps, const char *ns, struct kube_error *err) {
    static const char *const resources[] = {"pods", "persistentvolumeclaims", "services", "networkpolicies"};
    struct informer *caches[] = {deps->pods, deps->pvcs, deps->services, deps->netpols};
    struct ownerless_ctx *o = calloc(1, sizeof(*o));
    int rc = 0, more = 0;

    if (!o) {
        kube_error_oom(err);
        return sbx_failed();
    }
    for (size_t i = 0; i < sizeof(caches) / sizeof(caches[0]) && rc == 0; i++) {
        memset(o, 0, sizeof(*o));
        o->ns = ns;
        o->shard_key = deps->shard_key;
        if (caches[i]) informer_foreach(caches[i], find_ownerless, o);
        more |= o->more;
        for (int j = 0; j < o->n; j++) {
            if (sbx_delete_owned(deps, ns, resources[i], o->found[j].name, o->found[j].uid, err) < 0) {
                rc = -1;
                break;
            }
            LOGI("msg=\"deleted an object of the controller with no owner left\" namespace=%s %s=%s uid=%s", ns,
                 resources[i], o->found[j].name, o->found[j].uid);
        }
    }
    free(o);
    if (rc < 0) return sbx_failed();
    return more ? sbx_after(1000) : sbx_done();   /* the next batch, once these deletions echo */
}
