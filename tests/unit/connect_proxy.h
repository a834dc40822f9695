/* tests/unit/connect_proxy.h — a small HTTP CONNECT proxy on 127.0.0.1 for the exec,
 * port-forward and WebSocket stream tests (test_tunnel.c, test_wsstream.c): one thread per
 * connection reads the CONNECT, answers 200 and splices both ways (or answers 407 when a
 * password is wanted and missing or wrong), and records what it was asked. The tunnel's
 * target must be an IPv4 literal. */
#ifndef YAO_TEST_CONNECT_PROXY_H
#define YAO_TEST_CONNECT_PROXY_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loopback.h"

struct proxy {
    int fd, port;
    const char *want_auth;     /* the Proxy-Authorization wanted ("Basic ..."), or NULL */
    _Atomic int stop;
    pthread_t thread;
    pthread_mutex_t mu;        /* guards what it records (read them after the exchange) */
    int connects, refused;
    char last_connect[256];    /* the last request line */
    char last_auth[256];       /* its Proxy-Authorization ("" when none) */
};

/* Copy bytes between a and b until either side closes or nothing moves for 15 s. */
static void proxy_splice(int a, int b) {
    char buf[16384];
    struct pollfd pf[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    for (;;) {
        if (poll(pf, 2, 15000) <= 0) return;
        for (int i = 0; i < 2; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = recv(pf[i].fd, buf, sizeof buf, 0);
            if (n <= 0) return;
            int to = i ? a : b;
            for (ssize_t off = 0; off < n;) {
                ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
                if (w <= 0) return;
                off += w;
            }
        }
    }
}

struct proxy_conn { struct proxy *p; int fd; };

static void *proxy_conn_main(void *arg) {
    struct proxy_conn *pc = arg;
    struct proxy *p = pc->p;
    int fd = pc->fd, up = -1;
    free(pc);
    char head[4096], host[64], auth[256];
    size_t len = 0;
    int port = 0;
    while (len < sizeof head - 1) {
        ssize_t r = recv(fd, head + len, sizeof head - 1 - len, 0);
        if (r <= 0) goto out;
        len += (size_t)r;
        head[len] = 0;
        if (strstr(head, "\r\n\r\n")) break;
    }
    char *eol = strstr(head, "\r\n");
    if (!eol) goto out;
    http_head_field(head, "Proxy-Authorization:", auth, sizeof auth);
    pthread_mutex_lock(&p->mu);
    snprintf(p->last_connect, sizeof p->last_connect, "%.*s", (int)(eol - head), head);
    snprintf(p->last_auth, sizeof p->last_auth, "%s", auth);
    int refuse = p->want_auth && strcmp(auth, p->want_auth) != 0;
    if (refuse) p->refused++;
    else p->connects++;
    pthread_mutex_unlock(&p->mu);
    if (refuse) {
        static const char no[] = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n"
                                 "Content-Length: 0\r\n\r\n";
        send(fd, no, sizeof no - 1, MSG_NOSIGNAL);
        goto out;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (sscanf(head, "CONNECT %63[^:]:%d HTTP/1.1", host, &port) != 2 || port <= 0 || port > 65535 ||
        inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        goto out;
    sa.sin_port = htons((uint16_t)port);
    up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (up < 0 || connect(up, (struct sockaddr *)&sa, sizeof sa) < 0) goto out;
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (send(fd, ok, sizeof ok - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof ok - 1)) goto out;
    proxy_splice(fd, up);
out:
    if (up >= 0) close(up);
    close(fd);
    return NULL;
}

static void *proxy_accept_main(void *arg) {
    struct proxy *p = arg;
    while (!p->stop) {
        struct pollfd pf = {p->fd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0) continue;
        int c = accept(p->fd, NULL, NULL);
        if (c < 0) continue;
        struct proxy_conn *pc = malloc(sizeof *pc);
        pthread_t t;
        if (!pc) { close(c); continue; }
        pc->p = p;
        pc->fd = c;
        if (pthread_create(&t, NULL, proxy_conn_main, pc) == 0) pthread_detach(t);
        else { free(pc); close(c); }
    }
    return NULL;
}

/* Start p on a port of its own (p->port), wanting want_auth (NULL: no password). 0 or -1. */
static int proxy_start(struct proxy *p, const char *want_auth) {
    memset(p, 0, sizeof *p);
    p->want_auth = want_auth;
    pthread_mutex_init(&p->mu, NULL);
    if ((p->fd = loopback_listen(16, &p->port)) < 0) return -1;
    return pthread_create(&p->thread, NULL, proxy_accept_main, p) == 0 ? 0 : -1;
}

/* Stop accepting, close the socket, and give the connection threads time to see their
 * sockets close. */
static void proxy_stop(struct proxy *p) {
    p->stop = 1;
    pthread_join(p->thread, NULL);
    close(p->fd);
    usleep(100 * 1000);
    pthread_mutex_destroy(&p->mu);
}

#endif
