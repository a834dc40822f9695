/* kube/exec.c — commands in pods over the API server's exec WebSocket (see exec.h).
 *
 * Owns: the request URL (one command= per argv element), subprotocol negotiation
 * (v5.channel.k8s.io, v4.channel.k8s.io), what goes out — stdin from read_stdin, or from
 * stdin_fd through the stream's input thread, the v5 close signal at its end, the
 * terminal's size on the resize channel — and what comes in: the channel protocol
 * (demultiplexer, the status channel's verdict, the resize message: pure, in
 * kube/execproto.c) and the session's outcome and error texts.
 * Does not own: the transport — connect, proxy tunnel, TLS, the upgrade, framing, pings,
 * the deadline, the input thread, the salvage of the last bytes after a reset: the
 * WebSocket stream of kube/wsstream.c; retries (a command is not idempotent; the caller
 * decides), what the output means, or the local terminal (raw mode, SIGWINCH): the caller
 * reports the size through term_size and a resize flag, the session sends it.
 *
 * Memory is bounded whatever the output size: output is handed to the callbacks as the
 * stream reads it (see wsstream.c). Stdin goes out one chunk (EXEC_STDIN_CHUNK) per
 * writable event once the socket has taken the previous one: from read_stdin, called on
 * the loop; or from stdin_fd, read ahead KUBE_EXEC_STDIN_SLOTS chunks at most.
 *
 * The end: the status message is the server's last word. Once it is complete the session
 * ends the stream, which drops the connection at once (see wsstream.c, "The end": a
 * server whose command exited without reading stdin has stopped reading, and resets the
 * connection right behind the status). A failed stdin write is not a failure of the
 * session: the stream then reads what the server sent before it closed, the status
 * included.
 *
 * Known limits:
 *  - v4.channel.k8s.io cannot half-close: with v4 the command never sees EOF on stdin (we
 *    stop sending and wait for it to exit). Commands that read stdin to the end need v5
 *    (Kubernetes >= 1.30); older servers leave them running until the timeout.
 *  - The Status message of a refused upgrade (pod not found, container not valid,
 *    forbidden...) is asked again as a plain GET of the same URL (wsstream.c), which the
 *    API server refuses before any proxying; otherwise the error carries the HTTP status.
 *  - The URL — path and encoded argv — is capped at EXEC_MAX_URI bytes (the limit of the
 *    lws 4.1 request line this replaced, kept so commands behave as before); longer
 *    commands fail cleanly before connecting. Scripts of more than ~2 KB belong on stdin
 *    (sh -s). Query encoding keeps text short (space as '+'). */
#include "kube/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/errfmt.h"
#include "kube/wsconn.h"
#include "kube/wsstream.h"

#define EXEC_STDIN_CHUNK KUBE_WSS_CHUNK      /* payload of one stdin message */
_Static_assert(KUBE_EXEC_STDIN_SLOTS == KUBE_WSS_INPUT_SLOTS, "exec.h documents the reader's slots");
#define EXEC_MAX_URI 2032u                   /* 2048 - "GET " - " HTTP/1.1\r\n" - NUL (see top) */
#define EXEC_DEFAULT_PROTOCOLS "v5.channel.k8s.io, v4.channel.k8s.io"

/* ---- the session ------------------------------------------------------------------- */

struct session {
    const struct kube_exec_options *o;
    struct kube_exec_result *r;
    struct kube_exec_demux demux;
    struct kube_wss *st;     /* the stream, while a callback of it runs */
    int open;                /* the upgrade succeeded */
    int have_status;         /* the error channel's message is complete */
    int stdin_done;
    int v5;
    int tty;                 /* a terminal was asked for (and is in effect: with stdin) */
    int resize_pending;      /* a size to send: size_w x size_h */
    int size_sent;           /* sent_w x sent_h went out */
    unsigned size_w, size_h, sent_w, sent_h;
    unsigned char tx[KUBE_WSS_HEADROOM + 1 + EXEC_STDIN_CHUNK];
};

/* Demux callbacks: pass through to the caller's, noting who aborted. */
static int pass_stdout(void *ud, const char *p, size_t n) {
    struct session *s = ud;
    int rc = s->o->on_stdout ? s->o->on_stdout(s->o->ud, p, n) : 0;
    if (rc) kube_wss_fail(s->st, "exec: the stdout consumer aborted the session");
    return rc;
}

static int pass_stderr(void *ud, const char *p, size_t n) {
    struct session *s = ud;
    int rc = s->o->on_stderr ? s->o->on_stderr(s->o->ud, p, n) : 0;
    if (rc) kube_wss_fail(s->st, "exec: the stderr consumer aborted the session");
    return rc;
}

/* Ask the caller for the terminal's size; queue it for the resize channel when it is not
 * what was sent (or queued) last. */
static void size_update(struct session *s, struct kube_wss *st) {
    unsigned w = 0, h = 0;
    if (!s->o->term_size || s->o->term_size(s->o->ud, &w, &h) < 0) return;
    if (s->resize_pending ? (w == s->size_w && h == s->size_h)
                          : (s->size_sent && w == s->sent_w && h == s->sent_h))
        return;
    s->size_w = w;
    s->size_h = h;
    s->resize_pending = 1;
    kube_wss_want_write(st);
}

/* Every KUBE_EXEC_RESIZE_CHECK_MS while the session lasts: did the caller's flag (its
 * SIGWINCH handler) go up? Read and cleared at once, so no change is lost. */
static void on_poll(void *ud, struct kube_wss *st) {
    struct session *s = ud;
    if (!s->open || s->have_status) return;
    if (atomic_exchange(s->o->resized, 0)) size_update(s, st);
}

/* Send the queued terminal size on the resize channel. */
static void send_resize(struct session *s, struct kube_wss *st) {
    unsigned char buf[KUBE_WSS_HEADROOM + 64];
    size_t n = kube_exec_resize_message(s->size_w, s->size_h, buf + KUBE_WSS_HEADROOM, sizeof(buf) - KUBE_WSS_HEADROOM);
    s->resize_pending = 0;
    if (!n || kube_wss_send(st, buf + KUBE_WSS_HEADROOM, n) < 0) return;   /* a failed write: the stream ends it */
    s->size_sent = 1;
    s->sent_w = s->size_w;
    s->sent_h = s->size_h;
}

/* End of input: the v5 close signal for stdin (v4 cannot signal EOF: see the top). */
static void send_stdin_eof(struct session *s, struct kube_wss *st) {
    unsigned char *m = s->tx + KUBE_WSS_HEADROOM;
    s->stdin_done = 1;
    if (!s->v5) return;
    m[0] = KUBE_EXEC_CLOSE;
    m[1] = KUBE_EXEC_STDIN;
    (void)kube_wss_send(st, m, 2);
}

/* Send the next stdin chunk from read_stdin, or the close signal at end of input. */
static int send_stdin(struct session *s, struct kube_wss *st) {
    unsigned char *m = s->tx + KUBE_WSS_HEADROOM;
    ssize_t n = s->o->read_stdin(s->o->ud, (char *)m + 1, EXEC_STDIN_CHUNK);
    if (n < 0 || (size_t)n > EXEC_STDIN_CHUNK) {
        kube_wss_fail(st, "exec: reading stdin failed");
        return -1;
    }
    if (n == 0) {
        send_stdin_eof(s, st);
        return 0;
    }
    m[0] = KUBE_EXEC_STDIN;
    if (kube_wss_send(st, m, (size_t)n + 1) == 0) kube_wss_want_write(st);
    return 0;
}

/* The stream can take more: a resize first, then a stdin chunk from read_stdin (stdin
 * from the fd is the stream's input). */
static int on_writable(void *ud, struct kube_wss *st) {
    struct session *s = ud;
    s->st = st;
    if (s->have_status) return 0;
    if (s->resize_pending) {
        send_resize(s, st);
        if (s->o->read_stdin && !s->stdin_done) kube_wss_want_write(st);
        return 0;
    }
    if (!s->o->read_stdin || s->stdin_done) return 0;
    return send_stdin(s, st);
}

/* stdin_fd ended: the close signal at EOF, a failed read fails the session. */
static void on_input_end(void *ud, struct kube_wss *st, int err) {
    struct session *s = ud;
    s->st = st;
    if (err)
        kube_wss_fail(st, "exec: reading stdin: %s", strerror(err));
    else
        send_stdin_eof(s, st);
}

/* A piece of a message: through the demultiplexer; a complete status ends the session,
 * so does an unknown channel or an aborting consumer. */
static int on_message(void *ud, struct kube_wss *st, const unsigned char *p, size_t n, int first, int final) {
    struct session *s = ud;
    s->st = st;
    if (s->have_status) return 1;
    int rc = kube_exec_demux_feed(&s->demux, p, n, first, final);
    if (rc) {
        if (rc < 0) kube_wss_fail(st, "exec: the server sent a message on unknown channel %d", s->demux.channel);
        return 1;
    }
    if (final && s->demux.channel == KUBE_EXEC_ERROR && (s->demux.status_len || s->demux.status_overflow)) {
        s->have_status = 1;   /* the verdict is the server's last word */
        return 1;
    }
    return 0;
}

/* Upgraded: note the protocol, send the terminal's size, start stdin. */
static int on_open(void *ud, struct kube_wss *st, const char *protocol) {
    struct session *s = ud;
    s->st = st;
    s->open = 1;
    snprintf(s->r->protocol, sizeof(s->r->protocol), "%.*s", (int)sizeof(s->r->protocol) - 1, protocol);
    s->v5 = !strcmp(protocol, "v5.channel.k8s.io");
    if (s->tty && s->o->term_size) size_update(s, st);
    return 0;
}

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

/* Interpret the outcome once the stream ended (rc: kube_wss_run's). 0 or -1 as kube_exec. */
static int conclude(struct session *s, int rc, const struct kube_wss_result *res) {
    struct kube_exec_result *r = s->r;
    if (s->have_status) {
        char msg[sizeof(r->err)];
        int code = -1;
        if (s->demux.status_overflow) {
            if (rc == 0) errfmt(r->err, sizeof(r->err), "exec: the status from the server exceeds %zu bytes",
                                  sizeof(s->demux.status) - 1);
            return -1;
        }
        if (kube_exec_parse_status(s->demux.status, s->demux.status_len, &code, msg, sizeof(msg)) < 0) {
            /* the server's verdict outranks transport noise after it */
            errfmt(r->err, sizeof(r->err), "exec: %.*s", (int)sizeof(r->err) - 7, msg);
            return -1;
        }
        if (rc < 0) return -1;    /* a consumer aborted, or stdin failed */
        r->exit_code = code;
        r->err[0] = 0;
        return 0;
    }
    if (rc == 0)   /* (not established is a failure of the stream) */
        errfmt(r->err, sizeof(r->err), "exec: the connection closed before the command's status arrived%s%s",
                 res->close_reason, res->send_failed ? " (it stopped taking stdin)" : "");
    return -1;
}

/* One attempt of kube_exec. */
static int exec_once(struct kube_client *c, const struct kube_exec_options *o, struct kube_exec_result *r,
                     int may_retry) {
    struct session *s = NULL;
    struct kube_ws_endpoint ep;
    struct kube_wss_result res;
    struct dynbuf path;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    dynbuf_init(&path, EXEC_MAX_URI);
    if (!c || !o || !o->namespace_ || !o->namespace_[0] || !o->pod || !o->pod[0] || !o->argv || !o->argc) {
        errfmt(r->err, sizeof(r->err), "exec: namespace, pod and a command are required");
        goto out;
    }
    for (size_t i = 0; i < o->argc; i++)
        if (!o->argv[i]) {
            errfmt(r->err, sizeof(r->err), "exec: argv[%zu] is NULL", i);
            goto out;
        }
    if (o->use_stdin_fd && o->read_stdin) {
        errfmt(r->err, sizeof(r->err), "exec: stdin from both read_stdin and stdin_fd");
        goto out;
    }
    if (o->use_stdin_fd && (o->stdin_fd < 0 || fcntl(o->stdin_fd, F_GETFD) < 0)) {
        errfmt(r->err, sizeof(r->err), "exec: stdin_fd %d is not an open file descriptor", o->stdin_fd);
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
        ep.prefix_len + path.len > EXEC_MAX_URI) {   /* (the buffer keeps a NUL after its bytes) */
        errfmt(r->err, sizeof(r->err), "exec: the command is too long for one request (the URL may have at most "
                 "%u bytes once encoded); pass long scripts on stdin", EXEC_MAX_URI);
        goto out;
    }

    if (!(s = calloc(1, sizeof(*s)))) {
        errfmt(r->err, sizeof(r->err), "exec: out of memory");
        goto out;
    }
    s->o = o;
    s->r = r;
    s->tty = tty;
    kube_exec_demux_init(&s->demux, pass_stdout, pass_stderr, s);
    struct kube_wss_options so = {
        .what = "exec",
        .path = path.data,
        .protocols = o->protocols && o->protocols[0] ? o->protocols : EXEC_DEFAULT_PROTOCOLS,
        .hint403 = "exec needs get and create on pods/exec",
        /* (a 401 that fresh credentials may cure is retried first: kube_exec) */
        .retried_on_401 = may_retry && (cfg->exec_plugin || cfg->token_file),
        .timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0,
        .input_fd = o->use_stdin_fd ? o->stdin_fd : -1,
        .input_channel = KUBE_EXEC_STDIN,
        .poll_ms = tty && o->term_size && o->resized ? KUBE_EXEC_RESIZE_CHECK_MS : 0,
        .ud = s,
        .on_open = on_open,
        .on_message = on_message,
        .on_writable = on_writable,
        .on_input_end = on_input_end,
        .on_poll = on_poll,
    };
    rc = kube_wss_run(c, &so, &res, r->err, sizeof(r->err));
    r->http_status = res.http_status;
    rc = conclude(s, rc, &res);
out:
    free(s);
    dynbuf_free(&path);
    if (rc < 0 && !r->err[0]) errfmt(r->err, sizeof(r->err), "exec: failed");
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
