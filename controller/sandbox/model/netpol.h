/* sandbox/model/netpol.h — the network policy of a Sandbox: the SandboxClass's spec.network
 * (parsed here), a Sandbox's spec.network.egressCIDRs narrowed within it, the CIDR math
 * (parse, containment, the addresses that are always excepted) and the pure builder of the
 * NetworkPolicy the controller owns (named like the pod). No I/O: reconcile.c creates,
 * patches and deletes the object. */
#ifndef YAO_SANDBOX_NETPOL_H
#define YAO_SANDBOX_NETPOL_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "sandbox/model/builders.h"
#include "sandbox/model/spec.h"

#define SBX_NETPOL_CIDRS_MAX 64   /* egressCIDRs, in a class and in a Sandbox */
#define SBX_NETPOL_PEERS_MAX 32   /* ingressFrom and egressTo of a class */
#define SBX_CIDR_TEXT_MAX 50      /* "ffff:...:ffff/128" and its NUL */
#define SBX_APISERVER_MAX 4       /* API server addresses an except list has room for */
/* An except list: the class's egressExcept, the two metadata addresses, the API server's. */
#define SBX_NETPOL_EXCEPTS_MAX (SBX_NETPOL_CIDRS_MAX + 2 + SBX_APISERVER_MAX)

/* The cloud metadata addresses: excepted from every egress ipBlock that contains them
 * unless the class sets allowMetadata. */
#define SBX_METADATA_V4 "169.254.169.254/32"
#define SBX_METADATA_V6 "fd00:ec2::254/128"

/* The egressExcept of a class that sets none (an explicit empty list cuts nothing): the
 * private, shared (CGNAT), link-local and unique-local ranges, where pods, Services, nodes
 * and the API server live on nearly every cluster. Also what an isolated class keeps when
 * an older CRD prunes the field: the cut fails closed. */
#define SBX_NETPOL_DEFAULT_EXCEPT \
    {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "fc00::/7", "fe80::/10"}

/* An IPv4 or IPv6 network: family 4 or 6, addr in network order (4 or 16 bytes used),
 * prefix 0-32 or 0-128, host bits zero. */
struct sbx_cidr { int family; unsigned char addr[16]; int prefix; };

enum sbx_net_mode { SBX_NET_NONE = 0, SBX_NET_ISOLATED = 1 };

/* A class's spec.network, or a Sandbox's effective network. */
struct sbx_network {
    enum sbx_net_mode mode;          /* none: no NetworkPolicy at all */
    cJSON *ingress_from;             /* array of {namespaceSelector, podSelector} peers; NULL = none */
    cJSON *egress_to;                /* the same, as egress destinations on any port; NULL = none */
    struct sbx_cidr *egress; size_t negress;
    struct sbx_cidr *except; size_t nexcept;  /* egressExcept (absent: SBX_NETPOL_DEFAULT_EXCEPT):
                                                 cut out of every wider egress CIDR */
    int allow_dns;                   /* default 1 */
    int allow_apiserver;             /* default 0 */
    int allow_metadata;              /* default 0 */
};

/* Parse "a.b.c.d/n" or "x::y/n" strictly (a prefix is required; host bits must be zero).
 * The canonical form: an IPv4-mapped range ::ffff:a.b.c.d/(96+n) is returned as the IPv4
 * range a.b.c.d/n; an IPv4-compatible one ::a.b.c.d/(96+n) (deprecated, and the same
 * address to some tools) is refused. 0 or -1 with the reason in err (err may be NULL). */
int sbx_cidr_parse(const char *s, struct sbx_cidr *out, char *err, size_t errlen);
/* The canonical text of c ("10.0.0.0/8", "fd00::/8"). out >= SBX_CIDR_TEXT_MAX. */
void sbx_cidr_format(const struct sbx_cidr *c, char *out, size_t outlen);
/* Does outer contain inner (same family, outer's prefix not longer, same leading bits)? */
int sbx_cidr_contains(const struct sbx_cidr *outer, const struct sbx_cidr *inner);

/* Parse a SandboxClass's spec.network (net may be NULL: mode none). Messages name the
 * class field ("spec.network.egressCIDRs[1]: ..."), without the class prefix. 0 or -1. */
int sbx_network_parse_class(const cJSON *net, struct sbx_network *out, char *err, size_t errlen);
void sbx_network_free(struct sbx_network *n);

/* The effective network of sandbox under its class's network cls (NULL: no class, mode
 * none) named class_name: the class's, with the Sandbox's spec.network.egressCIDRs in
 * place of the class's CIDRs when given. Each must lie inside what one of the class's
 * CIDRs allows: inside it, and not inside an egressExcept entry cut out of it (one
 * strictly inside it); a Sandbox network under a class that is not isolated is refused.
 * 0, or -1 with the InvalidSpec message in err naming the field and the limit. */
int sbx_network_resolve(const cJSON *sandbox, const struct sbx_network *cls, const char *class_name,
                        struct sbx_network *out, char *err, size_t errlen);

/* The network of a running sandbox whose spec the class no longer allows: as
 * sbx_network_resolve, but each Sandbox CIDR outside the class's is left out (*dropped
 * counts them) instead of refusing: a class that narrows narrows the running pod's policy
 * at once, and never widens it beyond what the Sandbox asked. 0, or -1 (a malformed
 * spec.network, err). */
int sbx_network_narrow(const cJSON *sandbox, const struct sbx_network *cls, const char *class_name,
                       struct sbx_network *out, size_t *dropped, char *err, size_t errlen);

/* The ipBlock.except list of cidr: the class's egressExcept entries that cidr strictly
 * contains (one that holds all of cidr does not apply: cidr was allowed explicitly, see
 * sbx_network_resolve), then the metadata addresses (unless allow_metadata) and the API
 * server addresses api[0..napi) (unless allow_apiserver) that cidr strictly contains;
 * none inside another. *whole is set when cidr lies entirely inside a metadata or API
 * server address, or when the list needs more than max entries (SBX_NETPOL_EXCEPTS_MAX
 * is enough): the block must then be left out. Returns the count written to out. */
size_t sbx_netpol_excepts(const struct sbx_cidr *cidr, const struct sbx_network *n, const struct sbx_cidr *api,
                          size_t napi, struct sbx_cidr *out, size_t max, int *whole);

/* The Sandbox's NetworkPolicy (mode isolated): named pod_name, podSelector on
 * SBX_LABEL_POD = pod_name, policyTypes [Ingress, Egress]; ingress from the class's
 * peers only; egress to DNS (UDP and TCP 53 on kube-system's k8s-app=kube-dns pods) when
 * allow_dns, to the class's egressTo peers, to each egress CIDR as an ipBlock with
 * sbx_netpol_excepts, and to the API server addresses api (each /32 or /128, at most
 * SBX_APISERVER_MAX) when allow_apiserver. NULL on ENOMEM or a missing owner field. */
cJSON *sbx_build_netpol(const struct sbx_owner *o, const struct sbx_spec *s, const struct sbx_network *n,
                        const char *pod_name, const struct sbx_cidr *api, size_t napi);

/* Does the live policy have the spec the builder wants? 1 yes, 0 no (to be patched). */
int sbx_netpol_matches(const cJSON *have, const cJSON *want);

#endif
