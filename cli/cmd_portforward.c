/* cli/cmd_portforward.c — `port-forward SANDBOX [LOCAL:]PORT... [--address IP]`: local
 * listeners (127.0.0.1 by default; LOCAL 0 picks a free port and prints it, as kubectl
 * does), one WebSocket and one thread per accepted connection through the API server
 * (pods/portforward, kube/portforward.c), the sandbox started first and marked used while
 * the command runs; SIGINT or SIGTERM ends it (exit 0) once the sessions closed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/errfmt.h"
#include "cli/cli.h"
#include "cli/cluster.h"
#include "cli/session.h"
#include "kube/portforward.h"

/* Set by SIGINT/SIGTERM during port-forward: stop accepting, end the sessions. Read by
 * every session's thread too, so not a volatile sig_atomic_t (safe in a handler, a data
 * race between threads) but a lock-free atomic, which is both (C11 7.14.1.1). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "pf_stop is set in a signal handler: atomic_int must be lock-free");
static atomic_int pf_stop;
static int pf_wake[2] = {-1, -1};   /* the signal handler writes here to wake poll() */

static void on_pf_signal(int sig) {
    (void)sig;
    atomic_store(&pf_stop, 1);
    int e = errno;
    if (pf_wake[1] >= 0 && write(pf_wake[1], "x", 1) < 0) {}
    errno = e;
}

struct pf_listener { int fd; uint16_t local, remote; };

/* The connections being forwarded: counted, so the command waits for them to end. */
struct pf_state {
    struct cli *c;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int active;
};

struct pf_conn { struct pf_state *st; int fd; uint16_t local, remote; };

/* One accepted connection: its own WebSocket through the API server, until either side
 * ends it; the pod's error (nobody listening, ...) is reported on stderr. */
static void *pf_conn_main(void *arg) {
    struct pf_conn *pc = arg;
    struct pf_state *st = pc->st;
    struct kube_pf_options o = {.namespace_ = st->c->ns, .pod = st->c->pod, .port = pc->remote, .fd = pc->fd,
                                .stop = &pf_stop};
    struct kube_pf_result r;
    if (kube_portforward(st->c->kc, &o, &r) < 0 && !atomic_load(&pf_stop)) {
        const char *why = strncmp(r.err, "port-forward: ", 14) ? r.err : r.err + 14;
        fprintf(stderr, PROG ": port-forward 127.0.0.1:%u -> %u: %s\n", pc->local, pc->remote, why);
    }
    close(pc->fd);
    free(pc);
    pthread_mutex_lock(&st->mu);
    st->active--;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* A listening socket on addr:port (port 0: any free one; the one bound is returned). */
static int pf_listen(const char *addr, uint16_t port, uint16_t *bound) {
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) { errno = EINVAL; return -1; }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    socklen_t len = sizeof(sa);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

/* port-forward SANDBOX [LOCAL:]PORT...: listen on 127.0.0.1 (--address), one WebSocket
 * per accepted connection through the API server (pods/portforward), the sandbox marked
 * used while it runs; SIGINT or SIGTERM ends it (exit 0). */
int cmd_port_forward(struct cli *c) {
    struct args *a = c->a;
    const char *name = a->pos[0], *addr = a->address ? a->address : "127.0.0.1";
    size_t n = a->npos - 1;
    struct pf_listener *ls;
    struct in_addr probe;
    if (n == 0) return cli_usage_error("no port given: " PROG " port-forward SANDBOX [LOCAL:]PORT...");
    if (inet_pton(AF_INET, addr, &probe) != 1) return cli_usage_error("invalid --address \"%s\" (an IPv4 address)", addr);
    if (!(ls = calloc(n, sizeof(*ls)))) return cli_fail(ERR_OOM);
    for (size_t i = 0; i < n; i++) {
        ls[i].fd = -1;
        if (kube_pf_parse_mapping(a->pos[i + 1], &ls[i].local, &ls[i].remote) < 0) {
            free(ls);
            return cli_usage_error("invalid port \"%s\" (PORT, LOCAL:PORT or :PORT; ports 1-65535)", a->pos[i + 1]);
        }
    }
    int rc = 1;
    struct pf_state st = {.c = c, .active = 0};
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    if (cluster_connect(c)) goto out;
    cJSON *sb;
    if (cluster_ensure_running(c, name, &sb)) goto out;
    cJSON_Delete(sb);
    for (size_t i = 0; i < n; i++) {
        uint16_t want = ls[i].local;
        if ((ls[i].fd = pf_listen(addr, want, &ls[i].local)) < 0) {
            rc = cli_fail("cannot listen on %s:%u: %s", addr, want, strerror(errno));
            goto out;
        }
        printf("Forwarding from %s:%u -> %u\n", addr, ls[i].local, ls[i].remote);
    }
    fflush(stdout);
    if (pipe2(pf_wake, O_CLOEXEC | O_NONBLOCK) < 0) { rc = cli_fail("pipe: %s", strerror(errno)); goto out; }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_pf_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct session_toucher t;
    session_toucher_start(&t, c, name);
    struct pollfd *pf = calloc(n + 1, sizeof(*pf));
    rc = pf ? 0 : cli_fail(ERR_OOM);
    while (pf && !atomic_load(&pf_stop)) {
        for (size_t i = 0; i < n; i++) pf[i] = (struct pollfd){ls[i].fd, POLLIN, 0};
        pf[n] = (struct pollfd){pf_wake[0], POLLIN, 0};
        if (poll(pf, (nfds_t)(n + 1), -1) < 0) {
            if (errno == EINTR) continue;
            rc = cli_fail("poll: %s", strerror(errno));
            break;
        }
        for (size_t i = 0; i < n && !atomic_load(&pf_stop); i++) {
            if (!(pf[i].revents & POLLIN)) continue;
            int fd = accept4(ls[i].fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0) continue;   /* the client gave up already, or out of fds: keep serving */
            struct pf_conn *pc = malloc(sizeof(*pc));
            pthread_t th;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            if (pc) *pc = (struct pf_conn){&st, fd, ls[i].local, ls[i].remote};
            pthread_mutex_lock(&st.mu);
            st.active++;
            pthread_mutex_unlock(&st.mu);
            if (!pc || pthread_create(&th, &at, pf_conn_main, pc) != 0) {
                fprintf(stderr, PROG ": port-forward: cannot serve a connection: out of resources\n");
                free(pc);
                close(fd);
                pthread_mutex_lock(&st.mu);
                st.active--;
                pthread_mutex_unlock(&st.mu);
            }
            pthread_attr_destroy(&at);
        }
    }
    free(pf);
    for (size_t i = 0; i < n; i++) { close(ls[i].fd); ls[i].fd = -1; }
    /* The sessions see pf_stop within 100 ms and end. */
    pthread_mutex_lock(&st.mu);
    while (st.active > 0) pthread_cond_wait(&st.cv, &st.mu);
    pthread_mutex_unlock(&st.mu);
    session_toucher_stop(&t);
out:
    for (size_t i = 0; i < n; i++) if (ls[i].fd >= 0) close(ls[i].fd);
    free(ls);
    pthread_cond_destroy(&st.cv);
    pthread_mutex_destroy(&st.mu);
    return rc;
}

