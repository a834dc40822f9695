/* tests/unit/test_cli_args.c — the CLI's command line (cli/args.c) for the kubectl-shaped
 * flags: --flag value and --flag=value (a value holding '=' such as -o jsonpath=... or
 * --for=condition=Ready=False kept whole), short flags alone, clustered (-fw) and with an
 * attached value (-ojson, -n ns), booleans refusing a value, unknown flags and missing
 * values as usage errors (exit 2), positionals after "--", exec's command left untouched. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cli/cli.h"

static int dummy(struct cli *c) { (void)c; return 0; }

static const struct opt logs_opts[] = {GLOBAL_OPTS, {"follow", 'f', 0, O_FOLLOW}, {"tail", 0, 1, O_TAIL},
    {"output", 'o', 1, O_OUTPUT}, {"watch", 'w', 0, O_WATCH}, {"for", 0, 1, O_FOR}, {"timeout", 0, 1, O_TIMEOUT},
    {"class", 0, 1, O_CLASS}, {"memory", 0, 1, O_MEMORY}, {"cpu", 0, 1, O_CPU}, {"workspace-size", 0, 1, O_WORKSPACE_SIZE},
    {NULL, 0, 0, 0}};
static const struct command cmd = {"logs", dummy, logs_opts, "Usage: test\n", 0, 8, 0};
static const struct opt exec_opts[] = {GLOBAL_OPTS, {"stdin", 'i', 0, O_STDIN}, {"tty", 't', 0, O_TTY}, {NULL, 0, 0, 0}};
static const struct command exec_cmd = {"exec", dummy, exec_opts, "Usage: test\n", 1, 1, 1};

/* Parse a NULL-terminated argv into *a (fresh). */
static int parse(const struct command *c, struct args *a, char **argv) {
    static const char *pos[32], *env[32], *groups[32];
    int argc = 0;
    while (argv[argc]) argc++;
    memset(a, 0, sizeof(*a));
    a->pos = pos;
    a->env = env;
    a->as_groups = groups;
    cli_current = c;
    return cli_parse_args(argc, argv, c, a);
}

TEST(values_with_equals_are_kept_whole) {
    struct args a;
    char *v1[] = {"sb", "--for=condition=Ready=False", "-o", "jsonpath={.a[?(@.b==\"c\")]}", "--timeout=5s", NULL};
    CHECK_INT(parse(&cmd, &a, v1), 0);
    CHECK_STR(a.for_, "condition=Ready=False");
    CHECK_STR(a.output, "jsonpath={.a[?(@.b==\"c\")]}");
    CHECK_STR(a.timeout, "5s");
    CHECK_INT(a.npos, 1);
    CHECK_STR(a.pos[0], "sb");
    char *v2[] = {"-o=jsonpath={.x}", "--tail", "20", "--class", "small", "--memory=512Mi", "--cpu", "500m",
                  "--workspace-size", "2Gi", NULL};
    CHECK_INT(parse(&cmd, &a, v2), 0);
    CHECK_STR(a.output, "jsonpath={.x}");   /* -o=VALUE as kubectl (pflag) reads it */
    CHECK_STR(a.tail, "20");
    CHECK_STR(a.class_, "small");
    CHECK_STR(a.memory, "512Mi");
    CHECK_STR(a.cpu, "500m");
    CHECK_STR(a.workspace_size, "2Gi");
}

TEST(short_flags_alone_clustered_and_attached) {
    struct args a;
    char *v[] = {"-fw", "-ojson", "-n", "ns1", "x", NULL};
    CHECK_INT(parse(&cmd, &a, v), 0);
    CHECK_INT(a.follow, 1);
    CHECK_INT(a.watch, 1);
    CHECK_STR(a.output, "json");
    CHECK_STR(a.namespace_, "ns1");
    CHECK_STR(a.pos[0], "x");
    char *v2[] = {"--follow", "--watch", "--", "-not-a-flag", NULL};
    CHECK_INT(parse(&cmd, &a, v2), 0);
    CHECK_INT(a.follow + a.watch, 2);
    CHECK_INT(a.npos, 1);
    CHECK_STR(a.pos[0], "-not-a-flag");
}

TEST(bad_flags_are_usage_errors) {
    struct args a;
    char *v1[] = {"--tail", NULL};
    CHECK_INT(parse(&cmd, &a, v1), 2);
    char *v2[] = {"--follow=yes", NULL};
    CHECK_INT(parse(&cmd, &a, v2), 2);
    char *v3[] = {"--nope", NULL};
    CHECK_INT(parse(&cmd, &a, v3), 2);
    char *v4[] = {"-z", NULL};
    CHECK_INT(parse(&cmd, &a, v4), 2);
    char *v5[] = {"-fo", NULL};   /* -o at the end of a cluster needs its value */
    CHECK_INT(parse(&cmd, &a, v5), 2);
}

TEST(exec_command_is_left_untouched) {
    struct args a;
    char *v[] = {"-i", "sb", "ls", "-la", "--tail", NULL};
    CHECK_INT(parse(&exec_cmd, &a, v), 0);
    CHECK_INT(a.stdin_, 1);
    CHECK_STR(a.pos[0], "sb");
    CHECK_INT(a.ncmd, 3);
    CHECK_STR(a.cmdv[0], "ls");
    CHECK_STR(a.cmdv[2], "--tail");
}
