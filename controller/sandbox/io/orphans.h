/* sandbox/io/orphans.h — what a deleted Sandbox left behind (orphans.c). */
#ifndef YAO_SANDBOX_ORPHANS_H
#define YAO_SANDBOX_ORPHANS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/model/objects.h"

#include "sandbox/io/deps.h"
#include "sandbox/io/warm.h"
#include "sandbox/model/outcome.h"

/* The Sandbox ns/name is gone: sweep what it owned after a grace period. After (look
 * again when the grace ends), forget once nothing is left (drop the key), or failed. */
struct sbx_outcome sbx_orphans_sweep(const struct sbx_deps *deps, const char *key, const char *ns, const char *name,
                                     struct kube_error *err);
/* The Sandbox key (uid) is deleted: its record keeps the names of the pod and claim it
 * owned (user, chat from it or from an object it owned; own_claim: the claim's name when
 * the object is that claim; else an adopted claim's name from warm), so the sweep looks
 * them up instead of walking the caches. */
void sbx_orphans_deleted(const struct sbx_deps *deps, struct sbx_warm *warm, const char *key, const char *uid,
                         const char *user, const char *chat, const char *own_claim);
/* An object (its metadata m), controlled by the Sandbox key, is deleted or being deleted:
 * when the Sandbox is not in the (synced) cache and its deletion is not on record (deleted
 * before this process started, or its tombstone purged while the deletions it started
 * still echo), note it with the names the object carries. */
void sbx_orphans_note(const struct sbx_deps *deps, struct sbx_warm *warm, const char *key, const struct sbx_meta *m,
                      int obj_is_claim);

/* Delete the objects of namespace ns in the pod, claim, Service and NetworkPolicy caches
 * that sbx_orphan_ownerless names (labelled by the controller, no owner left: e.g. after
 * `kubectl delete sandbox --cascade=orphan`), each with its uid as a precondition. Run when
 * the informers show such an object (its work key, SBX_WORK_OWNERLESS of ns: workkey.h):
 * at once, with no grace, since no garbage collector will come for them. Done, after a
 * short wait when more were found than one pass deletes, or failed (a failed delete: the
 * queue retries with backoff). */
struct sbx_outcome sbx_orphans_sweep_ownerless(const struct sbx_deps *deps, const char *ns, struct kube_error *err);

#endif
