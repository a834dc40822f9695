/* tests/unit/test_cli_exec.c — exec's small decisions in the CLI, without a cluster: the
 * terminal size from $COLUMNS/$LINES, when the end of an exec calls for a look at the
 * sandbox, whether the sandbox was stopped, paused, deleted or restarted under the command
 * (and the line that says so), and the exit codes (75 for a stopped sandbox, never the 137 of a killed command);
 * and the exec -w/-e wrapper, whose command really runs with the exact words. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli/exec_decide.h"

TEST(term_size_from_the_environment) {
    unsigned w = 0, h = 0;
    CHECK_INT(cli_term_size_env("132", "43", &w, &h), 0);
    CHECK_INT(w, 132);
    CHECK_INT(h, 43);
    CHECK_INT(cli_term_size_env("1", "65535", &w, &h), 0);
    CHECK_INT(h, 65535);
    static const char *const bad[][2] = {{NULL, "24"}, {"80", NULL}, {"", "24"}, {"0", "24"}, {"80", "65536"},
                                         {"-80", "24"}, {"80x", "24"}, {" 80", "24"}, {"999999", "24"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        w = h = 7;
        CHECK_INT(cli_term_size_env(bad[i][0], bad[i][1], &w, &h), -1);
        CHECK(w == 7 && h == 7);   /* untouched */
    }
}

TEST(exec_end_checks_the_sandbox_only_after_a_kill_or_a_dropped_stream) {
    CHECK_INT(cli_exec_check_sandbox(0, -1), 1);    /* the stream dropped */
    CHECK_INT(cli_exec_check_sandbox(1, 137), 1);   /* SIGKILL: the pod's deletion, or OOM */
    CHECK_INT(cli_exec_check_sandbox(1, 143), 1);   /* SIGTERM */
    CHECK_INT(cli_exec_check_sandbox(1, 0), 0);
    CHECK_INT(cli_exec_check_sandbox(1, 1), 0);
    CHECK_INT(cli_exec_check_sandbox(1, 130), 0);
}

TEST(exit_codes) {
    CHECK_INT(cli_exit_code(0), 0);
    CHECK_INT(cli_exit_code(3), 3);
    CHECK_INT(cli_exit_code(255), 255);
    CHECK_INT(cli_exit_code(256), 255);
    CHECK_INT(cli_exit_code(-1), 1);
    CHECK_INT(CLI_EXIT_SANDBOX_STOPPED, 75);
    CHECK(CLI_EXIT_SANDBOX_STOPPED != 137 && CLI_EXIT_SANDBOX_STOPPED != 143 && CLI_EXIT_SANDBOX_STOPPED != 141 &&
          CLI_EXIT_SANDBOX_STOPPED != 1 && CLI_EXIT_SANDBOX_STOPPED != 2);
}

static const struct cli_sandbox_view RUNNING = {.phase = "Running", .reason = "PodReady", .pod = "yao-sb-a-c1",
                                                .started = "2026-01-01T00:00:00Z"};

TEST(sandbox_stopped_under_the_command) {
    static const struct {
        struct cli_sandbox_view after;
        int stopped;
        const char *why;
    } cases[] = {
        {{.phase = "Running", .reason = "PodReady", .pod = "yao-sb-a-c1", .started = "2026-01-01T00:00:00Z"}, 0, ""},
        {{.gone = 1}, 1, "was deleted while the command ran"},
        {{.deleting = 1, .phase = "Stopping", .reason = "Idle"}, 1, "was deleted while the command ran (reason: Idle)"},
        {{.deleting = 1, .phase = "Running", .reason = "PodReady", .pod = "yao-sb-a-c1"}, 1,
         "was deleted while the command ran"},
        {{.phase = "Stopping", .reason = "Paused", .paused = 1}, 1, "was stopped while the command ran (reason: Paused)"},
        {{.phase = "Stopped", .reason = "Idle"}, 1, "was stopped while the command ran (reason: Idle)"},
        {{.phase = "Stopping", .reason = "PodNotReady"}, 1, "was stopped while the command ran (reason: Stopping)"},
        {{.phase = "Running", .reason = "PodReady", .paused = 1, .pod = "yao-sb-a-c1"}, 1,
         "was stopped while the command ran (reason: Paused)"},
        {{.phase = "Pending", .reason = "Idle"}, 1, "was stopped while the command ran (reason: Idle)"},
        /* stopped and started again meanwhile: the pod started anew */
        {{.phase = "Running", .reason = "PodReady", .pod = "yao-sb-a-c1", .started = "2026-01-01T00:05:00Z"}, 1,
         "was restarted while the command ran (its pod was replaced)"},
        {{.phase = "Creating", .reason = "Creating"}, 1, "was restarted while the command ran (its pod was replaced)"},
        /* a start time not reported (yet) is no evidence */
        {{.phase = "Running", .reason = "PodReady", .pod = "yao-sb-a-c1"}, 0, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[200] = "";
        CHECK_INT(cli_sandbox_stopped(&RUNNING, &cases[i].after, why, sizeof(why)), cases[i].stopped);
        CHECK_STR(why, cases[i].why);
        if (strcmp(why, cases[i].why)) fprintf(stderr, "  case %zu\n", i);
    }
}

TEST(exec_argv_wraps_env_and_workdir_exactly) {
    const char *cmd[] = {"printf", "%s|", "a b", "it's", "&&", "\xc3\xa9"};
    const char *env[] = {"K=V", "EMPTY=", "SP=x y"};
    const char **v;
    size_t n;
    CHECK_INT(cli_exec_argv(cmd, 6, NULL, 0, NULL, &v, &n), 0);
    CHECK_INT(n, 6);
    CHECK(v[0] == cmd[0] && v[5] == cmd[5] && v[6] == NULL);
    free(v);
    CHECK_INT(cli_exec_argv(cmd, 6, env, 3, NULL, &v, &n), 0);
    CHECK_INT(n, 10);
    CHECK_STR(v[0], "env"); CHECK_STR(v[3], "SP=x y"); CHECK_STR(v[4], "printf");
    free(v);
    CHECK_INT(cli_exec_argv(cmd, 6, env, 3, "/w s", &v, &n), 0);
    CHECK_INT(n, 14);
    CHECK_STR(v[4], "sh"); CHECK_STR(v[6], "cd -- \"$0\" && exec \"$@\""); CHECK_STR(v[7], "/w s");
    CHECK_STR(v[8], "printf"); CHECK(v[14] == NULL);
    free(v);
    const char *eqcmd[] = {"A=B", "x"};
    CHECK_INT(cli_exec_argv(eqcmd, 2, env, 1, NULL, &v, &n), 0);
    CHECK_INT(n, 8);
    CHECK_STR(v[2], "sh"); CHECK_STR(v[4], "exec \"$@\""); CHECK_STR(v[5], "sh"); CHECK_STR(v[6], "A=B");
    CHECK(v[8] == NULL);
    free(v);
    const char *badenv[] = {"=x"};
    CHECK_INT(cli_exec_argv(cmd, 6, badenv, 1, NULL, &v, &n), -1);
    const char *noeq[] = {"NOEQ"};
    CHECK_INT(cli_exec_argv(cmd, 6, noeq, 1, NULL, &v, &n), -1);
    CHECK_INT(cli_exec_argv(cmd, 0, NULL, 0, NULL, &v, &n), -1);
    /* the wrapped command really runs with the exact words */
    CHECK_INT(cli_exec_argv(cmd, 6, env, 3, "/", &v, &n), 0);
    if (n == 14) {
        pid_t pid;
        int fds[2];
        CHECK_INT(pipe(fds), 0);
        if ((pid = fork()) == 0) {
            dup2(fds[1], 1);
            execvp(v[0], (char *const *)v);
            _exit(127);
        }
        close(fds[1]);
        char out[256] = "";
        ssize_t r, tot = 0;
        while ((r = read(fds[0], out + tot, sizeof(out) - 1 - (size_t)tot)) > 0) tot += r;
        out[tot] = '\0';
        close(fds[0]);
        int st;
        waitpid(pid, &st, 0);
        CHECK_STR(out, "a b|it's|&&|\xc3\xa9|");
    }
    free(v);
}
