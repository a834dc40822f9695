/* tests/unit/test_cli_exec.c — exec's small decisions in the CLI, without a cluster: the
 * terminal size from $COLUMNS/$LINES, when the end of an exec calls for a look at the
 * sandbox, whether the sandbox was stopped, paused, deleted or restarted under the command
 * (and the line that says so), and the exit codes (75 for a stopped sandbox, never the 137 of a killed command). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cli/files.h"

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
