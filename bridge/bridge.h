/* bridge/bridge.h — the pieces of yao-bridge, the in-sandbox stdio <-> IPC bridge.
 *
 *   yao_bridge.c   main: command line, environment, stdio hygiene, exit status
 *   bridge_auth.c  the TCP-mode token handshake as pure functions (token loading, the
 *                  hello line, parsing the peer's reply) — no I/O on the connection
 *   bridge_conn.c  the connection: Unix/TCP connect with a deadline, TLS, the handshake
 *                  exchange, and non-blocking read/write/half-close over plain or TLS
 *   bridge_pump.c  the poll() loop that copies stdin -> connection -> stdout
 *   bridge_util.c  the first-error-wins error record, monotonic clock
 *
 * The wire protocol (and why it looks the way it does) is in bridge/README.md. */
#ifndef YAO_BRIDGE_H
#define YAO_BRIDGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef YAO_VERSION
#define YAO_VERSION "0.0.0-dev"
#endif

/* Exit statuses (documented in README.md). */
#define BRIDGE_EXIT_OK      0 /* the peer closed and everything it sent reached stdout */
#define BRIDGE_EXIT_IO      1 /* connect, TLS or I/O failure */
#define BRIDGE_EXIT_USAGE   2 /* bad command line or environment */
#define BRIDGE_EXIT_REFUSED 3 /* the peer refused the token */

#define BRIDGE_BUF_SIZE (64 * 1024)      /* one buffer per direction */
#define BRIDGE_TOKEN_MAX (16 * 1024)     /* longest accepted bearer token */
#define BRIDGE_REPLY_MAX 4096            /* longest accepted handshake reply line */
#define BRIDGE_PROTO_VERSION 1           /* the "yao-bridge" member of the handshake */

/* Returned by the connection read/write calls when the operation would block. */
#define BRIDGE_IO_AGAIN (-2)

/* The first error of a run; later ones are dropped so stderr gets one line. */
struct bridge_err {
    int code;        /* BRIDGE_EXIT_*, 0 while no error is recorded */
    char msg[512];   /* without the "yao-bridge: " prefix, no newline */
};

/* Record an error unless one is already recorded. Control characters become '?'. */
void bridge_err_set(struct bridge_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Milliseconds on the monotonic clock. */
int64_t bridge_now_ms(void);

/* ---- configuration ------------------------------------------------------------ */

enum bridge_mode { BRIDGE_MODE_UNIX, BRIDGE_MODE_TCP };

struct bridge_config {
    enum bridge_mode mode;
    const char *addr;     /* socket path ("@name" = abstract) or host:port; not owned */
    int tls;              /* TCP only: wrap the connection in TLS 1.3 */
    int insecure;         /* TLS: skip certificate and name verification */
    const char *ca_file;  /* TLS: PEM bundle to trust instead of the system store */
    char *token;          /* TCP only: bearer token, owned, wiped on free */
    size_t token_len;
    int timeout_ms;       /* connect + TLS handshake + token handshake */
};

/* ---- bridge_auth.c: the token handshake, pure -------------------------------------- */

/* Load the token: $YAO_TOKEN if set and non-empty, else the file named by
 * $YAO_TOKEN_FILE (trailing whitespace stripped). 1 loaded, 0 neither variable set,
 * -1 error (recorded in err). *out is malloc'd; free with bridge_auth_token_free. */
int bridge_auth_token_load(char **out, size_t *out_len, struct bridge_err *err);
/* Wipe and free a token. */
void bridge_auth_token_free(char *token, size_t len);
/* Build the hello line {"yao-bridge":1,"token":"..."}\n with the token JSON-escaped.
 * Returns a malloc'd buffer (length in *len) or NULL on ENOMEM. */
char *bridge_auth_hello(const char *token, size_t token_len, size_t *len);
/* Parse one reply line (without its '\n'; a trailing '\r' is allowed).
 * 1 accepted, 0 refused (reason copied, may be empty), -1 not a valid reply
 * (a short description of what is wrong copied to reason). */
int bridge_auth_parse_reply(const char *line, size_t len, char *reason, size_t reason_cap);

/* ---- bridge_conn.c: the connection ---------------------------------------------- */

struct bridge_conn {
    int fd;
    void *ssl_ctx;        /* SSL_CTX *, NULL in plain mode */
    void *ssl;            /* SSL *, NULL in plain mode */
    int tls_broken;       /* a fatal TLS error happened: never call SSL_shutdown */
    size_t tls_wpend;     /* length of an SSL_write that must be retried, 0 if none */
    short rd_want;        /* poll events the pending read waits for (TLS may want POLLOUT) */
    short wr_want;        /* poll events the pending write waits for */
    char label[300];      /* "unix:/path", "tcp:host:port", "tls:host:port" for messages */
};

/* Connect (and for TCP: TLS handshake, token handshake) before cfg->timeout_ms passes.
 * Payload bytes that arrived right behind the handshake reply are stored in early
 * (capacity early_cap) and their count in *early_len. 0 on success, -1 on error. */
int bridge_conn_open(struct bridge_conn *c, const struct bridge_config *cfg,
                     unsigned char *early, size_t early_cap, size_t *early_len,
                     struct bridge_err *err);
/* Read up to n bytes: >0 bytes, 0 end of stream (TLS: close_notify), BRIDGE_IO_AGAIN
 * (wait for c->rd_want), -1 error (recorded). */
ssize_t bridge_conn_read(struct bridge_conn *c, void *buf, size_t n, struct bridge_err *err);
/* Write up to n bytes: >0 written, BRIDGE_IO_AGAIN (wait for c->wr_want; retry with at
 * least the same bytes), -1 error (recorded). */
ssize_t bridge_conn_write(struct bridge_conn *c, const void *buf, size_t n,
                          struct bridge_err *err);
/* Close the sending direction: shutdown(SHUT_WR), or the TLS close_notify alert.
 * 1 done, BRIDGE_IO_AGAIN (wait for c->wr_want), -1 error (recorded). */
int bridge_conn_shutdown_write(struct bridge_conn *c, struct bridge_err *err);
/* Answer the peer's close_notify with ours, best effort, never blocking. */
void bridge_conn_close_notify(struct bridge_conn *c);
/* Release everything; safe on a zeroed or half-opened connection. */
void bridge_conn_close(struct bridge_conn *c);

/* ---- bridge_pump.c: the copy loop ------------------------------------------------ */

/* One direction's buffer: bytes [start, end) are waiting to be written. */
struct bridge_buf {
    unsigned char *data;  /* BRIDGE_BUF_SIZE bytes */
    size_t start, end;
};

/* Copy in_fd -> c and c -> out_fd until the peer closes and down is flushed.
 * down may already hold bytes (those that followed the handshake reply).
 * Returns BRIDGE_EXIT_OK or the code of the error recorded in err. */
int bridge_pump_run(struct bridge_conn *c, int in_fd, int out_fd,
                    struct bridge_buf *up, struct bridge_buf *down, struct bridge_err *err);

#endif
