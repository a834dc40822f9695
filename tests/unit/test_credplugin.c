/* tests/unit/test_credplugin.c — kube/credplugin: the ExecCredential a plugin prints (v1,
 * v1beta1; token, client certificate, expiry; every malformed answer named), the
 * KUBERNETES_EXEC_INFO it gets, and running real plugin scripts (sh) in a scratch
 * directory: args, env and the exec info reach it, stdin is closed under interactiveMode
 * Never, failures (exit status, not found with the install hint, bad output, a plugin that
 * hangs, Always without a terminal) are one clear line; the credential is cached until
 * its expirationTimestamp, run again after a 401 (once for a burst of them), fetched once
 * by concurrent callers; and kube_config_auth through a kubeconfig's exec user. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "base/clock.h"
#include "kube/config.h"
#include "kube/credplugin.h"
#include "kube/kjson.h"

#define V1 "client.authentication.k8s.io/v1"
#define V1BETA1 "client.authentication.k8s.io/v1beta1"

static char dir[256];

static void make_dir(void) {
    if (dir[0]) return;
    snprintf(dir, sizeof dir, "/tmp/yao-credplugin-XXXXXX");
    if (!mkdtemp(dir)) dir[0] = 0;
}

/* Write an executable script dir/name; its path into path. */
static void script(const char *name, const char *body, char *path, size_t n) {
    make_dir();
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "#!/bin/sh\n%s", body);
    fclose(f);
    chmod(path, 0755);
}

/* Contents of dir/name ("" when missing); caller frees. */
static char *slurp_rel(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 65536);
    if (f && buf) {
        size_t n = fread(buf, 1, 65535, f);
        buf[n] = 0;
    }
    if (f) fclose(f);
    return buf;
}

/* A plugin with the given command (args none, env none). */
static void plugin_init(struct kube_credplugin *p, const char *cmd, const char *api, enum kube_interactive mode) {
    memset(p, 0, sizeof *p);
    p->api_version = strdup(api);
    p->command = strdup(cmd);
    p->user = strdup("u");
    p->interactive = mode;
    p->timeout_ms = 10000;
    pthread_mutex_init(&p->mu, NULL);
    p->mu_ready = 1;
}

static const char cert_pem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
static const char key_pem[] = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

TEST(exec_credential_parsing) {
    struct kube_exec_credential c;
    char err[256];
    const char *ok = "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-1\","
                     "\"expirationTimestamp\":\"2030-01-01T00:00:00Z\"}}";
    CHECK_INT(kube_exec_credential_parse(ok, strlen(ok), V1, &c, err, sizeof err), 0);
    CHECK_STR(c.token, "tok-1");
    CHECK(c.cert_pem == NULL && c.key_pem == NULL);
    CHECK_INT(c.expires_ms, 1893456000000LL);
    kube_exec_credential_free(&c);
    CHECK(c.token == NULL);

    char certs[1024];
    cJSON *o = cJSON_CreateObject(), *st;
    cJSON_AddStringToObject(o, "apiVersion", V1BETA1);
    cJSON_AddStringToObject(o, "kind", "ExecCredential");
    st = cJSON_AddObjectToObject(o, "status");
    cJSON_AddStringToObject(st, "clientCertificateData", cert_pem);
    cJSON_AddStringToObject(st, "clientKeyData", key_pem);
    char *txt = cJSON_PrintUnformatted(o);
    snprintf(certs, sizeof certs, "%s", txt);
    free(txt);
    cJSON_Delete(o);
    CHECK_INT(kube_exec_credential_parse(certs, strlen(certs), V1BETA1, &c, err, sizeof err), 0);
    CHECK(c.token == NULL);
    CHECK_STR(c.cert_pem, cert_pem);
    CHECK_STR(c.key_pem, key_pem);
    CHECK_INT(c.cert_len, strlen(cert_pem));
    CHECK_INT(c.expires_ms, 0);
    kube_exec_credential_free(&c);

    static const struct { const char *text, *want; } bad[] = {
        {"not json", "not a JSON object"},
        {"[1]", "not a JSON object"},
        {"{\"apiVersion\":\"" V1 "\",\"kind\":\"Pod\",\"status\":{\"token\":\"t\"}}", "of kind \"Pod\""},
        {"{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}",
         "has apiVersion \"" V1BETA1 "\", not " V1},
        {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"}", "has no status"},
        {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{}}", "neither a token nor"},
        {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"\"}}", "neither a token nor"},
        {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\":\"x\"}}",
         "without clientKeyData"},
        {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\":\"x\","
         "\"clientKeyData\":\"y\"}}", "is not PEM"},
        {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"a\\r\\nX-Evil: 1\"}}",
         "contains spaces or control characters"},
        {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
         "\"expirationTimestamp\":\"tomorrow\"}}", "expirationTimestamp \"tomorrow\" is not an RFC 3339 time"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        CHECK_INT(kube_exec_credential_parse(bad[i].text, strlen(bad[i].text), V1, &c, err, sizeof err), -1);
        if (!strstr(err, bad[i].want)) {
            check_failures_in_test++;
            fprintf(stderr, "  case %zu: \"%s\" lacks \"%s\"\n", i, err, bad[i].want);
        }
        CHECK(c.token == NULL && c.cert_pem == NULL);
    }
}

TEST(exec_info_and_expiry) {
    char *s = kube_exec_info(V1, 0, "{\"server\":\"https://c:6443\",\"config\":{\"a\":1}}");
    cJSON *o = s ? cJSON_Parse(s) : NULL;
    CHECK(o != NULL);
    CHECK_STR(kj_str(o, "apiVersion"), V1);
    CHECK_STR(kj_str(o, "kind"), "ExecCredential");
    CHECK_INT(kj_bool(o, "spec.interactive", 1), 0);
    CHECK_STR(kj_str(o, "spec.cluster.server"), "https://c:6443");
    CHECK_INT(kj_int(o, "spec.cluster.config.a", 0), 1);
    cJSON_Delete(o);
    free(s);
    s = kube_exec_info(V1BETA1, 1, NULL);
    o = s ? cJSON_Parse(s) : NULL;
    CHECK(o && kj_bool(o, "spec.interactive", 0) == 1 && !kj_path(o, "spec.cluster"));
    cJSON_Delete(o);
    free(s);
    CHECK_INT(kube_exec_credential_expired(0, 1LL << 50), 0);      /* no expiry: kept for good */
    CHECK_INT(kube_exec_credential_expired(1000, 999), 0);
    CHECK_INT(kube_exec_credential_expired(1000, 1000), 1);
    CHECK_INT(kube_exec_credential_expired(1000, 5000), 1);
}

TEST(running_a_plugin_gives_it_args_env_and_exec_info) {
    char path[512];
    char body[2048];
    make_dir();
    snprintf(body, sizeof body,
             "printf '%%s\\n' \"$@\" > '%s/args'\n"
             "printf '%%s' \"$KUBERNETES_EXEC_INFO\" > '%s/info'\n"
             "printf '%%s|%%s' \"$PLUGIN_MODE\" \"$HOME\" > '%s/env'\n"
             "if read line; then echo got-stdin > '%s/stdin'; else echo eof > '%s/stdin'; fi\n"
             "echo 'a note on stderr' >&2\n"
             "printf '{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-%%s\"}}' \"$1\"\n",
             dir, dir, dir, dir, dir, V1);
    script("plugin", body, path, sizeof path);
    struct kube_credplugin p;
    plugin_init(&p, path, V1, KUBE_INTERACTIVE_NEVER);
    p.args = calloc(3, sizeof(char *));
    p.args[0] = strdup("first");
    p.args[1] = strdup("two words");
    p.nargs = 2;
    p.env = calloc(3, sizeof(char *));
    p.env[0] = strdup("PLUGIN_MODE=test");
    p.env[1] = strdup("HOME=/plugin-home");
    p.nenv = 2;
    p.cluster_json = strdup("{\"server\":\"https://c:6443\"}");
    struct kube_exec_credential c;
    char err[512] = "";
    CHECK_INT(kube_credplugin_run(&p, 1, &c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.token, "tok-first");
    kube_exec_credential_free(&c);
    char *a = slurp_rel("args"), *info = slurp_rel("info"), *e = slurp_rel("env"), *in = slurp_rel("stdin");
    CHECK_STR(a, "first\ntwo words\n");
    CHECK_STR(e, "test|/plugin-home");               /* the plugin's env replaces ours */
    CHECK_STR(in, "eof\n");                          /* Never: no stdin, even with a terminal */
    cJSON *o = cJSON_Parse(info);
    CHECK(o && kj_bool(o, "spec.interactive", 1) == 0 && !strcmp(kj_str(o, "spec.cluster.server"), "https://c:6443"));
    cJSON_Delete(o);
    free(a);
    free(info);
    free(e);
    free(in);
    /* p.args / p.env are the plugin's now */
    kube_credplugin_free(&p);
}

TEST(plugin_failures_are_one_clear_line) {
    char path[512], err[700];
    struct kube_credplugin p;
    struct kube_exec_credential c;

    script("exit3", "echo 'login expired' >&2\nexit 3\n", path, sizeof path);
    plugin_init(&p, path, V1, KUBE_INTERACTIVE_NEVER);
    CHECK_INT(kube_credplugin_run(&p, 0, &c, err, sizeof err), -1);
    CHECK(strstr(err, "exec credential plugin \"") && strstr(err, "exit3\" of user \"u\": exit status 3"));
    kube_credplugin_free(&p);

    plugin_init(&p, "yao-no-such-plugin-binary", V1, KUBE_INTERACTIVE_NEVER);
    p.install_hint = strdup("install it:\napt-get install yao-plugin");
    CHECK_INT(kube_credplugin_run(&p, 0, &c, err, sizeof err), -1);
    CHECK(strstr(err, "yao-no-such-plugin-binary\" of user \"u\": the command was not found or is not executable: install it:?apt-get install yao-plugin"));
    kube_credplugin_free(&p);

    script("garbage", "echo hello\n", path, sizeof path);
    plugin_init(&p, path, V1, KUBE_INTERACTIVE_NEVER);
    CHECK_INT(kube_credplugin_run(&p, 0, &c, err, sizeof err), -1);
    CHECK(strstr(err, "its output is not a JSON object") != NULL);
    kube_credplugin_free(&p);

    script("hang", "exec sleep 30\n", path, sizeof path);
    plugin_init(&p, path, V1, KUBE_INTERACTIVE_NEVER);
    p.timeout_ms = 300;
    int64_t t0 = clock_mono_ms();
    CHECK_INT(kube_credplugin_run(&p, 0, &c, err, sizeof err), -1);
    CHECK(clock_mono_ms() - t0 < 5000);
    CHECK(strstr(err, "no answer within 0.3 s (it was stopped)") != NULL);
    kube_credplugin_free(&p);

    plugin_init(&p, path, V1, KUBE_INTERACTIVE_ALWAYS);
    CHECK_INT(kube_credplugin_run(&p, 0, &c, err, sizeof err), -1);
    CHECK(strstr(err, "interactiveMode Always needs a terminal on stdin") != NULL);
    kube_credplugin_free(&p);
}

/* A plugin that counts its runs in dir/count and gives a token valid for $1 seconds
 * (an expirationTimestamp that many seconds from now; "none" = no expiry). */
static void counting_plugin(char *path, size_t n, const char *lifetime) {
    char body[1024];
    make_dir();
    snprintf(body, sizeof body,
             "c=$(cat '%s/count' 2>/dev/null || echo 0); c=$((c + 1)); echo $c > '%s/count'\n"
             "if [ '%s' = none ]; then exp=''; else exp=\",\\\"expirationTimestamp\\\":\\\"$(date -u -d @$(( $(date +%%s) + %s )) +%%Y-%%m-%%dT%%H:%%M:%%SZ)\\\"\"; fi\n"
             "printf '{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"run-%%s\"%%s}}' $c \"$exp\"\n",
             dir, dir, lifetime, strcmp(lifetime, "none") ? lifetime : "0", V1BETA1);
    char name[64];
    snprintf(name, sizeof name, "count-%s", lifetime);
    script(name, body, path, n);
    char cnt[512];
    snprintf(cnt, sizeof cnt, "%s/count", dir);
    unlink(cnt);
}

TEST(credential_cached_until_it_expires_and_refetched_after_401) {
    char path[512], err[512] = "";
    struct kube_credplugin p;
    struct kube_exec_credential c;

    counting_plugin(path, sizeof path, "3600");
    plugin_init(&p, path, V1BETA1, KUBE_INTERACTIVE_NEVER);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(kube_credplugin_get(&p, &c, err, sizeof err), 0);
        CHECK_STR(c.token, "run-1");                      /* cached: valid for an hour */
        CHECK(c.expires_ms > kj_now_ms());
        kube_exec_credential_free(&c);
    }
    CHECK_INT(p.runs, 1);
    CHECK_INT(kube_credplugin_get(&p, &c, err, sizeof err), 0);
    unsigned first = c.generation;
    kube_exec_credential_free(&c);
    /* a 401 on it: the plugin runs again */
    CHECK_INT(kube_credplugin_invalidate(&p, first), 1);
    CHECK_INT(kube_credplugin_get(&p, &c, err, sizeof err), 0);
    CHECK_STR(c.token, "run-2");
    CHECK(c.generation != first);
    kube_exec_credential_free(&c);
    /* a late 401 about the first one (a burst of them): the new one is kept */
    CHECK_INT(kube_credplugin_invalidate(&p, first), 1);
    CHECK_INT(kube_credplugin_get(&p, &c, err, sizeof err), 0);
    CHECK_STR(c.token, "run-2");
    kube_exec_credential_free(&c);
    CHECK_INT(p.runs, 2);
    kube_credplugin_free(&p);

    /* expired when fetched (an expirationTimestamp in the past): fetched on every use */
    counting_plugin(path, sizeof path, "-60");
    plugin_init(&p, path, V1BETA1, KUBE_INTERACTIVE_NEVER);
    CHECK_INT(kube_credplugin_get(&p, &c, err, sizeof err), 0);
    kube_exec_credential_free(&c);
    CHECK_INT(kube_credplugin_get(&p, &c, err, sizeof err), 0);
    CHECK_STR(c.token, "run-2");
    kube_exec_credential_free(&c);
    kube_credplugin_free(&p);

    /* no expiry: kept for good */
    counting_plugin(path, sizeof path, "none");
    plugin_init(&p, path, V1BETA1, KUBE_INTERACTIVE_NEVER);
    CHECK_INT(kube_credplugin_get(&p, &c, err, sizeof err), 0);
    CHECK(c.expires_ms == 0);
    kube_exec_credential_free(&c);
    CHECK_INT(kube_credplugin_get(&p, &c, err, sizeof err), 0);
    CHECK_STR(c.token, "run-1");
    kube_exec_credential_free(&c);
    CHECK_INT(p.runs, 1);
    kube_credplugin_free(&p);
}

struct getter { struct kube_credplugin *p; int rc; char token[64]; };

static void *get_thread(void *arg) {
    struct getter *g = arg;
    struct kube_exec_credential c;
    char err[256];
    g->rc = kube_credplugin_get(g->p, &c, err, sizeof err);
    if (g->rc == 0) snprintf(g->token, sizeof g->token, "%s", c.token ? c.token : "");
    kube_exec_credential_free(&c);
    return NULL;
}

TEST(concurrent_callers_run_it_once) {
    char path[512];
    struct kube_credplugin p;
    counting_plugin(path, sizeof path, "3600");
    plugin_init(&p, path, V1BETA1, KUBE_INTERACTIVE_NEVER);
    pthread_t t[6];
    struct getter g[6];
    for (int i = 0; i < 6; i++) {
        g[i] = (struct getter){&p, -1, ""};
        pthread_create(&t[i], NULL, get_thread, &g[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(g[i].rc, 0);
        CHECK_STR(g[i].token, "run-1");
    }
    char *count = slurp_rel("count");
    CHECK_STR(count, "1\n");
    free(count);
    kube_credplugin_free(&p);
}

TEST(kube_config_auth_through_a_kubeconfig_exec_user) {
    char path[512], body[1024], text[2048], err[512] = "";
    make_dir();
    snprintf(body, sizeof body,
             "printf '{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\":\"%s\","
             "\"clientKeyData\":\"%s\",\"token\":\"plug-tok\"}}'\n",
             V1, "-----BEGIN CERTIFICATE-----\\\\nMIIB\\\\n-----END CERTIFICATE-----\\\\n",
             "-----BEGIN PRIVATE KEY-----\\\\nMIIE\\\\n-----END PRIVATE KEY-----\\\\n");
    script("kc-plugin", body, path, sizeof path);
    snprintf(text, sizeof text,
             "current-context: dev\nclusters: [{name: c, cluster: {server: 'https://c:6443'}}]\n"
             "contexts: [{name: dev, context: {cluster: c, user: u}}]\n"
             "users:\n- name: u\n  user:\n    exec:\n      apiVersion: %s\n      command: ./kc-plugin\n"
             "      interactiveMode: Never\n",
             V1);
    struct kube_config cfg;
    CHECK_INT(kube_config_parse(text, strlen(text), dir, NULL, &cfg, err, sizeof err), 0);
    struct kube_auth a;
    CHECK_INT(kube_config_auth(&cfg, &a, err, sizeof err), 0);
    CHECK_STR(a.token, "plug-tok");
    CHECK(a.cert_pem && strstr(a.cert_pem, "BEGIN CERTIFICATE") && a.key_pem && strstr(a.key_pem, "PRIVATE KEY"));
    kube_auth_free(&a);
    CHECK_INT(kube_config_auth_rejected(&cfg), 1);
    kube_config_free(&cfg);

    /* a failing plugin fails the request's credentials with its reason */
    snprintf(text, sizeof text,
             "current-context: dev\nclusters: [{name: c, cluster: {server: 'https://c:6443'}}]\n"
             "contexts: [{name: dev, context: {cluster: c, user: u}}]\n"
             "users:\n- name: u\n  user:\n    exec:\n      apiVersion: %s\n      command: ./missing-plugin\n"
             "      interactiveMode: Never\n      installHint: get it from the vendor\n",
             V1);
    CHECK_INT(kube_config_parse(text, strlen(text), dir, NULL, &cfg, err, sizeof err), 0);
    CHECK_INT(kube_config_auth(&cfg, &a, err, sizeof err), -1);
    CHECK(strstr(err, "missing-plugin\" of user \"u\": the command was not found") &&
          strstr(err, "get it from the vendor"));
    kube_config_free(&cfg);
    /* no plugin: a 401 has nothing to re-run */
    const char *plain = "current-context: dev\nclusters: [{name: c, cluster: {server: 'https://c:6443'}}]\n"
                        "contexts: [{name: dev, context: {cluster: c, user: u}}]\n"
                        "users: [{name: u, user: {token: static}}]\n";
    CHECK_INT(kube_config_parse(plain, strlen(plain), NULL, NULL, &cfg, err, sizeof err), 0);
    CHECK_INT(kube_config_auth(&cfg, &a, err, sizeof err), 0);
    CHECK_STR(a.token, "static");
    kube_auth_free(&a);
    CHECK_INT(kube_config_auth_rejected(&cfg), 0);
    kube_config_free(&cfg);
}

TEST(zz_cleanup) {
    char cmd[300];
    if (dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK_INT(system(cmd), 0);
    }
}
