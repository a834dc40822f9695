/* sandbox/io/expose.h — what a Sandbox shows of itself on the network, level-triggered: its
 * Service (spec.service) and the NetworkPolicy of an isolated class. Each is created when
 * wanted and absent, patched (uid precondition) when it drifted, deleted (uid
 * precondition) when no longer wanted; an object of the name that is not the Sandbox's is
 * left alone, with a Warning Event. The objects are built in builders.h and netpol.h. */
#ifndef YAO_SANDBOX_EXPOSE_H
#define YAO_SANDBOX_EXPOSE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sandbox/model/builders.h"
#include "sandbox/io/deps.h"
#include "sandbox/model/netpol.h"
#include "sandbox/model/objects.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/spec.h"

/* The Service pod_name of Sandbox sb (owner), wanted when spec.service.enabled. svc is
 * the cached object (or NULL) and state whose it is. A Service of the name that is not
 * ours makes no failure (the sandbox runs without it). 0 or -1 (err). */
int sbx_expose_service(const struct sbx_deps *deps, const char *ns, const struct sbx_sandbox_view *sb,
                       const struct sbx_owner *owner, const struct sbx_spec *spec, const char *pod_name,
                       const cJSON *svc, enum sbx_object_state state, struct kube_error *err);

/* The NetworkPolicy pod_name of Sandbox sb (owner), wanted when net->mode is isolated;
 * its egress excepts the API server addresses apiserver[0..napiserver) unless the class
 * allows them. Called before the pod is created, and a failure (-1, err) ends the pass: an
 * isolated sandbox's pod never starts without its policy, and a policy of the name that
 * is not ours blocks the pod too. While a pod built under another class (pod, pod_meta:
 * the cached pod, or NULL) still runs, the policy it was built under stays. np is the
 * cached policy (or NULL) and state whose it is. 0 or -1. */
int sbx_expose_netpol(const struct sbx_deps *deps, const char *ns, const struct sbx_sandbox_view *sb,
                      const struct sbx_owner *owner, const struct sbx_spec *spec, const struct sbx_network *net,
                      const char *pod_name, const cJSON *pod, const struct sbx_meta *pod_meta, const cJSON *np,
                      enum sbx_object_state state, const struct sbx_cidr *apiserver, size_t napiserver, struct kube_error *err);

#endif
