/* cli/main.c — yao-sandbox, the command-line client of Sandboxes
 * (sandbox.yaoapps.com/v1alpha1) against any kubeconfig: exec in a sandbox (waking it when
 * stopped), get/list, start/stop/touch, and file helpers that mirror the Yao sandbox
 * Manager (read, write, ls, stat, mkdir, rm, cp in and out) — all of them through exec in
 * the sandbox's container, as kubectl cp does.
 *
 * Owns: the command line (flags, help, exit codes), the Kubernetes calls of each command,
 * and the plumbing between exec's streams and local files. Not here: the exec transport
 * (kube/exec.c), tar writing/extraction and path safety (cli/files.c).
 *
 * Exit codes: 0 success; 2 usage errors; 1 runtime errors; exec exits with the command's
 * code, or 75 (CLI_EXIT_SANDBOX_STOPPED) when the sandbox was stopped, paused, deleted or
 * restarted while the command ran. Every error is one line on stderr starting
 * "yao-sandbox: ".
 *
 * While a command runs in a sandbox (exec and every file helper) a thread marks the
 * sandbox used every third of its idle timeout (1 s to 60 s), so an open session counts
 * as use; nothing marks it after the command ended (that would wake a sandbox stopped
 * meanwhile).
 *
 * Known limits:
 *  - The file helpers need sh, cat, mkdir, rm, stat, readlink (ls, stat) and tar (cp) in
 *    the image: GNU coreutils or busybox both do (see CLI_LIST_SCRIPT).
 *  - `exec -t` takes the terminal size from stdin's terminal, else from $COLUMNS and
 *    $LINES; a SIGWINCH is passed on within KUBE_EXEC_RESIZE_CHECK_MS. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "kube/config.h"
#include "kube/dynbuf.h"
#include "kube/exec.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "cli/files.h"
#include "sandbox/lifecycle.h"
#include "sandbox/naming.h"
#include "sandbox/quantity.h"
#include "sandbox/spec.h"

#define PROG "yao-sandbox"
#define POLL_MS 200
#define DEFAULT_START_TIMEOUT_MS (120 * 1000)
#define CAPTURE_MAX (64u << 20)      /* a captured listing (ls) */
#define STDERR_KEEP (64u << 10)      /* captured stderr of a file helper */
#define DEFAULT_ROOT "/workspace"

/* ---- command line --------------------------------------------------------------------- */

enum opt_id {
    O_HELP = 1, O_VERSION, O_KUBECONFIG, O_CONTEXT, O_NAMESPACE, O_ROOT, O_START_TIMEOUT,
    O_STDIN, O_TTY, O_WORKDIR, O_ENV, O_TIMEOUT, O_OUTPUT, O_USER, O_PHASE, O_LIFECYCLE,
    O_ALL_NS, O_WAIT, O_PARENTS, O_RECURSIVE, O_FORCE, O_LONG, O_CHAT, O_IMAGE, O_IDLE_TIMEOUT,
};

struct opt { const char *lng; char shrt; int has_arg; enum opt_id id; };

#define GLOBAL_OPTS                                                      \
    {"help", 'h', 0, O_HELP}, {"kubeconfig", 0, 1, O_KUBECONFIG},       \
    {"context", 0, 1, O_CONTEXT}, {"namespace", 'n', 1, O_NAMESPACE},  \
    {"root", 0, 1, O_ROOT}, {"start-timeout", 0, 1, O_START_TIMEOUT}

static const struct opt global_opts[] = {GLOBAL_OPTS, {"version", 0, 0, O_VERSION}, {NULL, 0, 0, 0}};

struct args {
    const char *cmd;
    const char *kubeconfig, *context, *namespace_, *root, *start_timeout;
    int help, stdin_, tty, all_ns, wait, parents, recursive, force, long_;
    const char *workdir, *timeout, *output, *user, *phase, *lifecycle, *chat, *image, *idle_timeout;
    const char **env;
    size_t nenv;
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
    /* Of the running Sandbox (ensure_running): how often a session marks it used, and its
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

static const struct command *current;

/* One-line error on stderr; returns 1 (runtime error). */
__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++) if (*p == '\n' || *p == '\r') *p = ' ';
    fprintf(stderr, PROG ": %s\n", msg);
    return 1;
}

/* One-line usage error with a pointer to the help; returns 2. */
__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (current)
        fprintf(stderr, PROG ": %s: %s (see '" PROG " %s --help')\n", current->name, msg, current->name);
    else
        fprintf(stderr, PROG ": %s (see '" PROG " --help')\n", msg);
    return 2;
}

static const char global_help[] =
    "Global flags:\n"
    "  --kubeconfig PATH    kubeconfig file(s), ':'-separated (default: $KUBECONFIG, in-cluster,\n"
    "                       ~/.kube/config)\n"
    "  --context NAME       kubeconfig context (default: current-context)\n"
    "  -n, --namespace NS   namespace of the Sandbox (default: the context's namespace, else\n"
    "                       \"default\")\n"
    "  --root DIR           base for relative sandbox paths (default: $YAO_SANDBOX_ROOT, else the\n"
    "                       Sandbox's spec.workspace.mountPath, /workspace); absolute paths are\n"
    "                       used as given\n"
    "  --start-timeout DUR  how long to wait for a stopped sandbox to run (default 120s)\n"
    "  -h, --help           show help\n";

static const char main_help[] =
    "Usage: " PROG " [global flags] COMMAND [flags] [args]\n"
    "\n"
    "Run commands in yao-sandbox Sandboxes (" SBX_API_VERSION ") and move files in and\n"
    "out of them. A stopped or paused sandbox is started on use; every use marks it used\n"
    "(annotation " SBX_ANN_LAST_USED "), and so does a command while it runs.\n"
    "\n"
    "Commands:\n"
    "  exec SANDBOX [-i] [-t] [-w DIR] [-e K=V]... -- CMD...  run a command\n"
    "  create --user U --chat C [--lifecycle L] [--wait]      get or create the Sandbox of\n"
    "                                                         (U, C); prints its name\n"
    "  get SANDBOX [-o json|yaml|wide]                       show one Sandbox\n"
    "  list [--user U] [--chat C] [--phase P] [--lifecycle L] [-A]\n"
    "                                                         list Sandboxes\n"
    "  start SANDBOX [--wait]                                 clear spec.paused\n"
    "  stop SANDBOX [--wait]                                  set spec.paused\n"
    "  touch SANDBOX                                          mark the sandbox used now\n"
    "  read SANDBOX PATH                                      print a file\n"
    "  write SANDBOX PATH [-p]                                write stdin to a file\n"
    "  ls SANDBOX [PATH] [-l] [-o json]                       list a directory\n"
    "  stat SANDBOX PATH [-o json]                            describe a file\n"
    "  mkdir SANDBOX PATH [-p]                                create a directory\n"
    "  rm SANDBOX PATH [-r] [-f]                              remove a file or tree\n"
    "  cp SRC DST                                             copy files in or out; one side\n"
    "                                                         is SANDBOX:PATH\n"
    "\n"
    "Run '" PROG " COMMAND --help' for a command's flags.\n"
    "\n";

/* Find an option by long name (name may carry "=value": nlen bounds it). */
static const struct opt *find_long(const struct opt *t, const char *name, size_t nlen) {
    for (; t->lng; t++)
        if (strlen(t->lng) == nlen && !strncmp(t->lng, name, nlen)) return t;
    return NULL;
}

/* Find an option by its short letter. */
static const struct opt *find_short(const struct opt *t, char c) {
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
    case O_TIMEOUT: a->timeout = val; break;
    case O_OUTPUT: a->output = val; break;
    case O_USER: a->user = val; break;
    case O_PHASE: a->phase = val; break;
    case O_LIFECYCLE: a->lifecycle = val; break;
    case O_ALL_NS: a->all_ns = 1; break;
    case O_WAIT: a->wait = 1; break;
    case O_PARENTS: a->parents = 1; break;
    case O_RECURSIVE: a->recursive = 1; break;
    case O_FORCE: a->force = 1; break;
    case O_LONG: a->long_ = 1; break;
    case O_CHAT: a->chat = val; break;
    case O_IMAGE: a->image = val; break;
    case O_IDLE_TIMEOUT: a->idle_timeout = val; break;
    }
    return 0;
}

/* Parse argv[0..argc) against a command's table. exec stops at "--" or at the first
 * positional after the Sandbox name: the rest is the command, passed untouched. */
static int parse_args(int argc, char **argv, const struct command *cmd, struct args *a) {
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
            const struct opt *o = find_long(cmd->opts, name, nlen);
            if (!o) return usage_error("unknown flag --%.*s", (int)nlen, name);
            const char *val = NULL;
            if (o->has_arg) {
                if (eq) val = eq + 1;
                else if (i + 1 < argc) val = argv[++i];
                else return usage_error("flag --%s needs a value", o->lng);
            } else if (eq) {
                return usage_error("flag --%s takes no value", o->lng);
            }
            set_opt(a, o, val);
            continue;
        }
        for (const char *p = arg + 1; *p; p++) {
            const struct opt *o = find_short(cmd->opts, *p);
            if (!o) return usage_error("unknown flag -%c", *p);
            const char *val = NULL;
            if (o->has_arg) {
                if (p[1]) val = p + 1;
                else if (i + 1 < argc) val = argv[++i];
                else return usage_error("flag -%c needs a value", *p);
                set_opt(a, o, val);
                break;
            }
            set_opt(a, o, NULL);
        }
    }
    return 0;
}

/* ---- output helpers ------------------------------------------------------------------- */

/* Human age like kubectl: 45s, 3m20s, 25m, 3h20m, 20h, 3d4h, 30d, 2y. */
static void human_age(int64_t ms, char *out, size_t n) {
    long long s = ms < 0 ? 0 : ms / 1000;
    if (s < 120) snprintf(out, n, "%llds", s);
    else if (s < 600) {
        if (s % 60) snprintf(out, n, "%lldm%llds", s / 60, s % 60);
        else snprintf(out, n, "%lldm", s / 60);
    } else if (s < 3 * 3600) snprintf(out, n, "%lldm", s / 60);
    else if (s < 8 * 3600) {
        if ((s / 60) % 60) snprintf(out, n, "%lldh%lldm", s / 3600, (s / 60) % 60);
        else snprintf(out, n, "%lldh", s / 3600);
    } else if (s < 48 * 3600) snprintf(out, n, "%lldh", s / 3600);
    else if (s < 8 * 86400) {
        if ((s / 3600) % 24) snprintf(out, n, "%lldd%lldh", s / 86400, (s / 3600) % 24);
        else snprintf(out, n, "%lldd", s / 86400);
    } else if (s < 2LL * 365 * 86400) snprintf(out, n, "%lldd", s / 86400);
    else snprintf(out, n, "%lldy", s / (365LL * 86400));
}

/* Age of an RFC 3339 timestamp at path, or "<unknown>". */
static void age_at(const cJSON *obj, const char *path, char *out, size_t n) {
    int64_t t;
    const char *s = kj_str(obj, path);
    if (!s || kj_time_parse(s, &t) < 0) { snprintf(out, n, "<unknown>"); return; }
    human_age(kj_now_ms() - t, out, n);
}

/* A JSON string literal (quoted, escaped) for s. */
static void json_quote(struct dynbuf *b, const char *s) {
    cJSON *tmp = cJSON_CreateString(s);
    char *q = tmp ? cJSON_PrintUnformatted(tmp) : NULL;
    dynbuf_append_str(b, q ? q : "\"\"");
    free(q);
    cJSON_Delete(tmp);
}

/* Indented JSON, four spaces a level, "key": value — as kubectl prints it. */
static void json_node(struct dynbuf *b, const cJSON *v, int ind) {
    int obj = cJSON_IsObject(v);
    if ((obj || cJSON_IsArray(v)) && v->child) {
        dynbuf_append_str(b, obj ? "{\n" : "[\n");
        for (const cJSON *it = v->child; it; it = it->next) {
            dynbuf_printf(b, "%*s", ind + 4, "");
            if (obj) { json_quote(b, it->string); dynbuf_append_str(b, ": "); }
            json_node(b, it, ind + 4);
            dynbuf_append_str(b, it->next ? ",\n" : "\n");
        }
        dynbuf_printf(b, "%*s%c", ind, "", obj ? '}' : ']');
    } else if (obj || cJSON_IsArray(v)) {
        dynbuf_append_str(b, obj ? "{}" : "[]");
    } else if (cJSON_IsString(v)) {
        json_quote(b, v->valuestring);
    } else {
        char *s = cJSON_PrintUnformatted(v);
        dynbuf_append_str(b, s ? s : "null");
        free(s);
    }
}

/* Print a JSON value to stdout. 0, or 1 when stdout fails. */
static int print_json(const cJSON *v) {
    struct dynbuf b;
    dynbuf_init(&b, SIZE_MAX);
    json_node(&b, v, 0);
    dynbuf_append(&b, "\n", 1);
    int rc = b.data && cli_write_all(1, b.data, b.len) == 0 ? 0 : fail("writing output: %s", strerror(errno));
    dynbuf_free(&b);
    return rc;
}

/* True when a string can be written as a plain YAML scalar. */
static int yaml_plain(const char *s) {
    static const char *const special[] = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"};
    if (!*s || strchr("-?:,[]{}#&*!|>'\"%@` .+0123456789", s[0])) return 0;
    for (size_t i = 0; i < sizeof(special) / sizeof(*special); i++)
        if (!strcasecmp(s, special[i])) return 0;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || strchr("-_./", c))) return 0;
    }
    return 1;
}

/* A YAML scalar for a string: plain when unambiguous, else double-quoted. */
static void yaml_string(struct dynbuf *b, const char *s) {
    if (yaml_plain(s)) dynbuf_append_str(b, s);
    else json_quote(b, s);   /* JSON escapes are valid in a YAML double-quoted scalar */
}

static void yaml_node(struct dynbuf *b, const cJSON *v, int ind, int inline_first);

/* A value after "key:" or "- ". */
static void yaml_value(struct dynbuf *b, const cJSON *v, int ind, int after_dash) {
    if (cJSON_IsObject(v) && v->child) {
        if (after_dash) yaml_node(b, v, ind + 2, 1);
        else { dynbuf_append(b, "\n", 1); yaml_node(b, v, ind + 2, 0); }
    } else if (cJSON_IsArray(v) && v->child) {
        dynbuf_append(b, "\n", 1);
        yaml_node(b, v, after_dash ? ind + 2 : ind, 0);
    } else {
        if (!after_dash) dynbuf_append(b, " ", 1);
        if (cJSON_IsObject(v)) dynbuf_append_str(b, "{}");
        else if (cJSON_IsArray(v)) dynbuf_append_str(b, "[]");
        else if (cJSON_IsString(v)) yaml_string(b, v->valuestring);
        else {
            char *s = cJSON_PrintUnformatted(v);
            dynbuf_append_str(b, s ? s : "null");
            free(s);
        }
        dynbuf_append(b, "\n", 1);
    }
}

/* Block-style YAML of an object or array at indentation ind. */
static void yaml_node(struct dynbuf *b, const cJSON *v, int ind, int inline_first) {
    const cJSON *it;
    int first = 1;
    cJSON_ArrayForEach(it, v) {
        if (!(first && inline_first)) dynbuf_printf(b, "%*s", ind, "");
        first = 0;
        if (cJSON_IsArray(v)) {
            dynbuf_append_str(b, "- ");
            yaml_value(b, it, ind, 1);
        } else {
            yaml_string(b, it->string);
            dynbuf_append(b, ":", 1);
            yaml_value(b, it, ind, 0);
        }
    }
}

/* Print a JSON value as block-style YAML to stdout. */
static int print_yaml(const cJSON *v) {
    struct dynbuf b;
    dynbuf_init(&b, SIZE_MAX);
    yaml_node(&b, v, 0, 0);
    int rc = cli_write_all(1, b.data ? b.data : "", b.len) == 0 ? 0 : 1;
    dynbuf_free(&b);
    return rc;
}

/* ---- Kubernetes ----------------------------------------------------------------------- */

/* Sandbox names are DNS subdomains: checked before they go into a URL. */
static int valid_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 253) return 0;
    for (const char *p = s; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '.')) return 0;
    return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

/* API path of a Sandbox in the current namespace. */
static void sandbox_path(const struct cli *c, const char *name, char *out, size_t n) {
    snprintf(out, n, "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL "/%s", c->ns, name);
}

/* Load the kubeconfig and make the client. 0 or 1 (error printed). */
static int connect_cluster(struct cli *c) {
    struct kube_config cfg;
    char err[KUBE_ERR_MAX];
    struct args *a = c->a;
    int rc = a->context ? kube_config_load(a->kubeconfig, a->context, &cfg, err, sizeof(err))
                        : kube_config_auto(a->kubeconfig, &cfg, err, sizeof(err));
    if (rc < 0) return fail("%s", err);
    const char *ns = a->namespace_ ? a->namespace_ : cfg.namespace_ && cfg.namespace_[0] ? cfg.namespace_ : "default";
    snprintf(c->ns, sizeof(c->ns), "%s", ns);
    c->kc = kube_client_new(&cfg, PROG "/" YAO_VERSION, err, sizeof(err));
    if (!c->kc) {
        kube_config_free(&cfg);
        return fail("%s", err);
    }
    if (!valid_name(c->ns)) return usage_error("invalid namespace \"%s\"", c->ns);
    return 0;
}

/* GET the Sandbox. 0 with *out, or 1 (error printed). */
static int get_sandbox(struct cli *c, const char *name, cJSON **out) {
    char path[640], err[KUBE_ERR_MAX];
    sandbox_path(c, name, path, sizeof(path));
    *out = NULL;
    long st = kube_get(c->kc, path, out, err, sizeof(err));
    if (st == 200 && *out) return 0;
    cJSON_Delete(*out);
    *out = NULL;
    if (st == 404) return fail("sandbox \"%s\" not found in namespace \"%s\"", name, c->ns);
    return fail("getting sandbox \"%s\": %s", name, err);
}

/* Merge-patch the Sandbox: last-used-at = now (touch), and spec.paused when paused >= 0. */
static int patch_sandbox(struct cli *c, const char *name, int touch, int paused, int quiet) {
    char path[640], err[KUBE_ERR_MAX], now[40];
    cJSON *p = cJSON_CreateObject();
    if (!p) return fail("out of memory");
    if (touch) {
        kj_time_format(kj_now_ms(), now, sizeof(now));
        cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "metadata"), "annotations");
        cJSON_AddStringToObject(ann, SBX_ANN_LAST_USED, now);
    }
    if (paused >= 0) cJSON_AddBoolToObject(cJSON_AddObjectToObject(p, "spec"), "paused", paused);
    sandbox_path(c, name, path, sizeof(path));
    long st = kube_merge_patch(c->kc, path, p, NULL, err, sizeof(err));
    cJSON_Delete(p);
    if (st >= 200 && st < 300) return 0;
    if (quiet) return 1;
    if (st == 404) return fail("sandbox \"%s\" not found in namespace \"%s\"", name, c->ns);
    return fail("updating sandbox \"%s\": %s", name, err);
}

/* status.phase, "" when not set yet. */
static const char *phase_of(const cJSON *sb) {
    const char *p = kj_str(sb, "status.phase");
    return p ? p : "";
}

/* The Ready condition's reason and message (either may be NULL). */
static void ready_of(const cJSON *sb, const char **status, const char **reason, const char **message) {
    const cJSON *conds = kj_path(sb, "status.conditions"), *cond;
    *status = *reason = *message = NULL;
    cJSON_ArrayForEach(cond, conds) {
        const char *t = kj_str(cond, "type");
        if (t && !strcmp(t, "Ready")) {
            *status = kj_str(cond, "status");
            *reason = kj_str(cond, "reason");
            *message = kj_str(cond, "message");
        }
    }
}

/* A duration for messages: "120s", "1500ms". */
static void format_duration(int64_t ms, char *out, size_t n) {
    if (ms % 1000) snprintf(out, n, "%lldms", (long long)ms);
    else snprintf(out, n, "%llds", (long long)(ms / 1000));
}

enum want { WANT_RUNNING, WANT_STOPPED };

/* Poll the Sandbox every POLL_MS until it is Running with a pod (or Stopped). 0 with *out
 * (caller deletes), or 1 (error printed). */
static int wait_for(struct cli *c, const char *name, enum want want, cJSON **out) {
    int64_t deadline = clock_mono_ms() + c->start_timeout_ms;
    int said = 0;
    *out = NULL;
    for (;;) {
        cJSON *sb;
        if (get_sandbox(c, name, &sb)) return 1;
        const char *phase = phase_of(sb), *pod = kj_str(sb, "status.podName");
        const char *rs, *reason, *msg;
        ready_of(sb, &rs, &reason, &msg);
        int deleting = kj_path(sb, "metadata.deletionTimestamp") != NULL;
        if (want == WANT_RUNNING && !strcmp(phase, "Running") && pod && *pod && !deleting &&
            !kj_bool(sb, "spec.paused", 0)) {
            *out = sb;
            return 0;
        }
        if (want == WANT_STOPPED && !strcmp(phase, "Stopped")) { *out = sb; return 0; }
        if (deleting) { cJSON_Delete(sb); return fail("sandbox \"%s\" is being deleted", name); }
        if (want == WANT_RUNNING && reason && (!strcmp(reason, "InvalidSpec") || !strcmp(reason, "NameConflict"))) {
            int rc = fail("sandbox \"%s\" cannot start: %s: %s", name, reason, msg ? msg : "");
            cJSON_Delete(sb);
            return rc;
        }
        if (want == WANT_RUNNING && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
            int rc = fail("sandbox \"%s\" has finished (phase %s)%s%s", name, phase, msg ? ": " : "", msg ? msg : "");
            cJSON_Delete(sb);
            return rc;
        }
        if (clock_mono_ms() >= deadline) {
            char d[32];
            format_duration(c->start_timeout_ms, d, sizeof(d));
            int rc = fail("timed out after %s waiting for sandbox \"%s\" to be %s (phase %s%s%s%s%s)", d, name,
                          want == WANT_RUNNING ? "Running" : "Stopped", *phase ? phase : "none",
                          reason ? ", " : "", reason ? reason : "", msg ? ": " : "", msg ? msg : "");
            cJSON_Delete(sb);
            return rc;
        }
        if (!said && isatty(2)) {
            fprintf(stderr, PROG ": waiting for sandbox \"%s\" to be %s (phase %s)...\n", name,
                    want == WANT_RUNNING ? "Running" : "Stopped", *phase ? phase : "none");
            said = 1;
        }
        cJSON_Delete(sb);
        struct timespec ts = {0, POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Remember what a session needs of the running Sandbox: the touch interval from its
 * spec.idleTimeout, its pod and the pod's start. */
static void note_running(struct cli *c, const cJSON *sb) {
    int64_t idle = 0;
    const char *it = kj_str(sb, "spec.idleTimeout");
    if (!it || qty_parse_duration(it, &idle) < 0) idle = 0;
    c->touch_interval_ms = cli_touch_interval_ms(idle);
    const char *pod = kj_str(sb, "status.podName"), *started = kj_str(sb, "status.startedAt");
    snprintf(c->pod, sizeof(c->pod), "%s", pod ? pod : "");
    snprintf(c->pod_started, sizeof(c->pod_started), "%s", started ? started : "");
}

/* The sandbox, running: unpause it if paused, mark it used (which also wakes an idle
 * long-running sandbox), and wait until it runs. 0 with *out, or 1. */
static int ensure_running(struct cli *c, const char *name, cJSON **out) {
    cJSON *sb;
    *out = NULL;
    if (get_sandbox(c, name, &sb)) return 1;
    if (kj_path(sb, "metadata.deletionTimestamp")) {
        cJSON_Delete(sb);
        return fail("sandbox \"%s\" is being deleted", name);
    }
    const char *phase = phase_of(sb), *pod = kj_str(sb, "status.podName");
    int paused = kj_bool(sb, "spec.paused", 0);
    int running = !strcmp(phase, "Running") && pod && *pod && !paused;
    if (patch_sandbox(c, name, 1, paused ? 0 : -1, 0)) { cJSON_Delete(sb); return 1; }
    if (running) {
        note_running(c, sb);
        *out = sb;
        return 0;
    }
    cJSON_Delete(sb);
    if (wait_for(c, name, WANT_RUNNING, out)) return 1;
    note_running(c, *out);
    return 0;
}

/* ---- exec plumbing -------------------------------------------------------------------- */

struct xio {
    int out_fd;                  /* stdout → this fd, or */
    struct dynbuf *out_buf;      /* captured, or */
    struct cli_untar *untar;     /* extracted */
    int err_fd;                  /* stderr → this fd, or */
    struct dynbuf *err_buf;      /* captured (first STDERR_KEEP bytes) */
    int in_fd;                   /* stdin from this fd (read by kube_exec's own thread, so
                                    output flows while it is idle: a terminal, a quiet
                                    pipe), or */
    struct cli_tar_src *tar;     /* from a tar source (reads regular files: never waits) */
    int broken_pipe;             /* our stdout/stderr reader went away */
    char why[600];               /* why a callback aborted */
};

/* exec stdout: extract, capture or stream it. Non-zero aborts the session. */
static int x_out(void *ud, const char *p, size_t n) {
    struct xio *x = ud;
    if (x->untar) {
        if (cli_untar_feed(x->untar, p, n) < 0) {
            snprintf(x->why, sizeof(x->why), "%s", cli_untar_error(x->untar));
            return 1;
        }
        return 0;
    }
    if (x->out_buf) {
        if (dynbuf_append(x->out_buf, p, n) < 0) {
            snprintf(x->why, sizeof(x->why), "output larger than %u MiB", CAPTURE_MAX >> 20);
            return 1;
        }
        return 0;
    }
    if (x->out_fd >= 0 && cli_write_all(x->out_fd, p, n) < 0) {
        if (errno == EPIPE) x->broken_pipe = 1;
        else snprintf(x->why, sizeof(x->why), "writing output: %s", strerror(errno));
        return 1;
    }
    return 0;
}

/* exec stderr: capture (bounded) or stream it. */
static int x_err(void *ud, const char *p, size_t n) {
    struct xio *x = ud;
    if (x->err_buf) {
        size_t room = x->err_buf->len < STDERR_KEEP ? STDERR_KEEP - x->err_buf->len : 0;
        dynbuf_append(x->err_buf, p, n < room ? n : room);
        return 0;
    }
    if (x->err_fd >= 0 && cli_write_all(x->err_fd, p, n) < 0 && errno == EPIPE) {
        x->broken_pipe = 1;
        return 1;
    }
    return 0;
}

/* exec stdin from a tar source: the next bytes of the archive. */
static ssize_t x_in(void *ud, char *buf, size_t cap) {
    struct xio *x = ud;
    ssize_t r = cli_tar_src_read(x->tar, buf, cap);
    if (r < 0) snprintf(x->why, sizeof(x->why), "%s", cli_tar_src_error(x->tar));
    return r;
}

/* Marks the sandbox used every touch_interval_ms while a session runs (see the top), on
 * a thread of its own so that a slow API server never holds up the session's output. */
struct toucher {
    struct cli *c;
    const char *name;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, started;
};

static void *toucher_main(void *arg) {
    struct toucher *t = arg;
    struct timespec next;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        clock_mono_timespec(clock_mono_ms() + t->c->touch_interval_ms, &next);
        while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &next) != ETIMEDOUT) {}
        if (t->stop) break;
        pthread_mutex_unlock(&t->mu);
        patch_sandbox(t->c, t->name, 1, -1, 1);   /* best effort: the next one comes anyway */
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Start touching (no-op when the interval is unknown: no running Sandbox was seen). */
static void toucher_start(struct toucher *t, struct cli *c, const char *name) {
    memset(t, 0, sizeof(*t));
    t->c = c;
    t->name = name;
    if (c->touch_interval_ms <= 0) return;
    pthread_mutex_init(&t->mu, NULL);
    clock_mono_cond_init(&t->cv);
    t->started = pthread_create(&t->thread, NULL, toucher_main, t) == 0;
    if (!t->started) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
    }
}

/* Stop touching; a touch in flight is waited for, none starts after this returns. */
static void toucher_stop(struct toucher *t) {
    if (!t->started) return;
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    t->started = 0;
}

/* Set by SIGWINCH (exec -t with a terminal on stdin); kube_exec looks at it. */
static volatile sig_atomic_t winch;

static void on_winch(int sig) {
    (void)sig;
    winch = 1;
}

/* The terminal size for exec -t: stdin's terminal, else $COLUMNS x $LINES. */
static int term_size(void *ud, unsigned *width, unsigned *height) {
    struct winsize ws;
    (void)ud;
    if (isatty(0)) {
        if (ioctl(0, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row) return -1;
        *width = ws.ws_col;
        *height = ws.ws_row;
        return 0;
    }
    return cli_term_size_env(getenv("COLUMNS"), getenv("LINES"), width, height);
}

/* Run argv in the sandbox container of pod, marking the sandbox used while it runs.
 * 0 with *code, or -1 with err. */
static int run_in_pod(struct cli *c, const char *pod, const char *const *argv, size_t argc, struct xio *x,
                      int want_stdin, int tty, long timeout_ms, int *code, char *err, size_t errlen) {
    struct kube_exec_options o = {
        .namespace_ = c->ns, .pod = pod, .container = SBX_CONTAINER_NAME,
        .argv = argv, .argc = argc,
        .on_stdout = x_out, .on_stderr = x_err,
        .read_stdin = want_stdin && x->tar ? x_in : NULL,
        .use_stdin_fd = want_stdin && !x->tar, .stdin_fd = x->in_fd,
        .ud = x, .tty = tty, .timeout_ms = timeout_ms,
        .term_size = tty ? term_size : NULL, .resized = tty && isatty(0) ? &winch : NULL,
    };
    struct kube_exec_result r;
    struct toucher t;
    toucher_start(&t, c, c->a->pos[0]);
    int rc = kube_exec(c->kc, &o, &r);
    toucher_stop(&t);
    if (rc < 0) {
        snprintf(err, errlen, "%s", x->why[0] ? x->why : r.err);
        return -1;
    }
    *code = r.exit_code;
    return 0;
}

/* The remote command's complaint as one line (see cli_remote_message). */
static void remote_message(const struct dynbuf *b, char *out, size_t n) {
    cli_remote_message(b->data ? b->data : "", b->len, out, n);
}

/* Resolve a sandbox path against --root / $YAO_SANDBOX_ROOT / the mountPath. Never starts
 * with '-' (so it is never taken for an option). Caller frees. */
static char *sandbox_file(const struct cli *c, const cJSON *sb, const char *path) {
    const char *root = c->a->root ? c->a->root : getenv("YAO_SANDBOX_ROOT");
    if (!root || !*root) root = kj_str(sb, "spec.workspace.mountPath");
    if (!root || !*root) root = DEFAULT_ROOT;
    char *p = cli_path_join(root, path);
    if (p && p[0] == '-') {
        char *q = cli_path_join(".", p);
        free(p);
        p = q;
    }
    return p;
}

/* A file helper: run argv in the running sandbox with stderr captured; stdout to x.
 * Returns the command's exit code (0), or prints the error and returns 1. */
static int file_op(struct cli *c, const char *pod, const char *const *argv, size_t argc, struct xio *x,
                   int want_stdin, int *code) {
    char err[700];
    if (run_in_pod(c, pod, argv, argc, x, want_stdin, 0, 0, code, err, sizeof(err)) < 0) {
        if (x->broken_pipe) return 1;
        return fail("%s: %s", current->name, err);
    }
    return 0;
}

/* Report a non-zero exit of a file helper. */
static int remote_failed(const struct dynbuf *errb, int code) {
    char msg[1024];
    remote_message(errb, msg, sizeof(msg));
    if (msg[0]) return fail("%s: %s", current->name, msg);
    return fail("%s: the command failed in the sandbox (exit code %d)", current->name, code);
}

/* ---- exec ----------------------------------------------------------------------------- */

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
    char path[640], err[KUBE_ERR_MAX];
    memset(v, 0, sizeof(*v));
    *sb = NULL;
    sandbox_path(c, name, path, sizeof(path));
    long st = kube_get(c->kc, path, sb, err, sizeof(err));
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
    const char *rs, *msg;
    ready_of(*sb, &rs, &v->reason, &msg);
    v->deleting = kj_path(*sb, "metadata.deletionTimestamp") != NULL;
    v->paused = kj_bool(*sb, "spec.paused", 0);
    v->phase = kj_str(*sb, "status.phase");
    v->pod = kj_str(*sb, "status.podName");
    v->started = kj_str(*sb, "status.startedAt");
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
static int cmd_exec(struct cli *c) {
    struct args *a = c->a;
    const char *name = a->pos[0];
    if (a->ncmd == 0) return usage_error("no command given: " PROG " exec SANDBOX [flags] -- CMD...");
    int64_t timeout_ms = 0;
    if (a->timeout && qty_parse_duration(a->timeout, &timeout_ms) < 0)
        return usage_error("invalid --timeout \"%s\" (a duration such as 30s, 5m)", a->timeout);
    const char **argv;
    size_t argc;
    for (size_t i = 0; i < a->nenv; i++) {
        const char *eq = strchr(a->env[i], '=');
        if (!eq || eq == a->env[i]) return usage_error("-e wants NAME=VALUE, got \"%s\"", a->env[i]);
    }
    if (cli_exec_argv(a->cmdv, a->ncmd, a->env, a->nenv, a->workdir, &argv, &argc) < 0)
        return fail("out of memory");
    if (connect_cluster(c)) { free(argv); return 1; }
    cJSON *sb;
    if (ensure_running(c, name, &sb)) { free(argv); return 1; }
    cJSON_Delete(sb);

    int tty = a->tty && a->stdin_;
    if (tty && isatty(0)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_winch;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGWINCH, &sa, NULL);
        if (tcgetattr(0, &saved_tio) == 0) {
            struct termios raw = saved_tio;
            cfmakeraw(&raw);
            if (tcsetattr(0, TCSANOW, &raw) == 0) { tio_saved = 1; atexit(tty_restore); }
        }
    }
    struct xio x = {.out_fd = 1, .err_fd = 2, .in_fd = 0};
    int code = -1;
    char err[700];
    int rc = run_in_pod(c, c->pod, argv, argc, &x, a->stdin_, a->tty, (long)timeout_ms, &code, err, sizeof(err));
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
        return fail("exec in sandbox \"%s\": %s", name, err);
    }
    return cli_exit_code(code);
}

/* ---- create --------------------------------------------------------------------------- */

/* Poll until the Sandbox called name with uid is gone (deleted, or replaced by one with
 * another uid), at most --start-timeout. 0, or 1 (error printed). */
static int wait_gone(struct cli *c, const char *name, const char *uid) {
    int64_t deadline = clock_mono_ms() + c->start_timeout_ms;
    char path[640], err[KUBE_ERR_MAX];
    sandbox_path(c, name, path, sizeof(path));
    for (;;) {
        cJSON *sb = NULL;
        long st = kube_get(c->kc, path, &sb, err, sizeof(err));
        const char *now_uid = st == 200 ? kj_str(sb, "metadata.uid") : NULL;
        int gone = st == 404 || (st == 200 && (!now_uid || strcmp(now_uid, uid)));
        cJSON_Delete(sb);
        if (gone) return 0;
        if (st != 200) return fail("getting sandbox \"%s\": %s", name, err);
        if (clock_mono_ms() >= deadline) {
            char d[32];
            format_duration(c->start_timeout_ms, d, sizeof(d));
            return fail("timed out after %s waiting for sandbox \"%s\", being deleted, to be gone", d, name);
        }
        struct timespec ts = {0, POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The new Sandbox of (user, chat) under its canonical name, with the spec flags given. */
static cJSON *new_sandbox(const struct args *a, const char *name) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", SBX_API_VERSION);
    cJSON_AddStringToObject(o, "kind", SBX_KIND);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "metadata"), "name", name);
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(spec, "userID", a->user);
    cJSON_AddStringToObject(spec, "chatID", a->chat);
    if (a->lifecycle) cJSON_AddStringToObject(spec, "lifecycle", a->lifecycle);
    if (a->image) cJSON_AddStringToObject(spec, "image", a->image);
    if (a->idle_timeout) cJSON_AddStringToObject(spec, "idleTimeout", a->idle_timeout);
    return o;
}

/* Get-or-create, as the Go client's GetOrCreate: the Sandbox has the canonical name of
 * (user, chat) (the name of its pod, sbx_name_pod), so of two concurrent calls the API
 * server lets one create it and the other gets 409 and reads it. GET first; 404 → POST;
 * 409 → GET again. A Sandbox of that name of another pair is a NameConflict naming both
 * pairs; one being deleted (an idle session removed by the controller) is waited out and
 * created anew. An existing Sandbox is kept as it is, whatever the flags say. 0 with *out
 * and *created, or 1 (error printed). */
static int get_or_create(struct cli *c, const char *name, cJSON **out, int *created) {
    const struct args *a = c->a;
    char path[640], err[KUBE_ERR_MAX];
    *out = NULL;
    *created = 0;
    for (int attempt = 0;; attempt++) {
        if (attempt == 10)   /* never seen: a GET 404 and a POST 409 ten times in a row */
            return fail("sandbox \"%s\": created and deleted under us ten times in a row", name);
        cJSON *sb = NULL;
        sandbox_path(c, name, path, sizeof(path));
        long st = kube_get(c->kc, path, &sb, err, sizeof(err));
        if (st == 200 && sb) {
            const char *u = kj_str(sb, "spec.userID"), *ch = kj_str(sb, "spec.chatID");
            if (!u || !ch || strcmp(u, a->user) || strcmp(ch, a->chat)) {
                int rc = fail(SBX_REASON_CONFLICT ": sandbox \"%s\" in namespace \"%s\" belongs to (user \"%s\", "
                              "chat \"%s\"), not to (user \"%s\", chat \"%s\")", name, c->ns, u ? u : "",
                              ch ? ch : "", a->user, a->chat);
                cJSON_Delete(sb);
                return rc;
            }
            if (!kj_path(sb, "metadata.deletionTimestamp")) { *out = sb; return 0; }
            char uid[128];
            snprintf(uid, sizeof(uid), "%s", kj_str(sb, "metadata.uid") ? kj_str(sb, "metadata.uid") : "");
            cJSON_Delete(sb);
            if (isatty(2)) fprintf(stderr, PROG ": sandbox \"%s\" is being deleted; waiting for it to be gone...\n", name);
            if (wait_gone(c, name, uid)) return 1;
            continue;
        }
        cJSON_Delete(sb);
        if (st != 404) return fail("getting sandbox \"%s\": %s", name, err);
        cJSON *obj = new_sandbox(a, name);
        snprintf(path, sizeof(path), "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL, c->ns);
        st = obj ? kube_create(c->kc, path, obj, out, err, sizeof(err)) : -1;
        cJSON_Delete(obj);
        if (!obj) return fail("out of memory");
        if (st >= 200 && st < 300 && *out) { *created = 1; return 0; }
        cJSON_Delete(*out);
        *out = NULL;
        if (st != 409) return fail("creating sandbox \"%s\": %s", name, err);
        /* someone else created it between our GET and POST: read it (loop) */
    }
}

/* create --user U --chat C [--lifecycle L] [--image I] [--idle-timeout D] [--wait]: the
 * Sandbox of (U, C), made when there is none; its name on stdout (before any wait, so a
 * caller knows it even when the wait fails). */
static int cmd_create(struct cli *c) {
    const struct args *a = c->a;
    if (!a->user || !*a->user) return usage_error("--user is required");
    if (!a->chat || !*a->chat) return usage_error("--chat is required");
    if (strlen(a->user) > 128 || strlen(a->chat) > 128) return usage_error("--user and --chat take at most 128 characters");
    enum sbx_lifecycle l;
    if (a->lifecycle && sbx_lifecycle_parse(a->lifecycle, &l) < 0)
        return usage_error("unknown lifecycle \"%s\" (one-shot, session, long-running, persistent)", a->lifecycle);
    int64_t idle;
    if (a->idle_timeout && (qty_parse_duration(a->idle_timeout, &idle) < 0 || idle <= 0))
        return usage_error("invalid --idle-timeout \"%s\" (a duration such as 90s, 30m, 2h)", a->idle_timeout);
    if (a->image && !*a->image) return usage_error("--image is empty");
    char name[SBX_NAME_MAX + 1];
    if (sbx_name_pod(a->user, a->chat, name, sizeof(name)) < 0) return fail("naming the sandbox: %s", strerror(errno));
    if (connect_cluster(c)) return 1;
    cJSON *sb;
    int created;
    if (get_or_create(c, name, &sb, &created)) return 1;
    int paused = kj_bool(sb, "spec.paused", 0), stopped = !strcmp(phase_of(sb), "Stopped");
    cJSON_Delete(sb);
    if (isatty(2)) fprintf(stderr, PROG ": sandbox \"%s\" %s\n", name, created ? "created" : "exists");
    printf("%s\n", name);
    if (fflush(stdout) != 0) return fail("writing output: %s", strerror(errno));
    if (!a->wait) return 0;
    if (paused || stopped)   /* create leaves a stopped one as it is: it would never run */
        return fail("sandbox \"%s\" is %s; start it with '" PROG " -n %s start %s --wait'", name,
                    paused ? "paused" : "stopped", c->ns, name);
    if (wait_for(c, name, WANT_RUNNING, &sb)) return 1;
    cJSON_Delete(sb);
    return 0;
}

/* ---- get / list ----------------------------------------------------------------------- */

/* "-" for a missing value in tables and summaries. */
static const char *or_dash(const char *s) { return s && *s ? s : "-"; }

/* When the sandbox was last used: the newer of status.lastUsedAt and the annotation.
 * 0 with *ms and *text, or -1. */
static int last_used(const cJSON *sb, int64_t *ms, const char **text) {
    const char *a = kj_str(sb, "status.lastUsedAt"), *b = kj_map_get(sb, "metadata.annotations", SBX_ANN_LAST_USED);
    int64_t ta = 0, tb = 0;
    int ha = a && kj_time_parse(a, &ta) == 0, hb = b && kj_time_parse(b, &tb) == 0;
    if (!ha && !hb) return -1;
    if (ha && (!hb || ta >= tb)) { *ms = ta; *text = a; } else { *ms = tb; *text = b; }
    return 0;
}

/* The readable `get` view (wide adds spec and status details). */
static int print_summary(const cJSON *sb, int wide) {
    const char *rs, *reason, *msg;
    ready_of(sb, &rs, &reason, &msg);
    char age[32], lu[96] = "-";
    age_at(sb, "metadata.creationTimestamp", age, sizeof(age));
    const char *last;
    int64_t t;
    if (last_used(sb, &t, &last) == 0) {
        char ago[32];
        human_age(kj_now_ms() - t, ago, sizeof(ago));
        snprintf(lu, sizeof(lu), "%s (%s ago)", last, ago);
    }
    printf("Name:         %s\n", or_dash(kj_str(sb, "metadata.name")));
    printf("Namespace:    %s\n", or_dash(kj_str(sb, "metadata.namespace")));
    printf("User:         %s\n", or_dash(kj_str(sb, "spec.userID")));
    printf("Chat:         %s\n", or_dash(kj_str(sb, "spec.chatID")));
    printf("Lifecycle:    %s\n", or_dash(kj_str(sb, "spec.lifecycle")));
    printf("Paused:       %s\n", kj_bool(sb, "spec.paused", 0) ? "true" : "false");
    printf("Phase:        %s\n", or_dash(kj_str(sb, "status.phase")));
    printf("Pod:          %s\n", or_dash(kj_str(sb, "status.podName")));
    printf("Pod IP:       %s\n", or_dash(kj_str(sb, "status.podIP")));
    printf("Node:         %s\n", or_dash(kj_str(sb, "status.nodeName")));
    printf("Ready:        %s%s%s%s\n", or_dash(rs), reason ? " (" : "", reason ? reason : "", reason ? ")" : "");
    if (msg && *msg) printf("Message:      %s\n", msg);
    printf("Last used:    %s\n", lu);
    printf("Age:          %s\n", age);
    if (wide) {
        const char *mount = kj_str(sb, "spec.workspace.mountPath");
        printf("Image:        %s\n", or_dash(kj_str(sb, "spec.image")));
        printf("Idle timeout: %s\n", or_dash(kj_str(sb, "spec.idleTimeout")));
        printf("Memory:       %s\n", or_dash(kj_str(sb, "spec.resources.memory")));
        printf("CPU:          %s\n", or_dash(kj_str(sb, "spec.resources.cpu")));
        printf("Workspace:    %s (mounted at %s)\n", or_dash(kj_str(sb, "status.workspaceClaim")),
               mount ? mount : DEFAULT_ROOT);
        printf("Started:      %s\n", or_dash(kj_str(sb, "status.startedAt")));
        printf("Stopped:      %s\n", or_dash(kj_str(sb, "status.stoppedAt")));
        const cJSON *run = kj_path(sb, "status.run");
        if (run) {
            printf("Run:          exit code %lld, started %s, finished %s\n", (long long)kj_int(run, "exitCode", -1),
                   or_dash(kj_str(run, "startedAt")), or_dash(kj_str(run, "finishedAt")));
        }
        const cJSON *conds = kj_path(sb, "status.conditions"), *cond;
        if (conds && conds->child) printf("Conditions:\n");
        cJSON_ArrayForEach(cond, conds) {
            printf("  %-10s %-6s %-18s %s\n", or_dash(kj_str(cond, "type")), or_dash(kj_str(cond, "status")),
                   or_dash(kj_str(cond, "reason")), kj_str(cond, "message") ? kj_str(cond, "message") : "");
        }
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Check -o against the formats a command accepts. */
static int check_output(const char *o, const char *allowed) {
    if (!o) return 0;
    char list[64];
    snprintf(list, sizeof(list), "%s", allowed);
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, o)) return 0;
    return usage_error("unknown output format \"%s\" (one of %s)", o, allowed);
}

/* get SANDBOX [-o json|yaml|wide] */
static int cmd_get(struct cli *c) {
    if (check_output(c->a->output, "json,yaml,wide")) return 2;
    if (connect_cluster(c)) return 1;
    cJSON *sb;
    if (get_sandbox(c, c->a->pos[0], &sb)) return 1;
    const char *o = c->a->output;
    int rc = !o ? print_summary(sb, 0) : !strcmp(o, "json") ? print_json(sb)
           : !strcmp(o, "yaml") ? print_yaml(sb) : print_summary(sb, 1);
    cJSON_Delete(sb);
    return rc;
}

/* Whether a Sandbox passes the list filters. User and chat are selected by the API server
 * (field selector); they are checked here again all the same. */
static int list_match(const struct args *a, const cJSON *sb) {
    const char *u = kj_str(sb, "spec.userID"), *ch = kj_str(sb, "spec.chatID"), *l = kj_str(sb, "spec.lifecycle");
    if (a->user && (!u || strcmp(u, a->user))) return 0;
    if (a->chat && (!ch || strcmp(ch, a->chat))) return 0;
    if (a->phase && strcasecmp(phase_of(sb), a->phase)) return 0;
    if (a->lifecycle && (!l || strcmp(l, a->lifecycle))) return 0;
    return 1;
}

struct table { char **cells; size_t ncols, nrows, cap; };

/* Append a row of ncols cells (copied). */
static void table_add(struct table *t, const char *const *row) {
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 32;
        t->cells = realloc(t->cells, t->cap * t->ncols * sizeof(char *));
        if (!t->cells) { fail("out of memory"); exit(1); }
    }
    for (size_t i = 0; i < t->ncols; i++) t->cells[t->nrows * t->ncols + i] = strdup(row[i] ? row[i] : "");
    t->nrows++;
}

/* Print the table with aligned columns and release it. */
static void table_print_free(struct table *t) {
    size_t w[16] = {0};
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t i = 0; i < t->ncols; i++) {
            size_t n = strlen(t->cells[r * t->ncols + i]);
            if (n > w[i]) w[i] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t i = 0; i < t->ncols; i++) {
            const char *s = t->cells[r * t->ncols + i];
            if (i + 1 < t->ncols) printf("%-*s   ", (int)w[i], s);
            else printf("%s\n", s);
            free(t->cells[r * t->ncols + i]);
        }
    }
    free(t->cells);
}

/* Append "field=value" to a field selector, the value escaped as the API server reads it
 * ('\\', ',' and '=' after a backslash). 0, or -1 when out is too small. */
static int selector_add(char *out, size_t n, const char *field, const char *value) {
    size_t k = strlen(out);
    int w = snprintf(out + k, n - k, "%s%s=", k ? "," : "", field);
    if (w < 0 || (size_t)w >= n - k) return -1;
    k += (size_t)w;
    for (const char *p = value; *p; p++) {
        if (k + 3 > n) return -1;
        if (*p == '\\' || *p == ',' || *p == '=') out[k++] = '\\';
        out[k++] = *p;
    }
    out[k] = '\0';
    return 0;
}

/* list: every page of Sandboxes; --user and --chat through the server-side field selector
 * on the CRD's selectable fields spec.userID and spec.chatID, --phase and --lifecycle
 * filtered here. */
static int cmd_list(struct cli *c) {
    struct args *a = c->a;
    if (check_output(a->output, "json,yaml,wide")) return 2;
    if (a->lifecycle) {
        enum sbx_lifecycle l;
        if (sbx_lifecycle_parse(a->lifecycle, &l) < 0)
            return usage_error("unknown lifecycle \"%s\" (one-shot, session, long-running, persistent)", a->lifecycle);
    }
    char fsel[1200] = "";
    if ((a->user && selector_add(fsel, sizeof(fsel), "spec.userID", a->user) < 0) ||
        (a->chat && selector_add(fsel, sizeof(fsel), "spec.chatID", a->chat) < 0))
        return usage_error("--user or --chat too long");
    if (connect_cluster(c)) return 1;
    cJSON *items = cJSON_CreateArray();
    char cont[1024] = "";
    int rc = 0;
    do {
        char path[4096], err[KUBE_ERR_MAX];
        if (a->all_ns) snprintf(path, sizeof(path), "/apis/" SBX_API_VERSION "/" SBX_PLURAL);
        else snprintf(path, sizeof(path), "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL, c->ns);
        kube_path_add_query(path, sizeof(path), "limit", "500");
        if (fsel[0] && kube_path_add_query(path, sizeof(path), "fieldSelector", fsel) < 0) { rc = fail("field selector too long"); break; }
        if (cont[0] && kube_path_add_query(path, sizeof(path), "continue", cont) < 0) { rc = fail("continue token too long"); break; }
        cJSON *list = NULL;
        long st = kube_get(c->kc, path, &list, err, sizeof(err));
        if (st != 200 || !list) {
            cJSON_Delete(list);
            rc = fail("listing sandboxes%s: %s", st == 400 && fsel[0] ? " by spec.userID/spec.chatID (the CRD's "
                      "selectableFields need Kubernetes 1.32)" : "", err);
            break;
        }
        cJSON *its = cJSON_DetachItemFromObjectCaseSensitive(list, "items"), *it;
        while (its && (it = cJSON_DetachItemViaPointer(its, its->child)))
            if (list_match(a, it)) cJSON_AddItemToArray(items, it); else cJSON_Delete(it);
        cJSON_Delete(its);
        const char *next = kj_str(list, "metadata.continue");
        snprintf(cont, sizeof(cont), "%s", next ? next : "");
        cJSON_Delete(list);
    } while (cont[0]);
    if (rc) { cJSON_Delete(items); return rc; }

    if (a->output && (!strcmp(a->output, "json") || !strcmp(a->output, "yaml"))) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddStringToObject(l, "apiVersion", "v1");
        cJSON_AddStringToObject(l, "kind", "List");
        cJSON_AddItemToObject(l, "items", items);
        rc = !strcmp(a->output, "json") ? print_json(l) : print_yaml(l);
        cJSON_Delete(l);
        return rc;
    }
    int wide = a->output != NULL;
    if (!items->child) {
        cJSON_Delete(items);
        if (a->all_ns) fprintf(stderr, "No sandboxes found.\n");
        else fprintf(stderr, "No sandboxes found in namespace %s.\n", c->ns);
        return 0;
    }
    struct table t = {.ncols = (a->all_ns ? 1 : 0) + 7 + (wide ? 3 : 0)};
    const char *hdr[] = {"NAMESPACE", "NAME", "USER", "CHAT", "LIFECYCLE", "PHASE", "POD", "AGE", "IP", "NODE", "LAST-USED"};
    table_add(&t, a->all_ns ? hdr : hdr + 1);
    const cJSON *sb;
    cJSON_ArrayForEach(sb, items) {
        char age[32], lu[32] = "-";
        age_at(sb, "metadata.creationTimestamp", age, sizeof(age));
        const char *last;
        int64_t tm;
        if (last_used(sb, &tm, &last) == 0) human_age(kj_now_ms() - tm, lu, sizeof(lu));
        const char *row[] = {kj_str(sb, "metadata.namespace"), kj_str(sb, "metadata.name"),
                             or_dash(kj_str(sb, "spec.userID")), or_dash(kj_str(sb, "spec.chatID")),
                             or_dash(kj_str(sb, "spec.lifecycle")), or_dash(kj_str(sb, "status.phase")),
                             or_dash(kj_str(sb, "status.podName")), age,
                             or_dash(kj_str(sb, "status.podIP")), or_dash(kj_str(sb, "status.nodeName")), lu};
        table_add(&t, a->all_ns ? row : row + 1);
    }
    table_print_free(&t);
    cJSON_Delete(items);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- start / stop / touch ------------------------------------------------------------- */

/* start SANDBOX [--wait]: clear spec.paused and mark it used. */
static int cmd_start(struct cli *c) {
    const char *name = c->a->pos[0];
    if (connect_cluster(c)) return 1;
    cJSON *sb;
    if (get_sandbox(c, name, &sb)) return 1;
    cJSON_Delete(sb);
    if (patch_sandbox(c, name, 1, 0, 0)) return 1;
    if (c->a->wait) {
        if (wait_for(c, name, WANT_RUNNING, &sb)) return 1;
        printf("sandbox/%s running (pod %s)\n", name, kj_str(sb, "status.podName"));
        cJSON_Delete(sb);
    } else {
        printf("sandbox/%s starting\n", name);
    }
    return 0;
}

/* stop SANDBOX [--wait]: set spec.paused (the controller deletes the pod). */
static int cmd_stop(struct cli *c) {
    const char *name = c->a->pos[0];
    if (connect_cluster(c)) return 1;
    if (patch_sandbox(c, name, 0, 1, 0)) return 1;
    if (c->a->wait) {
        cJSON *sb;
        if (wait_for(c, name, WANT_STOPPED, &sb)) return 1;
        cJSON_Delete(sb);
        printf("sandbox/%s stopped\n", name);
    } else {
        printf("sandbox/%s stopping\n", name);
    }
    return 0;
}

/* touch SANDBOX: last-used-at = now. */
static int cmd_touch(struct cli *c) {
    if (connect_cluster(c)) return 1;
    return patch_sandbox(c, c->a->pos[0], 1, -1, 0);
}

/* ---- file helpers --------------------------------------------------------------------- */

/* Connect, wake the sandbox, and resolve path. 0 with *pod and *file (caller frees). */
static int file_setup(struct cli *c, const char *path, char *pod, size_t podlen, char **file) {
    cJSON *sb;
    *file = NULL;
    if (connect_cluster(c)) return 1;
    if (ensure_running(c, c->a->pos[0], &sb)) return 1;
    snprintf(pod, podlen, "%s", kj_str(sb, "status.podName"));
    *file = sandbox_file(c, sb, path ? path : "");
    cJSON_Delete(sb);
    return *file ? 0 : fail("out of memory");
}

/* read SANDBOX PATH: cat in the sandbox, bytes to our stdout. */
static int cmd_read(struct cli *c) {
    char pod[256], *file;
    if (file_setup(c, c->a->pos[1], pod, sizeof(pod), &file)) return 1;
    const char *argv[] = {"cat", "--", file};
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct xio x = {.out_fd = 1, .err_fd = -1, .err_buf = &errb, .in_fd = -1};
    int code = -1, rc = file_op(c, pod, argv, 3, &x, 0, &code);
    if (rc == 0 && code != 0) rc = remote_failed(&errb, code);
    if (x.broken_pipe) rc = 141;
    dynbuf_free(&errb);
    free(file);
    return rc;
}

/* write SANDBOX PATH [-p]: our stdin to `cat > PATH` in the sandbox (a child of the shell:
 * see CLI_STDIN_CHILD). */
static int cmd_write(struct cli *c) {
    char pod[256], *file;
    if (file_setup(c, c->a->pos[1], pod, sizeof(pod), &file)) return 1;
    const char *plain[] = {"sh", "-c", "cat > \"$1\"; exit $?", "sh", file};
    const char *mkp[] = {"sh", "-c", "mkdir -p -- \"$(dirname -- \"$1\")\" && cat > \"$1\"; exit $?", "sh", file};
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct xio x = {.out_fd = 2, .err_fd = -1, .err_buf = &errb, .in_fd = 0};
    int code = -1, rc = file_op(c, pod, c->a->parents ? mkp : plain, 5, &x, 1, &code);
    if (rc == 0 && code != 0) rc = remote_failed(&errb, code);
    dynbuf_free(&errb);
    free(file);
    return rc;
}

/* Readable name of a file type letter. */
static const char *type_name(char t) {
    switch (t) {
    case 'f': return "file";
    case 'd': return "directory";
    case 'l': return "symlink";
    case 'p': return "fifo";
    case 's': return "socket";
    case 'c': return "char-device";
    case 'b': return "block-device";
    default: return "unknown";
    }
}

/* A FileInfo object, as the Yao sandbox Manager returns it. */
static cJSON *info_json(const struct cli_file_info *fi, const char *path) {
    char mode[12], mt[40], oct[8];
    cJSON *o = cJSON_CreateObject();
    cli_mode_string(fi->type, fi->mode, mode);
    kj_time_format(fi->mtime_ms, mt, sizeof(mt));
    snprintf(oct, sizeof(oct), "%04o", fi->mode);
    cJSON_AddStringToObject(o, "name", fi->name);
    cJSON_AddStringToObject(o, "path", path);
    cJSON_AddNumberToObject(o, "size", (double)fi->size);
    cJSON_AddStringToObject(o, "mode", oct);
    cJSON_AddStringToObject(o, "modeString", mode);
    cJSON_AddStringToObject(o, "modTime", mt);
    cJSON_AddBoolToObject(o, "isDir", fi->type == 'd');
    cJSON_AddStringToObject(o, "type", type_name(fi->type));
    if (fi->type == 'l') cJSON_AddStringToObject(o, "linkTarget", fi->link);
    return o;
}

/* qsort comparator: by name. */
static int cmp_info(const void *a, const void *b) {
    return strcmp(((const struct cli_file_info *)a)->name, ((const struct cli_file_info *)b)->name);
}

/* Run the listing for ls (the path and its entries) or stat (the path alone). 0 with the
 * entries, the path's own first, or 1. */
static int find_listing(struct cli *c, const char *pod, const char *file, int ls,
                        struct cli_file_info **v, size_t *n) {
    const char *argv[] = {"sh", "-c", CLI_LIST_SCRIPT, "sh", ls ? "ls" : "stat", file};
    struct dynbuf out, errb;
    dynbuf_init(&out, CAPTURE_MAX);
    dynbuf_init(&errb, STDERR_KEEP);
    struct xio x = {.out_fd = -1, .out_buf = &out, .err_fd = -1, .err_buf = &errb, .in_fd = -1};
    int code = -1, rc = file_op(c, pod, argv, 6, &x, 0, &code);
    if (rc == 0 && code != 0) rc = remote_failed(&errb, code);
    if (rc == 0 && (cli_listing_parse(out.data, out.len, v, n) < 0 || *n == 0))
        rc = fail("%s: unexpected output from the listing in the sandbox", current->name);
    dynbuf_free(&out);
    dynbuf_free(&errb);
    return rc;
}

/* ls SANDBOX [PATH] [-l] [-o json]: a directory's entries (or the file itself). */
static int cmd_ls(struct cli *c) {
    struct args *a = c->a;
    if (check_output(a->output, "json")) return 2;
    char pod[256], *file;
    if (file_setup(c, a->npos > 1 ? a->pos[1] : "", pod, sizeof(pod), &file)) return 1;
    struct cli_file_info *v = NULL;
    size_t n = 0;
    int rc = find_listing(c, pod, file, 1, &v, &n);
    if (rc == 0) {
        size_t start = 0;
        int is_dir = n > 0 && v[0].type == 'd';
        if (is_dir) start = 1;   /* the directory itself */
        if (n > start) qsort(v + start, n - start, sizeof(*v), cmp_info);
        if (a->output) {
            cJSON *arr = cJSON_CreateArray();
            for (size_t i = start; i < n; i++) {
                char *p = is_dir ? cli_path_join(file, v[i].name) : strdup(file);
                cJSON_AddItemToArray(arr, info_json(&v[i], p ? p : ""));
                free(p);
            }
            rc = print_json(arr);
            cJSON_Delete(arr);
        } else {
            for (size_t i = start; i < n; i++) {
                if (a->long_) {
                    char mode[12], mt[40];
                    cli_mode_string(v[i].type, v[i].mode, mode);
                    kj_time_format(v[i].mtime_ms, mt, sizeof(mt));
                    printf("%s %12llu %s %s%s%s\n", mode, (unsigned long long)v[i].size, mt, v[i].name,
                           v[i].type == 'l' ? " -> " : "", v[i].type == 'l' ? v[i].link : "");
                } else {
                    printf("%s\n", v[i].name);
                }
            }
            if (fflush(stdout) != 0) rc = 1;
        }
    }
    cli_file_infos_free(v, n);
    free(file);
    return rc;
}

/* stat SANDBOX PATH [-o json] */
static int cmd_stat(struct cli *c) {
    struct args *a = c->a;
    if (check_output(a->output, "json")) return 2;
    char pod[256], *file;
    if (file_setup(c, a->pos[1], pod, sizeof(pod), &file)) return 1;
    struct cli_file_info *v = NULL;
    size_t n = 0;
    int rc = find_listing(c, pod, file, 0, &v, &n);
    if (rc == 0 && n != 1) rc = fail("stat: unexpected output from the listing in the sandbox");
    if (rc == 0) {
        if (a->output) {
            cJSON *o = info_json(&v[0], file);
            rc = print_json(o);
            cJSON_Delete(o);
        } else {
            char mode[12], mt[40];
            cli_mode_string(v[0].type, v[0].mode, mode);
            kj_time_format(v[0].mtime_ms, mt, sizeof(mt));
            printf("Name:     %s\n", v[0].name);
            printf("Path:     %s\n", file);
            printf("Type:     %s\n", type_name(v[0].type));
            printf("Size:     %llu\n", (unsigned long long)v[0].size);
            printf("Mode:     %s (%04o)\n", mode, v[0].mode);
            printf("Modified: %s\n", mt);
            if (v[0].type == 'l') printf("Target:   %s\n", v[0].link);
            if (fflush(stdout) != 0) rc = 1;
        }
    }
    cli_file_infos_free(v, n);
    free(file);
    return rc;
}

/* mkdir / rm: a plain command on one path whose only output is its complaint. */
static int simple_op(struct cli *c, const char *pod, const char *const *argv, size_t argc) {
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct xio x = {.out_fd = 2, .err_fd = -1, .err_buf = &errb, .in_fd = -1};
    int code = -1, rc = file_op(c, pod, argv, argc, &x, 0, &code);
    if (rc == 0 && code != 0) rc = remote_failed(&errb, code);
    dynbuf_free(&errb);
    return rc;
}

/* mkdir SANDBOX PATH [-p] */
static int cmd_mkdir(struct cli *c) {
    char pod[256], *file;
    if (file_setup(c, c->a->pos[1], pod, sizeof(pod), &file)) return 1;
    const char *with_p[] = {"mkdir", "-p", "--", file};
    const char *plain[] = {"mkdir", "--", file};
    int rc = c->a->parents ? simple_op(c, pod, with_p, 4) : simple_op(c, pod, plain, 3);
    free(file);
    return rc;
}

/* rm SANDBOX PATH [-r] [-f] (never "/") */
static int cmd_rm(struct cli *c) {
    char pod[256], *file;
    if (file_setup(c, c->a->pos[1], pod, sizeof(pod), &file)) return 1;
    if (file[strspn(file, "/")] == '\0') { free(file); return fail("rm: refusing to remove /"); }
    const char *argv[6];
    size_t k = 0;
    argv[k++] = "rm";
    if (c->a->recursive) argv[k++] = "-r";
    if (c->a->force) argv[k++] = "-f";
    argv[k++] = "--";
    argv[k++] = file;
    int rc = simple_op(c, pod, argv, k);
    free(file);
    return rc;
}

/* ---- cp ------------------------------------------------------------------------------- */

/* "SANDBOX:PATH" → name (DNS subdomain before the first ':') and path. 1 if remote. */
static int split_remote(const char *arg, char *name, size_t namelen, const char **path) {
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || (size_t)(colon - arg) >= namelen) return 0;
    memcpy(name, arg, (size_t)(colon - arg));
    name[colon - arg] = '\0';
    if (!valid_name(name)) return 0;
    *path = colon + 1;
    return 1;
}

/* The name a local path is stored under: its base name ("." and ".." resolved). */
static char *local_base(const char *path) {
    char *dir, *name;
    if (cli_path_split(path, &dir, &name) < 0) return NULL;
    free(dir);
    if (strcmp(name, ".") && strcmp(name, "/")) return name;
    free(name);
    char *real = realpath(path, NULL);
    if (!real) return NULL;
    if (cli_path_split(real, &dir, &name) < 0) { free(real); return NULL; }
    free(real);
    free(dir);
    if (!strcmp(name, ".")) { free(name); return NULL; }   /* "/" */
    return name;
}

/* Notes from the tar writer/extractor: one stderr line each, prefixed with ud. */
static void note_stderr(void *ud, const char *msg) {
    const char *what = ud;
    fprintf(stderr, PROG ": %s: %s\n", what, msg);
}

/* cp LOCAL SANDBOX:PATH — a tar stream built locally, unpacked by tar in the sandbox. */
static int cp_in(struct cli *c, const char *local, const char *rpath) {
    struct stat st;
    if (stat(local, &st) < 0) return fail("cp: %s: %s", local, strerror(errno));
    char pod[256], *file;
    if (file_setup(c, rpath, pod, sizeof(pod), &file)) return 1;
    char *lbase = local_base(local), *rdir = NULL, *rname = NULL;
    int rc = 0, code = 0;
    if (!lbase) { rc = fail("cp: cannot copy \"%s\"", local); goto out; }
    /* Before anything is sent: tar is there, and either PATH is a directory (the source
     * goes inside under its own name) or its parent is (PATH names the copy). */
    if (cli_path_split(file, &rdir, &rname) < 0) { rc = fail("out of memory"); goto out; }
    const char *check[] = {"sh", "-c", CLI_CP_IN_CHECK, "sh", file, rdir};
    struct dynbuf what, cerr;
    dynbuf_init(&what, 64);
    dynbuf_init(&cerr, STDERR_KEEP);
    struct xio cx = {.out_fd = -1, .out_buf = &what, .err_fd = -1, .err_buf = &cerr, .in_fd = -1};
    rc = file_op(c, pod, check, 6, &cx, 0, &code);
    int into_dir = rc == 0 && code == 0 && what.len >= 3 && !memcmp(what.data, "dir", 3);
    /* "DIR/" (or "DIR/.") asks for a directory: never a new file named DIR */
    size_t rl = strlen(rpath);
    int wants_dir = !strcmp(rname, ".") || (rl && rpath[rl - 1] == '/');
    int new_name = rc == 0 && code == 0 && what.len >= 3 && !memcmp(what.data, "new", 3) && !wants_dir;
    if (rc == 0 && ((code == 1 && wants_dir) || (code == 0 && !into_dir && !new_name)))
        rc = fail("cp: %s: no such directory in the sandbox", file);   /* DIR/ as asked */
    else if (rc == 0 && code != 0) rc = remote_failed(&cerr, code);
    dynbuf_free(&what);
    dynbuf_free(&cerr);
    if (rc) goto out;
    if (into_dir) {
        free(rdir);
        free(rname);
        rdir = strdup(file);
        rname = strdup(lbase);
        if (!rdir || !rname) { rc = fail("out of memory"); goto out; }
    }
    char err[512];
    struct cli_tar_src *src = cli_tar_src_new(local, rname, note_stderr, "cp", err, sizeof(err));
    if (!src) { rc = fail("cp: %s", err); goto out; }
    const char *untar[] = {"sh", "-c", CLI_STDIN_CHILD, "sh", "tar", "-xmf", "-", "-C", rdir};
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct xio x = {.out_fd = 2, .err_fd = -1, .err_buf = &errb, .in_fd = -1, .tar = src};
    rc = file_op(c, pod, untar, 9, &x, 1, &code);
    if (rc == 0 && code != 0) rc = remote_failed(&errb, code);
    dynbuf_free(&errb);
    cli_tar_src_free(src);
out:
    free(lbase);
    free(rdir);
    free(rname);
    free(file);
    return rc;
}

/* cp SANDBOX:PATH LOCAL — tar in the sandbox, the safe extractor here. */
static int cp_out(struct cli *c, const char *rpath, const char *local) {
    char pod[256], *file, *rdir = NULL, *rname = NULL, *ldir = NULL, *lname = NULL;
    if (file_setup(c, rpath, pod, sizeof(pod), &file)) return 1;
    int rc = 0, code = 0;
    if (cli_path_split(file, &rdir, &rname) < 0) { rc = fail("out of memory"); goto out; }
    struct stat st;
    const char *dest, *to;
    const char *from = strcmp(rname, ".") ? rname : "";
    if (stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
        dest = local;
        to = from;
    } else {
        if (cli_path_split(local, &ldir, &lname) < 0) { rc = fail("cp: invalid destination \"%s\"", local); goto out; }
        if (!strcmp(lname, ".")) { rc = fail("cp: %s: no such directory", local); goto out; }
        dest = ldir;
        to = lname;
    }
    char member[PATH_MAX + 3];
    snprintf(member, sizeof(member), "%s%s", rname[0] == '-' ? "./" : "", rname);
    char err[512];
    struct cli_untar_options uo = {.dest_dir = dest, .from = from, .to = to, .on_reject = note_stderr, .ud = "cp"};
    struct cli_untar *u = cli_untar_new(&uo, err, sizeof(err));
    if (!u) { rc = fail("cp: %s", err); goto out; }
    const char *mktar[] = {"sh", "-c", CLI_CP_OUT_SCRIPT, "sh", rdir, member, file};
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct xio x = {.untar = u, .err_fd = -1, .err_buf = &errb, .in_fd = -1};
    rc = file_op(c, pod, mktar, 7, &x, 0, &code);
    if (rc == 0 && code >= 2) rc = remote_failed(&errb, code);
    else if (rc == 0 && code == 1) {           /* GNU tar: some files changed while read */
        char msg[1024];
        remote_message(&errb, msg, sizeof(msg));
        fprintf(stderr, PROG ": cp: warning: %s\n", msg[0] ? msg : "tar reported changed files");
    }
    if (rc == 0 && cli_untar_finish(u) < 0) rc = fail("cp: %s", cli_untar_error(u));
    if (rc == 0 && cli_untar_rejected(u) > 0)
        rc = fail("cp: %zu unsafe archive entr%s rejected", cli_untar_rejected(u),
                  cli_untar_rejected(u) == 1 ? "y" : "ies");
    dynbuf_free(&errb);
    cli_untar_free(u);
out:
    free(rdir);
    free(rname);
    free(ldir);
    free(lname);
    free(file);
    return rc;
}

/* cp SRC DST: exactly one side is SANDBOX:PATH. */
static int cmd_cp(struct cli *c) {
    struct args *a = c->a;
    char n1[254], n2[254];
    const char *p1, *p2;
    int r1 = split_remote(a->pos[0], n1, sizeof(n1), &p1), r2 = split_remote(a->pos[1], n2, sizeof(n2), &p2);
    if (r1 && r2) return usage_error("copying from one sandbox to another is not supported");
    if (!r1 && !r2) return usage_error("one of SRC and DST must be SANDBOX:PATH (write ./NAME for a local path with ':')");
    if (r1) { a->pos[0] = n1; return cp_out(c, p1, a->pos[1]); }
    const char *local = a->pos[0];
    a->pos[0] = n2;
    return cp_in(c, local, p2);
}

/* ---- commands ------------------------------------------------------------------------- */

static const struct opt exec_opts[] = {GLOBAL_OPTS, {"stdin", 'i', 0, O_STDIN}, {"tty", 't', 0, O_TTY},
    {"workdir", 'w', 1, O_WORKDIR}, {"env", 'e', 1, O_ENV}, {"timeout", 0, 1, O_TIMEOUT}, {NULL, 0, 0, 0}};
static const struct opt get_opts[] = {GLOBAL_OPTS, {"output", 'o', 1, O_OUTPUT}, {NULL, 0, 0, 0}};
static const struct opt create_opts[] = {GLOBAL_OPTS, {"user", 0, 1, O_USER}, {"chat", 0, 1, O_CHAT},
    {"lifecycle", 0, 1, O_LIFECYCLE}, {"image", 0, 1, O_IMAGE}, {"idle-timeout", 0, 1, O_IDLE_TIMEOUT},
    {"wait", 0, 0, O_WAIT}, {NULL, 0, 0, 0}};
static const struct opt list_opts[] = {GLOBAL_OPTS, {"output", 'o', 1, O_OUTPUT}, {"user", 0, 1, O_USER}, {"chat", 0, 1, O_CHAT},
    {"phase", 0, 1, O_PHASE}, {"lifecycle", 0, 1, O_LIFECYCLE}, {"all-namespaces", 'A', 0, O_ALL_NS}, {NULL, 0, 0, 0}};
static const struct opt wait_opts[] = {GLOBAL_OPTS, {"wait", 0, 0, O_WAIT}, {NULL, 0, 0, 0}};
static const struct opt plain_opts[] = {GLOBAL_OPTS, {NULL, 0, 0, 0}};
static const struct opt parents_opts[] = {GLOBAL_OPTS, {"parents", 'p', 0, O_PARENTS}, {NULL, 0, 0, 0}};
static const struct opt ls_opts[] = {GLOBAL_OPTS, {"long", 'l', 0, O_LONG}, {"output", 'o', 1, O_OUTPUT}, {NULL, 0, 0, 0}};
static const struct opt stat_opts[] = {GLOBAL_OPTS, {"output", 'o', 1, O_OUTPUT}, {NULL, 0, 0, 0}};
static const struct opt rm_opts[] = {GLOBAL_OPTS, {"recursive", 'r', 0, O_RECURSIVE}, {"force", 'f', 0, O_FORCE}, {NULL, 0, 0, 0}};

static const struct command commands[] = {
    {"exec", cmd_exec, exec_opts,
     "Usage: " PROG " exec SANDBOX [-i] [-t] [-w DIR] [-e NAME=VALUE]... [--timeout DUR] -- CMD [ARG]...\n"
     "\n"
     "Run a command in the sandbox's container and exit with its exit code. A stopped,\n"
     "stopping, paused or pending sandbox is started first (spec.paused cleared, waiting up\n"
     "to --start-timeout for phase Running). The sandbox is marked used as the command\n"
     "starts and every third of its idleTimeout (1s to 60s) while it runs, never after.\n"
     "Arguments reach the command exactly as given (no shell in between).\n"
     "\n"
     "Exit code: the command's; 75 when the sandbox was stopped, paused, deleted or\n"
     "restarted while the command ran (one line on stderr says which; a command killed for\n"
     "another reason, e.g. out of memory, still gives 137); 1 when the command could not\n"
     "be run; 2 for usage errors.\n"
     "\n"
     "  -i, --stdin          send our stdin to the command (closed at EOF)\n"
     "  -t, --tty            allocate a terminal (with -i; stderr is merged into stdout) of\n"
     "                       our terminal's size, resized with it; when stdin is no\n"
     "                       terminal, of $COLUMNS x $LINES if both are set, else no size\n"
     "  -w, --workdir DIR    run in DIR (through sh -c 'cd -- \"$0\" && exec \"$@\"')\n"
     "  -e, --env NAME=VALUE set an environment variable (through env); repeatable\n"
     "  --timeout DUR        give up after DUR (e.g. 30s, 5m); default: none\n",
     1, 1, 1},
    {"create", cmd_create, create_opts,
     "Usage: " PROG " create --user U --chat C [--lifecycle L] [--image I] [--idle-timeout D] [--wait]\n"
     "\n"
     "Get or create the Sandbox of (user U, chat C) and print its name: the canonical name of\n"
     "the pair, the same yao-sb-... name as its pod. Idempotent and safe to run concurrently:\n"
     "every call for a pair prints the same name and the pair has one Sandbox. An existing\n"
     "Sandbox is kept as it is (the flags below only shape a new one); one being deleted is\n"
     "waited out (up to --start-timeout) and created anew. Fails with NameConflict, naming\n"
     "both pairs, when a Sandbox of that name belongs to another pair.\n"
     "\n"
     "  --user U             spec.userID (1-128 characters)\n"
     "  --chat C             spec.chatID (1-128 characters)\n"
     "  --lifecycle L        one-shot, session, long-running or persistent (default: session)\n"
     "  --image I            container image (default: the controller's)\n"
     "  --idle-timeout D     e.g. 90s, 30m, 2h (default: the controller's)\n"
     "  --wait               then wait (up to --start-timeout) until it is Running; when it\n"
     "                       does not get there, say why (the Ready condition's reason and\n"
     "                       message)\n",
     0, 0, 0},
    {"get", cmd_get, get_opts,
     "Usage: " PROG " get SANDBOX [-o json|yaml|wide]\n"
     "\n"
     "Show a Sandbox: user, chat, lifecycle, phase, pod, IP, node, readiness, last use.\n"
     "\n"
     "  -o, --output FORMAT  json or yaml (the whole object), wide (more fields)\n",
     1, 1, 1},
    {"list", cmd_list, list_opts,
     "Usage: " PROG " list [--user U] [--chat C] [--phase P] [--lifecycle L] [-A] [-o json|yaml|wide]\n"
     "\n"
     "List Sandboxes as a table: NAME USER CHAT LIFECYCLE PHASE POD AGE.\n"
     "\n"
     "  --user U             only the user's (exact spec.userID; selected by the API server)\n"
     "  --chat C             only the chat's (exact spec.chatID; selected by the API server)\n"
     "  --phase P            only in phase P (Pending, Creating, Running, Stopping, Stopped,\n"
     "                       Succeeded, Failed)\n"
     "  --lifecycle L        only with lifecycle L (one-shot, session, long-running, persistent)\n"
     "  -A, --all-namespaces all namespaces\n"
     "  -o, --output FORMAT  json or yaml (a List), wide (adds IP, NODE, LAST-USED)\n",
     0, 0, 0},
    {"start", cmd_start, wait_opts,
     "Usage: " PROG " start SANDBOX [--wait]\n"
     "\n"
     "Clear spec.paused and mark the sandbox used; the controller starts its pod again with\n"
     "the same workspace.\n"
     "\n"
     "  --wait               wait (up to --start-timeout) until it is Running\n",
     1, 1, 1},
    {"stop", cmd_stop, wait_opts,
     "Usage: " PROG " stop SANDBOX [--wait]\n"
     "\n"
     "Set spec.paused: the controller deletes the pod and keeps the workspace.\n"
     "\n"
     "  --wait               wait (up to --start-timeout) until it is Stopped\n",
     1, 1, 1},
    {"touch", cmd_touch, plain_opts,
     "Usage: " PROG " touch SANDBOX\n"
     "\n"
     "Set the annotation " SBX_ANN_LAST_USED " to now. This restarts the idle clock\n"
     "and wakes a long-running sandbox that was stopped for being idle.\n",
     1, 1, 1},
    {"read", cmd_read, plain_opts,
     "Usage: " PROG " read SANDBOX PATH\n"
     "\n"
     "Write a file of the sandbox to stdout (binary-safe). Relative paths are below --root\n"
     "(default: the workspace).\n",
     2, 2, 1},
    {"write", cmd_write, parents_opts,
     "Usage: " PROG " write SANDBOX PATH [-p]\n"
     "\n"
     "Write stdin to a file of the sandbox (created or replaced).\n"
     "\n"
     "  -p, --parents        create missing parent directories\n",
     2, 2, 1},
    {"ls", cmd_ls, ls_opts,
     "Usage: " PROG " ls SANDBOX [PATH] [-l] [-o json]\n"
     "\n"
     "List a directory of the sandbox (default: the workspace), sorted by name. Works with\n"
     "GNU coreutils or busybox in the image (sh, stat, readlink).\n"
     "\n"
     "  -l, --long           mode, size, modification time, name (and link target)\n"
     "  -o json              FileInfo objects: name, path, size, mode, modTime, isDir, type\n",
     1, 2, 1},
    {"stat", cmd_stat, stat_opts,
     "Usage: " PROG " stat SANDBOX PATH [-o json]\n"
     "\n"
     "Describe a file of the sandbox: name, type, size, mode, modification time.\n"
     "\n"
     "  -o json              a FileInfo object\n",
     2, 2, 1},
    {"mkdir", cmd_mkdir, parents_opts,
     "Usage: " PROG " mkdir SANDBOX PATH [-p]\n"
     "\n"
     "Create a directory in the sandbox.\n"
     "\n"
     "  -p, --parents        create parents too; no error if it exists\n",
     2, 2, 1},
    {"rm", cmd_rm, rm_opts,
     "Usage: " PROG " rm SANDBOX PATH [-r] [-f]\n"
     "\n"
     "Remove a file (with -r, a directory tree) in the sandbox.\n"
     "\n"
     "  -r, --recursive      remove directories and their contents\n"
     "  -f, --force          no error if it does not exist\n",
     2, 2, 1},
    {"cp", cmd_cp, plain_opts,
     "Usage: " PROG " cp LOCAL SANDBOX:PATH\n"
     "       " PROG " cp SANDBOX:PATH LOCAL\n"
     "\n"
     "Copy a file or directory tree into or out of a sandbox, through tar in the sandbox.\n"
     "If the destination is an existing directory the source is copied into it under its\n"
     "own name, otherwise the destination names the copy (its directory must exist; a\n"
     "missing one is reported before anything is sent). Modes are kept, owners are not.\n"
     "Copying out, entries that would land outside LOCAL (absolute names, \"..\", links\n"
     "pointing outside) are rejected, reported, and make the command fail.\n",
     2, 2, 0},
};

/* The command table entry for a name, or NULL. */
static const struct command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

/* Split global flags from the command word, parse the command's flags, run it. */
int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    /* Find the command word: global flags (and their values) may come before it. */
    int ci = -1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--version")) { printf(PROG " %s\n", YAO_VERSION); return 0; }
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) { fputs(main_help, stdout); fputs(global_help, stdout); return 0; }
        if (s[0] != '-' || !s[1]) { ci = i; break; }
        if (!strcmp(s, "--")) break;
        const struct opt *o = NULL;
        if (s[1] == '-') o = !strchr(s, '=') ? find_long(global_opts, s + 2, strlen(s + 2)) : NULL;
        else if (!s[2]) o = find_short(global_opts, s[1]);
        if (o && o->has_arg) i++;
    }
    if (ci < 0) return usage_error("no command given");
    const struct command *cmd = find_command(argv[ci]);
    if (!cmd) return usage_error("unknown command \"%s\"", argv[ci]);
    current = cmd;

    /* The command's arguments: everything but the program name and the command word. */
    char **rest = calloc((size_t)argc, sizeof(char *));
    const char **pos = calloc((size_t)argc, sizeof(char *));
    const char **env = calloc((size_t)argc, sizeof(char *));
    if (!rest || !pos || !env) return fail("out of memory");
    int nrest = 0;
    for (int i = 1; i < argc; i++) if (i != ci) rest[nrest++] = argv[i];
    struct args a = {.cmd = cmd->name, .pos = pos, .env = env};
    int rc = parse_args(nrest, rest, cmd, &a);
    if (rc == 0 && a.help) {
        fputs(cmd->usage, stdout);
        fputs("\n", stdout);
        fputs(global_help, stdout);
        goto out;
    }
    if (rc) goto out;
    if (a.npos < cmd->min_pos) {
        static const char *const what[] = {"SANDBOX", "PATH"};
        if (!strcmp(cmd->name, "cp")) rc = usage_error("missing %s", a.npos == 0 ? "SRC and DST" : "DST");
        else rc = usage_error("missing %s", what[a.npos < 2 ? a.npos : 1]);
        goto out;
    }
    if (a.npos > cmd->max_pos) { rc = usage_error("unexpected argument \"%s\"", a.pos[cmd->max_pos]); goto out; }
    if (cmd->needs_sandbox && !valid_name(a.pos[0])) {
        rc = usage_error("invalid sandbox name \"%s\"", a.pos[0]);
        goto out;
    }
    struct cli c = {.a = &a, .start_timeout_ms = DEFAULT_START_TIMEOUT_MS};
    if (a.start_timeout && (qty_parse_duration(a.start_timeout, &c.start_timeout_ms) < 0 || c.start_timeout_ms <= 0)) {
        rc = usage_error("invalid --start-timeout \"%s\" (a duration such as 60s, 5m)", a.start_timeout);
        goto out;
    }
    rc = cmd->run(&c);
    if (c.kc) kube_client_free(c.kc);
out:
    free(rest);
    free(pos);
    free(env);
    return rc;
}
