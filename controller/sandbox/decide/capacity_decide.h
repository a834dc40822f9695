/* sandbox/decide/capacity_decide.h — the running cap's bookkeeping: which Sandboxes hold a slot, who
 * waits for one and in what order. Kept current by the informer handlers (a pod that
 * appears, starts terminating or goes; a Sandbox that appears or goes), so a decision
 * never walks the caches: admitting one Sandbox costs O(log w + U) for w waiting Sandboxes
 * of its user and U users with someone waiting, under this module's own lock and no
 * informer's.
 *
 * Slots: a Sandbox holds one slot while the cache shows a pod controlled by it (not
 * terminating), or while a reservation for a pod just created is alive (the pod has not
 * reached the cache yet). A pod counts only when its controller ownerReference names a
 * Sandbox that is in the cache (by uid): a stranger's pod, labelled like ours or not,
 * holds nothing. A Sandbox holds at most one slot however many pods name it.
 *
 * Users: a user is a spec.userID within one namespace (the tenant boundary): the same
 * userID in two namespaces is two users, each with its own per-user caps (the
 * controller's and a class's), so a Sandbox never takes, nor waits for, a slot of a user
 * of another namespace.
 *
 * Order: a waiting Sandbox's rank is (slots its user holds + Sandboxes of that user ahead
 * of it in line, then the user whose last admission is longest ago or who had none, then
 * creationTimestamp, namespace/name): a freed slot goes to the user who holds fewest, in
 * turn between equals, and within one user oldest first: round-robin across users. The
 * turns are kept in memory (after a restart, equals go oldest first). A per-user cap (0 = none)
 * keeps a user's Sandboxes beyond it out of the line altogether: they wait for one of that
 * user's own slots. So does a SandboxClass's per-user cap (maxRunningPerUser), counting only
 * the slots the user's Sandboxes *of that class* hold: a Sandbox beyond it waits for one of
 * those, oldest first, and never holds up the user's Sandboxes of other classes. A class
 * whose operator says so (maxRunningPerUserScope: Cluster) counts its per-user cap over one
 * userID's Sandboxes of that class in every namespace; the controller's own caps and every
 * other class still count within the namespace.
 *
 * Pure bookkeeping: no I/O, the clock is passed in. Thread-safe (one lock). */
#ifndef YAO_SANDBOX_CAPACITY_DECIDE_H
#define YAO_SANDBOX_CAPACITY_DECIDE_H

#include <stddef.h>
#include <stdint.h>

/* The controller's caps (its flags). A SandboxClass's per-user cap comes with each of its
 * Sandboxes (sbx_slots_class). */
struct sbx_cap_limits {
    int max_running;            /* running Sandboxes in all (0 = no cap) */
    int max_running_per_user;   /* running Sandboxes of one spec.userID in one namespace (0 = no cap) */
};

struct sbx_slots;

struct sbx_slots *sbx_slots_new(const struct sbx_cap_limits *l);
void sbx_slots_free(struct sbx_slots *a);

/* The Sandbox uid is in the cache as key ("ns/name"), of user_id (counted within ns),
 * created at created_ms.
 * waiting: its status says it waits for capacity (so it keeps its place in line across a
 * controller restart, before its first pass). Idempotent. 0 or -1 (ENOMEM). */
int sbx_slots_sandbox(struct sbx_slots *a, const char *uid, const char *key, const char *user_id,
                          int64_t created_ms, int waiting);
/* The Sandbox uid is of the SandboxClass cls (NULL or "" = none), whose per-user cap is cap
 * (0 = none) counting a userID across namespaces when across is set, as its pass resolved
 * it; cap -1: only a hint (the className the Sandbox names, before any pass; across is
 * ignored), the cap of this user's bucket of the class stays. Its slot, or
 * its place in waiting, moves with it to the new class. Until every slot of a user is of a
 * class a pass resolved (after a restart), that user's Sandboxes of a capped class wait.
 * Idempotent; nothing for an unknown uid. 1 (it moved, the cap changed, or its class is
 * resolved for the first time: wake), 0 (nothing changed) or -1 (ENOMEM). */
int sbx_slots_class(struct sbx_slots *a, const char *uid, const char *cls, int cap, int across);
/* A pod of ours that lost its owner (its Sandbox deleted with --cascade=orphan) runs until
 * the ownerless sweep deletes it: meanwhile it holds a slot of its user like a Sandbox's
 * pod, under the stand-in uid SBX_SLOTS_ORPHAN_PREFIX + pod_uid, with key ("ns/<pod name>"),
 * user_id and class cls (NULL = none; counted within the namespace) from its annotations.
 * running 0: it stopped holding one (it went, started terminating or finished). Idempotent.
 * 0 or -1 (ENOMEM, or a uid too long: not counted). */
#define SBX_SLOTS_ORPHAN_PREFIX "orphan:"
int sbx_slots_orphan(struct sbx_slots *a, const char *pod_uid, const char *key, const char *user_id,
                     const char *cls, int64_t created_ms, int running);
/* The Sandbox uid left the cache: it waits for nothing and its pods count no more. */
void sbx_slots_sandbox_gone(struct sbx_slots *a, const char *uid);
/* A pod controlled by the Sandbox owner_uid started (delta +1) or stopped (-1) holding
 * a slot: it appeared, or it started terminating or went. 0 or -1 (ENOMEM). */
int sbx_slots_pod(struct sbx_slots *a, const char *owner_uid, int delta);

enum sbx_admit {
    SBX_ADMIT_YES = 0,      /* a slot is reserved for uid until the given time */
    SBX_ADMIT_WAIT = 1,     /* the cap is reached: *position is its place in line (1 = next) */
    SBX_ADMIT_WAIT_USER = 2,/* its user's cap is reached: it waits for one of the user's slots */
    SBX_ADMIT_UNKNOWN = 3,  /* uid is not a cached Sandbox (it just went): nothing recorded */
    SBX_ADMIT_WAIT_CLASS = 4, /* as SBX_ADMIT_WAIT_USER, held by its class's cap for its user */
};

/* May the Sandbox uid start a pod now? Admitted when it already holds a slot, or when its
 * place in line is within the free slots; then a reservation holds its slot until
 * reserve_until_ms (or until its pod is counted). Otherwise it joins the line. */
enum sbx_admit sbx_slots_try(struct sbx_slots *a, const char *uid, int64_t now_ms,
                                 int64_t reserve_until_ms, int *position);
/* The slot uid holds through a pod (a fork's copier about to be deleted, its sandbox pod
 * next) is kept by a reservation until reserve_until_ms, so it passes to that pod and to
 * no one else. 1 when uid held a slot, 0 when not (nothing changes). */
int sbx_slots_keep(struct sbx_slots *a, const char *uid, int64_t now_ms, int64_t reserve_until_ms);
/* A pass saw uid's pod in the cache: it waits no more. Its reservation ends only once the
 * pod itself holds the slot: the cache shows a pod before its handler has counted it, and
 * a reservation dropped in between would free the slot for another Sandbox while the pod
 * runs (a pod counted ends the reservation itself: sbx_slots_pod). */
void sbx_slots_pod_seen(struct sbx_slots *a, const char *uid);
/* uid no longer wants a slot through a reservation: creating its pod failed, or the
 * Sandbox wants no pod (then it also leaves the line). */
void sbx_slots_release(struct sbx_slots *a, const char *uid, int leave_line);

/* Call fn for the Sandboxes that may be admitted now: the first in line, as many as there
 * are free slots (with only a per-user cap: those within their user's cap). Returns how
 * many. fn runs under this module's lock and must not call back into it. */
size_t sbx_slots_wake(struct sbx_slots *a, int64_t now_ms, void (*fn)(void *ud, const char *key),
                          void *ud);

/* ---- reclaim (a SandboxClass's spec.reclaim) ----
 * A running session or long-running Sandbox of a class with spec.reclaim.idleAfter may be
 * stopped (pod deleted, workspace kept) to admit a waiting one while the global cap is
 * full. The choice is made here on what the passes reported; the caller re-checks each
 * chosen one on a fresh read before stopping it (the cache may be behind a touch). */

/* The pass saw the Sandbox uid running with a pod, reclaimable once idle for after_ms
 * (0: not reclaimable: not running, paused, one-shot or persistent, or its class has no
 * reclaim), last used at last_used_ms. Nothing for a uid not in the cache. */
void sbx_slots_reclaimable(struct sbx_slots *a, const char *uid, int64_t after_ms, int64_t last_used_ms);

/* uid is warm-idle (first: 1) or not (0): among those idle long enough, warm-idle ones
 * are reclaimed first (they hold their memory and slot but do no work). */
void sbx_slots_reclaim_first(struct sbx_slots *a, const char *uid, int first);

struct sbx_reclaim_victim {
    char uid[128];
    char key[512];                /* "ns/name" */
    char cls[256];                /* its SandboxClass ("" = none) */
    int64_t last_used_ms, after_ms;
};

/* Choose the Sandboxes to reclaim now. Only with a global cap (max_running), and never more
 * than the Sandboxes in line that a freed slot would admit (not those held by a per-user
 * or class cap), less the free slots and the reclaims already under way. Among the
 * reclaimable Sandboxes holding a slot through a pod, idle for at least their after_ms at
 * now_ms and not under way already: the warm-idle ones first, then the longest idle
 * first (then by key). Each chosen one
 * is marked under way until until_ms, or until its pod stops holding a slot. At most max
 * into out; returns how many. *next_ms (may be NULL): when some Sandbox will have been idle
 * long enough, if reclaim is wanted and none is yet (0 = no such time). */
size_t sbx_slots_reclaim_pick(struct sbx_slots *a, int64_t now_ms, int64_t until_ms,
                                  struct sbx_reclaim_victim *out, size_t max, int64_t *next_ms);
/* uid was not reclaimed after all (a fresh read said no): no longer under way. */
void sbx_slots_reclaim_cancel(struct sbx_slots *a, const char *uid);

/* Counters: slots held, Sandboxes waiting, slots held by user_id of namespace ns (0 when
 * unknown). */
int sbx_slots_held(struct sbx_slots *a, int64_t now_ms);
int sbx_slots_waiting(struct sbx_slots *a);
int sbx_slots_user_held(struct sbx_slots *a, const char *ns, const char *user_id, int64_t now_ms);

#endif
