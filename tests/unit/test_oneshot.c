/* tests/unit/test_oneshot.c — a one-shot run's wrapper (sandbox/model/oneshot.h) run for real
 * under /bin/sh with this machine's tools (and under busybox's when it is installed), and
 * its termination message read back: exit codes, separate stdout/stderr tails, truncation,
 * argv passed exactly, a SIGTERM passed on; unframed messages and damaged frames. */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/model/oneshot.h"

/* Run the wrapper with argv under shell (NULL-terminated shell prefix, e.g. {"/bin/sh",
 * NULL}); the message file's contents into msg (malloc'd), the exit status returned
 * (-1 when it could not run). term_after_ms > 0 sends SIGTERM to the wrapper then. */
static int run_wrapper(const char *const *shell, const char *const *argv, int term_after_ms, char **msg,
                       char **log_out) {
    char path[] = "/tmp/yao-oneshot-msg-XXXXXX", logp[] = "/tmp/yao-oneshot-log-XXXXXX";
    int fd = mkstemp(path), lfd = mkstemp(logp);
    *msg = NULL;
    if (log_out) *log_out = NULL;
    if (fd < 0 || lfd < 0) return -1;
    close(fd);
    pid_t pid = fork();
    if (pid == 0) {
        const char *args[64];
        size_t n = 0;
        for (; shell[n]; n++) args[n] = shell[n];
        args[n++] = "-c";
        args[n++] = SBX_RUN_SCRIPT;
        args[n++] = "yao-run";
        for (size_t i = 0; argv[i] && n < 63; i++) args[n++] = argv[i];
        args[n] = NULL;
        setenv("YAO_RUN_MESSAGE", path, 1);
        dup2(lfd, 1);
        dup2(lfd, 2);
        execv(args[0], (char *const *)args);
        _exit(126);
    }
    close(lfd);
    if (term_after_ms > 0) {
        usleep((useconds_t)term_after_ms * 1000);
        kill(pid, SIGTERM);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    FILE *f = fopen(path, "rb");
    if (f) {
        char *buf = calloc(1, 8192);
        if (buf) fread(buf, 1, 8191, f);
        fclose(f);
        *msg = buf;
    }
    if (log_out && (f = fopen(logp, "rb"))) {
        char *buf = calloc(1, 65536);
        if (buf) fread(buf, 1, 65535, f);
        fclose(f);
        *log_out = buf;
    }
    unlink(path);
    unlink(logp);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static const char *const sh[] = {"/bin/sh", NULL};
static const char *const bb[] = {"/usr/bin/busybox", "sh", NULL};

/* The wrapper's contract under one shell. */
static void wrapper_contract(const char *const *shell) {
    char *msg, *log;
    struct sbx_run_output out;
    /* exit code, stdout and stderr apart, argv exact (spaces, quotes, a leading dash) */
    const char *const a1[] = {"sh", "-c", "printf '%s|' \"$@\"; echo oops >&2; exit 3", "x", "a b", "'q'", "-n", NULL};
    CHECK_INT(run_wrapper(shell, a1, 0, &msg, &log), 3);
    CHECK(msg != NULL);
    CHECK_INT(sbx_run_output_parse(msg, NULL, &out), 0);
    CHECK_STR(out.out, "a b|'q'|-n|");
    CHECK_STR(out.err, "oops\n");
    CHECK_INT(out.truncated, 0);
    CHECK_STR(log, "a b|'q'|-n|oops\n");   /* both streams reach the container log too */
    sbx_run_output_free(&out);
    free(msg);
    free(log);

    /* long output: the last SBX_RUN_TAIL bytes of each, and the frame fits the kubelet's 4096 */
    const char *const a2[] = {"sh", "-c", "i=0; while [ $i -lt 600 ]; do echo \"line $i\"; echo \"err $i\" >&2; "
                              "i=$((i+1)); done", NULL};
    CHECK_INT(run_wrapper(shell, a2, 0, &msg, NULL), 0);
    CHECK(msg && strlen(msg) < 4096);
    CHECK_INT(sbx_run_output_parse(msg, NULL, &out), 0);
    CHECK_INT(out.truncated, 1);
    CHECK_INT(strlen(out.out), SBX_RUN_TAIL);
    CHECK(strstr(out.out, "line 599\n") != NULL && strstr(out.out, "line 100\n") == NULL);
    CHECK(strstr(out.err, "err 599\n") != NULL);
    sbx_run_output_free(&out);
    free(msg);

    /* with output, a pause after copying it to the log (so the runtime drains the pipe
     * before the container exits); without, none. A `sleep` of our own, first in PATH,
     * records how it was called (not under busybox: its sh runs its own sleep applet). */
    if (shell != sh) goto after_pause;
    char dir[] = "/tmp/yao-oneshot-bin-XXXXXX", tool[64], rec[64], old_path[4096];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(tool, sizeof(tool), "%s/sleep", dir);
    snprintf(rec, sizeof(rec), "%s/called", dir);
    FILE *tf = fopen(tool, "w");
    CHECK(tf != NULL);
    if (tf) {
        fprintf(tf, "#!/bin/sh\necho \"$*\" >> %s\n", rec);
        fclose(tf);
        chmod(tool, 0755);
    }
    snprintf(old_path, sizeof(old_path), "%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char new_path[4200];
    snprintf(new_path, sizeof(new_path), "%s:%s", dir, old_path);
    setenv("PATH", new_path, 1);
    const char *const p1[] = {"sh", "-c", "echo some-output", NULL}, *const p2[] = {"true", NULL};
    CHECK_INT(run_wrapper(shell, p2, 0, &msg, NULL), 0);
    free(msg);
    CHECK(access(rec, F_OK) != 0);            /* no output: no pause */
    CHECK_INT(run_wrapper(shell, p1, 0, &msg, NULL), 0);
    free(msg);
    char called[64] = "";
    FILE *rf = fopen(rec, "r");
    if (rf) { if (!fgets(called, sizeof(called), rf)) called[0] = 0; fclose(rf); }
    CHECK_STR(called, "0.5\n");               /* output: half a second */
    setenv("PATH", old_path, 1);
    unlink(rec);
    unlink(tool);
    rmdir(dir);
after_pause:

    /* not found: the shell's 127 and its word in stderr */
    const char *const a3[] = {"/nonexistent/yao-cmd", NULL};
    CHECK_INT(run_wrapper(shell, a3, 0, &msg, NULL), 127);
    CHECK_INT(sbx_run_output_parse(msg, NULL, &out), 0);
    CHECK_STR(out.out, "");
    CHECK(strstr(out.err, "/nonexistent/yao-cmd") != NULL);
    sbx_run_output_free(&out);
    free(msg);

    /* SIGTERM (pod deletion, activeDeadlineSeconds) reaches the command; the output so far
     * is still written */
    const char *const a4[] = {"sh", "-c", "trap 'echo got-term >&2; exit 143' TERM; echo started; "
                              "while :; do sleep 0.05; done", NULL};
    CHECK_INT(run_wrapper(shell, a4, 400, &msg, NULL), 143);
    CHECK_INT(sbx_run_output_parse(msg, NULL, &out), 0);
    CHECK_STR(out.out, "started\n");
    CHECK_STR(out.err, "got-term\n");
    sbx_run_output_free(&out);
    free(msg);

    /* binary and non-UTF-8 output come back JSON-safe */
    const char *const a5[] = {"sh", "-c", "printf 'a\\001b\\377c'", NULL};
    CHECK_INT(run_wrapper(shell, a5, 0, &msg, NULL), 0);
    CHECK_INT(sbx_run_output_parse(msg, NULL, &out), 0);
    CHECK_STR(out.out, "a?b\377c");
    sbx_run_output_free(&out);
    free(msg);
}

TEST(wrapper_under_sh) { wrapper_contract(sh); }

TEST(wrapper_under_busybox) {
    if (access(bb[0], X_OK) != 0) { fprintf(stderr, "  (no busybox: skipped)\n"); return; }
    wrapper_contract(bb);
}

TEST(parse_frames_and_fallbacks) {
    struct sbx_run_output out;
    /* both empty */
    CHECK_INT(sbx_run_output_parse("yao-run/1 0 0\n.\n", NULL, &out), 0);
    CHECK_STR(out.out, "");
    CHECK_STR(out.err, "");
    sbx_run_output_free(&out);
    /* "hi\n" / "" with a note */
    CHECK_INT(sbx_run_output_parse("yao-run/1 3 0\naGkK\n.\n", "yao-sandbox: timed out", &out), 0);
    CHECK_STR(out.out, "hi\n");
    CHECK_STR(out.err, "yao-sandbox: timed out\n");
    sbx_run_output_free(&out);
    /* a tail cut inside a UTF-8 sequence: the stray continuation byte is dropped
     * ("\xa9z" of "\xc3\xa9z", 3 bytes in all) */
    CHECK_INT(sbx_run_output_parse("yao-run/1 0 3\n.\nqXo=\n", NULL, &out), 0);
    CHECK_STR(out.err, "z");
    CHECK_INT(out.truncated, 0);
    sbx_run_output_free(&out);
    /* unframed (the kubelet's fallback to the log, a runtime error): all of it as stderr */
    CHECK_INT(sbx_run_output_parse("exec: \"/bin/sh\": no such file", "yao-sandbox: note", &out), 0);
    CHECK_STR(out.out, "");
    CHECK_STR(out.err, "exec: \"/bin/sh\": no such file\nyao-sandbox: note\n");
    sbx_run_output_free(&out);
    /* damaged frames are taken as text, never half-read */
    static const char *const bad[] = {"yao-run/1 3\naGkK\n.\n", "yao-run/1 3 0\naG*K\n.\n", "yao-run/1 3 0\naGkK\n",
                                      "yao-run/1 1 0\naGkK\n.\n", "yao-run/1 x y\n.\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_INT(sbx_run_output_parse(bad[i], NULL, &out), 0);
        CHECK_STR(out.out, "");
        CHECK_STR(out.err, bad[i]);
        sbx_run_output_free(&out);
    }
    /* no message at all */
    CHECK_INT(sbx_run_output_parse(NULL, NULL, &out), 0);
    CHECK_STR(out.out, "");
    CHECK_STR(out.err, "");
    sbx_run_output_free(&out);
}
