/* tests/unit/loopback.h — for the test peers (exec_peer.h, connect_proxy.h, the servers of
 * test_wsstream.c): a listening TCP socket on 127.0.0.1 at a port the kernel picks, and a
 * field of an HTTP request head. */
#ifndef YAO_TEST_LOOPBACK_H
#define YAO_TEST_LOOPBACK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* Listen on 127.0.0.1 (backlog as given): the socket, its port in *port; or -1. */
static inline int loopback_listen(int backlog, int *port) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, backlog) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* The value of header field name ("Upgrade:", matched case-insensitively, spaces after it
 * skipped) in the request head (a NUL-terminated head ending in an empty line), into out
 * ("" when absent). 0, or -1 when absent. */
static inline int http_head_field(const char *head, const char *name, char *out, size_t outlen) {
    size_t nl = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
        const char *h = l + 2;
        if (!strncasecmp(h, name, nl)) {
            h += nl;
            while (*h == ' ') h++;
            const char *e = strstr(h, "\r\n");
            size_t m = (size_t)(e - h) < outlen - 1 ? (size_t)(e - h) : outlen - 1;
            memcpy(out, h, m);
            out[m] = 0;
            return 0;
        }
    }
    out[0] = 0;
    return -1;
}

#endif
