/* sandbox/io/fork.h — a fork's workspace (spec.workspace.from), the I/O side: which claim it
 * starts from (the source Sandbox's, if the fork may take it) and, where the StorageClass
 * does not clone, the copy that fills the new claim before any sandbox pod runs. The
 * copier pod and the annotations that carry the copy's state are built in workspacecopy.h;
 * the decisions on what follows from a source or a copy are reconcile_decide.h's. */
#ifndef YAO_SANDBOX_FORK_H
#define YAO_SANDBOX_FORK_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sandbox/model/builders.h"
#include "sandbox/io/capacity.h"
#include "sandbox/model/claimview.h"
#include "sandbox/io/deps.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/spec.h"
#include "sandbox/io/warm.h"

/* The claim to start spec's fork in ns from: the bound workspace claim of the Sandbox
 * spec->workspace_from of this namespace (the claim the warm index says it controls, else
 * its status.workspaceClaim, else the name its IDs give), from the caches (sharded: from
 * the API server when another shard owns the source). The source must be of the same
 * user (spec.userID) unless the class allows forks across users, and the fork (at least
 * the source's size) within the class's workspace ceiling; src->copy says whether it is
 * copied (the class's driver is not marked as one that clones) or cloned.
 * NULL with src filled (its strings point into *held, which the caller deletes), or the
 * reason with a message in why: SBX_REASON_WS_SOURCE_NOT_FOUND / _INCOMPATIBLE (waited
 * for), SBX_REASON_WS_SOURCE_FORBIDDEN or SBX_REASON_INVALID (the spec cannot be applied). */
const char *sbx_fork_source(const struct sbx_deps *deps, struct sbx_warm *warm, const char *ns,
                            const struct sbx_spec *spec, struct sbx_ws_source *src, cJSON **held, char *why,
                            size_t whylen);

/* A fork's claim pvc (the Sandbox owner's) that a copy fills (SBX_ANN_FORK_FROM) and that
 * is not filled yet (no SBX_ANN_FORK_COPIED): run the copier and read its result,
 * level-triggered on the copier pod (named by the Sandbox's uid, on the node a pod of the
 * source runs on) and the claim's annotations. A copier that succeeded marks the claim
 * filled, then goes; one that failed is reported with its own message and,
 * SBX_COPY_RETRY_MS later, replaced by a new one. The copier holds the Sandbox's running
 * slot (cap) as its pod would: it is made only once the Sandbox is admitted (else
 * o->workspace_copy is SBX_COPY_WAITING and it waits in line), and when it succeeded its
 * slot is kept for the sandbox pod. Sets o->workspace_copy and its message (msg, which it
 * points to). 0 or -1 (err). */
int sbx_fork_fill(const struct sbx_deps *deps, struct sbx_capacity *cap, const char *ns, const struct sbx_sandbox_view *sb,
                  const struct sbx_owner *owner, const struct sbx_spec *spec, const struct sbx_claim_view *pvc,
                  struct sbx_observed *o, char *msg, size_t msglen, struct kube_error *err);

#endif
