/* tests/cluster/node/pause.c — the pod sandbox ("pause") process of the local real node.
 *
 * Every pod's infrastructure container runs this as PID 1 of the pod's namespaces: it
 * holds them open, reaps any child that is re-parented to it, and exits 0 on SIGTERM or
 * SIGINT. Built statically and packed FROM scratch by tests/cluster/node/up, so the node
 * needs no registry. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

int main(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        perror("pause: sigprocmask");
        return 1;
    }
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGCHLD) {
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
            continue;
        }
        return 0;
    }
}
