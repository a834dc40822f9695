/* sandbox/decide/hostalias_decide.h — a SandboxClass's spec.hostAliases: names the operator pins in
 * every sandbox pod's /etc/hosts (the pod's hostAliases), to a literal address or to a
 * Service's cluster IP. Yao hands its sandboxes YAO_GRPC_ADDR=host.tai.internal:9099; on
 * Kubernetes that name must lead to the Yao server the operator runs, never be asked of DNS
 * (a cluster search domain would hand it to whoever names a namespace "internal").
 *
 * Pure: validation of the class's list and the pod's hostAliases from the list and the
 * Services' addresses. Reading the Services is hostalias.c's. */
#ifndef YAO_SANDBOX_HOSTALIAS_DECIDE_H
#define YAO_SANDBOX_HOSTALIAS_DECIDE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define SBX_HOST_ALIASES_MAX 16        /* entries of spec.hostAliases */
#define SBX_HOST_ALIAS_NAMES_MAX 16    /* hostnames of one entry */

/* Check spec.hostAliases (an array, or NULL when unset): each entry {hostnames: [1-16 host
 * names], and exactly one of ip: an IPv4/IPv6 address, or service: {namespace, name}}.
 * 0, or -1 with a message naming the field in err ("spec.hostAliases[1].ip: ..."). */
int sbx_host_aliases_check(const cJSON *aliases, char *err, size_t errlen);

/* Does the list name a Service (so that the pod needs a lookup before it is built)? */
int sbx_host_aliases_need_lookup(const cJSON *aliases);

/* The pod's hostAliases ([{ip, hostnames}], a new array) from a checked list; ips[i] is the
 * cluster IP of entry i's Service (ignored for an entry with ip). NULL when out of memory or
 * when an entry's address is missing (err says which). */
cJSON *sbx_host_aliases_build(const cJSON *aliases, const char *const *ips, char *err, size_t errlen);

/* A Service's address for a host alias: spec.clusterIP, "" when it has none (headless:
 * "None", or not yet allocated). Points into svc. */
const char *sbx_service_cluster_ip(const cJSON *svc);

#endif
