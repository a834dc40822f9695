/* cli/args.c — the CLI's command line: flags looked up in a command's table and stored in
 * struct args, and the one-line error and usage-error messages every command prints.
 * The tables and the help texts themselves are in cli/main.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/errfmt.h"
#include "cli/cli.h"

const struct command *cli_current;

/* One-line error on stderr; returns 1 (runtime error). */
int cli_fail(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    errfmt_v(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++) if (*p == '\n' || *p == '\r') *p = ' ';
    fprintf(stderr, PROG ": %s\n", msg);
    return 1;
}

/* One-line usage error with a pointer to the help; returns 2. */
int cli_usage_error(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    errfmt_v(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (cli_current)
        fprintf(stderr, PROG ": %s: %s (see '" PROG " %s --help')\n", cli_current->name, msg, cli_current->name);
    else
        fprintf(stderr, PROG ": %s (see '" PROG " --help')\n", msg);
    return 2;
}

/* Find an option by long name (name may carry "=value": nlen bounds it). */
const struct opt *cli_opt_long(const struct opt *t, const char *name, size_t nlen) {
    for (; t->lng; t++)
        if (strlen(t->lng) == nlen && !strncmp(t->lng, name, nlen)) return t;
    return NULL;
}

/* Find an option by its short letter. */
const struct opt *cli_opt_short(const struct opt *t, char c) {
    for (; t->lng; t++)
        if (t->shrt && t->shrt == c) return t;
    return NULL;
}

/* Store one option's value. Returns 0 or 2 (usage error). */
static int set_opt(struct args *a, const struct opt *o, const char *val) {
    switch (o->id) {
    case O_HELP: a->help = 1; break;
    case O_VERSION: break;
    case O_KUBECONFIG: a->kubeconfig = val; break;
    case O_CONTEXT: a->context = val; break;
    case O_NAMESPACE: a->namespace_ = val; break;
    case O_ROOT: a->root = val; break;
    case O_START_TIMEOUT: a->start_timeout = val; break;
    case O_STDIN: a->stdin_ = 1; break;
    case O_TTY: a->tty = 1; break;
    case O_WORKDIR: a->workdir = val; break;
    case O_ENV: a->env[a->nenv++] = val; break;
    case O_AS: a->as = val; break;
    case O_AS_GROUP: a->as_groups[a->nas_groups++] = val; break;
    case O_TIMEOUT: a->timeout = val; break;
    case O_OUTPUT: a->output = val; break;
    case O_USER: a->user = val; break;
    case O_PHASE: a->phase = val; break;
    case O_LIFECYCLE: a->lifecycle = val; break;
    case O_ALL_NS: a->all_ns = 1; break;
    case O_NO_HEADERS: a->no_headers = 1; break;
    case O_SELECTOR: a->selector = val; break;
    case O_WAIT: a->wait = 1; break;
    case O_PARENTS: a->parents = 1; break;
    case O_RECURSIVE: a->recursive = 1; break;
    case O_FORCE: a->force = 1; break;
    case O_LONG: a->long_ = 1; break;
    case O_CHAT: a->chat = val; break;
    case O_IMAGE: a->image = val; break;
    case O_IDLE_TIMEOUT: a->idle_timeout = val; break;
    case O_ADDRESS: a->address = val; break;
    case O_FOLLOW: a->follow = 1; break;
    case O_TAIL: a->tail = val; break;
    case O_FOR: a->for_ = val; break;
    case O_WATCH: a->watch = 1; break;
    case O_CLASS: a->class_ = val; break;
    case O_MEMORY: a->memory = val; break;
    case O_CPU: a->cpu = val; break;
    case O_WORKSPACE_SIZE: a->workspace_size = val; break;
    }
    return 0;
}

/* Parse argv[0..argc) against a command's table. exec stops at "--" or at the first
 * positional after the Sandbox name: the rest is the command, passed untouched. */
int cli_parse_args(int argc, char **argv, const struct command *cmd, struct args *a) {
    int is_exec = !strcmp(cmd->name, "exec");
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (is_exec && a->npos >= 1 && (arg[0] != '-' || !arg[1])) {
            a->cmdv = (const char *const *)argv + i;
            a->ncmd = (size_t)(argc - i);
            return 0;
        }
        if (!strcmp(arg, "--")) {
            if (is_exec) {
                a->cmdv = (const char *const *)argv + i + 1;
                a->ncmd = (size_t)(argc - i - 1);
                return 0;
            }
            for (i++; i < argc; i++) a->pos[a->npos++] = argv[i];
            return 0;
        }
        if (arg[0] != '-' || !arg[1]) { a->pos[a->npos++] = arg; continue; }
        if (arg[1] == '-') {
            const char *name = arg + 2, *eq = strchr(name, '=');
            size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
            const struct opt *o = cli_opt_long(cmd->opts, name, nlen);
            if (!o) return cli_usage_error("unknown flag --%.*s", (int)nlen, name);
            const char *val = NULL;
            if (o->has_arg) {
                if (eq) val = eq + 1;
                else if (i + 1 < argc) val = argv[++i];
                else return cli_usage_error("flag --%s needs a value", o->lng);
            } else if (eq) {
                return cli_usage_error("flag --%s takes no value", o->lng);
            }
            set_opt(a, o, val);
            continue;
        }
        for (const char *p = arg + 1; *p; p++) {
            const struct opt *o = cli_opt_short(cmd->opts, *p);
            if (!o) return cli_usage_error("unknown flag -%c", *p);
            const char *val = NULL;
            if (o->has_arg) {
                if (p[1]) val = p[1] == '=' ? p + 2 : p + 1;   /* -o=json as -ojson (as pflag) */
                else if (i + 1 < argc) val = argv[++i];
                else return cli_usage_error("flag -%c needs a value", *p);
                set_opt(a, o, val);
                break;
            }
            set_opt(a, o, NULL);
        }
    }
    return 0;
}

