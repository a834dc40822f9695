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
 *   bridge_serve.c the grpc mode's poll() loop: stdin lines -> calls -> stdout lines,
 *                  and the heartbeat calls beside them
 *   bridge_heartbeat.c  yao.Yao/Heartbeat: the message, the schedule, what an answer means — pure
 *   bridge_stats.c the sandbox's CPU, memory and process count (cgroup v2/v1, /proc)
 *
 * Both modes that send a token: bridge_policy.c decides which peers may get it over plain
 * TCP (pure).
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
/* Write "yao-bridge: MSG\n" to stderr in one write(2) (a notice that does not end the
 * run; control characters become '?'). */
void bridge_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
    int64_t heartbeat_ms;       /* YAO_HEARTBEAT_INTERVAL (default 10 s) */
    /* tcp and grpc modes */
    int allow_insecure;         /* YAO_BRIDGE_ALLOW_INSECURE=1: the token may go anywhere in the clear */
};

/* ---- bridge_policy.c: who may get the token over plain TCP, pure ---------------------- */

#define BPOLICY_TAI_HOST "host.tai.internal"
#define BPOLICY_ADDR_MAX 64     /* a numeric address as text, NUL included */
#define BPOLICY_HOSTS_FILE "/etc/hosts"

enum bpolicy_addr_class { BPOLICY_LOOPBACK, BPOLICY_LINK_LOCAL, BPOLICY_OTHER };
enum bpolicy_verdict {
    BPOLICY_TLS,            /* encrypted: always fine */
    BPOLICY_OPTED_IN,       /* YAO_BRIDGE_ALLOW_INSECURE=1 */
    BPOLICY_PINNED_TAI,     /* host.tai.internal at the address the hosts file pins */
    BPOLICY_ON_LOOPBACK,    /* 127.0.0.0/8, ::1 */
    BPOLICY_ON_LINK_LOCAL,  /* 169.254.0.0/16, fe80::/10 */
    BPOLICY_REFUSED,        /* anything else */
};

struct sockaddr;
/* Loopback, link-local or other (IPv4-mapped IPv6 judged as IPv4). */
enum bpolicy_addr_class bpolicy_addr_class(const struct sockaddr *sa, size_t len);
/* 1 when host is host.tai.internal (any case, one trailing dot allowed). */
int bpolicy_is_tai_host(const char *host);
/* The numeric addresses hosts-file text [text, text+len) gives name, in file order, at
 * most max. Returns the count. */
int bpolicy_hosts_lookup(const char *text, size_t len, const char *name,
                         char out[][BPOLICY_ADDR_MAX], int max);
/* May the token go in the clear to this address? pinned_tai: the address is the hosts
 * file's entry for host.tai.internal, the name the connection was asked for. */
enum bpolicy_verdict bpolicy_plain_verdict(int tls, int allow_insecure, int pinned_tai,
                                           const struct sockaddr *sa, size_t len);

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
    short dial_want;      /* poll events a dial in progress waits for */
    void *dial;           /* a dial in progress (bridge_conn.c), NULL otherwise */
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
 * tcp mode; in grpc mode TLS 1.2+ with ALPN "h2" required. No token handshake. Only the
 * addresses bridge_policy.c allows for the token are dialed. 0 or -1 (recorded). */
int bridge_conn_dial(struct bridge_conn *c, const struct bridge_config *cfg, int64_t deadline,
                     struct bridge_err *err);
/* The same without blocking on the network (grpc mode, beside stdio): resolve (the one
 * step that may block: getaddrinfo; a literal or a pinned host.tai.internal does not), then
 * start connecting. 0 connected (TLS done), 1 in progress: wait for c->dial_want on c->fd,
 * then call bridge_conn_dial_step, which returns the same; -1 failed (recorded). A dial
 * never ends by itself: the caller's deadlines decide, bridge_conn_close abandons it. */
int bridge_conn_dial_start(struct bridge_conn *c, const struct bridge_config *cfg, struct bridge_err *err);
int bridge_conn_dial_step(struct bridge_conn *c, const struct bridge_config *cfg, struct bridge_err *err);

/* 1 when addr is host:port or [ipv6]:port with a numeric port (checked before dialing). */
int bridge_addr_ok(const char *addr);
/* Before any connection: when the token would go in the clear and the address resolves
 * now, refuse (BRIDGE_EXIT_USAGE) unless some address it resolves to may get it
 * (bpolicy_plain_verdict). A name that does not resolve yet is left to each dial, which
 * applies the same rule to every address it tries. 0 or -1 (recorded). */
int bridge_conn_precheck(const struct bridge_config *cfg, struct bridge_err *err);

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
/* Append field number field as a varint (int32/int64/uint: proto3 sends nothing for 0; a
 * negative int32/int64 is its 64-bit two's complement, ten bytes, as protobuf does). */
int bpb_add_varint(struct bridge_dyn *d, unsigned field, uint64_t v);
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
    MCP_RPC_HEARTBEAT,       /* not MCP: the bridge's own Heartbeat (bridge_heartbeat.c) */
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
#define MCP_ERR_SHUTDOWN   (-32003) /* read after Yao's Heartbeat said "shutdown": not sent */
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
    int timeout_ms;              /* this call's deadline; 0: the configured YAO_GRPC_TIMEOUT */
    enum bgrpc_outcome outcome;
    char error[320];             /* BGRPC_CONN / BGRPC_DEADLINE: what happened */
};

struct bgrpc {
    const struct bridge_config *cfg;
    struct bridge_conn conn;
    void *session;               /* nghttp2_session *, NULL while not connected */
    int dialing;                 /* a connection is being made (conn.dial) */
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
/* The fd to poll (-1 when there is no connection, nor one being made) and its events. */
int bgrpc_fd(const struct bgrpc *g);
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

/* ---- bridge_stats.c: what the sandbox is using ---------------------------------------- */

/* One sample for a heartbeat. */
struct bstats_sample {
    int32_t cpu_percent;   /* 0-100: share of the CPU the cgroup may use, since the last sample */
    int64_t mem_bytes;     /* the cgroup's memory use (memory.current / memory.usage_in_bytes) */
    int32_t procs;         /* processes in /proc that are not zombies */
};

#define BSTATS_PATH_MAX 512

/* Where the numbers come from, found once (a process does not change cgroup). */
struct bstats {
    int cgroup_version;            /* 2, 1, or 0 when no cgroup files were found */
    char cpu_usage[BSTATS_PATH_MAX];  /* v2 cpu.stat (usage_usec), v1 cpuacct.usage (ns) */
    char cpu_limit[BSTATS_PATH_MAX];  /* v2 cpu.max; v1 the cpu.cfs_quota_us file ("" if none) */
    char cpu_period[BSTATS_PATH_MAX]; /* v1 cpu.cfs_period_us */
    char mem[BSTATS_PATH_MAX];        /* v2 memory.current, v1 memory.usage_in_bytes */
    char proc[BSTATS_PATH_MAX];       /* the /proc to count processes in */
    int ncpus;                     /* CPUs this process may run on */
    int have_last;
    uint64_t last_usage_us;        /* CPU time at the last sample */
    int64_t last_us;               /* monotonic time of the last sample */
};

/* Find the files under cgroup_root (/sys/fs/cgroup) for this process as proc_root (/proc)
 * describes it, and take the baseline CPU reading at now_us. Never fails: what is not
 * found reads as 0. */
void bstats_init(struct bstats *s, const char *cgroup_root, const char *proc_root, int64_t now_us);
/* Sample at now_us (monotonic microseconds): CPU since the previous sample. */
void bstats_sample(struct bstats *s, int64_t now_us, struct bstats_sample *out);

/* Pure helpers (unit-tested): */
/* The value of "key N" in flat-keyed text (cpu.stat): 0 found, -1 not. */
int bstats_keyed_u64(const char *text, const char *key, uint64_t *v);
/* cpu.max "QUOTA PERIOD" or "max PERIOD": the limit in millicpus, 0 for none, -1 bad. */
int64_t bstats_cpu_max_millis(const char *text);
/* v1: cfs_quota_us and cfs_period_us texts: the limit in millicpus, 0 for none (-1). */
int64_t bstats_cfs_millis(const char *quota, const char *period);
/* CPU percent of what may be used: used_us over wall_us, against limit_millis capped
 * at ncpus (0 limit: all ncpus). Rounded, clamped to 0-100. */
int32_t bstats_cpu_percent(uint64_t used_us, int64_t wall_us, int64_t limit_millis, int ncpus);
/* The cgroup path in /proc/self/cgroup text: v2 ("0::PATH", controller NULL) or the v1
 * line whose controller list holds controller. 0 with the path copied, -1 absent. */
int bstats_cgroup_path(const char *text, const char *controller, char *out, size_t cap);
/* 1 when a /proc/PID/stat line is a live process (state not Z or X), 0 a zombie, -1 bad. */
int bstats_proc_live(const char *stat);

/* ---- bridge_heartbeat.c: yao.Yao/Heartbeat, pure ---------------------------------------- */

#define BHB_DEFAULT_MS 10000     /* Yao's in-sandbox side: every 10 s */
#define BHB_MIN_MS 100
#define BHB_MAX_MS (24LL * 3600 * 1000)

enum bhb_event {
    BHB_QUIET,        /* nothing to say */
    BHB_LOG_FAILURE,  /* say why the heartbeat fails (first failure, or a different one) */
    BHB_LOG_RECOVERY, /* say it works again */
    BHB_LOG_ACTION,   /* the server answered an action we do not know (said once) */
    BHB_SHUTDOWN,     /* the server answered "shutdown": stop serving */
};

struct bhb {
    int64_t interval_ms;
    int64_t next_ms;       /* when the next one is due */
    int in_flight;
    int failing;           /* the last one failed */
    char last_failure[160]; /* what it failed with (to say a different failure once) */
    unsigned failures;     /* in a row */
    unsigned sent, skipped; /* sent; ticks skipped because one was still in flight */
    int told_action;
};

/* Parse a Go duration ("10s", "1m30s", "500ms", "1.5s") into ms: 0, or -1 when it is not
 * one or lies outside BHB_MIN_MS..BHB_MAX_MS. */
int bhb_parse_interval(const char *s, int64_t *ms);
/* Start: the first heartbeat is due one interval from now (as Yao's ticker). */
void bhb_init(struct bhb *h, int64_t interval_ms, int64_t now_ms);
/* 1 when a heartbeat should be sent now. A tick that finds the previous one still in
 * flight is skipped (counted) and the schedule moves on. */
int bhb_due(struct bhb *h, int64_t now_ms);
/* One was started now. */
void bhb_started(struct bhb *h, int64_t now_ms);
/* Milliseconds until the next due time (0 if due), for poll. */
int64_t bhb_wait_ms(const struct bhb *h, int64_t now_ms);
/* Encode HeartbeatRequest{sandbox_id=1, cpu_percent=2, mem_bytes=3, running_procs=4}. */
int bhb_encode(struct bridge_dyn *d, const char *sandbox_id, const struct bstats_sample *s);
/* The call ended: ok with response message msg/n, or failed with a description (why).
 * Returns what to do; *action gets the action text when BHB_LOG_ACTION. */
enum bhb_event bhb_finished(struct bhb *h, int ok, const unsigned char *msg, size_t n,
                            const char *why, char *action, size_t action_cap);

/* ---- bridge_serve.c: the grpc mode's loop ----------------------------------------- */

/* Serve MCP on in_fd/out_fd until stdin EOF and every reply is written, sending a
 * Heartbeat every cfg->heartbeat_ms. An answer "shutdown" ends the run the same way:
 * stdin is no longer read, requests already read are answered MCP_ERR_SHUTDOWN, calls in
 * flight finish and are answered. BRIDGE_EXIT_OK, or the code of the error recorded
 * (stdout gone, stdin read error, out of memory). */
int bridge_serve_run(struct bgrpc *g, int in_fd, int out_fd, struct bridge_err *err);

#endif
