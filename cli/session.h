/* cli/session.h — running a command in the sandbox's container over exec: its streams
 * to and from local fds, a capture buffer, the tar extractor or a tar source; the thread
 * that marks the sandbox used while it runs; the terminal size for exec -t; and what the
 * file helpers add (paths resolved against the root, captured stderr, the one-line
 * complaint of a failed remote command).
 *
 * While a command runs in a sandbox (exec, every file helper, port-forward) a thread
 * marks the sandbox used at the interval of cli/keepalive.h (a third of the shorter of its
 * effective idle timeout and reclaim window, 1 s to 60 s; re-derived from each touch's
 * answer), so an open session counts as use; nothing marks it after the command ended
 * (that would wake a sandbox stopped meanwhile). */
#ifndef YAO_CLI_SESSION_H
#define YAO_CLI_SESSION_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"

struct dynbuf;
struct cli_untar;
struct cli_tar_src;

#define CAPTURE_MAX (64u << 20)      /* a captured listing (ls) */
#define STDERR_KEEP (64u << 10)      /* captured stderr of a file helper */

struct session_io {
    int out_fd;                  /* stdout → this fd, or */
    struct dynbuf *out_buf;      /* captured, or */
    struct cli_untar *untar;     /* extracted */
    int err_fd;                  /* stderr → this fd, or */
    struct dynbuf *err_buf;      /* captured (first STDERR_KEEP bytes) */
    int in_fd;                   /* stdin from this fd (read by kube_exec's own thread, so
                                    output flows while it is idle: a terminal, a quiet
                                    pipe), or */
    struct cli_tar_src *tar;     /* from a tar source (reads regular files: never waits) */
    int broken_pipe;             /* our stdout/stderr reader went away */
    char why[600];               /* why a callback aborted */
};

/* Marks the sandbox used while a session runs (see the top: first after c->touch_interval_ms), on
 * a thread of its own so that a slow API server never holds up the session's output. */
struct session_toucher {
    struct cli *c;
    const char *name;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t interval_ms;         /* under mu: from the newest Sandbox seen */
    int stop, started;
};
/* Start touching (no-op when the interval is unknown: no running Sandbox was seen). */
void session_toucher_start(struct session_toucher *t, struct cli *c, const char *name);
/* Stop touching; a touch in flight is waited for, none starts after this returns. */
void session_toucher_stop(struct session_toucher *t);

/* Run argv in the sandbox container of pod, marking the sandbox (c->a->pos[0]) used while
 * it runs. 0 with *code, or -1 with err. */
int session_run(struct cli *c, const char *pod, const char *const *argv, size_t argc, struct session_io *x,
                int want_stdin, int tty, long timeout_ms, int *code, char *err, size_t errlen);
/* Pass SIGWINCH on to a running exec -t (stdin is a terminal). */
void session_watch_resize(void);

/* Resolve a sandbox path against --root / $YAO_SANDBOX_ROOT / the mountPath. Never starts
 * with '-' (so it is never taken for an option). Caller frees; NULL on ENOMEM. */
char *session_path(const struct cli *c, const cJSON *sb, const char *path);
/* A file helper: run argv in the running sandbox with stderr captured; stdout to x.
 * 0 with *code, or 1 (error printed). */
int session_file_op(struct cli *c, const char *pod, const char *const *argv, size_t argc, struct session_io *x,
                    int want_stdin, int *code);
/* The remote command's complaint in b as one line (see cli_remote_message). */
void session_remote_message(const struct dynbuf *b, char *out, size_t n);
/* Connect, wake the sandbox (c->a->pos[0]), and resolve path (NULL: the root). 0 with
 * pod and *file (caller frees), or 1 (error printed). */
int session_file_setup(struct cli *c, const char *path, char *pod, size_t podlen, char **file);
/* Report a non-zero exit of a file helper (its stderr in errb). Returns 1. */
int session_failed(const struct dynbuf *errb, int code);

#endif
