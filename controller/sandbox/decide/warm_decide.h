/* sandbox/decide/warm_decide.h — warm workspaces, the pure part: which pool a workspace shape
 * belongs to, what the pools of a namespace should hold, how many claims to create or
 * delete, which pool claims a new Sandbox tries to adopt and in what order, and the
 * objects involved (a pool claim, the adoption patch). No I/O: the index of pool claims,
 * the pool pass and the adoption request are in warm.c.
 *
 * A pool is (namespace, shape): claims of one StorageClass, size and access mode are
 * interchangeable, whichever SandboxClass (or the --warm-workspaces flag) asked for them.
 * See docs/design.md "Warm workspaces". */
#ifndef YAO_SANDBOX_WARM_DECIDE_H
#define YAO_SANDBOX_WARM_DECIDE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "sandbox/model/builders.h"
#include "sandbox/model/spec.h"

/* SBX_LABEL_WARM_POOL and SBX_ANN_WARM_ADOPTED, on pool claims: spec.h. */
/* generateName of pool claims (the adopted claim keeps its name). */
#define SBX_WARM_NAME_PREFIX "yao-warm-"
/* The access mode of every workspace claim (sbx_build_pvc), part of a pool's shape. */
#define SBX_WARM_ACCESS_MODE "ReadWriteOnce"
/* "ws-" and 16 hex digits, and the NUL. */
#define SBX_WARM_KEY_LEN 20
/* Pools one namespace may want at once (distinct shapes); more are ignored (logged). */
#define SBX_WARM_WANTS_MAX 32
/* A pool's size ceiling (the CRD's maximum too). */
#define SBX_WARM_SIZE_MAX 1000

/* The key of a shape: "ws-" + 16 hex digits of the FNV-1a hash of storage class ("" =
 * the cluster default), size in bytes and access mode. A label value. */
void sbx_warm_key(const char *storage_class, int64_t bytes, char out[SBX_WARM_KEY_LEN]);

/* One pool a namespace wants: its shape, its size, and the SandboxClass whose
 * ownerReference its claims carry (NULL: the flag pool, no owner). Strings owned. */
struct sbx_warm_want {
    char key[SBX_WARM_KEY_LEN];
    char *storage_class;          /* NULL = the cluster default */
    int64_t bytes;
    int size;
    char *owner_class, *owner_uid;
};
struct sbx_warm_wants { struct sbx_warm_want v[SBX_WARM_WANTS_MAX]; size_t n; };

/* Add a wanted pool; one of the same shape already there keeps the larger size and the
 * owner whose class name sorts first (so the choice does not depend on listing order).
 * 0, 1 when the list is full (not added), -1 on ENOMEM. */
int sbx_warm_wants_add(struct sbx_warm_wants *w, const char *storage_class, int64_t bytes, int size,
                       const char *owner_class, const char *owner_uid);
/* The wanted pool of key, or NULL. */
const struct sbx_warm_want *sbx_warm_wants_find(const struct sbx_warm_wants *w, const char *key);
void sbx_warm_wants_free(struct sbx_warm_wants *w);

/* A pool claim as the cache shows it (strings not owned). */
struct sbx_warm_claim {
    const char *name, *uid, *rv;
    int bound;          /* status.phase Bound */
    int terminating;    /* metadata.deletionTimestamp set */
    int64_t created_ms;
};

/* What to do to a pool that wants `want` claims and holds c[0..n): returns how many to
 * create, and puts into del (room for n) the indexes of the claims to delete, *ndel of
 * them. Terminating claims count for nothing. Excess goes pending claims first (they
 * serve no one yet), then the newest. */
int sbx_warm_plan(int want, const struct sbx_warm_claim *c, size_t n, size_t *del, size_t *ndel);

/* The order in which a Sandbox of uid tries the claims c[0..n): the bound ones that are
 * not terminating, by name, starting at a place its uid picks (two Sandboxes created at
 * once seldom try the same claim first). Writes indexes into order (room for n); returns
 * how many. */
size_t sbx_warm_candidates(const struct sbx_warm_claim *c, size_t n, const char *sandbox_uid, size_t *order);

/* May the Sandbox of s adopt a pool claim at all (no spec.workspace.from: a clone must be
 * made from its source)? Then 1 and its pool key in key; else 0. */
int sbx_warm_sandbox_key(const struct sbx_spec *s, char key[SBX_WARM_KEY_LEN]);

/* Does a claim (its spec.storageClassName, storage request and access modes, as the cache
 * shows them) give exactly the workspace s asks for? A spec without a storage class takes
 * whatever class the cluster default gave the claim. Checked before adopting: the pool
 * label alone is not trusted. 1 or 0. */
int sbx_warm_claim_fits(const struct sbx_spec *s, const char *claim_class, const char *claim_request,
                        const cJSON *access_modes);

/* A new pool claim of want in ns: generateName SBX_WARM_NAME_PREFIX, labels managed-by,
 * SBX_LABEL_NAME "" (the controller's claim informer selects on that label; empty = no
 * Sandbox yet) and SBX_LABEL_WARM_POOL, ReadWriteOnce, Filesystem, the size and class,
 * and (owner_class set) a non-controller ownerReference to the SandboxClass, so deleting
 * the class garbage-collects its unadopted claims. NULL on ENOMEM. */
cJSON *sbx_warm_build_claim(const char *ns, const struct sbx_warm_want *want);

/* The refill yields to starts in flight. A pool's claims and binder pods (on a
 * WaitForFirstConsumer class each binder, and the provisioner's helper pod, is a real
 * container start) compete with the sandbox pods a burst of new chats is starting on the
 * same nodes. So a pool pass that would make or bind claims waits while its namespace has
 * sandbox pods starting (or a claim was adopted and its pod is not in the cache yet, for
 * at most SBX_WARM_ADOPT_SETTLE_MS), looking again every SBX_WARM_REFILL_RECHECK_MS (and at once when the last start
 * ends), for at most SBX_WARM_REFILL_YIELD_MAX_MS from when it first waited; after that it
 * refills beside whatever still starts (a pod that cannot start does not hold the pool up
 * for longer). */
#define SBX_WARM_REFILL_RECHECK_MS 1000
#define SBX_WARM_REFILL_YIELD_MAX_MS 30000
#define SBX_WARM_ADOPT_SETTLE_MS 2000

/* Is pod a sandbox pod still starting: the controller's (managed-by yao-sandbox, a
 * Sandbox's name label), not a pool's binder, not being deleted, not Ready? 1 or 0. */
int sbx_warm_pod_starting(const cJSON *pod);

/* Should a refill wait? starting: sandbox pods starting (or a claim just adopted) in the
 * namespace. *since_ms: when this namespace's pool first waited (0: it is not waiting),
 * kept by the caller and updated here. 0: refill now; > 0: look again after that long. */
int64_t sbx_warm_refill_wait(int starting, int64_t *since_ms, int64_t now_ms);

/* The merge patch that moves pool claim `claim` (at resourceVersion rv) to the Sandbox o
 * with spec s: the labels and annotations its own claim would carry (sbx_build_pvc),
 * SBX_LABEL_WARM_POOL removed, SBX_ANN_WARM_ADOPTED = now_ms, ownerReferences replaced by
 * the Sandbox's controller reference alone, and metadata.resourceVersion = rv, so the API
 * server refuses it (409) when the claim changed since (another Sandbox adopted it). NULL
 * on ENOMEM. */
cJSON *sbx_warm_adopt_patch(const struct sbx_owner *o, const struct sbx_spec *s, const char *claim,
                            const char *rv, int64_t now_ms);

#endif
