/* tests/unit/exec_peer.h — a scripted stand-in for the API server's exec endpoint, for
 * test_exec.c: plain TCP on 127.0.0.1, a hand-written HTTP/1.1 upgrade (Sec-WebSocket-Accept
 * from OpenSSL SHA-1 + base64) and RFC 6455 framing written out byte by byte — server
 * frames unmasked, client frames unmasked here (and counted if a client forgot the mask).
 * One thread accepts, one thread per connection plays the script; everything the client
 * sent that a test wants to check (request line, offered subprotocols, Authorization,
 * Impersonate-User, stdin) is recorded under a mutex. Also plays the portforward endpoint
 * (PEER_PF_*, for test_portforward.c): the port from ?ports= named first on channels 0 and 1. Test-only;
 * header-only. */
#ifndef YAO_TEST_EXEC_PEER_H
#define YAO_TEST_EXEC_PEER_H

#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>

#include "loopback.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

enum peer_script {
    PEER_BASIC,          /* stdout, stderr, a 3-frame message, exit code 3 */
    PEER_FORBIDDEN,      /* 403 with a Status body, to the upgrade and to a plain GET */
    PEER_BAD_PROTOCOL,   /* 101 naming a subprotocol nobody offered */
    PEER_NO_PROTOCOL,    /* 101 without Sec-WebSocket-Protocol */
    PEER_ECHO,           /* greeting (if any) on stdout at once, then stdin echoed on stdout; Success at the
                            close signal (v5) or after echo_expect bytes (v4) */
    PEER_SILENT,         /* upgrade, then nothing */
    PEER_FAILURE,        /* a Failure Status: container not found */
    PEER_UNKNOWN_CHANNEL,/* a message on channel 7 */
    PEER_NO_STATUS,      /* some output, then a close frame without a status */
    PEER_BIG,            /* big_bytes of patterned stdout in messages of many sizes, then Success */
    PEER_EXIT_UNREAD,    /* reads echo_expect stdin bytes, then stops reading (a command that
                            exited without reading its input), sends exit code 3, reads
                            nothing for unread_ms, then reads to the end of the stream */
    PEER_PF_ECHO,        /* portforward: the port on channels 0 and 1, then data echoed on
                            channel 0; after echo_expect bytes a close (the pod's side ended) */
    PEER_PF_REFUSED,     /* portforward: the port on both channels, an error text on channel 1,
                            then a close (nobody listens on the port) */
    PEER_PF_WRONG_PORT,  /* portforward: names another port than the one asked for */
};

#define PEER_MAX_CONNS 64
#define PEER_IO_TIMEOUT_MS 10000

struct peer {
    int fd, port;
    enum peer_script script;
    int support_v5;            /* choose v5.channel.k8s.io when offered (default: v4 only) */
    size_t echo_expect;        /* PEER_ECHO under v4: stdin bytes before the status */
    const char *greeting;      /* PEER_ECHO: sent on stdout right after the upgrade */
    size_t big_bytes;          /* PEER_BIG */
    _Atomic int stop;          /* set by peer_stop */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_t conns[PEER_MAX_CONNS];
    int nconns;
    /* observations, under mu */
    char *request_line;        /* of the last upgrade */
    char offered[256];         /* its Sec-WebSocket-Protocol */
    char authorization[256];
    char impersonate_user[128];  /* its Impersonate-User */
    char chosen[64];
    int upgrades, plain_gets;
    size_t stdin_bytes, stdin_max_message;
    int stdin_closed;          /* the v5 close signal for stdin arrived */
    int unmasked_frames;
    int pings_sent, pongs;     /* PEER_BIG: pings between a message's fragments; right answers */
    char resizes[512];         /* PEER_ECHO: resize messages' payloads, one a line */
    int unread_ms;             /* PEER_EXIT_UNREAD: how long it reads nothing after the status */
    int reset_after_status;    /* PEER_EXIT_UNREAD: instead, close with a reset right after it
                                  (greeting, if set, goes on stdout just before the status) */
    int client_dropped;        /* PEER_EXIT_UNREAD: then found the connection closed */
    int refuse_upgrades;       /* answer this many upgrades first with 401 Unauthorized */
    char refused_authorization[256];   /* the Authorization of the last refused one */
};

/* Wait until fd is ready for events (POLLIN/POLLOUT); -1 on timeout or stop. */
static int peer_wait(struct peer *p, int fd, short events) {
    for (int waited = 0; waited < PEER_IO_TIMEOUT_MS && !p->stop; waited += 100) {
        struct pollfd pf = {fd, events, 0};
        int n = poll(&pf, 1, 100);
        if (n > 0) return 0;
        if (n < 0 && errno != EINTR) return -1;
    }
    return -1;
}

static int peer_write_all(struct peer *p, int fd, const void *buf, size_t n) {
    const char *b = buf;
    while (n) {
        if (peer_wait(p, fd, POLLOUT) < 0) return -1;
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int peer_read_full(struct peer *p, int fd, void *buf, size_t n) {
    char *b = buf;
    while (n) {
        if (peer_wait(p, fd, POLLIN) < 0) return -1;
        ssize_t r = recv(fd, b, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/* One unmasked server frame. */
static int peer_frame(struct peer *p, int fd, int opcode, int fin, const void *payload, size_t n) {
    unsigned char h[10];
    size_t hl;
    h[0] = (unsigned char)((fin ? 0x80 : 0) | opcode);
    if (n < 126) {
        h[1] = (unsigned char)n;
        hl = 2;
    } else if (n < 65536) {
        h[1] = 126;
        h[2] = (unsigned char)(n >> 8);
        h[3] = (unsigned char)n;
        hl = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++) h[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
        hl = 10;
    }
    if (peer_write_all(p, fd, h, hl) < 0) return -1;
    return n ? peer_write_all(p, fd, payload, n) : 0;
}

/* One binary message on a channel, as a single frame. */
static int peer_msg(struct peer *p, int fd, int channel, const void *payload, size_t n) {
    unsigned char *m = malloc(n + 1);
    if (!m) return -1;
    m[0] = (unsigned char)channel;
    if (n) memcpy(m + 1, payload, n);
    int rc = peer_frame(p, fd, 2, 1, m, n + 1);
    free(m);
    return rc;
}

/* Read one client frame (payload malloc'd, unmasked). 0 or -1 on EOF/error/timeout. */
static int peer_read_frame(struct peer *p, int fd, int *opcode, int *fin, unsigned char **payload, size_t *len) {
    unsigned char h[2], ext[8], mask[4];
    uint64_t n;
    *payload = NULL;
    if (peer_read_full(p, fd, h, 2) < 0) return -1;
    *fin = h[0] >> 7;
    *opcode = h[0] & 15;
    n = h[1] & 127;
    if (n == 126) {
        if (peer_read_full(p, fd, ext, 2) < 0) return -1;
        n = ((uint64_t)ext[0] << 8) | ext[1];
    } else if (n == 127) {
        if (peer_read_full(p, fd, ext, 8) < 0) return -1;
        n = 0;
        for (int i = 0; i < 8; i++) n = (n << 8) | ext[i];
    }
    if (n > (64u << 20)) return -1;
    int masked = h[1] >> 7;
    if (masked) {
        if (peer_read_full(p, fd, mask, 4) < 0) return -1;
    } else {
        pthread_mutex_lock(&p->mu);
        p->unmasked_frames++;
        pthread_mutex_unlock(&p->mu);
    }
    *payload = malloc(n + 1);
    if (!*payload) return -1;
    if (n && peer_read_full(p, fd, *payload, n) < 0) {
        free(*payload);
        *payload = NULL;
        return -1;
    }
    if (masked)
        for (uint64_t i = 0; i < n; i++) (*payload)[i] ^= mask[i & 3];
    *len = n;
    return 0;
}

/* Read client frames until its close (answered) or EOF. */
static void peer_drain(struct peer *p, int fd) {
    int op, fin;
    unsigned char *pl;
    size_t n;
    while (peer_read_frame(p, fd, &op, &fin, &pl, &n) == 0) {
        if (op == 8) {
            peer_frame(p, fd, 8, 1, pl, n >= 2 ? 2 : 0);
            free(pl);
            return;
        }
        if (op == 9) peer_frame(p, fd, 10, 1, pl, n);   /* ping: pong */
        if (op == 10 && n == 4 && !memcmp(pl, "ping", 4)) {
            pthread_mutex_lock(&p->mu);
            p->pongs++;
            pthread_mutex_unlock(&p->mu);
        }
        free(pl);
    }
}

static const char PEER_FORBIDDEN_BODY[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"pods \\\"p\\\" is forbidden: User \\\"alice\\\" cannot create resource \\\"pods/exec\\\"\","
    "\"reason\":\"Forbidden\",\"code\":403}";

/* Run the script on one upgraded connection; chosen is the subprotocol this connection
 * agreed on (p->chosen is the last connection's, shared by concurrent ones). */
static void peer_script_run(struct peer *p, int fd, const char *chosen) {
    static const char ok[] = "{\"metadata\":{},\"status\":\"Success\"}";
    switch (p->script) {
    case PEER_BASIC: {
        static const char st[] =
            "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero exit code: "
            "exit status 3\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\","
            "\"message\":\"3\"}]}}";
        static const unsigned char f1[] = {1, 'f', 'r', 'a', 'g'};
        peer_msg(p, fd, 1, NULL, 0);                       /* "ready", id only */
        peer_msg(p, fd, 1, "hello\n", 6);
        peer_msg(p, fd, 2, "oops\n", 5);
        peer_frame(p, fd, 2, 0, f1, sizeof(f1));           /* one message in three frames */
        peer_frame(p, fd, 0, 0, "men", 3);
        peer_frame(p, fd, 0, 1, "ted\n", 4);
        peer_msg(p, fd, 3, st, sizeof(st) - 1);
        peer_drain(p, fd);
        break;
    }
    case PEER_ECHO: {
        int op, fin, v5 = !strcmp(chosen, "v5.channel.k8s.io");
        unsigned char *pl;
        size_t n;
        if (p->greeting && peer_msg(p, fd, 1, p->greeting, strlen(p->greeting)) < 0) break;
        while (peer_read_frame(p, fd, &op, &fin, &pl, &n) == 0) {
            if (op == 8) {
                peer_frame(p, fd, 8, 1, pl, n >= 2 ? 2 : 0);
                free(pl);
                return;
            }
            if (op == 2 && n >= 1) {
                size_t total;
                int done = 0;
                if (pl[0] == 0) {
                    peer_msg(p, fd, 1, pl + 1, n - 1);
                    pthread_mutex_lock(&p->mu);
                    p->stdin_bytes += n - 1;
                    if (n - 1 > p->stdin_max_message) p->stdin_max_message = n - 1;
                    total = p->stdin_bytes;
                    pthread_mutex_unlock(&p->mu);
                    done = !v5 && total >= p->echo_expect;
                } else if (pl[0] == 4) {
                    pthread_mutex_lock(&p->mu);
                    size_t have = strlen(p->resizes);
                    snprintf(p->resizes + have, sizeof(p->resizes) - have, "%.*s\n", (int)(n - 1),
                             (const char *)pl + 1);
                    pthread_mutex_unlock(&p->mu);
                } else if (pl[0] == 255 && n == 2 && pl[1] == 0) {
                    pthread_mutex_lock(&p->mu);
                    p->stdin_closed = 1;
                    pthread_mutex_unlock(&p->mu);
                    done = 1;
                }
                if (done) {
                    peer_msg(p, fd, 3, ok, sizeof(ok) - 1);
                    free(pl);
                    peer_drain(p, fd);
                    return;
                }
            }
            free(pl);
        }
        break;
    }
    case PEER_PF_ECHO:
    case PEER_PF_REFUSED:
    case PEER_PF_WRONG_PORT: {
        const char *q = p->request_line ? strstr(p->request_line, "ports=") : NULL;
        unsigned port = q ? (unsigned)atoi(q + 6) : 0;
        if (p->script == PEER_PF_WRONG_PORT) port++;
        unsigned char pfx[2] = {(unsigned char)(port & 255), (unsigned char)(port >> 8)};
        if (peer_msg(p, fd, 0, pfx, 2) < 0 || peer_msg(p, fd, 1, pfx, 2) < 0) break;
        if (p->script == PEER_PF_REFUSED) {
            char text[160];
            snprintf(text, sizeof(text), "error forwarding port %u to pod p, uid : dial tcp4 127.0.0.1:%u: "
                     "connect: connection refused", port, port);
            peer_msg(p, fd, 1, text, strlen(text));
            peer_frame(p, fd, 8, 1, "\x03\xe8", 2);
            peer_drain(p, fd);
            break;
        }
        if (p->script == PEER_PF_WRONG_PORT) {
            peer_drain(p, fd);
            break;
        }
        int op, fin;
        unsigned char *pl;
        size_t n;
        while (peer_read_frame(p, fd, &op, &fin, &pl, &n) == 0) {
            if (op == 8) {
                peer_frame(p, fd, 8, 1, pl, n >= 2 ? 2 : 0);
                free(pl);
                return;
            }
            if (op == 2 && n >= 1 && pl[0] == 0) {
                /* echoed in pieces of various sizes, as a pod's reads would come */
                size_t off = 1, cut = 1;
                while (off < n) {
                    size_t k = n - off < cut ? n - off : cut;
                    peer_msg(p, fd, 0, pl + off, k);
                    off += k;
                    cut = cut * 7 % 40000 + 1;
                }
                pthread_mutex_lock(&p->mu);
                p->stdin_bytes += n - 1;
                if (n - 1 > p->stdin_max_message) p->stdin_max_message = n - 1;
                size_t total = p->stdin_bytes;
                pthread_mutex_unlock(&p->mu);
                if (total >= p->echo_expect) {
                    free(pl);
                    peer_frame(p, fd, 8, 1, "\x03\xe8", 2);
                    peer_drain(p, fd);
                    return;
                }
            }
            free(pl);
        }
        break;
    }
    case PEER_SILENT:
        peer_drain(p, fd);
        break;
    case PEER_FAILURE: {
        static const char st[] = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"container \\\"nope\\\" "
                                 "not found in pod \\\"p\\\"\",\"reason\":\"NotFound\",\"code\":404}";
        peer_msg(p, fd, 1, NULL, 0);
        peer_msg(p, fd, 3, st, sizeof(st) - 1);
        peer_drain(p, fd);
        break;
    }
    case PEER_UNKNOWN_CHANNEL:
        peer_msg(p, fd, 7, "x", 1);
        peer_drain(p, fd);
        break;
    case PEER_NO_STATUS: {
        static const unsigned char bye[] = {0x03, 0xe8, 'b', 'y', 'e'};
        peer_msg(p, fd, 1, "partial", 7);
        peer_frame(p, fd, 8, 1, bye, sizeof(bye));
        peer_drain(p, fd);
        break;
    }
    case PEER_BIG: {
        static const size_t sizes[] = {1u << 20, 65536, 1, 4093, 300000, 32768, 7};
        unsigned char *buf = malloc((1u << 20) + 1);
        size_t sent = 0, k = 0;
        if (!buf) break;
        while (sent < p->big_bytes) {
            size_t n = sizes[k++ % (sizeof(sizes) / sizeof(sizes[0]))];
            if (n > p->big_bytes - sent) n = p->big_bytes - sent;
            buf[0] = 1;
            for (size_t i = 0; i < n; i++) buf[1 + i] = (unsigned char)((sent + i) % 251);
            if (k % 5 == 0 && n > 2) {
                /* this one as two frames, the first few with a ping between them */
                int ping = p->pings_sent < 3;
                if (peer_frame(p, fd, 2, 0, buf, 1 + n / 2) < 0 || (ping && peer_frame(p, fd, 9, 1, "ping", 4) < 0) ||
                    peer_frame(p, fd, 0, 1, buf + 1 + n / 2, n - n / 2) < 0)
                    break;
                if (ping) {
                    pthread_mutex_lock(&p->mu);
                    p->pings_sent++;
                    pthread_mutex_unlock(&p->mu);
                }
            } else if (peer_frame(p, fd, 2, 1, buf, n + 1) < 0) {
                break;
            }
            sent += n;
        }
        free(buf);
        peer_msg(p, fd, 3, ok, sizeof(ok) - 1);
        peer_drain(p, fd);
        break;
    }
    case PEER_EXIT_UNREAD: {
        static const char st[] =
            "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero exit code: "
            "exit status 3\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\","
            "\"message\":\"3\"}]}}";
        int op, fin;
        unsigned char *pl;
        size_t n, got = 0;
        while (got < p->echo_expect && peer_read_frame(p, fd, &op, &fin, &pl, &n) == 0) {
            if (op == 2 && n >= 1 && pl[0] == 0) got += n - 1;
            free(pl);
        }
        pthread_mutex_lock(&p->mu);
        p->stdin_bytes = got;
        pthread_mutex_unlock(&p->mu);
        if (p->greeting && peer_msg(p, fd, 1, p->greeting, strlen(p->greeting)) < 0) break;
        if (peer_msg(p, fd, 3, st, sizeof(st) - 1) < 0) break;
        if (p->reset_after_status) {
            /* What an API server does once the command has exited: close at once, the
             * client's stdin unread, so the client gets a reset right behind the status
             * (once the status has left: a reset discards what is still queued). */
            int unsent = 1;
            for (int waited = 0; waited < 2000 && unsent > 0; waited++)
                if (ioctl(fd, SIOCOUTQNSD, &unsent) < 0 || unsent > 0) poll(NULL, 0, 1);
            struct linger lg = {1, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
            break;
        }
        /* Read nothing for unread_ms (the client's FIN waits behind the stdin the socket
         * still holds), then read to the end: an end of stream means the client had gone. */
        for (int waited = 0; waited < p->unread_ms && !p->stop; waited += 10) poll(NULL, 0, 10);
        char sink[65536];
        for (;;) {
            if (peer_wait(p, fd, POLLIN) < 0) break;
            ssize_t r = recv(fd, sink, sizeof(sink), 0);
            if (r < 0 && errno == EINTR) continue;
            if (r > 0) continue;
            pthread_mutex_lock(&p->mu);
            p->client_dropped = r == 0 || errno == ECONNRESET;
            pthread_mutex_unlock(&p->mu);
            break;
        }
        break;
    }
    default:
        break;
    }
}

struct peer_conn_arg {
    struct peer *p;
    int fd;
};

/* One connection: the HTTP request, then the upgrade and the script. */
static void *peer_conn(void *arg) {
    struct peer_conn_arg *a = arg;
    struct peer *p = a->p;
    int fd = a->fd;
    free(a);
    size_t cap = 256 * 1024, len = 0;
    char *head = malloc(cap + 1);
    if (!head) goto out;
    while (len < cap) {
        if (peer_wait(p, fd, POLLIN) < 0) goto out;
        ssize_t r = recv(fd, head + len, cap - len, 0);
        if (r <= 0) goto out;
        len += (size_t)r;
        head[len] = 0;
        if (strstr(head, "\r\n\r\n")) break;
    }
    char upgrade[64], key[128];
    http_head_field(head, "Upgrade:", upgrade, sizeof(upgrade));
    if (strcasecmp(upgrade, "websocket") != 0) {
        pthread_mutex_lock(&p->mu);
        p->plain_gets++;
        pthread_mutex_unlock(&p->mu);
        char resp[1024];
        if (p->script == PEER_FORBIDDEN)
            snprintf(resp, sizeof(resp), "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", sizeof(PEER_FORBIDDEN_BODY) - 1,
                     PEER_FORBIDDEN_BODY);
        else
            snprintf(resp, sizeof(resp), "HTTP/1.1 400 Bad Request\r\nContent-Length: 24\r\nConnection: close\r\n"
                     "\r\nUpgrade request required");
        peer_write_all(p, fd, resp, strlen(resp));
        goto out;
    }
    pthread_mutex_lock(&p->mu);
    p->upgrades++;
    free(p->request_line);
    char *eol = strstr(head, "\r\n");
    p->request_line = strndup(head, (size_t)(eol - head));
    http_head_field(head, "Sec-WebSocket-Protocol:", p->offered, sizeof(p->offered));
    http_head_field(head, "Authorization:", p->authorization, sizeof(p->authorization));
    http_head_field(head, "Impersonate-User:", p->impersonate_user, sizeof(p->impersonate_user));
    const char *chosen = p->support_v5 && strstr(p->offered, "v5.channel.k8s.io") ? "v5.channel.k8s.io"
                         : strstr(p->offered, "v4.channel.k8s.io")                  ? "v4.channel.k8s.io"
                                                                                    : "";
    if (p->script == PEER_BAD_PROTOCOL) chosen = "v9.channel.k8s.io";
    snprintf(p->chosen, sizeof(p->chosen), "%s", chosen);
    pthread_mutex_unlock(&p->mu);

    pthread_mutex_lock(&p->mu);
    int refuse = p->refuse_upgrades > 0;
    if (refuse) {
        p->refuse_upgrades--;
        snprintf(p->refused_authorization, sizeof(p->refused_authorization), "%s", p->authorization);
    }
    pthread_mutex_unlock(&p->mu);
    if (refuse) {
        static const char no[] = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
        peer_write_all(p, fd, no, sizeof(no) - 1);
        goto out;
    }
    if (p->script == PEER_FORBIDDEN) {
        char resp[1024];
        snprintf(resp, sizeof(resp), "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n%s", sizeof(PEER_FORBIDDEN_BODY) - 1, PEER_FORBIDDEN_BODY);
        peer_write_all(p, fd, resp, strlen(resp));
        goto out;
    }
    if (!chosen[0] && p->script != PEER_NO_PROTOCOL) {
        static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        peer_write_all(p, fd, bad, sizeof(bad) - 1);
        goto out;
    }

    /* Sec-WebSocket-Accept = base64(SHA-1(key + GUID)) */
    http_head_field(head, "Sec-WebSocket-Key:", key, sizeof(key));
    char kg[256];
    unsigned char sha[SHA_DIGEST_LENGTH];
    unsigned char accept[64];
    snprintf(kg, sizeof(kg), "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
    SHA1((const unsigned char *)kg, strlen(kg), sha);
    EVP_EncodeBlock(accept, sha, SHA_DIGEST_LENGTH);
    char resp[512];
    int n = snprintf(resp, sizeof(resp), "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n", (const char *)accept);
    if (p->script != PEER_NO_PROTOCOL)
        n += snprintf(resp + n, sizeof(resp) - (size_t)n, "Sec-WebSocket-Protocol: %s\r\n", chosen);
    snprintf(resp + n, sizeof(resp) - (size_t)n, "\r\n");
    if (peer_write_all(p, fd, resp, strlen(resp)) == 0) peer_script_run(p, fd, chosen);
out:
    free(head);
    close(fd);
    return NULL;
}

static void *peer_accept_loop(void *arg) {
    struct peer *p = arg;
    while (!p->stop) {
        struct pollfd pf = {p->fd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0) continue;
        int c = accept(p->fd, NULL, NULL);
        if (c < 0) continue;
        int one = 1;   /* every message leaves at once, as from Go's servers */
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct peer_conn_arg *a = malloc(sizeof(*a));
        pthread_mutex_lock(&p->mu);
        int slot = p->nconns < PEER_MAX_CONNS && a;
        if (slot) {
            a->p = p;
            a->fd = c;
            if (pthread_create(&p->conns[p->nconns], NULL, peer_conn, a) == 0)
                p->nconns++;
            else
                slot = 0;
        }
        pthread_mutex_unlock(&p->mu);
        if (!slot) {
            free(a);
            close(c);
        }
    }
    return NULL;
}

/* Listen on 127.0.0.1:<any> and serve the script. 0 or -1. */
static int peer_start(struct peer *p, enum peer_script script) {
    memset(p, 0, sizeof(*p));
    p->script = script;
    p->echo_expect = (size_t)-1;
    pthread_mutex_init(&p->mu, NULL);
    if ((p->fd = loopback_listen(64, &p->port)) < 0) return -1;
    return pthread_create(&p->thread, NULL, peer_accept_loop, p) == 0 ? 0 : -1;
}

/* One observation (a field "under mu" of struct peer) read under mu: while the peer runs
 * its connection threads may still be writing it. */
static inline int peer_seen_int(struct peer *p, const int *field) {
    pthread_mutex_lock(&p->mu);
    int v = *field;
    pthread_mutex_unlock(&p->mu);
    return v;
}
static inline size_t peer_seen_size(struct peer *p, const size_t *field) {
    pthread_mutex_lock(&p->mu);
    size_t v = *field;
    pthread_mutex_unlock(&p->mu);
    return v;
}

/* Stop accepting, wait for every connection's script to end, release everything. */
static void peer_stop(struct peer *p) {
    p->stop = 1;
    pthread_join(p->thread, NULL);
    for (int i = 0; i < p->nconns; i++) pthread_join(p->conns[i], NULL);
    close(p->fd);
    free(p->request_line);
    p->request_line = NULL;
    pthread_mutex_destroy(&p->mu);
}

#endif
