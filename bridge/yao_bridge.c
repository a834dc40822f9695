/* bridge/yao_bridge.c — main for yao-bridge, the stdio <-> IPC bridge that runs inside a
 * sandbox: an MCP client (Claude CLI, ...) starts it as a stdio server, it connects to
 * Yao's IPC endpoint and copies bytes both ways, unchanged.
 *
 * Owns: the command line, reading the YAO_IPC_* / YAO_TOKEN* environment into a
 * bridge_config, stdio hygiene (fds 0-2 open, O_NONBLOCK on pipes/sockets and restoring
 * it), SIGPIPE, and turning the run's one recorded error into one stderr line and an
 * exit status. Whether the token may travel in the clear is checked here, before any
 * connection (bridge_policy.c's rule, applied again to every address dialed). Everything else is in the files listed in bridge.h. */
#include "bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#define DEFAULT_TIMEOUT_S 30
#define MAX_TIMEOUT_S 3600
#define DEFAULT_GRPC_TIMEOUT_S 120
#define MAX_GRPC_TIMEOUT_S 86400

/* O_NONBLOCK we set on a stdio fd, to be put back at exit. */
struct stdio_flags {
    int fd;
    int saved;
    int changed;
};

/* Print the help text. */
static void usage(FILE *f) {
    fputs("usage: yao-bridge [SOCKET_PATH]\n"
          "       yao-bridge --help | --version\n"
          "\n"
          "Copy stdin to Yao's IPC endpoint and its replies to stdout, byte for byte\n"
          "(MCP JSON-RPC 2.0, one JSON message per line). On stdin EOF the sending side is\n"
          "half-closed; the bridge exits when the peer closes and all its output is written.\n"
          "\n"
          "SOCKET_PATH      Unix socket to connect to (\"@name\": abstract socket). When given,\n"
          "                 YAO_IPC_MODE and YAO_IPC_ADDR are not consulted.\n"
          "\n"
          "Environment:\n"
          "  YAO_IPC_MODE      socket (default), tcp or grpc\n"
          "  YAO_IPC_ADDR      socket mode: socket path; tcp mode: host:port or [ipv6]:port\n"
          "  YAO_IPC_TLS       tcp mode: 1 to use TLS 1.3\n"
          "  YAO_IPC_CA        TLS: PEM file of CAs to trust (default: system store)\n"
          "  YAO_IPC_INSECURE  TLS: 1 to skip certificate and host name verification\n"
          "  YAO_TOKEN         tcp mode: bearer token sent in the handshake (required in\n"
          "  YAO_TOKEN_FILE      tcp mode; YAO_TOKEN wins; trailing whitespace of the file\n"
          "                      is ignored)\n"
          "  YAO_IPC_TIMEOUT   seconds allowed for connect + TLS + token handshake (30)\n"
          "  YAO_BRIDGE_ALLOW_INSECURE  1 to send the token without TLS to any address;\n"
          "                    without it plaintext goes only to loopback, link-local, and\n"
          "                    host.tai.internal as /etc/hosts pins it\n"
          "\n"
          "grpc mode: serve MCP JSON-RPC on stdio by calling Yao's gRPC service yao.Yao\n"
          "(initialize, ping, tools/list, tools/call, resources/list, resources/read):\n"
          "  YAO_GRPC_ADDR     host:port of the server (or of Yao's Tai relay)\n"
          "  YAO_TOKEN         bearer token (or YAO_TOKEN_FILE); YAO_REFRESH_TOKEN optional;\n"
          "                    tokens the server rotates are used from then on\n"
          "  YAO_SANDBOX_ID    session_id of every call, and x-sandbox-id\n"
          "  YAO_GRPC_TAI      enable: send YAO_GRPC_UPSTREAM as x-grpc-upstream\n"
          "  YAO_GRPC_TLS      1 to use TLS (ALPN h2); else plaintext HTTP/2\n"
          "  YAO_GRPC_CA       TLS: PEM file of CAs to trust (default: system store)\n"
          "  YAO_GRPC_INSECURE TLS: 1 to skip certificate and host name verification\n"
          "  YAO_GRPC_TIMEOUT  seconds per call, connecting included (120)\n"
          "  YAO_HEARTBEAT_INTERVAL  how often yao.Yao/Heartbeat reports CPU, memory and\n"
          "                    processes (Go duration, default 10s)\n"
          "RPC failures become JSON-RPC errors; the bridge runs until stdin EOF, or until\n"
          "a Heartbeat is answered \"shutdown\" (then it finishes the calls in flight, exit 0).\n"
          "\n"
          "Exit status: 0 peer closed and all output written; 1 connect/TLS/I-O error;\n"
          "2 usage or configuration error; 3 the peer refused the token.\n"
          "Errors are reported as one line on stderr. Protocol: see bridge/README.md.\n", f);
}

/* Read a yes/no variable: unset or empty is no. 0 or -1 (recorded). */
static int env_bool(const char *name, int *out, struct bridge_err *err) {
    const char *v = getenv(name);

    *out = 0;
    if (!v || !*v || !strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
        !strcasecmp(v, "off"))
        return 0;
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) {
        *out = 1;
        return 0;
    }
    bridge_err_set(err, BRIDGE_EXIT_USAGE, "%s=%s: want 1 or 0", name, v);
    return -1;
}

/* A non-empty environment variable, or NULL. */
static const char *env_str(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A bearer token is a credential: it goes over TLS, or in the clear only where no network
 * sees it — loopback, link-local, host.tai.internal as the container's hosts file pins it
 * (bridge_policy.c) — or anywhere when the environment says so (YAO_BRIDGE_ALLOW_INSECURE=1:
 * a mesh that encrypts for us). Anyone on the path of a plaintext connection could replay it. */
static int token_transport_ok(struct bridge_config *cfg, struct bridge_err *err) {
    if (env_bool("YAO_BRIDGE_ALLOW_INSECURE", &cfg->allow_insecure, err) < 0) return -1;
    return bridge_conn_precheck(cfg, err);
}

/* The grpc mode's part of the environment (YAO_GRPC_*, YAO_TOKEN*, YAO_SANDBOX_ID). */
static int config_grpc(struct bridge_config *cfg, struct bridge_err *err) {
    const char *timeout = env_str("YAO_GRPC_TIMEOUT"), *tai = env_str("YAO_GRPC_TAI");
    int r;

    cfg->mode = BRIDGE_MODE_GRPC;
    cfg->timeout_ms = DEFAULT_GRPC_TIMEOUT_S * 1000;
    if (env_str("YAO_IPC_TLS") || env_str("YAO_IPC_CA") || env_str("YAO_IPC_INSECURE") ||
        env_str("YAO_IPC_TIMEOUT")) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "grpc mode is configured with YAO_GRPC_TLS, "
                       "YAO_GRPC_CA, YAO_GRPC_INSECURE and YAO_GRPC_TIMEOUT, not YAO_IPC_*");
        return -1;
    }
    cfg->addr = env_str("YAO_GRPC_ADDR");
    if (!cfg->addr) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_IPC_MODE=grpc needs YAO_GRPC_ADDR=host:port");
        return -1;
    }
    if (!bridge_addr_ok(cfg->addr)) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "bad address YAO_GRPC_ADDR=%s: want host:port or "
                       "[ipv6]:port", cfg->addr);
        return -1;
    }
    if (timeout) {
        char *end;
        long s = strtol(timeout, &end, 10);
        if (*end || s < 1 || s > MAX_GRPC_TIMEOUT_S) {
            bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_GRPC_TIMEOUT=%s: want whole seconds, 1 to %d",
                           timeout, MAX_GRPC_TIMEOUT_S);
            return -1;
        }
        cfg->timeout_ms = (int)s * 1000;
    }
    if (env_bool("YAO_GRPC_TLS", &cfg->tls, err) < 0) return -1;
    if (env_bool("YAO_GRPC_INSECURE", &cfg->insecure, err) < 0) return -1;
    cfg->ca_file = env_str("YAO_GRPC_CA");
    if (!cfg->tls && (cfg->insecure || cfg->ca_file)) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_GRPC_CA and YAO_GRPC_INSECURE need YAO_GRPC_TLS=1");
        return -1;
    }
    if (cfg->ca_file && access(cfg->ca_file, R_OK) < 0) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_GRPC_CA=%s: %s", cfg->ca_file, strerror(errno));
        return -1;
    }
    cfg->sandbox_id = env_str("YAO_SANDBOX_ID");
    if (!cfg->sandbox_id) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "grpc mode needs YAO_SANDBOX_ID (the session_id of "
                       "every call and the x-sandbox-id metadata)");
        return -1;
    }
    cfg->refresh_token = env_str("YAO_REFRESH_TOKEN");
    if (tai && strcmp(tai, "enable") && strcmp(tai, "disable")) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_GRPC_TAI=%s: want enable or disable", tai);
        return -1;
    }
    if (tai && !strcmp(tai, "enable")) {
        cfg->upstream = env_str("YAO_GRPC_UPSTREAM");
        if (!cfg->upstream) {
            bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_GRPC_TAI=enable needs YAO_GRPC_UPSTREAM "
                           "(the Yao server the relay forwards to)");
            return -1;
        }
    }
    r = bridge_auth_token_load(&cfg->token, &cfg->token_len, err);
    if (r < 0) return -1;
    if (r == 0) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "grpc mode needs a token: set YAO_TOKEN or YAO_TOKEN_FILE");
        return -1;
    }
    cfg->heartbeat_ms = BHB_DEFAULT_MS;
    if (env_str("YAO_HEARTBEAT_INTERVAL") &&
        bhb_parse_interval(env_str("YAO_HEARTBEAT_INTERVAL"), &cfg->heartbeat_ms) < 0) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_HEARTBEAT_INTERVAL=%s: want a duration such as 10s, "
                       "500ms or 1m, from 100ms to 24h", env_str("YAO_HEARTBEAT_INTERVAL"));
        return -1;
    }
    return token_transport_ok(cfg, err);
}

/* Fill cfg from the positional argument (may be NULL) and the environment. */
static int config_load(struct bridge_config *cfg, const char *path_arg, struct bridge_err *err) {
    const char *mode = env_str("YAO_IPC_MODE");
    const char *timeout = env_str("YAO_IPC_TIMEOUT");
    int r;

    memset(cfg, 0, sizeof *cfg);
    cfg->timeout_ms = DEFAULT_TIMEOUT_S * 1000;
    if (timeout) {
        char *end;
        long s = strtol(timeout, &end, 10);
        if (*end || s < 1 || s > MAX_TIMEOUT_S) {
            bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_IPC_TIMEOUT=%s: want whole seconds, 1 to %d",
                           timeout, MAX_TIMEOUT_S);
            return -1;
        }
        cfg->timeout_ms = (int)s * 1000;
    }
    if (path_arg) {
        /* An explicit path describes the whole setup; YAO_IPC_* may belong to another. */
        cfg->mode = BRIDGE_MODE_UNIX;
        cfg->addr = path_arg;
        return 0;
    }
    if (!mode || !strcmp(mode, "socket") || !strcmp(mode, "unix")) {
        cfg->mode = BRIDGE_MODE_UNIX;
        cfg->addr = env_str("YAO_IPC_ADDR");
        if (!cfg->addr) cfg->addr = env_str("YAO_IPC_SOCKET"); /* the Docker design's name */
        if (!cfg->addr) {
            bridge_err_set(err, BRIDGE_EXIT_USAGE,
                           "no socket given: pass SOCKET_PATH or set YAO_IPC_ADDR (see --help)");
            return -1;
        }
    } else if (!strcmp(mode, "tcp")) {
        cfg->mode = BRIDGE_MODE_TCP;
        cfg->addr = env_str("YAO_IPC_ADDR");
        if (!cfg->addr) {
            bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_IPC_MODE=tcp needs YAO_IPC_ADDR=host:port");
            return -1;
        }
    } else if (!strcmp(mode, "grpc")) {
        return config_grpc(cfg, err);
    } else {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_IPC_MODE=%s is not supported (want socket, tcp "
                       "or grpc)", mode);
        return -1;
    }
    if (env_bool("YAO_IPC_TLS", &cfg->tls, err) < 0) return -1;
    if (env_bool("YAO_IPC_INSECURE", &cfg->insecure, err) < 0) return -1;
    cfg->ca_file = env_str("YAO_IPC_CA");
    if (cfg->mode == BRIDGE_MODE_UNIX) {
        if (cfg->tls || cfg->insecure || cfg->ca_file) {
            bridge_err_set(err, BRIDGE_EXIT_USAGE,
                           "YAO_IPC_TLS, YAO_IPC_CA and YAO_IPC_INSECURE apply to tcp mode only");
            return -1;
        }
        return 0;
    }
    if (!cfg->tls && (cfg->insecure || cfg->ca_file)) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_IPC_CA and YAO_IPC_INSECURE need YAO_IPC_TLS=1");
        return -1;
    }
    r = bridge_auth_token_load(&cfg->token, &cfg->token_len, err);
    if (r < 0) return -1;
    if (r == 0) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "tcp mode needs a token: set YAO_TOKEN or YAO_TOKEN_FILE");
        return -1;
    }
    return token_transport_ok(cfg, err);
}

/* Make sure fds 0-2 are open, so a socket can never land on one of them. Returns 1 if
 * stdout was closed (the caller reports it once stderr is known to be usable). */
static int stdio_ensure_open(void) {
    int fd, stdout_closed = 0;

    for (fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        if (open("/dev/null", O_RDWR) != fd) _exit(BRIDGE_EXIT_IO);
        if (fd == 1) stdout_closed = 1;
    }
    return stdout_closed;
}

/* Set O_NONBLOCK on a pipe or socket (not on a tty or file: those may be shared with
 * the parent, and never hold us up the way a full pipe can). */
static void stdio_nonblock(struct stdio_flags *s, int fd) {
    struct stat st;
    int fl;

    s->fd = fd;
    s->changed = 0;
    if (fstat(fd, &st) < 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return;
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK)) return;
    if (fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0) {
        s->saved = fl;
        s->changed = 1;
    }
}

/* Put back the flags stdio_nonblock changed. */
static void stdio_restore(const struct stdio_flags *s) {
    if (s->changed) fcntl(s->fd, F_SETFL, s->saved);
}

int main(int argc, char **argv) {
    struct bridge_err err = { 0, "" };
    struct bridge_config cfg;
    struct bridge_conn conn;
    struct bridge_buf up = { NULL, 0, 0 }, down = { NULL, 0, 0 };
    struct stdio_flags in_flags = { 0, 0, 0 }, out_flags = { 1, 0, 0 };
    const char *path_arg = NULL;
    int stdout_closed, only_positional = 0, i, code;

    memset(&cfg, 0, sizeof cfg);
    memset(&conn, 0, sizeof conn);
    conn.fd = -1;
    stdout_closed = stdio_ensure_open();
    signal(SIGPIPE, SIG_IGN); /* EPIPE is reported where it happens */

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            usage(stdout);
            return fflush(stdout) == 0 ? BRIDGE_EXIT_OK : BRIDGE_EXIT_IO;
        }
        if (!only_positional && (!strcmp(a, "--version") || !strcmp(a, "-V"))) {
            printf("yao-bridge %s (%s)\n", YAO_VERSION, OpenSSL_version(OPENSSL_VERSION));
            return fflush(stdout) == 0 ? BRIDGE_EXIT_OK : BRIDGE_EXIT_IO;
        }
        if (!only_positional && !strcmp(a, "--")) {
            only_positional = 1;
        } else if (!only_positional && a[0] == '-' && a[1] != '\0') {
            bridge_err_set(&err, BRIDGE_EXIT_USAGE, "unknown option '%s' (see --help)", a);
        } else if (path_arg) {
            bridge_err_set(&err, BRIDGE_EXIT_USAGE, "one SOCKET_PATH expected, got '%s' too (see --help)", a);
        } else {
            path_arg = a;
        }
    }
    if (err.code) goto out;
    if (config_load(&cfg, path_arg, &err) < 0) goto out;
    if (stdout_closed) {
        bridge_err_set(&err, BRIDGE_EXIT_IO, "stdout is not open");
        goto out;
    }
    if (cfg.mode == BRIDGE_MODE_GRPC) {
        struct bgrpc g;
        if (bgrpc_init(&g, &cfg, &err) == 0) {
            stdio_nonblock(&in_flags, 0);
            stdio_nonblock(&out_flags, 1);
            bridge_serve_run(&g, 0, 1, &err);
            stdio_restore(&out_flags);
            stdio_restore(&in_flags);
        }
        bgrpc_free(&g);
        goto out;
    }
    up.data = malloc(BRIDGE_BUF_SIZE);
    down.data = malloc(BRIDGE_BUF_SIZE);
    if (!up.data || !down.data) {
        bridge_err_set(&err, BRIDGE_EXIT_IO, "out of memory");
        goto out;
    }
    if (bridge_conn_open(&conn, &cfg, down.data, BRIDGE_BUF_SIZE, &down.end, &err) < 0) goto out;
    bridge_auth_token_free(cfg.token, cfg.token_len); /* not needed past the handshake */
    cfg.token = NULL;

    stdio_nonblock(&in_flags, 0);
    stdio_nonblock(&out_flags, 1);
    bridge_pump_run(&conn, 0, 1, &up, &down, &err);
    stdio_restore(&out_flags);
    stdio_restore(&in_flags);
out:
    bridge_conn_close(&conn);
    bridge_auth_token_free(cfg.token, cfg.token_len);
    free(up.data);
    free(down.data);
    code = err.code;
    if (code) bridge_log("%s", err.msg);
    return code;
}
