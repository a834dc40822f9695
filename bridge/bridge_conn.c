/* bridge/bridge_conn.c — the bridge's one connection to the peer (Yao's IPC server).
 *
 * Owns: connecting to a Unix socket path (or Linux abstract name "@name") or to a TCP
 * host:port, all within one deadline; for TCP optionally TLS 1.3 with certificate and
 * host name (or IP) verification; the token handshake (bridge_auth.c builds and parses
 * the lines, this file moves them); and non-blocking read/write/half-close that look the
 * same to the pump whether the bytes go through OpenSSL or straight to the socket.
 * bridge_conn_dial is the same connect + TLS for the grpc mode (TLS 1.2+, ALPN h2).
 * Which addresses a token may go to in the clear is bridge_policy.c's decision; this file
 * resolves (host.tai.internal from /etc/hosts when it is pinned there), applies it to each
 * address and dials only those.
 *
 * Does not own: the copy loop (bridge_pump.c) or what the bytes mean (nothing does). */
#include "bridge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define UNIX_BACKLOG_RETRY_MS 10

/* Wait until fd is ready for events or the deadline passes: 1 ready, 0 timed out. */
static int wait_fd(int fd, short events, int64_t deadline) {
    for (;;) {
        struct pollfd p = { fd, events, 0 };
        int64_t left = deadline - bridge_now_ms();
        int r;

        if (left <= 0) return 0;
        r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return 1; /* let the caller's I/O call report it */
    }
}

/* Finish a non-blocking connect: 0 connected, else the errno it failed with. */
static int connect_finish(int fd, int64_t deadline) {
    int soerr = 0;
    socklen_t len = sizeof soerr;

    if (!wait_fd(fd, POLLOUT, deadline)) return ETIMEDOUT;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0) return errno;
    return soerr;
}

/* Connect to a Unix socket path; "@name" is a Linux abstract socket. A full listen
 * backlog (EAGAIN) is retried until the deadline, as a blocking connect would wait. */
static int connect_unix(struct bridge_conn *c, const char *path, int64_t deadline,
                        struct bridge_err *err) {
    struct sockaddr_un sa;
    size_t len = strlen(path);
    socklen_t salen;
    int e;

    snprintf(c->label, sizeof c->label, "unix:%s", path);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (len == 0 || len >= sizeof sa.sun_path) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "connect %s: socket path must be 1 to %zu bytes",
                       c->label, sizeof sa.sun_path - 1);
        return -1;
    }
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@') {
        sa.sun_path[0] = '\0';
        salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    } else {
        salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
    }
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "connect %s: %s", c->label, strerror(errno));
        return -1;
    }
    for (;;) {
        if (connect(c->fd, (struct sockaddr *)&sa, salen) == 0) return 0;
        e = errno;
        if (e == EAGAIN && bridge_now_ms() < deadline) {
            poll(NULL, 0, UNIX_BACKLOG_RETRY_MS);
            continue;
        }
        if (e == EAGAIN) e = ETIMEDOUT;
        if (e == EINPROGRESS || e == EINTR) e = connect_finish(c->fd, deadline);
        if (e == 0) return 0;
        bridge_err_set(err, BRIDGE_EXIT_IO, "connect %s: %s", c->label, strerror(e));
        return -1;
    }
}

/* Split "host:port" or "[v6addr]:port"; the port must be numeric. 0 or -1. */
static int split_host_port(const char *addr, char *host, size_t hcap, char *port, size_t pcap) {
    const char *colon, *h = addr, *hend;
    size_t hlen, plen, i;
    long pv = 0;

    if (addr[0] == '[') {
        hend = strchr(addr, ']');
        if (!hend || hend[1] != ':') return -1;
        h = addr + 1;
        colon = hend + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon || memchr(addr, ':', (size_t)(colon - addr))) return -1; /* v6 needs [] */
        hend = colon;
    }
    hlen = (size_t)(hend - h);
    plen = strlen(colon + 1);
    if (hlen == 0 || hlen >= hcap || plen == 0 || plen >= pcap || plen > 5) return -1;
    for (i = 0; i < plen; i++) {
        char d = colon[1 + i];
        if (d < '0' || d > '9') return -1;
        pv = pv * 10 + (d - '0');
    }
    if (pv < 1 || pv > 65535) return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memcpy(port, colon + 1, plen + 1);
    return 0;
}

/* One address to try. */
struct cand {
    struct sockaddr_storage sa;
    socklen_t len;
    int family;
};

#define MAX_CANDS 16
#define HOSTS_FILE_MAX (1 << 20)

/* Copy a resolver answer into cands (up to MAX_CANDS in all). */
static void add_cands(struct cand *cands, int *n, const struct addrinfo *ai) {
    for (; ai && *n < MAX_CANDS; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof cands[*n].sa) continue;
        memcpy(&cands[*n].sa, ai->ai_addr, ai->ai_addrlen);
        cands[*n].len = ai->ai_addrlen;
        cands[*n].family = ai->ai_family;
        (*n)++;
    }
}

/* The hosts file's addresses for host.tai.internal, resolved numerically: the count. */
static int pinned_cands(const char *host, const char *port, struct cand *cands) {
    char pins[MAX_CANDS][BPOLICY_ADDR_MAX];
    struct addrinfo hints, *res;
    int fd = open(BPOLICY_HOSTS_FILE, O_RDONLY | O_CLOEXEC), npins, i, n = 0;
    char *text = NULL;
    size_t got = 0;

    if (fd < 0) return 0;
    text = malloc(HOSTS_FILE_MAX);
    while (text && got < HOSTS_FILE_MAX) {
        ssize_t r = read(fd, text + got, HOSTS_FILE_MAX - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!text) return 0;
    npins = bpolicy_hosts_lookup(text, got, host, pins, MAX_CANDS);
    free(text);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    for (i = 0; i < npins; i++) {
        if (getaddrinfo(pins[i], port, &hints, &res) != 0) continue;
        add_cands(cands, &n, res);
        freeaddrinfo(res);
    }
    return n;
}

/* The addresses to dial for host:port: for host.tai.internal those the container's hosts
 * file pins (never DNS: *pinned = 1), else the resolver's answer. The count, or -1
 * (recorded) when the name does not resolve. */
static int resolve(const char *label, const char *host, const char *port, struct cand *cands,
                   int *pinned, struct bridge_err *err) {
    struct addrinfo hints, *res = NULL;
    int r, n = 0;

    *pinned = 0;
    if (bpolicy_is_tai_host(host) && (n = pinned_cands(host, port, cands)) > 0) {
        *pinned = 1;
        return n;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    r = getaddrinfo(host, port, &hints, &res);
    if (r != 0) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "resolve %s: %s", label,
                       r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
        return -1;
    }
    add_cands(cands, &n, res);
    freeaddrinfo(res);
    return n;
}

/* Keep only the addresses the token may go to (bridge_policy.c); if none is left, record
 * the refusal naming the first address refused. Returns the count kept. */
static int filter_cands(const struct bridge_config *cfg, struct cand *cands, int n, int pinned,
                        struct bridge_err *err) {
    char first[INET6_ADDRSTRLEN] = "";
    int i, kept = 0;

    for (i = 0; i < n; i++) {
        if (bpolicy_plain_verdict(cfg->tls, cfg->allow_insecure, pinned, (struct sockaddr *)&cands[i].sa,
                                  cands[i].len) != BPOLICY_REFUSED) {
            cands[kept++] = cands[i];
        } else if (!first[0]) {
            const void *a = cands[i].family == AF_INET6
                                ? (const void *)&((struct sockaddr_in6 *)&cands[i].sa)->sin6_addr
                                : (const void *)&((struct sockaddr_in *)&cands[i].sa)->sin_addr;
            inet_ntop(cands[i].family, a, first, sizeof first);
        }
    }
    if (kept == 0)
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "refusing to send the token over plain TCP to %s (%s is "
                       "neither loopback nor link-local, nor host.tai.internal as %s pins it): set %s=1 "
                       "(TLS), or YAO_BRIDGE_ALLOW_INSECURE=1 to send it unencrypted anyway", cfg->addr,
                       first[0] ? first : "no address", BPOLICY_HOSTS_FILE,
                       cfg->mode == BRIDGE_MODE_GRPC ? "YAO_GRPC_TLS" : "YAO_IPC_TLS");
    return kept;
}

/* A closed connection, ready to be opened. */
static void conn_reset(struct bridge_conn *c) {
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->rd_want = POLLIN;
    c->wr_want = POLLOUT;
}

/* Record a TLS failure with the most specific reason OpenSSL has. */
static void tls_fail(struct bridge_conn *c, struct bridge_err *err, const char *what, int ssl_error,
                     int saved_errno) {
    unsigned long e = ERR_peek_last_error();
    long vr = X509_V_OK;
    char buf[256];

    c->tls_broken = 1;
    /* Only a failed handshake is explained by the verify result (with YAO_IPC_INSECURE
     * the result is recorded but ignored, so it must not explain later errors). */
    if (c->ssl && !SSL_is_init_finished(c->ssl) && SSL_get_verify_mode(c->ssl) != SSL_VERIFY_NONE)
        vr = SSL_get_verify_result(c->ssl);
    if (vr != X509_V_OK) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "%s %s: certificate verify failed: %s", what, c->label,
                       X509_verify_cert_error_string(vr));
    } else if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING ||
               (ssl_error == SSL_ERROR_SYSCALL && e == 0 && saved_errno == 0)) {
        bridge_err_set(err, BRIDGE_EXIT_IO,
                       "%s %s: connection closed without a TLS close_notify (data may be truncated)",
                       what, c->label);
    } else if (e != 0) {
        const char *reason = ERR_reason_error_string(e);
        if (!reason) {
            ERR_error_string_n(e, buf, sizeof buf);
            reason = buf;
        }
        bridge_err_set(err, BRIDGE_EXIT_IO, "%s %s: %s", what, c->label, reason);
    } else {
        bridge_err_set(err, BRIDGE_EXIT_IO, "%s %s: %s", what, c->label,
                       saved_errno ? strerror(saved_errno) : "TLS error");
    }
    ERR_clear_error();
}

/* Set up TLS over the connected socket (no I/O yet): TLS 1.3 only in tcp mode, 1.2+ with
 * ALPN h2 in grpc mode. The name check is against the host as written in the address: an
 * IP literal is matched against IP SANs, anything else against DNS names (and sent as SNI). */
static int tls_setup(struct bridge_conn *c, const struct bridge_config *cfg, const char *host,
                     struct bridge_err *err) {
    unsigned char ipbuf[sizeof(struct in6_addr)];
    int is_ip = inet_pton(AF_INET, host, ipbuf) == 1 || inet_pton(AF_INET6, host, ipbuf) == 1;
    SSL_CTX *ctx;
    SSL *ssl;

    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_client_method());
    c->ssl_ctx = ctx;
    if (!ctx) goto ssl_err;
    /* TLS 1.3 only: its close_notify closes one direction (RFC 8446 §6.1), which is how
     * the bridge half-closes; a TLS 1.2 stack answers close_notify by closing. gRPC never
     * half-closes the connection, so there TLS 1.2 (the floor of RFC 7540 §9.2) is fine,
     * and HTTP/2 is negotiated with ALPN "h2" (gRPC servers refuse a TLS client without). */
    if (!SSL_CTX_set_min_proto_version(ctx, cfg->mode == BRIDGE_MODE_GRPC ? TLS1_2_VERSION
                                                                          : TLS1_3_VERSION))
        goto ssl_err;
    if (cfg->mode == BRIDGE_MODE_GRPC &&
        SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x02h2", 3) != 0)
        goto ssl_err;
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (cfg->insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        if (cfg->ca_file) {
            if (!SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL)) {
                unsigned long e = ERR_peek_last_error();
                const char *reason = ERR_reason_error_string(e);
                bridge_err_set(err, BRIDGE_EXIT_USAGE, "load CA file %s: %s", cfg->ca_file,
                               reason ? reason : "cannot read certificates");
                ERR_clear_error();
                return -1;
            }
        } else if (!SSL_CTX_set_default_verify_paths(ctx)) {
            goto ssl_err;
        }
    }
    ssl = SSL_new(ctx);
    c->ssl = ssl;
    if (!ssl || !SSL_set_fd(ssl, c->fd)) goto ssl_err;
    if (!is_ip && !SSL_set_tlsext_host_name(ssl, host)) goto ssl_err;
    if (!cfg->insecure) {
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (is_ip ? !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
                  : !SSL_set1_host(ssl, host))
            goto ssl_err;
    }
    return 0;
ssl_err:
    tls_fail(c, err, "tls setup for", SSL_ERROR_SSL, 0);
    return -1;
}

/* One step of the TLS handshake: 0 done, 1 wants c->dial_want, -1 failed (recorded). */
static int tls_step(struct bridge_conn *c, const struct bridge_config *cfg, struct bridge_err *err) {
    int r, e, saved;

    ERR_clear_error();
    errno = 0;
    r = SSL_connect(c->ssl);
    if (r == 1 && cfg->mode == BRIDGE_MODE_GRPC) {
        const unsigned char *proto = NULL;
        unsigned int plen = 0;
        SSL_get0_alpn_selected(c->ssl, &proto, &plen);
        if (plen == 2 && !memcmp(proto, "h2", 2)) return 0;
        bridge_err_set(err, BRIDGE_EXIT_IO, "tls handshake with %s: the server did not "
                       "select HTTP/2 (ALPN h2); is it a gRPC server?", c->label);
        return -1;
    }
    if (r == 1) return 0;
    saved = errno;
    e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ) c->dial_want = POLLIN;
    else if (e == SSL_ERROR_WANT_WRITE) c->dial_want = POLLOUT;
    else {
        tls_fail(c, err, "tls handshake with", e, saved);
        return -1;
    }
    return 1;
}

/* A dial in progress: the addresses to try and how far it got. */
struct dial {
    struct cand cands[MAX_CANDS];
    int n, next;           /* candidates, the next one to try */
    int last_errno;        /* why the last candidate failed */
    int tls_phase;         /* TCP is up, the TLS handshake runs */
    char host[256];        /* for the TLS name check */
};

/* Begin connecting to the next candidate: 0 connected, 1 in progress, -1 none left
 * (recorded, naming the last failure). */
static int dial_next(struct bridge_conn *c, struct dial *d, struct bridge_err *err) {
    while (d->next < d->n) {
        struct cand *k = &d->cands[d->next++];
        c->fd = socket(k->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) {
            d->last_errno = errno;
            continue;
        }
        if (connect(c->fd, (struct sockaddr *)&k->sa, k->len) == 0) return 0;
        if (errno == EINPROGRESS || errno == EINTR) {
            c->dial_want = POLLOUT;
            return 1;
        }
        d->last_errno = errno;
        close(c->fd);
        c->fd = -1;
    }
    bridge_err_set(err, BRIDGE_EXIT_IO, "connect %s: %s", c->label, strerror(d->last_errno));
    return -1;
}

/* TCP is up: socket options, then TLS if configured. 0 done, 1 in progress, -1 failed. */
static int dial_connected(struct bridge_conn *c, const struct bridge_config *cfg, struct dial *d,
                          struct bridge_err *err) {
    int one = 1;

    /* JSON-RPC messages are small and latency-bound; keep idle NAT paths alive. */
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    if (!cfg->tls) return 0;
    if (tls_setup(c, cfg, d->host, err) < 0) return -1;
    d->tls_phase = 1;
    return tls_step(c, cfg, err);
}

/* Start a dial; see bridge.h. */
int bridge_conn_dial_start(struct bridge_conn *c, const struct bridge_config *cfg, struct bridge_err *err) {
    char port[8];
    struct dial *d;
    int pinned, r;

    conn_reset(c);
    snprintf(c->label, sizeof c->label, "%s:%s", cfg->tls ? "tls" : "tcp", cfg->addr);
    if (!(d = calloc(1, sizeof *d))) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "connect %s: out of memory", c->label);
        return -1;
    }
    c->dial = d;
    d->last_errno = ECONNREFUSED;
    if (split_host_port(cfg->addr, d->host, sizeof d->host, port, sizeof port) < 0) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "bad address %s: want host:port or [ipv6]:port", cfg->addr);
        return -1;
    }
    /* resolving blocks (getaddrinfo); an address literal or a pinned name does not wait */
    if ((d->n = resolve(c->label, d->host, port, d->cands, &pinned, err)) < 0) return -1;
    /* the addresses checked are the addresses dialed: nothing is resolved twice */
    if ((d->n = filter_cands(cfg, d->cands, d->n, pinned, err)) == 0) return -1;
    r = dial_next(c, d, err);
    if (r != 0) return r;
    r = dial_connected(c, cfg, d, err);
    if (r == 0) {
        free(c->dial);
        c->dial = NULL;
    }
    return r;
}

/* Continue a dial once c->fd is ready for c->dial_want; see bridge.h. */
int bridge_conn_dial_step(struct bridge_conn *c, const struct bridge_config *cfg, struct bridge_err *err) {
    struct dial *d = c->dial;
    int r;

    if (!d) return 0;
    if (d->tls_phase) {
        r = tls_step(c, cfg, err);
    } else {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0) soerr = errno;
        if (soerr == EINPROGRESS || soerr == EALREADY) return 1; /* woken early */
        if (soerr != 0) {
            d->last_errno = soerr;
            close(c->fd);
            c->fd = -1;
            r = dial_next(c, d, err);
            if (r != 0) return r;
        }
        r = dial_connected(c, cfg, d, err);
    }
    if (r == 0) {
        free(c->dial);
        c->dial = NULL;
    }
    return r;
}

/* The dial, waiting on it until deadline (tcp mode, which has nothing else to do). */
int bridge_conn_dial(struct bridge_conn *c, const struct bridge_config *cfg, int64_t deadline,
                     struct bridge_err *err) {
    int r = bridge_conn_dial_start(c, cfg, err);

    while (r == 1) {
        if (!wait_fd(c->fd, c->dial_want, deadline)) {
            struct dial *d = c->dial;
            if (d && d->tls_phase) {
                c->tls_broken = 1;
                bridge_err_set(err, BRIDGE_EXIT_IO, "tls handshake with %s: timed out", c->label);
            } else {
                bridge_err_set(err, BRIDGE_EXIT_IO, "connect %s: %s", c->label, strerror(ETIMEDOUT));
            }
            return -1;
        }
        r = bridge_conn_dial_step(c, cfg, err);
    }
    return r;
}

/* Send the hello line and read the peer's one-line answer (bridge/README.md). Bytes
 * behind the answer's newline are payload and go to early. */
static int token_handshake(struct bridge_conn *c, const struct bridge_config *cfg,
                           unsigned char *early, size_t early_cap, size_t *early_len,
                           int64_t deadline, struct bridge_err *err) {
    struct bridge_err ioerr = { 0, "" };
    char reason[256];
    size_t hello_len = 0, off = 0, n = 0;
    char *hello = bridge_auth_hello(cfg->token, cfg->token_len, &hello_len);
    unsigned char *nl = NULL;
    int r;

    if (!hello) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "out of memory");
        return -1;
    }
    while (off < hello_len) {
        ssize_t w = bridge_conn_write(c, hello + off, hello_len - off, &ioerr);
        if (w > 0) { off += (size_t)w; continue; }
        if (w == BRIDGE_IO_AGAIN && wait_fd(c->fd, c->wr_want, deadline)) continue;
        bridge_auth_token_free(hello, hello_len);
        bridge_err_set(err, BRIDGE_EXIT_IO, "send token to %s: %s", c->label,
                       ioerr.code ? ioerr.msg : "timed out");
        return -1;
    }
    bridge_auth_token_free(hello, hello_len);

    while (!nl) {
        ssize_t got;

        if (n >= BRIDGE_REPLY_MAX) {
            bridge_err_set(err, BRIDGE_EXIT_IO, "%s: handshake reply longer than %d bytes (not a "
                           "yao-bridge peer?)", c->label, BRIDGE_REPLY_MAX);
            return -1;
        }
        got = bridge_conn_read(c, early + n, early_cap - n, &ioerr);
        if (got == BRIDGE_IO_AGAIN) {
            if (wait_fd(c->fd, c->rd_want, deadline)) continue;
            bridge_err_set(err, BRIDGE_EXIT_IO, "%s: no handshake reply within %d ms", c->label,
                           cfg->timeout_ms);
            return -1;
        }
        if (got == 0) {
            bridge_err_set(err, BRIDGE_EXIT_IO, "%s closed the connection during the token "
                           "handshake (token refused?)", c->label);
            return -1;
        }
        if (got < 0) {
            bridge_err_set(err, BRIDGE_EXIT_IO, "token handshake with %s failed: %s", c->label, ioerr.msg);
            return -1;
        }
        nl = memchr(early + n, '\n', (size_t)got);
        n += (size_t)got;
    }
    if ((size_t)(nl - early) > BRIDGE_REPLY_MAX) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "%s: handshake reply longer than %d bytes", c->label,
                       BRIDGE_REPLY_MAX);
        return -1;
    }
    r = bridge_auth_parse_reply((const char *)early, (size_t)(nl - early), reason, sizeof reason);
    if (r == 0) {
        bridge_err_set(err, BRIDGE_EXIT_REFUSED, "%s refused the token: %s", c->label,
                       reason[0] ? reason : "no reason given");
        return -1;
    }
    if (r < 0) {
        int show = nl - early > 80 ? 80 : (int)(nl - early);
        bridge_err_set(err, BRIDGE_EXIT_IO, "%s: bad handshake reply (%s): %.*s", c->label, reason,
                       show, (const char *)early);
        return -1;
    }
    *early_len = n - (size_t)(nl + 1 - early);
    memmove(early, nl + 1, *early_len);
    return 0;
}


/* Connect, then for TCP: TLS (if configured) and the token handshake. */
int bridge_conn_open(struct bridge_conn *c, const struct bridge_config *cfg,
                     unsigned char *early, size_t early_cap, size_t *early_len,
                     struct bridge_err *err) {
    int64_t deadline = bridge_now_ms() + cfg->timeout_ms;

    *early_len = 0;
    if (cfg->mode == BRIDGE_MODE_UNIX) {
        conn_reset(c);
        return connect_unix(c, cfg->addr, deadline, err);
    }
    if (bridge_conn_dial(c, cfg, deadline, err) < 0) return -1;
    return token_handshake(c, cfg, early, early_cap, early_len, deadline, err);
}

/* 1 when addr is host:port or [ipv6]:port with a numeric port. */
int bridge_addr_ok(const char *addr) {
    char host[256], port[8];

    return split_host_port(addr, host, sizeof host, port, sizeof port) == 0;
}

/* The token policy before any connection; see bridge.h. */
int bridge_conn_precheck(const struct bridge_config *cfg, struct bridge_err *err) {
    struct bridge_err ignored = { 0, "" };
    struct cand cands[MAX_CANDS];
    char host[256], port[8];
    int n, pinned;

    if (cfg->tls || cfg->allow_insecure) return 0;
    if (split_host_port(cfg->addr, host, sizeof host, port, sizeof port) < 0) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "bad address %s: want host:port or [ipv6]:port", cfg->addr);
        return -1;
    }
    n = resolve(cfg->addr, host, port, cands, &pinned, &ignored);
    if (n <= 0) return 0; /* not resolvable now: each dial decides */
    return filter_cands(cfg, cands, n, pinned, err) > 0 ? 0 : -1;
}

/* Read from the peer (see bridge.h for the return values). */
ssize_t bridge_conn_read(struct bridge_conn *c, void *buf, size_t n, struct bridge_err *err) {
    size_t got = 0;
    int r, e, saved;

    if (!c->ssl) {
        for (;;) {
            ssize_t rr = recv(c->fd, buf, n, 0);
            if (rr >= 0) return rr;
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->rd_want = POLLIN;
                return BRIDGE_IO_AGAIN;
            }
            bridge_err_set(err, BRIDGE_EXIT_IO, "read %s: %s", c->label, strerror(errno));
            return -1;
        }
    }
    ERR_clear_error();
    errno = 0;
    r = SSL_read_ex(c->ssl, buf, n, &got);
    if (r == 1) return (ssize_t)got;
    saved = errno;
    e = SSL_get_error(c->ssl, r);
    switch (e) {
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_WANT_READ: c->rd_want = POLLIN; return BRIDGE_IO_AGAIN;
    case SSL_ERROR_WANT_WRITE: c->rd_want = POLLOUT; return BRIDGE_IO_AGAIN;
    default:
        tls_fail(c, err, "read", e, saved);
        return -1;
    }
}

/* Write to the peer (see bridge.h). A TLS write that would block must be retried with
 * the same length: tls_wpend remembers it, the caller guarantees the bytes are still
 * there (the buffer may move; SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER allows that). */
ssize_t bridge_conn_write(struct bridge_conn *c, const void *buf, size_t n, struct bridge_err *err) {
    size_t done = 0;
    int r, e, saved;

    if (!c->ssl) {
        for (;;) {
            ssize_t w = send(c->fd, buf, n, MSG_NOSIGNAL);
            if (w >= 0) return w;
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->wr_want = POLLOUT;
                return BRIDGE_IO_AGAIN;
            }
            bridge_err_set(err, BRIDGE_EXIT_IO, "write %s: %s", c->label, strerror(errno));
            return -1;
        }
    }
    if (c->tls_wpend) n = c->tls_wpend;
    ERR_clear_error();
    errno = 0;
    r = SSL_write_ex(c->ssl, buf, n, &done);
    if (r == 1) {
        c->tls_wpend = 0;
        return (ssize_t)done;
    }
    saved = errno;
    e = SSL_get_error(c->ssl, r);
    switch (e) {
    case SSL_ERROR_WANT_READ: c->tls_wpend = n; c->wr_want = POLLIN; return BRIDGE_IO_AGAIN;
    case SSL_ERROR_WANT_WRITE: c->tls_wpend = n; c->wr_want = POLLOUT; return BRIDGE_IO_AGAIN;
    default:
        tls_fail(c, err, "write", e, saved);
        return -1;
    }
}

/* Half-close: shutdown(SHUT_WR) on a plain socket; on TLS the close_notify alert, which
 * in TLS 1.3 ends only our direction — the peer can still send, and we still read. */
int bridge_conn_shutdown_write(struct bridge_conn *c, struct bridge_err *err) {
    int r, e, saved;

    if (!c->ssl) {
        /* ENOTCONN: the peer is already gone; the read side will report it. */
        if (shutdown(c->fd, SHUT_WR) < 0 && errno != ENOTCONN) {
            bridge_err_set(err, BRIDGE_EXIT_IO, "shutdown %s: %s", c->label, strerror(errno));
            return -1;
        }
        return 1;
    }
    ERR_clear_error();
    errno = 0;
    r = SSL_shutdown(c->ssl);
    if (r >= 0) return 1; /* 0: sent, the peer's close_notify not yet seen — expected */
    saved = errno;
    e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_WRITE) { c->wr_want = POLLOUT; return BRIDGE_IO_AGAIN; }
    if (e == SSL_ERROR_WANT_READ) { c->wr_want = POLLIN; return BRIDGE_IO_AGAIN; }
    tls_fail(c, err, "close_notify to", e, saved);
    return -1;
}

/* Answer the peer's close_notify, if ours has not gone out yet; never blocks. */
void bridge_conn_close_notify(struct bridge_conn *c) {
    if (!c->ssl || c->tls_broken || (SSL_get_shutdown(c->ssl) & SSL_SENT_SHUTDOWN)) return;
    SSL_shutdown(c->ssl);
    ERR_clear_error();
}

/* Free OpenSSL state and close the socket. */
void bridge_conn_close(struct bridge_conn *c) {
    if (c->ssl) SSL_free(c->ssl);
    if (c->ssl_ctx) SSL_CTX_free(c->ssl_ctx);
    if (c->fd >= 0) close(c->fd);
    free(c->dial);
    c->dial = NULL;
    c->ssl = NULL;
    c->ssl_ctx = NULL;
    c->fd = -1;
}
