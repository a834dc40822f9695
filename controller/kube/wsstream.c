/* kube/wsstream.c — one WebSocket stream to the API server (see wsstream.h).
 *
 * Owns: the connection (a raw lws client: resolve, connect with its timeout, the event
 * loop, timers, lws_cancel_service), the HTTP CONNECT tunnel through the proxy, TLS with
 * the stream's own SSL_CTX over OpenSSL memory BIOs (SNI, the hostname or IP check
 * against tls-server-name else the server's host, the client certificate), the HTTP/1.1
 * upgrade with the Authorization, Impersonate-* and User-Agent headers and its checks
 * (Sec-WebSocket-Accept, the chosen subprotocol, the status of a refused upgrade and its
 * Status message), RFC 6455 through kube/wsframe.c (server frames parsed a whole read at
 * a time, payload handed on in place; client frames masked), the output queue, pings and
 * the hang-up, the deadline, the input thread (struct wss_input) and the end.
 * Does not own: what the messages mean (kube/exec.c, kube/portforward.c), retries.
 *
 * Why not lws' WebSocket client: libwebsockets 4.1 parses every received WebSocket byte
 * through its client state machine, which cost twice kubectl's client CPU per byte of
 * exec output (docs/benchmarks.md, "Exec throughput"); and its TLS needs the context's
 * global OpenSSL init, which allocates a fresh ex-data index into a process-global
 * variable per context: contexts created per call race (a handshake straddling another
 * thread's context creation fails certificate verification) and grow the index without
 * bound (+2.5 ms per SSL_new after 20 000 contexts). So no context here asks for the
 * global init (nothing else in the process may create lws contexts with
 * DO_SSL_GLOBAL_INIT), and TLS is ours: lws 4.1.6 cannot do TLS on a raw client (it
 * starts the handshake before the socket exists), hence the memory BIOs.
 *
 * Memory is bounded whatever the stream carries: received data is handed on as it is
 * read, one read (at most WSS_RX_BUFFER) at a time; a slow on_message stalls the reads
 * and TCP pushes back on the server. What we write goes through our own queue (outq,
 * WSS_OUTQ_MAX) with send(): while lws holds unsent output of a raw connection it reads
 * nothing, so it never holds any; nothing new is sent before the socket took the last.
 * Input from input_fd is read by the stream's thread at most KUBE_WSS_INPUT_SLOTS chunks
 * ahead, so waiting for input never holds up output; the thread is joined before
 * kube_wss_run returns.
 *
 * The end: when on_message ends the stream (exec: the status is complete) the connection
 * is dropped (lws' asynchronous kill), not closed politely: a server whose command exited
 * without reading has stopped reading the connection, so a polite close would wait for
 * nothing. Such a server also closes at once, with our input unread, so its TCP stack
 * resets the connection right behind its last message. So nothing is written while input
 * waits in the socket (input_waiting), and after a failed write — or when lws closes the
 * connection on a reset before we read — what is still in the socket is read directly and
 * fed to the parser, which stands where the last read left it (salvage). */
#include "kube/wsstream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/errfmt.h"
#include "kube/config.h"
#include "kube/proxy.h"
#include "kube/wsconn.h"

#define WSS_RX_BUFFER (64u * 1024)     /* one read handed on: TLS plaintext; lws reads its 64 KiB service buffer */
#define WSS_SALVAGE_MAX (8u << 20)     /* what salvage reads from the socket at most */
#define WSS_OUTQ_MAX (1u << 20)        /* output the socket has not taken, at most */
#define WSS_TUNNEL_MAX (16u * 1024)    /* the proxy's answer to CONNECT, at most */
#define WSS_LOCAL_PROTOCOL "yao-wsstream"
#define WSS_SERV_BUF (64u * 1024)      /* lws service buffer: each read */
#ifndef YAO_VERSION
#define YAO_VERSION "dev"
#endif

/* ---- input from an fd, read by a thread of the stream ----------------------------------- */

/* A thread reads the fd into a ring of chunk slots and wakes the loop (lws_cancel_service,
 * which lws turns into EVENT_WAIT_CANCELLED on the loop's thread); the loop sends the
 * oldest full slot per writable event and frees it. Slots [head, head + count) are full
 * and belong to the loop; the next one is the reader's to fill. When all are full the
 * reader waits (backpressure: it reads no more than the socket takes). It waits for input
 * in poll() on the fd and a pipe of its own, so stopping it needs no input: the loop
 * writes to the pipe and joins it. */
struct wss_slot {
    size_t len;
    unsigned char buf[KUBE_WSS_HEADROOM + 1 + KUBE_WSS_CHUNK];   /* frame header room, channel, data */
};

struct wss_input {
    int fd;
    int wake[2];                 /* the stop pipe: read end polled by the reader */
    struct lws_context *ctx;     /* to wake the loop */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* a slot was freed, or stop */
    /* under mu */
    unsigned head, count;
    int eof;                     /* read() returned 0: no more after the full slots */
    int err;                     /* errno of a failed read or poll */
    int stop;
    struct wss_slot slot[KUBE_WSS_INPUT_SLOTS];
};

static void *input_main(void *arg) {
    struct wss_input *rd = arg;
    for (;;) {
        pthread_mutex_lock(&rd->mu);
        while (!rd->stop && rd->count == KUBE_WSS_INPUT_SLOTS) pthread_cond_wait(&rd->cv, &rd->mu);
        int stop = rd->stop;
        struct wss_slot *sl = &rd->slot[(rd->head + rd->count) % KUBE_WSS_INPUT_SLOTS];
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
            n = read(rd->fd, sl->buf + KUBE_WSS_HEADROOM + 1, KUBE_WSS_CHUNK);
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

static struct wss_input *input_new(int fd) {
    struct wss_input *rd = calloc(1, sizeof(*rd));
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

static int input_start(struct wss_input *rd, struct lws_context *ctx) {
    rd->ctx = ctx;
    if (pthread_create(&rd->thread, NULL, input_main, rd) != 0) return -1;
    rd->started = 1;
    return 0;
}

/* Stop the thread (wherever it waits: for a slot, for input) and join it. */
static void input_stop(struct wss_input *rd) {
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

static void input_free(struct wss_input *rd) {
    if (!rd) return;
    input_stop(rd);
    close(rd->wake[0]);
    close(rd->wake[1]);
    pthread_mutex_destroy(&rd->mu);
    pthread_cond_destroy(&rd->cv);
    free(rd);
}

/* Something for the loop: a full slot, EOF or an error. */
static int input_pending(struct wss_input *rd) {
    pthread_mutex_lock(&rd->mu);
    int pending = rd->count || rd->eof || rd->err;
    pthread_mutex_unlock(&rd->mu);
    return pending;
}

/* ---- the stream --------------------------------------------------------------------- */

struct kube_wss {
    const struct kube_wss_options *o;
    struct kube_wss_result *res;
    char *err;
    size_t errlen;
    struct kube_config *cfg;
    struct kube_ws_endpoint ep;
    const struct kube_proxy *proxy;   /* the HTTP proxy to tunnel through, or NULL */
    struct lws_context *ctx;
    SSL_CTX *ssl;            /* the stream's client TLS context (ours, not lws') */
    struct lws *wsi;
    lws_sorted_usec_list_t deadline, keepalive, poll;
    char *path;              /* the request path, prefix and query included */
    char host[300];          /* the Host header */
    char key[KUBE_WS_KEY_LEN + 1];
    char *auth;              /* Authorization header value; wiped after use */
    char **imp;              /* Impersonate-* header lines, or NULL */
    int failed;              /* err holds the first failure */
    int finished;            /* no connection left: the loop ends */
    int ending;              /* the user (or the end of a message) ended it */
    int connected;           /* the transport is up */
    int tunnel_pending;      /* CONNECT sent, the proxy's answer not complete yet */
    int request_sent;
    struct dynbuf tunnel;    /* the proxy's answer so far */
    struct dynbuf answer;    /* the upgrade answer until its header is complete */
    struct kube_ws_parser wp;
    int pong_pending, ping_pending;
    unsigned char pong[KUBE_WSS_HEADROOM + 125];
    size_t pong_len;
    lws_usec_t last_rx;      /* when the server last sent anything (or the request went out) */
    struct wss_input *in;    /* input_fd's reader, or NULL */
    int input_ended;         /* on_input_end was called */
    SSL *tls;                /* https: our TLS client, over memory BIOs */
    BIO *tls_in, *tls_out;   /* owned by tls */
    int tls_ready;           /* its handshake is done */
    char tls_verify[160];    /* why OpenSSL refused the server's certificate */
    struct dynbuf outq;      /* bytes for the socket (encrypted with TLS) it has not taken yet */
    unsigned char rx[WSS_RX_BUFFER];   /* decrypted input */
};

/* Record a failure (the first wins) and wake the loop. */
static void fail_v(struct kube_wss *st, const char *fmt, va_list ap) {
    if (st->ctx) lws_cancel_service(st->ctx);   /* the loop may be about to sleep */
    if (st->failed) return;
    st->failed = 1;
    errfmt_v(st->err, st->errlen, fmt, ap);
}

static void fail(struct kube_wss *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct kube_wss *st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_v(st, fmt, ap);
    va_end(ap);
}

void kube_wss_stop(struct kube_wss *st) {
    st->ending = 1;
    if (st->wsi) lws_set_timeout(st->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    if (st->ctx) lws_cancel_service(st->ctx);
}

void kube_wss_fail(struct kube_wss *st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_v(st, fmt, ap);
    va_end(ap);
    kube_wss_stop(st);
}

void kube_wss_want_write(struct kube_wss *st) {
    if (st->wsi) lws_callback_on_writable(st->wsi);
}

/* ---- bytes to the socket ------------------------------------------------------------- */

/* Send what waits in the output queue, as much as the socket takes now; the rest waits
 * for the next writable event. Written with send() rather than lws_write: while lws holds
 * unsent output of a raw connection it reads nothing, so lws never holds any. 0, or -1
 * when the socket failed. */
static int out_flush(struct kube_wss *st) {
    lws_sockfd_type fd = st->wsi ? lws_get_socket_fd(st->wsi) : -1;
    if (fd < 0) return st->outq.len ? -1 : 0;
    while (st->outq.len) {
        ssize_t n = send(fd, st->outq.data, st->outq.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) return -1;
        dynbuf_consume(&st->outq, (size_t)n);
    }
    if (st->outq.len) lws_callback_on_writable(st->wsi);
    return 0;
}

/* Queue what OpenSSL wrote into its output BIO, and send it. 0 or -1. */
static int tls_flush(struct kube_wss *st) {
    char *p;
    long n = BIO_get_mem_data(st->tls_out, &p);
    if (n > 0 && dynbuf_append(&st->outq, p, (size_t)n) < 0) return -1;
    (void)BIO_reset(st->tls_out);
    return out_flush(st);
}

/* Send bytes of the stream: through TLS, or as they are. 0 or -1. */
static int transport_write(struct kube_wss *st, const unsigned char *p, size_t n) {
    if (!st->tls) {
        if (dynbuf_append(&st->outq, p, n) < 0) return -1;
        return out_flush(st);
    }
    if (n && SSL_write(st->tls, p, (int)n) != (int)n) {
        ERR_clear_error();
        return -1;
    }
    return tls_flush(st);
}

/* One client frame: p holds the payload with KUBE_WSS_HEADROOM writable bytes before it;
 * it is masked in place. 0 or -1. */
static int frame_send(struct kube_wss *st, int opcode, unsigned char *p, size_t n) {
    unsigned char key[4], hdr[KUBE_WS_MAX_HEADER];
    /* /dev/urandom through lws: OpenSSL's generator costs a slow first seeding (0.5 s
     * under valgrind) that a plain-http stream has no other use for. */
    if (lws_get_random(st->ctx, key, sizeof(key)) != sizeof(key) && RAND_bytes(key, sizeof(key)) != 1) return -1;
    size_t h = kube_ws_frame_header(hdr, opcode, n, key);
    kube_ws_mask(p, n, key);
    memcpy(p - h, hdr, h);
    return transport_write(st, p - h, h + n);
}

/* ---- bytes from the socket ----------------------------------------------------------- */

static int feed_frames(struct kube_wss *st, const unsigned char *p, size_t n);

/* After a failed write: read what the server sent before it closed (lws would drop it),
 * and when that ends the stream (the user's last message, the close frame), end it now. */
static void salvage(struct kube_wss *st, int closing) {
    unsigned char buf[16384];
    size_t total = 0;
    lws_sockfd_type fd = st->wsi ? lws_get_socket_fd(st->wsi) : -1;
    while (!st->ending && !st->res->closed && !st->failed && total < WSS_SALVAGE_MAX && fd >= 0) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0) break;
        total += (size_t)n;
        if (!st->tls) {
            if (feed_frames(st, buf, (size_t)n) < 0) break;
            continue;
        }
        if (BIO_write(st->tls_in, buf, (int)n) != (int)n) break;
        int k;
        while (!st->ending && !st->failed && (k = SSL_read(st->tls, st->rx, (int)sizeof(st->rx))) > 0)
            if (feed_frames(st, st->rx, (size_t)k) < 0) break;
    }
    ERR_clear_error();
    if ((st->ending || st->res->closed) && !closing && st->wsi) {
        lws_set_timeout(st->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        lws_cancel_service(st->ctx);
    }
}

/* A write failed: the server has closed the connection, and its last words are most
 * likely waiting in our receive buffer. Nothing more is sent; look for them. */
static void send_failed(struct kube_wss *st) {
    st->res->send_failed = 1;
    salvage(st, 0);
}

int kube_wss_send(struct kube_wss *st, unsigned char *p, size_t n) {
    if (!st->wsi || !st->res->established || st->res->send_failed || st->ending || st->failed) return -1;
    if (frame_send(st, KUBE_WS_BINARY, p, n) < 0) {
        send_failed(st);
        return -1;
    }
    return 0;
}

/* Parser callbacks. Data: to the user; its non-zero ends the stream (2 stops the parser). */
static int on_ws_data(void *ud, int opcode, const unsigned char *p, size_t n, int first, int final) {
    struct kube_wss *st = ud;
    (void)opcode;
    if (st->ending || st->failed) return 1;
    if (st->o->on_message(st->o->ud, st, p, n, first, final) || st->ending || st->failed) {
        st->ending = 1;
        return 2;
    }
    return 0;
}

/* Control frames: a ping is answered (on the next writable event), a close ends it. */
static int on_ws_control(void *ud, int opcode, const unsigned char *p, size_t n) {
    struct kube_wss *st = ud;
    if (opcode == KUBE_WS_CLOSE) {
        kube_ws_note_close(p, n, st->res->close_reason, sizeof(st->res->close_reason));
        st->res->closed = 1;
        return 3;
    }
    if (opcode == KUBE_WS_PING && st->wsi) {
        memcpy(st->pong + KUBE_WSS_HEADROOM, p, n);
        st->pong_len = n;
        st->pong_pending = 1;
        lws_callback_on_writable(st->wsi);
    }
    return 0;
}

/* Feed frames to the parser. 0, or -1 (the stream failed). */
static int feed_frames(struct kube_wss *st, const unsigned char *p, size_t n) {
    char perr[160];
    if (n && kube_ws_parser_feed(&st->wp, p, n, perr, sizeof(perr)) < 0) {
        fail(st, "%s: %s", st->o->what, perr);
        return -1;
    }
    return 0;
}

/* Every KUBE_WSS_PING_SECS: before the upgrade, give up on a server that does not answer
 * it; after, ping a quiet connection and give up on one quiet for KUBE_WSS_HANGUP_SECS. */
static void on_keepalive(lws_sorted_usec_list_t *sul) {
    struct kube_wss *st = lws_container_of(sul, struct kube_wss, keepalive);
    if (!st->wsi || st->finished || st->ending || st->failed) return;
    lws_usec_t quiet = lws_now_usecs() - st->last_rx;
    int up = st->res->established;
    if (st->request_sent && !up && quiet >= (lws_usec_t)KUBE_WSS_UPGRADE_SECS * LWS_US_PER_SEC) {
        fail(st, "%s: %s did not answer the upgrade request within %d s", st->o->what, st->cfg->server,
             KUBE_WSS_UPGRADE_SECS);
        lws_set_timeout(st->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
        return;
    }
    if (up && quiet >= (lws_usec_t)KUBE_WSS_HANGUP_SECS * LWS_US_PER_SEC) {
        fail(st, "%s: nothing from the server for %d s", st->o->what, KUBE_WSS_HANGUP_SECS);
        lws_set_timeout(st->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
        return;
    }
    if (up && quiet >= (lws_usec_t)KUBE_WSS_PING_SECS * LWS_US_PER_SEC) {
        st->ping_pending = 1;
        lws_callback_on_writable(st->wsi);
    }
    lws_sul_schedule(st->ctx, 0, &st->keepalive, on_keepalive,
                     (lws_usec_t)(up ? KUBE_WSS_PING_SECS : 5) * LWS_US_PER_SEC);
}

/* The answer to the upgrade is complete and is a 101: check it, and open the stream. 0,
 * or -1 (failed) to drop the connection. */
static int upgraded(struct kube_wss *st, const struct kube_ws_answer *a) {
    const char *why = kube_ws_check_answer(a, st->key);
    if (why) {
        fail(st, "%s: bad answer to the upgrade from %s: %s", st->o->what, st->cfg->server, why);
        return -1;
    }
    if (!kube_ws_protocol_offered(st->o->protocols, a->protocol)) {
        fail(st, "%s: the server chose subprotocol \"%s\", which was not offered (%s)", st->o->what, a->protocol,
             st->o->protocols);
        return -1;
    }
    st->res->established = 1;
    st->res->http_status = 101;
    if (st->in && input_start(st->in, st->ctx) < 0) {
        fail(st, "%s: cannot start the input reader thread", st->o->what);
        return -1;
    }
    if (st->o->on_open && st->o->on_open(st->o->ud, st, a->protocol) < 0) {
        if (!st->failed) fail(st, "%s: the stream could not be opened", st->o->what);
        return -1;
    }
    lws_callback_on_writable(st->wsi);
    lws_sul_schedule(st->ctx, 0, &st->keepalive, on_keepalive, (lws_usec_t)KUBE_WSS_PING_SECS * LWS_US_PER_SEC);
    return 0;
}

/* What the server sent: the upgrade answer first, then frames, parsed a read at a time.
 * 0, or -1 to drop the connection. */
static int received(struct kube_wss *st, const unsigned char *in, size_t len) {
    st->last_rx = lws_now_usecs();
    if (st->ending || st->res->closed) return 0;
    if (!st->res->established) {
        /* The read that completes the header may carry many frames after it (a command
         * that writes at once): only the header is bounded, so buffer at most what is
         * left of KUBE_WS_HS_MAX and hand the rest of the read to the parser. */
        struct kube_ws_answer a;
        size_t room = st->answer.max > st->answer.len ? st->answer.max - st->answer.len : 0;
        size_t take = len < room ? len : room;
        if (dynbuf_append(&st->answer, in, take) < 0) {
            fail(st, "%s: out of memory reading the answer to the upgrade from %s", st->o->what, st->cfg->server);
            return -1;
        }
        int k = kube_ws_parse_answer(st->answer.data, st->answer.len, &a);
        if (k < 0) {
            fail(st, "%s: %s did not answer the upgrade request with HTTP", st->o->what, st->cfg->server);
            return -1;
        }
        if (k == 0) {
            if (take == len && st->answer.len < st->answer.max) return 0;
            fail(st, "%s: the answer to the upgrade from %s is too long", st->o->what, st->cfg->server);
            return -1;
        }
        if (a.status != 101) {
            st->res->http_status = a.status;
            fail(st, "%s: upgrade refused: HTTP %d", st->o->what, a.status);
            return -1;
        }
        if (upgraded(st, &a) < 0) return -1;
        if (feed_frames(st, (const unsigned char *)st->answer.data + a.header_len, st->answer.len - a.header_len) < 0)
            return -1;
        in += take;
        len -= take;
    }
    if (feed_frames(st, in, len) < 0) return -1;
    if (st->answer.data) dynbuf_free(&st->answer);
    if (st->failed) return -1;
    if (st->ending || st->res->closed) {
        /* Done: drop the connection now, whatever we still had to send (see the top). */
        lws_set_timeout(st->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        lws_cancel_service(st->ctx);
    }
    return 0;
}

/* ---- TLS over the raw connection: OpenSSL with memory BIOs ---------------------------- */

/* OpenSSL's verdict on each certificate of the chain: the first complaint is noted for a
 * readable error (the verdict stays OpenSSL's). The stream is the SSL's app data (ex-data
 * index 0, no new index: see the top). */
static int tls_verify_cb(int ok, X509_STORE_CTX *x) {
    SSL *ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct kube_wss *st = ssl ? SSL_get_app_data(ssl) : NULL;
    if (!ok && st) kube_ws_note_cert_error(x, st->tls_verify, sizeof(st->tls_verify));
    return ok;
}

/* Drive the handshake. 0 (done, or waiting for the server) or -1 (failed). */
static int tls_handshake(struct kube_wss *st) {
    int r = SSL_do_handshake(st->tls);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(st->tls, r);
    if (tls_flush(st) < 0) {
        fail(st, "%s: connection to %s failed: write failed", st->o->what, st->cfg->server);
        return -1;
    }
    if (r == 1) {
        st->tls_ready = 1;
        lws_callback_on_writable(st->wsi);   /* the upgrade request */
        return 0;
    }
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
    long v = SSL_get_verify_result(st->tls);
    unsigned long le = ERR_peek_error();
    char why[160];
    ERR_error_string_n(le, why, sizeof(why));
    ERR_clear_error();
    if (v != X509_V_OK && !st->cfg->insecure_skip_tls_verify)
        fail(st, "%s: TLS: the server certificate of %s is not trusted: %s", st->o->what, st->cfg->server,
             st->tls_verify[0] ? st->tls_verify : X509_verify_cert_error_string(v));
    else
        fail(st, "%s: connection to %s failed: TLS handshake: %s", st->o->what, st->cfg->server,
             le ? why : "connection closed");
    return -1;
}

/* The TLS client of the stream on top of the raw connection: SNI and the hostname (or
 * IP address) check against tls-server-name, else the server's host. */
static int tls_start(struct kube_wss *st) {
    const char *name = st->cfg->tls_server_name && st->cfg->tls_server_name[0] ? st->cfg->tls_server_name : st->ep.host;
    unsigned char ip[16];
    int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    if (!in || !out || !(st->tls = SSL_new(st->ssl))) {
        BIO_free(in);
        BIO_free(out);
        goto fail;
    }
    SSL_set_bio(st->tls, in, out);   /* the SSL owns both now */
    st->tls_in = in;
    st->tls_out = out;
    SSL_set_connect_state(st->tls);
    if (!is_ip && SSL_set_tlsext_host_name(st->tls, name) != 1) goto fail;
    if (!st->cfg->insecure_skip_tls_verify) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(st->tls);
        if ((is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, name) : X509_VERIFY_PARAM_set1_host(vp, name, 0)) != 1)
            goto fail;
        SSL_set_app_data(st->tls, st);
        SSL_set_verify(st->tls, SSL_VERIFY_PEER, tls_verify_cb);
    } else {
        SSL_set_verify(st->tls, SSL_VERIFY_NONE, NULL);
    }
    if (SSL_set_alpn_protos(st->tls, (const unsigned char *)"\x08http/1.1", 9) != 0) goto fail;
    return tls_handshake(st);
fail:
    ERR_clear_error();
    fail(st, "%s: cannot set up TLS", st->o->what);
    return -1;
}

/* Bytes from the socket: through TLS (the handshake, then application data, handed on
 * in reads of up to WSS_RX_BUFFER), or as they are. 0 or -1. */
static int transport_read(struct kube_wss *st, const unsigned char *in, size_t len) {
    if (!st->tls) return received(st, in, len);
    if (len && BIO_write(st->tls_in, in, (int)len) != (int)len) {
        fail(st, "%s: out of memory", st->o->what);
        return -1;
    }
    if (!st->tls_ready && (tls_handshake(st) < 0 || !st->tls_ready)) return st->failed ? -1 : 0;
    for (;;) {
        int n = SSL_read(st->tls, st->rx, (int)sizeof(st->rx));
        if (n > 0) {
            if (received(st, st->rx, (size_t)n) < 0) return -1;
            if (st->ending || st->res->closed) return 0;
            continue;
        }
        int e = SSL_get_error(st->tls, n);
        ERR_clear_error();
        if (e == SSL_ERROR_WANT_READ) break;
        if (e == SSL_ERROR_ZERO_RETURN) break;   /* close_notify: the socket closes next */
        if (!st->failed && !st->ending) fail(st, "%s: TLS error on the connection to %s", st->o->what, st->cfg->server);
        return -1;
    }
    return tls_flush(st) < 0 && !st->ending ? -1 : 0;
}

/* The transport to the server is up (directly, or through the proxy's tunnel): TLS
 * (ours) next, or the upgrade request. */
static int transport_up(struct kube_wss *st) {
    st->connected = 1;
    if (st->ep.tls) return tls_start(st);
    lws_callback_on_writable(st->wsi);
    return 0;
}

/* ---- the proxy's tunnel ---------------------------------------------------------------- */

/* Connected to the proxy: ask it for a tunnel to the server (HTTP CONNECT). */
static int tunnel_start(struct kube_wss *st) {
    char req[1024];
    size_t n = kube_proxy_connect_request(req, sizeof(req), st->ep.host, st->ep.port, st->proxy);
    int rc = n && dynbuf_append(&st->outq, req, n) == 0 ? out_flush(st) : -1;
    OPENSSL_cleanse(req, sizeof(req));   /* it may hold the proxy's password */
    if (rc < 0) {
        fail(st, "%s: cannot send CONNECT to the proxy %s:%d", st->o->what, st->proxy->host, st->proxy->port);
        return -1;
    }
    st->tunnel_pending = 1;
    return 0;
}

/* The proxy's answer to CONNECT: on 200 the tunnel stands and the stream goes on over it
 * (bytes after the answer are the server's). */
static int tunnel_answer(struct kube_wss *st, const unsigned char *in, size_t len) {
    int status = 0;
    size_t hl = 0;
    if (dynbuf_append(&st->tunnel, in, len) < 0) {
        fail(st, "%s: the proxy %s:%d sent an answer to CONNECT longer than 16 KiB", st->o->what, st->proxy->host,
             st->proxy->port);
        return -1;
    }
    int k = kube_proxy_connect_answer(st->tunnel.data, st->tunnel.len, &status, &hl);
    if (k == 0) return 0;
    if (k < 0) {
        fail(st, "%s: the proxy %s:%d (%s) did not answer CONNECT with HTTP", st->o->what, st->proxy->host,
             st->proxy->port, st->proxy->source);
        return -1;
    }
    if (status != 200) {
        fail(st, "%s: the proxy %s:%d (%s) refused CONNECT to %s:%d: HTTP %d%s", st->o->what, st->proxy->host,
             st->proxy->port, st->proxy->source, st->ep.host, st->ep.port, status,
             status == 407 ? " (proxy authentication required: user:password in the proxy URL)" : "");
        return -1;
    }
    st->tunnel_pending = 0;
    if (transport_up(st) < 0) return -1;
    if (st->tunnel.len > hl) return transport_read(st, (unsigned char *)st->tunnel.data + hl, st->tunnel.len - hl);
    return 0;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Whether input waits to be read: in the socket (TLS input is drained at each read). lws
 * 4.1 services a connection's writes before its reads, and once a write has failed it
 * drops whatever it reads next. A server that ends a stream closes the connection right
 * after its last message, with our unread input in its buffer, so its TCP stack answers
 * with a reset: the message and the reset arrive together, and a write that goes first
 * fails and loses the message (kwok: 3 exec sessions in 4). So no write while input is
 * waiting; it is read, and may end the stream, first. */
static int input_waiting(struct kube_wss *st) {
    int n = 0;
    lws_sockfd_type fd = lws_get_socket_fd(st->wsi);
    return fd >= 0 && ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* The upgrade request, once the transport (and TLS) is up. 0 or -1. */
static int send_request(struct kube_wss *st) {
    static const char ua[] = "yao-sandbox/" YAO_VERSION;
    size_t cap = strlen(st->path) + strlen(st->host) + strlen(st->o->protocols) + (st->auth ? strlen(st->auth) : 0) +
                 512;
    for (size_t i = 0; st->imp && st->imp[i]; i++) cap += strlen(st->imp[i]) + 2;
    char *req = malloc(cap);
    size_t n = req ? kube_ws_upgrade_request(req, cap, st->host, st->path, st->key, st->o->protocols, st->auth,
                                             (const char *const *)st->imp, ua)
                   : 0;
    int w = n ? transport_write(st, (unsigned char *)req, n) : -1;
    if (req) OPENSSL_cleanse(req, cap);   /* it holds the credentials */
    free(req);
    if (w < 0) {
        fail(st, "%s: cannot send the upgrade request to %s", st->o->what, st->cfg->server);
        return -1;
    }
    st->request_sent = 1;
    st->last_rx = lws_now_usecs();
    lws_sul_schedule(st->ctx, 0, &st->keepalive, on_keepalive, 5 * LWS_US_PER_SEC);
    return 0;
}

/* Send the oldest chunk read from input_fd; when none is left and the input ended, tell
 * the user (once). Nothing yet: wait for the reader's wake-up. */
static void send_input(struct kube_wss *st) {
    struct wss_input *rd = st->in;
    pthread_mutex_lock(&rd->mu);
    unsigned count = rd->count;
    int eof = rd->eof, err = rd->err;
    struct wss_slot *sl = &rd->slot[rd->head];
    pthread_mutex_unlock(&rd->mu);

    if (count) {
        unsigned char *m = sl->buf + KUBE_WSS_HEADROOM;
        m[0] = st->o->input_channel;
        if (frame_send(st, KUBE_WS_BINARY, m, sl->len + 1) < 0) {
            send_failed(st);
            return;
        }
        st->res->input_bytes += sl->len;
        pthread_mutex_lock(&rd->mu);   /* the frame is in outq: the slot is free */
        rd->head = (rd->head + 1) % KUBE_WSS_INPUT_SLOTS;
        rd->count--;
        int more = rd->count || rd->eof || rd->err;
        pthread_cond_signal(&rd->cv);
        pthread_mutex_unlock(&rd->mu);
        if (more) lws_callback_on_writable(st->wsi);
        return;
    }
    if ((eof || err) && !st->input_ended) {
        st->input_ended = 1;
        if (st->o->on_input_end) st->o->on_input_end(st->o->ud, st, err);
    }
}

/* Writable: the upgrade request first; then a pong or ping, the user's messages, input.
 * 0 or -1. */
static int writable(struct kube_wss *st) {
    if (st->outq.len && !st->ending && !st->failed) {
        /* The socket has not taken the last bytes yet: nothing new before it has. */
        if (out_flush(st) < 0) {
            if (!st->res->established) {
                fail(st, "%s: connection to %s failed: write failed", st->o->what, st->cfg->server);
                return -1;
            }
            send_failed(st);
            return 0;
        }
        if (st->outq.len) return 0;
    }
    if (!st->request_sent) {
        if (!st->connected || (st->tls && !st->tls_ready)) return 0;
        return send_request(st);
    }
    if (!st->res->established || st->ending || st->failed || st->res->closed || st->res->send_failed) return 0;
    if (st->pong_pending || st->ping_pending) {
        /* Not held back by input_waiting: a stream of output must not starve the pong. */
        int op = st->pong_pending ? KUBE_WS_PONG : KUBE_WS_PING;
        size_t n = st->pong_pending ? st->pong_len : 0;
        st->pong_pending = st->ping_pending = 0;
        if (frame_send(st, op, st->pong + KUBE_WSS_HEADROOM, n) < 0) {
            send_failed(st);
            return 0;
        }
        lws_callback_on_writable(st->wsi);
        return 0;
    }
    if (input_waiting(st)) {
        /* Read first (see input_waiting): this round's input is handled next. */
        lws_callback_on_writable(st->wsi);
        return 0;
    }
    if (st->o->on_writable) {
        if (st->o->on_writable(st->o->ud, st) < 0) {
            if (!st->failed) kube_wss_stop(st);
            return -1;
        }
        if (st->outq.len || st->ending || st->failed || st->res->send_failed) return st->failed ? -1 : 0;
    }
    if (st->in && !st->input_ended) send_input(st);
    return 0;
}

/* ---- the loop ------------------------------------------------------------------------- */

/* The connection is gone: the loop ends (now, not at lws' next timer). For WSI_DESTROY
 * only when it is the stream's (lws destroys other wsis of the context too). */
static int gone(struct kube_wss *st, struct lws *wsi, enum lws_callback_reasons reason) {
    if (reason == LWS_CALLBACK_WSI_DESTROY && wsi != st->wsi) return 0;
    st->finished = 1;
    st->wsi = NULL;
    if (st->ctx) lws_cancel_service(st->ctx);
    return 0;
}

/* The one libwebsockets callback; the stream is the context's user pointer. The
 * connection is raw: lws moves bytes, the WebSocket is ours. */
static int wss_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct lws_context *ctx = wsi ? lws_get_context(wsi) : NULL;
    struct kube_wss *st = ctx ? lws_context_user(ctx) : NULL;
    (void)user;   /* no per-connection data: the stream is the context's */
    if (!st) return 0;

    switch (reason) {
    case LWS_CALLBACK_RAW_CONNECTED:   /* TCP is up: the proxy's tunnel, then TLS (ours) or the request */
        if (st->connected || st->tunnel_pending) return 0;
        if (st->proxy) return tunnel_start(st);
        return transport_up(st);

    case LWS_CALLBACK_RAW_RX:
        if (st->tunnel_pending) return tunnel_answer(st, in, len);
        return transport_read(st, in, len);

    case LWS_CALLBACK_RAW_WRITEABLE:
        return writable(st);

    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        /* lws_cancel_service() was called: by the input reader (or by fail/stop, which
         * need nothing here). lws 4.1 sends this to every protocol of every vhost with a
         * stand-in wsi that only has the context, so the connection is st->wsi. */
        if (st->in && st->wsi && st->res->established && !st->finished && !st->failed && !st->ending &&
            !st->input_ended && !st->res->send_failed && input_pending(st->in))
            lws_callback_on_writable(st->wsi);
        return 0;

    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        const char *why = in && len ? (const char *)in : "unknown error";
        if (st->proxy && !st->connected)
            fail(st, "%s: connection to the proxy %s:%d (%s) failed: %s", st->o->what, st->proxy->host,
                 st->proxy->port, st->proxy->source, why);
        else
            fail(st, "%s: connection to %s failed: %s", st->o->what, st->cfg->server, why);
        return gone(st, wsi, reason);
    }

    case LWS_CALLBACK_RAW_CLOSE:
        /* lws closes a connection whose write failed without reading what waits in the
         * socket (while it holds unsent output it does not read at all): the server's
         * last message may be there, and the socket is still open here. */
        if (wsi == st->wsi && st->res->established && !st->ending && !st->res->closed && !st->failed)
            salvage(st, 1);
        return gone(st, wsi, reason);

    case LWS_CALLBACK_WSI_DESTROY:
        return gone(st, wsi, reason);

    default:
        return 0;
    }
}

static const struct lws_protocols wss_protocols[] = {
    {WSS_LOCAL_PROTOCOL, wss_callback, 0, WSS_RX_BUFFER, 0, NULL, KUBE_WSS_CHUNK + 16},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void on_deadline(lws_sorted_usec_list_t *sul) {
    struct kube_wss *st = lws_container_of(sul, struct kube_wss, deadline);
    fail(st, "%s: timed out after %ld ms", st->o->what, st->o->timeout_ms);
    if (st->wsi)
        lws_set_timeout(st->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
    else
        st->finished = 1;
}

static void on_poll(lws_sorted_usec_list_t *sul) {
    struct kube_wss *st = lws_container_of(sul, struct kube_wss, poll);
    if (st->finished || st->ending || st->failed) return;
    st->o->on_poll(st->o->ud, st);
    if (!st->finished && !st->ending && !st->failed)
        lws_sul_schedule(st->ctx, 0, &st->poll, on_poll, (lws_usec_t)st->o->poll_ms * LWS_US_PER_MS);
}

/* lws logs to stderr by default; keep it quiet unless YAO_LWS_LOG asks (a level mask). */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static void log_setup(void) {
    const char *v = getenv("YAO_LWS_LOG");
    lws_set_log_level(v ? atoi(v) : 0, NULL);
}

/* The stream's lws context: no listener, one raw protocol, no global SSL init (see the
 * top), and no proxy of lws' own (it would read $http_proxy itself: kube/proxy.h decides,
 * and the tunnel is ours). */
static struct lws_context *context_new(struct kube_wss *st) {
    pthread_once(&log_once, log_setup);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = wss_protocols;
    info.user = st;
    info.gid = -1;
    info.uid = -1;
    info.fd_limit_per_thread = 8;            /* one socket plus lws' own pipe; no big fd tables */
    info.pt_serv_buf_size = WSS_SERV_BUF;
    info.connect_timeout_secs = 15;
    struct lws_context *ctx = lws_create_context(&info);
    if (!ctx) return NULL;
    struct lws_vhost *dvh = lws_get_vhost_by_name(ctx, "default");
    if (!dvh || lws_set_proxy(dvh, "127.0.0.1:0")) {   /* port 0: no proxy */
        lws_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

/* Connect to the server (or the proxy) as a raw TCP client (method "RAW"); the callback
 * gets RAW_CONNECTED, then RAW_RX / RAW_WRITEABLE / RAW_CLOSE. Always plain TCP for lws
 * (see the top). */
static struct lws *connect_raw(struct kube_wss *st) {
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof(ci));
    ci.context = st->ctx;
    ci.address = st->proxy ? st->proxy->host : st->ep.host;
    ci.port = st->proxy ? st->proxy->port : st->ep.port;
    ci.path = "";
    ci.method = "RAW";
    ci.host = ci.address;
    ci.protocol = WSS_LOCAL_PROTOCOL;
    ci.local_protocol_name = WSS_LOCAL_PROTOCOL;
    ci.pwsi = &st->wsi;
    ci.ssl_connection = LCCSCF_PRIORITIZE_READS;
    return lws_client_connect_via_info(&ci);
}

/* Set up everything before connecting: credentials, headers, TLS, the context. 0 or -1. */
static int prepare(struct kube_wss *st, struct kube_client *c, struct kube_auth *auth) {
    const struct kube_wss_options *o = st->o;
    struct dynbuf full;
    if (kube_ws_parse_server(st->cfg->server, &st->ep, o->what, st->err, st->errlen) < 0) {
        st->failed = 1;
        return -1;
    }
    dynbuf_init(&full, st->ep.prefix_len + strlen(o->path) + 1);
    if (dynbuf_append(&full, st->ep.prefix, st->ep.prefix_len) < 0 || dynbuf_append(&full, o->path, strlen(o->path)) < 0) {
        dynbuf_free(&full);
        fail(st, "%s: out of memory", o->what);
        return -1;
    }
    st->path = full.data;   /* NUL-terminated (dynbuf); freed with the stream */
    kube_ws_host_header(&st->ep, st->cfg, st->host, sizeof(st->host));
    if (kube_config_auth(st->cfg, auth, st->err, st->errlen) < 0) {
        st->failed = 1;
        return -1;
    }
    st->auth = kube_ws_auth_value(st->cfg, auth);
    int oom = 0;
    st->imp = kube_config_impersonation_headers(st->cfg, &oom);
    if (oom) {
        fail(st, "%s: out of memory", o->what);
        return -1;
    }
    const struct kube_proxy *px = kube_client_proxy(c);
    st->proxy = px->set ? px : NULL;
    if (o->input_fd >= 0 && !(st->in = input_new(o->input_fd))) {
        fail(st, "%s: cannot set up the input reader: %s", o->what, strerror(errno));
        return -1;
    }
    if (st->ep.tls && !(st->ssl = kube_ws_tls_new(st->cfg, auth, o->what, st->err, st->errlen))) {
        st->failed = 1;
        return -1;
    }
    if (!(st->ctx = context_new(st))) {
        fail(st, "%s: cannot create the WebSocket context", o->what);
        return -1;
    }
    unsigned char nonce[16];
    if (lws_get_random(st->ctx, nonce, sizeof(nonce)) != sizeof(nonce) && RAND_bytes(nonce, sizeof(nonce)) != 1) {
        fail(st, "%s: no random bytes for the WebSocket key", o->what);
        return -1;
    }
    EVP_EncodeBlock((unsigned char *)st->key, nonce, sizeof(nonce));
    return 0;
}

int kube_wss_run(struct kube_client *c, const struct kube_wss_options *o, struct kube_wss_result *res, char *err,
                 size_t errlen) {
    struct kube_auth auth = {0};
    memset(res, 0, sizeof(*res));
    if (errlen) err[0] = 0;
    struct kube_wss *st = calloc(1, sizeof(*st));
    if (!st) {
        errfmt(err, errlen, "%s: out of memory", o->what);
        return -1;
    }
    st->o = o;
    st->res = res;
    st->err = err;
    st->errlen = errlen;
    st->cfg = kube_client_config(c);
    kube_ws_parser_init(&st->wp, on_ws_data, on_ws_control, st);
    dynbuf_init(&st->answer, KUBE_WS_HS_MAX);
    dynbuf_init(&st->outq, WSS_OUTQ_MAX);
    dynbuf_init(&st->tunnel, WSS_TUNNEL_MAX);

    int attempted = prepare(st, c, &auth) == 0;
    if (attempted) {
        if (o->timeout_ms > 0)
            lws_sul_schedule(st->ctx, 0, &st->deadline, on_deadline, (lws_usec_t)o->timeout_ms * LWS_US_PER_MS);
        if (o->poll_ms && o->on_poll)
            lws_sul_schedule(st->ctx, 0, &st->poll, on_poll, (lws_usec_t)o->poll_ms * LWS_US_PER_MS);
        if (!connect_raw(st)) {
            fail(st, "%s: cannot connect to %s", o->what, st->cfg->server);
            st->finished = 1;
            st->wsi = NULL;
        }
        while (!st->finished)
            if (lws_service(st->ctx, 0) < 0) break;
        input_stop(st->in);   /* before the context goes: it wakes the context's loop */
        lws_sul_cancel(&st->deadline);
        lws_sul_cancel(&st->keepalive);
        lws_sul_cancel(&st->poll);
    }
    if (attempted) kube_client_count(c, "GET", res->established ? 101 : res->http_status);
    if (!res->established && !st->failed) fail(st, "%s: connection failed", o->what);
    int rc = st->failed ? -1 : 0;

    input_free(st->in);       /* stopped and joined: before the context */
    if (st->ctx) lws_context_destroy(st->ctx);
    SSL_CTX_free(st->ssl);
    kube_ws_free_secret(st->auth);
    kube_config_free_lines(st->imp);
    dynbuf_free(&st->answer);
    dynbuf_free(&st->outq);
    dynbuf_free(&st->tunnel);
    SSL_free(st->tls);        /* and its BIOs */
    free(st->path);
    free(st);
    kube_auth_free(&auth);

    /* A refused upgrade: the Status message says why (a 401 the caller retries first). */
    if (rc < 0 && !res->established && res->http_status >= 400 && !(res->http_status == 401 && o->retried_on_401))
        kube_ws_refusal_message(c, res->http_status, o->path, o->what, o->hint403, err, errlen);
    if (rc < 0 && errlen && !err[0]) errfmt(err, errlen, "%s: failed", o->what);
    return rc;
}
