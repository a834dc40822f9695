/* tests/unit/test_netpol.c — a Sandbox's network policy (sandbox/model/netpol.c): CIDR parsing,
 * canonical text and containment (IPv4 and IPv6), the class's spec.network, a Sandbox's
 * narrowing of its egress CIDRs with the exact InvalidSpec messages, the except lists
 * (the class's egressExcept, metadata, API server) and the NetworkPolicy the builder makes
 * (egressTo peers, the shipped default class's), and the comparison with a stored policy. */
#include "check.h"

#include "sandbox/model/builders.h"
#include "sandbox/decide/class_decide.h"
#include "sandbox/model/netpol.h"
#include "sandbox/model/spec.h"

static struct sbx_cidr cidr(const char *s) {
    struct sbx_cidr c;
    char err[128];
    int rc = sbx_cidr_parse(s, &c, err, sizeof err);
    if (rc) fprintf(stderr, "  %s: %s\n", s, err);
    CHECK(rc == 0);
    return c;
}

/* Parse s, expect failure with a message containing want. */
static void cidr_bad(const char *s, const char *want) {
    struct sbx_cidr c;
    char err[128] = "";
    CHECK(sbx_cidr_parse(s, &c, err, sizeof err) == -1);
    if (!strstr(err, want)) fprintf(stderr, "  %s: \"%s\" lacks \"%s\"\n", s, err, want);
    CHECK(strstr(err, want) != NULL);
}

TEST(cidr_parse_and_format) {
    char t[SBX_CIDR_TEXT_MAX];
    struct sbx_cidr c = cidr("10.0.0.0/8");
    CHECK_INT(c.family, 4);
    CHECK_INT(c.prefix, 8);
    sbx_cidr_format(&c, t, sizeof t);
    CHECK_STR(t, "10.0.0.0/8");
    c = cidr("0.0.0.0/0");
    sbx_cidr_format(&c, t, sizeof t);
    CHECK_STR(t, "0.0.0.0/0");
    c = cidr("FD00:0:0::/8");
    CHECK_INT(c.family, 6);
    sbx_cidr_format(&c, t, sizeof t);
    CHECK_STR(t, "fd00::/8");
    c = cidr("169.254.169.254/32");
    sbx_cidr_format(&c, t, sizeof t);
    CHECK_STR(t, "169.254.169.254/32");
    c = cidr("::/0");
    CHECK_INT(c.prefix, 0);
    c = cidr("2001:db8::1/128");
    CHECK_INT(c.prefix, 128);
}

TEST(cidr_parse_rejects) {
    cidr_bad("10.0.0.0", "must be a CIDR");
    cidr_bad("", "must be a CIDR");
    cidr_bad("/8", "not an IPv4 or IPv6");
    cidr_bad("10.0.0/8", "not an IPv4 or IPv6");
    cidr_bad("10.0.0.256/32", "not an IPv4 or IPv6");
    cidr_bad("example.com/8", "not an IPv4 or IPv6");
    cidr_bad("10.0.0.0/33", "between 0 and 32");
    cidr_bad("fd00::/129", "between 0 and 128");
    cidr_bad("10.0.0.0/", "must be a number");
    cidr_bad("10.0.0.0/-1", "must be a number");
    cidr_bad("10.0.0.0/08", "must be a number");
    cidr_bad("10.0.0.0/8x", "must be a number");
    cidr_bad("10.0.0.0/8 ", "must be a number");
    cidr_bad("10.0.0.0/99999999999999999999", "must be a number");
    cidr_bad("10.0.0.0/128", "between 0 and 32");
    cidr_bad("10.0.0.1/8", "host bits");
    cidr_bad("10.128.0.0/9x", "must be a number");
    cidr_bad("10.0.0.1/31", "host bits");
    cidr_bad("fd00::1/64", "host bits");
    cidr_bad("1.2.3.4/0", "host bits");
}

/* An IPv4 range has one form: the IPv4-mapped spelling is the IPv4 range (as the kernel
 * and Go's net.IPNet read it), the IPv4-compatible one is refused. */
TEST(cidr_canonical_family) {
    char t[SBX_CIDR_TEXT_MAX];
    struct sbx_cidr c = cidr("::ffff:10.0.0.0/104");
    CHECK_INT(c.family, 4);
    CHECK_INT(c.prefix, 8);
    sbx_cidr_format(&c, t, sizeof t);
    CHECK_STR(t, "10.0.0.0/8");
    c = cidr("::ffff:169.254.169.254/128");
    sbx_cidr_format(&c, t, sizeof t);
    CHECK_STR(t, "169.254.169.254/32");
    c = cidr("::FFFF:a9fe:0/112");
    sbx_cidr_format(&c, t, sizeof t);
    CHECK_STR(t, "169.254.0.0/16");
    c = cidr("0:0:0:0:0:ffff:0:0/96");
    sbx_cidr_format(&c, t, sizeof t);
    CHECK_STR(t, "0.0.0.0/0");
    /* host bits are judged in the IPv6 spelling, as the API server does */
    cidr_bad("::ffff:10.0.0.1/104", "host bits");
    cidr_bad("::ffff:0:0/95", "host bits");
    /* IPv4-compatible (::/96, deprecated) */
    cidr_bad("::10.0.0.0/104", "IPv4-compatible IPv6 range (deprecated by RFC 4291, read as IPv4 by some tools): "
                               "write the IPv4 range 10.0.0.0/8");
    cidr_bad("::a9fe:a9fe/128", "write the IPv4 range 169.254.169.254/32");
    cidr_bad("::/96", "write the IPv4 range 0.0.0.0/0");
    cidr_bad("::1/128", "IPv4-compatible");
    /* wider IPv6 ranges, and others that merely embed an IPv4 address, stay IPv6 */
    c = cidr("::/64");
    CHECK_INT(c.family, 6);
    c = cidr("::ffff:0:0:0/96");   /* ::ffff:0:0:0 is not the mapped prefix */
    CHECK_INT(c.family, 6);
    c = cidr("64:ff9b::a00:0/104");
    CHECK_INT(c.family, 6);
    c = cidr("2002:a00::/24");
    CHECK_INT(c.family, 6);
    /* containment after the normalisation: the mapped spelling meets the IPv4 ranges */
    struct sbx_cidr outer = cidr("10.0.0.0/8"), inner = cidr("::ffff:10.1.0.0/112");
    CHECK(sbx_cidr_contains(&outer, &inner));
    outer = cidr("::/0");
    CHECK(!sbx_cidr_contains(&outer, &inner));
}

TEST(cidr_containment) {
    struct sbx_cidr a = cidr("10.0.0.0/8"), b = cidr("10.1.0.0/16"), c = cidr("11.0.0.0/16");
    struct sbx_cidr any4 = cidr("0.0.0.0/0"), any6 = cidr("::/0"), v6 = cidr("fd00::/8");
    struct sbx_cidr n9 = cidr("10.128.0.0/9"), n9b = cidr("10.0.0.0/9");
    CHECK(sbx_cidr_contains(&a, &b));
    CHECK(!sbx_cidr_contains(&b, &a));
    CHECK(sbx_cidr_contains(&a, &a));
    CHECK(!sbx_cidr_contains(&a, &c));
    CHECK(sbx_cidr_contains(&any4, &c));
    CHECK(!sbx_cidr_contains(&any4, &v6));   /* families never mix */
    CHECK(!sbx_cidr_contains(&any6, &a));
    CHECK(sbx_cidr_contains(&any6, &v6));
    /* a prefix not on a byte boundary: the partial byte's leading bits decide */
    CHECK(sbx_cidr_contains(&a, &n9));
    CHECK(!sbx_cidr_contains(&n9, &n9b));
    CHECK(!sbx_cidr_contains(&n9b, &n9));
    struct sbx_cidr h1 = cidr("10.255.255.255/32"), h2 = cidr("10.127.0.1/32");
    CHECK(sbx_cidr_contains(&n9, &h1));
    CHECK(!sbx_cidr_contains(&n9, &h2));
    CHECK(sbx_cidr_contains(&n9b, &h2));
    struct sbx_cidr w = cidr("fd00:ec2::/32"), m = cidr("fd00:ec2::254/128"), o = cidr("fd00:ec3::/32");
    CHECK(sbx_cidr_contains(&w, &m));
    CHECK(!sbx_cidr_contains(&o, &m));
}

/* Parse a class network from JSON text; rc, err out. */
static int parse_net(const char *json, struct sbx_network *n, char *err, size_t errlen) {
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    if (json) CHECK(o != NULL);
    int rc = sbx_network_parse_class(o, n, err, errlen);
    cJSON_Delete(o);
    return rc;
}

static void net_bad(const char *json, const char *want) {
    struct sbx_network n;
    char err[512] = "";
    CHECK(parse_net(json, &n, err, sizeof err) == -1);
    if (strcmp(err, want) != 0) fprintf(stderr, "  got \"%s\"\n  want \"%s\"\n", err, want);
    CHECK_STR(err, want);
    CHECK(n.egress == NULL && n.ingress_from == NULL);
}

TEST(class_network_defaults) {
    struct sbx_network n;
    char err[256];
    CHECK(parse_net(NULL, &n, err, sizeof err) == 0);
    CHECK_INT(n.mode, SBX_NET_NONE);
    CHECK_INT(n.allow_dns, 1);
    CHECK_INT(n.allow_apiserver, 0);
    CHECK_INT(n.allow_metadata, 0);
    sbx_network_free(&n);
    CHECK(parse_net("{\"mode\":\"isolated\"}", &n, err, sizeof err) == 0);
    CHECK_INT(n.mode, SBX_NET_ISOLATED);
    CHECK_INT(n.allow_dns, 1);
    CHECK(n.ingress_from == NULL);
    CHECK_INT(n.negress, 0);
    sbx_network_free(&n);
    CHECK(parse_net("{\"mode\":\"isolated\",\"allowDNS\":false,\"allowAPIServer\":true,\"allowMetadata\":true,"
                    "\"egressCIDRs\":[\"0.0.0.0/0\",\"fd00::/8\"],\"ingressFrom\":[{\"namespaceSelector\":"
                    "{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"yao\"},\"matchExpressions\":[]}}]}",
                    &n, err, sizeof err) == 0);
    CHECK_INT(n.allow_dns, 0);
    CHECK_INT(n.allow_apiserver, 1);
    CHECK_INT(n.allow_metadata, 1);
    CHECK_INT(n.negress, 2);
    CHECK_INT(n.egress[1].family, 6);
    /* the empty matchExpressions is dropped, as the API server drops it */
    char *txt = cJSON_PrintUnformatted(n.ingress_from);
    CHECK_STR(txt, "[{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"yao\"}}}]");
    free(txt);
    sbx_network_free(&n);
}

TEST(class_network_rejects) {
    net_bad("[]", "spec.network: must be an object");
    net_bad("{\"mode\":\"open\"}", "spec.network.mode: must be \"none\" or \"isolated\"");
    net_bad("{\"egressCIDRs\":\"10.0.0.0/8\"}", "spec.network.egressCIDRs: must be an array of CIDRs");
    net_bad("{\"egressCIDRs\":[\"10.0.0.0/8\",\"10.0.0.1/8\"]}",
            "spec.network.egressCIDRs[1]: \"10.0.0.1/8\" has host bits set (the network address is needed)");
    net_bad("{\"egressCIDRs\":[1]}", "spec.network.egressCIDRs[0]: must be a string");
    net_bad("{\"allowDNS\":\"yes\"}", "spec.network.allowDNS: must be true or false");
    net_bad("{\"allowMetadata\":1}", "spec.network.allowMetadata: must be true or false");
    net_bad("{\"ingressFrom\":{}}", "spec.network.ingressFrom: must be an array of peers");
    net_bad("{\"ingressFrom\":[{}]}", "spec.network.ingressFrom[0]: needs a namespaceSelector or a podSelector");
    net_bad("{\"ingressFrom\":[{\"podSelector\":{}},{\"ipBlock\":{}}]}",
            "spec.network.ingressFrom[1].ipBlock: only namespaceSelector and podSelector are allowed");
    net_bad("{\"ingressFrom\":[{\"podSelector\":{\"matchLabels\":{\"a\":1}}}]}",
            "spec.network.ingressFrom[0].podSelector.matchLabels.a: must be a string");
    net_bad("{\"ingressFrom\":[{\"podSelector\":{\"labels\":{}}}]}",
            "spec.network.ingressFrom[0].podSelector.labels: not a label selector field");
    net_bad("{\"egressTo\":[{}]}", "spec.network.egressTo[0]: needs a namespaceSelector or a podSelector");
    net_bad("{\"egressTo\":[{\"ipBlock\":{}}]}",
            "spec.network.egressTo[0].ipBlock: only namespaceSelector and podSelector are allowed");
    net_bad("{\"egressTo\":\"yao\"}", "spec.network.egressTo: must be an array of peers");
    net_bad("{\"egressTo\":[{\"namespaceSelector\":{\"matchExpressions\":{}}}]}",
            "spec.network.egressTo[0].namespaceSelector.matchExpressions: must be an array");
    net_bad("{\"egressExcept\":\"10.0.0.0/8\"}", "spec.network.egressExcept: must be an array of CIDRs");
    net_bad("{\"egressExcept\":[\"10.0.0.0/8\",\"fc00::1/7\"]}",
            "spec.network.egressExcept[1]: \"fc00::1/7\" has host bits set (the network address is needed)");
    char big[64 * 20 + 64] = "{\"egressCIDRs\":[";
    for (int i = 0; i < SBX_NETPOL_CIDRS_MAX + 1; i++) strcat(big, i ? ",\"10.0.0.0/8\"" : "\"10.0.0.0/8\"");
    strcat(big, "]}");
    net_bad(big, "spec.network.egressCIDRs: at most 64 CIDRs");
    strcpy(big, "{\"egressExcept\":[");
    for (int i = 0; i < SBX_NETPOL_CIDRS_MAX + 1; i++) strcat(big, i ? ",\"fc00::/7\"" : "\"fc00::/7\"");
    strcat(big, "]}");
    net_bad(big, "spec.network.egressExcept: at most 64 CIDRs");
}

TEST(class_network_egress_to_and_except) {
    struct sbx_network n;
    char err[256];
    CHECK(parse_net("{\"mode\":\"isolated\",\"egressTo\":[{\"namespaceSelector\":{\"matchExpressions\":[{\"key\":"
                    "\"kubernetes.io/metadata.name\",\"operator\":\"In\",\"values\":[\"yao\"]}],\"matchLabels\":{}}}],"
                    "\"egressExcept\":[\"10.0.0.0/8\",\"FC00::/7\"]}", &n, err, sizeof err) == 0);
    char *txt = cJSON_PrintUnformatted(n.egress_to);
    CHECK_STR(txt, "[{\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\","
                   "\"operator\":\"In\",\"values\":[\"yao\"]}]}}]");
    free(txt);
    CHECK_INT(n.nexcept, 2);
    CHECK_INT(n.except[1].family, 6);
    CHECK(n.ingress_from == NULL);
    sbx_network_free(&n);
    CHECK(n.except == NULL && n.egress_to == NULL);
    /* no egressExcept: the cluster-internal ranges are cut */
    CHECK(parse_net("{\"mode\":\"isolated\",\"egressCIDRs\":[\"0.0.0.0/0\"]}", &n, err, sizeof err) == 0);
    CHECK_INT(n.nexcept, 7);
    char t[SBX_CIDR_TEXT_MAX];
    sbx_cidr_format(&n.except[0], t, sizeof t);
    CHECK_STR(t, "10.0.0.0/8");
    sbx_cidr_format(&n.except[6], t, sizeof t);
    CHECK_STR(t, "fe80::/10");
    sbx_network_free(&n);
    /* empty lists: nothing */
    CHECK(parse_net("{\"mode\":\"isolated\",\"egressTo\":[],\"egressExcept\":[]}", &n, err, sizeof err) == 0);
    CHECK(n.egress_to == NULL);
    CHECK_INT(n.nexcept, 0);
    sbx_network_free(&n);
}

TEST(class_parse_carries_network) {
    struct sbx_class k;
    char err[512];
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"locked\"},\"spec\":{\"network\":{\"mode\":\"isolated\","
                           "\"egressCIDRs\":[\"10.0.0.0/8\"]}}}");
    CHECK(sbx_class_parse(o, &k, err, sizeof err) == 0);
    CHECK_INT(k.network.mode, SBX_NET_ISOLATED);
    CHECK_INT(k.network.negress, 1);
    sbx_class_free(&k);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"name\":\"locked\"},\"spec\":{\"network\":{\"mode\":\"isolated\","
                    "\"egressCIDRs\":[\"10.0.0.0\"]}}}");
    CHECK(sbx_class_parse(o, &k, err, sizeof err) == -1);
    CHECK_STR(err, "SandboxClass \"locked\": spec.network.egressCIDRs[0]: \"10.0.0.0\" must be a CIDR like "
                   "10.0.0.0/8 or fd00::/8");
    cJSON_Delete(o);
}

/* Resolve a Sandbox with spec members under a class network (NULL = no class). */
static int resolve(const char *class_net, const char *spec_members, struct sbx_network *out, char *err,
                   size_t errlen) {
    char buf[2048];
    struct sbx_network cls;
    int rc;
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"sb\"},\"spec\":{\"userID\":\"u\",\"chatID\":\"c\"%s%s}}",
             *spec_members ? "," : "", spec_members);
    cJSON *sb = cJSON_Parse(buf);
    CHECK(sb != NULL);
    if (class_net && parse_net(class_net, &cls, err, errlen) != 0) { cJSON_Delete(sb); return -2; }
    rc = sbx_network_resolve(sb, class_net ? &cls : NULL, "locked", out, err, errlen);
    if (class_net) sbx_network_free(&cls);
    cJSON_Delete(sb);
    return rc;
}

TEST(sandbox_network_resolve) {
    struct sbx_network n;
    char err[512] = "", t[SBX_CIDR_TEXT_MAX];
    const char *cls = "{\"mode\":\"isolated\",\"egressCIDRs\":[\"10.0.0.0/8\",\"fd00::/8\"],"
                      "\"ingressFrom\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"yao\"}}}]}";
    /* no class, no network: none */
    CHECK(resolve(NULL, "", &n, err, sizeof err) == 0);
    CHECK_INT(n.mode, SBX_NET_NONE);
    sbx_network_free(&n);
    /* the class's CIDRs when the Sandbox names none */
    CHECK(resolve(cls, "", &n, err, sizeof err) == 0);
    CHECK_INT(n.mode, SBX_NET_ISOLATED);
    CHECK_INT(n.negress, 2);
    CHECK(n.ingress_from != NULL);
    CHECK_INT(n.allow_dns, 1);
    sbx_network_free(&n);
    /* narrowed: each inside one of the class's */
    CHECK(resolve(cls, "\"network\":{\"egressCIDRs\":[\"10.1.0.0/16\",\"fd00:1::/32\",\"10.0.0.0/8\"]}", &n, err,
                  sizeof err) == 0);
    CHECK_INT(n.negress, 3);
    sbx_cidr_format(&n.egress[0], t, sizeof t);
    CHECK_STR(t, "10.1.0.0/16");
    sbx_network_free(&n);
    /* narrowed to nothing */
    CHECK(resolve(cls, "\"network\":{\"egressCIDRs\":[]}", &n, err, sizeof err) == 0);
    CHECK_INT(n.negress, 0);
    CHECK_INT(n.mode, SBX_NET_ISOLATED);
    sbx_network_free(&n);
    /* outside */
    CHECK(resolve(cls, "\"network\":{\"egressCIDRs\":[\"10.1.0.0/16\",\"8.8.8.0/24\"]}", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs[1]: 8.8.8.0/24 is not inside the egress CIDRs of SandboxClass "
                   "\"locked\" (spec.network.egressCIDRs: 10.0.0.0/8, fd00::/8)");
    CHECK(n.egress == NULL);
    /* wider than the class's */
    CHECK(resolve(cls, "\"network\":{\"egressCIDRs\":[\"0.0.0.0/0\"]}", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs[0]: 0.0.0.0/0 is not inside the egress CIDRs of SandboxClass "
                   "\"locked\" (spec.network.egressCIDRs: 10.0.0.0/8, fd00::/8)");
    /* a class without CIDRs permits none */
    CHECK(resolve("{\"mode\":\"isolated\"}", "\"network\":{\"egressCIDRs\":[\"10.0.0.0/8\"]}", &n, err,
                  sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs[0]: 10.0.0.0/8 is not inside the egress CIDRs of SandboxClass "
                   "\"locked\" (spec.network.egressCIDRs: none)");
    /* malformed */
    CHECK(resolve(cls, "\"network\":{\"egressCIDRs\":[\"10.0.0.1/8\"]}", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs[0]: \"10.0.0.1/8\" has host bits set (the network address is needed)");
    CHECK(resolve(cls, "\"network\":[]", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network: must be an object");
    /* a Sandbox network needs an isolated class */
    CHECK(resolve(NULL, "\"network\":{\"egressCIDRs\":[\"10.0.0.0/8\"]}", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs: needs a SandboxClass with spec.network.mode isolated (this Sandbox "
                   "has no class)");
    CHECK(resolve("{\"mode\":\"none\"}", "\"network\":{\"egressCIDRs\":[]}", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs: needs a SandboxClass with spec.network.mode isolated (SandboxClass "
                   "\"locked\" has spec.network.mode none)");
    /* the class's egressTo and egressExcept are carried */
    const char *cut = "{\"mode\":\"isolated\",\"egressCIDRs\":[\"0.0.0.0/0\",\"10.1.0.0/16\"],"
                      "\"egressExcept\":[\"10.0.0.0/8\",\"192.168.0.0/16\"],"
                      "\"egressTo\":[{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"yao\"}}}]}";
    CHECK(resolve(cut, "", &n, err, sizeof err) == 0);
    CHECK_INT(n.nexcept, 2);
    CHECK(n.egress_to != NULL);
    CHECK_INT(n.negress, 2);
    sbx_network_free(&n);
    /* narrowing into a part the class cut out is refused; into a part it named, allowed */
    CHECK(resolve(cut, "\"network\":{\"egressCIDRs\":[\"8.8.8.0/24\",\"10.2.0.0/16\"]}", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs[1]: 10.2.0.0/16 is inside 10.0.0.0/8, which SandboxClass \"locked\" "
                   "excepts from its egress CIDRs (spec.network.egressExcept)");
    CHECK(resolve(cut, "\"network\":{\"egressCIDRs\":[\"10.0.0.0/8\"]}", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs[0]: 10.0.0.0/8 is inside 10.0.0.0/8, which SandboxClass \"locked\" "
                   "excepts from its egress CIDRs (spec.network.egressExcept)");
    CHECK(resolve(cut, "\"network\":{\"egressCIDRs\":[\"10.1.2.0/24\",\"8.8.8.0/24\",\"0.0.0.0/0\"]}", &n, err,
                  sizeof err) == 0);
    CHECK_INT(n.negress, 3);
    CHECK_INT(n.nexcept, 2);
    sbx_network_free(&n);
    /* a wider CIDR that holds an except is fine: the except is cut out of it */
    CHECK(resolve(cut, "\"network\":{\"egressCIDRs\":[\"192.0.0.0/2\"]}", &n, err, sizeof err) == 0);
    sbx_network_free(&n);
    /* the IPv4-mapped spelling of a cut range is the cut range (issue 34): refused the same way */
    CHECK(resolve(cut, "\"network\":{\"egressCIDRs\":[\"::ffff:10.0.0.0/104\"]}", &n, err, sizeof err) == -1);
    CHECK_STR(err, "spec.network.egressCIDRs[0]: 10.0.0.0/8 is inside 10.0.0.0/8, which SandboxClass \"locked\" "
                   "excepts from its egress CIDRs (spec.network.egressExcept)");
    {
        const char *both = "{\"mode\":\"isolated\",\"egressCIDRs\":[\"0.0.0.0/0\",\"::/0\"]}";
        CHECK(resolve(both, "\"network\":{\"egressCIDRs\":[\"::ffff:169.254.169.254/128\"]}", &n, err,
                      sizeof err) == -1);
        CHECK_STR(err, "spec.network.egressCIDRs[0]: 169.254.169.254/32 is inside 169.254.0.0/16, which SandboxClass "
                       "\"locked\" excepts from its egress CIDRs (spec.network.egressExcept)");
        CHECK(resolve(both, "\"network\":{\"egressCIDRs\":[\"::10.0.0.0/104\"]}", &n, err, sizeof err) == -1);
        CHECK(strstr(err, "spec.network.egressCIDRs[0]: \"::10.0.0.0/104\" is an IPv4-compatible") == err);
        /* a class that names the mapped range names the IPv4 one: its policy says so */
        CHECK(resolve("{\"mode\":\"isolated\",\"egressCIDRs\":[\"::ffff:0:0/96\"]}", "", &n, err, sizeof err) == 0);
        CHECK_INT(n.negress, 1);
        sbx_cidr_format(&n.egress[0], t, sizeof t);
        CHECK_STR(t, "0.0.0.0/0");
        sbx_network_free(&n);
    }
    /* an empty spec.network is fine anywhere */
    CHECK(resolve(NULL, "\"network\":{}", &n, err, sizeof err) == 0);
    sbx_network_free(&n);
}

/* The except list of c under n as "a b c" text; whole out. */
static void excepts(const char *c, const struct sbx_network *n, const struct sbx_cidr *api, size_t napi,
                    char *out, size_t outlen, int *whole) {
    struct sbx_cidr x = cidr(c), ex[8];
    char t[SBX_CIDR_TEXT_MAX];
    size_t k = sbx_netpol_excepts(&x, n, api, napi, ex, 8, whole);
    out[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        sbx_cidr_format(&ex[i], t, sizeof t);
        if (i) strncat(out, " ", outlen - strlen(out) - 1);
        strncat(out, t, outlen - strlen(out) - 1);
    }
}

TEST(except_lists) {
    struct sbx_network n = {.mode = SBX_NET_ISOLATED, .allow_dns = 1};
    struct sbx_cidr api[3] = {cidr("10.96.0.1/32"), cidr("172.18.0.2/32"), cidr("10.96.0.1/32")};
    char out[256];
    int whole;
    excepts("0.0.0.0/0", &n, api, 3, out, sizeof out, &whole);
    CHECK_STR(out, "169.254.169.254/32 10.96.0.1/32 172.18.0.2/32");   /* the duplicate once */
    CHECK_INT(whole, 0);
    excepts("169.254.0.0/16", &n, api, 3, out, sizeof out, &whole);
    CHECK_STR(out, "169.254.169.254/32");
    excepts("10.0.0.0/8", &n, api, 3, out, sizeof out, &whole);
    CHECK_STR(out, "10.96.0.1/32");
    excepts("192.168.0.0/16", &n, api, 3, out, sizeof out, &whole);
    CHECK_STR(out, "");
    CHECK_INT(whole, 0);
    excepts("fd00::/8", &n, api, 3, out, sizeof out, &whole);
    CHECK_STR(out, "fd00:ec2::254/128");
    excepts("::/0", &n, api, 3, out, sizeof out, &whole);
    CHECK_STR(out, "fd00:ec2::254/128");
    /* a block that is only the metadata address is left out */
    excepts("169.254.169.254/32", &n, api, 3, out, sizeof out, &whole);
    CHECK_INT(whole, 1);
    excepts("10.96.0.1/32", &n, api, 3, out, sizeof out, &whole);
    CHECK_INT(whole, 1);
    /* allowed by the class: not excepted */
    n.allow_metadata = 1;
    excepts("0.0.0.0/0", &n, api, 3, out, sizeof out, &whole);
    CHECK_STR(out, "10.96.0.1/32 172.18.0.2/32");
    excepts("169.254.169.254/32", &n, api, 3, out, sizeof out, &whole);
    CHECK_INT(whole, 0);
    n.allow_apiserver = 1;
    excepts("0.0.0.0/0", &n, api, 3, out, sizeof out, &whole);
    CHECK_STR(out, "");
}

TEST(except_lists_with_class_excepts) {
    struct sbx_cidr cut[5] = {cidr("10.96.0.0/12"), cidr("10.0.0.0/8"), cidr("169.254.0.0/16"),
                              cidr("fc00::/7"), cidr("192.168.0.0/16")};
    struct sbx_network n = {.mode = SBX_NET_ISOLATED, .allow_dns = 1, .except = cut, .nexcept = 5};
    struct sbx_cidr api[2] = {cidr("10.96.0.1/32"), cidr("172.18.0.2/32")};
    char out[256];
    int whole;
    /* the class's first (a narrower one gives way to a wider one), then what they do not hold */
    excepts("0.0.0.0/0", &n, api, 2, out, sizeof out, &whole);
    CHECK_STR(out, "10.0.0.0/8 169.254.0.0/16 192.168.0.0/16 172.18.0.2/32");
    CHECK_INT(whole, 0);
    excepts("::/0", &n, api, 2, out, sizeof out, &whole);
    CHECK_STR(out, "fc00::/7");
    /* a CIDR inside an except was named on purpose: only what it strictly holds is cut */
    excepts("10.0.0.0/8", &n, api, 2, out, sizeof out, &whole);
    CHECK_STR(out, "10.96.0.0/12");
    CHECK_INT(whole, 0);
    excepts("10.1.0.0/16", &n, api, 2, out, sizeof out, &whole);
    CHECK_STR(out, "");
    CHECK_INT(whole, 0);
    excepts("192.168.0.0/16", &n, api, 2, out, sizeof out, &whole);
    CHECK_STR(out, "");
    /* but the metadata and API server addresses still are (or the block goes) */
    excepts("169.254.0.0/16", &n, api, 2, out, sizeof out, &whole);
    CHECK_STR(out, "169.254.169.254/32");
    excepts("10.96.0.0/12", &n, api, 2, out, sizeof out, &whole);
    CHECK_STR(out, "10.96.0.1/32");
    excepts("10.96.0.1/32", &n, api, 2, out, sizeof out, &whole);
    CHECK_INT(whole, 1);
    /* no room for the whole list: the block is left out rather than cut short */
    struct sbx_cidr x = cidr("0.0.0.0/0"), ex[4];
    CHECK_INT((int)sbx_netpol_excepts(&x, &n, api, 2, ex, 3, &whole), 0);
    CHECK_INT(whole, 1);
    CHECK_INT((int)sbx_netpol_excepts(&x, &n, api, 2, ex, 4, &whole), 4);
    CHECK_INT(whole, 0);
}

static struct sbx_spec spec_of(void) {
    struct sbx_spec s;
    memset(&s, 0, sizeof s);
    s.user_id = "alice";
    s.chat_id = "c1";
    s.lifecycle = SBX_SESSION;
    return s;
}

static char *build(const struct sbx_network *n, const struct sbx_cidr *api, size_t napi) {
    struct sbx_owner o = {.name = "sb", .namespace_ = "ns", .uid = "u-1"};
    struct sbx_spec s = spec_of();
    cJSON *np = sbx_build_netpol(&o, &s, n, "sbx-alice-c1", api, napi);
    CHECK(np != NULL);
    if (!np) return strdup("");
    char *txt = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(np, "spec"));
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(np, "kind")->valuestring, "NetworkPolicy");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(np, "apiVersion")->valuestring, "networking.k8s.io/v1");
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(np, "metadata");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(md, "name")->valuestring, "sbx-alice-c1");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(md, "namespace")->valuestring, "ns");
    const cJSON *ref = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(md, "ownerReferences"), 0);
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(ref, "uid")->valuestring, "u-1");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller")));
    CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(md, "labels"), SBX_LABEL_NAME) != NULL);
    cJSON_Delete(np);
    return txt;
}

#define POD_SEL "\"podSelector\":{\"matchLabels\":{\"sandbox.yaoapps.com/pod\":\"sbx-alice-c1\"}}," \
                "\"policyTypes\":[\"Ingress\",\"Egress\"]"
#define DNS_RULE "{\"to\":[{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"kube-system\"}}," \
                 "\"podSelector\":{\"matchLabels\":{\"k8s-app\":\"kube-dns\"}}}],\"ports\":[{\"protocol\":\"UDP\"," \
                 "\"port\":53},{\"protocol\":\"TCP\",\"port\":53}]}"

TEST(build_isolated_minimal) {
    struct sbx_network n = {.mode = SBX_NET_ISOLATED, .allow_dns = 1};
    char *t = build(&n, NULL, 0);
    CHECK_STR(t, "{" POD_SEL ",\"ingress\":[],\"egress\":[" DNS_RULE "]}");
    free(t);
    n.allow_dns = 0;   /* nothing in, nothing out */
    t = build(&n, NULL, 0);
    CHECK_STR(t, "{" POD_SEL ",\"ingress\":[],\"egress\":[]}");
    free(t);
    /* mode none: no policy */
    struct sbx_owner o = {.name = "sb", .namespace_ = "ns", .uid = "u-1"};
    struct sbx_spec s = spec_of();
    n.mode = SBX_NET_NONE;
    CHECK(sbx_build_netpol(&o, &s, &n, "sbx-alice-c1", NULL, 0) == NULL);
    n.mode = SBX_NET_ISOLATED;
    o.uid = NULL;
    CHECK(sbx_build_netpol(&o, &s, &n, "sbx-alice-c1", NULL, 0) == NULL);
}

TEST(build_full) {
    struct sbx_network n;
    char err[256];
    struct sbx_cidr api[1] = {cidr("10.96.0.1/32")};
    CHECK(parse_net("{\"mode\":\"isolated\",\"ingressFrom\":[{\"namespaceSelector\":{\"matchLabels\":"
                    "{\"kubernetes.io/metadata.name\":\"yao\"}}},{\"namespaceSelector\":{},\"podSelector\":"
                    "{\"matchLabels\":{\"app\":\"yao\"}}}],\"egressCIDRs\":[\"0.0.0.0/0\",\"169.254.169.254/32\","
                    "\"192.168.0.0/16\"],\"egressExcept\":[]}", &n, err, sizeof err) == 0);
    char *t = build(&n, api, 1);
    CHECK_STR(t, "{" POD_SEL ",\"ingress\":[{\"from\":[{\"namespaceSelector\":{\"matchLabels\":"
                 "{\"kubernetes.io/metadata.name\":\"yao\"}}},{\"namespaceSelector\":{},\"podSelector\":"
                 "{\"matchLabels\":{\"app\":\"yao\"}}}]}],\"egress\":[" DNS_RULE ",{\"to\":[{\"ipBlock\":{\"cidr\":"
                 "\"0.0.0.0/0\",\"except\":[\"169.254.169.254/32\",\"10.96.0.1/32\"]}},{\"ipBlock\":{\"cidr\":"
                 "\"192.168.0.0/16\"}}]}]}");
    free(t);
    /* allowAPIServer: a rule to each address, none excepted */
    n.allow_apiserver = 1;
    t = build(&n, api, 1);
    CHECK(strstr(t, "{\"to\":[{\"ipBlock\":{\"cidr\":\"10.96.0.1/32\"}}]}]}") != NULL);
    CHECK(strstr(t, "\"except\":[\"169.254.169.254/32\"]") != NULL);
    free(t);
    /* allowMetadata: the metadata-only block stays */
    n.allow_metadata = 1;
    t = build(&n, api, 1);
    CHECK(strstr(t, "{\"ipBlock\":{\"cidr\":\"169.254.169.254/32\"}}") != NULL);
    CHECK(strstr(t, "except") == NULL);
    free(t);
    sbx_network_free(&n);
    /* only the metadata address: no rule at all (an empty "to" would be everywhere) */
    CHECK(parse_net("{\"mode\":\"isolated\",\"allowDNS\":false,\"egressCIDRs\":[\"169.254.169.254/32\"]}", &n, err,
                    sizeof err) == 0);
    t = build(&n, NULL, 0);
    CHECK_STR(t, "{" POD_SEL ",\"ingress\":[],\"egress\":[]}");
    free(t);
    sbx_network_free(&n);
}

/* The shipped default class's network (manifests/classes/default.yaml) with the Yao
 * server's namespace named (the chart's sandboxClass.serverNamespaces): ingress from it
 * only; egress to DNS, to it, and to everything but the cluster-internal, link-local and
 * metadata ranges and the API server's address. */
TEST(build_default_class) {
    struct sbx_network n;
    char err[256];
    struct sbx_cidr api[1] = {cidr("10.0.0.1/32")};
#define YAO_NS "{\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\"," \
               "\"operator\":\"In\",\"values\":[\"yao\"]}]}}"
    CHECK(parse_net("{\"mode\":\"isolated\",\"ingressFrom\":[" YAO_NS "],\"egressTo\":[" YAO_NS "],"
                    "\"egressCIDRs\":[\"0.0.0.0/0\",\"::/0\"],\"egressExcept\":[\"10.0.0.0/8\",\"172.16.0.0/12\","
                    "\"192.168.0.0/16\",\"100.64.0.0/10\",\"169.254.0.0/16\",\"fc00::/7\",\"fe80::/10\"]}",
                    &n, err, sizeof err) == 0);
    char *t = build(&n, api, 1);
    CHECK_STR(t, "{" POD_SEL ",\"ingress\":[{\"from\":[" YAO_NS "]}],\"egress\":[" DNS_RULE ",{\"to\":[" YAO_NS "]},"
                 "{\"to\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\",\"172.16.0.0/12\","
                 "\"192.168.0.0/16\",\"100.64.0.0/10\",\"169.254.0.0/16\"]}},{\"ipBlock\":{\"cidr\":\"::/0\","
                 "\"except\":[\"fc00::/7\",\"fe80::/10\"]}}]}]}");
    free(t);
    sbx_network_free(&n);
    /* without the server's namespace: ingress from nobody, no egressTo rule */
    CHECK(parse_net("{\"mode\":\"isolated\",\"egressCIDRs\":[\"0.0.0.0/0\"],\"egressExcept\":[\"10.0.0.0/8\"]}", &n,
                    err, sizeof err) == 0);
    t = build(&n, api, 1);
    CHECK_STR(t, "{" POD_SEL ",\"ingress\":[],\"egress\":[" DNS_RULE ",{\"to\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\","
                 "\"except\":[\"10.0.0.0/8\",\"169.254.169.254/32\"]}}]}]}");
    free(t);
    sbx_network_free(&n);
    /* a host inside a cut, named by the class itself, stays reachable */
    CHECK(parse_net("{\"mode\":\"isolated\",\"allowDNS\":false,\"egressCIDRs\":[\"0.0.0.0/0\",\"10.201.0.1/32\"],"
                    "\"egressExcept\":[\"10.0.0.0/8\"]}", &n, err, sizeof err) == 0);
    t = build(&n, api, 1);
    CHECK_STR(t, "{" POD_SEL ",\"ingress\":[],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\","
                 "\"except\":[\"10.0.0.0/8\",\"169.254.169.254/32\"]}},{\"ipBlock\":{\"cidr\":\"10.201.0.1/32\"}}]}]}");
    free(t);
    sbx_network_free(&n);
#undef YAO_NS
}

TEST(matches_stored_policy) {
    struct sbx_network n;
    char err[256];
    struct sbx_owner o = {.name = "sb", .namespace_ = "ns", .uid = "u-1"};
    struct sbx_spec s = spec_of();
    CHECK(parse_net("{\"mode\":\"isolated\",\"allowDNS\":false}", &n, err, sizeof err) == 0);
    cJSON *want = sbx_build_netpol(&o, &s, &n, "sbx-alice-c1", NULL, 0);
    /* as the API server stores it: empty lists omitted, keys in another order */
    cJSON *have = cJSON_Parse("{\"metadata\":{\"name\":\"sbx-alice-c1\"},\"spec\":{\"policyTypes\":[\"Ingress\","
                              "\"Egress\"],\"podSelector\":{\"matchLabels\":{\"sandbox.yaoapps.com/pod\":"
                              "\"sbx-alice-c1\"}}}}");
    CHECK(sbx_netpol_matches(have, want) == 1);
    cJSON_Delete(want);
    sbx_network_free(&n);
    /* an egress CIDR more: no longer matches */
    CHECK(parse_net("{\"mode\":\"isolated\",\"allowDNS\":false,\"egressCIDRs\":[\"10.0.0.0/8\"]}", &n, err,
                    sizeof err) == 0);
    want = sbx_build_netpol(&o, &s, &n, "sbx-alice-c1", NULL, 0);
    CHECK(sbx_netpol_matches(have, want) == 0);
    cJSON *copy = cJSON_Duplicate(want, 1);
    CHECK(sbx_netpol_matches(copy, want) == 1);
    /* another pod selector */
    cJSON *ml = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "spec"), "podSelector"), "matchLabels");
    cJSON_ReplaceItemInObjectCaseSensitive(ml, SBX_LABEL_POD, cJSON_CreateString("other"));
    CHECK(sbx_netpol_matches(copy, want) == 0);
    CHECK(sbx_netpol_matches(NULL, want) == 0);
    cJSON_Delete(copy);
    cJSON_Delete(want);
    cJSON_Delete(have);
    sbx_network_free(&n);
}
