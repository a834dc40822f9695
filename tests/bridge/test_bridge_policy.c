/* tests/bridge/test_bridge_policy.c — bridge_policy.c, the rule for sending the token over
 * plain TCP: address classes (IPv4, IPv6, IPv4-mapped), the host.tai.internal name, reading
 * its pin out of hosts-file text, and the verdict table. No network; the dial-side tests
 * (a pinned name, a refused address of this machine) are in bridge_tests.py. */
#include "bridge.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int passed, failed;

#define CHECK(what, cond) do { \
        if (cond) { passed++; printf("ok   %s\n", what); } \
        else { failed++; printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__); } \
    } while (0)

/* A numeric address as a sockaddr; the length in *len. */
static struct sockaddr_storage addr(const char *text, size_t *len) {
    struct sockaddr_storage ss;

    memset(&ss, 0, sizeof ss);
    if (inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ss.ss_family = AF_INET;
        *len = sizeof(struct sockaddr_in);
    } else if (inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
        ss.ss_family = AF_INET6;
        *len = sizeof(struct sockaddr_in6);
    } else {
        *len = 0;
    }
    return ss;
}

static enum bpolicy_addr_class cls(const char *text) {
    size_t len;
    struct sockaddr_storage ss = addr(text, &len);
    return bpolicy_addr_class((struct sockaddr *)&ss, len);
}

static void test_classes(void) {
    static const char *loop[] = { "127.0.0.1", "127.255.3.4", "::1", "::ffff:127.0.0.53" };
    static const char *link[] = { "169.254.0.1", "169.254.169.254", "169.254.255.255", "fe80::1",
                                  "febf:ffff::1", "::ffff:169.254.1.1" };
    static const char *other[] = { "10.0.0.5", "192.0.2.2", "172.17.0.1", "0.0.0.0", "169.253.255.255",
                                   "169.255.0.1", "128.0.0.1", "126.255.255.255", "::", "::2", "fec0::1",
                                   "2001:db8::1", "::ffff:10.0.0.1", "::127.0.0.1" };
    size_t i;
    int ok = 1;

    for (i = 0; i < sizeof loop / sizeof loop[0]; i++) ok &= cls(loop[i]) == BPOLICY_LOOPBACK;
    CHECK("policy: 127/8, ::1 and IPv4-mapped loopback are loopback", ok);
    ok = 1;
    for (i = 0; i < sizeof link / sizeof link[0]; i++) ok &= cls(link[i]) == BPOLICY_LINK_LOCAL;
    CHECK("policy: 169.254/16 and fe80::/10 (and mapped) are link-local", ok);
    ok = 1;
    for (i = 0; i < sizeof other / sizeof other[0]; i++) {
        if (cls(other[i]) != BPOLICY_OTHER) {
            printf("     %s is not OTHER\n", other[i]);
            ok = 0;
        }
    }
    CHECK("policy: private, public, unspecified, site-local and IPv4-compatible addresses are other", ok);
    {
        struct sockaddr_in short_v4;
        memset(&short_v4, 0, sizeof short_v4);
        short_v4.sin_family = AF_INET;
        short_v4.sin_addr.s_addr = htonl(0x7f000001);
        CHECK("policy: a truncated sockaddr is other, never loopback",
              bpolicy_addr_class((struct sockaddr *)&short_v4, sizeof short_v4 - 1) == BPOLICY_OTHER);
    }
}

static void test_tai_host(void) {
    CHECK("policy: host.tai.internal is the Tai name, any case, one trailing dot",
          bpolicy_is_tai_host("host.tai.internal") && bpolicy_is_tai_host("HOST.Tai.Internal") &&
          bpolicy_is_tai_host("host.tai.internal."));
    CHECK("policy: look-alikes are not",
          !bpolicy_is_tai_host("host.tai.internal..") && !bpolicy_is_tai_host("xhost.tai.internal") &&
          !bpolicy_is_tai_host("host.tai.internal.evil.example") && !bpolicy_is_tai_host("host.tai") &&
          !bpolicy_is_tai_host("") && !bpolicy_is_tai_host("host-tai-internal"));
}

static void test_hosts_lookup(void) {
    static const char hosts[] =
        "# Kubernetes-managed hosts file.\n"
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "10.244.0.7\tsbx-alice-1\n"
        "\n"
        "# Entries added by HostAliases.\n"
        "#10.9.9.9\thost.tai.internal\n"
        "not-an-ip host.tai.internal\n"
        "169.254.20.10\tnode-local HOST.TAI.INTERNAL.   # Tai's tunnel end\r\n"
        "fe80::1 other host.tai.internal\n"
        "10.1.2.3 host.tai.internal.evil.example host.tai\n"
        "172.17.0.1   host.tai.internal";   /* no newline at the end */
    char out[4][BPOLICY_ADDR_MAX];
    int n = bpolicy_hosts_lookup(hosts, strlen(hosts), "host.tai.internal", out, 4);

    CHECK("hosts: every line naming it, in file order; comments, bad addresses and look-alikes skipped",
          n == 3 && !strcmp(out[0], "169.254.20.10") && !strcmp(out[1], "fe80::1") &&
          !strcmp(out[2], "172.17.0.1"));
    CHECK("hosts: at most max addresses", bpolicy_hosts_lookup(hosts, strlen(hosts), "host.tai.internal", out, 1) == 1 &&
          !strcmp(out[0], "169.254.20.10"));
    CHECK("hosts: a name not in the file gives none",
          bpolicy_hosts_lookup(hosts, strlen(hosts), "yao.example", out, 4) == 0);
    CHECK("hosts: a trailing dot in the name asked for is the same name",
          bpolicy_hosts_lookup(hosts, strlen(hosts), "host.tai.internal.", out, 4) == 3);
    CHECK("hosts: the length bounds the text (no NUL needed)",
          bpolicy_hosts_lookup(hosts, strlen("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost"),
                               "localhost", out, 4) == 1 && !strcmp(out[0], "127.0.0.1"));
    CHECK("hosts: an empty file gives none", bpolicy_hosts_lookup("", 0, "host.tai.internal", out, 4) == 0);
}

static enum bpolicy_verdict verdict(int tls, int allow, int pinned, const char *text) {
    size_t len;
    struct sockaddr_storage ss = addr(text, &len);
    return bpolicy_plain_verdict(tls, allow, pinned, (struct sockaddr *)&ss, len);
}

static void test_verdict(void) {
    CHECK("verdict: TLS always passes, before anything else",
          verdict(1, 0, 0, "203.0.113.9") == BPOLICY_TLS && verdict(1, 1, 1, "127.0.0.1") == BPOLICY_TLS);
    CHECK("verdict: the operator's opt-in passes any address",
          verdict(0, 1, 0, "203.0.113.9") == BPOLICY_OPTED_IN);
    CHECK("verdict: loopback and link-local pass without TLS",
          verdict(0, 0, 0, "127.0.0.1") == BPOLICY_ON_LOOPBACK && verdict(0, 0, 0, "::1") == BPOLICY_ON_LOOPBACK &&
          verdict(0, 0, 0, "169.254.20.10") == BPOLICY_ON_LINK_LOCAL);
    CHECK("verdict: host.tai.internal as the hosts file pins it passes at its pinned address (Docker's "
          "host-gateway, 172.17.0.1)", verdict(0, 0, 1, "172.17.0.1") == BPOLICY_PINNED_TAI);
    /* The same name answered by DNS (a search-domain hit, a spoofed reply) is judged by the
     * address alone: the verdict never sees a name. */
    CHECK("verdict: any other address is refused, whatever name it came from",
          verdict(0, 0, 0, "10.0.0.5") == BPOLICY_REFUSED && verdict(0, 0, 0, "192.0.2.2") == BPOLICY_REFUSED &&
          verdict(0, 0, 0, "2001:db8::1") == BPOLICY_REFUSED && verdict(0, 0, 0, "0.0.0.0") == BPOLICY_REFUSED);
}

int main(void) {
    test_classes();
    test_tai_host();
    test_hosts_lookup();
    test_verdict();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
