/* kube/exec.h — running a command in a pod through the API server:
 * GET /api/v1/namespaces/NS/pods/POD/exec upgraded to a WebSocket (the WebSocket stream of
 * kube/wsstream.h: our own framing over a raw libwebsockets connection),
 * subprotocol v5.channel.k8s.io with fallback to v4.channel.k8s.io. Streams stdout and
 * stderr to callbacks as they arrive (never buffering the whole output), feeds stdin from a
 * callback or a file descriptor in bounded chunks and closes it (v5 close signal), sends
 * a terminal's size on the resize channel (at start and when the caller says it changed),
 * and returns the command's exit code from the status channel. Same TLS and credentials as
 * the REST client. Re-entrant: every call has its own libwebsockets context (and, reading
 * stdin from an fd, its own reader thread); no global state, so several threads may run
 * sessions at once. The channel protocol — the frame demultiplexer, the status verdict,
 * the resize message (and the replay of a stream's tail read past libwebsockets) — is
 * separate and pure, for tests and fuzzing: kube/execproto.h. */
#ifndef YAO_KUBE_EXEC_H
#define YAO_KUBE_EXEC_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>
#include "kube/execproto.h"
#include "kube/rest.h"

/* Stdin read ahead from an fd (use_stdin_fd): at most this many 32 KiB chunks. */
#define KUBE_EXEC_STDIN_SLOTS 4
/* How often the loop looks at a terminal session's resize flag (see term_size). */
#define KUBE_EXEC_RESIZE_CHECK_MS 100

/* Stdin callback: fill up to cap bytes; return the count, 0 at end of input, -1 on error. */
typedef ssize_t (*kube_exec_input_fn)(void *ud, char *buf, size_t cap);
/* Terminal size callback: set the columns and rows; return 0, or -1 when there is no size
 * to send. */
typedef int (*kube_exec_size_fn)(void *ud, unsigned *width, unsigned *height);

struct kube_exec_options {
    const char *namespace_;
    const char *pod;
    const char *container;             /* NULL: the pod's only/default container */
    const char *const *argv;           /* the command, passed exactly (one command= each) */
    size_t argc;
    kube_exec_output_fn on_stdout;     /* NULL: stdout not requested */
    kube_exec_output_fn on_stderr;     /* NULL: stderr not requested (or merged with tty) */
    /* Stdin comes from one of two sources, or none (both unset, as in a zero-initialised
     * struct):
     *  - read_stdin: called on the session's event loop whenever the socket can take
     *    another chunk. While it runs nothing else of the session happens (no output is
     *    delivered, no ping answered), so it should not wait for input: for data the
     *    caller has or can produce at once (a buffer, a file, a tar stream being written).
     *  - use_stdin_fd non-zero: the session reads stdin_fd (>= 0) itself, in a thread of
     *    its own, so output keeps flowing while the fd has nothing to read: the way to
     *    pass a terminal, or a pipe that may go quiet. The fd is read until EOF (which
     *    closes the command's stdin, v5) or the end of the session; it is neither closed
     *    nor made non-blocking (a non-blocking fd works too). Up to KUBE_EXEC_STDIN_SLOTS
     *    x 32 KiB may be read ahead; what was read but not sent when the session ends is
     *    lost. The flag is there because a zero-initialised stdin_fd is 0, a valid fd:
     *    fd 0 is use_stdin_fd = 1, stdin_fd = 0; stdin_fd alone means nothing.
     * Both at once, or use_stdin_fd with a negative or closed fd, is an argument error. */
    kube_exec_input_fn read_stdin;     /* NULL: no stdin from a callback */
    int use_stdin_fd;                  /* non-zero: stdin from stdin_fd (see above) */
    int stdin_fd;                      /* only with use_stdin_fd */
    void *ud;
    int tty;                           /* a terminal: only with stdin (read_stdin or
                                          use_stdin_fd; else ignored, as kubectl does);
                                          stderr then arrives merged in stdout */
    /* The terminal's size (tty only; NULL: no size is sent, and the program sees 0x0).
     * Called on the session's loop right after the session opens, and again whenever
     * *resized is non-zero (looked at every KUBE_EXEC_RESIZE_CHECK_MS; cleared before the
     * call, so a change during it is seen next time); a size that differs from the last
     * one sent goes out on the resize channel as {"Width":W,"Height":H}. resized is what a
     * SIGWINCH handler sets (NULL: the size is sent once): an atomic, since the handler may
     * run on any thread of the caller, and a lock-free one, so it may be set there. */
    kube_exec_size_fn term_size;
    atomic_int *resized;
    long timeout_ms;                   /* whole session; 0 = none */
    /* Offered subprotocols, comma-separated; NULL = "v5.channel.k8s.io, v4.channel.k8s.io". */
    const char *protocols;
};

struct kube_exec_result {
    int exit_code;          /* the command's exit status; -1 when unknown */
    long http_status;       /* status of a failed upgrade, else 101 */
    char protocol[32];      /* negotiated subprotocol */
    char err[512];          /* why the session failed (kube_exec returned -1) */
};

/* Run one command. Returns 0 when the command ran to completion (its status is in
 * r->exit_code, 0 or not), -1 when it could not be run or the session failed (upgrade
 * refused, error Status such as a missing container, timeout, transport error, a callback
 * aborted): r->err says why in one line.
 * The callbacks run on the calling thread. read_stdin is called whenever the socket can
 * take another chunk (at most 32 KiB); output is not read while it blocks. With
 * use_stdin_fd a reader thread per session fills a bounded buffer from the fd (it stops
 * reading when the buffer is full, so a slow server pushes back) and wakes the loop; it
 * is stopped and joined before kube_exec returns, even when it is waiting for input that
 * never comes.
 * The status ends the session at once: stdin not sent yet (read ahead, or queued in the
 * socket because the server stopped reading it, as servers do once the command has
 * exited) is dropped, and the connection is closed without waiting for the server to take
 * it, so a command that exits without reading its input never holds up the return.
 * Limits (see exec.c): the URL with the encoded argv may have at most
 * 2032 bytes — longer commands fail before connecting, so pass scripts on stdin; with
 * v4.channel.k8s.io (servers before 1.30) stdin cannot be closed, so the command never
 * sees EOF on it. */
int kube_exec(struct kube_client *c, const struct kube_exec_options *o, struct kube_exec_result *r);

#endif
