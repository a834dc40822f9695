/* tests/bridge/peer.c — a real peer for the yao-bridge tests: a one-connection server on a
 * Unix socket or TCP (optionally TLS 1.3), with the yao-bridge token handshake, that
 * speaks just enough MCP JSON-RPC (initialize, tools/list, tools/call) or echoes, sends a
 * file, or sinks. It records every payload byte it received and sent to files so the
 * test driver can compare them byte for byte with what went into and came out of the
 * bridge, and logs events (eof seen, token refused, ...) one per line.
 *
 * It is a test fixture: blocking I/O, one client, crude JSON field extraction that only
 * needs to understand the requests the driver sends. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

struct opts {
    const char *unix_path, *tcp_addr, *ready, *cert, *key, *token, *greet, *mode;
    const char *record, *sent, *events, *defer;
    int refuse_by_close, close_after, no_close_notify, timeout;
};

struct peer {
    int fd;
    SSL *ssl;
    FILE *record, *sent, *events;
    int replies;
};

static struct opts o;

/* Print an error and exit 1. */
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("peer: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    ERR_print_errors_fp(stderr);
    exit(1);
}

/* Log one event line. */
static void event(struct peer *p, const char *fmt, ...) {
    va_list ap;
    if (!p->events) return;
    va_start(ap, fmt);
    vfprintf(p->events, fmt, ap);
    va_end(ap);
    fputc('\n', p->events);
    fflush(p->events);
}

/* Read some bytes: >0, 0 on EOF (TLS close_notify or TCP EOF), -1 on error. */
static ssize_t peer_read(struct peer *p, void *buf, size_t n) {
    if (p->ssl) {
        size_t got = 0;
        int r = SSL_read_ex(p->ssl, buf, n, &got);
        if (r == 1) return (ssize_t)got;
        r = SSL_get_error(p->ssl, r);
        if (r == SSL_ERROR_ZERO_RETURN) return 0;
        ERR_print_errors_fp(stderr);
        return -1;
    }
    for (;;) {
        ssize_t r = read(p->fd, buf, n);
        if (r < 0 && errno == EINTR) continue;
        return r;
    }
}

/* Write everything; -1 if the connection failed. */
static int peer_write(struct peer *p, const void *buf, size_t n) {
    const char *b = buf;
    while (n > 0) {
        ssize_t w;
        if (p->ssl) {
            size_t done = 0;
            if (SSL_write_ex(p->ssl, b, n, &done) != 1) return -1;
            w = (ssize_t)done;
        } else {
            w = write(p->fd, b, n);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Send payload bytes and record them. */
static int send_payload(struct peer *p, const char *buf, size_t n) {
    if (peer_write(p, buf, n) < 0) return -1;
    if (p->sent) { fwrite(buf, 1, n, p->sent); fflush(p->sent); }
    return 0;
}

/* Close the connection (TLS: close_notify first unless told not to). */
static void peer_close(struct peer *p) {
    if (p->ssl && !o.no_close_notify) SSL_shutdown(p->ssl);
    close(p->fd);
    event(p, "closed");
}

/* Listen on the configured address; write the port (or "ready") to o.ready. */
static int peer_listen(void) {
    char portbuf[16] = "ready";
    int fd;

    if (o.unix_path) {
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        if (strlen(o.unix_path) >= sizeof sa.sun_path) die("path too long");
        strcpy(sa.sun_path, o.unix_path);
        if (o.unix_path[0] == '@') sa.sun_path[0] = '\0';
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (o.unix_path[0] != '@') unlink(o.unix_path);
        if (bind(fd, (struct sockaddr *)&sa, o.unix_path[0] == '@'
                 ? (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(o.unix_path))
                 : (socklen_t)sizeof sa) < 0)
            die("bind %s: %s", o.unix_path, strerror(errno));
    } else {
        char host[256], *colon;
        struct addrinfo hints, *res;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int one = 1, r;

        snprintf(host, sizeof host, "%s", o.tcp_addr[0] == '[' ? o.tcp_addr + 1 : o.tcp_addr);
        colon = strrchr(host, ':');
        if (!colon) die("bad --tcp address");
        *colon = '\0';
        if (colon > host && colon[-1] == ']') colon[-1] = '\0';
        memset(&hints, 0, sizeof hints);
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        r = getaddrinfo(host, colon + 1, &hints, &res);
        if (r) die("resolve %s: %s", o.tcp_addr, gai_strerror(r));
        fd = socket(res->ai_family, SOCK_STREAM, 0);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, res->ai_addr, res->ai_addrlen) < 0) die("bind %s: %s", o.tcp_addr, strerror(errno));
        freeaddrinfo(res);
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        snprintf(portbuf, sizeof portbuf, "%d", ntohs(ss.ss_family == AF_INET6
                 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port));
    }
    if (listen(fd, 4) < 0) die("listen: %s", strerror(errno));
    if (o.ready) {
        char tmp[4096];
        FILE *f;
        snprintf(tmp, sizeof tmp, "%s.tmp", o.ready);
        f = fopen(tmp, "w");
        if (!f) die("open %s: %s", tmp, strerror(errno));
        fprintf(f, "%s\n", portbuf);
        fclose(f);
        rename(tmp, o.ready);
    }
    return fd;
}

/* The token handshake from bridge/README.md: read one line byte by byte (so no payload
 * is consumed), compare it exactly, answer. Returns 1 accepted, 0 refused. */
static int peer_handshake(struct peer *p) {
    char line[65536], expect[4096], reply[8192];
    size_t n = 0;
    int len;

    for (;;) {
        ssize_t r = peer_read(p, line + n, 1);
        if (r <= 0) { event(p, "handshake-eof"); return 0; }
        if (line[n] == '\n') break;
        if (++n >= sizeof line - 1) die("hello line too long");
    }
    line[n] = '\0';
    snprintf(expect, sizeof expect, "{\"yao-bridge\":1,\"token\":\"%s\"}", o.token);
    if (strcmp(line, expect) != 0) {
        event(p, "token-refused %s", line);
        if (!o.refuse_by_close) {
            static const char no[] = "{\"yao-bridge\":1,\"ok\":false,\"error\":\"invalid token\"}\n";
            peer_write(p, no, sizeof no - 1);
        }
        return 0;
    }
    event(p, "token-ok");
    /* Keys in Go's sorted-map order on purpose; the greeting rides in the same write. */
    len = snprintf(reply, sizeof reply, "{\"ok\":true,\"yao-bridge\":1}\n%s", o.greet ? o.greet : "");
    if (peer_write(p, reply, (size_t)len) < 0) die("write ack");
    if (o.greet && p->sent) { fputs(o.greet, p->sent); fflush(p->sent); }
    return 1;
}

/* Copy the value of "key":"..." (raw, escapes kept) or "key":<scalar> into out. */
static int field(const char *line, const char *key, char *out, size_t cap) {
    char pat[64];
    const char *s, *e;

    snprintf(pat, sizeof pat, "\"%s\":", key);
    s = strstr(line, pat);
    if (!s) return -1;
    s += strlen(pat);
    while (*s == ' ') s++;
    if (*s == '"') {
        for (e = ++s; *e && *e != '"'; e++)
            if (*e == '\\' && e[1]) e++;
    } else {
        for (e = s; *e && *e != ',' && *e != '}'; e++) {}
    }
    if ((size_t)(e - s) >= cap) return -1;
    memcpy(out, s, (size_t)(e - s));
    out[e - s] = '\0';
    return 0;
}

/* Answer one JSON-RPC line; deferred answers are appended to *deferred. Returns 1 when
 * --close-after is reached. */
static int mcp_line(struct peer *p, const char *line, char **deferred, size_t *dlen) {
    char method[128] = "", id[128], text[8192] = "", out[16384];
    int n;

    field(line, "method", method, sizeof method);
    if (field(line, "id", id, sizeof id) < 0) {
        event(p, "notification %s", method);
        return 0;
    }
    if (!strcmp(method, "initialize")) {
        n = snprintf(out, sizeof out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":"
                     "\"2025-06-18\",\"capabilities\":{\"tools\":{\"listChanged\":false}},"
                     "\"serverInfo\":{\"name\":\"yao-test-peer\",\"version\":\"1.0\"}}}\n", id);
    } else if (!strcmp(method, "tools/list")) {
        n = snprintf(out, sizeof out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[{\"name\":"
                     "\"echo\",\"description\":\"Echo text back \\u2014 unchanged \xe2\x9c\x93\","
                     "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
                     "\"string\"}},\"required\":[\"text\"]}}]}}\n", id);
    } else if (!strcmp(method, "tools/call")) {
        field(line, "text", text, sizeof text);
        n = snprintf(out, sizeof out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":"
                     "\"text\",\"text\":\"%s\"}],\"isError\":false}}\n", id, text);
    } else {
        n = snprintf(out, sizeof out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,"
                     "\"message\":\"Method not found\"}}\n", id);
    }
    event(p, "request %s %s", method, id);
    if (o.defer && !strcmp(method, o.defer)) {
        *deferred = realloc(*deferred, *dlen + (size_t)n);
        memcpy(*deferred + *dlen, out, (size_t)n);
        *dlen += (size_t)n;
        event(p, "deferred %s", id);
        return 0;
    }
    if (send_payload(p, out, (size_t)n) < 0) die("write reply");
    return o.close_after > 0 && ++p->replies >= o.close_after;
}

/* MCP mode: newline-delimited JSON-RPC until EOF, then the deferred replies. */
static void run_mcp(struct peer *p) {
    char buf[65536], *line = NULL, *deferred = NULL;
    size_t len = 0, dlen = 0;

    for (;;) {
        ssize_t r = peer_read(p, buf, sizeof buf);
        char *nl;
        if (r < 0) die("read failed");
        if (r == 0) break;
        fwrite(buf, 1, (size_t)r, p->record);
        fflush(p->record);
        line = realloc(line, len + (size_t)r + 1);
        memcpy(line + len, buf, (size_t)r);
        len += (size_t)r;
        line[len] = '\0';
        while ((nl = memchr(line, '\n', len))) {
            *nl = '\0';
            if (mcp_line(p, line, &deferred, &dlen)) {
                event(p, "closing-early");
                free(line);
                free(deferred);
                return;
            }
            len -= (size_t)(nl + 1 - line);
            memmove(line, nl + 1, len + 1);
        }
    }
    event(p, "eof");
    if (dlen) {
        /* The client has half-closed; it must still get these. */
        if (send_payload(p, deferred, dlen) < 0) die("write deferred replies after eof");
        event(p, "sent-deferred");
    }
    free(line);
    free(deferred);
}

/* Echo mode: every byte back as it comes, until EOF. */
static void run_echo(struct peer *p) {
    static char buf[65536];
    for (;;) {
        ssize_t r = peer_read(p, buf, sizeof buf);
        if (r < 0) die("read failed");
        if (r == 0) break;
        fwrite(buf, 1, (size_t)r, p->record);
        if (send_payload(p, buf, (size_t)r) < 0) die("write failed");
    }
    fflush(p->record);
    event(p, "eof");
}

/* Send mode: the file's bytes, then close (write errors are expected in some tests). */
static void run_send(struct peer *p, const char *path) {
    static char buf[65536];
    FILE *f = fopen(path, "rb");
    size_t n;

    if (!f) die("open %s: %s", path, strerror(errno));
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (send_payload(p, buf, n) < 0) { event(p, "write-failed"); break; }
    }
    fclose(f);
}

/* Sink mode: read to EOF, then report the byte count. */
static void run_sink(struct peer *p) {
    static char buf[65536];
    char msg[64];
    unsigned long long total = 0;
    int n;

    for (;;) {
        ssize_t r = peer_read(p, buf, sizeof buf);
        if (r < 0) die("read failed");
        if (r == 0) break;
        fwrite(buf, 1, (size_t)r, p->record);
        total += (unsigned long long)r;
    }
    fflush(p->record);
    event(p, "eof");
    n = snprintf(msg, sizeof msg, "{\"received\":%llu}\n", total);
    if (send_payload(p, msg, (size_t)n) < 0) die("write after eof");
}

/* Open an output file or fail. */
static FILE *open_out(const char *path) {
    FILE *f;
    if (!path) return NULL;
    f = fopen(path, "wb");
    if (!f) die("open %s: %s", path, strerror(errno));
    return f;
}

int main(int argc, char **argv) {
    struct peer p;
    SSL_CTX *ctx = NULL;
    int lfd, i;

    memset(&o, 0, sizeof o);
    o.mode = "mcp";
    o.timeout = 60;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
#define ARG() (i + 1 < argc ? argv[++i] : (die("%s needs a value", a), ""))
        if (!strcmp(a, "--unix")) o.unix_path = ARG();
        else if (!strcmp(a, "--tcp")) o.tcp_addr = ARG();
        else if (!strcmp(a, "--ready")) o.ready = ARG();
        else if (!strcmp(a, "--tls")) { o.cert = ARG(); o.key = ARG(); }
        else if (!strcmp(a, "--token")) o.token = ARG();
        else if (!strcmp(a, "--greet")) o.greet = ARG();
        else if (!strcmp(a, "--mode")) o.mode = ARG();
        else if (!strcmp(a, "--record")) o.record = ARG();
        else if (!strcmp(a, "--sent")) o.sent = ARG();
        else if (!strcmp(a, "--events")) o.events = ARG();
        else if (!strcmp(a, "--defer")) o.defer = ARG();
        else if (!strcmp(a, "--close-after")) o.close_after = atoi(ARG());
        else if (!strcmp(a, "--timeout")) o.timeout = atoi(ARG());
        else if (!strcmp(a, "--refuse-by-close")) o.refuse_by_close = 1;
        else if (!strcmp(a, "--no-close-notify")) o.no_close_notify = 1;
        else die("unknown option %s", a);
#undef ARG
    }
    if (!o.unix_path == !o.tcp_addr) die("give exactly one of --unix PATH, --tcp HOST:PORT");
    signal(SIGPIPE, SIG_IGN);
    alarm((unsigned)o.timeout); /* a wedged test dies instead of hanging ctest */

    memset(&p, 0, sizeof p);
    p.record = open_out(o.record ? o.record : "/dev/null");
    p.sent = open_out(o.sent);
    p.events = open_out(o.events);
    if (o.cert) {
        ctx = SSL_CTX_new(TLS_server_method());
        if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, o.cert) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, o.key, SSL_FILETYPE_PEM) != 1)
            die("load %s / %s", o.cert, o.key);
    }
    lfd = peer_listen();
    p.fd = accept(lfd, NULL, NULL);
    if (p.fd < 0) die("accept: %s", strerror(errno));
    close(lfd);
    if (o.unix_path && o.unix_path[0] != '@') unlink(o.unix_path);
    event(&p, "accepted");
    if (ctx) {
        p.ssl = SSL_new(ctx);
        SSL_set_fd(p.ssl, p.fd);
        if (SSL_accept(p.ssl) != 1) {
            event(&p, "tls-handshake-failed");
            ERR_print_errors_fp(stderr);
            goto done;
        }
        event(&p, "tls %s", SSL_get_version(p.ssl));
    }
    if (o.token && !peer_handshake(&p)) {
        peer_close(&p);
        goto done;
    }
    if (!strcmp(o.mode, "mcp")) run_mcp(&p);
    else if (!strcmp(o.mode, "echo")) run_echo(&p);
    else if (!strcmp(o.mode, "sink")) run_sink(&p);
    else if (!strncmp(o.mode, "send:", 5)) run_send(&p, o.mode + 5);
    else die("unknown mode %s", o.mode);
    peer_close(&p);
done:
    if (p.ssl) SSL_free(p.ssl);
    if (ctx) SSL_CTX_free(ctx);
    fclose(p.record);
    if (p.sent) fclose(p.sent);
    if (p.events) fclose(p.events);
    return 0;
}
