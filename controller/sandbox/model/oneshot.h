/* sandbox/model/oneshot.h — the pure parts of a one-shot run, which is the pod's own main
 * process (restartPolicy Never, like a Job): the wrapper script that runs spec.run's argv
 * with stdout and stderr kept apart and leaves both tails in the container's termination
 * message, and reading that message back into status.run's stdout/stderr. Building the pod
 * is in builders.c, deciding on the result in reconcile_decide.c, writing it in status.c. */
#ifndef YAO_SANDBOX_ONESHOT_H
#define YAO_SANDBOX_ONESHOT_H

#include <stddef.h>

/* Bytes of each stream's tail the wrapper keeps. The kubelet keeps at most 4096 bytes of a
 * termination message, and the message goes through JSON (invalid UTF-8 would be
 * replaced), so both tails are base64-encoded: 2 × 1400 bytes → 2 × ~1890 characters plus
 * a header line, well below 4096. */
#define SBX_RUN_TAIL 1400
#define SBX_STR_(x) #x
#define SBX_STR(x) SBX_STR_(x)
/* The first word of the message the wrapper writes. */
#define SBX_RUN_FRAME "yao-run/1"

/* The container's command is {"/bin/sh", "-c", SBX_RUN_SCRIPT, "yao-run", argv...}: the
 * argv runs exactly as given ("$@", no shell parsing) with stdout and stderr in files; a
 * SIGTERM (pod deletion, activeDeadlineSeconds) is passed on to it; when it ends, the
 * termination message becomes
 *     yao-run/1 <stdout bytes> <stderr bytes>\n<base64 stdout tail>\n.\n<base64 stderr tail>\n
 * (base64 lines wrapped as base64(1) does; '.' is not in its alphabet), both streams are
 * copied to the container's log (the run's whole output, read with pods/log: the pod is
 * kept until the Sandbox goes), and the wrapper exits with the command's exit code. After
 * copying it pauses half a second (1 s where sleep takes no fraction): the runtime may
 * drop what is still in the container's stdout pipe when its last process exits (seen on
 * containerd 1.6: the last tens of KiB of a 100 KB log lost in 3 of 3 runs without the
 * pause, none with it).
 * Needs sh, wc, tail, base64, cat, rm: GNU coreutils and busybox both have them. The
 * message path is $YAO_RUN_MESSAGE when set (tests), else /dev/termination-log. */
#define SBX_RUN_SCRIPT                                                                          \
    "o=/tmp/.yao-run-out.$$ e=/tmp/.yao-run-err.$$\n"                                           \
    "\"$@\" >\"$o\" 2>\"$e\" &\n"                                                               \
    "p=$!\n"                                                                                    \
    "trap 'kill -TERM \"$p\" 2>/dev/null' TERM INT HUP\n"                                       \
    "while :; do wait \"$p\"; rc=$?; kill -0 \"$p\" 2>/dev/null || break; done\n"               \
    "trap - TERM INT HUP\n"                                                                     \
    "no=$(wc -c <\"$o\"); ne=$(wc -c <\"$e\")\n"                                                \
    "{ printf '" SBX_RUN_FRAME " %s %s\\n' $no $ne; tail -c " SBX_STR(SBX_RUN_TAIL) " \"$o\" | base64;"              \
    " echo .; tail -c " SBX_STR(SBX_RUN_TAIL) " \"$e\" | base64; } >\"${YAO_RUN_MESSAGE:-/dev/termination-log}\"\n"  \
    "cat \"$o\"; cat \"$e\" >&2\n"                                                              \
    "[ $((no + ne)) -eq 0 ] || sleep 0.5 2>/dev/null || sleep 1\n"                                \
    "rm -f \"$o\" \"$e\"\n"                                                                     \
    "exit \"$rc\"\n"

/* A command's output as status.run shows it. */
struct sbx_run_output {
    char *out, *err;   /* malloc'd, JSON-safe text (see sbx_run_text) */
    int truncated;     /* a stream was longer than its tail */
};

/* Read a termination message. A message in the wrapper's framing gives both tails; any
 * other text (the kubelet's fallback to the log tail, a runtime's error such as a missing
 * /bin/sh) is taken whole as stderr. note (may be NULL) is appended to stderr on a line of
 * its own (the controller's word: a timeout, a lost pod). 0, or -1 on ENOMEM (nothing to
 * free then). */
int sbx_run_output_parse(const char *message, const char *note, struct sbx_run_output *out);
void sbx_run_output_free(struct sbx_run_output *out);

/* n bytes of p as JSON-safe text into out (>= n + 1 bytes): control bytes other than
 * \t \n \r and DEL become '?', a UTF-8 sequence cut at the start is dropped; other invalid
 * UTF-8 is left to the JSON encoder. */
void sbx_run_text(const char *p, size_t n, int cut_at_start, char *out);

#endif
