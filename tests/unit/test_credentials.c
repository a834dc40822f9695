/* tests/unit/test_credentials.c — credentials that rotate (kube/rest.c, kube/watch.c,
 * kube/config.c) against the fake API server (tests/fake/scenarios/credentials.json):
 * a token file replaced under a running client (the server already refuses the old
 * token): the 401 re-reads the file and the request is retried once, for reads, creates
 * and watches; a static token is not retried. Over HTTPS (tests/fake/tls/: a server
 * certificate for "fake.test" only): tls-server-name is honoured by REST and watch, and
 * a CA bundle file replaced under a running client is picked up at the next request. */
#include <stdarg.h>

#include "check.h"
#include "../fake/fake.h"
#include "kube/watch.h"

#define PODS "/api/v1/namespaces/t/pods"

static struct fake plain, tls;
static int plain_up = -1, tls_up = -1;
static char dir[64];

static void stop_fakes(void) {
    fake_stop(&plain);
    fake_stop(&tls);
    char p[128];
    snprintf(p, sizeof p, "%s/token", dir); unlink(p);
    snprintf(p, sizeof p, "%s/ca.crt", dir); unlink(p);
    if (dir[0]) rmdir(dir);
}

static int up(struct fake *f, int *state, int use_tls) {
    if (*state < 0) {
        *state = fake_start_tls(f, "credentials.json", use_tls) == 0;
        if (!dir[0]) {
            snprintf(dir, sizeof dir, "/tmp/yao-cred-XXXXXX");
            if (!mkdtemp(dir)) dir[0] = 0;
            atexit(stop_fakes);
        }
    }
    return *state && dir[0];
}

/* Write s to dir/name (replacing it by rename, as kubelet and cert rotators do). */
static void put(const char *name, const char *s) {
    char p[128], tmp[160];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fputs(s, f);
    fclose(f);
    rename(tmp, p);
}

/* Copy tests/fake/tls/<src> to dir/name. */
static void put_file(const char *name, const char *src) {
    char path[4200], buf[8192];
    snprintf(path, sizeof path, "%s/tls/%s", fake_dir(), src);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    put(name, buf);
}

/* A client from a kubeconfig document (printf-style). */
static struct kube_client *client_from(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct kube_client *client_from(const char *fmt, ...) {
    char doc[2048], err[512];
    struct kube_config cfg;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(doc, sizeof doc, fmt, ap);
    va_end(ap);
    if (kube_config_parse(doc, strlen(doc), NULL, NULL, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "  kubeconfig: %s\n", err);
        return NULL;
    }
    struct kube_client *c = kube_client_new(&cfg, "yao-cred-tests", err, sizeof err);
    if (!c) kube_config_free(&cfg);
    return c;
}

/* Tokens the fake saw on method + path, in order, joined by ','. */
static void tokens_seen(struct fake *f, const char *method, const char *path, char *out, size_t n) {
    const cJSON *e[16];
    cJSON *log = fake_log(f);
    int k = fake_requests(log, method, path, e, 16);
    out[0] = 0;
    for (int i = 0; i < k && i < 16; i++) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e[i], "token"));
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? "," : "", t ? t : "-");
    }
    cJSON_Delete(log);
}

TEST(rotated_token_file_is_reread_on_401) {
    char seen[256];
    struct kube_error kerr = {0};
    cJSON *out = NULL;
    if (!up(&plain, &plain_up, 0)) { CHECK(0); return; }
    put("token", "tok-old\n");
    struct kube_client *c = client_from(
        "current-context: x\nclusters:\n- name: x\n  cluster: {server: '%s'}\n"
        "users:\n- name: u\n  user: {tokenFile: '%s/token'}\n"
        "contexts:\n- name: x\n  context: {cluster: x, user: u}\n", plain.server, dir);
    CHECK(c != NULL);
    if (!c) return;
    /* The token rotates; the server already refuses the old one (its Secret is gone). */
    put("token", "tok-new\n");
    CHECK_INT(kube_get(c, PODS "/guarded", &out, &kerr), 200);
    tokens_seen(&plain, "GET", PODS "/guarded", seen, sizeof seen);
    CHECK_STR(seen, "tok-old,tok-new");          /* one 401, one retry */
    cJSON_Delete(out);
    kube_client_free(c);
    /* A create after a rotation: retried too (the server did not act on a 401). */
    put("token", "tok-old\n");
    c = client_from(
        "current-context: x\nclusters:\n- name: x\n  cluster: {server: '%s'}\n"
        "users:\n- name: u\n  user: {tokenFile: '%s/token'}\n"
        "contexts:\n- name: x\n  context: {cluster: x, user: u}\n", plain.server, dir);
    if (!c) { CHECK(0); return; }
    put("token", "tok-new\n");
    cJSON *pod = cJSON_Parse("{\"metadata\":{\"name\":\"made\"}}");
    CHECK_INT(kube_create(c, PODS, pod, NULL, &kerr), 201);
    tokens_seen(&plain, "POST", PODS, seen, sizeof seen);
    CHECK_STR(seen, "tok-old,tok-new");
    cJSON_Delete(pod);
    kube_client_free(c);
}

/* A 401, then the credential plugin run again fails: no answer came to the second
 * attempt, so the error is the plugin's (a transport failure, status 0), never the 401
 * of the attempt before it. */
TEST(a_failed_attempt_after_an_answer_reports_its_own_error) {
    struct kube_error kerr = {0};
    cJSON *out = NULL;
    if (!up(&plain, &plain_up, 0)) { CHECK(0); return; }
    char script[256], count[256];
    snprintf(script, sizeof script, "%s/plugin.sh", dir);
    snprintf(count, sizeof count, "%s/plugin.runs", dir);
    unlink(count);
    FILE *f = fopen(script, "w");
    if (!f) { CHECK(0); return; }
    fprintf(f, "echo run >> '%s'\n"
               "[ \"$(wc -l < '%s')\" -gt 1 ] && { echo 'token service down' >&2; exit 1; }\n"
               "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
               "\"status\":{\"token\":\"tok-old\"}}'\n", count, count);
    fclose(f);
    struct kube_client *c = client_from(
        "current-context: x\nclusters:\n- name: x\n  cluster: {server: '%s'}\n"
        "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
        "      command: /bin/sh\n      args: ['%s']\n      interactiveMode: Never\n"
        "contexts:\n- name: x\n  context: {cluster: x, user: u}\n", plain.server, script);
    if (!c) { CHECK(0); return; }
    CHECK_INT(kube_get(c, PODS "/guarded", &out, &kerr), -1);   /* tok-old: 401; the plugin again: fails */
    CHECK_INT(kerr.status, 0);
    CHECK_INT(kerr.reason, KUBE_REASON_TRANSPORT);
    CHECK(strstr(kerr.message, "HTTP 401") == NULL);
    if (strstr(kerr.message, "HTTP 401")) fprintf(stderr, "  %s\n", kerr.message);
    cJSON_Delete(out);
    kube_client_free(c);
    unlink(script);
    unlink(count);
}

TEST(static_token_401_is_not_retried) {
    char seen[256];
    struct kube_error kerr = {0};
    cJSON *out = NULL;
    if (!up(&plain, &plain_up, 0)) { CHECK(0); return; }
    cJSON *log = fake_log(&plain);
    const cJSON *e[1];
    int before = fake_requests(log, "GET", PODS "/guarded", e, 1);
    cJSON_Delete(log);
    struct kube_client *c = client_from(
        "current-context: x\nclusters:\n- name: x\n  cluster: {server: '%s'}\n"
        "users:\n- name: u\n  user: {token: tok-static}\n"
        "contexts:\n- name: x\n  context: {cluster: x, user: u}\n", plain.server);
    if (!c) { CHECK(0); return; }
    CHECK_INT(kube_get(c, PODS "/guarded", &out, &kerr), 401);
    log = fake_log(&plain);
    CHECK_INT(fake_requests(log, "GET", PODS "/guarded", e, 1), before + 1);
    cJSON_Delete(log);
    (void)seen;
    kube_client_free(c);
}

static int count_event(void *ud, const char *type, cJSON *object, cJSON *event) {
    (*(int *)ud)++;
    return 0;
}

TEST(watch_401_rereads_the_token_for_the_next_attempt) {
    char err[KUBE_ERR_MAX] = "";
    int events = 0;
    if (!up(&plain, &plain_up, 0)) { CHECK(0); return; }
    put("token", "tok-old\n");
    struct kube_client *c = client_from(
        "current-context: x\nclusters:\n- name: x\n  cluster: {server: '%s'}\n"
        "users:\n- name: u\n  user: {tokenFile: '%s/token'}\n"
        "contexts:\n- name: x\n  context: {cluster: x, user: u}\n", plain.server, dir);
    if (!c) { CHECK(0); return; }
    put("token", "tok-new\n");
    CHECK_INT(kube_watch(c, PODS "?watch=true", count_event, &events, NULL, 5, err, sizeof err), KUBE_WATCH_FAILED);
    CHECK(strstr(err, "401") != NULL);
    CHECK_INT(kube_watch(c, PODS "?watch=true", count_event, &events, NULL, 5, err, sizeof err), KUBE_WATCH_CLOSED);
    CHECK_INT(events, 1);
    kube_client_free(c);
}

/* A client for the TLS fake with the CA from dir/ca.crt and an optional tls-server-name. */
static struct kube_client *tls_client(const char *server_name) {
    char extra[128] = "";
    if (server_name) snprintf(extra, sizeof extra, ", tls-server-name: %s", server_name);
    return client_from(
        "current-context: x\nclusters:\n- name: x\n  cluster: {server: '%s', certificate-authority: '%s/ca.crt'%s}\n"
        "contexts:\n- name: x\n  context: {cluster: x}\n", tls.server, dir, extra);
}

TEST(tls_server_name_is_honoured_by_rest_and_watch) {
    char err[KUBE_ERR_MAX] = "";
    struct kube_error kerr = {0};
    cJSON *out = NULL;
    int events = 0;
    if (!up(&tls, &tls_up, 1)) { CHECK(0); return; }
    put_file("ca.crt", "ca.crt");
    /* The certificate names fake.test only: 127.0.0.1 does not match ... */
    struct kube_client *c = tls_client(NULL);
    if (!c) { CHECK(0); return; }
    CHECK_INT(kube_get(c, PODS "/open", &out, &kerr), -1);
    kube_client_free(c);
    /* ... unless the client verifies the name given as tls-server-name. */
    c = tls_client("fake.test");
    if (!c) { CHECK(0); return; }
    CHECK_INT(kube_get(c, PODS "/open", &out, &kerr), 200);
    if (kerr.message[0] && !out) fprintf(stderr, "  %s\n", kerr.message);
    cJSON_Delete(out);
    out = NULL;
    CHECK_INT(kube_watch(c, PODS "?watch=true", count_event, &events, NULL, 5, err, sizeof err), KUBE_WATCH_FAILED);
    CHECK(strstr(err, "401") != NULL);   /* reached the server (no token: refused there) */
    kube_client_free(c);
    /* A wrong name is refused. */
    c = tls_client("other.test");
    if (!c) { CHECK(0); return; }
    CHECK_INT(kube_get(c, PODS "/open", &out, &kerr), -1);
    kube_client_free(c);
}

TEST(rotated_ca_bundle_is_picked_up) {
    struct kube_error kerr = {0};
    cJSON *out = NULL;
    if (!up(&tls, &tls_up, 1)) { CHECK(0); return; }
    put_file("ca.crt", "other-ca.crt");          /* the server's CA is not (yet) trusted */
    struct kube_client *c = tls_client("fake.test");
    if (!c) { CHECK(0); return; }
    CHECK_INT(kube_get(c, PODS "/open", &out, &kerr), -1);
    CHECK(strstr(kerr.message, "certificate") || strstr(kerr.message, "SSL"));
    put_file("ca.crt", "ca.crt");                /* the bundle is rotated on disk */
    CHECK_INT(kube_get(c, PODS "/open", &out, &kerr), 200);
    cJSON_Delete(out);
    kube_client_free(c);
}
