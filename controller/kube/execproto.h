/* kube/execproto.h — the remotecommand channel protocol of pods/exec, pure: channel ids,
 * the demultiplexer that reassembles WebSocket messages and hands each channel's payload
 * on, the error channel's Status turned into an exit code or a message, the resize
 * message, and the replay of a stream's tail read past a parser. No I/O: the session that
 * drives it is kube/exec.c; the tests are tests/unit/test_exec.c and
 * fuzz/fuzz_exec_demux.c. */
#ifndef YAO_KUBE_EXECPROTO_H
#define YAO_KUBE_EXECPROTO_H

#include <stddef.h>

/* Channel ids of the remotecommand protocol. */
enum kube_exec_channel {
    KUBE_EXEC_STDIN = 0,
    KUBE_EXEC_STDOUT = 1,
    KUBE_EXEC_STDERR = 2,
    KUBE_EXEC_ERROR = 3,   /* one JSON Status: the outcome */
    KUBE_EXEC_RESIZE = 4,
    KUBE_EXEC_CLOSE = 255, /* v5: close a stream (payload: its id) */
};

/* Output callback: return 0 to go on, non-zero to abort the session. */
typedef int (*kube_exec_output_fn)(void *ud, const char *data, size_t len);

/* Reassembles WebSocket message fragments (the channel byte is only in the first) and
 * dispatches payload by channel; collects the error channel's Status (bounded). */
struct kube_exec_demux {
    int in_message;         /* a message's first fragment was seen */
    int channel;            /* of the current message */
    char status[64 * 1024]; /* the error channel's bytes */
    size_t status_len;
    int status_overflow;
    kube_exec_output_fn on_stdout, on_stderr;
    void *ud;
};

void kube_exec_demux_init(struct kube_exec_demux *d, kube_exec_output_fn out, kube_exec_output_fn err, void *ud);
/* Feed one fragment. first/final: the fragment flags. Returns 0, or non-zero when a
 * callback aborted (its value) or the message names an unknown channel (-1). */
int kube_exec_demux_feed(struct kube_exec_demux *d, const unsigned char *p, size_t n, int first, int final);
/* Interpret a Status from the error channel: 0 with *exit_code set (0 for Success, N for
 * NonZeroExitCode), or -1 with msg set when it reports a failure to run the command. */
int kube_exec_parse_status(const char *json, size_t len, int *exit_code, char *msg, size_t msglen);
/* Replay the tail of a server's stream that was read past a WebSocket parser that stopped
 * inside it (kube_exec itself no longer needs this: its own parser, kube/wsframe.c, goes
 * on where it stood; kept as public API, with its tests and fuzz/fuzz_exec_demux.c). start is
 * where lws' frame parser stood: the count of payload bytes left of the frame it was in
 * (0 at a frame boundary); those bytes continue the demultiplexer's current message, or
 * start one when it is in none (lws had read that frame's header only), and that frame was
 * its message's last unless a continuation follows. From start on the tail must be whole
 * server frames — unmasked, no reserved bits, known
 * opcodes, whole control frames — up to a complete message on the error channel (the
 * server's last word). Only then is anything fed to d (its output callbacks run for the
 * data messages before the status, in order): 0 with the status in d, or -1 and d as it
 * was. */
int kube_exec_tail_replay(struct kube_exec_demux *d, const unsigned char *tail, size_t n, size_t start);
/* The resize message for a terminal of width x height: the channel byte (4), then
 * {"Width":W,"Height":H}. Returns its length, or 0 when out (cap bytes) is too small. */
size_t kube_exec_resize_message(unsigned width, unsigned height, unsigned char *out, size_t cap);

#endif
