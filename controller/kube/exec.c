/* kube/exec.c — commands in pods over the API server's exec WebSocket (see exec.h).
 *
 * Owns: the request URL (one command= per argv element), the session (one lws_context per
 * call, so sessions in different threads share nothing), TLS and credentials from the
 * client's kubeconfig (in memory, through OpenSSL), the WebSocket upgrade and framing,
 * subprotocol negotiation (v5.channel.k8s.io, v4.channel.k8s.io), stdin streaming with
 * the v5 close signal (and the stdin reader thread of use_stdin_fd), keepalive pings, and
 * the deadline. The channel protocol it drives — demultiplexer, the status channel's
 * verdict, the resize message — is pure and lives in kube/execproto.c.
 * Does not own: retries (a command is not idempotent; the caller decides), what the
 * output means, or the local terminal (raw mode, SIGWINCH): the caller reports the size
 * through term_size and a resize flag, the session sends it on the resize channel.
 *
 * Transport: libwebsockets 4.1 parses every received WebSocket byte through its client
 * state machine, which cost twice kubectl's client CPU per byte of output
 * (docs/benchmarks.md, "Exec throughput"). So lws only connects a raw TCP client
 * (method "RAW": resolve, connect with its timeout, the event loop, timers,
 * lws_cancel_service) and the rest is ours: TLS with the session's SSL_CTX over memory
 * BIOs (SNI, hostname or IP check against tls-server-name else the host, client
 * certificate; lws 4.1.6 cannot do TLS on a raw client: it starts the handshake before
 * the socket exists), the HTTP/1.1 upgrade with the Authorization and User-Agent headers
 * (Sec-WebSocket-Accept and the subprotocol checked), and RFC 6455 through kube/wsframe.c:
 * server frames parsed a whole read at a time (payload handed on in place), client frames
 * masked, pings answered, a ping after EXEC_PING_SECS of silence and a hang-up after
 * EXEC_HANGUP_SECS. What we write goes through our own queue (outq) with send(): while lws
 * holds unsent output of a raw connection it reads nothing, so it never holds any.
 *
 * Memory is bounded whatever the output size: data is handed to the callbacks as it is
 * read, one read (at most EXEC_RX_BUFFER) at a time; a slow callback stalls the reads,
 * and TCP pushes back on the server. Stdin goes out one chunk (EXEC_STDIN_CHUNK) per
 * writable event once the socket has taken the previous one: from read_stdin, called on
 * the loop; or from stdin_fd, read by a thread of the session into KUBE_WS_READER_SLOTS
 * chunks ahead at most (see struct kube_ws_reader), so waiting for input never holds up
 * output. The thread is joined before kube_exec returns.
 *
 * The end: the status message is the server's last word. Once it is complete the session
 * stops sending and the connection is dropped (lws' asynchronous kill), not closed
 * politely: a server whose command exited without reading stdin has stopped reading the
 * connection, so a polite close would wait for nothing. Such a server also closes at once
 * after the status with our stdin unread, so its TCP stack resets the connection right
 * behind the status. So no stdin goes out while input waits (input_waiting), a failed
 * write is not a failure of the session, and after one — or when lws closes the
 * connection on a reset before we read — what is still in the socket is read directly and
 * fed to the parser, which stands where the last read left it (salvage_status).
 *
 * Known limits:
 *  - v4.channel.k8s.io cannot half-close: with v4 the command never sees EOF on stdin (we
 *    stop sending and wait for it to exit). Commands that read stdin to the end need v5
 *    (Kubernetes >= 1.30); older servers leave them running until the timeout.
 *  - The Status message of a refused upgrade (pod not found, container not valid,
 *    forbidden...) is asked again as a plain GET of the same URL, which the API server
 *    refuses before any proxying (a GET without upgrade never reaches the kubelet); its
 *    message is used only when the status matches. Otherwise the error carries the HTTP
 *    status alone.
 *  - The URL — path and encoded argv — is capped at EXEC_MAX_URI bytes (the limit of the
 *    lws 4.1 request line this replaced, kept so commands behave as before); longer
 *    commands fail cleanly before connecting. Scripts of more than ~2 KB belong on stdin
 *    (sh -s). Query encoding keeps text short (space as '+').
 *  - No HTTP proxy (neither had the lws WebSocket connection).
 *
 * TLS and libwebsockets 4.1 (for portforward.c, which still lets lws do TLS): a context
 * created with LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT allocates a fresh OpenSSL ex-data
 * index into a process-global variable that every lws connection then uses to find itself
 * from its SSL object. Contexts created per call would (1) race — a session whose
 * handshake straddles another thread's context creation fails certificate verification —
 * and (2) grow the index without bound, making every SSL_new in the process slower
 * (measured: +2.5 ms per SSL object after 20 000 contexts). So no context ever asks for
 * the global init: each session builds its own client SSL_CTX (CA bundle, client
 * certificate chain and key, all from memory); portforward hands it to the context's
 * vhost as provided_client_ssl_ctx, exec uses it itself. Nothing else in the process may
 * create lws contexts with DO_SSL_GLOBAL_INIT. */
#include "kube/exec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/errfmt.h"
#include "kube/proxy.h"
#include "kube/wsconn.h"
#include "kube/wsframe.h"
#include <openssl/evp.h>
#include <openssl/rand.h>


#define EXEC_STDIN_CHUNK KUBE_WS_CHUNK      /* payload of one stdin message */
_Static_assert(KUBE_EXEC_STDIN_SLOTS == KUBE_WS_READER_SLOTS, "exec.h documents the reader's slots");
#define EXEC_RX_BUFFER (64u * 1024)         /* one read handed on: TLS plaintext; lws reads its 64 KiB service buffer */
#define EXEC_MAX_URI 2032u                  /* 2048 - "GET " - " HTTP/1.1\r\n" - NUL (see top) */
#define EXEC_SALVAGE_MAX (8u << 20)         /* what salvage_status reads from the socket at most */
#define EXEC_DEFAULT_PROTOCOLS "v5.channel.k8s.io, v4.channel.k8s.io"
#define EXEC_LOCAL_PROTOCOL "yao-exec"
#define EXEC_PING_SECS 20                   /* ping a connection quiet for this long, like client-go */
#define EXEC_HANGUP_SECS 120                /* and give up when nothing came for this long */
#define EXEC_UPGRADE_SECS 30
#define EXEC_OUTQ_MAX (1u << 20)            /* output the socket has not taken, at most */                /* the answer to the upgrade request */
#ifndef YAO_VERSION
#define YAO_VERSION "dev"
#endif
_Static_assert(LWS_PRE >= KUBE_WS_MAX_HEADER, "a client frame header fits lws' headroom");

/* ---- the session ------------------------------------------------------------------- */

struct session {
    struct kube_client *client;
    struct kube_config *cfg;
    const struct kube_exec_options *o;
    struct kube_exec_result *r;
    struct kube_exec_demux demux;
    struct lws_context *ctx;
    SSL_CTX *ssl;            /* the session's client TLS context (ours, not lws') */
    struct lws *wsi;
    lws_sorted_usec_list_t deadline;
    const char *offered;
    char *auth;              /* Authorization header value; wiped after use */
    int failed;              /* r->err holds the first failure */
    int established;
    int finished;            /* no connection left: the loop ends */
    int have_status;         /* the error channel's message is complete */
    int stdin_done;
    int stdin_refused;       /* a stdin write failed: the server had closed the connection */
    int v5;
    int tty;                 /* a terminal was asked for (and is in effect: with stdin) */
    lws_sorted_usec_list_t resize_check;   /* looks at o->resized */
    int resize_pending;      /* a size to send: size_w x size_h */
    int size_sent;           /* sent_w x sent_h went out */
    unsigned size_w, size_h, sent_w, sent_h;
    struct kube_ws_reader *in; /* stdin from an fd, else NULL */
    char close_reason[128];  /* from the server's close frame, if any */
    char tls_verify[160];    /* why OpenSSL refused the server's certificate */
    /* our side of WebSocket over lws' raw connection (see "Transport" at the top) */
    const char *path;        /* the request path, prefix and query included */
    char host[300];          /* the Host header */
    char key[KUBE_WS_KEY_LEN + 1];
    int connected;           /* the transport is up */
    int request_sent;
    struct dynbuf answer;    /* the upgrade answer until its header is complete */
    struct kube_ws_parser wp;
    int closed;              /* the server's close frame came */
    int pong_pending, ping_pending;
    unsigned char pong[LWS_PRE + 125];
    size_t pong_len;
    lws_usec_t last_rx;      /* when the server last sent anything (or the request went out) */
    lws_sorted_usec_list_t keepalive;
    const struct kube_ws_endpoint *ep;
    char **imp;              /* Impersonate-* header lines, or NULL */
    const struct kube_proxy *proxy;   /* the HTTP proxy to tunnel through, or NULL */
    int tunnel_pending;      /* CONNECT sent, the proxy's answer not complete yet */
    struct dynbuf tunnel;    /* the proxy's answer so far */
    SSL *tls;                /* https: our TLS client, over memory BIOs */
    BIO *tls_in, *tls_out;   /* owned by tls */
    int tls_ready;           /* its handshake is done */
    unsigned char rx[EXEC_RX_BUFFER];   /* decrypted input */
    struct dynbuf outq;      /* bytes for the socket (encrypted with TLS) it has not taken yet */
    unsigned char tx[LWS_PRE + 1 + EXEC_STDIN_CHUNK];
};

/* Record the first failure of the session. */
static void fail(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct session *s, const char *fmt, ...) {
    if (s->ctx) lws_cancel_service(s->ctx);   /* the loop may be about to sleep */
    if (s->failed) return;
    s->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    errfmt_v(s->r->err, sizeof(s->r->err), fmt, ap);
    va_end(ap);
}

/* Send one client frame: p holds the payload (n bytes) with KUBE_WS_MAX_HEADER writable
 * bytes before it (LWS_PRE in every buffer here); it is masked in place. lws sends it or
 * keeps what the socket did not take. 0, or -1 when the write failed. */
static int transport_write(struct session *s, struct lws *wsi, const unsigned char *p, size_t n);
static int ws_send(struct session *s, struct lws *wsi, int opcode, unsigned char *p, size_t n) {
    unsigned char key[4], hdr[KUBE_WS_MAX_HEADER];
    /* /dev/urandom through lws: OpenSSL's generator costs a slow first seeding (0.5 s
     * under valgrind) that a plain-http session has no other use for. */
    if (lws_get_random(lws_get_context(wsi), key, sizeof(key)) != sizeof(key) && RAND_bytes(key, sizeof(key)) != 1)
        return -1;
    size_t h = kube_ws_frame_header(hdr, opcode, n, key);
    kube_ws_mask(p, n, key);
    memcpy(p - h, hdr, h);
    return transport_write(s, wsi, p - h, h + n);
}

/* Demux callbacks: pass through to the caller's, noting who aborted. */
static int pass_stdout(void *ud, const char *p, size_t n) {
    struct session *s = ud;
    int rc = s->o->on_stdout ? s->o->on_stdout(s->o->ud, p, n) : 0;
    if (rc) fail(s, "exec: the stdout consumer aborted the session");
    return rc;
}

static int pass_stderr(void *ud, const char *p, size_t n) {
    struct session *s = ud;
    int rc = s->o->on_stderr ? s->o->on_stderr(s->o->ud, p, n) : 0;
    if (rc) fail(s, "exec: the stderr consumer aborted the session");
    return rc;
}

/* The session deadline passed: end the connection now. */
static void on_deadline(lws_sorted_usec_list_t *sul) {
    struct session *s = lws_container_of(sul, struct session, deadline);
    fail(s, "exec: timed out after %ld ms", s->o->timeout_ms);
    if (s->wsi)
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
    else
        s->finished = 1;
}

/* After a failed write: read what the server sent before it closed (lws would drop it),
 * and if its status is there, take it and end the session (see "the end" at the top). */
static void salvage_status(struct session *s, struct lws *wsi, int closing) {
    unsigned char buf[16384];
    char perr[160];
    size_t total = 0;
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    while (!s->have_status && !s->closed && total < EXEC_SALVAGE_MAX && fd >= 0) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0) break;
        total += (size_t)n;
        if (!s->tls) {
            if (kube_ws_parser_feed(&s->wp, buf, (size_t)n, perr, sizeof(perr)) < 0) break;
            continue;
        }
        if (BIO_write(s->tls_in, buf, (int)n) != (int)n) break;
        int k;
        while (!s->have_status && (k = SSL_read(s->tls, s->rx, (int)sizeof(s->rx))) > 0)
            if (kube_ws_parser_feed(&s->wp, s->rx, (size_t)k, perr, sizeof(perr)) < 0) break;
    }
    ERR_clear_error();
    if (s->have_status && !closing) {
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        lws_cancel_service(s->ctx);
    }
}

/* A stdin (or resize) write failed: the server has closed the connection, its command
 * has exited, and its status is most likely waiting in our receive buffer. Not a failure
 * of the session: stop sending and look for the status; without it, conclude reports the
 * connection that closed before the status came. */
static void stdin_refused(struct session *s, struct lws *wsi) {
    s->stdin_done = 1;
    s->stdin_refused = 1;
    salvage_status(s, wsi, 0);
}

/* Ask the caller for the terminal's size; queue it for the resize channel when it is not
 * what was sent (or queued) last. */
static void size_update(struct session *s) {
    unsigned w = 0, h = 0;
    if (!s->o->term_size || s->o->term_size(s->o->ud, &w, &h) < 0) return;
    if (s->resize_pending ? (w == s->size_w && h == s->size_h)
                          : (s->size_sent && w == s->sent_w && h == s->sent_h))
        return;
    s->size_w = w;
    s->size_h = h;
    s->resize_pending = 1;
    if (s->wsi) lws_callback_on_writable(s->wsi);
}

/* Every KUBE_EXEC_RESIZE_CHECK_MS while the session lasts: did the caller's flag (its
 * SIGWINCH handler) go up? Cleared before the size is read, so no change is lost. */
static void on_resize_check(lws_sorted_usec_list_t *sul) {
    struct session *s = lws_container_of(sul, struct session, resize_check);
    if (!s->wsi || s->finished || s->have_status || s->failed) return;
    if (atomic_exchange(s->o->resized, 0)) {   /* read and cleared at once: no SIGWINCH lost */
        size_update(s);
    }
    lws_sul_schedule(s->ctx, 0, &s->resize_check, on_resize_check,
                     (lws_usec_t)KUBE_EXEC_RESIZE_CHECK_MS * LWS_US_PER_MS);
}

/* Send the queued terminal size on the resize channel. */
static int send_resize(struct session *s, struct lws *wsi) {
    unsigned char buf[LWS_PRE + 64];
    size_t n = kube_exec_resize_message(s->size_w, s->size_h, buf + LWS_PRE, sizeof(buf) - LWS_PRE);
    s->resize_pending = 0;
    if (!n) return 0;   /* cannot happen: two unsigned numbers fit */
    if (ws_send(s, wsi, KUBE_WS_BINARY, buf + LWS_PRE, n) < 0) {
        stdin_refused(s, wsi);
        return 0;
    }
    s->size_sent = 1;
    s->sent_w = s->size_w;
    s->sent_h = s->size_h;
    return 0;
}

/* End of input: the v5 close signal for stdin (v4 cannot signal EOF: see the top). */
static int send_stdin_eof(struct session *s, struct lws *wsi) {
    unsigned char *m = s->tx + LWS_PRE;
    s->stdin_done = 1;
    if (!s->v5) return 0;
    m[0] = KUBE_EXEC_CLOSE;
    m[1] = KUBE_EXEC_STDIN;
    if (ws_send(s, wsi, KUBE_WS_BINARY, m, 2) < 0) stdin_refused(s, wsi);
    return 0;
}

/* Send the next stdin chunk from read_stdin, or the close signal at end of input. */
static int send_stdin(struct session *s, struct lws *wsi) {
    unsigned char *m = s->tx + LWS_PRE;
    ssize_t n = s->o->read_stdin(s->o->ud, (char *)m + 1, EXEC_STDIN_CHUNK);
    if (n < 0 || (size_t)n > EXEC_STDIN_CHUNK) {
        fail(s, "exec: reading stdin failed");
        return -1;
    }
    if (n == 0) return send_stdin_eof(s, wsi);
    m[0] = KUBE_EXEC_STDIN;
    if (ws_send(s, wsi, KUBE_WS_BINARY, m, (size_t)n + 1) < 0) {
        stdin_refused(s, wsi);
        return 0;
    }
    lws_callback_on_writable(wsi);
    return 0;
}

/* Send the oldest full slot; when none is left, the close signal at EOF or the read
 * error. Nothing yet: wait for the reader's wake-up. */
static int send_stdin_fd(struct session *s, struct lws *wsi) {
    struct kube_ws_reader *rd = s->in;
    pthread_mutex_lock(&rd->mu);
    unsigned count = rd->count;
    int eof = rd->eof, err = rd->err;
    struct kube_ws_slot *sl = &rd->slot[rd->head];
    pthread_mutex_unlock(&rd->mu);

    if (count) {
        unsigned char *m = sl->buf + LWS_PRE;
        size_t n = sl->len + 1;
        m[0] = KUBE_EXEC_STDIN;
        /* lws_write sends it or keeps the rest itself: the slot is free after it. */
        if (ws_send(s, wsi, KUBE_WS_BINARY, m, n) < 0) {
            stdin_refused(s, wsi);
            return 0;
        }
        pthread_mutex_lock(&rd->mu);
        rd->head = (rd->head + 1) % KUBE_WS_READER_SLOTS;
        rd->count--;
        int more = rd->count || rd->eof || rd->err;
        pthread_cond_signal(&rd->cv);
        pthread_mutex_unlock(&rd->mu);
        if (more) lws_callback_on_writable(wsi);
        return 0;
    }
    if (err) {
        fail(s, "exec: reading stdin: %s", strerror(err));
        return -1;
    }
    if (eof) return send_stdin_eof(s, wsi);
    return 0;
}

/* Whether input waits to be read: in the socket, or decrypted inside OpenSSL. lws 4.1
 * services a connection's writes before its reads, and once a write has failed it drops
 * whatever it reads next. A server whose command exited closes the connection right after
 * the status, with our unread stdin in its buffer, so its TCP stack answers with a reset:
 * the status and the reset arrive together, and a stdin write that goes first fails and
 * loses the status (kwok: 3 sessions in 4). So no write while input is waiting; the status
 * is read and ends the session first. */
static int input_waiting(struct lws *wsi) {
    int n = 0;
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    return fd >= 0 && ioctl(fd, FIONREAD, &n) == 0 && n > 0;   /* TLS input is drained at each read */
}

/* Parser callbacks. Data: through the demultiplexer; a complete status ends the session
 * (2 stops the parser), so does an unknown channel or an aborting consumer (1). */
static int on_ws_data(void *ud, int opcode, const unsigned char *p, size_t n, int first, int final) {
    struct session *s = ud;
    (void)opcode;
    if (s->have_status || s->failed) return 1;
    int rc = kube_exec_demux_feed(&s->demux, p, n, first, final);
    if (rc) {
        if (rc < 0) fail(s, "exec: the server sent a message on unknown channel %d", s->demux.channel);
        return 1;
    }
    if (final && s->demux.channel == KUBE_EXEC_ERROR && (s->demux.status_len || s->demux.status_overflow)) {
        s->have_status = 1;   /* the verdict is the server's last word */
        return 2;
    }
    return 0;
}

/* Control frames: a ping is answered (on the next writable event), a close ends it. */
static int on_ws_control(void *ud, int opcode, const unsigned char *p, size_t n) {
    struct session *s = ud;
    if (opcode == KUBE_WS_CLOSE) {
        kube_ws_note_close(p, n, s->close_reason, sizeof(s->close_reason));
        s->closed = 1;
        return 3;
    }
    if (opcode == KUBE_WS_PING && s->wsi) {
        memcpy(s->pong + LWS_PRE, p, n);
        s->pong_len = n;
        s->pong_pending = 1;
        lws_callback_on_writable(s->wsi);
    }
    return 0;
}

/* Every EXEC_PING_SECS: before the upgrade, give up on a server that does not answer it;
 * after, ping a quiet connection and give up on one quiet for EXEC_HANGUP_SECS. */
static void on_keepalive(lws_sorted_usec_list_t *sul) {
    struct session *s = lws_container_of(sul, struct session, keepalive);
    if (!s->wsi || s->finished || s->have_status || s->failed) return;
    lws_usec_t quiet = lws_now_usecs() - s->last_rx;
    if (s->request_sent && !s->established && quiet >= (lws_usec_t)EXEC_UPGRADE_SECS * LWS_US_PER_SEC) {
        fail(s, "exec: %s did not answer the upgrade request within %d s", s->cfg->server, EXEC_UPGRADE_SECS);
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
        return;
    }
    if (s->established && quiet >= (lws_usec_t)EXEC_HANGUP_SECS * LWS_US_PER_SEC) {
        fail(s, "exec: nothing from the server for %d s", EXEC_HANGUP_SECS);
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
        return;
    }
    if (s->established && quiet >= (lws_usec_t)EXEC_PING_SECS * LWS_US_PER_SEC) {
        s->ping_pending = 1;
        lws_callback_on_writable(s->wsi);
    }
    lws_sul_schedule(s->ctx, 0, &s->keepalive, on_keepalive,
                     (lws_usec_t)(s->established ? EXEC_PING_SECS : 5) * LWS_US_PER_SEC);
}

/* The answer to the upgrade is complete and is a 101: check it, and start the session. 0,
 * or -1 (failed) to drop the connection. */
static int tls_handshake(struct session *s, struct lws *wsi);
static int upgraded(struct session *s, struct lws *wsi, const struct kube_ws_answer *a) {
    const char *why = kube_ws_check_answer(a, s->key);
    if (why) {
        fail(s, "exec: bad answer to the upgrade from %s: %s", s->cfg->server, why);
        return -1;
    }
    if (!kube_ws_protocol_offered(s->offered, a->protocol)) {
        fail(s, "exec: the server chose subprotocol \"%s\", which was not offered (%s)", a->protocol, s->offered);
        return -1;
    }
    snprintf(s->r->protocol, sizeof(s->r->protocol), "%.*s", (int)sizeof(s->r->protocol) - 1, a->protocol);
    s->v5 = !strcmp(a->protocol, "v5.channel.k8s.io");
    s->established = 1;
    s->r->http_status = 101;
    kube_client_count(s->client, "GET", 101);
    if (s->in && kube_ws_reader_start(s->in, s->ctx) < 0) {
        fail(s, "exec: cannot start the stdin reader thread");
        return -1;
    }
    if (s->o->read_stdin) lws_callback_on_writable(wsi);
    if (s->tty && s->o->term_size) {
        size_update(s);
        if (s->o->resized)
            lws_sul_schedule(s->ctx, 0, &s->resize_check, on_resize_check,
                             (lws_usec_t)KUBE_EXEC_RESIZE_CHECK_MS * LWS_US_PER_MS);
    }
    lws_sul_schedule(s->ctx, 0, &s->keepalive, on_keepalive, (lws_usec_t)EXEC_PING_SECS * LWS_US_PER_SEC);
    return 0;
}

/* Feed frames to the parser. 0, or -1 (the session failed). */
static int feed_frames(struct session *s, const unsigned char *p, size_t n) {
    char perr[160];
    if (n && kube_ws_parser_feed(&s->wp, p, n, perr, sizeof(perr)) < 0) {
        fail(s, "exec: %s", perr);
        return -1;
    }
    return 0;
}

/* What the server sent: the upgrade answer first, then frames, parsed a read at a time.
 * 0, or -1 to drop the connection. */
static int received(struct session *s, struct lws *wsi, const unsigned char *in, size_t len) {
    s->last_rx = lws_now_usecs();
    if (s->have_status || s->closed) return 0;
    if (!s->established) {
        /* The read that completes the header may carry many frames after it (a command
         * that writes at once): only the header is bounded, so buffer at most what is
         * left of KUBE_WS_HS_MAX and hand the rest of the read to the parser. */
        struct kube_ws_answer a;
        size_t room = s->answer.max > s->answer.len ? s->answer.max - s->answer.len : 0;
        size_t take = len < room ? len : room;
        if (dynbuf_append(&s->answer, in, take) < 0) {
            fail(s, "exec: out of memory reading the answer to the upgrade from %s", s->cfg->server);
            return -1;
        }
        int k = kube_ws_parse_answer(s->answer.data, s->answer.len, &a);
        if (k < 0) {
            fail(s, "exec: %s did not answer the upgrade request with HTTP", s->cfg->server);
            return -1;
        }
        if (k == 0) {
            if (take == len && s->answer.len < s->answer.max) return 0;
            fail(s, "exec: the answer to the upgrade from %s is too long", s->cfg->server);
            return -1;
        }
        if (a.status != 101) {
            s->r->http_status = a.status;
            fail(s, "exec: upgrade refused: HTTP %d", a.status);
            return -1;
        }
        if (upgraded(s, wsi, &a) < 0) return -1;
        if (feed_frames(s, (const unsigned char *)s->answer.data + a.header_len, s->answer.len - a.header_len) < 0)
            return -1;
        in += take;
        len -= take;
    }
    if (feed_frames(s, in, len) < 0) return -1;
    if (s->answer.data) dynbuf_free(&s->answer);
    if (s->failed) return -1;
    if (s->have_status || s->closed) {
        /* Done: drop the connection now, whatever stdin lws still holds for it (see the top). */
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        lws_cancel_service(s->ctx);
    }
    return 0;
}

/* ---- TLS over the raw connection: OpenSSL with memory BIOs ---------------------------- */

/* Send what OpenSSL wrote into its output BIO. 0, or -1 when the socket write failed. */
/* Send what waits in the output queue, as much as the socket takes now; the rest waits
 * for the next writable event. Written with send() rather than lws_write: while lws holds
 * unsent output of a raw connection it reads nothing (not even a status that would end
 * the session), so lws never holds any. 0, or -1 when the socket failed. */
static int out_flush(struct session *s, struct lws *wsi) {
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    while (s->outq.len) {
        ssize_t n = send(fd, s->outq.data, s->outq.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) return -1;
        dynbuf_consume(&s->outq, (size_t)n);
    }
    if (s->outq.len) lws_callback_on_writable(wsi);
    return 0;
}

/* Queue what OpenSSL wrote into its output BIO, and send it. 0 or -1. */
static int tls_flush(struct session *s, struct lws *wsi) {
    char *p;
    long n = BIO_get_mem_data(s->tls_out, &p);
    if (n > 0 && dynbuf_append(&s->outq, p, (size_t)n) < 0) return -1;
    (void)BIO_reset(s->tls_out);
    return out_flush(s, wsi);
}

/* Send bytes of the session: through TLS, or as they are. 0 or -1. */
static int transport_write(struct session *s, struct lws *wsi, const unsigned char *p, size_t n) {
    if (!s->tls) {
        if (dynbuf_append(&s->outq, p, n) < 0) return -1;
        return out_flush(s, wsi);
    }
    if (n && SSL_write(s->tls, p, (int)n) != (int)n) {
        ERR_clear_error();
        return -1;
    }
    return tls_flush(s, wsi);
}

/* OpenSSL's verdict on each certificate of the chain: the first complaint is noted for a
 * readable error (the verdict stays OpenSSL's). The session is the SSL's app data (ex-data
 * index 0, no new index: see "TLS and libwebsockets 4.1"). */
static int tls_verify_cb(int ok, X509_STORE_CTX *x) {
    SSL *ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct session *s = ssl ? SSL_get_app_data(ssl) : NULL;
    if (!ok && s) kube_ws_note_cert_error(x, 0, s->tls_verify, sizeof(s->tls_verify));
    return ok;
}

/* The TLS client of the session on top of the raw connection: SNI and the hostname (or
 * IP address) check against tls-server-name, else the server's host, as lws did them. */
static int tls_start(struct session *s, struct lws *wsi, const struct kube_ws_endpoint *ep) {
    const char *name = s->cfg->tls_server_name && s->cfg->tls_server_name[0] ? s->cfg->tls_server_name : ep->host;
    unsigned char ip[16];
    int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    if (!in || !out || !(s->tls = SSL_new(s->ssl))) {
        BIO_free(in);
        BIO_free(out);
        goto fail;
    }
    SSL_set_bio(s->tls, in, out);   /* the SSL owns both now */
    s->tls_in = in;
    s->tls_out = out;
    SSL_set_connect_state(s->tls);
    if (!is_ip && SSL_set_tlsext_host_name(s->tls, name) != 1) goto fail;
    if (!s->cfg->insecure_skip_tls_verify) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(s->tls);
        if ((is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, name) : X509_VERIFY_PARAM_set1_host(vp, name, 0)) != 1)
            goto fail;
        SSL_set_app_data(s->tls, s);
        SSL_set_verify(s->tls, SSL_VERIFY_PEER, tls_verify_cb);
    } else {
        SSL_set_verify(s->tls, SSL_VERIFY_NONE, NULL);
    }
    if (SSL_set_alpn_protos(s->tls, (const unsigned char *)"\x08http/1.1", 9) != 0) goto fail;
    return tls_handshake(s, wsi);
fail:
    ERR_clear_error();
    fail(s, "exec: cannot set up TLS");
    return -1;
}

/* Drive the handshake. 0 (done, or waiting for the server) or -1 (failed). */
static int tls_handshake(struct session *s, struct lws *wsi) {
    int r = SSL_do_handshake(s->tls);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(s->tls, r);
    if (tls_flush(s, wsi) < 0) {
        fail(s, "exec: connection to %s failed: write failed", s->cfg->server);
        return -1;
    }
    if (r == 1) {
        s->tls_ready = 1;
        lws_callback_on_writable(wsi);   /* the upgrade request */
        return 0;
    }
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
    long v = SSL_get_verify_result(s->tls);
    unsigned long le = ERR_peek_error();
    char why[160];
    ERR_error_string_n(le, why, sizeof(why));
    ERR_clear_error();
    if (v != X509_V_OK && !s->cfg->insecure_skip_tls_verify)
        fail(s, "exec: TLS: the server certificate of %s is not trusted: %s", s->cfg->server,
             s->tls_verify[0] ? s->tls_verify : X509_verify_cert_error_string(v));
    else
        fail(s, "exec: connection to %s failed: TLS handshake: %s", s->cfg->server, le ? why : "connection closed");
    return -1;
}

/* Bytes from the socket: through TLS (the handshake, then application data, handed on
 * in reads of up to EXEC_RX_BUFFER), or as they are. 0 or -1. */
static int transport_read(struct session *s, struct lws *wsi, const unsigned char *in, size_t len) {
    if (!s->tls) return received(s, wsi, in, len);
    if (len && BIO_write(s->tls_in, in, (int)len) != (int)len) {
        fail(s, "exec: out of memory");
        return -1;
    }
    if (!s->tls_ready && (tls_handshake(s, wsi) < 0 || !s->tls_ready)) return s->failed ? -1 : 0;
    for (;;) {
        int n = SSL_read(s->tls, s->rx, (int)sizeof(s->rx));
        if (n > 0) {
            if (received(s, wsi, s->rx, (size_t)n) < 0) return -1;
            if (s->have_status || s->closed) return 0;
            continue;
        }
        int e = SSL_get_error(s->tls, n);
        ERR_clear_error();
        if (e == SSL_ERROR_WANT_READ) break;
        if (e == SSL_ERROR_ZERO_RETURN) break;   /* close_notify: the socket closes next */
        if (!s->failed && !s->have_status)
            fail(s, "exec: TLS error on the connection to %s", s->cfg->server);
        return -1;
    }
    return tls_flush(s, wsi) < 0 && !s->have_status ? -1 : 0;
}

/* The transport to the server is up (directly, or through the proxy's tunnel): TLS
 * (ours) next, or the upgrade request. */
static int transport_up(struct session *s, struct lws *wsi) {
    s->connected = 1;
    if (s->ep->tls) return tls_start(s, wsi, s->ep);
    lws_callback_on_writable(wsi);
    return 0;
}

/* Connected to the proxy: ask it for a tunnel to the server (HTTP CONNECT). */
static int tunnel_start(struct session *s, struct lws *wsi) {
    char req[1024];
    size_t n = kube_proxy_connect_request(req, sizeof(req), s->ep->host, s->ep->port, s->proxy);
    int rc = n && dynbuf_append(&s->outq, req, n) == 0 ? out_flush(s, wsi) : -1;
    OPENSSL_cleanse(req, sizeof(req));   /* it may hold the proxy's password */
    if (rc < 0) {
        fail(s, "exec: cannot send CONNECT to the proxy %s:%d", s->proxy->host, s->proxy->port);
        return -1;
    }
    s->tunnel_pending = 1;
    return 0;
}

/* The proxy's answer to CONNECT: on 200 the tunnel stands and the session goes on over
 * it (bytes after the answer are the server's). */
static int tunnel_answer(struct session *s, struct lws *wsi, const unsigned char *in, size_t len) {
    int status = 0;
    size_t hl = 0;
    if (dynbuf_append(&s->tunnel, in, len) < 0) {
        fail(s, "exec: the proxy %s:%d sent an answer to CONNECT longer than 16 KiB", s->proxy->host, s->proxy->port);
        return -1;
    }
    int k = kube_proxy_connect_answer(s->tunnel.data, s->tunnel.len, &status, &hl);
    if (k == 0) return 0;
    if (k < 0) {
        fail(s, "exec: the proxy %s:%d (%s) did not answer CONNECT with HTTP", s->proxy->host, s->proxy->port,
             s->proxy->source);
        return -1;
    }
    if (status != 200) {
        fail(s, "exec: the proxy %s:%d (%s) refused CONNECT to %s:%d: HTTP %d%s", s->proxy->host, s->proxy->port,
             s->proxy->source, s->ep->host, s->ep->port, status,
             status == 407 ? " (proxy authentication required: user:password in the proxy URL)" : "");
        return -1;
    }
    s->tunnel_pending = 0;
    if (transport_up(s, wsi) < 0) return -1;
    if (s->tunnel.len > hl) return transport_read(s, wsi, (unsigned char *)s->tunnel.data + hl, s->tunnel.len - hl);
    return 0;
}

/* Writable: the upgrade request first; then a pong or ping, a resize, stdin. 0 or -1. */
static int writable(struct session *s, struct lws *wsi) {
    if (s->outq.len && !s->have_status && !s->failed) {
        /* The socket has not taken the last bytes yet: nothing new before it has. */
        if (out_flush(s, wsi) < 0) {
            if (!s->established) {
                fail(s, "exec: connection to %s failed: write failed", s->cfg->server);
                return -1;
            }
            stdin_refused(s, wsi);
            return 0;
        }
        if (s->outq.len) return 0;
    }
    if (!s->request_sent) {
        if (!s->connected || (s->tls && !s->tls_ready)) return 0;
        static const char ua[] = "yao-sandbox/" YAO_VERSION;
        size_t cap = strlen(s->path) + strlen(s->host) + strlen(s->offered) + (s->auth ? strlen(s->auth) : 0) + 512;
        for (size_t i = 0; s->imp && s->imp[i]; i++) cap += strlen(s->imp[i]) + 2;
        char *req = malloc(cap);
        size_t n = req ? kube_ws_upgrade_request(req, cap, s->host, s->path, s->key, s->offered, s->auth,
                                                 (const char *const *)s->imp, ua)
                       : 0;
        int w = n ? transport_write(s, wsi, (unsigned char *)req, n) : -1;
        if (req) OPENSSL_cleanse(req, cap);   /* it holds the credentials */
        free(req);
        if (w < 0) {
            fail(s, "exec: cannot send the upgrade request to %s", s->cfg->server);
            return -1;
        }
        s->request_sent = 1;
        s->last_rx = lws_now_usecs();
        lws_sul_schedule(s->ctx, 0, &s->keepalive, on_keepalive, 5 * LWS_US_PER_SEC);
        return 0;
    }
    if (!s->established || s->have_status || s->failed || s->closed) return 0;
    if (s->pong_pending || s->ping_pending) {
        /* Not held back by input_waiting: a stream of output must not starve the pong. */
        int op = s->pong_pending ? KUBE_WS_PONG : KUBE_WS_PING;
        size_t n = s->pong_pending ? s->pong_len : 0;
        s->pong_pending = s->ping_pending = 0;
        if (ws_send(s, wsi, op, s->pong + LWS_PRE, n) < 0) {
            stdin_refused(s, wsi);
            return 0;
        }
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (input_waiting(wsi)) {
        /* Read first (see input_waiting): this round's input is handled next. */
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (s->resize_pending) {
        send_resize(s, wsi);
        if ((s->o->read_stdin || s->in) && !s->stdin_done) lws_callback_on_writable(wsi);
        return 0;
    }
    if (!(s->o->read_stdin || s->in) || s->stdin_done) return 0;
    return (s->in ? send_stdin_fd(s, wsi) : send_stdin(s, wsi)) < 0 ? -1 : 0;
}

/* The one libwebsockets callback; the session is the context's user pointer. The
 * connection is raw: lws moves bytes, the WebSocket is ours. */
static int exec_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct lws_context *ctx = wsi ? lws_get_context(wsi) : NULL;
    struct session *s = ctx ? lws_context_user(ctx) : NULL;
    (void)user;   /* no per-connection data: the session is the context's */
    if (!s) return 0;

    switch (reason) {
    case LWS_CALLBACK_RAW_CONNECTED:   /* TCP is up: the proxy's tunnel, then TLS (ours) or the request */
        if (s->connected || s->tunnel_pending) return 0;
        if (s->proxy) return tunnel_start(s, wsi);
        return transport_up(s, wsi);

    case LWS_CALLBACK_RAW_RX:
        if (s->tunnel_pending) return tunnel_answer(s, wsi, in, len);
        return transport_read(s, wsi, in, len);

    case LWS_CALLBACK_RAW_WRITEABLE:
        return writable(s, wsi);

    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        /* lws_cancel_service() was called: by the stdin reader (or by fail/close, which
         * need nothing here). lws 4.1 sends this to every protocol of every vhost with a
         * stand-in wsi that only has the context, so the connection is s->wsi. */
        if (s->in && s->wsi && s->established && !s->finished && !s->failed && !s->stdin_done &&
            !s->have_status && kube_ws_reader_pending(s->in))
            lws_callback_on_writable(s->wsi);
        return 0;

    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        char msg[sizeof(s->r->err)];
        if (s->proxy && !s->connected)
            errfmt(msg, sizeof(msg), "exec: connection to the proxy %s:%d (%s) failed: %s", s->proxy->host,
                   s->proxy->port, s->proxy->source, in && len ? (const char *)in : "unknown error");
        else
            kube_ws_connection_error(wsi, in, len, "exec", s->tls_verify, s->cfg, s->offered, &s->r->http_status, msg,
                                     sizeof(msg));
        fail(s, "%s", msg);
        return kube_ws_note_gone(wsi, reason, &s->wsi, &s->finished);
    }

    case LWS_CALLBACK_RAW_CLOSE:
        /* lws closes a connection whose write failed without reading what waits in the
         * socket (while it holds unsent output it does not read at all): the server's
         * status may be there, and the socket is still open here. */
        if (wsi == s->wsi && s->established && !s->have_status && !s->closed && !s->failed)
            salvage_status(s, wsi, 1);
        return kube_ws_note_gone(wsi, reason, &s->wsi, &s->finished);

    case LWS_CALLBACK_WSI_DESTROY:
        return kube_ws_note_gone(wsi, reason, &s->wsi, &s->finished);

    default:
        return 0;
    }
}

static const struct lws_protocols exec_protocols[] = {
    {EXEC_LOCAL_PROTOCOL, exec_callback, 0, EXEC_RX_BUFFER, 0, NULL, EXEC_STDIN_CHUNK + 16},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* Append "?key=" or "&key=" and the value encoded for a query the way Go's url.Values
 * does it (space as '+'), leaving the RFC 3986 query characters that need no escape as
 * they are: argv is mostly text, and every byte counts against EXEC_MAX_URI. */
static int add_query(struct dynbuf *b, const char *key, const char *value) {
    static const char hex[] = "0123456789ABCDEF";
    char sep = memchr(b->data ? b->data : "", '?', b->len) ? '&' : '?';
    if (dynbuf_printf(b, "%c%s=", sep, key) < 0) return -1;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-._~!$'()*,:@/?", *p);
        if (*p == ' ') {
            if (dynbuf_append(b, "+", 1) < 0) return -1;
        } else if (dynbuf_append(b, plain ? (const char *)p : enc, plain ? 1 : 3) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The exec path below the server prefix, with the query. */
static int build_path(const struct kube_exec_options *o, struct dynbuf *b, int want_stdin, int want_stdout,
                      int want_stderr, int tty) {
    size_t cap = (strlen(o->namespace_) + strlen(o->pod)) * 3 + 2;
    char *ns = malloc(cap), *pod = ns ? ns + strlen(o->namespace_) * 3 + 1 : NULL;
    int rc = -1;
    if (!ns) return -1;
    if (kube_url_encode(o->namespace_, ns, strlen(o->namespace_) * 3 + 1) < 0 ||
        kube_url_encode(o->pod, pod, strlen(o->pod) * 3 + 1) < 0 ||
        dynbuf_printf(b, "/api/v1/namespaces/%s/pods/%s/exec", ns, pod) < 0)
        goto out;
    for (size_t i = 0; i < o->argc; i++)
        if (add_query(b, "command", o->argv[i]) < 0) goto out;
    if (o->container && o->container[0] && add_query(b, "container", o->container) < 0) goto out;
    if (add_query(b, "stdin", want_stdin ? "true" : "false") < 0 ||
        add_query(b, "stdout", want_stdout ? "true" : "false") < 0 ||
        add_query(b, "stderr", want_stderr ? "true" : "false") < 0 ||
        add_query(b, "tty", tty ? "true" : "false") < 0)
        goto out;
    rc = 0;
out:
    free(ns);
    return rc;
}

/* Interpret the outcome once the connection is gone. 0 or -1 as kube_exec. */
static int conclude(struct session *s) {
    if (s->have_status) {
        char msg[sizeof(s->r->err)];
        int code = -1;
        if (s->demux.status_overflow) {
            fail(s, "exec: the status from the server exceeds %zu bytes", sizeof(s->demux.status) - 1);
            return -1;
        }
        if (kube_exec_parse_status(s->demux.status, s->demux.status_len, &code, msg, sizeof(msg)) < 0) {
            s->failed = 0;   /* the server's verdict outranks transport noise after it */
            fail(s, "exec: %s", msg);
            return -1;
        }
        if (s->failed) return -1;    /* a consumer aborted, or stdin failed */
        s->r->exit_code = code;
        s->r->err[0] = 0;
        return 0;
    }
    if (!s->failed) {
        if (s->established)
            fail(s, "exec: the connection closed before the command's status arrived%s%s", s->close_reason,
                 s->stdin_refused ? " (it stopped taking stdin)" : "");
        else
            fail(s, "exec: connection failed");
    }
    return -1;
}

/* One attempt of kube_exec. */
static int exec_once(struct kube_client *c, const struct kube_exec_options *o, struct kube_exec_result *r,
                     int may_retry) {
    struct session *s = NULL;
    struct kube_auth auth = {0};
    struct kube_ws_endpoint pep;
    struct dynbuf path, full;
    struct kube_ws_endpoint ep;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    dynbuf_init(&path, EXEC_MAX_URI);
    dynbuf_init(&full, EXEC_MAX_URI);
    if (!c || !o || !o->namespace_ || !o->namespace_[0] || !o->pod || !o->pod[0] || !o->argv || !o->argc) {
        snprintf(r->err, sizeof(r->err), "exec: namespace, pod and a command are required");
        goto out;
    }
    for (size_t i = 0; i < o->argc; i++)
        if (!o->argv[i]) {
            snprintf(r->err, sizeof(r->err), "exec: argv[%zu] is NULL", i);
            goto out;
        }
    if (o->use_stdin_fd && o->read_stdin) {
        snprintf(r->err, sizeof(r->err), "exec: stdin from both read_stdin and stdin_fd");
        goto out;
    }
    if (o->use_stdin_fd && (o->stdin_fd < 0 || fcntl(o->stdin_fd, F_GETFD) < 0)) {
        snprintf(r->err, sizeof(r->err), "exec: stdin_fd %d is not an open file descriptor", o->stdin_fd);
        goto out;
    }
    struct kube_config *cfg = kube_client_config(c);
    if (kube_ws_parse_server(cfg->server, &ep, "exec", r->err, sizeof(r->err)) < 0) goto out;

    /* A terminal only with stdin, as kubectl does (a tty with nothing to read makes no
     * sense, and some runtimes — kwok — crash on it); with one, stderr is merged into
     * stdout by the server. At least one stream must be requested: with none, ask for
     * stdout and drop it. */
    int want_stdin = o->read_stdin || o->use_stdin_fd;
    int tty = o->tty && want_stdin;
    int want_stderr = o->on_stderr && !tty;
    int want_stdout = o->on_stdout || (!want_stdin && !want_stderr);
    if (build_path(o, &path, want_stdin, want_stdout, want_stderr, tty) < 0 ||
        dynbuf_append(&full, ep.prefix, ep.prefix_len) < 0 || dynbuf_append(&full, path.data, path.len) < 0) {
        snprintf(r->err, sizeof(r->err), "exec: the command is too long for one request (the URL may have at most "
                 "%u bytes once encoded); pass long scripts on stdin", EXEC_MAX_URI);
        goto out;
    }

    if (!(s = calloc(1, sizeof(*s)))) {
        snprintf(r->err, sizeof(r->err), "exec: out of memory");
        goto out;
    }
    s->client = c;
    s->cfg = cfg;
    s->o = o;
    s->r = r;
    s->offered = o->protocols && o->protocols[0] ? o->protocols : EXEC_DEFAULT_PROTOCOLS;
    s->tty = tty;
    kube_exec_demux_init(&s->demux, pass_stdout, pass_stderr, s);
    kube_ws_parser_init(&s->wp, on_ws_data, on_ws_control, s);
    dynbuf_init(&s->answer, KUBE_WS_HS_MAX);
    dynbuf_init(&s->outq, EXEC_OUTQ_MAX);
    s->path = full.data;
    s->ep = &ep;
    dynbuf_init(&s->tunnel, 16u * 1024);
    kube_ws_host_header(&ep, cfg, s->host, sizeof(s->host));
    if (kube_config_auth(cfg, &auth, r->err, sizeof(r->err)) < 0) {
        s->failed = 1;
        goto out;
    }
    s->auth = kube_ws_auth_value(cfg, &auth);
    {
        int oom = 0;
        s->imp = kube_config_impersonation_headers(cfg, &oom);
        if (oom) {
            fail(s, "exec: out of memory");
            goto out;
        }
    }
    const struct kube_proxy *px = kube_client_proxy(c);
    s->proxy = px->set ? px : NULL;
    if (o->use_stdin_fd && !(s->in = kube_ws_reader_new(o->stdin_fd))) {
        fail(s, "exec: cannot set up the stdin reader: %s", strerror(errno));
        goto out;
    }

    if (ep.tls && !(s->ssl = kube_ws_tls_new(cfg, &auth, "exec", r->err, sizeof(r->err)))) {
        s->failed = 1;
        goto out;
    }
    /* the raw connection's proxy is ours (CONNECT in tunnel_start), never lws' */
    if (!(s->ctx = kube_ws_context_new(exec_protocols, s, NULL, NULL, "exec", r->err, sizeof(r->err)))) {
        s->failed = 1;
        goto out;
    }
    {
        unsigned char nonce[16];
        if (lws_get_random(s->ctx, nonce, sizeof(nonce)) != sizeof(nonce) && RAND_bytes(nonce, sizeof(nonce)) != 1) {
            fail(s, "exec: no random bytes for the WebSocket key");
            goto out;
        }
        EVP_EncodeBlock((unsigned char *)s->key, nonce, sizeof(nonce));
    }
    if (o->timeout_ms > 0)
        lws_sul_schedule(s->ctx, 0, &s->deadline, on_deadline, (lws_usec_t)o->timeout_ms * LWS_US_PER_MS);
    if (s->proxy) {
        memset(&pep, 0, sizeof(pep));
        snprintf(pep.host, sizeof(pep.host), "%s", s->proxy->host);
        pep.port = s->proxy->port;
        pep.prefix = "";
    }
    if (!kube_ws_connect_raw(s->ctx, s->proxy ? &pep : &ep, EXEC_LOCAL_PROTOCOL, &s->wsi)) {
        fail(s, "exec: cannot connect to %s", cfg->server);
        s->finished = 1;
        s->wsi = NULL;
    }
    while (!s->finished)
        if (lws_service(s->ctx, 0) < 0) break;
    kube_ws_reader_stop(s->in);   /* before the context goes: it wakes the context's loop */
    lws_sul_cancel(&s->deadline);
    lws_sul_cancel(&s->resize_check);
    lws_sul_cancel(&s->keepalive);
    if (!s->established) kube_client_count(c, "GET", s->r->http_status);
    rc = conclude(s);
    /* (a 401 that fresh credentials may cure is retried first: kube_exec) */
    int retry_401 = may_retry && r->http_status == 401 && (cfg->exec_plugin || cfg->token_file);
    if (rc < 0 && !s->established && r->http_status >= 400 && !retry_401) {
        lws_context_destroy(s->ctx);
        s->ctx = NULL;
        kube_ws_refusal_message(c, r->http_status, path.data, "exec", "exec needs get and create on pods/exec",
                                r->err, sizeof(r->err));
    }
out:
    if (s) {
        kube_ws_reader_free(s->in);   /* stopped and joined: before the context */
        if (s->ctx) lws_context_destroy(s->ctx);
        SSL_CTX_free(s->ssl);
        kube_ws_free_secret(s->auth);
        kube_config_free_lines(s->imp);
        dynbuf_free(&s->answer);
        dynbuf_free(&s->outq);
        dynbuf_free(&s->tunnel);
        SSL_free(s->tls);       /* and its BIOs */
        free(s);
    }
    kube_auth_free(&auth);
    dynbuf_free(&path);
    dynbuf_free(&full);
    if (rc < 0 && !r->err[0]) snprintf(r->err, sizeof(r->err), "exec: failed");
    return rc;
}

int kube_exec(struct kube_client *c, const struct kube_exec_options *o, struct kube_exec_result *r) {
    int rc = exec_once(c, o, r, 1);
    /* Refused with 401 before anything ran: fresh credentials (a rotated token file, the
     * exec plugin run again) may cure it; one more attempt then. */
    if (rc < 0 && r->http_status == 401 && c && kube_client_refresh_credentials(c, 401, 0))
        rc = exec_once(c, o, r, 0);
    return rc;
}
