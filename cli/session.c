/* cli/session.c — a command in the sandbox's container over kube_exec (see session.h):
 * stream callbacks, the toucher thread, the terminal size, and the file helpers' wrapper.
 * Not here: the exec transport (kube/exec.c), the pure tar and listing code (cli/tar.h,
 * cli/listing.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "cli/cluster.h"
#include "cli/exec_decide.h"
#include "cli/fdio.h"
#include "cli/paths.h"
#include "cli/remote.h"
#include "cli/tar.h"
#include "cli/keepalive.h"
#include "cli/session.h"
#include "base/dynbuf.h"
#include "kube/exec.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/spec.h"

/* exec stdout: extract, capture or stream it. Non-zero aborts the session. */
static int x_out(void *ud, const char *p, size_t n) {
    struct session_io *x = ud;
    if (x->untar) {
        if (cli_untar_feed(x->untar, p, n) < 0) {
            snprintf(x->why, sizeof(x->why), "%s", cli_untar_error(x->untar));
            return 1;
        }
        return 0;
    }
    if (x->out_buf) {
        if (dynbuf_append(x->out_buf, p, n) < 0) {
            snprintf(x->why, sizeof(x->why), "output larger than %u MiB", CAPTURE_MAX >> 20);
            return 1;
        }
        return 0;
    }
    if (x->out_fd >= 0 && cli_write_all(x->out_fd, p, n) < 0) {
        if (errno == EPIPE) x->broken_pipe = 1;
        else snprintf(x->why, sizeof(x->why), "writing output: %s", strerror(errno));
        return 1;
    }
    return 0;
}

/* exec stderr: capture (bounded) or stream it. */
static int x_err(void *ud, const char *p, size_t n) {
    struct session_io *x = ud;
    if (x->err_buf) {
        size_t room = x->err_buf->len < STDERR_KEEP ? STDERR_KEEP - x->err_buf->len : 0;
        dynbuf_append(x->err_buf, p, n < room ? n : room);
        return 0;
    }
    if (x->err_fd >= 0 && cli_write_all(x->err_fd, p, n) < 0 && errno == EPIPE) {
        x->broken_pipe = 1;
        return 1;
    }
    return 0;
}

/* exec stdin from a tar source: the next bytes of the archive. */
static ssize_t x_in(void *ud, char *buf, size_t cap) {
    struct session_io *x = ud;
    ssize_t r = cli_tar_src_read(x->tar, buf, cap);
    if (r < 0) snprintf(x->why, sizeof(x->why), "%s", cli_tar_src_error(x->tar));
    return r;
}

/* Touch every t->interval_ms; each answer is the Sandbox as it is now, so a policy the
 * controller changed meanwhile (a class edited, the sandbox moved to another class) sets
 * the next interval. */
static void *toucher_main(void *arg) {
    struct session_toucher *t = arg;
    struct timespec next;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        clock_mono_timespec(clock_mono_ms() + t->interval_ms, &next);
        while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &next) != ETIMEDOUT) {}
        if (t->stop) break;
        pthread_mutex_unlock(&t->mu);
        cJSON *sb = NULL;
        /* best effort: the next one comes anyway */
        int64_t interval = cluster_patch(t->c, t->name, 1, -1, 1, &sb) == 0 && sb ? cli_touch_interval_of(sb) : 0;
        cJSON_Delete(sb);
        pthread_mutex_lock(&t->mu);
        if (interval > 0) t->interval_ms = interval;
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

void session_toucher_start(struct session_toucher *t, struct cli *c, const char *name) {
    memset(t, 0, sizeof(*t));
    t->c = c;
    t->name = name;
    t->interval_ms = c->touch_interval_ms;
    if (t->interval_ms <= 0) return;
    pthread_mutex_init(&t->mu, NULL);
    clock_mono_cond_init(&t->cv);
    t->started = pthread_create(&t->thread, NULL, toucher_main, t) == 0;
    if (!t->started) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
    }
}

void session_toucher_stop(struct session_toucher *t) {
    if (!t->started) return;
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    t->started = 0;
}

/* Set by SIGWINCH (exec -t with a terminal on stdin); kube_exec looks at it. The signal
 * may land on any thread (the toucher's too), so a lock-free atomic rather than a volatile
 * sig_atomic_t (C11 7.14.1.1 allows either in a handler; only the atomic between threads). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "winch is set in a signal handler: atomic_int must be lock-free");
static atomic_int winch;

static void on_winch(int sig) {
    (void)sig;
    atomic_store(&winch, 1);
}

void session_watch_resize(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_winch;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, NULL);
}

/* The terminal size for exec -t: stdin's terminal, else $COLUMNS x $LINES. */
static int term_size(void *ud, unsigned *width, unsigned *height) {
    struct winsize ws;
    (void)ud;
    if (isatty(0)) {
        if (ioctl(0, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row) return -1;
        *width = ws.ws_col;
        *height = ws.ws_row;
        return 0;
    }
    return cli_term_size_env(getenv("COLUMNS"), getenv("LINES"), width, height);
}

/* Run argv in the sandbox container of pod, marking the sandbox used while it runs.
 * 0 with *code, or -1 with err. */
int session_run(struct cli *c, const char *pod, const char *const *argv, size_t argc, struct session_io *x,
                      int want_stdin, int tty, long timeout_ms, int *code, char *err, size_t errlen) {
    struct kube_exec_options o = {
        .namespace_ = c->ns, .pod = pod, .container = SBX_CONTAINER_NAME,
        .argv = argv, .argc = argc,
        .on_stdout = x_out, .on_stderr = x_err,
        .read_stdin = want_stdin && x->tar ? x_in : NULL,
        .use_stdin_fd = want_stdin && !x->tar, .stdin_fd = x->in_fd,
        .ud = x, .tty = tty, .timeout_ms = timeout_ms,
        .term_size = tty ? term_size : NULL, .resized = tty && isatty(0) ? &winch : NULL,
    };
    struct kube_exec_result r;
    struct session_toucher t;
    session_toucher_start(&t, c, c->a->pos[0]);
    int rc = kube_exec(c->kc, &o, &r);
    session_toucher_stop(&t);
    if (rc < 0) {
        errfmt(err, errlen, "%s", x->why[0] ? x->why : r.err);
        return -1;
    }
    *code = r.exit_code;
    return 0;
}


/* The remote command's complaint as one line (see cli_remote_message). */
void session_remote_message(const struct dynbuf *b, char *out, size_t n) {
    cli_remote_message(b->data ? b->data : "", b->len, out, n);
}

/* Resolve a sandbox path against --root / $YAO_SANDBOX_ROOT / the mountPath. Never starts
 * with '-' (so it is never taken for an option). Caller frees. */
char *session_path(const struct cli *c, const cJSON *sb, const char *path) {
    const char *root = c->a->root ? c->a->root : getenv("YAO_SANDBOX_ROOT");
    struct sbx_sandbox_shown sh;
    sbx_sandbox_view_shown(sb, &sh);
    if (!root || !*root) root = sh.mount_path;
    if (!root || !*root) root = DEFAULT_ROOT;
    char *p = cli_path_join(root, path);
    if (p && p[0] == '-') {
        char *q = cli_path_join(".", p);
        free(p);
        p = q;
    }
    return p;
}

/* A file helper: run argv in the running sandbox with stderr captured; stdout to x.
 * Returns the command's exit code (0), or prints the error and returns 1. */
int session_file_op(struct cli *c, const char *pod, const char *const *argv, size_t argc, struct session_io *x,
                   int want_stdin, int *code) {
    char err[700];
    if (session_run(c, pod, argv, argc, x, want_stdin, 0, 0, code, err, sizeof(err)) < 0) {
        if (x->broken_pipe) return 1;
        return cli_fail("%s: %s", cli_current->name, err);
    }
    return 0;
}

/* Report a non-zero exit of a file helper. */
int session_failed(const struct dynbuf *errb, int code) {
    char msg[1024];
    session_remote_message(errb, msg, sizeof(msg));
    if (msg[0]) return cli_fail("%s: %s", cli_current->name, msg);
    return cli_fail("%s: the command failed in the sandbox (exit code %d)", cli_current->name, code);
}

/* Connect, wake the sandbox, and resolve path. 0 with *pod and *file (caller frees). */
int session_file_setup(struct cli *c, const char *path, char *pod, size_t podlen, char **file) {
    cJSON *sb;
    *file = NULL;
    if (cluster_connect(c)) return 1;
    if (cluster_ensure_running(c, c->a->pos[0], &sb)) return 1;
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    snprintf(pod, podlen, "%s", v.pod_name ? v.pod_name : "");
    *file = session_path(c, sb, path ? path : "");
    cJSON_Delete(sb);
    return *file ? 0 : cli_fail(ERR_OOM);
}
