/* tests/unit/test_proxy.c — kube/proxy: which proxy a connection to the API server takes
 * (the cluster's proxy-url over the environment; HTTPS_PROXY for https, HTTP_PROXY for
 * http; NO_PROXY names, suffixes, IPs, CIDRs and ports; never localhost or loopback from
 * the environment), bad proxy values, and the CONNECT request and answer. */
#include <string.h>

#include "check.h"
#include "kube/proxy.h"

static const struct kube_proxy_env none = {NULL, NULL, NULL};

TEST(proxy_url_wins_and_is_used_even_for_loopback) {
    struct kube_proxy p;
    char err[256] = "";
    struct kube_proxy_env env = {"http://env-proxy:8080", NULL, "*"};
    CHECK_INT(kube_proxy_choose("https://127.0.0.1:6443", "http://127.0.0.1:3128", &env, &p, err, sizeof err), 0);
    CHECK_INT(p.set, 1);
    CHECK_STR(p.host, "127.0.0.1");
    CHECK_INT(p.port, 3128);
    CHECK_STR(p.url, "http://127.0.0.1:3128");
    CHECK_STR(p.source, "proxy-url");
    /* no scheme means http, no port 80; userinfo decoded for Basic, kept encoded for curl */
    CHECK_INT(kube_proxy_choose("https://api:6443", "u%40corp:p%3Ass@Proxy.Example:3128", &none, &p, err, sizeof err), 0);
    CHECK_STR(p.host, "proxy.example");
    CHECK_STR(p.userinfo, "u@corp:p:ss");
    CHECK_STR(p.url, "http://u%40corp:p%3Ass@proxy.example:3128");
    CHECK_INT(kube_proxy_choose("https://api:6443", "http://proxy", &none, &p, err, sizeof err), 0);
    CHECK_INT(p.port, 80);
    CHECK_INT(kube_proxy_choose("https://api:6443", "http://[::1]:3128/", &none, &p, err, sizeof err), 0);
    CHECK_STR(p.host, "::1");
    CHECK_STR(p.url, "http://[::1]:3128");
}

TEST(environment_by_scheme_and_no_proxy) {
    struct kube_proxy p;
    char err[256] = "";
    struct kube_proxy_env env = {"http://secure:3128", "http://plain:3128", NULL};
    CHECK_INT(kube_proxy_choose("https://api.example.com:6443", NULL, &env, &p, err, sizeof err), 0);
    CHECK(p.set && !strcmp(p.host, "secure") && !strcmp(p.source, "HTTPS_PROXY"));
    CHECK_INT(kube_proxy_choose("http://api.example.com:8080", "", &env, &p, err, sizeof err), 0);
    CHECK(p.set && !strcmp(p.host, "plain") && !strcmp(p.source, "HTTP_PROXY"));
    /* only the matching scheme's variable counts */
    struct kube_proxy_env only_http = {NULL, "http://plain:3128", NULL};
    CHECK_INT(kube_proxy_choose("https://api.example.com:6443", NULL, &only_http, &p, err, sizeof err), 0);
    CHECK_INT(p.set, 0);
    /* localhost and loopback are never proxied from the environment (as Go's net/http) */
    static const char *const direct[] = {"https://localhost:6443", "https://127.0.0.1:6443", "https://127.9.9.9",
                                         "https://[::1]:6443", "https://api.localhost:6443"};
    for (size_t i = 0; i < sizeof(direct) / sizeof(direct[0]); i++) {
        CHECK_INT(kube_proxy_choose(direct[i], NULL, &env, &p, err, sizeof err), 0);
        CHECK_INT(p.set, 0);
    }
    /* NO_PROXY */
    static const struct { const char *no_proxy, *server; int proxied; } cases[] = {
        {"*", "https://api.example.com:6443", 0},
        {"example.com", "https://api.example.com:6443", 0},       /* a name covers its subdomains */
        {"example.com", "https://example.com:6443", 0},
        {".example.com", "https://example.com:6443", 1},          /* a leading dot: only subdomains */
        {".example.com", "https://api.example.com:6443", 0},
        {"*.example.com", "https://api.example.com", 0},
        {"ample.com", "https://api.example.com:6443", 1},         /* not a suffix on a label boundary */
        {"other.com, api.example.com", "https://api.example.com:6443", 0},
        {"API.Example.COM", "https://api.example.com:6443", 0},   /* case does not matter */
        {"api.example.com:443", "https://api.example.com:6443", 1},   /* a port must match */
        {"api.example.com:6443", "https://api.example.com:6443", 0},
        {"10.0.0.0/8", "https://10.1.2.3:6443", 0},
        {"10.0.0.0/8", "https://11.1.2.3:6443", 1},
        {"192.0.2.7", "https://192.0.2.7:6443", 0},
        {"fd00::/8", "https://[fd00::2]:6443", 0},
        {"fd00::2", "https://[fd00::2]:6443", 0},
        {"", "https://api.example.com:6443", 1},
        {" , ,", "https://api.example.com:6443", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kube_proxy_env e = {"http://secure:3128", NULL, cases[i].no_proxy};
        CHECK_INT(kube_proxy_choose(cases[i].server, NULL, &e, &p, err, sizeof err), 0);
        if (p.set != cases[i].proxied)
            fprintf(stderr, "  NO_PROXY \"%s\", server %s: proxied %d\n", cases[i].no_proxy, cases[i].server, p.set);
        CHECK_INT(p.set, cases[i].proxied);
    }
    /* NO_PROXY does not stop an explicit proxy-url (client-go's ProxyURL ignores it) */
    struct kube_proxy_env all = {NULL, NULL, "*"};
    CHECK_INT(kube_proxy_choose("https://api.example.com", "http://p:1", &all, &p, err, sizeof err), 0);
    CHECK_INT(p.set, 1);
}

TEST(bad_proxy_values_are_named) {
    struct kube_proxy p;
    char err[256] = "";
    CHECK_INT(kube_proxy_choose("https://api:6443", "socks5://p:1080", &none, &p, err, sizeof err), -1);
    CHECK(strstr(err, "proxy proxy-url \"socks5://p:1080\": only http:// proxies are supported") != NULL);
    struct kube_proxy_env env = {"https://p:3128", NULL, NULL};
    CHECK_INT(kube_proxy_choose("https://api:6443", NULL, &env, &p, err, sizeof err), -1);
    CHECK(strstr(err, "HTTPS_PROXY") != NULL);
    static const char *const bad[] = {"http://", "http://:3128", "http://p:0", "http://p:99999", "http://p:12x",
                                      "http://[::1", "http://u%zz@p:1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        CHECK_INT(kube_proxy_choose("https://api:6443", bad[i], &none, &p, err, sizeof err), -1);
        CHECK(err[0] != 0);
        CHECK_INT(p.set, 0);
    }
}

TEST(connect_request_and_answer) {
    struct kube_proxy p;
    char err[256], req[1024];
    CHECK_INT(kube_proxy_choose("https://api:6443", "http://alice:s3cret@p:3128", &none, &p, err, sizeof err), 0);
    size_t n = kube_proxy_connect_request(req, sizeof req, "api", 6443, &p);
    CHECK(n == strlen(req));
    CHECK(strncmp(req, "CONNECT api:6443 HTTP/1.1\r\nHost: api:6443\r\n", 43) == 0);
    CHECK(strstr(req, "\r\nProxy-Authorization: Basic YWxpY2U6czNjcmV0\r\n") != NULL);   /* alice:s3cret */
    CHECK(n > 4 && !strcmp(req + n - 4, "\r\n\r\n"));
    CHECK_INT(kube_proxy_choose("https://api:6443", "http://p:3128", &none, &p, err, sizeof err), 0);
    n = kube_proxy_connect_request(req, sizeof req, "fd00::2", 6443, &p);
    CHECK(strncmp(req, "CONNECT [fd00::2]:6443 HTTP/1.1\r\n", 33) == 0 && !strstr(req, "Proxy-Authorization"));
    CHECK_INT(kube_proxy_connect_request(req, 20, "api", 6443, &p), 0);

    int status = 0;
    size_t hl = 0;
    const char *ok = "HTTP/1.1 200 Connection established\r\nProxy-agent: tinyproxy/1.11.1\r\n\r\n\x16\x03";
    CHECK_INT(kube_proxy_connect_answer(ok, 10, &status, &hl), 0);            /* incomplete */
    CHECK_INT(kube_proxy_connect_answer(ok, strlen(ok), &status, &hl), 1);
    CHECK_INT(status, 200);
    CHECK_INT(hl, strlen(ok) - 2);                                           /* the tunnel's bytes follow */
    const char *denied = "HTTP/1.0 407 Proxy Authentication Required\r\n\r\n";
    CHECK_INT(kube_proxy_connect_answer(denied, strlen(denied), &status, &hl), 1);
    CHECK_INT(status, 407);
    CHECK_INT(kube_proxy_connect_answer("SSH-2.0-OpenSSH\r\n\r\n", 19, &status, &hl), -1);
    CHECK_INT(kube_proxy_connect_answer("HTTP/1.1 2x0 ?\r\n\r\n", 18, &status, &hl), -1);
    CHECK_INT(kube_proxy_connect_answer("HT", 2, &status, &hl), 0);
    static char huge[20000];
    memcpy(huge, "HTTP/1.1 200 OK\r\n", 17);
    memset(huge + 17, 'x', sizeof(huge) - 17);
    CHECK_INT(kube_proxy_connect_answer(huge, sizeof huge, &status, &hl), -1);   /* no end within 16 KiB */
}
