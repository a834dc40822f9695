/* cli/exec_decide.c — the pure decisions of `exec` (see exec_decide.h): the -w/-e command
 * wrapper, the terminal size from $COLUMNS/$LINES, a sandbox stopped under a command, and
 * the exit code. */
#include "cli/exec_decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- exec -w / -e --------------------------------------------------------------------- */

/* The wrapped argv (see header). */
int cli_exec_argv(const char *const *cmd, size_t ncmd, const char *const *env, size_t nenv,
                  const char *workdir, const char ***out, size_t *nout) {
    *out = NULL;
    *nout = 0;
    if (ncmd == 0) return -1;
    for (size_t i = 0; i < nenv; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i]) return -1;
    }
    int via_sh = !workdir && nenv && strchr(cmd[0], '=');
    size_t total = (nenv ? 1 + nenv : 0) + (workdir ? 4 : 0) + (via_sh ? 4 : 0) + ncmd;
    const char **v = malloc((total + 1) * sizeof(*v));
    if (!v) return -1;
    size_t k = 0;
    if (nenv) {
        v[k++] = "env";
        for (size_t i = 0; i < nenv; i++) v[k++] = env[i];
    }
    if (workdir) {
        v[k++] = "sh";
        v[k++] = "-c";
        v[k++] = "cd -- \"$0\" && exec \"$@\"";
        v[k++] = workdir;
    } else if (via_sh) {
        v[k++] = "sh";
        v[k++] = "-c";
        v[k++] = "exec \"$@\"";
        v[k++] = "sh";
    }
    for (size_t i = 0; i < ncmd; i++) v[k++] = cmd[i];
    v[k] = NULL;
    *out = v;
    *nout = k;
    return 0;
}

/* ---- the end of a command ----------------------------------------------------------- */

/* A whole number 1..65535, or 0. */
static unsigned small_count(const char *s) {
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 5) return 0;
    unsigned long v = strtoul(s, NULL, 10);
    return v >= 1 && v <= 65535 ? (unsigned)v : 0;
}

int cli_term_size_env(const char *columns, const char *lines, unsigned *width, unsigned *height) {
    unsigned w = small_count(columns), h = small_count(lines);
    if (!w || !h) return -1;
    *width = w;
    *height = h;
    return 0;
}

/* Two optional strings differ (both set and unequal, or only one set). */
static int differs(const char *a, const char *b) {
    if (!a || !*a) return b && *b;
    return !b || strcmp(a, b) != 0;
}

static int is(const char *s, const char *v) { return s && !strcmp(s, v); }

int cli_sandbox_stopped(const struct cli_sandbox_view *before, const struct cli_sandbox_view *after,
                        char *why, size_t whylen) {
    const char *r = after->reason;
    int known = is(r, "Idle") || is(r, "Paused");
    if (after->gone) {
        snprintf(why, whylen, "was deleted while the command ran");
        return 1;
    }
    if (after->deleting) {
        if (known) snprintf(why, whylen, "was deleted while the command ran (reason: %s)", r);
        else snprintf(why, whylen, "was deleted while the command ran");
        return 1;
    }
    if (is(after->phase, "Stopping") || is(after->phase, "Stopped") || after->paused || known) {
        const char *what = known ? r : after->paused ? "Paused" : after->phase;
        snprintf(why, whylen, "was stopped while the command ran (reason: %s)", what);
        return 1;
    }
    if (differs(before->pod, after->pod) || (before->started && after->started && differs(before->started, after->started))) {
        snprintf(why, whylen, "was restarted while the command ran (its pod was replaced)");
        return 1;
    }
    return 0;
}

int cli_exec_check_sandbox(int session_ok, int exit_code) {
    return !session_ok || exit_code == 137 || exit_code == 143;
}

int cli_exit_code(int exit_code) {
    return exit_code < 0 ? 1 : exit_code > 255 ? 255 : exit_code;
}
