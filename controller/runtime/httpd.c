/* runtime/httpd.c — the probe/metrics HTTP server (see httpd.h). */
#include "runtime/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQUEST_MAX 8192
#define READ_TIMEOUT_MS 5000

struct httpd {
    int fd, port;
    httpd_handler_fn fn;
    void *ud;
    pthread_t thread;
    volatile int stop;
};

/* Write all of p. */
static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read one request head, route it, answer, close. */
static void serve(struct httpd *h, int fd) {
    char req[REQUEST_MAX + 1];
    size_t len = 0;
    while (len < REQUEST_MAX && !memmem(req, len, "\r\n\r\n", 4)) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, READ_TIMEOUT_MS) <= 0) return;
        ssize_t r = recv(fd, req + len, REQUEST_MAX - len, 0);
        if (r <= 0) return;
        len += (size_t)r;
    }
    req[len] = 0;
    char method[8], path[1024];
    struct dynbuf body;
    dynbuf_init(&body, 16u << 20);
    const char *ctype = "text/plain; charset=utf-8";
    int status;
    if (sscanf(req, "%7s %1023s", method, path) != 2) {
        status = 400;
        dynbuf_append_str(&body, "bad request\n");
    } else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = 405;
        dynbuf_append_str(&body, "method not allowed\n");
    } else {
        char *q = strchr(path, '?');
        if (q) *q = 0;
        status = h->fn(h->ud, path, &body, &ctype);
    }
    char head[256];
    const char *reason = status == 200 ? "OK" : status == 404 ? "Not Found" : status == 503 ? "Service Unavailable" : "Error";
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, reason, ctype, body.len);
    if (write_all(fd, head, (size_t)n) == 0 && strcmp(method, "HEAD") != 0 && body.len)
        write_all(fd, body.data, body.len);
    dynbuf_free(&body);
}

/* Accept loop. */
static void *run(void *arg) {
    struct httpd *h = arg;
    while (!h->stop) {
        struct pollfd p = {h->fd, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0) continue;
        int c = accept(h->fd, NULL, NULL);
        if (c < 0) continue;
        serve(h, c);
        close(c);
    }
    return NULL;
}

struct httpd *httpd_start(const char *addr, httpd_handler_fn fn, void *ud, char *err, size_t errlen) {
    char host[256] = "", port[16] = "";
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1] || (size_t)(colon - addr) >= sizeof(host) || strlen(colon + 1) >= sizeof(port)) {
        snprintf(err, errlen, "metrics address \"%s\" is not host:port", addr);
        return NULL;
    }
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    snprintf(port, sizeof(port), "%s", colon + 1);
    if (host[0] == '[') { /* [::1] */
        memmove(host, host + 1, strlen(host));
        char *rb = strchr(host, ']');
        if (rb) *rb = 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (gai != 0) {
        snprintf(err, errlen, "metrics address \"%s\": %s", addr, gai_strerror(gai));
        return NULL;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0) {
        snprintf(err, errlen, "metrics address \"%s\": %s", addr, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return NULL;
    }
    freeaddrinfo(ai);
    struct httpd *h = calloc(1, sizeof(*h));
    if (!h) { close(fd); snprintf(err, errlen, "out of memory"); return NULL; }
    h->fd = fd;
    h->fn = fn;
    h->ud = ud;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    if (pthread_create(&h->thread, NULL, run, h) != 0) {
        close(fd);
        free(h);
        snprintf(err, errlen, "could not start the metrics thread");
        return NULL;
    }
    return h;
}

int httpd_port(struct httpd *h) { return h->port; }

void httpd_stop(struct httpd *h) {
    if (!h) return;
    h->stop = 1;
    pthread_join(h->thread, NULL);
    close(h->fd);
    free(h);
}
