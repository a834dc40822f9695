/* bridge/bridge.h — the pieces of yao-bridge, the in-sandbox stdio <-> IPC bridge.
 *
 *   yao_bridge.c   main: command line, environment, stdio hygiene, exit status
 *   bridge_auth.c  the TCP-mode token handshake as pure functions (token loading, the
 *                  hello line, parsing the peer's reply) — no I/O on the connection
 *   bridge_conn.c  the connection: Unix/TCP connect with a deadline, TLS, the handshake
 *                  exchange, and non-blocking read/write/half-close over plain or TLS
 *   bridge_pump.c  the poll() loop that copies stdin -> connection -> stdout
 *   bridge_util.c  the first-error-wins error record, monotonic clock, bounded buffers
 *
 * grpc mode (YAO_IPC_MODE=grpc) reads MCP JSON-RPC itself instead of copying bytes:
 *   bridge_json.c  a small JSON scanner: validate, compact, find members, decode strings — pure
 *   bridge_pb.c    the few proto3 messages of yao.Yao by hand, gRPC framing/status — pure
 *   bridge_mcp.c   MCP JSON-RPC request -> RPC, RPC result/error -> JSON-RPC reply — pure
 *   bridge_grpc.c  the HTTP/2 (nghttp2) client: connection, calls, metadata, tokens
 *   bridge_serve.c the grpc mode's poll() loop: stdin lines -> calls -> stdout lines
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

/* A growable byte buffer with a hard ceiling (max); bytes [off, len) are live. */
struct bridge_dyn {
    unsigned char *data;
    size_t off, len, cap, max;
};
void bridge_dyn_init(struct bridge_dyn *d, size_t max);
/* Append: 0, or -1 past the ceiling or out of memory (the buffer is then unchanged). */
int bridge_dyn_add(struct bridge_dyn *d, const void *p, size_t n);
int bridge_dyn_adds(struct bridge_dyn *d, const char *s);
int bridge_dyn_addf(struct bridge_dyn *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop n bytes from the front. */
void bridge_dyn_consume(struct bridge_dyn *d, size_t n);
/* The live bytes, NUL-terminated (NULL only when out of memory). */
const char *bridge_dyn_str(struct bridge_dyn *d);
/* Move the live bytes out (malloc'd, NUL-terminated) and empty the buffer. */
char *bridge_dyn_take(struct bridge_dyn *d, size_t *len);
void bridge_dyn_free(struct bridge_dyn *d);
#define BRIDGE_DYN_LEN(d) ((d)->len - (d)->off)
#define BRIDGE_DYN_PTR(d) ((d)->data + (d)->off)

/* ---- configuration ------------------------------------------------------------ */

enum bridge_mode { BRIDGE_MODE_UNIX, BRIDGE_MODE_TCP, BRIDGE_MODE_GRPC };

struct bridge_config {
    enum bridge_mode mode;
    const char *addr;     /* socket path ("@name" = abstract) or host:port; not owned */
    int tls;              /* TCP only: wrap the connection in TLS 1.3 */
    int insecure;         /* TLS: skip certificate and name verification */
    const char *ca_file;  /* TLS: PEM bundle to trust instead of the system store */
    char *token;          /* TCP only: bearer token, owned, wiped on free */
    size_t token_len;
    int timeout_ms;       /* connect + TLS handshake + token handshake; grpc: per call */
    /* grpc mode only (the token above is the bearer token) */
    const char *refresh_token;  /* YAO_REFRESH_TOKEN, may be NULL; not owned */
    const char *sandbox_id;     /* YAO_SANDBOX_ID: x-sandbox-id and every session_id */
    const char *upstream;       /* YAO_GRPC_UPSTREAM when YAO_GRPC_TAI=enable, else NULL */
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

/* Connect to host:port (TCP) and, if cfg->tls, run the TLS handshake: TLS 1.3 only in
 * tcp mode; in grpc mode TLS 1.2+ with ALPN "h2" required. No token handshake.
 * 0 or -1 (recorded). Used by the grpc mode for each (re)connection. */
int bridge_conn_dial(struct bridge_conn *c, const struct bridge_config *cfg, int64_t deadline,
                     struct bridge_err *err);

/* 1 when addr is host:port or [ipv6]:port with a numeric port (checked before dialing). */
int bridge_addr_ok(const char *addr);

/* ---- bridge_json.c: JSON scanning, pure ---------------------------------------------- */

#define BJSON_MAX_DEPTH 256

/* Skip whitespace. */
const char *bjson_ws(const char *p, const char *end);
/* The end of the one JSON value starting at p (no leading whitespace), or NULL when it is
 * not valid JSON (strict RFC 8259 grammar; depth at most BJSON_MAX_DEPTH). */
const char *bjson_value_end(const char *p, const char *end);
/* 1 when [p, p+n) is exactly one JSON value with optional whitespace around it. */
int bjson_valid(const char *p, size_t n);
/* Append the valid JSON value [p, p+n) with the whitespace outside strings removed (so
 * it fits on one line); strings and numbers are copied byte for byte. 0 or -1. */
int bjson_compact(struct bridge_dyn *d, const char *p, size_t n);
/* Find member key of the object value [p, end): 1 with the value's span, 0 absent,
 * -1 the value is not an object. Keys are compared after decoding their escapes. */
int bjson_member(const char *p, const char *end, const char *key, const char **vp,
                 const char **ve);
/* Decode the string value [p, e) into malloc'd NUL-terminated UTF-8 (length in *len).
 * NULL if it is not a string, decodes to invalid UTF-8 or to a NUL byte, or on ENOMEM. */
char *bjson_string(const char *p, const char *e, size_t *len);
/* Append s as a JSON string literal (quotes, escapes; invalid UTF-8 becomes U+FFFD). */
int bjson_add_string(struct bridge_dyn *d, const char *s, size_t n);

/* ---- bridge_pb.c: proto3 wire format and gRPC framing, pure ----------------------------- */

/* Append field number field as a length-delimited value (proto3: nothing when n == 0). */
int bpb_add_bytes(struct bridge_dyn *d, unsigned field, const void *p, size_t n);
/* Find the length-delimited field in a message (the last occurrence wins, as proto3
 * merges): 1 found, 0 absent (an empty value), -1 malformed. Other fields are skipped. */
int bpb_get_bytes(const unsigned char *msg, size_t n, unsigned field, const unsigned char **vp,
                  size_t *vn);
/* The canonical name of a gRPC status code ("UNAUTHENTICATED"), or "CODE_<n>". */
const char *bgrpc_code_name(int code, char *buf, size_t cap);
/* The gRPC status for an HTTP status without grpc-status (gRPC's HTTP mapping). */
int bgrpc_code_from_http(int http_status);
/* Percent-decode grpc-message in place; returns the new length. */
size_t bgrpc_percent_decode(char *s, size_t n);
/* Format a grpc-timeout header value for ms milliseconds (at most 8 digits). */
void bgrpc_timeout_header(char *buf, size_t cap, int64_t ms);

/* ---- bridge_mcp.c: MCP JSON-RPC <-> yao.Yao, pure ------------------------------------ */

enum mcp_rpc {
    MCP_RPC_HEALTHZ,         /* for initialize */
    MCP_RPC_LIST_TOOLS,      /* tools/list */
    MCP_RPC_CALL_TOOL,       /* tools/call */
    MCP_RPC_LIST_RESOURCES,  /* resources/list */
    MCP_RPC_READ_RESOURCE,   /* resources/read */
};

#define BRIDGE_MSG_MAX (64u * 1024 * 1024)   /* longest request line / RPC message */
#define BRIDGE_OUT_MAX (256u * 1024 * 1024)  /* most replies waiting for stdout */

/* One request that needs an RPC. */
struct mcp_req {
    char *id;               /* the request id as compact JSON text, malloc'd */
    enum mcp_rpc rpc;
    char version[32];       /* initialize: the protocol version to answer with */
    struct bridge_dyn body; /* the protobuf request message (no gRPC prefix) */
};

/* What one stdin line asks for. */
enum mcp_action { MCP_NONE, MCP_REPLIED, MCP_CALL };

/* Handle one line (without its newline): MCP_REPLIED when a reply line was appended to
 * out (ping, or any error), MCP_CALL when req is filled and needs its RPC, MCP_NONE for a
 * notification or blank line; -1 out of memory. */
int mcp_handle_line(const char *line, size_t n, const char *session_id, struct mcp_req *req,
                    struct bridge_dyn *out);
/* The RPC's method path, e.g. "/yao.Yao/MCPCallTool". */
const char *mcp_rpc_path(enum mcp_rpc rpc);
/* Append the reply for a successful RPC with response message msg. A response that is not
 * what the method returns (bad protobuf, field not valid JSON) becomes an error reply. */
int mcp_reply_result(struct bridge_dyn *out, const struct mcp_req *req, const unsigned char *msg,
                     size_t n);
/* Error replies for a failed RPC: MCP_ERR_RPC carries grpc_status, the other kinds pass
 * grpc_status < 0. message is plain text (escaped here). */
#define MCP_ERR_RPC        (-32000) /* the server answered with a gRPC error status */
#define MCP_ERR_CONNECTION (-32001) /* no connection, or it was lost during the call */
#define MCP_ERR_DEADLINE   (-32002) /* no answer before the call's deadline (ours, or the server said DEADLINE_EXCEEDED) */
int mcp_reply_error(struct bridge_dyn *out, const char *id, int code, const char *message,
                    int grpc_status);
void mcp_req_free(struct mcp_req *req);

/* ---- bridge_grpc.c: the HTTP/2 gRPC client ----------------------------------------- */

enum bgrpc_outcome { BGRPC_PENDING, BGRPC_OK, BGRPC_STATUS, BGRPC_CONN, BGRPC_DEADLINE };

/* One unary call, owned by the client while in flight and by the caller when done. */
struct bgrpc_call {
    struct bgrpc_call *next;
    struct mcp_req req;          /* what it answers (its body is the request message) */
    int32_t stream_id;
    unsigned char *frame;        /* the length-prefixed request message */
    size_t frame_len, frame_off;
    struct bridge_dyn resp;      /* DATA received: length-prefixed response message(s) */
    int http_status;
    int grpc_status;             /* -1 until the server sends one */
    char *grpc_message;          /* decoded, malloc'd, may be NULL */
    int64_t start_ms, deadline_ms;
    enum bgrpc_outcome outcome;
    char error[320];             /* BGRPC_CONN / BGRPC_DEADLINE: what happened */
};

struct bgrpc {
    const struct bridge_config *cfg;
    struct bridge_conn conn;
    void *session;               /* nghttp2_session *, NULL while not connected */
    char authority[300];
    char *token, *refresh;       /* current credentials, owned (rotated ones replace them) */
    struct bgrpc_call *active;   /* in flight */
    struct bgrpc_call *done;     /* finished, for the caller to take */
    struct bridge_dyn out;       /* HTTP/2 bytes waiting for the socket */
    int connects;                /* connections made (for the record) */
    int rotations;               /* token rotations seen */
};

/* Set up (no connection yet); takes over cfg->token. 0 or -1 (recorded). */
int bgrpc_init(struct bgrpc *g, struct bridge_config *cfg, struct bridge_err *err);
/* Start call (connecting first if needed). The call is always accepted: a failure to
 * connect finishes it at once with outcome BGRPC_CONN. */
void bgrpc_start(struct bgrpc *g, struct bgrpc_call *call);
/* The poll events the connection waits for (0 when there is no connection). */
short bgrpc_events(struct bgrpc *g);
/* Do the I/O poll reported; any finished calls move to the done list. */
void bgrpc_io(struct bgrpc *g, short revents);
/* Finish calls whose deadline passed; returns the nearest remaining deadline or -1. */
int64_t bgrpc_expire(struct bgrpc *g, int64_t now);
/* Take one finished call, or NULL. */
struct bgrpc_call *bgrpc_take_done(struct bgrpc *g);
/* Number of calls in flight. */
int bgrpc_active(const struct bgrpc *g);
void bgrpc_call_free(struct bgrpc_call *call);
/* Close the connection and free everything, calls included. */
void bgrpc_free(struct bgrpc *g);

/* ---- bridge_serve.c: the grpc mode's loop ----------------------------------------- */

/* Serve MCP on in_fd/out_fd until stdin EOF and every reply is written. BRIDGE_EXIT_OK, or
 * the code of the error recorded (stdout gone, stdin read error, out of memory). */
int bridge_serve_run(struct bgrpc *g, int in_fd, int out_fd, struct bridge_err *err);

#endif
