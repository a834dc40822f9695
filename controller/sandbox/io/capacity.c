/* sandbox/io/capacity.c — the running cap's glue to the caches: the informer handlers feed
 * sandbox/decide/capacity_decide.c (a pod controlled by a Sandbox, or a fork's copier, started or
 * stopped holding a slot, a Sandbox appeared or went), a freed slot queues exactly the Sandboxes first in line, and
 * the pass asks whether its Sandbox may start a pod. Nothing here walks a cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kjson.h"
#include "base/log.h"
#include "sandbox/model/builders.h"
#include "sandbox/io/capacity.h"
#include "sandbox/model/objects.h"
#include "sandbox/decide/orphans_decide.h"
#include "sandbox/io/reclaim.h"
#include "sandbox/decide/reconcile_observe.h"
#include "sandbox/decide/shard_decide.h"
#include "sandbox/model/workspacecopy.h"

/* A capacity slot reserved for a pod we just created stays counted this long even if
 * the pod has not reached the cache yet. */
#define RESERVATION_MS 30000

struct sbx_capacity {
    const struct sbx_deps *deps;
    struct sbx_cap_limits limits;
    struct sbx_slots *slots;   /* the state, with its own lock (capacity_decide.h) */
};

struct sbx_capacity *sbx_capacity_new(const struct sbx_deps *deps, const struct sbx_cap_limits *limits) {
    struct sbx_capacity *cap = calloc(1, sizeof(*cap));
    if (!cap) return NULL;
    cap->deps = deps;
    cap->limits = *limits;
    if (!(cap->slots = sbx_slots_new(&cap->limits))) {
        free(cap);
        return NULL;
    }
    return cap;
}

void sbx_capacity_free(struct sbx_capacity *cap) {
    if (!cap) return;
    sbx_slots_free(cap->slots);
    free(cap);
}

/* The uid of the Sandbox whose slot pod holds, or NULL (it points into pod): the Sandbox
 * that controls it, if it exists, is not terminating and has not ended (a finished
 * one-shot's pod, kept for its log, runs nothing). Whether that Sandbox is really in the
 * cache is capacity_decide.c's to know: a pod naming anything else holds nothing. A fork's
 * copier (SBX_ANN_COPY_FOR) holds the slot of the Sandbox it fills (its ownerReference to
 * it is not the controller one) from its creation until it is deleted, finished or not:
 * the Sandbox's pod takes the slot over from it (sbx_capacity_keep), and a failed copy
 * keeps it until its retry. */
static const char *slot_owner(const cJSON *pod) {
    struct sbx_meta m;
    sbx_meta_read(pod, &m);
    if (!pod || m.deleting) return NULL;
    if (sbx_meta_annotation(&m, SBX_ANN_COPY_FOR)) {
        const cJSON *r;
        cJSON_ArrayForEach(r, m.owner_refs) {
            const char *kind = kj_str(r, "kind");
            if (kind && !strcmp(kind, SBX_KIND)) return kj_str(r, "uid");
        }
        return NULL;
    }
    if (sbx_pod_finished(pod)) return NULL;
    return m.sandbox_owner_uid;
}

static void queue_key(void *ud, const char *key) {
    struct sbx_capacity *cap = ud;
    queue_add(cap->deps->queue, key);
}

/* Queue the Sandboxes first in line, as many as there are free slots. */
void sbx_capacity_wake(struct sbx_capacity *cap) {
    size_t n = sbx_slots_wake(cap->slots, kj_now_ms(), queue_key, cap);
    if (n) LOGD("msg=\"capacity freed\" woken=%zu", n);
}

/* A Sandbox appeared, changed or went. */
void sbx_capacity_on_sandbox(struct sbx_capacity *cap, const char *key, const struct sbx_sandbox_view *old,
                             const struct sbx_sandbox_view *cur) {
    if (!cur) {
        const char *uid = old ? old->meta.uid : NULL;
        if (uid) sbx_slots_sandbox_gone(cap->slots, uid);
        sbx_capacity_wake(cap);   /* its pods count no more */
        return;
    }
    const char *uid = cur->meta.uid, *user = cur->user_id;
    if (!uid) return;
    /* Its status says it waits: it keeps its place in line before its first pass (after a
     * restart, the oldest stay first whatever order the workers take the keys in). */
    const char *reason = cur->ready.reason;
    int waiting = reason && !cur->meta.deleting &&
                  (!strcmp(reason, SBX_REASON_CAPACITY) || !strcmp(reason, SBX_REASON_USER_CAPACITY));
    if (sbx_slots_sandbox(cap->slots, uid, key, user ? user : "", cur->meta.created_ms,
                              waiting) < 0)
        LOGW("msg=\"out of memory recording a Sandbox for the running cap\" sandbox=%s", key);
    /* First seen (the initial list after a restart): a class it names counts its slot at
     * once, before any pass, so no Sandbox of that class is admitted past the class's cap
     * meanwhile. (A Sandbox that takes the default class counts in it from its first pass.) */
    const char *cls = cur->class_name;
    if (!old && cls && *cls && sbx_slots_class(cap->slots, uid, cls, -1, 0) < 0)
        LOGW("msg=\"out of memory recording a Sandbox's class for the running cap\" sandbox=%s", key);
}

/* The uid of pod if it is one of ours left with no owner and still running (so it holds a
 * slot of its user until the ownerless sweep's delete reaches it), of this controller's
 * shard; else NULL. */
static const char *orphan_slot(const struct sbx_capacity *cap, const cJSON *pod, struct sbx_meta *m) {
    if (!pod || !sbx_orphan_ownerless(pod) || sbx_pod_finished(pod)) return NULL;
    sbx_meta_read(pod, m);
    const char *user = sbx_meta_annotation(m, SBX_ANN_USER_ID);
    const int *sk = cap->deps->shard_key;
    if (sk[0] > 1 && sbx_shard_of(m->namespace_, user ? user : "", sk[0]) != sk[1]) return NULL;
    return m->uid;
}

/* An ownerless pod of ours appeared or stopped holding a slot (orphan_slot). */
static void on_orphan_pod(struct sbx_capacity *cap, const cJSON *old, const cJSON *cur) {
    struct sbx_meta mo, mc;
    const char *was = orphan_slot(cap, old, &mo), *is = orphan_slot(cap, cur, &mc);
    if (was && is && !strcmp(was, is)) return;
    if (is) {
        char key[512];
        snprintf(key, sizeof(key), "%s/%s", mc.namespace_, mc.name);
        if (sbx_slots_orphan(cap->slots, is, key, sbx_meta_annotation(&mc, SBX_ANN_USER_ID),
                             sbx_meta_annotation(&mc, SBX_ANN_CLASS), mc.created_ms, 1) < 0)
            LOGW("msg=\"out of memory recording an ownerless pod for the running cap\" pod=%s", key);
    }
    if (was) {
        sbx_slots_orphan(cap->slots, was, NULL, NULL, NULL, 0, 0);
        sbx_capacity_wake(cap);
    }
}

/* A pod changed: one controlled by a Sandbox, or one left with no owner, started or stopped
 * holding a slot. A freed slot wakes the first in line. */
void sbx_capacity_on_pod(struct sbx_capacity *cap, const cJSON *old, const cJSON *cur) {
    on_orphan_pod(cap, old, cur);
    const char *was = slot_owner(old), *is = slot_owner(cur);
    if (was && is && !strcmp(was, is)) return;
    if (is && sbx_slots_pod(cap->slots, is, +1) < 0)
        LOGW("msg=\"out of memory recording a pod for the running cap\"");
    if (was) {
        sbx_slots_pod(cap->slots, was, -1);
        sbx_capacity_wake(cap);
    }
}

/* The pass resolved the Sandbox uid's class (NULL = none), the class's per-user cap and
 * whether it counts a userID across namespaces: its slot or its wait moves to that class. */
void sbx_capacity_class(struct sbx_capacity *cap, const char *uid, const char *cls, int class_cap, int across) {
    int r = sbx_slots_class(cap->slots, uid, cls, class_cap, across);
    if (r < 0) LOGW("msg=\"out of memory recording a Sandbox's class for the running cap\" uid=%s", uid);
    if (r > 0) sbx_capacity_wake(cap);   /* its old class's slot, or a raised cap, may let one go */
}

/* May the Sandbox uid (whose class caps its user at class_cap, 0 = none) start a pod?
 * Reserves its slot when it may; else says where it stands: *position in line (1 = next;
 * 0 with *user_capped when its user's own cap, or its class's for its user, holds it;
 * *class_capped too when it is the class's). */
int sbx_capacity_admit(struct sbx_capacity *cap, const char *uid, int class_cap, int64_t now, int *position,
                       int *user_capped, int *class_capped) {
    *user_capped = *class_capped = 0;
    *position = 0;
    if (cap->limits.max_running <= 0 && cap->limits.max_running_per_user <= 0 && class_cap <= 0) return 1;
    enum sbx_admit r = sbx_slots_try(cap->slots, uid, now, now + RESERVATION_MS, position);
    if (r == SBX_ADMIT_YES) return 1;
    *user_capped = r == SBX_ADMIT_WAIT_USER || r == SBX_ADMIT_WAIT_CLASS;
    *class_capped = r == SBX_ADMIT_WAIT_CLASS;
    /* Slots may be free while those ahead have not had their pass yet: queue them. */
    if (r == SBX_ADMIT_WAIT) sbx_capacity_wake(cap);
    return 0;
}

/* uid's slot, held by its copier about to go, is kept for its sandbox pod. */
int sbx_capacity_keep(struct sbx_capacity *cap, const char *uid) {
    int64_t now = kj_now_ms();
    return sbx_slots_keep(cap->slots, uid, now, now + RESERVATION_MS);
}

void sbx_capacity_pod_seen(struct sbx_capacity *cap, const char *uid, const cJSON *pod) {
    const char *owner = slot_owner(pod);
    if (owner && !strcmp(owner, uid)) sbx_slots_pod_seen(cap->slots, uid);
    else sbx_slots_release(cap->slots, uid, 1);
}

/* uid's reservation ends (creating its pod failed, or it wants none); leave_line:
 * it wants no pod at all. */
void sbx_capacity_release(struct sbx_capacity *cap, const char *uid, int leave_line) {
    sbx_slots_release(cap->slots, uid, leave_line);
}

void sbx_capacity_reclaimable(struct sbx_capacity *cap, const char *uid, const struct sbx_spec *spec,
                              const struct sbx_decision *d, int pod_present) {
    sbx_reclaim_note(cap->slots, uid, spec, d, pod_present);
}

int64_t sbx_capacity_reclaim(struct sbx_capacity *cap, int64_t now) {
    return sbx_reclaim_run(cap->deps, cap->slots, now);
}
