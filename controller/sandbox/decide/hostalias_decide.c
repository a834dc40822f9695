/* sandbox/decide/hostalias_decide.c — validation of a SandboxClass's spec.hostAliases and the pod's
 * hostAliases built from it (see hostalias_decide.h). No I/O. */
#include "sandbox/decide/hostalias_decide.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "base/errfmt.h"
#include "sandbox/model/naming.h"

static const cJSON *member(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNull(v) ? NULL : v;
}

/* A host name for /etc/hosts: a lower-case DNS-1123 subdomain (the API server asks the same
 * of a pod's hostAliases[].hostnames). */
static int hostname_ok(const char *s) { return s && *s && strlen(s) <= 253 && sbx_is_dns_subdomain(s); }

/* A DNS-1123 label (a namespace's or a Service's name). */
static int label_ok(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0 && i + 1 < n))) return 0;
    }
    return 1;
}

static int ip_ok(const char *s) {
    unsigned char buf[16];
    return s && (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1);
}

int sbx_host_aliases_check(const cJSON *aliases, char *err, size_t errlen) {
    const cJSON *e;
    int i = 0;
    if (!aliases) return 0;
    if (!cJSON_IsArray(aliases)) return errfmt(err, errlen, "spec.hostAliases: must be an array");
    if (cJSON_GetArraySize(aliases) > SBX_HOST_ALIASES_MAX)
        return errfmt(err, errlen, "spec.hostAliases: at most %d entries", SBX_HOST_ALIASES_MAX);
    cJSON_ArrayForEach(e, aliases) {
        if (!cJSON_IsObject(e)) return errfmt(err, errlen, "spec.hostAliases[%d]: must be an object", i);
        const cJSON *names = member(e, "hostnames"), *ip = member(e, "ip"), *svc = member(e, "service"), *h;
        int n = 0;
        if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) == 0 ||
            cJSON_GetArraySize(names) > SBX_HOST_ALIAS_NAMES_MAX)
            return errfmt(err, errlen, "spec.hostAliases[%d].hostnames: 1 to %d host names", i,
                          SBX_HOST_ALIAS_NAMES_MAX);
        cJSON_ArrayForEach(h, names) {
            if (!cJSON_IsString(h) || !hostname_ok(h->valuestring))
                return errfmt(err, errlen, "spec.hostAliases[%d].hostnames[%d]: must be a lower-case DNS-1123 "
                              "subdomain", i, n);
            n++;
        }
        if (!!ip == !!svc)
            return errfmt(err, errlen, "spec.hostAliases[%d]: exactly one of ip and service", i);
        if (ip && (!cJSON_IsString(ip) || !ip_ok(ip->valuestring)))
            return errfmt(err, errlen, "spec.hostAliases[%d].ip: must be an IPv4 or IPv6 address", i);
        if (svc) {
            const cJSON *ns = cJSON_IsObject(svc) ? member(svc, "namespace") : NULL;
            const cJSON *name = cJSON_IsObject(svc) ? member(svc, "name") : NULL;
            if (!cJSON_IsString(ns) || !label_ok(ns->valuestring) || !cJSON_IsString(name) ||
                !label_ok(name->valuestring))
                return errfmt(err, errlen, "spec.hostAliases[%d].service: {namespace, name}, each a DNS-1123 "
                              "label", i);
        }
        i++;
    }
    return 0;
}

int sbx_host_aliases_need_lookup(const cJSON *aliases) {
    const cJSON *e;
    cJSON_ArrayForEach(e, aliases)
        if (member(e, "service")) return 1;
    return 0;
}

cJSON *sbx_host_aliases_build(const cJSON *aliases, const char *const *ips, char *err, size_t errlen) {
    cJSON *out = cJSON_CreateArray();
    const cJSON *e;
    int i = 0;
    if (!out) goto oom;
    cJSON_ArrayForEach(e, aliases) {
        const cJSON *ip = member(e, "ip");
        const char *addr = ip ? ip->valuestring : ips ? ips[i] : NULL;
        if (!addr || !*addr) {
            const cJSON *svc = member(e, "service");
            errfmt(err, errlen, "spec.hostAliases[%d]: Service %s/%s has no cluster IP", i,
                   svc ? cJSON_GetStringValue(member(svc, "namespace")) : "?",
                   svc ? cJSON_GetStringValue(member(svc, "name")) : "?");
            cJSON_Delete(out);
            return NULL;
        }
        cJSON *entry = cJSON_CreateObject();
        cJSON *names = cJSON_Duplicate(member(e, "hostnames"), 1);
        if (!entry || !cJSON_AddItemToArray(out, entry)) {
            cJSON_Delete(entry);
            cJSON_Delete(names);
            goto oom;
        }
        if (!cJSON_AddStringToObject(entry, "ip", addr) || !names || !cJSON_AddItemToObject(entry, "hostnames", names)) {
            if (!cJSON_GetObjectItemCaseSensitive(entry, "hostnames")) cJSON_Delete(names);
            goto oom;
        }
        i++;
    }
    return out;
oom:
    cJSON_Delete(out);
    errfmt_oom(err, errlen);
    return NULL;
}

const char *sbx_service_cluster_ip(const cJSON *svc) {
    const cJSON *spec = svc ? member(svc, "spec") : NULL;
    const char *ip = spec ? cJSON_GetStringValue(member(spec, "clusterIP")) : NULL;
    if (!ip || !*ip || !strcmp(ip, "None") || !ip_ok(ip)) return "";
    return ip;
}
