/* tests/unit/test_hostalias.c — a SandboxClass's spec.hostAliases (sandbox/decide/hostalias_decide.c):
 * what the class may say, the pod's hostAliases built from literal addresses and Services'
 * cluster IPs, the class parser's message, and the pod builder (the aliases land in the pod,
 * outside the template hash). */
#include "check.h"

#include "sandbox/model/builders.h"
#include "sandbox/decide/class_decide.h"
#include "sandbox/decide/hostalias_decide.h"
#include "sandbox/model/spec.h"

static cJSON *parse(const char *text) {
    cJSON *o = cJSON_Parse(text);
    CHECK(o != NULL);
    return o;
}

static void expect_bad(const char *text, const char *msg) {
    char err[256] = "";
    cJSON *a = parse(text);
    CHECK_INT(sbx_host_aliases_check(a, err, sizeof err), -1);
    CHECK_STR(err, msg);
    cJSON_Delete(a);
}

TEST(valid_lists_pass) {
    char err[256] = "";
    cJSON *a = parse("[{\"hostnames\":[\"host.tai.internal\"],\"service\":{\"namespace\":\"yao\",\"name\":\"yao\"}},"
                     "{\"hostnames\":[\"a\",\"b.c\"],\"ip\":\"10.0.0.7\"},{\"hostnames\":[\"v6\"],\"ip\":\"fd00::1\"}]");
    CHECK_INT(sbx_host_aliases_check(a, err, sizeof err), 0);
    CHECK_INT(sbx_host_aliases_need_lookup(a), 1);
    cJSON_Delete(a);
    a = parse("[{\"hostnames\":[\"x\"],\"ip\":\"192.0.2.1\"}]");
    CHECK_INT(sbx_host_aliases_need_lookup(a), 0);
    cJSON_Delete(a);
    CHECK_INT(sbx_host_aliases_check(NULL, err, sizeof err), 0);
}

TEST(bad_lists_are_refused_naming_the_field) {
    expect_bad("{}", "spec.hostAliases: must be an array");
    expect_bad("[1]", "spec.hostAliases[0]: must be an object");
    expect_bad("[{\"ip\":\"10.0.0.1\"}]", "spec.hostAliases[0].hostnames: 1 to 16 host names");
    expect_bad("[{\"hostnames\":[],\"ip\":\"10.0.0.1\"}]", "spec.hostAliases[0].hostnames: 1 to 16 host names");
    expect_bad("[{\"hostnames\":[\"Host\"],\"ip\":\"10.0.0.1\"}]",
               "spec.hostAliases[0].hostnames[0]: must be a lower-case DNS-1123 subdomain");
    expect_bad("[{\"hostnames\":[\"ok\",\"../x\"],\"ip\":\"10.0.0.1\"}]",
               "spec.hostAliases[0].hostnames[1]: must be a lower-case DNS-1123 subdomain");
    expect_bad("[{\"hostnames\":[\"h\"]}]", "spec.hostAliases[0]: exactly one of ip and service");
    expect_bad("[{\"hostnames\":[\"h\"],\"ip\":\"10.0.0.1\",\"service\":{\"namespace\":\"a\",\"name\":\"b\"}}]",
               "spec.hostAliases[0]: exactly one of ip and service");
    expect_bad("[{\"hostnames\":[\"h\"],\"ip\":\"10.0.0.300\"}]", "spec.hostAliases[0].ip: must be an IPv4 or IPv6 address");
    expect_bad("[{\"hostnames\":[\"h\"],\"ip\":\"host.example\"}]", "spec.hostAliases[0].ip: must be an IPv4 or IPv6 address");
    expect_bad("[{\"hostnames\":[\"h\"],\"service\":{\"namespace\":\"yao\"}}]",
               "spec.hostAliases[0].service: {namespace, name}, each a DNS-1123 label");
    expect_bad("[{\"hostnames\":[\"h\"],\"service\":{\"namespace\":\"Yao\",\"name\":\"y\"}}]",
               "spec.hostAliases[0].service: {namespace, name}, each a DNS-1123 label");
    expect_bad("[{\"hostnames\":[\"h\"],\"service\":{\"namespace\":\"yao\",\"name\":\"a.b\"}}]",
               "spec.hostAliases[0].service: {namespace, name}, each a DNS-1123 label");
    /* 17 entries */
    char big[4096] = "[";
    for (int i = 0; i < 17; i++)
        strcat(big, i ? ",{\"hostnames\":[\"h\"],\"ip\":\"10.0.0.1\"}" : "{\"hostnames\":[\"h\"],\"ip\":\"10.0.0.1\"}");
    strcat(big, "]");
    expect_bad(big, "spec.hostAliases: at most 16 entries");
}

TEST(the_pods_aliases_take_literal_and_looked_up_addresses) {
    char err[256] = "";
    cJSON *a = parse("[{\"hostnames\":[\"host.tai.internal\"],\"service\":{\"namespace\":\"yao\",\"name\":\"yao\"}},"
                     "{\"hostnames\":[\"a\",\"b\"],\"ip\":\"10.0.0.7\"}]");
    const char *ips[2] = {"10.0.0.42", NULL};
    cJSON *out = sbx_host_aliases_build(a, ips, err, sizeof err);
    CHECK(out != NULL);
    char *text = cJSON_PrintUnformatted(out);
    CHECK_STR(text, "[{\"ip\":\"10.0.0.42\",\"hostnames\":[\"host.tai.internal\"]},"
                    "{\"ip\":\"10.0.0.7\",\"hostnames\":[\"a\",\"b\"]}]");
    cJSON_free(text);
    cJSON_Delete(out);
    /* a Service without a cluster IP: no list, a message naming it */
    ips[0] = "";
    CHECK(sbx_host_aliases_build(a, ips, err, sizeof err) == NULL);
    CHECK_STR(err, "spec.hostAliases[0]: Service yao/yao has no cluster IP");
    cJSON_Delete(a);
}

TEST(a_services_cluster_ip) {
    cJSON *s = parse("{\"spec\":{\"clusterIP\":\"10.0.0.9\"}}");
    CHECK_STR(sbx_service_cluster_ip(s), "10.0.0.9");
    cJSON_Delete(s);
    s = parse("{\"spec\":{\"clusterIP\":\"None\"}}");
    CHECK_STR(sbx_service_cluster_ip(s), "");
    cJSON_Delete(s);
    s = parse("{\"spec\":{}}");
    CHECK_STR(sbx_service_cluster_ip(s), "");
    cJSON_Delete(s);
    CHECK_STR(sbx_service_cluster_ip(NULL), "");
}

TEST(the_class_parser_checks_and_keeps_them) {
    char err[512] = "";
    struct sbx_class k;
    cJSON *c = parse("{\"metadata\":{\"name\":\"yao\"},\"spec\":{\"hostAliases\":[{\"hostnames\":[\"host.tai.internal\"],"
                     "\"service\":{\"namespace\":\"yao\",\"name\":\"yao\"}}]}}");
    CHECK_INT(sbx_class_parse(c, &k, err, sizeof err), 0);
    CHECK(k.host_aliases != NULL && cJSON_GetArraySize(k.host_aliases) == 1);
    /* resolved into the Sandbox's spec */
    cJSON *sb = parse("{\"metadata\":{\"name\":\"sb\",\"namespace\":\"ns\",\"uid\":\"u-1\"},"
                      "\"spec\":{\"userID\":\"alice\",\"chatID\":\"c1\"}}");
    struct sbx_defaults d;
    struct sbx_spec s;
    sbx_defaults_init(&d);
    CHECK_INT(sbx_class_resolve(sb, &k, &d, &s, err, sizeof err), 0);
    CHECK(s.host_aliases != NULL && s.host_aliases_resolved == NULL);
    /* the pod: no hostAliases until they are resolved; resolved ones do not move the hash */
    struct sbx_owner o = {.name = "sb", .namespace_ = "ns", .uid = "u-1"};
    cJSON *plain = sbx_build_pod(&o, &s, "yao-sb-alice-c1", "claim");
    CHECK(plain != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(plain, "spec"), "hostAliases") == NULL);
    const char *ips[1] = {"10.0.0.42"};
    s.host_aliases_resolved = sbx_host_aliases_build(s.host_aliases, ips, err, sizeof err);
    CHECK(s.host_aliases_resolved != NULL);
    cJSON *with = sbx_build_pod(&o, &s, "yao-sb-alice-c1", "claim");
    CHECK(with != NULL);
    const cJSON *ha = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(with, "spec"), "hostAliases");
    CHECK(cJSON_IsArray(ha) && cJSON_GetArraySize(ha) == 1);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ha, 0), "ip")), "10.0.0.42");
    const char *h1 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(plain, "metadata"), "annotations"),
        "sandbox.yaoapps.com/template-hash"));
    const char *h2 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(with, "metadata"), "annotations"),
        "sandbox.yaoapps.com/template-hash"));
    CHECK(h1 && h2 && !strcmp(h1, h2));
    cJSON_Delete(plain);
    cJSON_Delete(with);
    sbx_spec_free(&s);
    cJSON_Delete(sb);
    sbx_class_free(&k);
    cJSON_Delete(c);
    /* the class with a bad list is refused with its name */
    c = parse("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"hostAliases\":[{\"hostnames\":[\"h\"]}]}}");
    CHECK_INT(sbx_class_parse(c, &k, err, sizeof err), -1);
    CHECK_STR(err, "SandboxClass \"bad\": spec.hostAliases[0]: exactly one of ip and service");
    cJSON_Delete(c);
}


