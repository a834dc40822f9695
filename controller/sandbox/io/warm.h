/* sandbox/io/warm.h — warm workspaces, the I/O side (warm.c; the decisions are
 * sandbox/decide/warm_decide.h): the index the informer handlers keep, the pool pass of a
 * namespace, and the adoption of a pool claim by a new Sandbox. */
#ifndef YAO_SANDBOX_WARM_H
#define YAO_SANDBOX_WARM_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/model/claimview.h"
#include "sandbox/model/sandboxview.h"

#include "sandbox/model/builders.h"
#include "sandbox/model/outcome.h"
#include "sandbox/io/class.h"
#include "sandbox/io/deps.h"

struct sbx_warm;
/* The index (empty). Pools follow classes (through classes); unclassed_pool is
 * --warm-workspaces, the pool of Sandboxes of no class (0: none). NULL: out of memory. */
struct sbx_warm *sbx_warm_new(const struct sbx_deps *deps, struct sbx_classes *classes, int unclassed_pool);
void sbx_warm_free(struct sbx_warm *w);
/* Informer handlers: a PVC, a Sandbox, a SandboxClass changed. The PVC handler runs
 * before the Sandbox of an adopted claim is queued, so its pass finds the claim. */
void sbx_warm_on_pvc(struct sbx_warm *w, const struct sbx_claim_view *old, const struct sbx_claim_view *cur);
void sbx_warm_on_sandbox(struct sbx_warm *w, const struct sbx_sandbox_view *old, const struct sbx_sandbox_view *cur);
void sbx_warm_on_class(struct sbx_warm *w, const cJSON *old, const cJSON *cur);
/* The Sandbox of uid gave its adopted claim up (SBX_ACT_RELEASE_CLAIM): it adopts no pool
 * claim for SBX_WARM_RELEASE_WINDOW_MS, and sbx_warm_released says so meanwhile. */
void sbx_warm_note_released(struct sbx_warm *w, const char *uid);
int sbx_warm_released(struct sbx_warm *w, const char *uid);
/* A binder pod (SBX_ANN_BINDS_CLAIM) changed in the pod cache: index it, queue its pool pass. */
void sbx_warm_on_binder_pod(struct sbx_warm *w, const cJSON *old, const cJSON *cur);
/* A sandbox pod changed in the pod cache: the namespace's count of pods starting
 * (sbx_warm_pod_starting) follows, for the refill's yield; the last one ending queues the
 * pool pass that waits for it. */
void sbx_warm_on_sandbox_pod(struct sbx_warm *w, const cJSON *old, const cJSON *cur);
/* The claim the Sandbox uid controls, as the cache shows it, when it has a name of its
 * own (adopted): 1 with its name in out, or 0 (its claim, if any, is the one its IDs
 * name). */
int sbx_warm_claim_of(struct sbx_warm *w, const char *uid, char *out, size_t outlen);
/* Unadopted pool claims in the index (all namespaces), not being deleted: Bound, and
 * not yet (provisioning). */
void sbx_warm_stats(struct sbx_warm *w, unsigned *bound, unsigned *pending);
/* The pool pass of namespace ns: create and delete pool claims. Forget when no pool is
 * wanted there and none is left; done, after (a claim in the making), or failed. */
struct sbx_outcome sbx_warm_reconcile(struct sbx_warm *w, const char *ns, struct kube_error *err);
/* A new Sandbox (owner, resolved spec) without a claim: adopt a Bound claim of its pool
 * in ns with one conditional PATCH. 1 adopted (*adopted the patched claim, the caller
 * deletes it; its name in claim), 0 none to adopt (make its own), -1 error (err). */
int sbx_warm_adopt(struct sbx_warm *w, const char *ns, const struct sbx_owner *owner, const struct sbx_spec *spec,
                   cJSON **adopted, char *claim, size_t claimlen, struct kube_error *err);

#endif
