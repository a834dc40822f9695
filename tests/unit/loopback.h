/* tests/unit/loopback.h — a listening TCP socket on 127.0.0.1 at a port the kernel picks,
 * for the test peers (exec_peer.h, the proxies and servers of test_tunnel.c and
 * test_wsstream.c). */
#ifndef YAO_TEST_LOOPBACK_H
#define YAO_TEST_LOOPBACK_H

#include <arpa/inet.h>
#include <netinet/in.h>
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

#endif
