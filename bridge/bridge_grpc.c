/* bridge/bridge_grpc.c — the grpc mode's client for yao.Yao: one HTTP/2 connection
 * (nghttp2 in memory mode over bridge_conn: plaintext h2c with prior knowledge, or TLS with
 * ALPN h2), unary calls as streams, the metadata every call carries, and the credentials,
 * which the server may rotate through response headers.
 *
 * Owns: connecting lazily (on the first call, and again after the connection is lost)
 * without blocking on the network — calls started meanwhile wait, each within its own
 * deadline, and are sent once the connection is up —
 * the request headers, per-call deadlines (grpc-timeout for the server, a local timer that
 * cancels the stream), collecting response DATA and grpc-status/grpc-message, and turning
 * every way a call can end into one outcome on the call. Calls in flight when the
 * connection dies all end with BGRPC_CONN; nothing is retried (a tool call may not be
 * idempotent). Does not own: what the messages mean (bridge_mcp.c) or stdio (bridge_serve.c). */
#include "bridge.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#define STREAM_WINDOW (8 << 20)   /* per-call receive window: a large result flows freely */
#define CONN_WINDOW (32 << 20)
#define OUT_LOW (64 * 1024)       /* ask nghttp2 for more frames below this much queued */
#define READ_CHUNK (64 * 1024)

/* Printable ASCII only: what a gRPC ASCII metadata value may hold, and all a token is. */
static int header_value_ok(const char *s, size_t n) {
    size_t i;

    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return 0;
    return 1;
}

/* Finish a call once (later outcomes are dropped): detach it from its stream, move it
 * from the active to the end of the done list. */
static void call_finish(struct bgrpc *g, struct bgrpc_call *c, enum bgrpc_outcome outcome,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void call_finish(struct bgrpc *g, struct bgrpc_call *c, enum bgrpc_outcome outcome,
                        const char *fmt, ...) {
    struct bgrpc_call **pp;
    va_list ap;

    if (c->outcome != BGRPC_PENDING) return;
    c->outcome = outcome;
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(c->error, sizeof c->error, fmt, ap);
        va_end(ap);
    }
    if (g->session && c->stream_id > 0)
        nghttp2_session_set_stream_user_data(g->session, c->stream_id, NULL);
    for (pp = &g->active; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    c->next = NULL;
    for (pp = &g->done; *pp; pp = &(*pp)->next) {}
    *pp = c;
}

/* Drop the connection; every call in flight ends with BGRPC_CONN and why. */
static void conn_drop(struct bgrpc *g, const char *why) {
    while (g->active)
        call_finish(g, g->active, BGRPC_CONN, "connection to %s lost: %s", g->conn.label, why);
    g->dialing = 0;
    if (g->session) nghttp2_session_del(g->session);
    g->session = NULL;
    bridge_conn_close(&g->conn);
    bridge_dyn_free(&g->out);
}

/* Replace a credential with a rotated one from the server, wiping the old. */
static void rotate(char **slot, const uint8_t *v, size_t n) {
    char *fresh;

    if (n == 0 || n > BRIDGE_TOKEN_MAX || !header_value_ok((const char *)v, n)) return;
    fresh = malloc(n + 1);
    if (!fresh) return; /* keep the old one: the next call may still succeed with it */
    memcpy(fresh, v, n);
    fresh[n] = '\0';
    if (*slot) bridge_auth_token_free(*slot, strlen(*slot));
    *slot = fresh;
}

/* nghttp2: one response header or trailer. */
static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user) {
    struct bgrpc *g = user;
    struct bgrpc_call *c = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
    char num[16];

    if (!c) return 0;
#define IS(lit) (namelen == sizeof(lit) - 1 && !memcmp(name, lit, namelen))
    if (IS(":status") || IS("grpc-status")) {
        int v = 0;
        size_t i;
        if (valuelen == 0 || valuelen >= sizeof num) return 0;
        for (i = 0; i < valuelen; i++) {
            if (value[i] < '0' || value[i] > '9') return 0;
            v = v * 10 + (value[i] - '0');
        }
        if (name[0] == ':') c->http_status = v;
        else c->grpc_status = v;
    } else if (IS("grpc-message")) {
        free(c->grpc_message);
        c->grpc_message = malloc(valuelen + 1);
        if (c->grpc_message) {
            memcpy(c->grpc_message, value, valuelen);
            bgrpc_percent_decode(c->grpc_message, valuelen);
        }
    } else if (IS("x-access-token")) {
        rotate(&g->token, value, valuelen);
        g->rotations++;
    } else if (IS("x-refresh-token")) {
        rotate(&g->refresh, value, valuelen);
    }
#undef IS
    return 0;
}

/* nghttp2: response body bytes (length-prefixed messages), bounded. */
static int on_data(nghttp2_session *s, uint8_t flags, int32_t stream_id, const uint8_t *data,
                   size_t len, void *user) {
    struct bgrpc *g = user;
    struct bgrpc_call *c = nghttp2_session_get_stream_user_data(s, stream_id);

    if (!c) return 0;
    if (bridge_dyn_add(&c->resp, data, len) < 0) {
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
        c->grpc_status = 8; /* RESOURCE_EXHAUSTED, as grpc-go reports its own limit */
        free(c->grpc_message);
        c->grpc_message = NULL;
        call_finish(g, c, BGRPC_STATUS, "the response is larger than %u bytes", BRIDGE_MSG_MAX);
    }
    return 0;
}

/* Check the response body is exactly one uncompressed message; leave it in resp. */
static const char *check_message(struct bgrpc_call *c) {
    const unsigned char *p = BRIDGE_DYN_PTR(&c->resp);
    size_t n = BRIDGE_DYN_LEN(&c->resp), len;

    if (n < 5) return "the response has no message";
    if (p[0] != 0) return "the response message is compressed (not requested)";
    len = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
    if (len != n - 5) return "the response is not one complete message";
    return NULL;
}

/* nghttp2: the stream ended (trailers seen, reset, or the connection went away). */
static int on_stream_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user) {
    struct bgrpc *g = user;
    struct bgrpc_call *c = nghttp2_session_get_stream_user_data(s, stream_id);
    const char *bad;

    if (!c) return 0;
    if (c->grpc_status == 0) {
        if ((bad = check_message(c))) {
            c->grpc_status = 13; /* INTERNAL */
            call_finish(g, c, BGRPC_STATUS, "%s", bad);
        } else {
            call_finish(g, c, BGRPC_OK, NULL);
        }
    } else if (c->grpc_status > 0) {
        call_finish(g, c, BGRPC_STATUS, NULL);
    } else if (error_code != NGHTTP2_NO_ERROR && bridge_now_ms() >= c->deadline_ms) {
        /* the server's copy of the deadline fired first (grpc-go resets with CANCEL) */
        call_finish(g, c, BGRPC_DEADLINE, "no answer within %d ms (deadline exceeded)", c->timeout_ms);
    } else if (error_code == NGHTTP2_REFUSED_STREAM) {
        call_finish(g, c, BGRPC_CONN, "%s refused the call (the server is shutting down?)",
                    g->conn.label);
    } else if (error_code != NGHTTP2_NO_ERROR) {
        call_finish(g, c, BGRPC_CONN, "%s reset the call (HTTP/2 %s)", g->conn.label,
                    nghttp2_http2_strerror(error_code));
    } else if (c->http_status != 200) {
        c->grpc_status = bgrpc_code_from_http(c->http_status);
        call_finish(g, c, BGRPC_STATUS, "HTTP status %d and no grpc-status (not a gRPC server?)",
                    c->http_status);
    } else {
        c->grpc_status = 13;
        call_finish(g, c, BGRPC_STATUS, "the response ended without a grpc-status");
    }
    return 0;
}

/* nghttp2: the request body: the length-prefixed message, then end of stream. */
static ssize_t body_read(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user) {
    struct bgrpc_call *c = nghttp2_session_get_stream_user_data(s, stream_id);
    size_t n;

    if (!c) { /* finished (deadline) while its body was queued: send nothing more */
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
    }
    n = c->frame_len - c->frame_off;
    if (n > length) n = length;
    memcpy(buf, c->frame + c->frame_off, n);
    c->frame_off += n;
    if (c->frame_off == c->frame_len) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* Queue nghttp2's frames and write what the socket takes. 0, or -1 with the connection
 * dropped. Also drops a connection the server has finished with (GOAWAY, nothing left). */
static int flush(struct bgrpc *g) {
    struct bridge_err e = { 0, "" };

    for (;;) {
        while (BRIDGE_DYN_LEN(&g->out) < OUT_LOW) {
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(g->session, &data);
            if (n < 0) {
                conn_drop(g, nghttp2_strerror((int)n));
                return -1;
            }
            if (n == 0) break;
            if (bridge_dyn_add(&g->out, data, (size_t)n) < 0) {
                conn_drop(g, "out of memory");
                return -1;
            }
        }
        if (BRIDGE_DYN_LEN(&g->out) == 0) break;
        ssize_t w = bridge_conn_write(&g->conn, BRIDGE_DYN_PTR(&g->out), BRIDGE_DYN_LEN(&g->out), &e);
        if (w == BRIDGE_IO_AGAIN) return 0;
        if (w < 0) {
            conn_drop(g, e.msg);
            return -1;
        }
        bridge_dyn_consume(&g->out, (size_t)w);
    }
    if (!nghttp2_session_want_read(g->session) && !nghttp2_session_want_write(g->session)) {
        conn_drop(g, "the server closed the connection (GOAWAY)");
        return -1;
    }
    return 0;
}

/* The connection is up: set up the HTTP/2 session (SETTINGS: no push, large windows).
 * 0, or -1 (recorded) with the connection closed. */
static int session_setup(struct bgrpc *g, struct bridge_err *err) {
    nghttp2_session_callbacks *cbs;
    nghttp2_settings_entry iv[] = {
        { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
        { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW },
    };
    int rv;

    bridge_dyn_init(&g->out, BRIDGE_MSG_MAX);
    if (nghttp2_session_callbacks_new(&cbs) != 0) goto nomem;
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    rv = nghttp2_session_client_new((nghttp2_session **)&g->session, cbs, g);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) goto nomem;
    if (nghttp2_submit_settings(g->session, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0 ||
        nghttp2_session_set_local_window_size(g->session, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW) != 0)
        goto nomem;
    g->connects++;
    return 0;
nomem:
    bridge_err_set(err, BRIDGE_EXIT_IO, "HTTP/2 setup for %s: out of memory", g->conn.label);
    if (g->session) nghttp2_session_del(g->session);
    g->session = NULL;
    bridge_conn_close(&g->conn);
    return -1;
}

/* A dial ended badly: every call waiting for it ends with the reason. */
static void dial_failed(struct bgrpc *g, const char *why) {
    while (g->active) call_finish(g, g->active, BGRPC_CONN, "%s", why);
    g->dialing = 0;
    bridge_conn_close(&g->conn);
}

static void submit(struct bgrpc *g, struct bgrpc_call *c);

/* The dial made progress (r from bridge_conn_dial_*): on success, the session and every
 * waiting call, oldest first; on failure, every waiting call fails. */
static void dial_result(struct bgrpc *g, int r, struct bridge_err *err) {
    if (r == 1) return;
    g->dialing = 0;
    if (r < 0 || session_setup(g, err) < 0) {
        dial_failed(g, err->msg);
        return;
    }
    for (;;) { /* the active list is newest first: take the last one not yet sent */
        struct bgrpc_call *c, *oldest = NULL;
        for (c = g->active; c; c = c->next)
            if (c->stream_id == 0 && c->outcome == BGRPC_PENDING) oldest = c;
        if (!oldest || !g->session) break;
        submit(g, oldest);
    }
}

#define NV(n, v, flags) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), (flags) }

/* Start a call; see bridge.h. */
void bgrpc_start(struct bgrpc *g, struct bgrpc_call *c) {
    const struct bridge_config *cfg = g->cfg;
    struct bridge_err err = { 0, "" };

    c->grpc_status = -1;
    c->outcome = BGRPC_PENDING;
    c->start_ms = bridge_now_ms();
    if (c->timeout_ms <= 0 || c->timeout_ms > cfg->timeout_ms) c->timeout_ms = cfg->timeout_ms;
    c->deadline_ms = c->start_ms + c->timeout_ms;
    bridge_dyn_init(&c->resp, BRIDGE_MSG_MAX + 5);
    c->next = g->active; /* active until finished, so every exit below can finish it */
    g->active = c;

    if (g->session && !nghttp2_session_check_request_allowed(g->session))
        conn_drop(g, "the server is closing the connection (GOAWAY)");
    if (g->session) {
        submit(g, c);
    } else if (!g->dialing) {
        /* the call waits in the active list (stream 0) until the connection is up */
        int r = bridge_conn_dial_start(&g->conn, cfg, &err);
        g->dialing = r == 1;
        dial_result(g, r, &err);
    }
}

/* Send a call on the session: its headers and the length-prefixed message. */
static void submit(struct bgrpc *g, struct bgrpc_call *c) {
    const struct bridge_config *cfg = g->cfg;
    nghttp2_data_provider prd;
    char timeout[24], *auth = NULL;
    nghttp2_nv nva[12];
    size_t nv = 0, blen = BRIDGE_DYN_LEN(&c->req.body);
    int32_t id;

    c->frame_len = blen + 5;
    c->frame = malloc(c->frame_len);
    auth = malloc(strlen(g->token) + sizeof "Bearer ");
    if (!c->frame || !auth) {
        free(auth);
        call_finish(g, c, BGRPC_CONN, "out of memory");
        return;
    }
    c->frame[0] = 0;
    c->frame[1] = (unsigned char)(blen >> 24);
    c->frame[2] = (unsigned char)(blen >> 16);
    c->frame[3] = (unsigned char)(blen >> 8);
    c->frame[4] = (unsigned char)blen;
    if (blen) memcpy(c->frame + 5, BRIDGE_DYN_PTR(&c->req.body), blen);
    strcpy(auth, "Bearer ");
    strcat(auth, g->token);
    /* what is left of the call's time: it may have waited for the connection */
    bgrpc_timeout_header(timeout, sizeof timeout, c->deadline_ms - bridge_now_ms());

    nghttp2_nv base[] = {
        NV(":method", "POST", NGHTTP2_NV_FLAG_NONE),
        NV(":scheme", cfg->tls ? "https" : "http", NGHTTP2_NV_FLAG_NONE),
        NV(":path", mcp_rpc_path(c->req.rpc), NGHTTP2_NV_FLAG_NONE),
        NV(":authority", g->authority, NGHTTP2_NV_FLAG_NONE),
        NV("te", "trailers", NGHTTP2_NV_FLAG_NONE),
        NV("content-type", "application/grpc", NGHTTP2_NV_FLAG_NONE),
        NV("user-agent", "yao-bridge/" YAO_VERSION, NGHTTP2_NV_FLAG_NONE),
        NV("grpc-timeout", timeout, NGHTTP2_NV_FLAG_NONE),
        /* credentials never enter the HPACK dynamic table */
        NV("authorization", auth, NGHTTP2_NV_FLAG_NO_INDEX),
    };
    memcpy(nva, base, sizeof base);
    nv = sizeof base / sizeof base[0];
    if (g->refresh) nva[nv++] = (nghttp2_nv)NV("x-refresh-token", g->refresh, NGHTTP2_NV_FLAG_NO_INDEX);
    nva[nv++] = (nghttp2_nv)NV("x-sandbox-id", cfg->sandbox_id, NGHTTP2_NV_FLAG_NONE);
    if (cfg->upstream) nva[nv++] = (nghttp2_nv)NV("x-grpc-upstream", cfg->upstream, NGHTTP2_NV_FLAG_NONE);

    memset(&prd, 0, sizeof prd);
    prd.read_callback = body_read;
    id = nghttp2_submit_request(g->session, NULL, nva, nv, &prd, c); /* copies the headers */
    bridge_auth_token_free(auth, strlen(auth));
    if (id < 0) {
        call_finish(g, c, BGRPC_CONN, "HTTP/2 request on %s: %s", g->conn.label,
                    nghttp2_strerror(id));
        return;
    }
    c->stream_id = id;
    flush(g);
}

/* The fd to poll: the connection's, or the one being dialed. */
int bgrpc_fd(const struct bgrpc *g) {
    return g->session || g->dialing ? g->conn.fd : -1;
}

/* Poll events: read always (to notice a dying server even while idle), write when
 * frames are queued. */
short bgrpc_events(struct bgrpc *g) {
    short ev;

    if (g->dialing) return g->conn.dial_want;
    if (!g->session) return 0;
    ev = g->conn.rd_want;
    if (BRIDGE_DYN_LEN(&g->out) || nghttp2_session_want_write(g->session)) ev |= g->conn.wr_want;
    return ev;
}

/* Read everything available, feed nghttp2, write what it answers. */
void bgrpc_io(struct bgrpc *g, short revents) {
    unsigned char buf[READ_CHUNK];
    struct bridge_err e = { 0, "" };

    if (g->dialing && revents) {
        dial_result(g, bridge_conn_dial_step(&g->conn, g->cfg, &e), &e);
        if (g->session) flush(g);
        return;
    }
    if (!g->session || !revents) return;
    for (;;) {
        ssize_t n = bridge_conn_read(&g->conn, buf, sizeof buf, &e);
        if (n == BRIDGE_IO_AGAIN) break;
        if (n == 0) {
            conn_drop(g, "the server closed the connection");
            return;
        }
        if (n < 0) {
            conn_drop(g, e.msg);
            return;
        }
        n = nghttp2_session_mem_recv(g->session, buf, (size_t)n);
        if (n < 0) {
            conn_drop(g, nghttp2_strerror((int)n));
            return;
        }
    }
    flush(g);
}

/* Cancel calls past their deadline (RST_STREAM CANCEL); the nearest deadline left. */
int64_t bgrpc_expire(struct bgrpc *g, int64_t now) {
    struct bgrpc_call *c = g->active, *next;
    int64_t nearest = -1;
    int cancelled = 0;

    for (; c; c = next) {
        next = c->next;
        if (now >= c->deadline_ms && g->dialing) {
            call_finish(g, c, BGRPC_DEADLINE, "no connection to %s within %d ms (deadline exceeded)",
                        g->conn.label, c->timeout_ms);
        } else if (now >= c->deadline_ms) {
            if (g->session && c->stream_id > 0) {
                nghttp2_submit_rst_stream(g->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
                cancelled = 1;
            }
            call_finish(g, c, BGRPC_DEADLINE, "no answer within %d ms (deadline exceeded)", c->timeout_ms);
        } else if (nearest < 0 || c->deadline_ms < nearest) {
            nearest = c->deadline_ms;
        }
    }
    if (cancelled && g->session) flush(g);
    if (g->dialing && !g->active) { /* nobody waits for it any more */
        g->dialing = 0;
        bridge_conn_close(&g->conn);
    }
    return nearest;
}

struct bgrpc_call *bgrpc_take_done(struct bgrpc *g) {
    struct bgrpc_call *c = g->done;

    if (c) {
        g->done = c->next;
        c->next = NULL;
    }
    return c;
}

int bgrpc_active(const struct bgrpc *g) {
    const struct bgrpc_call *c;
    int n = 0;

    for (c = g->active; c; c = c->next) n++;
    return n;
}

void bgrpc_call_free(struct bgrpc_call *c) {
    if (!c) return;
    mcp_req_free(&c->req);
    free(c->frame);
    bridge_dyn_free(&c->resp);
    free(c->grpc_message);
    free(c);
}

/* Set up; see bridge.h. */
int bgrpc_init(struct bgrpc *g, struct bridge_config *cfg, struct bridge_err *err) {
    memset(g, 0, sizeof *g);
    g->cfg = cfg;
    g->conn.fd = -1;
    bridge_dyn_init(&g->out, BRIDGE_MSG_MAX);
    snprintf(g->authority, sizeof g->authority, "%s", cfg->addr);
    if (!header_value_ok(cfg->token, cfg->token_len) ||
        (cfg->refresh_token && !header_value_ok(cfg->refresh_token, strlen(cfg->refresh_token)))) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_TOKEN and YAO_REFRESH_TOKEN may hold printable "
                       "ASCII only (they travel as gRPC metadata)");
        return -1;
    }
    if (cfg->refresh_token && !(g->refresh = strdup(cfg->refresh_token))) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "out of memory");
        return -1;
    }
    g->token = cfg->token;
    cfg->token = NULL;
    cfg->token_len = 0;
    return 0;
}

/* Close and free everything. */
void bgrpc_free(struct bgrpc *g) {
    struct bgrpc_call *c;

    if (g->session) nghttp2_session_del(g->session);
    g->session = NULL;
    bridge_conn_close(&g->conn);
    bridge_dyn_free(&g->out);
    while ((c = g->active)) {
        g->active = c->next;
        bgrpc_call_free(c);
    }
    while ((c = g->done)) {
        g->done = c->next;
        bgrpc_call_free(c);
    }
    if (g->token) bridge_auth_token_free(g->token, strlen(g->token));
    if (g->refresh) bridge_auth_token_free(g->refresh, strlen(g->refresh));
    g->token = g->refresh = NULL;
}
