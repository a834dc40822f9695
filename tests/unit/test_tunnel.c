/* tests/unit/test_tunnel.c — exec and port-forward through an HTTP CONNECT proxy, their
 * Impersonate-* headers, and their retry after a 401 with an exec credential plugin run
 * again, against the scripted endpoint of exec_peer.h, through the small proxy of
 * connect_proxy.h (it records what it was asked, and answers 407 when a password is
 * wanted). Both tunnel through the WebSocket stream's own CONNECT (kube/wsstream.c). (The
 * real proxy, tinyproxy, and TLS through it: tests/integration/test_auth.sh.) */
#include "base/clock.h"
#include "check.h"
#include "loopback.h"
#include "connect_proxy.h"
#include "exec_peer.h"

#include "kube/config.h"
#include "kube/exec.h"
#include "kube/portforward.h"
#include "kube/rest.h"

#include <sys/stat.h>

/* A client of the peer (http), through proxy_url (NULL = direct), impersonating user. */
static struct kube_client *client_for(const struct peer *pe, const char *proxy_url, const char *user) {
    struct kube_config cfg;
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", pe->port);
    memset(&cfg, 0, sizeof cfg);
    cfg.server = strdup(url);
    cfg.token = strdup("t0ken");
    if (proxy_url) cfg.proxy_url = strdup(proxy_url);
    if (user) cfg.impersonate_user = strdup(user);
    pthread_mutex_init(&cfg.lock, NULL);
    cfg.lock_ready = 1;
    struct kube_client *c = kube_client_new(&cfg, "test", err, sizeof err);
    if (!c) fprintf(stderr, "    kube_client_new: %s\n", err);
    if (c) kube_client_set_retries(c, 1);
    return c;
}

struct out { char buf[4096]; size_t len; };
static int to_out(void *ud, const char *p, size_t n) {
    struct out *o = ud;
    size_t k = n < sizeof o->buf - 1 - o->len ? n : sizeof o->buf - 1 - o->len;
    memcpy(o->buf + o->len, p, k);
    o->len += k;
    o->buf[o->len] = 0;
    return 0;
}

static int run_exec(struct kube_client *c, struct out *so, struct kube_exec_result *r) {
    static const char *const argv[] = {"true"};
    struct kube_exec_options o = {.namespace_ = "ns-1", .pod = "p", .argv = argv, .argc = 1,
                                  .on_stdout = to_out, .ud = so, .timeout_ms = 10000};
    return kube_exec(c, &o, r);
}

TEST(exec_through_a_connect_proxy_with_impersonation) {
    struct peer pe;
    struct proxy px;
    char purl[64];
    CHECK_INT(peer_start(&pe, PEER_BASIC), 0);
    CHECK_INT(proxy_start(&px, NULL), 0);
    snprintf(purl, sizeof purl, "http://127.0.0.1:%d", px.port);
    struct kube_client *c = client_for(&pe, purl, "alice");
    struct out so = {.len = 0};
    struct kube_exec_result r;
    int rc = run_exec(c, &so, &r);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_INT(r.exit_code, 3);
    CHECK_STR(so.buf, "hello\nfragmented\n");
    char want[128];
    snprintf(want, sizeof want, "CONNECT 127.0.0.1:%d HTTP/1.1", pe.port);
    CHECK_STR(px.last_connect, want);
    CHECK_INT(px.connects, 1);
    CHECK_STR(px.last_auth, "");
    CHECK_STR(pe.authorization, "Bearer t0ken");          /* through the tunnel, to the server */
    CHECK_STR(pe.impersonate_user, "alice");
    kube_client_free(c);
    /* direct: no proxy asked */
    c = client_for(&pe, NULL, NULL);
    so.len = 0;
    CHECK_INT(run_exec(c, &so, &r), 0);
    CHECK_INT(px.connects, 1);
    kube_client_free(c);
    proxy_stop(&px);
    peer_stop(&pe);
}

TEST(exec_proxy_wants_a_password) {
    struct peer pe;
    struct proxy px;
    char purl[96];
    CHECK_INT(peer_start(&pe, PEER_BASIC), 0);
    CHECK_INT(proxy_start(&px, "Basic eWFvOnMzY3JldA=="), 0);   /* yao:s3cret */
    snprintf(purl, sizeof purl, "http://127.0.0.1:%d", px.port);
    struct kube_client *c = client_for(&pe, purl, NULL);
    struct out so = {.len = 0};
    struct kube_exec_result r;
    CHECK_INT(run_exec(c, &so, &r), -1);
    char want[200];
    snprintf(want, sizeof want, "exec: the proxy 127.0.0.1:%d (proxy-url) refused CONNECT to 127.0.0.1:%d: HTTP 407 "
             "(proxy authentication required", px.port, pe.port);
    CHECK(strstr(r.err, want) != NULL);
    if (!strstr(r.err, want)) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_INT(pe.upgrades, 0);
    kube_client_free(c);
    snprintf(purl, sizeof purl, "http://yao:s3cret@127.0.0.1:%d", px.port);
    c = client_for(&pe, purl, NULL);
    CHECK_INT(run_exec(c, &so, &r), 0);
    CHECK_STR(px.last_auth, "Basic eWFvOnMzY3JldA==");
    CHECK_INT(pe.upgrades, 1);
    kube_client_free(c);
    proxy_stop(&px);
    peer_stop(&pe);
}

TEST(exec_proxy_not_there_is_named) {
    struct peer pe;
    struct proxy px;
    char purl[64];
    CHECK_INT(peer_start(&pe, PEER_BASIC), 0);
    CHECK_INT(proxy_start(&px, NULL), 0);
    int dead = px.port;
    proxy_stop(&px);                           /* nobody listens there now */
    snprintf(purl, sizeof purl, "http://127.0.0.1:%d", dead);
    struct kube_client *c = client_for(&pe, purl, NULL);
    struct out so = {.len = 0};
    struct kube_exec_result r;
    CHECK_INT(run_exec(c, &so, &r), -1);
    char want[96];
    snprintf(want, sizeof want, "exec: connection to the proxy 127.0.0.1:%d (proxy-url) failed", dead);
    CHECK(strstr(r.err, want) != NULL);
    if (!strstr(r.err, want)) fprintf(stderr, "    err: %s\n", r.err);
    kube_client_free(c);
    peer_stop(&pe);
}

struct app { int fd; size_t len, got; pthread_t wr, rd; };
static void *app_write(void *arg) {
    struct app *a = arg;
    unsigned char buf[4096];
    for (size_t off = 0; off < a->len;) {
        size_t k = a->len - off < sizeof buf ? a->len - off : sizeof buf;
        memset(buf, 'x', k);
        ssize_t w = send(a->fd, buf, k, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
    return NULL;
}
static void *app_read(void *arg) {
    struct app *a = arg;
    unsigned char buf[8192];
    for (;;) {
        ssize_t r = recv(a->fd, buf, sizeof buf, 0);
        if (r <= 0) break;
        __atomic_store_n(&a->got, a->got + (size_t)r, __ATOMIC_RELEASE);
    }
    return NULL;
}

TEST(port_forward_through_a_connect_proxy_with_impersonation) {
    struct peer pe;
    struct proxy px;
    char purl[64];
    CHECK_INT(peer_start(&pe, PEER_PF_ECHO), 0);
    CHECK_INT(proxy_start(&px, NULL), 0);
    struct app a = {.len = 200000};
    pe.echo_expect = a.len;
    snprintf(purl, sizeof purl, "http://127.0.0.1:%d", px.port);
    struct kube_client *c = client_for(&pe, purl, "bob");
    int sv[2];
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a.fd = sv[1];
    pthread_create(&a.wr, NULL, app_write, &a);
    pthread_create(&a.rd, NULL, app_read, &a);
    struct kube_pf_options o = {.namespace_ = "ns-1", .pod = "p", .port = 8080, .fd = sv[0]};
    struct kube_pf_result r;
    int rc = kube_portforward(c, &o, &r);
    close(sv[0]);
    pthread_join(a.wr, NULL);
    pthread_join(a.rd, NULL);
    close(sv[1]);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_INT(a.got, a.len);
    char want[128];
    snprintf(want, sizeof want, "CONNECT 127.0.0.1:%d HTTP/1.1", pe.port);
    CHECK_STR(px.last_connect, want);
    CHECK_INT(px.connects, 1);
    CHECK_STR(pe.authorization, "Bearer t0ken");
    CHECK_STR(pe.impersonate_user, "bob");
    kube_client_free(c);
    proxy_stop(&px);
    peer_stop(&pe);
}

TEST(http_proxy_in_the_environment_is_not_lws_business) {
    /* lws reads $http_proxy itself; kube/proxy.h decides instead: for a loopback server
     * no proxy, so a port-forward with a bogus http_proxy still goes direct. */
    struct peer pe;
    CHECK_INT(peer_start(&pe, PEER_PF_ECHO), 0);
    struct app a = {.len = 1000};
    pe.echo_expect = a.len;
    setenv("http_proxy", "127.0.0.1:1", 1);
    setenv("HTTP_PROXY", "http://127.0.0.1:1", 1);
    struct kube_client *c = client_for(&pe, NULL, NULL);
    int sv[2];
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a.fd = sv[1];
    pthread_create(&a.wr, NULL, app_write, &a);
    pthread_create(&a.rd, NULL, app_read, &a);
    struct kube_pf_options o = {.namespace_ = "ns-1", .pod = "p", .port = 8080, .fd = sv[0]};
    struct kube_pf_result r;
    int rc = kube_portforward(c, &o, &r);
    close(sv[0]);
    pthread_join(a.wr, NULL);
    pthread_join(a.rd, NULL);
    close(sv[1]);
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_INT(a.got, a.len);
    kube_client_free(c);
    peer_stop(&pe);
}

/* A client of the peer whose credential comes from an exec plugin script handing out
 * "tok-N" on its N-th run. */
static struct kube_client *plugin_client(const struct peer *pe, char *dir, size_t dirlen) {
    snprintf(dir, dirlen, "/tmp/yao-tunnel-XXXXXX");
    if (!mkdtemp(dir)) return NULL;
    char path[300], text[2048], err[512];
    snprintf(path, sizeof path, "%s/plugin", dir);
    FILE *f = fopen(path, "w");
    if (!f) return NULL;
    fprintf(f, "#!/bin/sh\nd=$(dirname \"$0\")\nn=$(( $(cat \"$d/runs\" 2>/dev/null || echo 0) + 1 ))\necho $n > \"$d/runs\"\n"
               "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
               "\"status\":{\"token\":\"tok-%%s\"}}' $n\n");
    fclose(f);
    chmod(path, 0755);
    snprintf(text, sizeof text,
             "current-context: t\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:%d'}}]\n"
             "contexts: [{name: t, context: {cluster: c, user: u}}]\n"
             "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: ./plugin\n      interactiveMode: Never\n", pe->port);
    struct kube_config cfg;
    if (kube_config_parse(text, strlen(text), dir, NULL, &cfg, err, sizeof err) < 0) {
        fprintf(stderr, "    %s\n", err);
        return NULL;
    }
    struct kube_client *c = kube_client_new(&cfg, "test", err, sizeof err);
    if (c) kube_client_set_retries(c, 1);
    return c;
}

static void rm_dir(const char *dir) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
}

TEST(exec_refused_with_401_runs_the_plugin_again_and_retries_once) {
    struct peer pe;
    char dir[64];
    CHECK_INT(peer_start(&pe, PEER_BASIC), 0);
    pe.refuse_upgrades = 1;
    struct kube_client *c = plugin_client(&pe, dir, sizeof dir);
    CHECK(c != NULL);
    struct out so = {.len = 0};
    struct kube_exec_result r;
    int rc = c ? run_exec(c, &so, &r) : -1;
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_STR(pe.refused_authorization, "Bearer tok-1");
    CHECK_STR(pe.authorization, "Bearer tok-2");        /* the retry carried the new credential */
    CHECK_INT(pe.upgrades, 2);
    CHECK_INT(pe.plain_gets, 0);                         /* no refusal message was fetched */
    /* refused twice: one retry only, and the error says 401 */
    pe.refuse_upgrades = 2;
    so.len = 0;
    rc = c ? run_exec(c, &so, &r) : 0;
    CHECK_INT(rc, -1);
    CHECK(strstr(r.err, "HTTP 401") != NULL);
    CHECK_INT(pe.upgrades, 4);
    kube_client_free(c);
    peer_stop(&pe);
    rm_dir(dir);
}

TEST(port_forward_refused_with_401_runs_the_plugin_again_and_retries_once) {
    struct peer pe;
    char dir[64];
    CHECK_INT(peer_start(&pe, PEER_PF_ECHO), 0);
    pe.refuse_upgrades = 1;
    struct app a = {.len = 5000};
    pe.echo_expect = a.len;
    struct kube_client *c = plugin_client(&pe, dir, sizeof dir);
    CHECK(c != NULL);
    int sv[2];
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a.fd = sv[1];
    pthread_create(&a.wr, NULL, app_write, &a);
    pthread_create(&a.rd, NULL, app_read, &a);
    struct kube_pf_options o = {.namespace_ = "ns-1", .pod = "p", .port = 8080, .fd = sv[0]};
    struct kube_pf_result r;
    int rc = c ? kube_portforward(c, &o, &r) : -1;
    close(sv[0]);
    pthread_join(a.wr, NULL);
    pthread_join(a.rd, NULL);
    close(sv[1]);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_INT(a.got, a.len);
    CHECK_STR(pe.refused_authorization, "Bearer tok-1");
    CHECK_STR(pe.authorization, "Bearer tok-2");
    CHECK_INT(pe.upgrades, 2);
    kube_client_free(c);
    peer_stop(&pe);
    rm_dir(dir);
}
