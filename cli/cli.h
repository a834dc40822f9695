/* cli/cli.h — what every part of the yao-sandbox CLI shares: the parsed command line
 * (struct args, the option and command tables' types), the state of one run (struct cli),
 * the one-line error helpers and the commands themselves (cmd_*.c), which cli/main.c puts
 * in its table. Not here: output formats (output.h), the Sandbox through the API server
 * (cluster.h), running a command in the sandbox (session.h), the pure file and exec
 * helpers (paths.h, tar.h, listing.h, remote.h, exec_decide.h).
 *
 * Exit codes: 0 success; 2 usage errors; 1 runtime errors; exec exits with the command's
 * code, or 75 (CLI_EXIT_SANDBOX_STOPPED) when the sandbox was stopped, paused, deleted or
 * restarted while the command ran. Every error is one line on stderr starting
 * "yao-sandbox: ". */
#ifndef YAO_CLI_CLI_H
#define YAO_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>

#define PROG "yao-sandbox"
#define DEFAULT_ROOT "/workspace"

/* ---- command line --------------------------------------------------------------------- */

enum opt_id {
    O_HELP = 1, O_VERSION, O_KUBECONFIG, O_CONTEXT, O_NAMESPACE, O_ROOT, O_START_TIMEOUT,
    O_STDIN, O_TTY, O_WORKDIR, O_ENV, O_TIMEOUT, O_OUTPUT, O_USER, O_PHASE, O_LIFECYCLE,
    O_ALL_NS, O_WAIT, O_PARENTS, O_RECURSIVE, O_FORCE, O_LONG, O_CHAT, O_IMAGE, O_IDLE_TIMEOUT,
    O_ADDRESS, O_AS, O_AS_GROUP, O_NO_HEADERS, O_SELECTOR, O_FOLLOW, O_TAIL, O_FOR, O_WATCH, O_CLASS,
    O_MEMORY, O_CPU, O_WORKSPACE_SIZE,
};

struct opt { const char *lng; char shrt; int has_arg; enum opt_id id; };

#define GLOBAL_OPTS                                                      \
    {"help", 'h', 0, O_HELP}, {"kubeconfig", 0, 1, O_KUBECONFIG},       \
    {"context", 0, 1, O_CONTEXT}, {"namespace", 'n', 1, O_NAMESPACE},  \
    {"root", 0, 1, O_ROOT}, {"start-timeout", 0, 1, O_START_TIMEOUT},   \
    {"as", 0, 1, O_AS}, {"as-group", 0, 1, O_AS_GROUP}


struct args {
    const char *cmd;
    const char *kubeconfig, *context, *namespace_, *root, *start_timeout;
    int help, stdin_, tty, all_ns, wait, parents, recursive, force, long_, no_headers, follow, watch;
    const char *selector;      /* -l: a label selector */
    const char *tail;          /* logs --tail N */
    const char *for_;          /* wait --for */
    const char *class_, *memory, *cpu, *workspace_size;   /* create */
    const char *workdir, *timeout, *output, *user, *phase, *lifecycle, *chat, *image, *idle_timeout, *address;
    const char **env;
    size_t nenv;
    const char *as;            /* --as: impersonate this user */
    const char **as_groups;    /* --as-group, repeatable */
    size_t nas_groups;
    const char **pos;          /* positionals */
    size_t npos;
    const char *const *cmdv;   /* exec: the command */
    size_t ncmd;
};

struct cli {
    struct args *a;
    struct kube_client *kc;
    char ns[256];
    int64_t start_timeout_ms;
    /* Of the running Sandbox (cluster_ensure_running): how often a session marks it used, and its
     * pod as the command starts (to tell whether it was stopped under the command). */
    int64_t touch_interval_ms;
    char pod[256], pod_started[64];
};

struct command {
    const char *name;
    int (*run)(struct cli *c);
    const struct opt *opts;
    const char *usage;         /* first line: the synopsis */
    size_t min_pos, max_pos;
    int needs_sandbox;         /* first positional is a Sandbox name */
};


/* The command being run (NULL before the command word is known): usage errors name it. */
extern const struct command *cli_current;

/* One-line error on stderr ("yao-sandbox: ..."; line breaks become spaces); returns 1
 * (runtime error). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One-line usage error with a pointer to the help; returns 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Find an option by long name (name may carry "=value": nlen bounds it), or NULL. */
const struct opt *cli_opt_long(const struct opt *t, const char *name, size_t nlen);
/* Find an option by its short letter, or NULL. */
const struct opt *cli_opt_short(const struct opt *t, char c);
/* Parse argv[0..argc) against a command's table into a. exec stops at "--" or at the first
 * positional after the Sandbox name: the rest is the command, passed untouched. 0, or 2
 * (usage error printed). */
int cli_parse_args(int argc, char **argv, const struct command *cmd, struct args *a);

/* The commands: each returns the CLI's exit code. */
int cmd_exec(struct cli *c);     /* cmd_exec.c */
int cmd_create(struct cli *c);   /* cmd_sandbox.c */
int cmd_get(struct cli *c);
int cmd_list(struct cli *c);
int cmd_start(struct cli *c);
int cmd_stop(struct cli *c);
int cmd_touch(struct cli *c);
int cmd_delete(struct cli *c);
int cmd_read(struct cli *c);     /* cmd_files.c */
int cmd_write(struct cli *c);
int cmd_ls(struct cli *c);
int cmd_stat(struct cli *c);
int cmd_mkdir(struct cli *c);
int cmd_rm(struct cli *c);
int cmd_cp(struct cli *c);       /* cmd_cp.c */
int cmd_port_forward(struct cli *c); /* cmd_portforward.c */
int cmd_wait(struct cli *c);     /* cmd_observe.c */
int cmd_logs(struct cli *c);
int cmd_describe(struct cli *c);
int cmd_completion(struct cli *c); /* main.c: it needs the command table */

#endif
