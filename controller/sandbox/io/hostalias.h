/* sandbox/io/hostalias.h — the I/O half of a SandboxClass's spec.hostAliases: the cluster IPs of
 * the Services it names, read just before a sandbox pod is created (hostalias_decide.h has
 * the rules). */
#ifndef YAO_SANDBOX_HOSTALIAS_H
#define YAO_SANDBOX_HOSTALIAS_H

#include <stddef.h>

#include "sandbox/io/deps.h"
#include <cjson/cJSON.h>

/* The pod's hostAliases ([{ip, hostnames}], new, in *out; NULL when the class names none)
 * from the class's checked spec.hostAliases: one GET of each Service named (the controller
 * needs `get` on Services in the Service's namespace: the chart grants it in
 * sandboxClass.serverNamespaces). 0, or -1 with err (a Service missing, headless or
 * unreadable: the pod is not created without its names). */
int sbx_host_aliases_resolve(const struct sbx_deps *deps, const cJSON *aliases, cJSON **out, struct kube_error *err);

#endif
