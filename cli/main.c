/* cli/main.c — yao-sandbox, the command-line client of Sandboxes
 * (sandbox.yaoapps.com/v1alpha1) against any kubeconfig: exec in a sandbox (waking it when
 * stopped), create/get/list/describe/delete, logs, wait, start/stop/touch, file helpers
 * that mirror the Yao sandbox Manager (read, write, ls, stat, mkdir, rm, cp in and out) —
 * all of them through exec in the sandbox's container, as kubectl cp does — port-forward,
 * and the shell completion script.
 *
 * Owns: the help texts, each command's flags and synopsis (the command table), and main,
 * which splits global flags from the command word and runs the command. The rest of cli/:
 * args.c (parsing, errors), output.c, cluster.c (the Sandbox through the API server),
 * session.c (a command in the sandbox), cmd_exec.c, cmd_sandbox.c, cmd_files.c, cmd_cp.c,
 * cmd_observe.c (wait, logs, describe), waiter.c (waiting by watch), waitcond.c (what a
 * wait is for), describe.c, jsonpath.c, logstream.c, completion.c, the pure file and exec
 * helpers — paths.c, tar_write.c and tar_read.c (tar.h), listing.c, remote.c (the scripts run
 * in the sandbox), exec_decide.c — fdio.c (whole writes) and keepalive.c (how often a
 * session marks the sandbox used). Exit codes: see cli.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"
#include "cli/cli.h"
#include "base/dynbuf.h"
#include "cli/cluster.h"
#include "cli/completion.h"
#include "cli/fdio.h"
#include "kube/rest.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/spec.h"

#define DEFAULT_START_TIMEOUT_MS (120 * 1000)

static const struct opt global_opts[] = {GLOBAL_OPTS, {"version", 0, 0, O_VERSION}, {NULL, 0, 0, 0}};

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
    "  --as USER            impersonate USER (Impersonate-User; replaces the kubeconfig's as)\n"
    "  --as-group GROUP     impersonate a group too (repeatable; needs --as)\n"
    "  -h, --help           show help\n"
    "\n"
    "Kubeconfig: token, tokenFile, client certificates, basic auth, exec credential plugins\n"
    "(client.authentication.k8s.io/v1 and v1beta1, as kubectl runs them: the credential is kept\n"
    "until its expirationTimestamp and the plugin runs again after a 401), impersonation (as,\n"
    "as-uid, as-groups, as-user-extra), and proxies: the cluster's proxy-url, else HTTPS_PROXY /\n"
    "HTTP_PROXY with NO_PROXY (not for localhost or loopback addresses), for every request,\n"
    "exec and port-forward (HTTP CONNECT; http:// proxies only).\n";

static const char main_help[] =
    "Usage: " PROG " [global flags] COMMAND [flags] [args]\n"
    "\n"
    "Run commands in yao-sandbox Sandboxes (" SBX_API_VERSION ") and move files in and\n"
    "out of them. A stopped or paused sandbox is started on use; every use marks it used\n"
    "(annotation " SBX_ANN_LAST_USED "), and so does a command while it runs.\n"
    "\n"
    "Commands:\n"
    "  exec SANDBOX [-i] [-t] [-w DIR] [-e K=V]... -- CMD...  run a command\n"
    "  create --user U --chat C [--lifecycle L] [--class K] [--image I] [--memory M]\n"
    "         [--cpu C] [--workspace-size S] [--idle-timeout D] [--wait]\n"
    "                                                         get or create the Sandbox of\n"
    "                                                         (U, C); prints its name\n"
    "  get SANDBOX [-o FORMAT] [-w]                           show one Sandbox (-w: and its\n"
    "                                                         changes)\n"
    "  list [--user U] [--chat C] [--phase P] [--lifecycle L] [-l SEL] [-A] [--no-headers]\n"
    "       [-o FORMAT] [-w]                                  list Sandboxes\n"
    "  describe SANDBOX                                       spec, status, conditions and\n"
    "                                                         recent Events\n"
    "  logs SANDBOX [-f] [--tail N]                           its container's log (a finished\n"
    "                                                         one-shot's whole output)\n"
    "  wait SANDBOX... --for=COND [--timeout D]               wait for condition=Ready,\n"
    "                                                         phase=P or delete\n"
    "  delete SANDBOX... [--wait]                             delete Sandboxes (and their\n"
    "                                                         pods and workspaces)\n"
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
    "  port-forward SANDBOX [LOCAL:]PORT...                   forward local ports to the\n"
    "                                                         sandbox's ports\n"
    "  completion bash|zsh                                    print a shell completion script\n"
    "\n"
    "Output formats (-o, get and list): json, yaml, wide, name, jsonpath=TEMPLATE (kubectl's\n"
    "JSONPath: {.a.b}, {.items[*].x}, [N], [a:b], [?(@.x==\"v\")], ..x, {range ...}{end},\n"
    "{\"text\"}). Waiting (--wait, wait, logs -f, exec on a stopped sandbox) watches the\n"
    "Sandbox; on a terminal a progress line follows its phase and reason, and the wait ends\n"
    "at once, with the reason, on what will not heal by itself (ErrImagePull,\n"
    "ImagePullBackOff, InvalidImageName, InvalidSpec, NameConflict, a finished one-shot, a\n"
    "paused or stopped sandbox nobody starts), and on Unschedulable once it has held 10 s.\n"
    "\n"
    "Run '" PROG " COMMAND --help' for a command's flags.\n"
    "\n";


static const struct opt exec_opts[] = {GLOBAL_OPTS, {"stdin", 'i', 0, O_STDIN}, {"tty", 't', 0, O_TTY},
    {"workdir", 'w', 1, O_WORKDIR}, {"env", 'e', 1, O_ENV}, {"timeout", 0, 1, O_TIMEOUT}, {NULL, 0, 0, 0}};
static const struct opt get_opts[] = {GLOBAL_OPTS, {"output", 'o', 1, O_OUTPUT}, {"watch", 'w', 0, O_WATCH}, {NULL, 0, 0, 0}};
static const struct opt logs_opts[] = {GLOBAL_OPTS, {"follow", 'f', 0, O_FOLLOW}, {"tail", 0, 1, O_TAIL}, {NULL, 0, 0, 0}};
static const struct opt waitcmd_opts[] = {GLOBAL_OPTS, {"for", 0, 1, O_FOR}, {"timeout", 0, 1, O_TIMEOUT}, {NULL, 0, 0, 0}};
static const struct opt create_opts[] = {GLOBAL_OPTS, {"user", 0, 1, O_USER}, {"chat", 0, 1, O_CHAT},
    {"lifecycle", 0, 1, O_LIFECYCLE}, {"image", 0, 1, O_IMAGE}, {"idle-timeout", 0, 1, O_IDLE_TIMEOUT},
    {"class", 0, 1, O_CLASS}, {"memory", 0, 1, O_MEMORY}, {"cpu", 0, 1, O_CPU}, {"workspace-size", 0, 1, O_WORKSPACE_SIZE},
    {"wait", 0, 0, O_WAIT}, {NULL, 0, 0, 0}};
static const struct opt list_opts[] = {GLOBAL_OPTS, {"output", 'o', 1, O_OUTPUT}, {"user", 0, 1, O_USER}, {"chat", 0, 1, O_CHAT},
    {"phase", 0, 1, O_PHASE}, {"lifecycle", 0, 1, O_LIFECYCLE}, {"all-namespaces", 'A', 0, O_ALL_NS},
    {"no-headers", 0, 0, O_NO_HEADERS}, {"selector", 'l', 1, O_SELECTOR}, {"watch", 'w', 0, O_WATCH}, {NULL, 0, 0, 0}};
static const struct opt wait_opts[] = {GLOBAL_OPTS, {"wait", 0, 0, O_WAIT}, {NULL, 0, 0, 0}};
static const struct opt plain_opts[] = {GLOBAL_OPTS, {NULL, 0, 0, 0}};
static const struct opt parents_opts[] = {GLOBAL_OPTS, {"parents", 'p', 0, O_PARENTS}, {NULL, 0, 0, 0}};
static const struct opt ls_opts[] = {GLOBAL_OPTS, {"long", 'l', 0, O_LONG}, {"output", 'o', 1, O_OUTPUT}, {NULL, 0, 0, 0}};
static const struct opt stat_opts[] = {GLOBAL_OPTS, {"output", 'o', 1, O_OUTPUT}, {NULL, 0, 0, 0}};
static const struct opt pf_opts[] = {GLOBAL_OPTS, {"address", 0, 1, O_ADDRESS}, {NULL, 0, 0, 0}};
static const struct opt rm_opts[] = {GLOBAL_OPTS, {"recursive", 'r', 0, O_RECURSIVE}, {"force", 'f', 0, O_FORCE}, {NULL, 0, 0, 0}};

static const struct command commands[] = {
    {"exec", cmd_exec, exec_opts,
     "Usage: " PROG " exec SANDBOX [-i] [-t] [-w DIR] [-e NAME=VALUE]... [--timeout DUR] -- CMD [ARG]...\n"
     "\n"
     "Run a command in the sandbox's container and exit with its exit code. A stopped,\n"
     "stopping, paused or pending sandbox is started first (spec.paused cleared, waiting up\n"
     "to --start-timeout for phase Running). The sandbox is marked used as the command\n"
     "starts and, while it runs (never after), every third of the shorter of its\n"
     "effective idle timeout and reclaim window (status.idleTimeout, status.reclaimAfter;\n"
     "spec.idleTimeout from an older controller), 1s to 60s.\n"
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
     "Usage: " PROG " create --user U --chat C [--lifecycle L] [--class K] [--image I]\n"
     "       [--memory M] [--cpu C] [--workspace-size S] [--idle-timeout D] [--wait]\n"
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
     "  --lifecycle L        one-shot, session, long-running or persistent (default: the\n"
     "                       SandboxClass's, else the controller's, session)\n"
     "  --class K            spec.className: the SandboxClass (default: the cluster's default\n"
     "                       class, if any)\n"
     "  --image I            container image (default: the class's, else the controller's)\n"
     "  --memory M           spec.resources.memory, e.g. 512Mi, 2Gi (the container's limit)\n"
     "  --cpu C              spec.resources.cpu, e.g. 500m, 2\n"
     "  --workspace-size S   spec.workspace.size, e.g. 1Gi, 10Gi (the workspace claim)\n"
     "  --idle-timeout D     e.g. 90s, 30m, 2h (default: the class's, else the controller's)\n"
     "  --wait               then wait (up to --start-timeout, by watch) until it is Running;\n"
     "                       when it will not get there (an image that cannot be pulled, no\n"
     "                       node, an invalid spec) say why at once\n",
     0, 0, 0},
    {"get", cmd_get, get_opts,
     "Usage: " PROG " get SANDBOX [-o json|yaml|wide|name|jsonpath=TEMPLATE] [-w]\n"
     "\n"
     "Show a Sandbox: user, chat, lifecycle, phase, pod, IP, node, readiness, last use.\n"
     "\n"
     "  -o, --output FORMAT  json or yaml (the whole object), wide (more fields), name\n"
     "                       (sandbox.sandbox.yaoapps.com/NAME, as kubectl -o name),\n"
     "                       jsonpath=TEMPLATE (kubectl's JSONPath, e.g.\n"
     "                       -o jsonpath='{.status.phase}'; see '" PROG " --help')\n"
     "  -w, --watch          then watch it: one table row (or object in FORMAT) now and one\n"
     "                       for each change, until interrupted\n",
     1, 1, 1},
    {"list", cmd_list, list_opts,
     "Usage: " PROG " list [--user U] [--chat C] [--phase P] [--lifecycle L] [-l SELECTOR] [-A]\n"
     "       [--no-headers] [-o json|yaml|wide|name|jsonpath=TEMPLATE] [-w]\n"
     "\n"
     "List Sandboxes as a table: NAME USER CHAT LIFECYCLE PHASE POD READY REASON AGE (READY\n"
     "and REASON: the Ready condition's status and reason, e.g. False ImagePullBackOff).\n"
     "\n"
     "  --user U             only the user's (exact spec.userID; selected by the API server)\n"
     "  --chat C             only the chat's (exact spec.chatID; selected by the API server)\n"
     "  --phase P            only in phase P (Pending, Creating, Running, Stopping, Stopped,\n"
     "                       Succeeded, Failed)\n"
     "  --lifecycle L        only with lifecycle L (one-shot, session, long-running, persistent)\n"
     "  -l, --selector SEL   only those whose labels match (a label selector: a=b,c!=d,\n"
     "                       e in (f,g), !h; selected by the API server)\n"
     "  -A, --all-namespaces all namespaces\n"
     "  --no-headers         the table without its header line\n"
     "  -o, --output FORMAT  json or yaml (a List), wide (adds IP, NODE, LAST-USED), name\n"
     "                       (one sandbox.sandbox.yaoapps.com/NAME a line), jsonpath=TEMPLATE\n"
     "                       (applied to the List: -o jsonpath='{.items[*].metadata.name}')\n"
     "  -w, --watch          then watch: a row (or object) for each change, with the same\n"
     "                       selection, until interrupted (JSONPath then applies to each\n"
     "                       Sandbox)\n",
     0, 0, 0},
    {"describe", cmd_describe, plain_opts,
     "Usage: " PROG " describe SANDBOX\n"
     "\n"
     "Describe a Sandbox as kubectl describe does: labels and annotations, the spec (user,\n"
     "chat, lifecycle, class, image, resources, workspace, run), the status (phase, pod,\n"
     "times, a one-shot's exit code and output tails), its conditions, and the Events\n"
     "recorded for it, oldest first.\n",
     1, 1, 1},
    {"logs", cmd_logs, logs_opts,
     "Usage: " PROG " logs SANDBOX [-f] [--tail N]\n"
     "\n"
     "Print the log of the sandbox's container (pods/log, container sandbox). A one-shot's\n"
     "pod is kept after its run until the Sandbox is deleted (ttlSecondsAfterFinished), so\n"
     "this is its whole output (stdout and stderr, in the order the runtime read them, as\n"
     "kubectl logs shows it). When the pod is gone (a run lost, an\n"
     "older controller), the tails kept in status.run are printed instead, stdout to stdout\n"
     "and stderr to stderr, with a note on stderr.\n"
     "\n"
     "  -f, --follow         stream the log until the container ends (or interrupted); a\n"
     "                       sandbox still starting is waited for (by watch, up to\n"
     "                       --start-timeout)\n"
     "  --tail N             only the last N lines (-1: all, the default)\n",
     1, 1, 1},
    {"wait", cmd_wait, waitcmd_opts,
     "Usage: " PROG " wait SANDBOX... --for=condition=Ready|condition=TYPE=STATUS|phase=P|delete\n"
     "       [--timeout D]\n"
     "\n"
     "Wait, by watching, until each Sandbox meets the condition, and print\n"
     "'sandbox.sandbox.yaoapps.com/NAME condition met' for each, as kubectl wait does. On a\n"
     "terminal a progress line on stderr follows the phase and the Ready reason. Ends at once\n"
     "(exit 1, the reason on stderr) when the Sandbox cannot get there by itself: an image\n"
     "that cannot be pulled (ErrImagePull, ImagePullBackOff, InvalidImageName), no node for it\n"
     "(Unschedulable, once it has held 10 s), InvalidSpec, NameConflict, a finished one-shot,\n"
     "a paused or stopped sandbox nobody starts, or its deletion (except for --for=delete).\n"
     "\n"
     "  --for COND           condition=Ready (status True), condition=TYPE=STATUS (True,\n"
     "                       False, Unknown), phase=P (Pending, Creating, Running, Stopping,\n"
     "                       Stopped, Succeeded, Failed) or delete (gone, or replaced by a\n"
     "                       new Sandbox of that name; met at once when there is none)\n"
     "  --timeout D          give up after D for all of them (default 30s); exit 1\n",
     1, 64, 0},
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
    {"delete", cmd_delete, wait_opts,
     "Usage: " PROG " delete SANDBOX... [--wait]\n"
     "\n"
     "Delete Sandboxes (propagationPolicy Background): what each one owns — its pod,\n"
     "Service, NetworkPolicy and workspace claim — goes with it, so its files are gone. A\n"
     "Sandbox already being deleted is left to finish. Prints 'sandbox \"NAME\" deleted' for\n"
     "each. A name that does not exist is an error (exit 1); the others are still deleted.\n"
     "\n"
     "  --wait               wait (up to --start-timeout) until each is gone\n",
     1, 64, 1},
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
    {"port-forward", cmd_port_forward, pf_opts,
     "Usage: " PROG " port-forward SANDBOX [LOCAL:]PORT... [--address IP]\n"
     "\n"
     "Forward local TCP ports to ports of the sandbox's container, through the API server\n"
     "(pods/portforward), like kubectl port-forward. PORT alone listens on the same local\n"
     "port; LOCAL:PORT on LOCAL; :PORT or 0:PORT on a free port. One line per port says\n"
     "where it listens (\"Forwarding from 127.0.0.1:LOCAL -> PORT\"). A stopped or paused\n"
     "sandbox is started first; the sandbox is marked used while the command runs. Each\n"
     "connection gets its own WebSocket; when it fails in the pod (nobody listens on the\n"
     "port) the pod's message is printed on stderr and the command keeps serving. SIGINT or\n"
     "SIGTERM ends it (exit 0). Any port of the container can be forwarded, listed in\n"
     "spec.ports or not. TCP only.\n"
     "\n"
     "  --address IP         local IPv4 address to listen on (default 127.0.0.1)\n",
     2, 65, 1},
    {"completion", cmd_completion, plain_opts,
     "Usage: " PROG " completion bash|zsh\n"
     "\n"
     "Print a shell completion script: commands, flags, the values of -o, --lifecycle,\n"
     "--phase and --for, and Sandbox names (of the namespace given by -n). Load it with\n"
     "  source <(" PROG " completion bash)      # bash (complete -F; no other package needed)\n"
     "  source <(" PROG " completion zsh)       # zsh (through bashcompinit)\n"
     "or save it: " PROG " completion bash > /etc/bash_completion.d/" PROG "\n",
     1, 1, 0},
};

/* completion bash|zsh: the script for the command table above. */
int cmd_completion(struct cli *c) {
    struct dynbuf b;
    dynbuf_init(&b, 1u << 20);
    int rc = completion_script(c->a->pos[0], commands, sizeof(commands) / sizeof(*commands), global_opts, &b);
    if (rc < 0 && strcmp(c->a->pos[0], "bash") && strcmp(c->a->pos[0], "zsh")) {
        dynbuf_free(&b);
        return cli_usage_error("unknown shell \"%s\" (bash or zsh)", c->a->pos[0]);
    }
    if (rc < 0) rc = cli_fail(ERR_OOM);
    else if (cli_write_all(1, b.data, b.len) < 0) rc = cli_fail("writing output: %s", strerror(errno));
    dynbuf_free(&b);
    return rc;
}

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
        if (s[1] == '-') o = !strchr(s, '=') ? cli_opt_long(global_opts, s + 2, strlen(s + 2)) : NULL;
        else if (!s[2]) o = cli_opt_short(global_opts, s[1]);
        if (o && o->has_arg) i++;
    }
    if (ci < 0) return cli_usage_error("no command given");
    const struct command *cmd = find_command(argv[ci]);
    if (!cmd) return cli_usage_error("unknown command \"%s\"", argv[ci]);
    cli_current = cmd;

    /* The command's arguments: everything but the program name and the command word. */
    char **rest = calloc((size_t)argc, sizeof(char *));
    const char **pos = calloc((size_t)argc, sizeof(char *));
    const char **env = calloc((size_t)argc, sizeof(char *));
    const char **groups = calloc((size_t)argc, sizeof(char *));
    if (!rest || !pos || !env || !groups) return cli_fail(ERR_OOM);
    int nrest = 0;
    for (int i = 1; i < argc; i++) if (i != ci) rest[nrest++] = argv[i];
    struct args a = {.cmd = cmd->name, .pos = pos, .env = env, .as_groups = groups};
    int rc = cli_parse_args(nrest, rest, cmd, &a);
    if (rc == 0 && a.help) {
        fputs(cmd->usage, stdout);
        fputs("\n", stdout);
        fputs(global_help, stdout);
        goto out;
    }
    if (rc) goto out;
    if (a.npos < cmd->min_pos) {
        static const char *const what[] = {"SANDBOX", "PATH"};
        if (!strcmp(cmd->name, "cp")) rc = cli_usage_error("missing %s", a.npos == 0 ? "SRC and DST" : "DST");
        else if (!strcmp(cmd->name, "port-forward")) rc = cli_usage_error("missing %s", a.npos == 0 ? "SANDBOX" : "PORT");
        else if (!strcmp(cmd->name, "completion")) rc = cli_usage_error("missing SHELL (bash or zsh)");
        else rc = cli_usage_error("missing %s", what[a.npos < 2 ? a.npos : 1]);
        goto out;
    }
    if (a.npos > cmd->max_pos) { rc = cli_usage_error("unexpected argument \"%s\"", a.pos[cmd->max_pos]); goto out; }
    if (cmd->needs_sandbox && !cluster_valid_name(a.pos[0])) {
        rc = cli_usage_error("invalid sandbox name \"%s\"", a.pos[0]);
        goto out;
    }
    struct cli c = {.a = &a, .start_timeout_ms = DEFAULT_START_TIMEOUT_MS};
    if (a.start_timeout && (qty_parse_duration(a.start_timeout, &c.start_timeout_ms) < 0 || c.start_timeout_ms <= 0)) {
        rc = cli_usage_error("invalid --start-timeout \"%s\" (a duration such as 60s, 5m)", a.start_timeout);
        goto out;
    }
    rc = cmd->run(&c);
    if (c.kc) kube_client_free(c.kc);
out:
    free(rest);
    free(pos);
    free(env);
    free(groups);
    return rc;
}
