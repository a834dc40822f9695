/* sandbox/model/warmbinder.h — warm claims of a WaitForFirstConsumer StorageClass (local-path,
 * most CSI block drivers with topology): such a claim binds only once a pod that uses it
 * is scheduled, so an idle pool claim would stay Pending and a Sandbox adopting it would
 * wait for the provisioner as a cold one does. A short-lived *binder* pod per pending pool
 * claim is that consumer: it asks for what a sandbox of the pool's class asks for (the same
 * requests, limits, node selector, tolerations, affinity and runtime class), so the
 * scheduler puts the volume on a node where such a sandbox fits, preferring nodes that hold
 * fewer of the pool's volumes; once the claim is Bound the binder is deleted, and the pod
 * of the Sandbox that adopts the claim is scheduled where its volume is (the volume's node
 * affinity). The pure half: names, the binder pod, the spread preference. The I/O is
 * warm.c's pool pass. */
#ifndef YAO_SANDBOX_WARMBINDER_H
#define YAO_SANDBOX_WARMBINDER_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "sandbox/model/spec.h"

/* On a binder pod: the pool claim it binds. */
#define SBX_ANN_BINDS_CLAIM "sandbox.yaoapps.com/binds-claim"
/* On a claim, set by the scheduler for a WaitForFirstConsumer class: the node chosen. */
#define SBX_ANN_SELECTED_NODE "volume.kubernetes.io/selected-node"
/* The binder's container: nothing to run (the claim binds before the kubelet starts it). */
#define SBX_BINDER_CONTAINER "bind"
/* At most this many nodes are named in one binder's spread preference. */
#define SBX_BINDER_AVOID_MAX 16

/* The binder pod's name for pool claim `claim`: "<claim>-binder". */
void sbx_binder_name(const char *claim, char *out, size_t outlen);

/* The binder pod of pool claim `claim` (uid claim_uid) of pool `pool_key` in ns, for a
 * sandbox spec s (its image, resources and placement): labels of the pool
 * (SBX_LABEL_MANAGED_BY, SBX_LABEL_NAME "", SBX_LABEL_WARM_POOL), SBX_ANN_BINDS_CLAIM, an
 * owner reference to the claim (not a controller one: the garbage collector removes a binder
 * whose claim is gone), restricted Pod Security (uid 65534, no capabilities, RuntimeDefault
 * seccomp, no token), restartPolicy Never, no priority class (a binder never preempts), and
 * a preferred node affinity away from avoid[0..navoid) (the nodes that hold the most of the
 * pool's volumes). NULL on ENOMEM or a missing argument. */
cJSON *sbx_build_binder(const char *ns, const char *pool_key, const char *claim, const char *claim_uid,
                        const struct sbx_spec *s, const char *const *avoid, size_t navoid);

/* Of the nodes the pool's volumes are on (node[i] of claim i; NULL or "" = not placed
 * yet), those holding the most of them: a binder prefers any other node (one that holds
 * none is not in the list; where every node is crowded, the preference fails everywhere
 * and says nothing, so free capacity decides). Each name once, in first-seen order; at most
 * max names (pointers into node) into out; returns how many. */
size_t sbx_binder_crowded_nodes(const char *const *node, size_t n, const char **out, size_t max);

#endif
