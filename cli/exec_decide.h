/* cli/exec_decide.h — the pure decisions of `exec`: the command it runs for -w/-e, the
 * terminal size from the environment, whether the sandbox was stopped under a command,
 * and the exit code. The session and its I/O are cmd_exec.c and session.c. */
#ifndef YAO_CLI_EXEC_DECIDE_H
#define YAO_CLI_EXEC_DECIDE_H

#include <stddef.h>

/* ---- exec -w / -e ---------------------------------------------------------------------- */

/* argv for `exec [-e K=V]... [-w DIR] -- CMD...`, passing every CMD word exactly:
 *   no env, no dir:  CMD...
 *   env only:        env K=V... CMD...   (through `sh -c 'exec "$@"' sh` when CMD[0]
 *                                          contains '=', which env would take as a K=V)
 *   dir:             [env K=V...] sh -c 'cd -- "$0" && exec "$@"' DIR CMD...
 * The array is malloc'd, its strings borrowed from the inputs or static (free only the
 * array). 0, or -1 on ENOMEM or when ncmd is 0 or an env entry is not NAME=VALUE. */
int cli_exec_argv(const char *const *cmd, size_t ncmd, const char *const *env, size_t nenv,
                  const char *workdir, const char ***out, size_t *nout);

/* ---- the end of a command ----------------------------------------------------------- */

/* exits with this when the sandbox was stopped, paused, deleted or restarted while the
 * command ran (EX_TEMPFAIL of sysexits.h: running it again starts the sandbox again).
 * Not 137 or 143, which a command killed by SIGKILL or SIGTERM (an OOM kill) gives. */
#define CLI_EXIT_SANDBOX_STOPPED 75

/* A terminal size from $COLUMNS and $LINES (either may be NULL): 0 with both when each is
 * a whole number in 1..65535, else -1. For `exec -t` when stdin is not a terminal. */
int cli_term_size_env(const char *columns, const char *lines, unsigned *width, unsigned *height);

/* What the CLI knows of a Sandbox before and after a command ran. Strings may be NULL. */
struct cli_sandbox_view {
    int gone;              /* 404 */
    int deleting;          /* metadata.deletionTimestamp */
    int paused;            /* spec.paused */
    const char *phase;     /* status.phase */
    const char *reason;    /* the Ready condition's reason */
    const char *pod;       /* status.podName */
    const char *started;   /* status.startedAt: when its pod started */
};
/* Whether the sandbox was stopped under the command: 1 with why ("was stopped while the
 * command ran (reason: Idle)", "was deleted while the command ran", "was restarted while
 * the command ran (its pod was replaced)") — it is gone or being deleted; its phase is
 * Stopping or Stopped, it is paused, or its Ready reason is Idle or Paused; or its pod's
 * name or start time changed — else 0. */
int cli_sandbox_stopped(const struct cli_sandbox_view *before, const struct cli_sandbox_view *after,
                        char *why, size_t whylen);
/* Whether an exec's end calls for a look at the sandbox: the session failed (the stream
 * dropped) or the command died of SIGKILL or SIGTERM (137, 143). */
int cli_exec_check_sandbox(int session_ok, int exit_code);
/* The CLI's exit code for a command's: 0..255 as is, above 255 255, unknown (< 0) 1. */
int cli_exit_code(int exit_code);

#endif
