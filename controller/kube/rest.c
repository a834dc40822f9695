/* kube/rest.c — HTTPS requests to the API server (see rest.h). A small pool of curl easy
 * handles gives connection reuse across threads without sharing a handle between two
 * requests at once. Credentials are handed to curl as in-memory blobs; nothing touches
 * the disk. This file does not know about watches (kube/watch.c) or objects' meaning. */
#include "kube/rest.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/dynbuf.h"
#include "base/errfmt.h"
#include "kube/credplugin.h"
#include "kube/proxy.h"
#include "base/backoff.h"
#include "base/log.h"

#define POOL_MAX 16
#define KUBE_KEEPALIVE_PROBES 3
/* How long a transfer in progress sleeps without socket activity or curl timer before it
 * looks at its flags on its own. A cancel or kube_client_wake wakes it at once, so this
 * only bounds a flag set without a wake, and paces a watch's stall check. (Polling every
 * 20 ms, as before, cost an idle controller 1.5 % of a core: 7 watches x 50 wake-ups/s.) */
#define IDLE_POLL_MS 1000

/* A pooled connection: an easy handle driven by its own multi handle. The multi holds the
 * connection cache, so keeping the pair together keeps the connection; driving the
 * transfer ourselves (not curl_easy_perform) lets a cancel abandon it at once
 * (curl_multi_wakeup), where curl's own loop would wait up to a second. */
struct conn {
    CURL *easy;
    CURLM *multi;
};

/* A transfer in progress (on drive()'s stack), listed in its client so a cancel or a wake
 * reaches its curl_multi_poll. */
struct active {
    CURLM *multi;
    struct active *next;
};

struct kube_client {
    struct kube_config cfg;
    char *user_agent;
    /* tls-server-name: URLs name that host (SNI and certificate check) while curl connects
     * to the server's own host and port; the Host header keeps the server's authority. */
    char *base_url;                /* the server URL, or with the TLS name in place of the host */
    struct curl_slist *connect_to; /* "name:port:host:port", or NULL */
    char *host_header;             /* "Host: host:port", or NULL */
    long timeout_ms;
    long deadline_ms;              /* one request, all attempts and waits included */
    int attempts;
    size_t max_body;               /* response bodies above this are refused */
    atomic_int cancelled;          /* kube_client_cancel: every request returns at once */
    pthread_mutex_t lock;          /* guards pool, counts and writes_in_flight */
    pthread_cond_t wake;           /* back-off sleeps; broadcast on cancel */
    struct conn pool[POOL_MAX];
    int npool;
    struct kube_request_counts counts;
    /* Write fence (leader election): consulted before every mutating request. */
    kube_fence_fn fence;
    void *fence_ud;
    int writes_in_flight;          /* mutating requests past the fence, not yet answered */
    pthread_cond_t writes_done;    /* signalled when writes_in_flight drops to 0 */
    struct active *active;         /* transfers in progress (guarded by lock) */
    struct kube_proxy proxy;       /* the HTTP proxy in use (kube/proxy.h), proxy.set 0 = none */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_global(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Set c->base_url (and, with tls-server-name over https, connect_to and host_header).
 * 0, or -1 out of memory / a server URL without a host. */
static int route_setup(struct kube_client *c) {
    const char *server = c->cfg.server, *name = c->cfg.tls_server_name;
    const char *sep = strstr(server, "://");
    int https = !strncmp(server, "https://", 8);
    if (!name || !*name || !https || !sep) return (c->base_url = strdup(server)) ? 0 : -1;
    const char *auth = sep + 3, *slash = strchr(auth, '/');
    size_t alen = slash ? (size_t)(slash - auth) : strlen(auth);
    const char *prefix = slash ? slash : "";
    char host[300], port[16] = "443";
    const char *hend;
    if (auth[0] == '[') {
        const char *rb = memchr(auth, ']', alen);
        if (!rb) return -1;
        hend = rb + 1;
    } else {
        const char *colon = memchr(auth, ':', alen);
        hend = colon ? colon : auth + alen;
    }
    if (hend == auth || (size_t)(hend - auth) >= sizeof(host)) return -1;
    memcpy(host, auth, (size_t)(hend - auth));
    host[hend - auth] = 0;
    if (hend < auth + alen && *hend == ':') {
        size_t plen = (size_t)(auth + alen - hend - 1);
        if (!plen || plen >= sizeof(port)) return -1;
        memcpy(port, hend + 1, plen);
        port[plen] = 0;
    }
    size_t n = strlen(name) + strlen(port) + strlen(prefix) + strlen(host) + alen + 32;
    char *route = malloc(n);
    c->base_url = malloc(n);
    c->host_header = malloc(n);
    if (!route || !c->base_url || !c->host_header) { free(route); return -1; }
    snprintf(c->base_url, n, "https://%s:%s%s", name, port, prefix);
    snprintf(route, n, "%s:%s:%s:%s", name, port, host, port);
    snprintf(c->host_header, n, "Host: %.*s", (int)alen, auth);
    c->connect_to = curl_slist_append(NULL, route);
    free(route);
    return c->connect_to ? 0 : -1;
}

char *kube_client_url(struct kube_client *c, const char *path) {
    size_t n = strlen(c->base_url) + strlen(path) + 1;
    char *url = malloc(n);
    if (url) snprintf(url, n, "%s%s", c->base_url, path);
    return url;
}

int kube_client_refresh_credentials(struct kube_client *c, long status, int tls_verify_failed) {
    struct kube_config *k = &c->cfg;
    /* Re-read at once (the periodic check may be a minute away, or may have read the file
     * just before it was replaced). Whether the value changed is not known here: the
     * request that failed may have carried an older one; one retry settles it. */
    if (status == 401 && k->exec_plugin) {
        if (!kube_config_auth_rejected(k)) return 0;
        LOGI("msg=\"401 Unauthorized: the exec credential plugin runs again\" user=%s", k->exec_plugin->user);
        return 1;
    }
    if (status == 401 && k->token_file) {
        char *tok = kube_config_token(k, 1);
        if (!tok) return 0;
        memset(tok, 0, strlen(tok));
        free(tok);
        LOGI("msg=\"401 Unauthorized: token file re-read\" file=%s", k->token_file);
        return 1;
    }
    if (tls_verify_failed && k->ca_file) {
        char *ca;
        size_t len;
        if (kube_config_ca(k, 1, &ca, &len) < 0 || !ca) return 0;
        free(ca);
        LOGI("msg=\"certificate check failed: CA bundle re-read\" file=%s", k->ca_file);
        return 1;
    }
    return 0;
}

struct kube_client *kube_client_new(struct kube_config *cfg, const char *user_agent,
                                    char *err, size_t errlen) {
    pthread_once(&curl_once, curl_global);
    if (!cfg || !cfg->server) {
        errfmt(err, errlen, "kube client: no API server configured");
        return NULL;
    }
    struct kube_client *c = calloc(1, sizeof(*c));
    if (!c) { errfmt(err, errlen, "kube client: out of memory"); return NULL; }
    c->cfg = *cfg;                 /* take ownership of the contents */
    /* The copied mutex must be a fresh one; the caller's is destroyed. */
    pthread_mutex_destroy(&cfg->lock);
    memset(cfg, 0, sizeof(*cfg));
    pthread_mutex_init(&c->cfg.lock, NULL);
    c->user_agent = strdup(user_agent ? user_agent : "yao-sandbox/" YAO_VERSION);
    c->timeout_ms = 30000;
    c->deadline_ms = KUBE_DEFAULT_DEADLINE_MS;
    c->attempts = 5;
    c->max_body = KUBE_MAX_BODY;
    pthread_mutex_init(&c->lock, NULL);
    clock_mono_cond_init(&c->wake);
    pthread_cond_init(&c->writes_done, NULL);
    if (!c->user_agent || route_setup(c) < 0) {
        kube_client_free(c);
        errfmt(err, errlen, "kube client: out of memory");
        return NULL;
    }
    if (kube_proxy_choose(c->cfg.server, c->cfg.proxy_url, NULL, &c->proxy, err, errlen) < 0) {
        kube_client_free(c);
        return NULL;
    }
    return c;
}

void kube_client_free(struct kube_client *c) {
    if (!c) return;
    for (int i = 0; i < c->npool; i++) {
        curl_multi_cleanup(c->pool[i].multi);
        curl_easy_cleanup(c->pool[i].easy);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->wake);
    pthread_cond_destroy(&c->writes_done);
    kube_config_free(&c->cfg);
    free(c->base_url);
    free(c->host_header);
    curl_slist_free_all(c->connect_to);
    free(c->user_agent);
    free(c);
}

struct kube_config *kube_client_config(struct kube_client *c) { return &c->cfg; }
const struct kube_proxy *kube_client_proxy(struct kube_client *c) { return &c->proxy; }
void kube_client_set_timeout(struct kube_client *c, long ms) { c->timeout_ms = ms; }
void kube_client_set_retries(struct kube_client *c, int attempts) { c->attempts = attempts < 1 ? 1 : attempts; }
void kube_client_set_max_body(struct kube_client *c, size_t bytes) {
    c->max_body = bytes > 0 && bytes < KUBE_MAX_BODY ? bytes : KUBE_MAX_BODY;
}
void kube_client_set_deadline(struct kube_client *c, long ms) { c->deadline_ms = ms > 0 ? ms : KUBE_DEFAULT_DEADLINE_MS; }

/* Wake every transfer in progress (caller holds c->lock). curl_multi_wakeup may be
 * called from any thread; a transfer unlists itself under the lock before its multi
 * handle can go. */
static void wake_active(struct kube_client *c) {
    for (struct active *a = c->active; a; a = a->next) curl_multi_wakeup(a->multi);
}

void kube_client_cancel(struct kube_client *c) {
    atomic_store(&c->cancelled, 1);
    pthread_mutex_lock(&c->lock);
    pthread_cond_broadcast(&c->wake);
    wake_active(c);
    pthread_mutex_unlock(&c->lock);
}

void kube_client_wake(struct kube_client *c) {
    pthread_mutex_lock(&c->lock);
    wake_active(c);
    pthread_mutex_unlock(&c->lock);
}

int kube_client_cancelled(struct kube_client *c) { return atomic_load(&c->cancelled); }

void kube_client_set_fence(struct kube_client *c, kube_fence_fn fn, void *ud) {
    pthread_mutex_lock(&c->lock);
    c->fence = fn;
    c->fence_ud = ud;
    pthread_mutex_unlock(&c->lock);
}

int kube_client_drain_writes(struct kube_client *c, long max_ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += max_ms / 1000;
    until.tv_nsec += (max_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    while (c->writes_in_flight > 0 && rc == 0)
        rc = pthread_cond_timedwait(&c->writes_done, &c->lock, &until);
    int left = c->writes_in_flight;
    pthread_mutex_unlock(&c->lock);
    return left ? -1 : 0;
}

/* Enter the fence for a mutating request: count it in flight first, then ask the fence, so
 * a writer that passes is always seen by kube_client_drain_writes after the fence closed.
 * 1 = entered (counted; *left_ms = how long the write may take), 0 = no fence installed,
 * -1 = refused (nothing counted). */
static int fence_enter(struct kube_client *c, long *left_ms) {
    pthread_mutex_lock(&c->lock);
    kube_fence_fn fn = c->fence;
    void *ud = c->fence_ud;
    if (fn) c->writes_in_flight++;
    pthread_mutex_unlock(&c->lock);
    if (!fn) return 0;
    int64_t left = fn(ud);
    if (left > 0) {
        *left_ms = left > LONG_MAX ? LONG_MAX : (long)left;
        return 1;
    }
    pthread_mutex_lock(&c->lock);
    if (--c->writes_in_flight == 0) pthread_cond_broadcast(&c->writes_done);
    pthread_mutex_unlock(&c->lock);
    return -1;
}

/* Leave the fence after a mutating request that entered it. */
static void fence_leave(struct kube_client *c) {
    pthread_mutex_lock(&c->lock);
    if (--c->writes_in_flight == 0) pthread_cond_broadcast(&c->writes_done);
    pthread_mutex_unlock(&c->lock);
}

void kube_client_counts(struct kube_client *c, struct kube_request_counts *out) {
    pthread_mutex_lock(&c->lock);
    *out = c->counts;
    pthread_mutex_unlock(&c->lock);
}

/* Index of a verb in the counters. */
static int verb_index(const char *m) {
    if (!strcmp(m, "GET")) return KUBE_VERB_GET;
    if (!strcmp(m, "POST")) return KUBE_VERB_POST;
    if (!strcmp(m, "PUT")) return KUBE_VERB_PUT;
    if (!strcmp(m, "PATCH")) return KUBE_VERB_PATCH;
    if (!strcmp(m, "DELETE")) return KUBE_VERB_DELETE;
    return KUBE_VERB_OTHER;
}

void kube_client_count(struct kube_client *c, const char *method, long status) {
    int cls = (status >= 100 && status < 600) ? (int)(status / 100) : 0;
    pthread_mutex_lock(&c->lock);
    c->counts.by_verb[verb_index(method)][cls]++;
    pthread_mutex_unlock(&c->lock);
}

/* Close a connection for good. */
static void conn_close(struct conn *k) {
    if (k->multi) curl_multi_cleanup(k->multi);
    if (k->easy) curl_easy_cleanup(k->easy);
    k->multi = NULL;
    k->easy = NULL;
}

/* Take an idle connection from the pool or make a new one. 0, or -1 out of memory. */
static int pool_take(struct kube_client *c, struct conn *out) {
    int have = 0;
    pthread_mutex_lock(&c->lock);
    if (c->npool > 0) { *out = c->pool[--c->npool]; have = 1; }
    pthread_mutex_unlock(&c->lock);
    if (have) return 0;
    out->easy = curl_easy_init();
    out->multi = curl_multi_init();
    if (!out->easy || !out->multi) { conn_close(out); return -1; }
    return 0;
}

/* Return a connection for reuse (it stays open), or close it if the pool is full. */
static void pool_give(struct kube_client *c, struct conn *k) {
    pthread_mutex_lock(&c->lock);
    if (c->npool < POOL_MAX) { c->pool[c->npool++] = *k; k->easy = NULL; k->multi = NULL; }
    pthread_mutex_unlock(&c->lock);
    conn_close(k);
}

/* Run the transfer set up on easy to its end through multi, looking at the cancel flag
 * (and *stop, when given) whenever it wakes: on socket activity, curl's own timers, a
 * cancel or kube_client_wake, and at least every IDLE_POLL_MS. The transfer's own
 * timeout (CURLOPT_TIMEOUT_MS) still applies. CURLE_ABORTED_BY_CALLBACK when cancelled. */
static CURLcode drive(struct kube_client *c, CURLM *multi, CURL *easy, const atomic_int *stop) {
    CURLcode result = CURLE_OK;
    if (curl_multi_add_handle(multi, easy) != CURLM_OK) return CURLE_OUT_OF_MEMORY;
    struct active me = {multi, NULL};
    pthread_mutex_lock(&c->lock);
    me.next = c->active;
    c->active = &me;
    pthread_mutex_unlock(&c->lock);
    for (int running = 1, done = 0; !done;) {
        if (atomic_load(&c->cancelled) || (stop && atomic_load(stop))) { result = CURLE_ABORTED_BY_CALLBACK; break; }
        if (curl_multi_perform(multi, &running) != CURLM_OK) { result = CURLE_OUT_OF_MEMORY; break; }
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left)))
            if (m->msg == CURLMSG_DONE && m->easy_handle == easy) { result = m->data.result; done = 1; }
        if (done) break;
        if (!running) { result = CURLE_RECV_ERROR; break; }  /* ended without a DONE message */
        if (curl_multi_poll(multi, NULL, 0, IDLE_POLL_MS, NULL) != CURLM_OK) { result = CURLE_RECV_ERROR; break; }
    }
    pthread_mutex_lock(&c->lock);
    for (struct active **p = &c->active; *p; p = &(*p)->next)
        if (*p == &me) { *p = me.next; break; }
    pthread_mutex_unlock(&c->lock);
    curl_multi_remove_handle(multi, easy);
    return result;
}

static CURLcode conn_perform(struct kube_client *c, struct conn *k) { return drive(c, k->multi, k->easy, NULL); }

int kube_client_perform(struct kube_client *c, void *curl_easy, const atomic_int *stop) {
    CURLM *multi = curl_multi_init();
    if (!multi) return CURLE_OUT_OF_MEMORY;
    CURLcode cc = drive(c, multi, curl_easy, stop);
    curl_multi_cleanup(multi);
    return (int)cc;
}

/* curl socket callback: the keepalive probe count (curl 7.88 has no option for it). */
static int tune_socket(void *ud, curl_socket_t fd, curlsocktype purpose) {
    int cnt = KUBE_KEEPALIVE_PROBES;
    if (purpose == CURLSOCKTYPE_IPCXN) setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    return CURL_SOCKOPT_OK;
}

int kube_client_setup_handle(struct kube_client *c, void *curl_easy, struct curl_slist **headers,
                             char *err, size_t errlen) {
    CURL *h = curl_easy;
    struct kube_config *k = &c->cfg;
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    /* A peer that vanished without a FIN or RST (a node or NAT gone): probes after 30 s idle,
     * every 10 s, 3 unanswered end the connection — about a minute, not Linux's 2 h 11 min.
     * (Watches also have their own stall limit, kube/watch.h.) */
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, tune_socket);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    /* The proxy as client-go chooses it; "" keeps libcurl from its own reading of the
     * environment (which differs: it proxies loopback, ignores proxy-url). */
    curl_easy_setopt(h, CURLOPT_PROXY, c->proxy.set ? c->proxy.url : "");
    if (c->proxy.set) curl_easy_setopt(h, CURLOPT_HTTPPROXYTUNNEL, 1L);
    struct kube_auth auth;
    if (kube_config_auth(k, &auth, err, errlen) < 0) return -1;
    int oom = 0;
    char **imp = kube_config_impersonation_headers(k, &oom);
    for (size_t i = 0; imp && imp[i]; i++) {
        struct curl_slist *l = curl_slist_append(*headers, imp[i]);
        if (!l) { oom = 1; break; }
        *headers = l;
    }
    kube_config_free_lines(imp);
    if (oom) { kube_auth_free(&auth); errfmt_oom(err, errlen); return -1; }
    char *ca;
    size_t ca_len;
    if (kube_config_ca(k, 0, &ca, &ca_len) < 0) { kube_auth_free(&auth); errfmt_oom(err, errlen); return -1; }
    if (ca) {                      /* the current bundle: a rotated file is picked up */
        struct curl_blob blob = {ca, ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
        free(ca);
    }
    if (c->connect_to) {
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
        struct curl_slist *l = curl_slist_append(*headers, c->host_header);
        if (!l) { kube_auth_free(&auth); errfmt_oom(err, errlen); return -1; }
        *headers = l;
    }
    if (auth.cert_pem && auth.key_pem) {
        struct curl_blob cert = {auth.cert_pem, auth.cert_len, CURL_BLOB_COPY};
        struct curl_blob key = {auth.key_pem, auth.key_len, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (k->insecure_skip_tls_verify) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (k->username && k->password) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, k->username);
        curl_easy_setopt(h, CURLOPT_PASSWORD, k->password);
    }
    char *token = auth.token;
    if (token) {
        size_t n = strlen(token) + sizeof("Authorization: Bearer ");
        char *hdr = malloc(n);
        if (!hdr) { kube_auth_free(&auth); errfmt_oom(err, errlen); return -1; }
        snprintf(hdr, n, "Authorization: Bearer %s", token);
        struct curl_slist *l = curl_slist_append(*headers, hdr);
        /* Wipe the copies: tokens live only as long as the request needs them. */
        memset(hdr, 0, n);
        free(hdr);
        if (!l) { kube_auth_free(&auth); errfmt_oom(err, errlen); return -1; }
        *headers = l;
    }
    kube_auth_free(&auth);
    return 0;
}

struct reply {
    struct dynbuf body;
    long retry_after_s;  /* -1 when absent */
};

/* curl write callback: append to the bounded body; a too-large body aborts the transfer. */
static size_t on_body(char *p, size_t size, size_t n, void *ud) {
    struct reply *r = ud;
    return dynbuf_append(&r->body, p, size * n) == 0 ? size * n : 0;
}

/* curl header callback: remember Retry-After (seconds form). */
static size_t on_header(char *p, size_t size, size_t n, void *ud) {
    struct reply *r = ud;
    size_t len = size * n;
    if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        char tmp[32];
        size_t m = len - 12 < sizeof(tmp) - 1 ? len - 12 : sizeof(tmp) - 1;
        memcpy(tmp, p + 12, m);
        tmp[m] = 0;
        char *end;
        long v = strtol(tmp, &end, 10);
        if (end != tmp && v >= 0) r->retry_after_s = v;
    }
    return len;
}

/* One attempt. Returns 0 with resp->status set, -1 on a transport error (resp->err), or
 * -2 when retrying cannot help (resp->err): the body exceeds c->max_body (the same body
 * would come again), or the client was cancelled. */
static int do_once(struct kube_client *c, const char *method, const char *path,
                   const char *content_type, const char *body, size_t body_len, long timeout_ms,
                   struct kube_response *resp, long *retry_after_s, int *tls_verify_failed) {
    struct conn k = {0};
    CURL *h = NULL;
    struct curl_slist *hdrs = NULL;
    struct reply r = {.retry_after_s = -1};
    char *url = NULL;
    int rc = -1;

    dynbuf_init(&r.body, c->max_body);
    if (pool_take(c, &k) < 0) { errfmt_oom(resp->err, sizeof(resp->err)); goto out; }
    h = k.easy;
    curl_easy_reset(h);
    if (!(url = kube_client_url(c, path))) { errfmt_oom(resp->err, sizeof(resp->err)); goto out; }
    if (kube_client_setup_handle(c, h, &hdrs, resp->err, sizeof(resp->err)) < 0) goto out;
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (content_type) {
        char ct[128];
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        hdrs = curl_slist_append(hdrs, ct);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    /* Refuse a too-large Content-Length before reading it; on_body catches the rest. */
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
    if (!strcmp(method, "GET")) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        }
    }
    CURLcode cc = conn_perform(c, &k);
    if (cc != CURLE_OK) {
        if (cc == CURLE_ABORTED_BY_CALLBACK) {
            errfmt(resp->err, sizeof(resp->err), "%s %s: %s", method, path, KUBE_CANCELLED_MSG);
            rc = -2;
        } else if (cc == CURLE_WRITE_ERROR || cc == CURLE_FILESIZE_EXCEEDED) {
            errfmt(resp->err, sizeof(resp->err), "%s %s: response larger than %zu bytes",
                    method, path, c->max_body);
            resp->too_large = 1;
            rc = -2;
        } else {
            errfmt(resp->err, sizeof(resp->err), "%s %s: %s", method, path, curl_easy_strerror(cc));
            *tls_verify_failed = cc == CURLE_PEER_FAILED_VERIFICATION;
        }
        resp->status = 0;
        kube_client_count(c, method, 0);
        /* A handle whose transfer failed may hold a broken connection: drop it. */
        conn_close(&k);
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    kube_client_count(c, method, resp->status);
    resp->len = r.body.len;
    resp->body = dynbuf_take(&r.body);
    if (!resp->body) { errfmt_oom(resp->err, sizeof(resp->err)); resp->status = 0; goto out; }
    *retry_after_s = r.retry_after_s;
    rc = 0;
out:
    if (k.easy) pool_give(c, &k);
    curl_slist_free_all(hdrs);
    free(url);
    dynbuf_free(&r.body);
    return rc;
}

/* True when the verb may be repeated without changing the outcome. */
static int idempotent(const char *m) {
    return !strcmp(m, "GET") || !strcmp(m, "PUT") || !strcmp(m, "DELETE") || !strcmp(m, "PATCH");
}

/* Sleep for ms milliseconds, or until the client is cancelled. 0, or -1 when cancelled. */
static int sleep_ms(struct kube_client *c, int64_t ms) {
    struct timespec ts;
    clock_mono_timespec(clock_mono_ms() + ms, &ts);
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    while (!atomic_load(&c->cancelled) && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&c->wake, &c->lock, &ts);
    pthread_mutex_unlock(&c->lock);
    return atomic_load(&c->cancelled) ? -1 : 0;
}

int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, size_t body_len,
                 struct kube_response *resp) {
    int mutating = strcmp(method, "GET") != 0, refreshed = 0;
    int64_t deadline = clock_mono_ms() + c->deadline_ms;
    memset(resp, 0, sizeof(*resp));
    for (int attempt = 0;; attempt++) {
        long retry_after = -1, timeout = c->timeout_ms, fence_left = LONG_MAX;
        int fenced = 0, tls_verify_failed = 0;
        int64_t left = deadline - clock_mono_ms();
        kube_response_free(resp);
        resp->status = 0;   /* an attempt that gets no answer must not show the last one's */
        if (atomic_load(&c->cancelled) || left <= 0) {
            errfmt(resp->err, sizeof(resp->err), "%s %s: %s", method, path,
                    left <= 0 ? "deadline exceeded before an answer" : KUBE_CANCELLED_MSG);
            return -1;
        }
        if (left < timeout) timeout = (long)left;
        if (mutating) {
            /* Fenced writes: refused once leadership is not confirmed, and never allowed to
             * outlive it (the attempt's timeout ends where the fence does). */
            fenced = fence_enter(c, &fence_left);
            if (fenced < 0) {
                errfmt(resp->err, sizeof(resp->err), "%s %s: %s", method, path, KUBE_FENCED_MSG);
                return -1;
            }
            if (fence_left < timeout) timeout = fence_left;
        }
        int rc = do_once(c, method, path, content_type, body, body_len, timeout, resp, &retry_after,
                         &tls_verify_failed);
        if (fenced) fence_leave(c);
        /* Rotated credentials: a 401 re-reads the token file, a failed certificate check the
         * CA bundle; when that changed something, one immediate retry (the server did not
         * act on a request it could not authenticate, nor on one it never received). */
        if (!refreshed && ((rc == 0 && resp->status == 401) || (rc < 0 && tls_verify_failed))) {
            refreshed = 1;
            if (kube_client_refresh_credentials(c, rc == 0 ? resp->status : 0, tls_verify_failed)) {
                attempt--;
                continue;
            }
        }
        int retriable;
        if (rc == -2) return -1;   /* body over max_body, or cancelled: retrying cannot help */
        if (rc < 0) retriable = idempotent(method);
        else if (resp->status == 429 || resp->status == 503) retriable = 1;
        else if (resp->status >= 500) retriable = idempotent(method);
        else return 0;
        if (!retriable || attempt + 1 >= c->attempts) return rc;
        int64_t wait = retry_after >= 0 ? (retry_after > 30 ? 30000 : retry_after * 1000)
                                        : backoff_exponential_ms((unsigned)attempt, 200, 5000);
        /* No point sleeping past the fence (the next attempt would be refused) or past the
         * request's deadline (the last answer is as good as any). */
        if (fenced && wait >= fence_left) return rc;
        if (clock_mono_ms() + wait >= deadline) return rc;
        if (sleep_ms(c, wait) < 0) {
            /* Cancelled while waiting: the last answer stands, marked as such. */
            if (rc < 0) errfmt(resp->err, sizeof(resp->err), "%s %s: %s", method, path, KUBE_CANCELLED_MSG);
            return rc;
        }
    }
}

void kube_response_free(struct kube_response *r) {
    if (!r) return;
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

/* The body of an answer parsed (NULL: none, or not JSON). Caller deletes. */
static cJSON *answer_json(const struct kube_response *r) {
    return r->status && r->body && r->len ? cJSON_ParseWithLength(r->body, r->len) : NULL;
}

/* kube_response_message on the answer's parsed body st. */
static void message_of(const struct kube_response *r, const cJSON *st, char *out, size_t outlen) {
    if (r->status == 0) {
        snprintf(out, outlen, "%s", r->err[0] ? r->err : "no response");
        return;
    }
    const cJSON *msg = st ? cJSON_GetObjectItemCaseSensitive(st, "message") : NULL;
    if (cJSON_IsString(msg) && msg->valuestring[0])
        snprintf(out, outlen, "HTTP %ld: %s", r->status, msg->valuestring);
    else
        snprintf(out, outlen, "HTTP %ld", r->status);
}

void kube_response_message(const struct kube_response *r, char *out, size_t outlen) {
    cJSON *st = answer_json(r);
    message_of(r, st, out, outlen);
    cJSON_Delete(st);
}

/* metav1.StatusReason spellings, with the HTTP status each is the usual reason of (0: none). */
static const struct { enum kube_reason reason; const char *name; long status; } reasons[] = {
    {KUBE_REASON_BAD_REQUEST, "BadRequest", 400},
    {KUBE_REASON_UNAUTHORIZED, "Unauthorized", 401},
    {KUBE_REASON_FORBIDDEN, "Forbidden", 403},
    {KUBE_REASON_NOT_FOUND, "NotFound", 404},
    {KUBE_REASON_METHOD_NOT_ALLOWED, "MethodNotAllowed", 405},
    {KUBE_REASON_NOT_ACCEPTABLE, "NotAcceptable", 406},
    {KUBE_REASON_ALREADY_EXISTS, "AlreadyExists", 0},      /* 409, told apart by the Status */
    {KUBE_REASON_CONFLICT, "Conflict", 409},
    {KUBE_REASON_GONE, "Gone", 0},
    {KUBE_REASON_EXPIRED, "Expired", 410},
    {KUBE_REASON_REQUEST_ENTITY_TOO_LARGE, "RequestEntityTooLarge", 413},
    {KUBE_REASON_UNSUPPORTED_MEDIA_TYPE, "UnsupportedMediaType", 415},
    {KUBE_REASON_INVALID, "Invalid", 422},
    {KUBE_REASON_TOO_MANY_REQUESTS, "TooManyRequests", 429},
    {KUBE_REASON_INTERNAL_ERROR, "InternalError", 500},
    {KUBE_REASON_SERVICE_UNAVAILABLE, "ServiceUnavailable", 503},
    {KUBE_REASON_SERVER_TIMEOUT, "ServerTimeout", 0},
    {KUBE_REASON_TIMEOUT, "Timeout", 504},
    {KUBE_REASON_NAMESPACE_TERMINATING, "NamespaceTerminating", 0},
};

const char *kube_reason_name(enum kube_reason r) {
    if (r == KUBE_REASON_NONE) return "";
    if (r == KUBE_REASON_TRANSPORT) return "Transport";
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].reason == r) return reasons[i].name;
    return "Unknown";
}

/* Does the Status carry the namespace lifecycle admission's cause? */
static int namespace_terminating_cause(const cJSON *status) {
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(status, "details");
    const cJSON *causes = details ? cJSON_GetObjectItemCaseSensitive(details, "causes") : NULL;
    const cJSON *cause;
    cJSON_ArrayForEach(cause, causes) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(cause, "reason");
        if (cJSON_IsString(r) && !strcmp(r->valuestring, "NamespaceTerminating")) return 1;
    }
    return 0;
}

/* kube_reason_of on the answer's parsed body st (NULL: none, or not JSON). */
static enum kube_reason reason_of(long status, const cJSON *st) {
    if (status <= 0) return KUBE_REASON_TRANSPORT;
    if (status < 300) return KUBE_REASON_NONE;
    const cJSON *kind = st ? cJSON_GetObjectItemCaseSensitive(st, "kind") : NULL;
    if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "Status")) {
        if (status == 403 && namespace_terminating_cause(st)) return KUBE_REASON_NAMESPACE_TERMINATING;
        /* (NamespaceTerminating is a cause, never a Status's reason: a webhook saying so is
         * not the namespace lifecycle admission.) */
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(st, "reason");
        for (size_t i = 0; cJSON_IsString(reason) && i < sizeof(reasons) / sizeof(reasons[0]); i++)
            if (reasons[i].reason != KUBE_REASON_NAMESPACE_TERMINATING && !strcmp(reasons[i].name, reason->valuestring))
                return reasons[i].reason;
    }
    /* No Status, or a reason of its own (a proxy's answer, an aggregated API): the status's
     * usual reason. */
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].status == status) return reasons[i].reason;
    return status >= 500 ? KUBE_REASON_INTERNAL_ERROR : KUBE_REASON_UNKNOWN;
}

enum kube_reason kube_reason_of(long status, const char *body, size_t len) {
    cJSON *st = status >= 300 && body && len ? cJSON_ParseWithLength(body, len) : NULL;
    enum kube_reason r = reason_of(status, st);
    cJSON_Delete(st);
    return r;
}

void kube_error_from_response(const struct kube_response *r, const char *method, const char *path,
                              struct kube_error *e) {
    if (!e) return;
    char msg[KUBE_ERR_MAX];
    cJSON *st = answer_json(r);   /* parsed once for the message and the reason */
    message_of(r, st, msg, sizeof(msg));
    e->status = r->status;
    e->reason = reason_of(r->status, st);
    cJSON_Delete(st);
    if (r->status == 0)
        errfmt(e->message, sizeof(e->message), "%s", msg);   /* the transport error names the request */
    else
        errfmt(e->message, sizeof(e->message), "%s %s: %s", method, path, msg);
}

int kube_error_set(struct kube_error *e, const char *fmt, ...) {
    if (!e) return -1;
    va_list ap;
    va_start(ap, fmt);
    e->status = 0;
    e->reason = KUBE_REASON_NONE;
    errfmt_v(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
    return -1;
}

int kube_error_oom(struct kube_error *e) {
    return kube_error_set(e, "%s", ERR_OOM);
}

void kube_error_clear(struct kube_error *e) {
    if (!e) return;
    e->status = 0;
    e->reason = KUBE_REASON_NONE;
    e->message[0] = '\0';
}

/* Shared body of the JSON calls: send, classify, parse the answer. */
static long json_call(struct kube_client *c, const char *method, const char *path,
                      const char *content_type, const cJSON *obj, cJSON **out, struct kube_error *e) {
    char *body = NULL;
    struct kube_response resp;
    if (out) *out = NULL;
    if (obj) {
        body = cJSON_PrintUnformatted(obj);
        if (!body) return kube_error_set(e, "%s %s: %s", method, path, ERR_OOM);
    }
    int rc = kube_request(c, method, path, content_type, body, body ? strlen(body) : 0, &resp);
    free(body);
    if (rc < 0) {
        kube_error_from_response(&resp, method, path, e);
        kube_response_free(&resp);
        return -1;
    }
    long status = resp.status;
    if (status >= 300) {
        kube_error_from_response(&resp, method, path, e);
    } else if (out) {
        *out = cJSON_ParseWithLength(resp.body, resp.len);
        if (!*out) {
            kube_error_set(e, "%s %s: malformed JSON in response", method, path);
            status = -1;
        }
    }
    kube_response_free(&resp);
    return status;
}

long kube_get(struct kube_client *c, const char *path, cJSON **out, struct kube_error *e) {
    return json_call(c, "GET", path, NULL, NULL, out, e);
}

long kube_create(struct kube_client *c, const char *path, const cJSON *obj, cJSON **out, struct kube_error *e) {
    return json_call(c, "POST", path, "application/json", obj, out, e);
}

long kube_merge_patch(struct kube_client *c, const char *path, const cJSON *patch, cJSON **out,
                      struct kube_error *e) {
    return json_call(c, "PATCH", path, "application/merge-patch+json", patch, out, e);
}

long kube_strategic_patch(struct kube_client *c, const char *path, const cJSON *patch, cJSON **out,
                          struct kube_error *e) {
    return json_call(c, "PATCH", path, "application/strategic-merge-patch+json", patch, out, e);
}

long kube_replace(struct kube_client *c, const char *path, const cJSON *obj, cJSON **out, struct kube_error *e) {
    return json_call(c, "PUT", path, "application/json", obj, out, e);
}

long kube_apply(struct kube_client *c, const char *path, const cJSON *obj, const char *field_manager, cJSON **out,
                struct kube_error *e) {
    char full[2048];
    snprintf(full, sizeof(full), "%s", path);
    if (kube_path_add_query(full, sizeof(full), "fieldManager", field_manager) < 0 ||
        kube_path_add_query(full, sizeof(full), "force", "true") < 0)
        return kube_error_set(e, "apply %s: path too long", path);
    return json_call(c, "PATCH", full, "application/apply-patch+yaml", obj, out, e);
}

long kube_delete(struct kube_client *c, const char *path, const char *uid, struct kube_error *e) {
    cJSON *opts = cJSON_CreateObject();
    if (!opts) return kube_error_oom(e);
    cJSON_AddStringToObject(opts, "kind", "DeleteOptions");
    cJSON_AddStringToObject(opts, "apiVersion", "v1");
    cJSON_AddStringToObject(opts, "propagationPolicy", "Background");
    if (uid) {
        cJSON *pre = cJSON_AddObjectToObject(opts, "preconditions");
        if (pre) cJSON_AddStringToObject(pre, "uid", uid);
    }
    long st = json_call(c, "DELETE", path, "application/json", opts, NULL, e);
    cJSON_Delete(opts);
    return st;
}

int kube_url_encode(const char *s, char *out, size_t outlen) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        if (o + (plain ? 1 : 3) >= outlen) return -1;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (o >= outlen) return -1;
    out[o] = 0;
    return 0;
}

int kube_path_add_query(char *path, size_t pathlen, const char *key, const char *value) {
    size_t used = strlen(path);
    char enc[1024];
    if (kube_url_encode(value, enc, sizeof(enc)) < 0) return -1;
    int n = snprintf(path + used, pathlen - used, "%c%s=%s", strchr(path, '?') ? '&' : '?', key, enc);
    if (n < 0 || (size_t)n >= pathlen - used) {
        path[used] = 0;
        return -1;
    }
    return 0;
}
