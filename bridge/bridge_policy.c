/* bridge/bridge_policy.c — who may receive the bearer token over plain TCP, as pure
 * functions: the class of an address (loopback, link-local, other), the one host name that
 * is trusted when the container's hosts file pins it (host.tai.internal), reading that
 * pin out of hosts-file text, and the verdict for one address the bridge is about to
 * connect to. No I/O: bridge_conn.c reads /etc/hosts, resolves and connects.
 *
 * The rule (bridge/README.md, docs/security.md): TLS, or YAO_BRIDGE_ALLOW_INSECURE=1, or
 * every byte of the plaintext connection stays on this node — a loopback address, a
 * link-local address (not routed past the link: a node-local listener such as Tai's
 * tunnel end), or the address the container's own hosts file gives host.tai.internal
 * (written at container creation by the runtime from the pod spec / Tai's ExtraHosts,
 * never by the network). The check is made on each address actually dialed, never on a
 * name: a name that DNS resolves — host.tai.internal included, when the hosts file does
 * not pin it — passes only if the address it resolved to passes. */
#include "bridge.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* The class of an IPv4 address in host byte order. */
static enum bpolicy_addr_class class_v4(uint32_t a) {
    if ((a >> 24) == 127) return BPOLICY_LOOPBACK;              /* 127.0.0.0/8 */
    if ((a >> 16) == ((169u << 8) | 254u)) return BPOLICY_LINK_LOCAL; /* 169.254.0.0/16 */
    return BPOLICY_OTHER;
}

/* Loopback, link-local or other; an IPv4-mapped IPv6 address is judged as IPv4. */
enum bpolicy_addr_class bpolicy_addr_class(const struct sockaddr *sa, size_t len) {
    if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return class_v4(ntohl(in->sin_addr.s_addr));
    }
    if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        static const unsigned char loop[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
        if (!memcmp(b, mapped, 12))
            return class_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15]);
        if (!memcmp(b, loop, 16)) return BPOLICY_LOOPBACK;                 /* ::1 */
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return BPOLICY_LINK_LOCAL; /* fe80::/10 */
    }
    return BPOLICY_OTHER;
}

/* 1 when host is Yao's name for the node ("host.tai.internal", any case, one trailing dot
 * allowed, as a resolver treats it). */
int bpolicy_is_tai_host(const char *host) {
    size_t n = strlen(host), want = strlen(BPOLICY_TAI_HOST);

    if (n == want + 1 && host[want] == '.') n = want;
    return n == want && !strncasecmp(host, BPOLICY_TAI_HOST, want);
}

/* One whitespace-separated token of [p, end): its start in *tp and length; the pointer
 * past it, or NULL when the line has no more tokens. */
static const char *token(const char *p, const char *end, const char **tp, size_t *tn) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    if (p == end) return NULL;
    *tp = p;
    while (p < end && *p != ' ' && *p != '\t' && *p != '\r') p++;
    *tn = (size_t)(p - *tp);
    return p;
}

/* The addresses hosts-file text gives name, in file order (as glibc's files backend
 * returns them), at most max, each a NUL-terminated numeric address in out[i]. A line is
 * "ADDRESS NAME [ALIAS...]", '#' starts a comment, names compare case-insensitively,
 * a line whose address is not an IPv4/IPv6 literal is ignored. Returns the count. */
int bpolicy_hosts_lookup(const char *text, size_t len, const char *name,
                         char out[][BPOLICY_ADDR_MAX], int max) {
    const char *p = text, *end = text + len;
    size_t nlen = strlen(name);
    int found = 0;

    if (nlen && name[nlen - 1] == '.') nlen--;
    while (p < end && found < max) {
        const char *eol = memchr(p, '\n', (size_t)(end - p)), *hash, *q, *ap, *tp;
        size_t an, tn;
        char addr[BPOLICY_ADDR_MAX];
        unsigned char bin[sizeof(struct in6_addr)];

        if (!eol) eol = end;
        hash = memchr(p, '#', (size_t)(eol - p));
        q = token(p, hash ? hash : eol, &ap, &an);
        if (q && an < sizeof addr) {
            memcpy(addr, ap, an);
            addr[an] = '\0';
            if (inet_pton(AF_INET, addr, bin) == 1 || inet_pton(AF_INET6, addr, bin) == 1) {
                while ((q = token(q, hash ? hash : eol, &tp, &tn))) {
                    if (tn && tp[tn - 1] == '.') tn--;
                    if (tn == nlen && !strncasecmp(tp, name, nlen)) {
                        memcpy(out[found++], addr, an + 1);
                        break;
                    }
                }
            }
        }
        p = eol + (eol < end);
    }
    return found;
}

/* The verdict for one address about to be dialed with the token in the clear. */
enum bpolicy_verdict bpolicy_plain_verdict(int tls, int allow_insecure, int pinned_tai,
                                           const struct sockaddr *sa, size_t len) {
    if (tls) return BPOLICY_TLS;
    if (allow_insecure) return BPOLICY_OPTED_IN;
    if (pinned_tai) return BPOLICY_PINNED_TAI;
    switch (bpolicy_addr_class(sa, len)) {
    case BPOLICY_LOOPBACK: return BPOLICY_ON_LOOPBACK;
    case BPOLICY_LINK_LOCAL: return BPOLICY_ON_LINK_LOCAL;
    case BPOLICY_OTHER: break;
    }
    return BPOLICY_REFUSED;
}
