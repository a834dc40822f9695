/* sandbox/model/netpol.c — a Sandbox's network policy (see netpol.h): the class's spec.network,
 * the Sandbox's narrowing of its egress CIDRs, the CIDR math and the NetworkPolicy builder.
 *
 * The CIDR math is done on bytes (inet_pton), never on text: "10.0.0.0/8" contains
 * "10.1.0.0/16" because their first 8 bits agree, whatever the spelling. Host bits must be
 * zero, so every CIDR has one spelling and the policy the API server stores compares
 * equal to the one built here. An IPv4 range has one family too: the IPv4-mapped spelling
 * ::ffff:a.b.c.d/(96+n) is parsed as a.b.c.d/n (the address space it denotes to the kernel
 * and to Go's net.IPNet), so it meets the IPv4 cut ranges and the metadata address; the
 * IPv4-compatible ::a.b.c.d/(96+n) (deprecated) is refused. An IPv6 block of another prefix
 * carries no IPv4 traffic (an IPv4 packet is never matched against an IPv6 rule), so IPv4
 * cuts are not repeated inside IPv6 blocks (the API server would refuse such an except as
 * not a subset). NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are IPv6 destinations
 * reached through a translator the operator runs, not aliases: an operator whose cluster
 * has one lists its prefix in egressExcept (docs/security.md).
 *
 * egressExcept (the class's; absent, the cluster-internal ranges) is cut out of every
 * egress CIDR that strictly contains an entry; a class CIDR inside an entry was named on
 * purpose and stays whole, while a Sandbox may not narrow to a part the class cut out (it
 * would escape the cut).
 *
 * Not here: the I/O (reconcile.c), choosing the class (class.c). */
#include "sandbox/model/netpol.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"

/* ---- CIDRs ------------------------------------------------------------------------------ */

static int np_zero(const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

int sbx_cidr_parse(const char *s, struct sbx_cidr *out, char *err, size_t errlen) {
    char addr[INET6_ADDRSTRLEN + 1];
    const char *slash;
    char *end;
    long prefix;
    size_t alen;
    int bytes;

    memset(out, 0, sizeof *out);
    if (!s || !(slash = strchr(s, '/'))) return errfmt(err, errlen, "must be a CIDR like 10.0.0.0/8 or fd00::/8");
    alen = (size_t)(slash - s);
    if (alen == 0 || alen >= sizeof addr) return errfmt(err, errlen, "not an IPv4 or IPv6 address");
    memcpy(addr, s, alen);
    addr[alen] = '\0';
    if (inet_pton(AF_INET, addr, out->addr) == 1) out->family = 4;
    else if (inet_pton(AF_INET6, addr, out->addr) == 1) out->family = 6;
    else return errfmt(err, errlen, "not an IPv4 or IPv6 address");
    bytes = out->family == 4 ? 4 : 16;
    /* digits only, no sign, no leading zero: one spelling per prefix */
    if (slash[1] < '0' || slash[1] > '9' || (slash[1] == '0' && slash[2]) || strspn(slash + 1, "0123456789") > 3)
        return errfmt(err, errlen, "the prefix length must be a number");
    prefix = strtol(slash + 1, &end, 10);
    if (*end) return errfmt(err, errlen, "the prefix length must be a number");
    if (prefix < 0 || prefix > bytes * 8)
        return errfmt(err, errlen, "the prefix length must be between 0 and %d", bytes * 8);
    out->prefix = (int)prefix;
    for (int bit = out->prefix; bit < bytes * 8; bit++)
        if (out->addr[bit / 8] & (0x80u >> (bit % 8)))
            return errfmt(err, errlen, "has host bits set (the network address is needed)");
    if (out->family == 6 && out->prefix >= 96 && np_zero(out->addr, 10)) {
        if (out->addr[10] == 0xff && out->addr[11] == 0xff) {
            /* IPv4-mapped ::ffff:a.b.c.d/96+n is a.b.c.d/n: to the kernel (a dual-stack
             * socket sends IPv4) and to Go's net.IPNet, which most plugins parse with */
            memmove(out->addr, out->addr + 12, 4);
            memset(out->addr + 4, 0, 12);
            out->family = 4;
            out->prefix -= 96;
        } else if (out->addr[10] == 0 && out->addr[11] == 0) {
            char v4[INET_ADDRSTRLEN];
            if (!inet_ntop(AF_INET, out->addr + 12, v4, sizeof v4)) v4[0] = '\0';
            return errfmt(err, errlen, "is an IPv4-compatible IPv6 range (deprecated by RFC 4291, read as IPv4 by "
                          "some tools): write the IPv4 range %s/%d", v4, out->prefix - 96);
        }
    }
    return 0;
}

void sbx_cidr_format(const struct sbx_cidr *c, char *out, size_t outlen) {
    char a[INET6_ADDRSTRLEN];

    if (!inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr, a, sizeof a)) a[0] = '\0';
    snprintf(out, outlen, "%s/%d", a, c->prefix);
}

int sbx_cidr_contains(const struct sbx_cidr *outer, const struct sbx_cidr *inner) {
    int full, rest;

    if (outer->family != inner->family || outer->prefix > inner->prefix) return 0;
    full = outer->prefix / 8;
    rest = outer->prefix % 8;
    if (memcmp(outer->addr, inner->addr, (size_t)full) != 0) return 0;
    if (rest) {
        unsigned mask = (0xFFu << (8 - rest)) & 0xFFu;
        if ((outer->addr[full] & mask) != (inner->addr[full] & mask)) return 0;
    }
    return 1;
}

/* ---- the class's spec.network ---------------------------------------------------------- */

/* The member, or NULL when absent or null. */
static const cJSON *np_member(const cJSON *obj, const char *key) {
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    return cJSON_IsNull(v) ? NULL : v;
}

/* An optional boolean member into *out (dflt when absent). */
static int np_bool(const cJSON *obj, const char *key, int dflt, int *out, char *err, size_t errlen) {
    const cJSON *v = np_member(obj, key);

    *out = dflt;
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return errfmt(err, errlen, "spec.network.%s: must be true or false", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* An array of CIDR strings at field into *v / *n. */
static int np_cidrs(const cJSON *arr, const char *field, struct sbx_cidr **v, size_t *n, char *err, size_t errlen) {
    char why[128];
    const cJSON *it;
    size_t count;

    *v = NULL;
    *n = 0;
    if (!cJSON_IsArray(arr)) return errfmt(err, errlen, "%s: must be an array of CIDRs", field);
    count = (size_t)cJSON_GetArraySize(arr);
    if (count > SBX_NETPOL_CIDRS_MAX) return errfmt(err, errlen, "%s: at most %d CIDRs", field, SBX_NETPOL_CIDRS_MAX);
    if (!count) return 0;
    *v = calloc(count, sizeof **v);
    if (!*v) return errfmt_oom(err, errlen);
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it)) return errfmt(err, errlen, "%s[%zu]: must be a string", field, *n);
        if (sbx_cidr_parse(it->valuestring, &(*v)[*n], why, sizeof why) != 0)
            return errfmt(err, errlen, "%s[%zu]: \"%.64s\" %s", field, *n, it->valuestring, why);
        (*n)++;
    }
    return 0;
}

/* A label selector copied without empty matchLabels / matchExpressions (the API server
 * drops them, and the stored policy must compare equal to the built one). */
static int np_selector(const cJSON *sel, const char *field, cJSON **out, char *err, size_t errlen) {
    const cJSON *kv;

    *out = NULL;
    if (!cJSON_IsObject(sel)) return errfmt(err, errlen, "%s: must be a label selector object", field);
    cJSON_ArrayForEach(kv, sel)
        if (strcmp(kv->string, "matchLabels") != 0 && strcmp(kv->string, "matchExpressions") != 0)
            return errfmt(err, errlen, "%s.%.64s: not a label selector field", field, kv->string);
    const cJSON *ml = np_member(sel, "matchLabels"), *me = np_member(sel, "matchExpressions");
    if (ml && !cJSON_IsObject(ml)) return errfmt(err, errlen, "%s.matchLabels: must be an object", field);
    if (me && !cJSON_IsArray(me)) return errfmt(err, errlen, "%s.matchExpressions: must be an array", field);
    cJSON_ArrayForEach(kv, ml)
        if (!cJSON_IsString(kv)) return errfmt(err, errlen, "%s.matchLabels.%.64s: must be a string", field, kv->string);
    *out = cJSON_CreateObject();
    if (!*out) return errfmt_oom(err, errlen);
    if ((ml && ml->child && !cJSON_AddItemToObject(*out, "matchLabels", cJSON_Duplicate(ml, 1))) ||
        (me && me->child && !cJSON_AddItemToObject(*out, "matchExpressions", cJSON_Duplicate(me, 1))))
        return errfmt_oom(err, errlen);
    return 0;
}

/* spec.network.<key> (ingressFrom, egressTo): {namespaceSelector?, podSelector?} peers, at
 * least one selector each (an empty peer would match everything). */
static int np_peers(const cJSON *arr, const char *key, cJSON **out, char *err, size_t errlen) {
    static const char *const keys[2] = {"namespaceSelector", "podSelector"};
    char field[96];
    const cJSON *it, *kv;
    size_t i = 0;

    *out = NULL;
    if (!arr) return 0;
    if (!cJSON_IsArray(arr)) return errfmt(err, errlen, "spec.network.%s: must be an array of peers", key);
    if (cJSON_GetArraySize(arr) > SBX_NETPOL_PEERS_MAX)
        return errfmt(err, errlen, "spec.network.%s: at most %d peers", key, SBX_NETPOL_PEERS_MAX);
    if (!cJSON_GetArraySize(arr)) return 0;
    *out = cJSON_CreateArray();
    if (!*out) return errfmt_oom(err, errlen);
    cJSON_ArrayForEach(it, arr) {
        cJSON *peer;
        int n = 0;
        if (!cJSON_IsObject(it)) return errfmt(err, errlen, "spec.network.%s[%zu]: must be an object", key, i);
        cJSON_ArrayForEach(kv, it)
            if (strcmp(kv->string, keys[0]) != 0 && strcmp(kv->string, keys[1]) != 0)
                return errfmt(err, errlen, "spec.network.%s[%zu].%.64s: only namespaceSelector and "
                               "podSelector are allowed", key, i, kv->string);
        peer = cJSON_CreateObject();
        if (!peer || !cJSON_AddItemToArray(*out, peer)) {
            cJSON_Delete(peer);
            return errfmt_oom(err, errlen);
        }
        for (int k = 0; k < 2; k++) {
            const cJSON *sel = np_member(it, keys[k]);
            cJSON *copy;
            if (!sel) continue;
            snprintf(field, sizeof field, "spec.network.%s[%zu].%s", key, i, keys[k]);
            if (np_selector(sel, field, &copy, err, errlen) != 0) {
                cJSON_Delete(copy);
                return -1;
            }
            if (!cJSON_AddItemToObject(peer, keys[k], copy)) {
                cJSON_Delete(copy);
                return errfmt_oom(err, errlen);
            }
            n++;
        }
        if (!n) return errfmt(err, errlen, "spec.network.%s[%zu]: needs a namespaceSelector or a "
                               "podSelector", key, i);
        i++;
    }
    return 0;
}

/* SBX_NETPOL_DEFAULT_EXCEPT into out->except. */
static int np_default_except(struct sbx_network *out, char *err, size_t errlen) {
    static const char *const ranges[] = SBX_NETPOL_DEFAULT_EXCEPT;
    size_t n = sizeof ranges / sizeof *ranges;

    out->except = calloc(n, sizeof *out->except);
    if (!out->except) return errfmt_oom(err, errlen);
    for (size_t i = 0; i < n; i++)
        if (sbx_cidr_parse(ranges[i], &out->except[i], err, errlen) != 0) return -1;
    out->nexcept = n;
    return 0;
}

static int np_parse_class(const cJSON *net, struct sbx_network *out, char *err, size_t errlen) {
    const cJSON *mode, *cidrs;

    out->allow_dns = 1;
    if (!net) return 0;
    if (!cJSON_IsObject(net)) return errfmt(err, errlen, "spec.network: must be an object");
    mode = np_member(net, "mode");
    if (mode && (!cJSON_IsString(mode) ||
                 (strcmp(mode->valuestring, "none") != 0 && strcmp(mode->valuestring, "isolated") != 0)))
        return errfmt(err, errlen, "spec.network.mode: must be \"none\" or \"isolated\"");
    out->mode = mode && !strcmp(mode->valuestring, "isolated") ? SBX_NET_ISOLATED : SBX_NET_NONE;
    if (np_peers(np_member(net, "ingressFrom"), "ingressFrom", &out->ingress_from, err, errlen) != 0 ||
        np_peers(np_member(net, "egressTo"), "egressTo", &out->egress_to, err, errlen) != 0)
        return -1;
    cidrs = np_member(net, "egressCIDRs");
    if (cidrs && np_cidrs(cidrs, "spec.network.egressCIDRs", &out->egress, &out->negress, err, errlen) != 0)
        return -1;
    cidrs = np_member(net, "egressExcept");
    if (cidrs && np_cidrs(cidrs, "spec.network.egressExcept", &out->except, &out->nexcept, err, errlen) != 0)
        return -1;
    if (!cidrs && np_default_except(out, err, errlen) != 0) return -1;
    if (np_bool(net, "allowDNS", 1, &out->allow_dns, err, errlen) ||
        np_bool(net, "allowAPIServer", 0, &out->allow_apiserver, err, errlen) ||
        np_bool(net, "allowMetadata", 0, &out->allow_metadata, err, errlen))
        return -1;
    return 0;
}

int sbx_network_parse_class(const cJSON *net, struct sbx_network *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = '\0';
    if (np_parse_class(net, out, err, errlen) == 0) return 0;
    sbx_network_free(out);
    return -1;
}

void sbx_network_free(struct sbx_network *n) {
    if (!n) return;
    cJSON_Delete(n->ingress_from);
    cJSON_Delete(n->egress_to);
    free(n->egress);
    free(n->except);
    memset(n, 0, sizeof *n);
}

/* ---- a Sandbox's network under its class ---------------------------------------------- */

/* "a, b, c" of the class's CIDRs into out. */
static const char *np_list(const struct sbx_network *n, char *out, size_t outlen) {
    char one[SBX_CIDR_TEXT_MAX];
    size_t o = 0;

    out[0] = '\0';
    if (!n->negress) snprintf(out, outlen, "none");
    for (size_t i = 0; i < n->negress && o + 1 < outlen; i++) {
        sbx_cidr_format(&n->egress[i], one, sizeof one);
        int w = snprintf(out + o, outlen - o, "%s%s", i ? ", " : "", one);
        if (w < 0) break;
        o += (size_t)w;
    }
    return out;
}

/* The egressExcept entry of cls that cuts inner out of outer (one strictly inside outer
 * that holds inner), or NULL when outer allows inner. */
static const struct sbx_cidr *np_cut_from(const struct sbx_network *cls, const struct sbx_cidr *outer,
                                          const struct sbx_cidr *inner) {
    for (size_t i = 0; i < cls->nexcept; i++) {
        const struct sbx_cidr *x = &cls->except[i];
        if (x->prefix > outer->prefix && sbx_cidr_contains(outer, x) && sbx_cidr_contains(x, inner)) return x;
    }
    return NULL;
}

/* sbx_network_resolve, and with drop a Sandbox CIDR the class no longer allows is left
 * out (counted in *dropped) instead of failing. */
static int network_resolve(const cJSON *sandbox, const struct sbx_network *cls, const char *class_name, int drop,
                           size_t *dropped, struct sbx_network *out, char *err, size_t errlen);

int sbx_network_resolve(const cJSON *sandbox, const struct sbx_network *cls, const char *class_name,
                        struct sbx_network *out, char *err, size_t errlen) {
    return network_resolve(sandbox, cls, class_name, 0, NULL, out, err, errlen);
}

int sbx_network_narrow(const cJSON *sandbox, const struct sbx_network *cls, const char *class_name,
                       struct sbx_network *out, size_t *dropped, char *err, size_t errlen) {
    size_t n = 0;
    int rc = network_resolve(sandbox, cls, class_name, 1, &n, out, err, errlen);
    if (dropped) *dropped = n;
    return rc;
}

static int network_resolve(const cJSON *sandbox, const struct sbx_network *cls, const char *class_name, int drop,
                           size_t *dropped, struct sbx_network *out, char *err, size_t errlen) {
    const cJSON *net = np_member(np_member(sandbox, "spec"), "network"), *cidrs;
    char list[1024], one[SBX_CIDR_TEXT_MAX];
    const char *cn = class_name ? class_name : "";

    memset(out, 0, sizeof *out);
    if (net && !cJSON_IsObject(net)) return errfmt(err, errlen, "spec.network: must be an object");
    cidrs = np_member(net, "egressCIDRs");
    if (!cls || cls->mode != SBX_NET_ISOLATED) {
        if (!cidrs || drop) return 0;
        if (!cls) return errfmt(err, errlen, "spec.network.egressCIDRs: needs a SandboxClass with spec.network.mode "
                                 "isolated (this Sandbox has no class)");
        return errfmt(err, errlen, "spec.network.egressCIDRs: needs a SandboxClass with spec.network.mode isolated "
                       "(SandboxClass \"%.253s\" has spec.network.mode none)", cn);
    }
    out->mode = SBX_NET_ISOLATED;
    out->allow_dns = cls->allow_dns;
    out->allow_apiserver = cls->allow_apiserver;
    out->allow_metadata = cls->allow_metadata;
    if (cls->ingress_from && !(out->ingress_from = cJSON_Duplicate(cls->ingress_from, 1))) goto oom;
    if (cls->egress_to && !(out->egress_to = cJSON_Duplicate(cls->egress_to, 1))) goto oom;
    if (cls->nexcept) {
        out->except = malloc(cls->nexcept * sizeof *out->except);
        if (!out->except) goto oom;
        memcpy(out->except, cls->except, cls->nexcept * sizeof *out->except);
        out->nexcept = cls->nexcept;
    }
    if (!cidrs) {
        if (cls->negress) {
            out->egress = malloc(cls->negress * sizeof *out->egress);
            if (!out->egress) goto oom;
            memcpy(out->egress, cls->egress, cls->negress * sizeof *out->egress);
            out->negress = cls->negress;
        }
        return 0;
    }
    if (np_cidrs(cidrs, "spec.network.egressCIDRs", &out->egress, &out->negress, err, errlen) != 0) goto fail;
    for (size_t i = 0; i < out->negress; i++) {
        const struct sbx_cidr *cut = NULL;
        size_t j;
        for (j = 0; j < cls->negress; j++) {
            if (!sbx_cidr_contains(&cls->egress[j], &out->egress[i])) continue;
            const struct sbx_cidr *x = np_cut_from(cls, &cls->egress[j], &out->egress[i]);
            if (!x) break;
            cut = x;
        }
        if (j < cls->negress) continue;
        if (drop) {
            /* No longer allowed: left out, the others kept (the policy only narrows). */
            memmove(&out->egress[i], &out->egress[i + 1], (out->negress - i - 1) * sizeof *out->egress);
            out->negress--;
            i--;
            (*dropped)++;
            continue;
        }
        sbx_cidr_format(&out->egress[i], one, sizeof one);
        if (cut) {
            char ex[SBX_CIDR_TEXT_MAX];
            sbx_cidr_format(cut, ex, sizeof ex);
            errfmt(err, errlen, "spec.network.egressCIDRs[%zu]: %s is inside %s, which SandboxClass \"%.253s\" "
                    "excepts from its egress CIDRs (spec.network.egressExcept)", i, one, ex, cn);
        } else {
            errfmt(err, errlen, "spec.network.egressCIDRs[%zu]: %s is not inside the egress CIDRs of SandboxClass "
                    "\"%.253s\" (spec.network.egressCIDRs: %s)", i, one, cn, np_list(cls, list, sizeof list));
        }
        goto fail;
    }
    return 0;
oom:
    errfmt(err, errlen, "out of memory while resolving spec.network");
fail:
    sbx_network_free(out);
    return -1;
}

/* ---- the NetworkPolicy ----------------------------------------------------------------- */

/* Add x to the except list out[0..*k): not when an entry holds it already; entries it
 * holds make way for it. -1 when there is no room. */
static int np_except_add(struct sbx_cidr *out, size_t *k, size_t max, const struct sbx_cidr *x) {
    size_t j, w = 0;

    for (j = 0; j < *k; j++)
        if (sbx_cidr_contains(&out[j], x)) return 0;   /* already covered */
    for (j = 0; j < *k; j++)
        if (!sbx_cidr_contains(x, &out[j])) out[w++] = out[j];
    *k = w;
    if (*k >= max) return -1;
    out[(*k)++] = *x;
    return 0;
}

size_t sbx_netpol_excepts(const struct sbx_cidr *cidr, const struct sbx_network *n, const struct sbx_cidr *api,
                          size_t napi, struct sbx_cidr *out, size_t max, int *whole) {
    struct sbx_cidr md[2];
    size_t k = 0;

    *whole = 0;
    /* The constants parse; were they not, nothing would be excepted, so fail closed. */
    if (sbx_cidr_parse(SBX_METADATA_V4, &md[0], NULL, 0) || sbx_cidr_parse(SBX_METADATA_V6, &md[1], NULL, 0)) {
        *whole = 1;
        return 0;
    }
    for (size_t i = 0; i < n->nexcept; i++)
        if (n->except[i].prefix > cidr->prefix && sbx_cidr_contains(cidr, &n->except[i]) &&
            np_except_add(out, &k, max, &n->except[i]) != 0)
            goto full;
    for (size_t i = 0; i < 2 + napi; i++) {
        const struct sbx_cidr *x = i < 2 ? &md[i] : &api[i - 2];
        if (i < 2 ? n->allow_metadata : n->allow_apiserver) continue;
        if (!sbx_cidr_contains(cidr, x)) continue;
        if (x->prefix == cidr->prefix || sbx_cidr_contains(x, cidr)) { *whole = 1; return 0; }
        if (np_except_add(out, &k, max, x) != 0) goto full;
    }
    return k;
full:   /* a shorter list would allow what it leaves out: fail closed */
    *whole = 1;
    return 0;
}

/* {protocol, port} into arr. */
static int np_port(cJSON *arr, const char *proto, int port) {
    cJSON *p = cJSON_CreateObject();
    if (!p || !cJSON_AddItemToArray(arr, p)) { cJSON_Delete(p); return -1; }
    return cJSON_AddStringToObject(p, "protocol", proto) && cJSON_AddNumberToObject(p, "port", port) ? 0 : -1;
}

/* {ipBlock: {cidr, except?}} into arr. */
static int np_ipblock(cJSON *arr, const struct sbx_cidr *c, const struct sbx_cidr *ex, size_t nex) {
    char text[SBX_CIDR_TEXT_MAX];
    cJSON *peer = cJSON_CreateObject(), *blk;

    if (!peer || !cJSON_AddItemToArray(arr, peer)) { cJSON_Delete(peer); return -1; }
    sbx_cidr_format(c, text, sizeof text);
    if (!(blk = cJSON_AddObjectToObject(peer, "ipBlock")) || !cJSON_AddStringToObject(blk, "cidr", text)) return -1;
    if (nex) {
        cJSON *e = cJSON_AddArrayToObject(blk, "except");
        if (!e) return -1;
        for (size_t i = 0; i < nex; i++) {
            sbx_cidr_format(&ex[i], text, sizeof text);
            if (!cJSON_AddItemToArray(e, cJSON_CreateString(text))) return -1;
        }
    }
    return 0;
}

/* A new egress rule {to: []} in egress; *to is its peer list. */
static cJSON *np_rule(cJSON *egress, cJSON **to) {
    cJSON *r = cJSON_CreateObject();
    if (!r || !cJSON_AddItemToArray(egress, r)) { cJSON_Delete(r); return NULL; }
    *to = cJSON_AddArrayToObject(r, "to");
    return *to ? r : NULL;
}

/* The DNS rule: UDP and TCP 53 to the cluster DNS pods (kube-system, k8s-app=kube-dns,
 * the label kube-dns and CoreDNS deployments carry). */
static int np_dns(cJSON *egress) {
    cJSON *to, *r = np_rule(egress, &to), *peer = cJSON_CreateObject(), *ports;
    if (!r || !peer || !cJSON_AddItemToArray(to, peer)) { cJSON_Delete(peer); return -1; }
    if (!cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(peer, "namespaceSelector"),
                                                         "matchLabels"), "kubernetes.io/metadata.name", "kube-system") ||
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(peer, "podSelector"), "matchLabels"),
                                 "k8s-app", "kube-dns"))
        return -1;
    if (!(ports = cJSON_AddArrayToObject(r, "ports")) || np_port(ports, "UDP", 53) || np_port(ports, "TCP", 53))
        return -1;
    return 0;
}

static int np_build_spec(cJSON *spec, const struct sbx_network *n, const char *pod_name, const struct sbx_cidr *api,
                         size_t napi) {
    struct sbx_cidr ex[SBX_NETPOL_EXCEPTS_MAX];
    cJSON *types, *ingress, *egress, *to;

    if (!cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "podSelector"), "matchLabels"),
                                 SBX_LABEL_POD, pod_name))
        return -1;
    if (!(types = cJSON_AddArrayToObject(spec, "policyTypes")) ||
        !cJSON_AddItemToArray(types, cJSON_CreateString("Ingress")) ||
        !cJSON_AddItemToArray(types, cJSON_CreateString("Egress")))
        return -1;
    if (!(ingress = cJSON_AddArrayToObject(spec, "ingress"))) return -1;
    if (n->ingress_from) {
        cJSON *r = cJSON_CreateObject();
        if (!r || !cJSON_AddItemToArray(ingress, r)) { cJSON_Delete(r); return -1; }
        if (!cJSON_AddItemToObject(r, "from", cJSON_Duplicate(n->ingress_from, 1))) return -1;
    }
    if (!(egress = cJSON_AddArrayToObject(spec, "egress"))) return -1;
    if (n->allow_dns && np_dns(egress)) return -1;
    if (n->egress_to) {   /* the class's peers, any port (e.g. the Yao server's namespace) */
        cJSON *r = cJSON_CreateObject();
        if (!r || !cJSON_AddItemToArray(egress, r)) { cJSON_Delete(r); return -1; }
        if (!cJSON_AddItemToObject(r, "to", cJSON_Duplicate(n->egress_to, 1))) return -1;
    }
    if (n->negress) {
        cJSON *r = np_rule(egress, &to);
        if (!r) return -1;
        for (size_t i = 0; i < n->negress; i++) {
            int whole;
            size_t nex = sbx_netpol_excepts(&n->egress[i], n, api, napi, ex, sizeof ex / sizeof *ex, &whole);
            if (!whole && np_ipblock(to, &n->egress[i], ex, nex)) return -1;
        }
        /* Every CIDR lay inside an excepted address: no rule rather than one to nowhere
         * (an empty "to" would mean everywhere). */
        if (!cJSON_GetArraySize(to)) cJSON_DeleteItemFromArray(egress, cJSON_GetArraySize(egress) - 1);
    }
    if (n->allow_apiserver && napi) {
        if (!np_rule(egress, &to)) return -1;
        for (size_t i = 0; i < napi; i++) {
            struct sbx_cidr host = api[i];
            host.prefix = host.family == 4 ? 32 : 128;
            if (np_ipblock(to, &host, NULL, 0)) return -1;
        }
    }
    return 0;
}

cJSON *sbx_build_netpol(const struct sbx_owner *o, const struct sbx_spec *s, const struct sbx_network *n,
                        const char *pod_name, const struct sbx_cidr *api, size_t napi) {
    cJSON *np, *meta, *spec;

    if (!n || n->mode != SBX_NET_ISOLATED || !pod_name) return NULL;
    meta = sbx_build_owned_meta(o, s, pod_name);
    if (!meta) return NULL;
    np = cJSON_CreateObject();
    if (!np || !cJSON_AddStringToObject(np, "apiVersion", "networking.k8s.io/v1") ||
        !cJSON_AddStringToObject(np, "kind", "NetworkPolicy") || !cJSON_AddItemToObject(np, "metadata", meta)) {
        cJSON_Delete(meta);
        goto err;
    }
    if (!(spec = cJSON_AddObjectToObject(np, "spec")) || np_build_spec(spec, n, pod_name, api, napi) != 0) goto err;
    return np;
err:
    cJSON_Delete(np);
    return NULL;
}

/* Member key of obj as an array, absent counting as empty (the API server omits empty
 * ingress and egress lists). */
static int np_same_list(const cJSON *a, const cJSON *b, const char *key) {
    const cJSON *x = np_member(a, key), *y = np_member(b, key);
    int nx = cJSON_IsArray(x) ? cJSON_GetArraySize(x) : 0, ny = cJSON_IsArray(y) ? cJSON_GetArraySize(y) : 0;
    if (x && !cJSON_IsArray(x)) return 0;
    if (nx != ny) return 0;
    return nx == 0 || cJSON_Compare(x, y, 1);
}

int sbx_netpol_matches(const cJSON *have, const cJSON *want) {
    const cJSON *hs = np_member(have, "spec"), *ws = np_member(want, "spec");
    return hs && ws && cJSON_Compare(np_member(hs, "podSelector"), np_member(ws, "podSelector"), 1) &&
           cJSON_Compare(np_member(hs, "policyTypes"), np_member(ws, "policyTypes"), 1) &&
           np_same_list(hs, ws, "ingress") && np_same_list(hs, ws, "egress");
}
