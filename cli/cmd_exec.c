/* cli/cmd_exec.c — `exec SANDBOX -- CMD...`: wake the sandbox, run the command with our
 * streams (a raw terminal for -t), exit with its code — or 75 when the sandbox was stopped,
 * paused, deleted or restarted under it (cli_sandbox_stopped decides from a look at the
 * Sandbox after a killed command or a dropped stream).
 *
 * Known limit: `exec -t` takes the terminal size from stdin's terminal, else from
 * $COLUMNS and $LINES; a SIGWINCH is passed on within KUBE_EXEC_RESIZE_CHECK_MS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/errfmt.h"
#include "cli/cli.h"
#include "cli/cluster.h"
#include "cli/exec_decide.h"
#include "cli/session.h"
#include "kube/rest.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/sandboxview.h"

static struct termios saved_tio;
static int tio_saved;
/* Put the terminal back as exec -t found it. */
static void tty_restore(void) {
    if (tio_saved) tcsetattr(0, TCSANOW, &saved_tio);
    tio_saved = 0;
}

/* The Sandbox as the CLI sees it now, for cli_sandbox_stopped; *sb is kept for the
 * strings (caller deletes). 0, or -1 when it could not be read (then nothing is known). */
static int sandbox_view(struct cli *c, const char *name, cJSON **sb, struct cli_sandbox_view *v) {
    char path[640];
    struct kube_error err;
    memset(v, 0, sizeof(*v));
    *sb = NULL;
    cluster_sandbox_path(c, name, path, sizeof(path));
    long st = kube_get(c->kc, path, sb, &err);
    if (st == 404) {
        cJSON_Delete(*sb);
        *sb = NULL;
        v->gone = 1;
        return 0;
    }
    if (st != 200 || !*sb) {
        cJSON_Delete(*sb);
        *sb = NULL;
        return -1;
    }
    struct sbx_sandbox_view sv;
    sbx_sandbox_view_parse(*sb, &sv);
    v->reason = sv.ready.reason;
    v->deleting = sv.meta.deleting;
    v->paused = sv.paused;
    v->phase = sv.phase;
    v->pod = sv.pod_name;
    v->started = sv.started_text;
    return 0;
}

/* After an exec that was killed or lost its stream: was the sandbox stopped under it?
 * Then say so in one line and return CLI_EXIT_SANDBOX_STOPPED; else 0. */
static int stopped_under_command(struct cli *c, const char *name) {
    struct cli_sandbox_view before = {.phase = "Running", .pod = c->pod,
                                      .started = c->pod_started[0] ? c->pod_started : NULL}, after;
    cJSON *sb;
    char why[256];
    if (sandbox_view(c, name, &sb, &after) < 0) return 0;
    int stopped = cli_sandbox_stopped(&before, &after, why, sizeof(why));
    cJSON_Delete(sb);
    if (!stopped) return 0;
    fprintf(stderr, PROG ": sandbox %s %s\n", name, why);
    return CLI_EXIT_SANDBOX_STOPPED;
}

/* exec SANDBOX -- CMD...: wake, run with our streams (marking the sandbox used while the
 * command runs), exit with its code — or 75 when the sandbox was stopped under it. */
int cmd_exec(struct cli *c) {
    struct args *a = c->a;
    const char *name = a->pos[0];
    if (a->ncmd == 0) return cli_usage_error("no command given: " PROG " exec SANDBOX [flags] -- CMD...");
    int64_t timeout_ms = 0;
    if (a->timeout && qty_parse_duration(a->timeout, &timeout_ms) < 0)
        return cli_usage_error("invalid --timeout \"%s\" (a duration such as 30s, 5m)", a->timeout);
    const char **argv;
    size_t argc;
    for (size_t i = 0; i < a->nenv; i++) {
        const char *eq = strchr(a->env[i], '=');
        if (!eq || eq == a->env[i]) return cli_usage_error("-e wants NAME=VALUE, got \"%s\"", a->env[i]);
    }
    if (cli_exec_argv(a->cmdv, a->ncmd, a->env, a->nenv, a->workdir, &argv, &argc) < 0)
        return cli_fail(ERR_OOM);
    if (cluster_connect(c)) { free(argv); return 1; }
    cJSON *sb;
    if (cluster_ensure_running(c, name, &sb)) { free(argv); return 1; }
    cJSON_Delete(sb);

    int tty = a->tty && a->stdin_;
    if (tty && isatty(0)) {
        session_watch_resize();
        if (tcgetattr(0, &saved_tio) == 0) {
            struct termios raw = saved_tio;
            cfmakeraw(&raw);
            if (tcsetattr(0, TCSANOW, &raw) == 0) { tio_saved = 1; atexit(tty_restore); }
        }
    }
    struct session_io x = {.out_fd = 1, .err_fd = 2, .in_fd = 0};
    int code = -1;
    char err[700];
    int rc = session_run(c, c->pod, argv, argc, &x, a->stdin_, a->tty, (long)timeout_ms, &code, err, sizeof(err));
    tty_restore();
    free(argv);
    /* No touch now: the command has ended, and a touch would wake a sandbox stopped
     * meanwhile. A command killed, or a stream that dropped, may mean just that. */
    if (!(rc < 0 && x.broken_pipe) && cli_exec_check_sandbox(rc == 0, code)) {
        int stopped = stopped_under_command(c, name);
        if (stopped) return stopped;
    }
    if (rc < 0) {
        if (x.broken_pipe) return 141;  /* like a command killed by SIGPIPE */
        return cli_fail("exec in sandbox \"%s\": %s", name, err);
    }
    return cli_exit_code(code);
}

