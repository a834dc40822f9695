/* kube/wsconn.c — the parts of a WebSocket session with the API server that exec and
 * port-forward share (see wsconn.h): URL, TLS from memory, credentials, the per-session
 * context and the connection. Why each session builds its own SSL_CTX and never lets lws
 * do the global OpenSSL init: exec.c, "TLS and libwebsockets 4.1". */
#include "base/errfmt.h"
#include "kube/proxy.h"
#include "kube/wsconn.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifndef YAO_VERSION
#define YAO_VERSION "dev"
#endif

#define WS_HEADER_DATA (16u * 1024)       /* lws header table: URL, handshake headers, reply */
#define WS_SERV_BUF (64u * 1024)          /* lws service buffer: the handshake, then reads */

int kube_ws_parse_server(const char *url, struct kube_ws_endpoint *e, const char *what, char *err, size_t errlen) {
    const char *p;
    memset(e, 0, sizeof(*e));
    if (!strncasecmp(url, "https://", 8)) {
        e->tls = 1;
        p = url + 8;
    } else if (!strncasecmp(url, "http://", 7)) {
        p = url + 7;
    } else {
        errfmt(err, errlen, "%s: server URL \"%s\" is not http(s)://", what, url);
        return -1;
    }
    e->port = e->tls ? 443 : 80;
    const char *host = p, *hend;
    if (*p == '[') {
        host = p + 1;
        if (!(hend = strchr(host, ']'))) goto bad;
        p = hend + 1;
    } else {
        while (*p && *p != ':' && *p != '/') p++;
        hend = p;
    }
    if (hend == host || (size_t)(hend - host) >= sizeof(e->host)) goto bad;
    memcpy(e->host, host, (size_t)(hend - host));
    if (*p == ':') {
        char *end;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port < 1 || port > 65535 || (*end && *end != '/')) goto bad;
        e->port = (int)port;
        p = end;
    }
    if (*p && *p != '/') goto bad;
    e->prefix = p;
    e->prefix_len = strlen(p);
    while (e->prefix_len && p[e->prefix_len - 1] == '/') e->prefix_len--;
    return 0;
bad:
    errfmt(err, errlen, "%s: cannot parse server URL \"%s\"", what, url);
    return -1;
}

SSL_CTX *kube_ws_tls_new(const struct kube_config *k, const struct kube_auth *a, const char *what, char *err,
                         size_t errlen) {
    SSL_CTX *ssl = SSL_CTX_new(TLS_client_method());
    BIO *b = NULL;
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    int rc = -1, said = 0;

    if (!ssl || SSL_CTX_set_min_proto_version(ssl, TLS1_2_VERSION) != 1) goto out;
    if (!(k->ca_pem && k->ca_len) && !k->insecure_skip_tls_verify && SSL_CTX_set_default_verify_paths(ssl) != 1)
        goto out;
    if (k->ca_pem && k->ca_len && !k->insecure_skip_tls_verify) {
        X509_STORE *store = SSL_CTX_get_cert_store(ssl);
        int n = 0;
        if (!(b = BIO_new_mem_buf(k->ca_pem, (int)k->ca_len))) goto out;
        while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
            if (X509_STORE_add_cert(store, x) == 1) n++;
            X509_free(x);
            x = NULL;
        }
        BIO_free(b);
        b = NULL;
        if (!n) {
            errfmt(err, errlen, "%s: certificate-authority holds no PEM certificate", what);
            said = 1;
            goto out;
        }
    }
    if (a->cert_pem && a->cert_len && a->key_pem && a->key_len) {
        if (!(b = BIO_new_mem_buf(a->cert_pem, (int)a->cert_len))) goto out;
        if (!(x = PEM_read_bio_X509(b, NULL, NULL, NULL)) || SSL_CTX_use_certificate(ssl, x) != 1) {
            errfmt(err, errlen, "%s: client-certificate is not a usable PEM certificate", what);
            said = 1;
            goto out;
        }
        X509_free(x);
        /* Intermediates after the leaf go out with it. */
        while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
            if (SSL_CTX_add_extra_chain_cert(ssl, x) != 1) goto out;
            x = NULL;   /* owned by the SSL_CTX now */
        }
        BIO_free(b);
        if (!(b = BIO_new_mem_buf(a->key_pem, (int)a->key_len))) goto out;
        if (!(key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) || SSL_CTX_use_PrivateKey(ssl, key) != 1 ||
            SSL_CTX_check_private_key(ssl) != 1) {
            errfmt(err, errlen, "%s: client-key is unreadable or does not match client-certificate", what);
            said = 1;
            goto out;
        }
    }
    rc = 0;
out:
    if (rc < 0) {
        if (!said) errfmt(err, errlen, "%s: cannot set up TLS", what);
        SSL_CTX_free(ssl);
        ssl = NULL;
    }
    ERR_clear_error();
    EVP_PKEY_free(key);
    X509_free(x);
    BIO_free(b);
    return ssl;
}

void kube_ws_free_secret(char *p) {
    if (!p) return;
    OPENSSL_cleanse(p, strlen(p));
    free(p);
}

char *kube_ws_auth_value(const struct kube_config *k, const struct kube_auth *a) {
    if (a->token) {
        size_t n = strlen(a->token) + sizeof("Bearer ");
        char *v = malloc(n);
        if (v) snprintf(v, n, "Bearer %s", a->token);
        return v;
    }
    if (k->username && k->password) {
        size_t n = (strlen(k->username) + strlen(k->password)) * 2 + 16;
        char *v = malloc(n);
        if (v && lws_http_basic_auth_gen(k->username, k->password, v, n)) {
            free(v);
            v = NULL;
        }
        return v;
    }
    return NULL;
}

int kube_ws_protocol_offered(const char *list, const char *proto) {
    size_t n = strlen(proto);
    if (!n) return 0;
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        if ((size_t)(t - p) == n && !strncmp(p, proto, n)) return 1;
        p = e;
    }
    return 0;
}

void kube_ws_note_cert_error(void *user, size_t len, char *out, size_t outlen) {
    if (len || !user || !outlen || out[0]) return;
    X509_STORE_CTX *x = user;
    snprintf(out, outlen, "%s (depth %d)", X509_verify_cert_error_string(X509_STORE_CTX_get_error(x)),
             X509_STORE_CTX_get_error_depth(x));
}

void kube_ws_note_close(const void *in, size_t len, char *out, size_t outlen) {
    if (len < 2 || !in) return;
    const unsigned char *c = in;
    int n = len - 2 > 100 ? 100 : (int)(len - 2);
    snprintf(out, outlen, " (close %d%s%.*s)", (c[0] << 8) | c[1], n ? ": " : "", n, (const char *)c + 2);
}

void kube_ws_connection_error(struct lws *wsi, const void *in, size_t len, const char *what, const char *tls_verify,
                              const struct kube_config *cfg, const char *offered, long *http_status, char *err,
                              size_t errlen) {
    unsigned int st = wsi ? lws_http_client_http_response(wsi) : 0;
    const char *why = in && len ? (const char *)in : "unknown error";
    if (st) *http_status = st;
    if (st && st != 101)
        errfmt(err, errlen, "%s: upgrade refused: HTTP %u", what, st);
    else if (tls_verify[0] && !cfg->insecure_skip_tls_verify)
        errfmt(err, errlen, "%s: TLS: the server certificate of %s is not trusted: %s", what, cfg->server,
               tls_verify);
    else if (offered && (strstr(why, "PROTOCOL") || strstr(why, "protocol")))
        errfmt(err, errlen, "%s: the server chose a subprotocol that was not offered (%s): %s", what, offered, why);
    else
        errfmt(err, errlen, "%s: connection to %s failed: %s", what, cfg->server, why);
}

int kube_ws_note_gone(struct lws *wsi, enum lws_callback_reasons reason, struct lws **pwsi, int *finished) {
    if (reason == LWS_CALLBACK_WSI_DESTROY && wsi != *pwsi) return 0;
    *finished = 1;
    *pwsi = NULL;
    if (wsi) lws_cancel_service(lws_get_context(wsi));
    return 0;
}

int kube_ws_append_headers(struct lws *wsi, const char *auth, char *const *extra, unsigned char **p,
                           unsigned char *end) {
    static const char ua[] = "yao-sandbox/" YAO_VERSION;
    if (auth && lws_add_http_header_by_name(wsi, (const unsigned char *)"authorization:",
                                            (const unsigned char *)auth, (int)strlen(auth), p, end))
        return -1;
    for (size_t i = 0; extra && extra[i]; i++) {
        /* "Name: value" → lws wants "name:" (lower case) and the value */
        const char *colon = strchr(extra[i], ':');
        char name[256];
        size_t nl = colon ? (size_t)(colon - extra[i]) : 0;
        if (!nl || nl + 2 > sizeof(name)) return -1;
        for (size_t j = 0; j < nl; j++) name[j] = (char)tolower((unsigned char)extra[i][j]);
        name[nl] = ':';
        name[nl + 1] = 0;
        const char *v = colon + 1;
        while (*v == ' ') v++;
        if (lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)v, (int)strlen(v), p,
                                        end))
            return -1;
    }
    if (lws_add_http_header_by_name(wsi, (const unsigned char *)"user-agent:", (const unsigned char *)ua,
                                    (int)sizeof(ua) - 1, p, end))
        return -1;
    return 0;
}

/* lws logs to stderr by default; keep it quiet unless YAO_LWS_LOG asks (a level mask). */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static void log_setup(void) {
    const char *v = getenv("YAO_LWS_LOG");
    lws_set_log_level(v ? atoi(v) : 0, NULL);
}

struct lws_context *kube_ws_context_new(const struct lws_protocols *protocols, void *user, SSL_CTX *ssl,
                                        const struct kube_proxy *proxy, const char *what, char *err,
                                        size_t errlen) {
    pthread_once(&log_once, log_setup);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols;
    info.user = user;
    info.gid = -1;
    info.uid = -1;
    info.fd_limit_per_thread = 8;            /* one socket plus lws' own pipe; no big fd tables */
    info.pt_serv_buf_size = WS_SERV_BUF;
    info.max_http_header_data2 = WS_HEADER_DATA;
    info.max_http_header_pool2 = 1;
    info.connect_timeout_secs = 15;
    struct lws_context *ctx = lws_create_context(&info);   /* no DO_SSL_GLOBAL_INIT: see exec.c */
    if (!ctx) {
        errfmt(err, errlen, "%s: cannot create the WebSocket context", what);
        return NULL;
    }
    /* lws reads $http_proxy itself when it makes the vhost (for every scheme, with no
     * NO_PROXY): ours replaces it; port 0 turns it off. */
    struct lws_vhost *dvh = lws_get_vhost_by_name(ctx, "default");
    char pv[600];
    if (proxy && proxy->set) {
        int v6 = strchr(proxy->host, ':') != NULL;
        snprintf(pv, sizeof(pv), "%s%s%s%s%s:%d", proxy->userinfo, proxy->userinfo[0] ? "@" : "", v6 ? "[" : "",
                 proxy->host, v6 ? "]" : "", proxy->port);
    } else {
        snprintf(pv, sizeof(pv), "127.0.0.1:0");
    }
    int pr = dvh ? lws_set_proxy(dvh, pv) : -1;
    OPENSSL_cleanse(pv, sizeof(pv));
    if (pr) {
        errfmt(err, errlen, "%s: cannot set up the proxy of the WebSocket context", what);
        lws_context_destroy(ctx);
        return NULL;
    }
    if (ssl) {
        struct lws_context_creation_info ti = info;
        struct lws_vhost *vh = lws_get_vhost_by_name(ctx, "default");
        ti.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;   /* only lets the vhost take our SSL_CTX */
        ti.provided_client_ssl_ctx = ssl;
        if (!vh || lws_init_vhost_client_ssl(&ti, vh)) {
            errfmt(err, errlen, "%s: cannot set up TLS for the WebSocket context", what);
            lws_context_destroy(ctx);
            return NULL;
        }
    }
    return ctx;
}

struct lws *kube_ws_connect(struct lws_context *ctx, const struct kube_ws_endpoint *ep, const struct kube_config *cfg,
                            const char *full_path, const char *protocols, const char *local_protocol,
                            struct lws **pwsi) {
    static const lws_retry_bo_t keepalive = {
        .secs_since_valid_ping = 20,     /* ping an idle connection, like client-go */
        .secs_since_valid_hangup = 120,  /* and give up when nothing comes back */
    };
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof(ci));
    ci.context = ctx;
    ci.address = ep->host;
    ci.port = ep->port;
    ci.path = full_path;
    ci.host = cfg->tls_server_name && cfg->tls_server_name[0] ? cfg->tls_server_name : ep->host;
    ci.protocol = protocols;
    ci.local_protocol_name = local_protocol;
    ci.alpn = "http/1.1";                    /* no WebSocket over h2 */
    ci.pwsi = pwsi;
    ci.retry_and_idle_policy = &keepalive;
    ci.ssl_connection = LCCSCF_PRIORITIZE_READS;  /* drain what arrived: one connection per context */
    if (ep->tls) {
        ci.ssl_connection |= LCCSCF_USE_SSL;
        if (cfg->insecure_skip_tls_verify)
            ci.ssl_connection |= LCCSCF_ALLOW_SELFSIGNED | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK |
                                 LCCSCF_ALLOW_INSECURE | LCCSCF_ALLOW_EXPIRED;
    }
    return lws_client_connect_via_info(&ci);
}

struct lws *kube_ws_connect_raw(struct lws_context *ctx, const struct kube_ws_endpoint *ep,
                                const char *local_protocol, struct lws **pwsi) {
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof(ci));
    ci.context = ctx;
    ci.address = ep->host;
    ci.port = ep->port;
    ci.path = "";
    ci.method = "RAW";
    ci.host = ep->host;
    ci.protocol = local_protocol;
    ci.local_protocol_name = local_protocol;
    ci.pwsi = pwsi;
    ci.ssl_connection = LCCSCF_PRIORITIZE_READS;   /* plain TCP: see wsconn.h */
    return lws_client_connect_via_info(&ci);
}

void kube_ws_host_header(const struct kube_ws_endpoint *ep, const struct kube_config *cfg, char *out, size_t outlen) {
    const char *h = cfg->tls_server_name && cfg->tls_server_name[0] ? cfg->tls_server_name : ep->host;
    int v6 = strchr(h, ':') != NULL;
    if (ep->port == (ep->tls ? 443 : 80))
        snprintf(out, outlen, "%s%s%s", v6 ? "[" : "", h, v6 ? "]" : "");
    else
        snprintf(out, outlen, "%s%s%s:%d", v6 ? "[" : "", h, v6 ? "]" : "", ep->port);
}

void kube_ws_refusal_message(struct kube_client *c, long status, const char *path, const char *what,
                             const char *hint403, char *err, size_t errlen) {
    struct kube_response resp;
    if (status < 400 || status >= 500 || status == 429) return;
    if (kube_request(c, "GET", path, NULL, NULL, 0, &resp) == 0 && resp.status == status) {
        char msg[KUBE_ERR_MAX];
        kube_response_message(&resp, msg, sizeof(msg));
        errfmt(err, errlen, "%s: upgrade refused: %s", what, msg);
    }
    kube_response_free(&resp);
    if (status == 403 && hint403) {
        size_t n = strlen(err);
        errfmt(err + n, errlen - n, " (%s)", hint403);
    }
}

/* ---- input from an fd ------------------------------------------------------------------ */

/* The reader thread: fill free slots from the fd until EOF, an error, or stop. */
static void *kube_ws_reader_main(void *arg) {
    struct kube_ws_reader *rd = arg;
    for (;;) {
        pthread_mutex_lock(&rd->mu);
        while (!rd->stop && rd->count == KUBE_WS_READER_SLOTS) pthread_cond_wait(&rd->cv, &rd->mu);
        int stop = rd->stop;
        struct kube_ws_slot *sl = &rd->slot[(rd->head + rd->count) % KUBE_WS_READER_SLOTS];
        pthread_mutex_unlock(&rd->mu);
        if (stop) return NULL;

        /* Wait for input (or stop) without reading, so a stop needs no input. */
        struct pollfd pf[2] = {{rd->fd, POLLIN, 0}, {rd->wake[0], POLLIN, 0}};
        int np = poll(pf, 2, -1);
        int err = 0;
        ssize_t n = -1;
        if (np < 0 && errno != EINTR && errno != EAGAIN) {
            err = errno;
        } else if (np <= 0) {
            continue;
        } else if (pf[1].revents) {
            return NULL;                              /* stopped */
        } else if (pf[0].revents & POLLNVAL) {
            err = EBADF;                              /* the fd was closed under us */
        } else {
            n = read(rd->fd, sl->buf + LWS_PRE + 1, KUBE_WS_CHUNK);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            if (n < 0) err = errno;
        }
        pthread_mutex_lock(&rd->mu);
        if (err)
            rd->err = err;
        else if (n == 0)
            rd->eof = 1;
        else {
            sl->len = (size_t)n;
            rd->count++;
        }
        pthread_mutex_unlock(&rd->mu);
        lws_cancel_service(rd->ctx);                  /* the loop sends it */
        if (n <= 0) return NULL;                      /* EOF or error: nothing more to read */
    }
}

/* A reader for fd, not started yet; NULL (with errno) when out of memory or pipes. */
struct kube_ws_reader *kube_ws_reader_new(int fd) {
    struct kube_ws_reader *rd = calloc(1, sizeof(*rd));
    if (!rd) return NULL;
    rd->fd = fd;
    if (pipe2(rd->wake, O_CLOEXEC) < 0) {
        int e = errno;
        free(rd);
        errno = e;
        return NULL;
    }
    pthread_mutex_init(&rd->mu, NULL);
    pthread_cond_init(&rd->cv, NULL);
    return rd;
}

/* Start reading; the loop of ctx is woken for every chunk. 0 or -1. */
int kube_ws_reader_start(struct kube_ws_reader *rd, struct lws_context *ctx) {
    rd->ctx = ctx;
    if (pthread_create(&rd->thread, NULL, kube_ws_reader_main, rd) != 0) return -1;
    rd->started = 1;
    return 0;
}

/* Stop the thread (wherever it waits: for a slot, for input) and join it. */
void kube_ws_reader_stop(struct kube_ws_reader *rd) {
    if (!rd || !rd->started) return;
    pthread_mutex_lock(&rd->mu);
    rd->stop = 1;
    pthread_cond_broadcast(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
    ssize_t w;
    do w = write(rd->wake[1], "x", 1);
    while (w < 0 && errno == EINTR);
    pthread_join(rd->thread, NULL);
    rd->started = 0;
}

void kube_ws_reader_free(struct kube_ws_reader *rd) {
    if (!rd) return;
    kube_ws_reader_stop(rd);
    close(rd->wake[0]);
    close(rd->wake[1]);
    pthread_mutex_destroy(&rd->mu);
    pthread_cond_destroy(&rd->cv);
    free(rd);
}

/* Something for the loop to send: a full slot, EOF or an error. */
int kube_ws_reader_pending(struct kube_ws_reader *rd) {
    pthread_mutex_lock(&rd->mu);
    int pending = rd->count || rd->eof || rd->err;
    pthread_mutex_unlock(&rd->mu);
    return pending;
}
