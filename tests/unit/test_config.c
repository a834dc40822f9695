/* tests/unit/test_config.c — kube/config: kubeconfig parsing and merging, in-cluster config,
 * token rotation, and the error paths (each must return -1 with a specific message and leave
 * the struct zeroed). Fixtures live in tests/unit/data/kubeconfig/; scratch files go into a
 * mkdtemp directory that each test removes. */
#include "check.h"
#include "kube/config.h"
#include "kube/credplugin.h"
#include "kube/kjson.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------- */

/* tests/unit/data: $YAO_TEST_DATA (set by ctest), else beside this source file. */
static const char *data_dir(void)
{
    static char dir[4096];
    const char *env = getenv("YAO_TEST_DATA"), *slash;

    if (dir[0]) return dir;
    if (env && *env) {
        snprintf(dir, sizeof dir, "%s", env);
    } else {
        slash = strrchr(__FILE__, '/');
        if (slash) snprintf(dir, sizeof dir, "%.*s/data", (int)(slash - __FILE__), __FILE__);
        else snprintf(dir, sizeof dir, "data");
    }
    return dir;
}

/* Path of a kubeconfig fixture; four rotating buffers so a call may use several. */
static const char *fx(const char *name)
{
    static char bufs[4][4096];
    static int next;
    char *b = bufs[next++ & 3];

    if (snprintf(b, sizeof bufs[0], "%s/kubeconfig/%s", data_dir(), name) >= (int)sizeof bufs[0])
        b[0] = '\0';                                      /* too long: fails loudly later */
    return b;
}

/* Whole file into a NUL-terminated heap buffer (test side, no cap needed); NULL on error. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        if (len) *len = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* 1 if (pem, len) is byte-for-byte the fixture file. */
static int same_as_fixture(const char *pem, size_t len, const char *name)
{
    size_t flen = 0;
    char *want = slurp(fx(name), &flen);
    int same = want && pem && len == flen && memcmp(pem, want, len) == 0;

    free(want);
    return same;
}

/* Write content to dir/name (0644); 0 on success. */
static int write_file(const char *dir, const char *name, const char *content, size_t len)
{
    char path[4096];
    FILE *f;
    int ok;

    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return -1;
    if (!(f = fopen(path, "wb"))) return -1;
    ok = fwrite(content, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* A fresh scratch directory (static buffer, one live at a time). */
static char *make_tmpdir(void)
{
    static char dir[64];

    snprintf(dir, sizeof dir, "/tmp/yao-test-config-XXXXXX");
    return mkdtemp(dir);
}

/* nftw callback for rmtree. */
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

/* Remove a scratch directory and everything in it. */
static void rmtree(const char *dir)
{
    if (dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A service-account directory with the given token (NULL: none), the fixture CA and an
 * optional namespace file. */
static char *make_sa_dir(const char *token, const char *ns)
{
    char *dir = make_tmpdir();
    size_t calen = 0;
    char *ca = slurp(fx("ca.crt"), &calen);

    if (dir && token) write_file(dir, "token", token, strlen(token));
    if (dir && ca) write_file(dir, "ca.crt", ca, calen);
    if (dir && ns) write_file(dir, "namespace", ns, strlen(ns));
    free(ca);
    return dir;
}

/* The struct a failed constructor must leave behind. */
static int is_zeroed(const struct kube_config *c)
{
    return !c->server && !c->namespace_ && !c->context && !c->token && !c->token_file &&
           !c->username && !c->password && !c->ca_pem && !c->cert_pem && !c->key_pem &&
           !c->tls_server_name && !c->lock_ready && !c->ca_len && !c->key_len;
}

/* kube_config_parse(text) must fail with `want` in the message and a zeroed struct. */
#define EXPECT_PARSE_FAIL(text, ctxname, want) do {                                    \
    struct kube_config c_;                                                             \
    char e_[512] = "";                                                                 \
    const char *t_ = (text);                                                           \
    int r_ = kube_config_parse(t_, strlen(t_), NULL, (ctxname), &c_, e_, sizeof e_);   \
    CHECK_INT(r_, -1);                                                                 \
    if (!strstr(e_, (want))) {                                                         \
        check_failures_in_test++;                                                      \
        fprintf(stderr, "  %s:%d: error \"%s\" lacks \"%s\"\n", __FILE__, __LINE__,    \
                e_, (want));                                                           \
    }                                                                                  \
    CHECK(is_zeroed(&c_));                                                             \
    kube_config_free(&c_);                                                             \
} while (0)

/* kube_config_load(paths) must fail with `want` in the message and a zeroed struct. */
#define EXPECT_LOAD_FAIL(paths, ctxname, want) do {                                    \
    struct kube_config c_;                                                             \
    char e_[1024] = "";                                                                \
    int r_ = kube_config_load((paths), (ctxname), &c_, e_, sizeof e_);                 \
    CHECK_INT(r_, -1);                                                                 \
    if (!strstr(e_, (want))) {                                                         \
        check_failures_in_test++;                                                      \
        fprintf(stderr, "  %s:%d: error \"%s\" lacks \"%s\"\n", __FILE__, __LINE__,    \
                e_, (want));                                                           \
    }                                                                                  \
    CHECK(is_zeroed(&c_));                                                             \
    kube_config_free(&c_);                                                             \
} while (0)

/* A minimal valid kubeconfig with one substituted user body, for the user-level cases. */
#define WITH_USER(body)                                                                \
    "current-context: dev\n"                                                           \
    "clusters: [{name: c, cluster: {server: 'https://c:6443'}}]\n"                     \
    "contexts: [{name: dev, context: {cluster: c, user: u}}]\n"                        \
    "users:\n- name: u\n  user:\n" body

/* Same, with a substituted cluster body. */
#define WITH_CLUSTER(body)                                                             \
    "current-context: dev\n"                                                           \
    "contexts: [{name: dev, context: {cluster: c}}]\n"                                 \
    "clusters:\n- name: c\n  cluster:\n" body

/* ---- kubeconfig: successful loads ---------------------------------------------------- */

TEST(token_auth_and_ca_file_via_current_context)
{
    struct kube_config c;
    char err[512] = "";
    char *tok;

    CHECK_INT(kube_config_load(fx("multi.yaml"), NULL, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.server, "https://127.0.0.1:6443");        /* trailing '/' stripped */
    CHECK_STR(c.context, "dev");
    CHECK_STR(c.namespace_, "team-a");
    CHECK_STR(c.token, "alice-token-123");
    CHECK(c.token_file == NULL);
    CHECK_STR(c.tls_server_name, "kubernetes.default");
    CHECK(same_as_fixture(c.ca_pem, c.ca_len, "ca.crt"));  /* relative path, read by file */
    CHECK(c.cert_pem == NULL && c.key_pem == NULL);
    CHECK(c.username == NULL && c.password == NULL);
    CHECK_INT(c.insecure_skip_tls_verify, 0);
    CHECK_INT(c.lock_ready, 1);
    tok = kube_config_token(&c, 0);
    CHECK_STR(tok, "alice-token-123");
    free(tok);
    tok = kube_config_token(&c, 1);                       /* no token_file: force is a no-op */
    CHECK_STR(tok, "alice-token-123");
    free(tok);
    kube_config_free(&c);
    CHECK(is_zeroed(&c));
}

TEST(explicit_context_client_cert_files_and_ca_data)
{
    struct kube_config c;
    char err[512] = "";

    CHECK_INT(kube_config_load(fx("multi.yaml"), "prod", &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.context, "prod");
    CHECK_STR(c.server, "https://prod.example.com:8443");  /* scheme added, as kubectl does */
    CHECK(c.namespace_ == NULL);
    CHECK(c.token == NULL);
    CHECK(c.tls_server_name == NULL);
    CHECK(same_as_fixture(c.ca_pem, c.ca_len, "ca.crt"));       /* certificate-authority-data */
    CHECK(same_as_fixture(c.cert_pem, c.cert_len, "client.crt"));
    CHECK(same_as_fixture(c.key_pem, c.key_len, "client.key"));
    CHECK(c.key_pem && c.key_pem[c.key_len] == '\0');
    kube_config_free(&c);
}

TEST(data_fields_wrapped_and_unpadded_base64)
{
    struct kube_config c;
    char err[512] = "";

    CHECK_INT(kube_config_load(fx("data.yaml"), NULL, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.context, "data");
    CHECK_STR(c.server, "https://[fd00::10]:6443");
    CHECK(same_as_fixture(c.ca_pem, c.ca_len, "ca.crt"));
    CHECK(same_as_fixture(c.cert_pem, c.cert_len, "client.crt"));  /* 64-column block */
    CHECK(same_as_fixture(c.key_pem, c.key_len, "client.key"));    /* '=' padding removed */
    CHECK_INT(c.insecure_skip_tls_verify, 0);
    kube_config_free(&c);
}

TEST(insecure_skip_tls_verify_and_basic_auth)
{
    struct kube_config c;
    char err[512] = "";

    CHECK_INT(kube_config_load(fx("data.yaml"), "basic", &c, err, sizeof err), 0);
    CHECK_STR(c.server, "http://localhost:8080");
    CHECK_INT(c.insecure_skip_tls_verify, 1);
    CHECK(c.ca_pem == NULL);
    CHECK_STR(c.username, "admin");
    CHECK_STR(c.password, "s3cret pass");
    CHECK(c.token == NULL);
    kube_config_free(&c);
}

TEST(json_form_kubeconfig)
{
    struct kube_config c;
    char err[512] = "";

    CHECK_INT(kube_config_load(fx("config.json"), NULL, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.context, "json-ctx");
    CHECK_STR(c.server, "https://10.1.2.3:443");
    CHECK_STR(c.namespace_, "from-json");
    CHECK_STR(c.token, "json-token-456");
    CHECK(same_as_fixture(c.ca_pem, c.ca_len, "ca.crt"));
    CHECK_INT(c.insecure_skip_tls_verify, 0);
    kube_config_free(&c);
}

TEST(merged_path_list_first_file_wins)
{
    struct kube_config c;
    char err[512] = "", list[8192];

    /* a first: a's current-context, a's "shared" cluster and a's "u-a" user. */
    snprintf(list, sizeof list, "%s:%s", fx("merge-a.yaml"), fx("merge-b.yaml"));
    CHECK_INT(kube_config_load(list, NULL, &c, err, sizeof err), 0);
    CHECK_STR(c.context, "ctx-a");
    CHECK_STR(c.server, "https://a.example:6443");
    CHECK_STR(c.token, "token-a");
    kube_config_free(&c);

    /* a first, context only b defines. */
    CHECK_INT(kube_config_load(list, "ctx-b", &c, err, sizeof err), 0);
    CHECK_STR(c.server, "https://onlyb.example:6443");
    CHECK_STR(c.token, "token-b");
    CHECK_STR(c.namespace_, "ns-b");
    kube_config_free(&c);

    /* b first: b's current-context; and b's definition of ctx-a shadows a's. */
    snprintf(list, sizeof list, "%s:%s", fx("merge-b.yaml"), fx("merge-a.yaml"));
    CHECK_INT(kube_config_load(list, NULL, &c, err, sizeof err), 0);
    CHECK_STR(c.context, "ctx-b");
    CHECK_STR(c.server, "https://onlyb.example:6443");
    kube_config_free(&c);
    CHECK_INT(kube_config_load(list, "ctx-a", &c, err, sizeof err), 0);
    CHECK_STR(c.server, "https://onlyb.example:6443");
    CHECK_STR(c.token, "token-b");
    kube_config_free(&c);

    /* Missing entries and empty segments are skipped, repeats ignored. */
    snprintf(list, sizeof list, "/nonexistent/kubeconfig::%s:%s:%s", fx("merge-b.yaml"),
             fx("merge-b.yaml"), fx("merge-a.yaml"));
    CHECK_INT(kube_config_load(list, NULL, &c, err, sizeof err), 0);
    CHECK_STR(c.context, "ctx-b");
    kube_config_free(&c);
}

TEST(merged_list_cross_file_reference)
{
    struct kube_config c;
    char err[512] = "", list[8192];
    char *dir = make_tmpdir();

    /* A context in one file may name a cluster and user from another (kubectl allows it). */
    CHECK(dir != NULL);
    if (!dir) return;
    const char *ctx = "current-context: x\n"
                      "contexts: [{name: x, context: {cluster: shared, user: u-b}}]\n";
    CHECK_INT(write_file(dir, "ctx.yaml", ctx, strlen(ctx)), 0);
    snprintf(list, sizeof list, "%s/ctx.yaml:%s:%s", dir, fx("merge-a.yaml"), fx("merge-b.yaml"));
    CHECK_INT(kube_config_load(list, NULL, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.server, "https://a.example:6443");
    CHECK_STR(c.token, "token-b");
    kube_config_free(&c);
    rmtree(dir);
}

TEST(relative_paths_resolve_against_the_kubeconfig_directory)
{
    struct kube_config c;
    char err[512] = "", base[4096];
    size_t len = 0;
    char *text, *tok, *dir;

    CHECK_INT(kube_config_load(fx("sub/rel.yaml"), NULL, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.token, "file-token-xyz");                  /* tokenFile, trimmed */
    CHECK(c.token_file && strstr(c.token_file, "kubeconfig/sub/token.txt"));
    CHECK(same_as_fixture(c.ca_pem, c.ca_len, "ca.crt"));   /* ../ca.crt */
    CHECK(same_as_fixture(c.cert_pem, c.cert_len, "client.crt"));
    CHECK(same_as_fixture(c.key_pem, c.key_len, "client.key"));
    tok = kube_config_token(&c, 1);
    CHECK_STR(tok, "file-token-xyz");
    free(tok);
    kube_config_free(&c);

    /* kube_config_parse: base_dir decides where the same text looks. */
    text = slurp(fx("sub/rel.yaml"), &len);
    CHECK(text != NULL);
    if (!text) return;
    snprintf(base, sizeof base, "%s", fx("sub"));
    CHECK_INT(kube_config_parse(text, len, base, NULL, &c, err, sizeof err), 0);
    CHECK(same_as_fixture(c.ca_pem, c.ca_len, "ca.crt"));
    kube_config_free(&c);
    dir = make_tmpdir();
    CHECK(dir != NULL);
    CHECK_INT(kube_config_parse(text, len, dir, NULL, &c, err, sizeof err), -1);
    CHECK(strstr(err, "cannot read") && strstr(err, "ca.crt"));
    CHECK(is_zeroed(&c));
    kube_config_free(&c);
    rmtree(dir);
    free(text);
}

TEST(context_without_user_has_no_credentials)
{
    struct kube_config c;
    char err[512] = "";
    const char *text = "current-context: anon\n"
                       "clusters: [{name: c, cluster: {server: 'https://anon:6443'}}]\n"
                       "contexts: [{name: anon, context: {cluster: c, namespace: ns1}}]\n";

    CHECK_INT(kube_config_parse(text, strlen(text), NULL, NULL, &c, err, sizeof err), 0);
    CHECK_STR(c.server, "https://anon:6443");
    CHECK_STR(c.namespace_, "ns1");
    CHECK(!c.token && !c.cert_pem && !c.key_pem && !c.username);
    CHECK(kube_config_token(&c, 0) == NULL);
    kube_config_free(&c);
}

TEST(yaml_booleans_and_null_fields)
{
    struct kube_config c;
    char err[512] = "", buf[8192];
    const char *text = WITH_CLUSTER("    server: https://c:1\n    insecure-skip-tls-verify: yes\n"
                                    "    certificate-authority-data: ''\n"
                                    "    tls-server-name: ~\n");

    CHECK_INT(kube_config_parse(text, strlen(text), NULL, NULL, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(c.insecure_skip_tls_verify, 1);
    CHECK(c.ca_pem == NULL && c.ca_len == 0);             /* empty -data = unset */
    CHECK(c.tls_server_name == NULL);
    kube_config_free(&c);

    /* empty -data falls back to the file form */
    snprintf(buf, sizeof buf, WITH_CLUSTER("    server: https://c:1\n"
                                           "    certificate-authority-data: \"\"\n"
                                           "    certificate-authority: %s\n"), fx("ca.crt"));
    CHECK_INT(kube_config_parse(buf, strlen(buf), NULL, NULL, &c, err, sizeof err), 0);
    CHECK(same_as_fixture(c.ca_pem, c.ca_len, "ca.crt"));
    kube_config_free(&c);
}

/* ---- in-cluster ----------------------------------------------------------------------- */

TEST(in_cluster_ipv4)
{
    struct kube_config c;
    char err[512] = "", want[256];
    char *dir = make_sa_dir("sa-token-1\n", "sandboxes\n"), *tok;

    CHECK(dir != NULL);
    if (!dir) return;
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.server, "https://10.96.0.1:443");
    CHECK_STR(c.token, "sa-token-1");
    CHECK_STR(c.namespace_, "sandboxes");
    CHECK(c.context == NULL);
    snprintf(want, sizeof want, "%s/token", dir);
    CHECK_STR(c.token_file, want);
    CHECK(same_as_fixture(c.ca_pem, c.ca_len, "ca.crt"));
    tok = kube_config_token(&c, 0);
    CHECK_STR(tok, "sa-token-1");
    free(tok);
    kube_config_free(&c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    rmtree(dir);
}

TEST(in_cluster_ipv6_host_is_bracketed)
{
    struct kube_config c;
    char err[512] = "";
    char *dir = make_sa_dir("tok6", NULL);               /* no namespace file */

    CHECK(dir != NULL);
    if (!dir) return;
    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.server, "https://[fd00:10:96::1]:6443");
    CHECK_STR(c.token, "tok6");
    CHECK(c.namespace_ == NULL);
    kube_config_free(&c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    rmtree(dir);
}

TEST(in_cluster_errors)
{
    struct kube_config c;
    char err[512] = "";
    char *dir = make_sa_dir(NULL, "ns");

    CHECK(dir != NULL);
    if (!dir) return;
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), -1);
    CHECK(strstr(err, "KUBERNETES_SERVICE_HOST") != NULL);
    CHECK(is_zeroed(&c));

    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), -1);
    CHECK(strstr(err, "is not a port number") != NULL);
    setenv("KUBERNETES_SERVICE_PORT", "70000", 1);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), -1);
    CHECK(strstr(err, "is not a port number") != NULL);

    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), -1);   /* no token file */
    CHECK(strstr(err, "cannot read") && strstr(err, "/token"));
    CHECK(is_zeroed(&c));

    CHECK_INT(write_file(dir, "token", " \n", 2), 0);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), -1);
    CHECK(strstr(err, "is empty") != NULL);

    CHECK_INT(write_file(dir, "token", "two words\n", 10), 0);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), -1);
    CHECK(strstr(err, "control characters") != NULL);

    CHECK_INT(write_file(dir, "token", "ok", 2), 0);
    CHECK_INT(write_file(dir, "ca.crt", "not pem", 7), 0);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), -1);
    CHECK(strstr(err, "ca.crt does not contain PEM data") != NULL);
    CHECK(is_zeroed(&c));
    kube_config_free(&c);

    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    rmtree(dir);
}

TEST(token_rotation)
{
    struct kube_config c;
    char err[512] = "", path[256];
    char *dir = make_sa_dir("first\n", "ns"), *tok;
    struct timespec ts[2];
    struct stat st;

    CHECK(dir != NULL);
    if (!dir) return;
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/token", dir);

    /* Rewritten (new mtime): within 60 s an unforced call keeps the cached token, a forced
     * one re-reads. */
    CHECK_INT(write_file(dir, "token", "second\n", 7), 0);
    CHECK_INT(stat(path, &st), 0);
    ts[0].tv_sec = ts[1].tv_sec = st.st_mtime + 60;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    CHECK_INT(utimensat(AT_FDCWD, path, ts, 0), 0);
    tok = kube_config_token(&c, 0);
    CHECK_STR(tok, "first");
    free(tok);
    tok = kube_config_token(&c, 1);
    CHECK_STR(tok, "second");
    free(tok);

    /* After 60 s with a changed mtime, an unforced call picks up the new token. */
    CHECK_INT(write_file(dir, "token", "third", 5), 0);
    ts[0].tv_sec = ts[1].tv_sec = st.st_mtime + 120;
    CHECK_INT(utimensat(AT_FDCWD, path, ts, 0), 0);
    c.token_checked -= 61;
    tok = kube_config_token(&c, 0);
    CHECK_STR(tok, "third");
    free(tok);

    /* After 60 s with the mtime unchanged, the file is not re-read. */
    CHECK_INT(write_file(dir, "token", "fourth", 6), 0);
    CHECK_INT(utimensat(AT_FDCWD, path, ts, 0), 0);
    c.token_checked -= 61;
    tok = kube_config_token(&c, 0);
    CHECK_STR(tok, "third");
    free(tok);

    /* A failed re-read keeps the last good token. */
    CHECK_INT(unlink(path), 0);
    tok = kube_config_token(&c, 1);
    CHECK_STR(tok, "third");
    free(tok);

    kube_config_free(&c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    rmtree(dir);
}

/* Worker for token_is_thread_safe: forced re-reads racing with the writer. */
static void *token_reader(void *arg)
{
    struct kube_config *c = arg;
    long bad = 0;

    for (int i = 0; i < 200; i++) {
        char *t = kube_config_token(c, i % 2);
        if (!t || (strcmp(t, "aaaa") && strcmp(t, "bbbb"))) bad++;
        free(t);
    }
    return (void *)bad;
}

TEST(token_is_thread_safe)
{
    struct kube_config c;
    char err[512] = "";
    char *dir = make_sa_dir("aaaa", NULL);
    pthread_t th[4];
    void *bad;
    long total = 0;

    CHECK(dir != NULL);
    if (!dir) return;
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    CHECK_INT(kube_config_in_cluster(dir, &c, err, sizeof err), 0);
    for (int i = 0; i < 4; i++) CHECK_INT(pthread_create(&th[i], NULL, token_reader, &c), 0);
    /* Replace atomically, as kubelet does, so readers never see a half-written file. */
    for (int i = 0; i < 50; i++) {
        char tmp[256], path[256];
        snprintf(tmp, sizeof tmp, "%s/token.new", dir);
        snprintf(path, sizeof path, "%s/token", dir);
        write_file(dir, "token.new", i % 2 ? "aaaa" : "bbbb", 4);
        rename(tmp, path);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], &bad);
        total += (long)bad;
    }
    CHECK_INT(total, 0);
    kube_config_free(&c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    rmtree(dir);
}

/* ---- kube_config_auto and defaults ------------------------------------------------- */

TEST(auto_order)
{
    struct kube_config c;
    char err[512] = "";
    char *home = make_tmpdir(), path[4096];
    const char *old_home = getenv("HOME");
    char *saved_home = old_home ? strdup(old_home) : NULL;
    size_t len = 0;
    char *json = slurp(fx("config.json"), &len);

    CHECK(home != NULL && json != NULL);
    if (!home || !json) { free(json); free(saved_home); return; }
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBECONFIG", fx("merge-b.yaml"), 1);

    /* explicit path beats $KUBECONFIG */
    CHECK_INT(kube_config_auto(fx("multi.yaml"), &c, err, sizeof err), 0);
    CHECK_STR(c.context, "dev");
    kube_config_free(&c);
    /* $KUBECONFIG */
    CHECK_INT(kube_config_auto(NULL, &c, err, sizeof err), 0);
    CHECK_STR(c.context, "ctx-b");
    kube_config_free(&c);
    CHECK_INT(kube_config_load(NULL, "ctx-a", &c, err, sizeof err), 0);   /* load defaults too */
    CHECK_STR(c.server, "https://onlyb.example:6443");
    kube_config_free(&c);

    /* ~/.kube/config when nothing else is configured */
    unsetenv("KUBECONFIG");
    setenv("HOME", home, 1);
    CHECK_INT(kube_config_auto(NULL, &c, err, sizeof err), -1);
    CHECK(strstr(err, "no configuration") && strstr(err, ".kube/config"));
    CHECK(is_zeroed(&c));
    snprintf(path, sizeof path, "%s/.kube", home);
    CHECK_INT(mkdir(path, 0700), 0);
    CHECK_INT(write_file(path, "config", json, len), 0);
    CHECK_INT(kube_config_auto(NULL, &c, err, sizeof err), 0);
    CHECK_STR(c.context, "json-ctx");
    kube_config_free(&c);
    CHECK_INT(kube_config_load(NULL, NULL, &c, err, sizeof err), 0);
    CHECK_STR(c.context, "json-ctx");
    kube_config_free(&c);

    if (saved_home) setenv("HOME", saved_home, 1);
    else unsetenv("HOME");
    free(saved_home);
    free(json);
    rmtree(home);
}

TEST(free_is_safe_on_zeroed_and_failed_structs)
{
    struct kube_config c;
    char err[64];

    memset(&c, 0, sizeof c);
    kube_config_free(&c);
    kube_config_free(&c);
    kube_config_free(NULL);
    CHECK(kube_config_token(&c, 1) == NULL);
    CHECK(kube_config_token(NULL, 0) == NULL);
    memset(&c, 0xA5, sizeof c);                         /* garbage in: parse zeroes it first */
    CHECK_INT(kube_config_parse("- x", 3, NULL, NULL, &c, err, sizeof err), -1);
    CHECK(is_zeroed(&c));
    kube_config_free(&c);
    CHECK_INT(kube_config_parse("- x", 3, NULL, NULL, &c, NULL, 0), -1);   /* no err buffer */
    kube_config_free(&c);
    CHECK_INT(kube_config_parse("- x", 3, NULL, NULL, &c, err, 8), -1);    /* tiny err buffer */
    CHECK_INT((int)strlen(err), 7);
    kube_config_free(&c);
}

/* ---- malformed input ----------------------------------------------------------------- */

TEST(malformed_empty)
{
    EXPECT_LOAD_FAIL(fx("empty.yaml"), NULL, "empty document");
    EXPECT_LOAD_FAIL(fx("empty.yaml"), NULL, "empty.yaml");     /* names the file */
    EXPECT_PARSE_FAIL("", NULL, "empty document");
    EXPECT_PARSE_FAIL("# only a comment\n", NULL, "empty document");
    EXPECT_PARSE_FAIL("---\n", NULL, "empty document");
}

TEST(malformed_not_yaml)
{
    EXPECT_PARSE_FAIL("clusters: [unclosed\n  - x: y: z", NULL, "invalid YAML at line");
    EXPECT_PARSE_FAIL("a: b: c\n", NULL, "invalid YAML at line 1");
    EXPECT_PARSE_FAIL("key: \xc3\x28 bad utf-8\n", NULL, "invalid trailing UTF-8 octet");
    EXPECT_PARSE_FAIL("key: a\x01" "b\n", NULL, "control characters are not allowed");
    EXPECT_PARSE_FAIL("key: \"unterminated\n", NULL, "invalid YAML");
}

TEST(malformed_truncated_file)
{
    EXPECT_LOAD_FAIL(fx("truncated.json"), NULL, "invalid YAML");
    EXPECT_LOAD_FAIL(fx("truncated.json"), NULL, "truncated.json");
}

TEST(malformed_top_level_not_a_mapping)
{
    EXPECT_PARSE_FAIL("- name: a\n- name: b\n", NULL, "top level is a list, not a mapping");
    EXPECT_PARSE_FAIL("just a string", NULL, "top level is a scalar, not a mapping");
    EXPECT_PARSE_FAIL("[1, 2]", NULL, "top level is a list");
}

TEST(malformed_context_selection)
{
    const char *no_current = "clusters: [{name: c, cluster: {server: 'https://c:1'}}]\n"
                             "contexts: [{name: dev, context: {cluster: c}}]\n";

    EXPECT_PARSE_FAIL(no_current, NULL, "no current-context is set");
    EXPECT_PARSE_FAIL(no_current, "nope", "context \"nope\" not found");
    EXPECT_PARSE_FAIL("current-context: dev\ncontexts: []\n", NULL, "context \"dev\" not found");
    EXPECT_PARSE_FAIL("current-context: dev\ncontexts: [{name: dev, context: {user: u}}]\n",
                      NULL, "context \"dev\" names no cluster");
    EXPECT_PARSE_FAIL("current-context: dev\ncontexts: [{name: dev, context: {cluster: x}}]\n",
                      NULL, "kubeconfig: context \"dev\" refers to unknown cluster \"x\"");
    EXPECT_PARSE_FAIL("current-context: dev\n"
                      "clusters: [{name: c, cluster: {server: 'https://c:1'}}]\n"
                      "contexts: [{name: dev, context: {cluster: c, user: ghost}}]\n",
                      NULL, "context \"dev\" refers to unknown user \"ghost\"");
    EXPECT_PARSE_FAIL("current-context: [a]\n", NULL, "\"current-context\" is not a string");
}

TEST(malformed_structure)
{
    EXPECT_PARSE_FAIL("current-context: dev\ncontexts: {dev: {cluster: c}}\n", NULL,
                      "\"contexts\" is a mapping, not a list");
    EXPECT_PARSE_FAIL("current-context: dev\ncontexts: [dev]\n", NULL,
                      "an entry of \"contexts\" is not a mapping");
    EXPECT_PARSE_FAIL("current-context: dev\ncontexts: [{name: dev, context: [c]}]\n", NULL,
                      "\"context\" is a list, not a mapping");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    certificate-authority: ca.crt\n"), NULL,
                      "cluster \"c\" has no server");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: ftp://c:1\n"), NULL, "is not an http(s) URL");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: https:///\n"), NULL, "has no host");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: https://c:1\n    insecure-skip-tls-verify: maybe\n"),
                      NULL, "\"insecure-skip-tls-verify\" is not a boolean");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: https://c:1\n    proxy-url: socks5://p:1080\n"),
                      NULL, "proxy-url \"socks5://p:1080\": only http:// proxies are supported");
    EXPECT_PARSE_FAIL(WITH_USER("    token: [a, b]\n"), NULL, "user \"u\": \"token\" is not a string");
    EXPECT_PARSE_FAIL(WITH_USER("    token: \"abc\\r\\nX-Injected: 1\"\n"), NULL,
                      "\"token\" contains spaces or control characters");
    EXPECT_PARSE_FAIL(WITH_USER("    token: \"a\\0b\"\n"), NULL, "\"token\" is not a string");
    EXPECT_PARSE_FAIL(WITH_USER("    username: admin\n"), NULL, "has a username but no password");
    /* alias cycle: must not loop */
    EXPECT_PARSE_FAIL("current-context: dev\ncontexts: &l [{name: dev, context: *l}]\n", NULL,
                      "\"context\" is a list, not a mapping");
}

TEST(malformed_bad_base64)
{
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: https://c:1\n"
                                   "    certificate-authority-data: 'LS0t@@@=='\n"),
                      NULL, "cluster \"c\": \"certificate-authority-data\" is not valid base64");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: https://c:1\n"
                                   "    certificate-authority-data: 'QU=J'\n"),  /* '=' mid */
                      NULL, "is not valid base64");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: https://c:1\n"           /* two blobs glued */
                                   "    certificate-authority-data: 'QUI=QUI='\n"),
                      NULL, "is not valid base64");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: https://c:1\n"
                                   "    certificate-authority-data: 'QUJDR'\n"),  /* 4n+1 */
                      NULL, "is not valid base64");
    EXPECT_PARSE_FAIL(WITH_CLUSTER("    server: https://c:1\n"
                                   "    certificate-authority-data: 'QUJD===='\n"),
                      NULL, "is not valid base64");
    EXPECT_PARSE_FAIL(WITH_USER("    client-certificate-data: aGVsbG8=\n"
                                "    client-key-data: aGVsbG8=\n"),
                      NULL, "\"client-certificate-data\" does not decode to PEM data");
    EXPECT_PARSE_FAIL(WITH_USER("    client-key-data: 'not base64!'\n"), NULL,
                      "user \"u\": \"client-key-data\" is not valid base64");
}

TEST(malformed_unsupported_auth)
{
    /* client-go removed auth-providers: refused by name, pointing at exec plugins */
    EXPECT_PARSE_FAIL(WITH_USER("    auth-provider:\n      name: gcp\n"), NULL,
                      "uses auth-provider \"gcp\", which is not supported (client-go removed auth-providers: "
                      "use the provider's exec plugin");
}

/* ---- exec credential plugins, impersonation, proxy-url -------------------------------- */

#define EXEC_USER(body) WITH_USER("    exec:\n" body)

TEST(exec_plugin_read_as_client_go_reads_it)
{
    struct kube_config c;
    char err[512] = "";
    const char *text = "current-context: dev\n"
        "clusters:\n- name: c\n  cluster:\n    server: https://c:6443\n    tls-server-name: api.internal\n"
        "    proxy-url: http://proxy:3128\n"
        "    extensions:\n    - name: other\n      extension: {x: 1}\n"
        "    - name: client.authentication.k8s.io/exec\n      extension: {audience: sts, retries: 3, on: true}\n"
        "contexts: [{name: dev, context: {cluster: c, user: u}}]\n"
        "users:\n- name: u\n  user:\n    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1\n"
        "      command: bin/get-token\n"
        "      args: [eks, get-token, --cluster-name, 'a b']\n"
        "      env: [{name: AWS_PROFILE, value: prod}, {name: EMPTY}]\n"
        "      interactiveMode: Never\n"
        "      provideClusterInfo: true\n"
        "      installHint: install it with apt-get install get-token\n"
        "    as: alice\n    as-uid: '1234'\n    as-groups: [devs, 'ops team']\n"
        "    as-user-extra: {scopes.example.com: [read, write], reason: [debug]}\n";

    CHECK_INT(kube_config_parse(text, strlen(text), "/etc/kube", NULL, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.proxy_url, "http://proxy:3128");
    CHECK(c.exec_plugin != NULL);
    if (c.exec_plugin) {
        struct kube_credplugin *p = c.exec_plugin;
        CHECK_STR(p->api_version, "client.authentication.k8s.io/v1");
        CHECK_STR(p->command, "/etc/kube/bin/get-token");   /* relative with '/': beside the kubeconfig */
        CHECK_INT(p->nargs, 4);
        if (p->nargs == 4) {
            CHECK_STR(p->args[0], "eks");
            CHECK_STR(p->args[3], "a b");
        }
        CHECK_INT(p->nenv, 2);
        if (p->nenv == 2) {
            CHECK_STR(p->env[0], "AWS_PROFILE=prod");
            CHECK_STR(p->env[1], "EMPTY=");
        }
        CHECK_INT(p->interactive, KUBE_INTERACTIVE_NEVER);
        CHECK_STR(p->install_hint, "install it with apt-get install get-token");
        CHECK_STR(p->user, "u");
        /* provideClusterInfo: the cluster as ExecCredential spec.cluster, with the
         * exec extension as config */
        cJSON *cl = p->cluster_json ? cJSON_Parse(p->cluster_json) : NULL;
        CHECK(cl != NULL);
        CHECK_STR(kj_str(cl, "server"), "https://c:6443");
        CHECK_STR(kj_str(cl, "tls-server-name"), "api.internal");
        CHECK_STR(kj_str(cl, "proxy-url"), "http://proxy:3128");
        CHECK_STR(kj_str(cl, "config.audience"), "sts");
        CHECK_INT(kj_int(cl, "config.retries", 0), 3);
        CHECK_INT(kj_bool(cl, "config.on", 0), 1);
        CHECK(kj_path(cl, "config.x") == NULL);
        cJSON_Delete(cl);
    }
    CHECK_STR(c.impersonate_user, "alice");
    CHECK_STR(c.impersonate_uid, "1234");
    CHECK_INT(c.n_impersonate_groups, 2);
    CHECK_INT(c.n_impersonate_extra, 3);
    int oom = 1;
    char **h = kube_config_impersonation_headers(&c, &oom);
    CHECK_INT(oom, 0);
    CHECK(h != NULL);
    if (h) {
        CHECK_STR(h[0], "Impersonate-User: alice");
        CHECK_STR(h[1], "Impersonate-Uid: 1234");
        CHECK_STR(h[2], "Impersonate-Group: devs");
        CHECK_STR(h[3], "Impersonate-Group: ops team");
        CHECK_STR(h[4], "Impersonate-Extra-scopes.example.com: read");
        CHECK_STR(h[5], "Impersonate-Extra-scopes.example.com: write");
        CHECK_STR(h[6], "Impersonate-Extra-reason: debug");
        CHECK(h[7] == NULL);
    }
    kube_config_free_lines(h);
    /* --as / --as-group replace the kubeconfig's */
    const char *groups[] = {"qa"};
    CHECK_INT(kube_config_set_impersonation(&c, "bob", groups, 1, err, sizeof err), 0);
    h = kube_config_impersonation_headers(&c, &oom);
    CHECK(h && !strcmp(h[0], "Impersonate-User: bob") && !strcmp(h[2], "Impersonate-Group: qa") &&
          !strncmp(h[3], "Impersonate-Extra-", 18));
    kube_config_free_lines(h);
    kube_config_free(&c);
    CHECK(is_zeroed(&c) && !c.exec_plugin && !c.impersonate_user && !c.proxy_url);
}

TEST(exec_plugin_defaults_and_a_bare_command)
{
    struct kube_config c;
    char err[512] = "";
    const char *text = EXEC_USER("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: kubelogin\n");

    CHECK_INT(kube_config_parse(text, strlen(text), "/etc/kube", NULL, &c, err, sizeof err), 0);
    CHECK(c.exec_plugin != NULL);
    if (c.exec_plugin) {
        CHECK_STR(c.exec_plugin->command, "kubelogin");     /* looked up in $PATH */
        CHECK_INT(c.exec_plugin->nargs, 0);
        CHECK_INT(c.exec_plugin->interactive, KUBE_INTERACTIVE_IF_AVAILABLE);   /* v1beta1's default */
        CHECK(c.exec_plugin->cluster_json == NULL);          /* provideClusterInfo unset */
    }
    int oom = 1;
    CHECK(kube_config_impersonation_headers(&c, &oom) == NULL && oom == 0);
    /* groups without a user: refused, as kubectl does */
    const char *groups[] = {"qa"};
    CHECK_INT(kube_config_set_impersonation(&c, NULL, groups, 1, err, sizeof err), -1);
    CHECK(strstr(err, "--as-group needs --as") != NULL);
    kube_config_free(&c);
}

TEST(exec_plugin_and_impersonation_malformed)
{
    EXPECT_PARSE_FAIL(EXEC_USER("      command: aws\n"), NULL,
                      "user \"u\": exec: apiVersion \"\" is not client.authentication.k8s.io/v1 or /v1beta1");
    EXPECT_PARSE_FAIL(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: aws\n"),
                      NULL, "apiVersion \"client.authentication.k8s.io/v1alpha1\" is not");
    EXPECT_PARSE_FAIL(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n"),
                      NULL, "exec has no command");
    EXPECT_PARSE_FAIL(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"), NULL,
                      "interactiveMode must be set (Never, IfAvailable or Always) with client.authentication.k8s.io/v1");
    EXPECT_PARSE_FAIL(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"
                                "      interactiveMode: Sometimes\n"),
                      NULL, "interactiveMode \"Sometimes\" is not Never, IfAvailable or Always");
    EXPECT_PARSE_FAIL(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
                                "      args: aws\n"),
                      NULL, "\"args\" is a scalar, not a list");
    EXPECT_PARSE_FAIL(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
                                "      args: [[a]]\n"),
                      NULL, "an entry of \"args\" is not a string");
    EXPECT_PARSE_FAIL(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
                                "      env: [{value: x}]\n"),
                      NULL, "an entry of \"env\" is not {name: NAME, value: VALUE}");
    EXPECT_PARSE_FAIL(EXEC_USER("      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
                                "      provideClusterInfo: perhaps\n"),
                      NULL, "\"provideClusterInfo\" is not a boolean");
    EXPECT_PARSE_FAIL(WITH_USER("    exec: aws\n"), NULL, "user \"u\": exec is a scalar, not a mapping");
    EXPECT_PARSE_FAIL(WITH_USER("    token: t\n    as-groups: [devs]\n"), NULL, "has as-groups but no \"as\"");
    EXPECT_PARSE_FAIL(WITH_USER("    token: t\n    as: [a]\n"), NULL, "\"as\" is not a string");
    EXPECT_PARSE_FAIL(WITH_USER("    token: t\n    as: a\n    as-user-extra: [x]\n"), NULL,
                      "\"as-user-extra\" is not a mapping");
    EXPECT_PARSE_FAIL(WITH_USER("    token: t\n    as: a\n    as-user-extra: {k: v}\n"), NULL,
                      "\"k\" is a scalar, not a list");
}

TEST(malformed_client_cert_without_key)
{
    char text[8192];

    snprintf(text, sizeof text, WITH_USER("    client-certificate: %s\n"), fx("client.crt"));
    EXPECT_PARSE_FAIL(text, NULL, "has a client certificate but no client key");
    snprintf(text, sizeof text, WITH_USER("    client-key: %s\n"), fx("client.key"));
    EXPECT_PARSE_FAIL(text, NULL, "has a client key but no client certificate");
}

TEST(malformed_referenced_files)
{
    char text[8192];

    EXPECT_LOAD_FAIL(fx("missing-ref.yaml"), NULL, "cannot read");
    EXPECT_LOAD_FAIL(fx("missing-ref.yaml"), NULL, "does-not-exist.crt: No such file");
    EXPECT_PARSE_FAIL(WITH_USER("    tokenFile: /nonexistent/yao/token\n"), NULL,
                      "\"tokenFile\": cannot read /nonexistent/yao/token");
    snprintf(text, sizeof text, WITH_CLUSTER("    server: https://c:1\n"
                                             "    certificate-authority: %s\n"), fx("README"));
    EXPECT_PARSE_FAIL(text, NULL, "README does not contain PEM data");
    snprintf(text, sizeof text, WITH_CLUSTER("    server: https://c:1\n"
                                             "    certificate-authority: %s\n"), fx("sub"));
    EXPECT_PARSE_FAIL(text, NULL, "Is a directory");
    EXPECT_LOAD_FAIL("/nonexistent/yao/kubeconfig", NULL,
                     "cannot read /nonexistent/yao/kubeconfig: No such file");
    EXPECT_LOAD_FAIL(fx("sub"), NULL, "Is a directory");
}

TEST(malformed_oversized_inputs)
{
    char *dir = make_tmpdir(), path[256], text[512];
    size_t big = (size_t)5 << 20;
    char *buf = malloc(big + 1);

    CHECK(dir != NULL && buf != NULL);
    if (!dir || !buf) { free(buf); return; }
    /* a 5 MiB kubeconfig: valid YAML (all comment), rejected by the 4 MiB cap */
    memset(buf, '#', big);
    for (size_t i = 99; i < big; i += 100) buf[i] = '\n';
    buf[big] = '\0';
    CHECK_INT(write_file(dir, "big.yaml", buf, big), 0);
    snprintf(path, sizeof path, "%s/big.yaml", dir);
    EXPECT_LOAD_FAIL(path, NULL, "big.yaml is larger than the 4096 KiB limit");
    EXPECT_PARSE_FAIL(buf, NULL, "document is larger than the 4096 KiB limit");
    /* a 2 MiB "PEM" referenced by a small kubeconfig: rejected by the 1 MiB cap */
    CHECK_INT(write_file(dir, "big.crt", buf, (size_t)2 << 20), 0);
    snprintf(text, sizeof text, WITH_CLUSTER("    server: https://c:1\n"
                                             "    certificate-authority: %s/big.crt\n"), dir);
    EXPECT_PARSE_FAIL(text, NULL, "big.crt is larger than the 1024 KiB limit");
    /* a 100 KiB token file: rejected by the 64 KiB cap */
    memset(buf, 'a', (size_t)100 << 10);
    CHECK_INT(write_file(dir, "token", buf, (size_t)100 << 10), 0);
    snprintf(text, sizeof text, WITH_USER("    tokenFile: %s/token\n"), dir);
    EXPECT_PARSE_FAIL(text, NULL, "token is larger than the 64 KiB limit");
    free(buf);
    rmtree(dir);
}

TEST(too_many_files_in_list)
{
    char list[8192] = "";
    size_t n = 0;

    for (int i = 0; i < 33; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s/nonexistent-%d", i ? ":" : "", i);
    EXPECT_LOAD_FAIL(list, NULL, "more than 32 files");
    EXPECT_LOAD_FAIL("/nonexistent/a:/nonexistent/b", NULL, "cannot read /nonexistent/a");
}
