/* runtime/httpd.c — the probe/metrics HTTP server (see httpd.h) on libwebsockets' HTTP/1.1
 * server role. One service thread runs an event loop: a connection is only ever waited on,
 * never blocked on, so a client that sends or reads one byte a second holds its own slot
 * and nothing else. Every connection has a deadline to deliver its request head (lws'
 * header-buffer idle timeout, 1 s) and another to take the whole answer (HTTPD_DEADLINE_MS
 * from the end of the head, enforced by a sweep every 100 ms), neither renewed by
 * progress; idle keep-alive connections are closed after a second too, and at most HTTPD_MAX_CONNS are open at once (the rest wait
 * in the kernel's listen queue until a slot frees, within one deadline). The handler runs
 * on the service thread and must be quick (it renders from memory). */
#include "runtime/httpd.h"

#include <libwebsockets.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errfmt.h"

#define HTTPD_DEADLINE_MS 1000     /* accept → last byte sent, per request */
#define HTTPD_MAX_CONNS 64         /* open connections at once */
#define HTTPD_BODY_MAX (16u << 20) /* the largest answer (a /metrics page) */
#define HTTPD_CHUNK 16384          /* bytes per write */

struct conn;

struct httpd {
    struct lws_context *ctx;
    lws_sorted_usec_list_t sweep;  /* every 100 ms: cut answers past their deadline */
    struct conn *answering;        /* connections sending an answer (list) */
    struct lws_vhost *vh;
    int port;
    httpd_handler_fn fn;
    void *ud;
    pthread_t thread;
    atomic_int stop;               /* set by httpd_stop (seq_cst; it publishes nothing) */
};

/* Per connection (lws allocates and zeroes it once the request head is in): the answer
 * being sent, and its deadline while it is on the answering list. */
struct conn {
    struct lws *wsi;
    struct dynbuf body;
    size_t sent;
    int head_only, body_ready;
    int64_t deadline_ms;
    struct conn *next, **pprev;    /* answering list (pprev NULL when not on it) */
};

/* Put c on the answering list with a fresh deadline. */
static void answering_add(struct httpd *h, struct conn *c, struct lws *wsi) {
    c->wsi = wsi;
    c->deadline_ms = clock_mono_ms() + HTTPD_DEADLINE_MS;
    if (c->pprev) return;
    c->next = h->answering;
    if (c->next) c->next->pprev = &c->next;
    c->pprev = &h->answering;
    h->answering = c;
}

/* Take c off the answering list (no-op when it is not on it). */
static void answering_remove(struct conn *c) {
    if (!c->pprev) return;
    *c->pprev = c->next;
    if (c->next) c->next->pprev = c->pprev;
    c->next = NULL;
    c->pprev = NULL;
}

/* Sweep (service thread): a connection still on the answering list at its deadline is
 * closed with a reset. (lws' own timeouts do not fire while it holds unsent output for a
 * client that stopped reading.) */
static void sweep(lws_sorted_usec_list_t *sul) {
    struct httpd *h = (struct httpd *)((char *)sul - offsetof(struct httpd, sweep));
    int64_t now = clock_mono_ms();
    for (struct conn *c = h->answering; c;) {
        if (now < c->deadline_ms) { c = c->next; continue; }
        /* Reset rather than flush: what the client did not read is dropped. Closing takes
         * c off the list (LWS_CALLBACK_CLOSED_HTTP), so start over after each. */
        struct linger lg = {1, 0};
        setsockopt(lws_get_socket_fd(c->wsi), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        struct lws *wsi = c->wsi;
        answering_remove(c);
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
        c = h->answering;
    }
    lws_sul_schedule(h->ctx, 0, &h->sweep, sweep, 100 * LWS_US_PER_MS);
}

/* lws logs to stderr by default; keep it quiet unless YAO_LWS_LOG asks (a level mask). */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static void log_setup(void) {
    const char *v = getenv("YAO_LWS_LOG");
    lws_set_log_level(v ? atoi(v) : 0, NULL);
}

/* Route a request and send the head; the body follows on writable callbacks. */
static int answer(struct httpd *h, struct lws *wsi, struct conn *c, const char *uri) {
    uint8_t buf[LWS_PRE + 512], *start = &buf[LWS_PRE], *p = start, *end = &buf[sizeof(buf) - 1];
    const char *ctype = "text/plain; charset=utf-8";
    int status;
    char path[1024];

    dynbuf_init(&c->body, HTTPD_BODY_MAX);
    c->body_ready = 1;
    answering_add(h, c, wsi);
    c->head_only = lws_hdr_total_length(wsi, WSI_TOKEN_HEAD_URI) > 0;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) <= 0 && !c->head_only) {
        status = 405;
        dynbuf_append_str(&c->body, "method not allowed\n");
    } else {
        snprintf(path, sizeof(path), "%s", uri ? uri : "/");
        char *q = strchr(path, '?');
        if (q) *q = 0;
        status = h->fn(h->ud, path, &c->body, &ctype);
    }
    if (lws_add_http_common_headers(wsi, (unsigned)status, ctype, (lws_filepos_t)c->body.len, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

/* Send the next piece of the body; finish the transaction after the last. */
static int send_body(struct lws *wsi, struct conn *c) {
    uint8_t buf[LWS_PRE + HTTPD_CHUNK];
    size_t left = c->head_only ? 0 : c->body.len - c->sent;
    size_t n = left > HTTPD_CHUNK ? HTTPD_CHUNK : left;
    int last = n == left;
    if (n) memcpy(buf + LWS_PRE, c->body.data + c->sent, n);
    if (lws_write(wsi, buf + LWS_PRE, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
        return -1;
    c->sent += n;
    if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    dynbuf_free(&c->body);
    c->body_ready = 0;
    c->sent = 0;
    /* The connection stays on the answering list: lws may still hold part of the answer
     * for a client that does not read (it then never closes by itself), and an idle
     * keep-alive connection is cut at the same deadline. A next request renews it. */
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* lws protocol callback for the probe server. */
static int on_http(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct httpd *h = lws_context_user(lws_get_context(wsi));
    struct conn *c = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        if (!c) return -1;
        return answer(h, wsi, c, in) < 0 ? -1 : 0;
    case LWS_CALLBACK_HTTP_BODY:
        return -1;                     /* probes have no body: refuse uploads */
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (!c || !c->body_ready) return 0;
        return send_body(wsi, c);
    case LWS_CALLBACK_CLOSED_HTTP:
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        if (c) answering_remove(c);
        if (c && c->body_ready) {
            dynbuf_free(&c->body);
            c->body_ready = 0;
        }
        break;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols httpd_protocols[] = {
    {"http", on_http, sizeof(struct conn), 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* The service thread. */
static void *run(void *arg) {
    struct httpd *h = arg;
    while (!atomic_load(&h->stop))
        if (lws_service(h->ctx, 0) < 0) break;
    return NULL;
}

struct httpd *httpd_start(const char *addr, httpd_handler_fn fn, void *ud, char *err, size_t errlen) {
    char host[256] = "", port[16] = "";
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1] || (size_t)(colon - addr) >= sizeof(host) || strlen(colon + 1) >= sizeof(port)) {
        errfmt(err, errlen, "metrics address \"%s\" is not host:port", addr);
        return NULL;
    }
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    snprintf(port, sizeof(port), "%s", colon + 1);
    if (host[0] == '[') { /* [::1] */
        memmove(host, host + 1, strlen(host));
        char *rb = strchr(host, ']');
        if (rb) *rb = 0;
    }
    char *endp;
    long portnum = strtol(port, &endp, 10);
    if (*endp || portnum < 0 || portnum > 65535) {
        errfmt(err, errlen, "metrics address \"%s\": bad port", addr);
        return NULL;
    }
    pthread_once(&log_once, log_setup);
    struct httpd *h = calloc(1, sizeof(*h));
    if (!h) { errfmt_oom(err, errlen); return NULL; }
    h->fn = fn;
    h->ud = ud;

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
    info.user = h;
    info.fd_limit_per_thread = HTTPD_MAX_CONNS + 8;  /* + the listener and lws' own pipes */
    if (!(h->ctx = lws_create_context(&info))) {
        errfmt(err, errlen, "metrics server: could not create the HTTP context");
        free(h);
        return NULL;
    }
    memset(&info, 0, sizeof(info));
    info.port = (int)portnum;
    info.protocols = httpd_protocols;
    info.vhost_name = "probes";
    /* (all vhost-level in lws 4.1) */
    info.keepalive_timeout = 1;
    info.timeout_secs = 1;
    info.timeout_secs_ah_idle = 1;   /* a header buffer held without a complete request */
    info.max_http_header_pool = HTTPD_MAX_CONNS;
    /* An IPv4 host (or a name) binds IPv4 only; "" or an IPv6 literal binds IPv6 (dual
     * stack) — unless the kernel has no IPv6 (some pods), where "" binds IPv4. */
    if (host[0] && !strchr(host, ':')) info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    if (!host[0]) {
        int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe < 0) info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
        else close(probe);
    }
    info.iface = host[0] ? host : NULL;
    if (!(h->vh = lws_create_vhost(h->ctx, &info))) {
        errfmt(err, errlen, "metrics address \"%s\": cannot listen there", addr);
        lws_context_destroy(h->ctx);
        free(h);
        return NULL;
    }
    h->port = lws_get_vhost_listen_port(h->vh);
    lws_sul_schedule(h->ctx, 0, &h->sweep, sweep, 100 * LWS_US_PER_MS);
    if (pthread_create(&h->thread, NULL, run, h) != 0) {
        lws_context_destroy(h->ctx);
        free(h);
        errfmt(err, errlen, "could not start the metrics thread");
        return NULL;
    }
    return h;
}

int httpd_port(struct httpd *h) { return h->port; }

void httpd_stop(struct httpd *h) {
    if (!h) return;
    atomic_store(&h->stop, 1);
    lws_cancel_service(h->ctx);
    pthread_join(h->thread, NULL);
    lws_context_destroy(h->ctx);
    free(h);
}
