/* kube/portforward.c — one local TCP connection forwarded into a pod over the API
 * server's portforward WebSocket (see portforward.h).
 *
 * Owns: the request path, the session (one lws context per connection, built by
 * kube/wsconn.c like exec's), the channel demultiplexer with the port prefix check, the
 * error channel's text, and the pump between the local socket and the WebSocket.
 * Does not own: listening and accepting (the caller, one thread per connection), retries,
 * marking the sandbox used.
 *
 * The protocol (the kubelet's streaming server, pkg/kubelet/cri/streaming/portforward,
 * reached through the API server's upgrade-aware proxy; subprotocol v4.channel.k8s.io):
 * one port per request here (ports=P), so channel 0 carries the connection's bytes both
 * ways and channel 1 the server's error text. Every message starts with its channel byte.
 * The server begins each of its channels with P as 2 bytes little-endian (checked: data
 * for another port would be a protocol error); what the client sends has no prefix. The
 * server closes the WebSocket when the connection in the pod ends, after writing on the
 * error channel why, if it failed (e.g. nobody listens on the port).
 *
 * Flow and memory: bytes from the pod are written to the local socket as lws hands them
 * over (a blocking write: a slow local reader stalls the reads, TCP pushes back on the
 * server); bytes from the local socket are read by the session's reader thread into at
 * most KUBE_WS_READER_SLOTS chunks of 32 KiB (kube/wsconn.h) and sent one per writable
 * event.
 *
 * The end: v4 cannot half-close, so a local EOF cannot be passed on. The session then
 * lingers while the pod still sends, and ends PF_LINGER_MS after the last byte from it —
 * as containerd's forwarder itself ends a connection a second after one direction ended.
 * A failed write to the local socket (the client went away) ends it at once. */
#include "base/errfmt.h"
#include "kube/portforward.h"

#include <errno.h>
#include <libwebsockets.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube/wsconn.h"

#define PF_LOCAL_PROTOCOL "yao-portforward"
#define PF_RX_BUFFER (64u * 1024)
#define PF_LINGER_MS 1000          /* after a local EOF: end once the pod is quiet this long */
#define PF_STOP_CHECK_MS 100       /* how often *stop is looked at */
#define PF_MAX_PATH 1024

/* ---- the pure part ------------------------------------------------------------------ */

void kube_pf_demux_init(struct kube_pf_demux *d, uint16_t port, kube_pf_data_fn on_data, void *ud) {
    memset(d, 0, sizeof(*d));
    d->port = port;
    d->on_data = on_data;
    d->ud = ud;
}

int kube_pf_demux_feed(struct kube_pf_demux *d, const unsigned char *p, size_t n, int first, int final,
                       char *err, size_t errlen) {
    if (first || !d->in_message) {
        d->in_message = 1;
        if (n == 0) {   /* an empty message: nothing, not even a channel */
            d->in_message = !final;
            d->channel = -1;
            return 0;
        }
        d->channel = p[0];
        p++;
        n--;
        if (d->channel != KUBE_PF_DATA && d->channel != KUBE_PF_ERROR) {
            errfmt(err, errlen, "message on unknown channel %d", d->channel);
            return -1;
        }
    }
    if (final) d->in_message = 0;
    if (d->channel < 0) return 0;
    /* The port first, 2 bytes little-endian, possibly split across messages. */
    size_t *have = &d->prefix_len[d->channel];
    while (*have < 2 && n) {
        d->prefix[d->channel][(*have)++] = *p++;
        n--;
        if (*have == 2) {
            unsigned got = (unsigned)d->prefix[d->channel][0] | ((unsigned)d->prefix[d->channel][1] << 8);
            if (got != d->port) {
                errfmt(err, errlen, "the server's %s channel names port %u, not %u",
                       d->channel == KUBE_PF_DATA ? "data" : "error", got, (unsigned)d->port);
                return -1;
            }
        }
    }
    if (!n) return 0;
    if (d->channel == KUBE_PF_DATA) return d->on_data ? d->on_data(d->ud, p, n) : 0;
    size_t room = sizeof(d->error) - 1 - d->error_len;
    if (n > room) {
        d->error_truncated = 1;
        n = room;
    }
    memcpy(d->error + d->error_len, p, n);
    d->error_len += n;
    d->error[d->error_len] = 0;
    return 0;
}

size_t kube_pf_data_message(const unsigned char *data, size_t len, unsigned char *out, size_t cap) {
    if (cap < 1 || len > cap - 1) return 0;
    out[0] = KUBE_PF_DATA;
    if (len) memmove(out + 1, data, len);
    return len + 1;
}

int kube_pf_path(const char *ns, const char *pod, uint16_t port, char *out, size_t cap) {
    char ens[3 * 253 + 1], epod[3 * 253 + 1];
    if (!ns || !pod || strlen(ns) > 253 || strlen(pod) > 253 || !port ||
        kube_url_encode(ns, ens, sizeof(ens)) < 0 || kube_url_encode(pod, epod, sizeof(epod)) < 0)
        return -1;
    int n = snprintf(out, cap, "/api/v1/namespaces/%s/pods/%s/portforward?ports=%u", ens, epod, (unsigned)port);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* A decimal port in [min, 65535] spanning all of s[0..n); -1 otherwise. */
static long pf_port(const char *s, size_t n, long min) {
    long v = 0;
    if (n == 0 || n > 5) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < min || v > 65535 ? -1 : v;
}

int kube_pf_parse_mapping(const char *s, uint16_t *local, uint16_t *remote) {
    const char *colon = s ? strchr(s, ':') : NULL;
    long l, r;
    if (!s) return -1;
    if (!colon) {
        l = r = pf_port(s, strlen(s), 1);
    } else {
        l = colon == s ? 0 : pf_port(s, (size_t)(colon - s), 0);
        r = pf_port(colon + 1, strlen(colon + 1), 1);
    }
    if (l < 0 || r < 0) return -1;
    *local = (uint16_t)l;
    *remote = (uint16_t)r;
    return 0;
}

/* ---- the session ------------------------------------------------------------------- */

struct pf_session {
    struct kube_client *client;
    struct kube_config *cfg;
    const struct kube_pf_options *o;
    struct kube_pf_result *r;
    struct kube_pf_demux demux;
    struct lws_context *ctx;
    SSL_CTX *ssl;
    struct lws *wsi;
    struct kube_ws_reader *in;     /* the local socket */
    char *auth;
    char **imp;                    /* Impersonate-* header lines, or NULL */
    lws_sorted_usec_list_t stop_check, linger;
    int failed, established, finished;
    int local_eof;                 /* the local side sent EOF: lingering */
    int closing;                   /* we are ending it: no more reads or writes */
    char close_reason[128];
    char tls_verify[160];
};

static void fail(struct pf_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct pf_session *s, const char *fmt, ...) {
    if (s->ctx) lws_cancel_service(s->ctx);
    if (s->failed) return;
    s->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    errfmt_v(s->r->err, sizeof(s->r->err), fmt, ap);
    va_end(ap);
}

/* End the connection from our side: a polite close when lws is in the callback of this
 * connection (return -1 after it), else a kill at the next service round. */
static void end_soon(struct pf_session *s) {
    s->closing = 1;
    if (s->wsi) lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    if (s->ctx) lws_cancel_service(s->ctx);
}

/* Bytes from the pod: all of them to the local socket (blocking). */
static int to_local(void *ud, const unsigned char *p, size_t n) {
    struct pf_session *s = ud;
    while (n) {
        ssize_t w = send(s->o->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 1;      /* the local side went away: end quietly */
        p += w;
        n -= (size_t)w;
        s->r->bytes_from_pod += (uint64_t)w;
    }
    return 0;
}

static void on_linger(lws_sorted_usec_list_t *sul) {
    struct pf_session *s = lws_container_of(sul, struct pf_session, linger);
    end_soon(s);
}

static void on_stop_check(lws_sorted_usec_list_t *sul) {
    struct pf_session *s = lws_container_of(sul, struct pf_session, stop_check);
    if (s->finished) return;
    if (atomic_load(s->o->stop)) {
        end_soon(s);
        return;
    }
    lws_sul_schedule(s->ctx, 0, &s->stop_check, on_stop_check, (lws_usec_t)PF_STOP_CHECK_MS * LWS_US_PER_MS);
}

/* Send the oldest chunk read from the local socket; note EOF or a read error. */
static int send_local(struct pf_session *s, struct lws *wsi) {
    struct kube_ws_reader *rd = s->in;
    pthread_mutex_lock(&rd->mu);
    unsigned count = rd->count;
    int eof = rd->eof, err = rd->err;
    struct kube_ws_slot *sl = &rd->slot[rd->head];
    pthread_mutex_unlock(&rd->mu);

    if (count) {
        unsigned char *m = sl->buf + LWS_PRE;
        size_t n = sl->len + 1;
        m[0] = KUBE_PF_DATA;
        if (lws_write(wsi, m, n, LWS_WRITE_BINARY) < (int)n) {
            fail(s, "port-forward: the connection to the API server broke while sending");
            return -1;
        }
        s->r->bytes_to_pod += sl->len;
        pthread_mutex_lock(&rd->mu);
        rd->head = (rd->head + 1) % KUBE_WS_READER_SLOTS;
        rd->count--;
        int more = rd->count || rd->eof || rd->err;
        pthread_cond_signal(&rd->cv);
        pthread_mutex_unlock(&rd->mu);
        if (more) lws_callback_on_writable(wsi);
        return 0;
    }
    if (err) return -1;            /* the local side broke: end quietly */
    if (eof && !s->local_eof) {
        s->local_eof = 1;
        lws_sul_schedule(s->ctx, 0, &s->linger, on_linger, (lws_usec_t)PF_LINGER_MS * LWS_US_PER_MS);
    }
    return 0;
}

static int pf_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct lws_context *ctx = wsi ? lws_get_context(wsi) : NULL;
    struct pf_session *s = ctx ? lws_context_user(ctx) : NULL;
    if (!s) return 0;

    switch (reason) {
    case LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION:
        kube_ws_note_cert_error(user, len, s->tls_verify, sizeof(s->tls_verify));
        return 0;

    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
        unsigned char **p = in;
        return kube_ws_append_headers(wsi, s->auth, s->imp, p, *p + len) ? -1 : 0;
    }

    case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH: {
        char proto[64] = "";
        if (lws_hdr_copy(wsi, proto, sizeof(proto), WSI_TOKEN_PROTOCOL) <= 0 ||
            !kube_ws_protocol_offered(KUBE_PF_PROTOCOL, proto)) {
            fail(s, "port-forward: the server chose subprotocol \"%s\", which was not offered (%s)", proto,
                 KUBE_PF_PROTOCOL);
            return 1;
        }
        return 0;
    }

    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        s->established = 1;
        s->r->http_status = 101;
        kube_client_count(s->client, "GET", 101);
        if (kube_ws_reader_start(s->in, ctx) < 0) {
            fail(s, "port-forward: cannot start the reader thread");
            return -1;
        }
        return 0;

    case LWS_CALLBACK_CLIENT_RECEIVE: {
        if (s->closing) return 0;
        char why[160];
        int rc = kube_pf_demux_feed(&s->demux, in, len, lws_is_first_fragment(wsi), lws_is_final_fragment(wsi),
                                    why, sizeof(why));
        if (rc < 0) {
            fail(s, "port-forward: %s", why);
            lws_close_reason(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, NULL, 0);
            return -1;
        }
        if (rc) {                  /* the local side went away */
            s->closing = 1;
            lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
            return -1;
        }
        if (s->local_eof)          /* still talking: linger on */
            lws_sul_schedule(ctx, 0, &s->linger, on_linger, (lws_usec_t)PF_LINGER_MS * LWS_US_PER_MS);
        return 0;
    }

    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (s->closing || s->failed) return 0;
        if (send_local(s, wsi) < 0) {
            s->closing = 1;
            lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
            return -1;
        }
        return 0;

    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        /* The reader has something (or stop/fail woke the loop); as in exec.c, lws 4.1
         * passes a stand-in wsi, so the connection is s->wsi. */
        if (s->wsi && s->established && !s->finished && !s->closing && !s->failed && !s->local_eof &&
            kube_ws_reader_pending(s->in))
            lws_callback_on_writable(s->wsi);
        return 0;

    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        kube_ws_note_close(in, len, s->close_reason, sizeof(s->close_reason));
        return 0;

    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        char msg[sizeof(s->r->err)];
        kube_ws_connection_error(wsi, in, len, "port-forward", s->tls_verify, s->cfg, NULL, &s->r->http_status, msg,
                                 sizeof(msg));
        fail(s, "%s", msg);
        return kube_ws_note_gone(wsi, reason, &s->wsi, &s->finished);
    }

    case LWS_CALLBACK_CLIENT_CLOSED:
    case LWS_CALLBACK_WSI_DESTROY:
        return kube_ws_note_gone(wsi, reason, &s->wsi, &s->finished);

    default:
        return 0;
    }
}

static const struct lws_protocols pf_protocols[] = {
    {PF_LOCAL_PROTOCOL, pf_callback, 0, PF_RX_BUFFER, 0, NULL, KUBE_WS_CHUNK + 16},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* One attempt of kube_portforward. */
static int pf_once(struct kube_client *c, const struct kube_pf_options *o, struct kube_pf_result *r, int may_retry) {
    static const atomic_int never = 0;
    struct pf_session *s = NULL;
    struct kube_auth auth = {0};
    int oom = 0;
    struct kube_ws_endpoint ep;
    struct kube_pf_options opt;
    char path[PF_MAX_PATH], full[PF_MAX_PATH + 256];
    int rc = -1;

    memset(r, 0, sizeof(*r));
    if (!c || !o || !o->namespace_ || !o->namespace_[0] || !o->pod || !o->pod[0] || !o->port || o->fd < 0) {
        snprintf(r->err, sizeof(r->err), "port-forward: namespace, pod, port and a local connection are required");
        return -1;
    }
    opt = *o;
    if (!opt.stop) opt.stop = &never;
    struct kube_config *cfg = kube_client_config(c);
    if (kube_ws_parse_server(cfg->server, &ep, "port-forward", r->err, sizeof(r->err)) < 0) return -1;
    if (kube_pf_path(o->namespace_, o->pod, o->port, path, sizeof(path)) < 0 ||
        snprintf(full, sizeof(full), "%.*s%s", (int)ep.prefix_len, ep.prefix, path) >= (int)sizeof(full)) {
        snprintf(r->err, sizeof(r->err), "port-forward: namespace or pod name too long");
        return -1;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        snprintf(r->err, sizeof(r->err), "port-forward: out of memory");
        return -1;
    }
    s->client = c;
    s->cfg = cfg;
    s->o = &opt;
    s->r = r;
    kube_pf_demux_init(&s->demux, o->port, to_local, s);
    if (kube_config_auth(cfg, &auth, r->err, sizeof(r->err)) < 0) {
        s->failed = 1;
        goto out;
    }
    s->auth = kube_ws_auth_value(cfg, &auth);
    s->imp = kube_config_impersonation_headers(cfg, &oom);
    if (oom) {
        fail(s, "port-forward: out of memory");
        goto out;
    }
    if (!(s->in = kube_ws_reader_new(o->fd))) {
        fail(s, "port-forward: cannot set up the reader: %s", strerror(errno));
        goto out;
    }
    if (ep.tls && !(s->ssl = kube_ws_tls_new(cfg, &auth, "port-forward", r->err, sizeof(r->err)))) {
        s->failed = 1;
        goto out;
    }
    if (!(s->ctx = kube_ws_context_new(pf_protocols, s, s->ssl, kube_client_proxy(c), "port-forward", r->err,
                                       sizeof(r->err)))) {
        s->failed = 1;
        goto out;
    }
    lws_sul_schedule(s->ctx, 0, &s->stop_check, on_stop_check, (lws_usec_t)PF_STOP_CHECK_MS * LWS_US_PER_MS);
    if (!kube_ws_connect(s->ctx, &ep, cfg, full, KUBE_PF_PROTOCOL, PF_LOCAL_PROTOCOL, &s->wsi)) {
        fail(s, "port-forward: cannot connect to %s", cfg->server);
        s->finished = 1;
        s->wsi = NULL;
    }
    while (!s->finished)
        if (lws_service(s->ctx, 0) < 0) break;
    kube_ws_reader_stop(s->in);
    lws_sul_cancel(&s->stop_check);
    lws_sul_cancel(&s->linger);
    if (!s->established) kube_client_count(c, "GET", r->http_status);

    if (s->demux.error_len) {
        /* The pod's side failed: its words outrank transport noise. */
        s->failed = 0;
        fail(s, "port-forward: %s%s", s->demux.error, s->demux.error_truncated ? " (cut)" : "");
    } else if (!s->failed && !s->established) {
        fail(s, "port-forward: connection failed%s", s->close_reason);
    }
    rc = s->failed ? -1 : 0;
    int retry_401 = may_retry && r->http_status == 401 && (cfg->exec_plugin || cfg->token_file);
    if (rc < 0 && !s->established && r->http_status >= 400 && !retry_401) {
        lws_context_destroy(s->ctx);
        s->ctx = NULL;
        kube_ws_refusal_message(c, r->http_status, path, "port-forward",
                                "port-forward needs get and create on pods/portforward", r->err, sizeof(r->err));
    }
out:
    if (s) {
        kube_ws_reader_free(s->in);
        if (s->ctx) lws_context_destroy(s->ctx);
        SSL_CTX_free(s->ssl);
        kube_ws_free_secret(s->auth);
        kube_config_free_lines(s->imp);
        free(s);
    }
    kube_auth_free(&auth);
    if (rc < 0 && !r->err[0]) snprintf(r->err, sizeof(r->err), "port-forward: failed");
    return rc;
}

int kube_portforward(struct kube_client *c, const struct kube_pf_options *o, struct kube_pf_result *r) {
    int rc = pf_once(c, o, r, 1);
    /* Refused with 401 before any byte moved: fresh credentials may cure it (see kube_exec). */
    if (rc < 0 && r->http_status == 401 && c && kube_client_refresh_credentials(c, 401, 0)) rc = pf_once(c, o, r, 0);
    return rc;
}
