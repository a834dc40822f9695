/* kube/proxy.c — the proxy decision and the CONNECT messages (see proxy.h). */
#include "kube/proxy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "base/errfmt.h"

#define CONNECT_ANSWER_MAX (16u * 1024)

static const char *env2(const char *upper, const char *lower) {
    const char *v = getenv(upper);
    if (!v || !*v) v = getenv(lower);
    return v && *v ? v : NULL;
}

void kube_proxy_env_from_process(struct kube_proxy_env *e) {
    e->https_proxy = env2("HTTPS_PROXY", "https_proxy");
    e->http_proxy = env2("HTTP_PROXY", "http_proxy");
    e->no_proxy = env2("NO_PROXY", "no_proxy");
}

/* Split "[userinfo@]host[:port][/...]" (after the scheme). 0, or -1. host is lower-cased
 * and IPv6 loses its brackets; *port is 0 when absent. */
static int split_authority(const char *s, char *userinfo, size_t ulen, char *host, size_t hlen, int *port) {
    size_t alen = strcspn(s, "/?#");
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (s[i] == '@') at = s + i;
    if (userinfo) userinfo[0] = 0;
    if (at) {
        size_t n = (size_t)(at - s);
        if (!userinfo || n >= ulen) return -1;
        memcpy(userinfo, s, n);
        userinfo[n] = 0;
        alen -= n + 1;
        s = at + 1;
    }
    const char *h = s, *hend, *end = s + alen;
    if (*s == '[') {
        h = s + 1;
        hend = memchr(h, ']', (size_t)(end - h));
        if (!hend) return -1;
        s = hend + 1;
    } else {
        hend = memchr(s, ':', alen);
        if (!hend) hend = end;
        s = hend;
    }
    if (hend == h || (size_t)(hend - h) >= hlen) return -1;
    for (size_t i = 0; i < (size_t)(hend - h); i++) host[i] = (char)tolower((unsigned char)h[i]);
    host[hend - h] = 0;
    *port = 0;
    if (s < end) {
        if (*s != ':' || s + 1 == end) return -1;
        long v = 0;
        for (const char *q = s + 1; q < end; q++) {
            if (!isdigit((unsigned char)*q)) return -1;
            v = v * 10 + (*q - '0');
            if (v > 65535) return -1;
        }
        if (v < 1) return -1;
        *port = (int)v;
    }
    return 0;
}

/* Percent-decode s into out (NUL-terminated). 0, or -1 on a bad escape or overflow. */
static int pct_decode(const char *s, char *out, size_t cap) {
    size_t o = 0;
    for (; *s; s++) {
        int c = (unsigned char)*s;
        if (c == '%') {
            if (!isxdigit((unsigned char)s[1]) || !isxdigit((unsigned char)s[2])) return -1;
            char hex[3] = {s[1], s[2], 0};
            c = (int)strtol(hex, NULL, 16);
            s += 2;
        }
        if (o + 1 >= cap) return -1;
        out[o++] = (char)c;
    }
    out[o] = 0;
    return 0;
}

/* Fill p from a proxy URL value (from src). 0, or -1 with err. */
static int parse_proxy(const char *v, const char *src, struct kube_proxy *p, char *err, size_t errlen) {
    const char *rest = v, *sep = strstr(v, "://");
    char raw_user[256];
    memset(p, 0, sizeof(*p));
    if (sep) {
        if ((size_t)(sep - v) != 4 || strncasecmp(v, "http", 4) != 0)
            return errfmt_line(err, errlen, "proxy %s \"%.200s\": only http:// proxies are supported (HTTP CONNECT)",
                               src, v);
        rest = sep + 3;
    }
    if (split_authority(rest, raw_user, sizeof(raw_user), p->host, sizeof(p->host), &p->port) < 0 || !p->host[0])
        return errfmt_line(err, errlen, "proxy %s \"%.200s\": cannot parse it as http://[user:password@]host[:port]",
                           src, v);
    if (!p->port) p->port = 80;
    if (raw_user[0] && pct_decode(raw_user, p->userinfo, sizeof(p->userinfo)) < 0)
        return errfmt_line(err, errlen, "proxy %s: bad percent-escape in its user information", src);
    for (const char *q = p->userinfo; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            return errfmt_line(err, errlen, "proxy %s: control characters in its user information", src);
    int v6 = strchr(p->host, ':') != NULL;
    int n = snprintf(p->url, sizeof(p->url), "http://%s%s%s%s%s:%d", raw_user[0] ? raw_user : "",
                     raw_user[0] ? "@" : "", v6 ? "[" : "", p->host, v6 ? "]" : "", p->port);
    if (n < 0 || (size_t)n >= sizeof(p->url)) return errfmt_line(err, errlen, "proxy %s: URL too long", src);
    snprintf(p->source, sizeof(p->source), "%s", src);
    p->set = 1;
    return 0;
}

/* Host is localhost or a loopback address. */
static int loopback(const char *host) {
    struct in_addr a4;
    struct in6_addr a6;
    size_t n = strlen(host);
    if (!strcmp(host, "localhost") || (n > 10 && !strcmp(host + n - 10, ".localhost"))) return 1;
    if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
    return 0;
}

/* addr (IPv4 or IPv6) lies in cidr "a/b". */
static int in_cidr(const char *cidr, const char *addr) {
    char net[64];
    const char *slash = strchr(cidr, '/');
    if (!slash || (size_t)(slash - cidr) >= sizeof(net)) return 0;
    memcpy(net, cidr, (size_t)(slash - cidr));
    net[slash - cidr] = 0;
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    if (end == slash + 1 || *end) return 0;
    unsigned char a[16], b[16];
    int len;
    if (inet_pton(AF_INET, net, b) == 1 && inet_pton(AF_INET, addr, a) == 1) len = 4;
    else if (inet_pton(AF_INET6, net, b) == 1 && inet_pton(AF_INET6, addr, a) == 1) len = 16;
    else return 0;
    if (bits < 0 || bits > len * 8) return 0;
    for (int i = 0; i < len; i++) {
        int keep = bits >= 8 ? 8 : (int)bits;
        bits -= keep;
        unsigned char mask = keep ? (unsigned char)(0xff << (8 - keep)) : 0;
        if ((a[i] & mask) != (b[i] & mask)) return 0;
    }
    return 1;
}

int kube_proxy_excluded(const char *no_proxy, const char *host, int port) {
    if (!no_proxy || !*no_proxy) return 0;
    const char *p = no_proxy;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        size_t n = strcspn(p, ",");
        char e[300];
        size_t m = n;
        while (m && p[m - 1] == ' ') m--;
        if (m && m < sizeof(e)) {
            for (size_t i = 0; i < m; i++) e[i] = (char)tolower((unsigned char)p[i]);
            e[m] = 0;
            if (!strcmp(e, "*")) return 1;
            /* an optional port: "host:80", "[::1]:80"; a bare IPv6 address has no port */
            int eport = 0;
            char *name = e;
            if (e[0] == '[') {
                char *rb = strchr(e, ']');
                if (rb) {
                    *rb = 0;
                    name = e + 1;
                    if (rb[1] == ':') eport = atoi(rb + 2);
                }
            } else {
                char *colon = strchr(e, ':');
                if (colon && !strchr(colon + 1, ':') && !strchr(e, '/')) {
                    *colon = 0;
                    eport = atoi(colon + 1);
                }
            }
            if (!eport || eport == port) {
                if (strchr(name, '/')) {
                    if (in_cidr(name, host)) return 1;
                } else if (!strcmp(name, host)) {
                    return 1;
                } else {
                    /* "example.com" matches its subdomains too; ".example.com" and
                     * "*.example.com" only them */
                    if (name[0] == '*' && name[1] == '.') name++;
                    char dotted[302];
                    const char *suffix = name;
                    if (name[0] != '.') {
                        snprintf(dotted, sizeof(dotted), ".%s", name);
                        suffix = dotted;
                    }
                    size_t hl = strlen(host), sl = strlen(suffix);
                    if (sl > 1 && hl > sl && !strcmp(host + hl - sl, suffix)) return 1;
                }
            }
        }
        p += n;
    }
    return 0;
}

int kube_proxy_choose(const char *server, const char *proxy_url, const struct kube_proxy_env *env,
                      struct kube_proxy *p, char *err, size_t errlen) {
    struct kube_proxy_env own;
    memset(p, 0, sizeof(*p));
    if (proxy_url && *proxy_url) return parse_proxy(proxy_url, "proxy-url", p, err, errlen);
    if (!env) {
        kube_proxy_env_from_process(&own);
        env = &own;
    }
    int https = !strncasecmp(server, "https://", 8);
    const char *v = https ? env->https_proxy : env->http_proxy;
    if (!v || !*v) return 0;
    const char *sep = strstr(server, "://");
    char host[256];
    int port;
    if (!sep || split_authority(sep + 3, NULL, 0, host, sizeof(host), &port) < 0) return 0;
    if (!port) port = https ? 443 : 80;
    if (loopback(host) || kube_proxy_excluded(env->no_proxy, host, port)) return 0;
    return parse_proxy(v, https ? "HTTPS_PROXY" : "HTTP_PROXY", p, err, errlen);
}

size_t kube_proxy_connect_request(char *out, size_t cap, const char *host, int port, const struct kube_proxy *p) {
    int v6 = strchr(host, ':') != NULL;
    char auth[400] = "";
    if (p && p->userinfo[0]) {
        unsigned char b64[360];
        size_t ul = strlen(p->userinfo);
        if (ul > 256) return 0;
        EVP_EncodeBlock(b64, (const unsigned char *)p->userinfo, (int)ul);
        snprintf(auth, sizeof(auth), "Proxy-Authorization: Basic %s\r\n", (const char *)b64);
        memset(b64, 0, sizeof(b64));
    }
    int n = snprintf(out, cap, "CONNECT %s%s%s:%d HTTP/1.1\r\nHost: %s%s%s:%d\r\n%sUser-Agent: yao-sandbox\r\n\r\n",
                     v6 ? "[" : "", host, v6 ? "]" : "", port, v6 ? "[" : "", host, v6 ? "]" : "", port, auth);
    memset(auth, 0, sizeof(auth));
    if (n < 0 || (size_t)n >= cap) {
        if (cap) memset(out, 0, cap);
        return 0;
    }
    return (size_t)n;
}

int kube_proxy_connect_answer(const char *buf, size_t len, int *status, size_t *header_len) {
    size_t n = len < CONNECT_ANSWER_MAX ? len : CONNECT_ANSWER_MAX;
    if (n >= 5 && strncmp(buf, "HTTP/", 5) != 0) return -1;
    if (n < 5 && strncmp(buf, "HTTP/", n) != 0) return -1;
    for (size_t i = 0; i + 3 < n; i++) {
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
            /* "HTTP/1.x NNN ..." */
            const char *sp = memchr(buf, ' ', i);
            if (!sp || sp + 4 > buf + i || !isdigit((unsigned char)sp[1]) || !isdigit((unsigned char)sp[2]) ||
                !isdigit((unsigned char)sp[3]))
                return -1;
            *status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
            *header_len = i + 4;
            return 1;
        }
    }
    return len >= CONNECT_ANSWER_MAX ? -1 : 0;
}
