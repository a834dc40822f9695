/* sandbox/io/shard.h — the I/O side of sharding (shard.c; decisions in shard_decide.h). */
#ifndef YAO_SANDBOX_SHARD_H
#define YAO_SANDBOX_SHARD_H

#include <stdatomic.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sandbox/io/deps.h"

/* Sharded (--shards > 1): label this shard's objects that lack its label (made before
 * sharding, or under another --shards; see shard_decide.h), before the informers start. One
 * patch per such object, sequential: a one-time cost when sharding is turned on (about
 * 60 objects a second on the test machine). 0, or -1 (an error, or *stop set). */
int sbx_shard_migrate(const struct sbx_deps *deps, const atomic_int *stop, struct kube_error *err);
/* The same for one object found by a create's 409 (ours, but not in this shard's cache). */
int sbx_shard_adopt_existing(const struct sbx_deps *deps, const char *resource, const cJSON *obj, struct kube_error *err);

#endif
