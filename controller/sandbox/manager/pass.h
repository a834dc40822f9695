/* sandbox/manager/pass.h — one reconcile pass over one Sandbox (reconcile.c): gate → resolve
 * policy → observe → admit → fence → act → report, level-triggered and idempotent. The pass
 * takes a narrow environment — the clients, caches and books it reads and writes — not the
 * controller: the manager (controller.c) owns the informers, handlers, queue, workers and
 * stats, builds this environment once and calls the pass for each Sandbox key. */
#ifndef YAO_SANDBOX_PASS_H
#define YAO_SANDBOX_PASS_H

#include <stddef.h>
#include <stdint.h>

#include "sandbox/io/capacity.h"
#include "sandbox/io/class.h"
#include "sandbox/io/deps.h"
#include "sandbox/model/netpol.h"
#include "sandbox/model/outcome.h"
#include "sandbox/model/records.h"
#include "sandbox/model/spec.h"
#include "sandbox/model/terminating.h"
#include "sandbox/io/warm.h"

struct sbx_pass_env {
    struct sbx_deps *deps;                 /* client, recorder, caches, counters, records */
    struct sbx_counters *counters;         /* deps->counters */
    struct sbx_records *records;           /* deps->records */
    struct sbx_capacity *capacity;         /* the running cap */
    struct sbx_classes *sandbox_classes;   /* SandboxClasses and Namespaces */
    struct sbx_warm *warm;                 /* warm workspaces */
    struct sbx_terminating *terminating;   /* namespaces being deleted */
    const struct sbx_defaults *defaults;   /* the controller's flag defaults */
    /* The API server addresses excepted from an isolated sandbox's egress. */
    const struct sbx_cidr *apiserver;
    size_t napiserver;
};

/* The pass over the Sandbox ns/name (key) as the cache has it; a Sandbox gone from the
 * cache has its orphans swept. Done (the resync looks again), after N ms, forget the key,
 * or failed (err says why, its reason whether the namespace is being deleted). A Sandbox
 * found changed since the decision is decided again on the next version (after a short
 * wait): the pass never answers stale. */
struct sbx_outcome sbx_pass_reconcile(struct sbx_pass_env *env, const char *key, const char *ns, const char *name,
                                      struct kube_error *err);

#endif
