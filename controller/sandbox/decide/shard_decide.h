/* sandbox/decide/shard_decide.h — which shard serves a Sandbox and what it owns (docs/scaling.md,
 * "Sharding"). With --shards S > 1 a replica serves the one shard --shard I: the Sandboxes
 * whose key hashes to I, and the objects labelled SBX_LABEL_SHARD=I. The key is
 * namespace + "/" + spec.userID (FNV-1a 64, mod S): spec.userID is immutable (the CRD's
 * CEL rule), so a Sandbox never changes shard, and all of one user's Sandboxes are in one
 * shard, where the per-user caps are counted. Pure functions. */
#ifndef YAO_SANDBOX_SHARD_DECIDE_H
#define YAO_SANDBOX_SHARD_DECIDE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "sandbox/model/spec.h"   /* SBX_LABEL_SHARD, SBX_LABEL_SHARDS, struct sbx_shard_labels */

#define SBX_SHARDS_MAX 1024

/* FNV-1a, 64 bits, of n bytes. */
uint64_t sbx_fnv1a64(const void *data, size_t n, uint64_t h);
#define SBX_FNV1A64_INIT 0xcbf29ce484222325ULL

/* The shard of (namespace, userID) among shards (0 when shards <= 1). A NULL user hashes
 * as "" (a Sandbox without spec.userID still has one shard, which reports it invalid). */
int sbx_shard_of(const char *ns, const char *user, int shards);

/* The shard of a Sandbox object (metadata.namespace, spec.userID). */
int sbx_shard_of_sandbox(const cJSON *sandbox, int shards);

/* The informer filter of the Sandbox kind: is the Sandbox in shard *(const int[2])ud =
 * {shards, shard}? Non-zero to keep it. */
int sbx_shard_keep(void *ud, const cJSON *sandbox);

/* The two label values an owned object of a sharded install carries (spec.h). */
void sbx_shard_labels_init(struct sbx_shard_labels *l, int shards, int shard);

/* The label selector of the owned kinds' informers: SBX_LABEL_NAME alone when shards <= 1
 * (as before sharding), else SBX_LABEL_NAME, SBX_LABEL_SHARD=shard and
 * SBX_LABEL_SHARDS=shards. 0 or -1. */
int sbx_shard_selector(const char *name_label, int shards, int shard, char *out, size_t outlen);

/* Migration (a start with sharding on): should shard `me` of `shards` label obj, an
 * object the controller created (pod, claim, Service, NetworkPolicy), as its own? Never
 * when its labels are current (SBX_LABEL_SHARDS = shards and SBX_LABEL_SHARD a shard of
 * it: then it is that shard's, perhaps me's already). Otherwise (made before sharding, or
 * under another S): one made for a user (the sandbox.yaoapps.com/user-id annotation) when
 * that user is of shard me; one without a user (a warm-pool claim) by shard 0. Exactly one
 * shard takes each object, so two shards never fight over one. */
int sbx_shard_should_adopt(const cJSON *obj, int shards, int me);

/* Re-sharding without a stop. Every replica's Lease (<lease-name>, or
 * <lease-name>-shard-I) carries SBX_LABEL_SHARDS = its --shards, and SBX_LABEL_ACTING =
 * "true" once it acts (its workers run). A replica acts only while no Lease of its family
 * is held (a holder, renewed within its leaseDurationSeconds of now_ms) by a replica of
 * another shard count that acts; a Lease without SBX_LABEL_SHARDS (a controller from before
 * this rule, which acts whenever it leads) counts as acting under another count, unless it
 * is own_name (ours: leader election decides). So during a change of --shards the new
 * count waits until the old one is gone, and an old replica restarted after the new count
 * acts waits for ever (it is outdated). 1 (with the lease named in why) when lease blocks
 * a replica of `shards` whose own Lease is own_name, family base; else 0. */
#define SBX_LABEL_ACTING "sandbox.yaoapps.com/acting"
int sbx_shard_lease_blocks(const cJSON *lease, const char *base, const char *own_name, int shards, int64_t now_ms,
                           char *why, size_t whylen);

#endif
