/* sandbox/manager/settings.c — flags and YAO_SANDBOX_* variables into struct sbx_settings (see
 * settings.h). Precedence: flag > environment > default. */
#include "sandbox/manager/settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/rest.h"
#include "sandbox/model/naming.h"
#include "sandbox/model/quantity.h"
#include "sandbox/decide/shard_decide.h"
#include "sandbox/model/spec.h"

static const char usage[] =
    "usage: yao-sandbox-controller [flags]\n"
    "\n"
    "Watches Sandbox objects (sandbox.yaoapps.com/v1alpha1) and gives each one a PVC-backed\n"
    "pod named yao-sb-<user>-<chat>, enforcing its lifecycle policy.\n"
    "\n"
    "  --kubeconfig PATH        kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)\n"
    "  --namespace NS           watch only NS (YAO_SANDBOX_NAMESPACE; default: all namespaces)\n"
    "  --image IMAGE            default sandbox image (YAO_SANDBOX_IMAGE; " SBX_DEFAULT_IMAGE ")\n"
    "  --image-pull-policy P    imagePullPolicy of sandbox pods: Always, IfNotPresent, Never\n"
    "                           (YAO_SANDBOX_IMAGE_PULL_POLICY; default: per image, as\n"
    "                           Kubernetes: Always for :latest or no tag, else IfNotPresent)\n"
    "  --max-running N          limit of running sandboxes, 0 = none (YAO_SANDBOX_MAX; 100)\n"
    "  --max-running-per-user N limit of running sandboxes of one spec.userID in one namespace,\n"
    "                           0 = none (YAO_SANDBOX_MAX_PER_USER; 0)\n"
    "  --lifecycle L            lifecycle of Sandboxes that set none and whose SandboxClass sets\n"
    "                           none: session, long-running, persistent (YAO_SANDBOX_LIFECYCLE; session)\n"
    "  --idle-timeout DUR       default idle timeout (YAO_SANDBOX_IDLE_TIMEOUT; 30m)\n"
    "  --warm-idle-cpu QTY      at the idle deadline keep the pod warm-idle first, its CPU\n"
    "                           resized in place down to QTY (memory kept); 0 = off; a\n"
    "                           SandboxClass sets its own spec.warmIdle (YAO_SANDBOX_WARM_IDLE_CPU; 0)\n"
    "  --warm-idle-window DUR   how long a sandbox stays warm-idle before it is stopped\n"
    "                           (YAO_SANDBOX_WARM_IDLE_WINDOW; 30m)\n"
    "  --memory QTY             default memory limit (YAO_SANDBOX_MEMORY; 2g)\n"
    "  --cpu QTY                default cpu limit (YAO_SANDBOX_CPU; 1.0)\n"
    "  --memory-request QTY     default memory request, capped at the limit\n"
    "                           (YAO_SANDBOX_MEMORY_REQUEST; 256Mi)\n"
    "  --cpu-request QTY        default cpu request, capped at the limit (YAO_SANDBOX_CPU_REQUEST; 100m)\n"
    "  --workspace-size QTY     default workspace size (YAO_SANDBOX_WORKSPACE_SIZE; 10Gi)\n"
    "  --storage-class NAME     default workspace storage class (YAO_SANDBOX_STORAGE_CLASS)\n"
    "  --warm-workspaces N      claims of the default workspace kept Bound and ready per namespace\n"
    "                           with Sandboxes of no class, adopted by new Sandboxes; 0 = none;\n"
    "                           a SandboxClass sets its own (YAO_SANDBOX_WARM_WORKSPACES; 0)\n"
    "  --sandbox-run-as-user N|auto\n"
    "                           uid, gid and fsGroup of sandbox pods; auto = set none and let\n"
    "                           the platform choose (OpenShift SCCs) (YAO_SANDBOX_RUN_AS_USER; 1000)\n"
    "  --sandbox-image-pull-secret NAME\n"
    "                           imagePullSecrets of sandbox pods; repeatable\n"
    "                           (YAO_SANDBOX_IMAGE_PULL_SECRETS, comma-separated; none)\n"
    "  --allowed-secret NAME    a Secret that Sandboxes without a SandboxClass may name in\n"
    "                           env valueFrom.secretKeyRef; repeatable (a class says its own in\n"
    "                           spec.secrets) (YAO_SANDBOX_ALLOWED_SECRETS, comma-separated; none)\n"
    "  --workers N              reconcile workers (YAO_SANDBOX_WORKERS; 4)\n"
    "  --shards S               split Sandboxes into S shards by namespace/spec.userID; 1 = no\n"
    "                           sharding (YAO_SANDBOX_SHARDS; 1). With S > 1 --max-running is\n"
    "                           this shard's share, and the Lease is <lease-name>-shard-I\n"
    "  --shard I                the one shard (0..S-1) this replica serves (YAO_SANDBOX_SHARD; 0)\n"
    "  --resync DUR             safety-net requeue of every Sandbox (YAO_SANDBOX_RESYNC; 10m; 0 = off)\n"
    "  --max-response-size Q    read no API response above Q bytes (64Ki-64Mi); lists page under\n"
    "                           it (YAO_SANDBOX_MAX_RESPONSE_SIZE; 64Mi)\n"
    "  --metrics-addr HOST:PORT serve /healthz /readyz /metrics (YAO_SANDBOX_METRICS_ADDR; default off)\n"
    "  --leader-elect           take part in leader election via a Lease (off by default)\n"
    "  --lease-name NAME        Lease name (yao-sandbox-controller)\n"
    "  --lease-namespace NS     Lease namespace (YAO_SANDBOX_LEASE_NAMESPACE or the pod's namespace)\n"
    "  --lease-duration DUR     (15s)   --renew-deadline DUR (10s)   --retry-period DUR (2s)\n"
    "  --log-level LEVEL        debug, info, warn, error (YAO_SANDBOX_LOG_LEVEL; info)\n"
    "  --version                print the version and exit\n"
    "  -h, --help               this text\n";

const char *sbx_settings_usage(void) { return usage; }

/* Positive integer or -1. */
static int parse_int(const char *s, long max) {
    char *end;
    long v = strtol(s, &end, 10);
    return (*s && !*end && v >= 0 && v <= max) ? (int)v : -1;
}

/* A default that every Sandbox without the field inherits must pass the spec's own checks
 * (limits, image and StorageClass syntax), or each such Sandbox would become InvalidSpec:
 * parse a minimal Sandbox with the current defaults, so the rules cannot drift apart. */
static int check_defaults(const struct sbx_settings *o, const char *src, const char *val,
                          char *err, size_t errlen) {
    cJSON *sb = cJSON_Parse("{\"spec\":{\"userID\":\"u\",\"chatID\":\"c\"}}");
    struct sbx_spec s;
    char why[256];
    int rc;
    if (!sb) { errfmt(err, errlen, "%s: out of memory", src); return -1; }
    rc = sbx_spec_parse(sb, &o->controller.defaults, &s, why, sizeof(why));
    cJSON_Delete(sb);
    if (rc == 0) { sbx_spec_free(&s); return 0; }
    errfmt(err, errlen, "%s: \"%s\" cannot be a Sandbox default: %s", src, val, why);
    return -1;
}

/* A list setting: from a variable (src not a flag) a comma-separated list, copied into buf
 * and split in place; from a flag one name, the first flag replacing the variable's list.
 * 0, or -1 when there are more than max names or the list does not fit buf. */
static int name_list(const char *src, const char *val, char *buf, size_t buflen, int *from_flag,
                     const char **list, size_t *n, size_t max) {
    if (strncmp(src, "--", 2) != 0) {
        size_t len = strlen(val);
        if (len >= buflen) return -1;
        memcpy(buf, val, len + 1);
        *n = 0;
        for (char *p = buf, *next; p; p = next) {
            next = strchr(p, ',');
            if (next) *next++ = 0;
            if (!*p) continue;
            if (*n == max) return -1;
            list[(*n)++] = p;
        }
        return 0;
    }
    if (!*from_flag) *n = 0;
    *from_flag = 1;
    if (*n == max) return -1;
    list[(*n)++] = val;
    return 0;
}

/* Apply one setting by its flag name (without "--"). 0, or -1 with err. src names
 * where the value came from, for the message. */
static int apply(struct sbx_settings *o, const char *name, const char *val, const char *src,
                 char *err, size_t errlen) {
    struct sbx_defaults *d = &o->controller.defaults;
    int64_t v;
#define BAD(what) do { errfmt(err, errlen, "%s: %s \"%s\"", src, what, val); return -1; } while (0)
    if (!strcmp(name, "kubeconfig")) o->kubeconfig = val;
    else if (!strcmp(name, "namespace")) o->controller.namespace_ = *val ? val : NULL;
    else if (!strcmp(name, "image")) { if (!*val) BAD("empty image"); d->image = val; d->image_builtin = 0; }
    else if (!strcmp(name, "max-running")) {
        int n = parse_int(val, 1000000);
        if (n < 0) BAD("not a count");
        o->controller.limits.max_running = n;
    } else if (!strcmp(name, "max-running-per-user")) {
        int n = parse_int(val, 1000000);
        if (n < 0) BAD("not a count");
        o->controller.limits.max_running_per_user = n;
    } else if (!strcmp(name, "lifecycle")) {
        if (sbx_lifecycle_parse(val, &d->lifecycle) < 0)
            BAD("not a lifecycle (session, long-running or persistent)");
    } else if (!strcmp(name, "idle-timeout")) {
        if (qty_parse_duration(val, &v) < 0 || v < 1000) BAD("not a duration of at least 1s");
        d->idle_timeout_ms = v;
    } else if (!strcmp(name, "warm-idle-cpu")) {
        if (!strcmp(val, "0")) v = 0;
        else if (qty_parse_cpu(val, &v) < 0 || v < 1) BAD("not a cpu quantity (0 = off)");
        d->warm_idle_cpu_millis = v;
    } else if (!strcmp(name, "warm-idle-window")) {
        if (qty_parse_duration(val, &v) < 0 || v < 1000) BAD("not a duration of at least 1s");
        d->warm_idle_window_ms = v;
    } else if (!strcmp(name, "memory")) {
        if (qty_parse_memory(val, &v) < 0 || v < (4 << 20)) BAD("not a memory quantity of at least 4Mi");
        d->memory_bytes = v;
    } else if (!strcmp(name, "cpu")) {
        if (qty_parse_cpu(val, &v) < 0 || v < 1) BAD("not a cpu quantity");
        d->cpu_millis = v;
    } else if (!strcmp(name, "memory-request")) {
        if (qty_parse_memory(val, &v) < 0 || v < (4 << 20)) BAD("not a memory quantity of at least 4Mi");
        d->memory_request_bytes = v;
        o->memory_request_set = 1;
    } else if (!strcmp(name, "cpu-request")) {
        if (qty_parse_cpu(val, &v) < 0 || v < 1) BAD("not a cpu quantity of at least 1m");
        d->cpu_request_millis = v;
        o->cpu_request_set = 1;
    } else if (!strcmp(name, "image-pull-policy")) {
        if (sbx_pull_policy_parse(val, &d->pull_policy) < 0)
            BAD("not an image pull policy (Always, IfNotPresent or Never)");
    } else if (!strcmp(name, "workspace-size")) {
        if (qty_parse_memory(val, &v) < 0 || v < (1 << 20)) BAD("not a storage quantity of at least 1Mi");
        d->workspace_bytes = v;
    } else if (!strcmp(name, "storage-class")) d->storage_class = *val ? val : NULL;
    else if (!strcmp(name, "warm-workspaces")) {
        int n = parse_int(val, 1000);
        if (n < 0) BAD("not a count (0-1000)");
        o->controller.warm_workspaces = n;
    }
    else if (!strcmp(name, "sandbox-run-as-user")) {
        if (!strcmp(val, "auto")) d->run_as_user = SBX_RUN_AS_AUTO;
        else {
            int n = parse_int(val, 2147483647);
            if (n < 1) BAD("not a uid (1-2147483647) or auto");
            d->run_as_user = n;
        }
    } else if (!strcmp(name, "sandbox-image-pull-secret")) {
        if (name_list(src, val, o->pull_secrets_env, sizeof(o->pull_secrets_env), &o->pull_secrets_from_flag,
                      d->pull_secrets, &d->npull_secrets, SBX_PULL_SECRETS_MAX) < 0)
            BAD("more than 16 pull secrets (or a list too long), at");
    } else if (!strcmp(name, "allowed-secret")) {
        if (name_list(src, val, o->allowed_secrets_env, sizeof(o->allowed_secrets_env), &o->allowed_secrets_from_flag,
                      d->allowed_secrets, &d->nallowed_secrets, SBX_ALLOWED_SECRETS_MAX) < 0)
            BAD("more than 64 allowed secrets (or a list too long), at");
        for (size_t i = 0; i < d->nallowed_secrets; i++)
            if (!sbx_is_dns_subdomain(d->allowed_secrets[i])) BAD("not a Secret name (DNS-1123 subdomain) in");
    }
    else if (!strcmp(name, "workers")) {
        int n = parse_int(val, 256);
        if (n < 1) BAD("not a worker count (1-256)");
        o->controller.workers = n;
    } else if (!strcmp(name, "shards")) {
        int n = parse_int(val, SBX_SHARDS_MAX);
        if (n < 1) BAD("not a shard count (1-1024)");
        o->controller.shards = n;
    } else if (!strcmp(name, "shard")) {
        int n = parse_int(val, SBX_SHARDS_MAX - 1);
        if (n < 0) BAD("not a shard number (0-1023)");
        o->controller.shard = n;
    } else if (!strcmp(name, "resync")) {
        if (qty_parse_duration(val, &v) < 0) BAD("not a duration");
        o->controller.resync_ms = v;
    } else if (!strcmp(name, "max-response-size")) {
        if (qty_parse_memory(val, &v) < 0 || v < (64 << 10) || v > (int64_t)KUBE_MAX_BODY)
            BAD("not a size from 64Ki to 64Mi");
        o->max_response_bytes = v;
    } else if (!strcmp(name, "metrics-addr")) o->metrics_addr = val;
    else if (!strcmp(name, "lease-name")) o->lease_name = val;
    else if (!strcmp(name, "lease-namespace")) o->lease_namespace = val;
    else if (!strcmp(name, "lease-duration") || !strcmp(name, "renew-deadline") || !strcmp(name, "retry-period")) {
        if (qty_parse_duration(val, &v) < 0 || v < 100) BAD("not a duration");
        if (name[1] == 'e' && name[2] == 'a') o->lease_duration_ms = v;
        else if (name[0] == 'r' && name[1] == 'e' && name[2] == 'n') o->renew_deadline_ms = v;
        else o->retry_period_ms = v;
    } else if (!strcmp(name, "log-level")) {
        if (strcmp(val, "debug") && strcmp(val, "info") && strcmp(val, "warn") && strcmp(val, "error"))
            BAD("not a log level (debug, info, warn, error)");
        o->log_level = val;
    } else {
        errfmt(err, errlen, "unknown flag --%s (see --help)", name);
        return -1;
    }
#undef BAD
    if (!strcmp(name, "image") || !strcmp(name, "idle-timeout") || !strcmp(name, "lifecycle") || !strcmp(name, "memory") ||
        !strcmp(name, "cpu") || !strcmp(name, "memory-request") || !strcmp(name, "cpu-request") ||
        !strcmp(name, "workspace-size") || !strcmp(name, "storage-class") ||
        !strcmp(name, "sandbox-run-as-user") || !strcmp(name, "sandbox-image-pull-secret"))
        return check_defaults(o, src, val, err, errlen);
    return 0;
}

/* A request given explicitly must not exceed its limit (a Sandbox without requests of its
 * own would otherwise be refused by the API server, or silently get less than asked);
 * checked once every flag and variable is in, since either may come first. */
static int check_requests(const struct sbx_settings *o, char *err, size_t errlen) {
    const struct sbx_defaults *d = &o->controller.defaults;
    char req[32], lim[32];
    if (o->memory_request_set && d->memory_request_bytes > d->memory_bytes) {
        qty_format_memory(d->memory_request_bytes, req, sizeof(req));
        qty_format_memory(d->memory_bytes, lim, sizeof(lim));
        errfmt(err, errlen, "memory request %s (--memory-request / YAO_SANDBOX_MEMORY_REQUEST) is above "
                 "the memory limit %s (--memory / YAO_SANDBOX_MEMORY)", req, lim);
        return -1;
    }
    if (o->cpu_request_set && d->cpu_request_millis > d->cpu_millis) {
        qty_format_cpu(d->cpu_request_millis, req, sizeof(req));
        qty_format_cpu(d->cpu_millis, lim, sizeof(lim));
        errfmt(err, errlen, "cpu request %s (--cpu-request / YAO_SANDBOX_CPU_REQUEST) is above "
                 "the cpu limit %s (--cpu / YAO_SANDBOX_CPU)", req, lim);
        return -1;
    }
    return 0;
}

static const struct { const char *var, *flag; } env_map[] = {
    {"YAO_SANDBOX_NAMESPACE", "namespace"},       {"YAO_SANDBOX_IMAGE", "image"},
    {"YAO_SANDBOX_MAX", "max-running"},           {"YAO_SANDBOX_IDLE_TIMEOUT", "idle-timeout"},
    {"YAO_SANDBOX_LIFECYCLE", "lifecycle"},
    {"YAO_SANDBOX_WARM_IDLE_CPU", "warm-idle-cpu"}, {"YAO_SANDBOX_WARM_IDLE_WINDOW", "warm-idle-window"},
    {"YAO_SANDBOX_MAX_PER_USER", "max-running-per-user"},
    {"YAO_SANDBOX_MEMORY", "memory"},             {"YAO_SANDBOX_CPU", "cpu"},
    {"YAO_SANDBOX_MEMORY_REQUEST", "memory-request"}, {"YAO_SANDBOX_CPU_REQUEST", "cpu-request"},
    {"YAO_SANDBOX_IMAGE_PULL_POLICY", "image-pull-policy"},
    {"YAO_SANDBOX_WORKSPACE_SIZE", "workspace-size"}, {"YAO_SANDBOX_STORAGE_CLASS", "storage-class"},
    {"YAO_SANDBOX_WARM_WORKSPACES", "warm-workspaces"},
    {"YAO_SANDBOX_WORKERS", "workers"},           {"YAO_SANDBOX_RESYNC", "resync"},
    {"YAO_SANDBOX_MAX_RESPONSE_SIZE", "max-response-size"},
    {"YAO_SANDBOX_SHARDS", "shards"},             {"YAO_SANDBOX_SHARD", "shard"},
    {"YAO_SANDBOX_METRICS_ADDR", "metrics-addr"}, {"YAO_SANDBOX_LEASE_NAMESPACE", "lease-namespace"},
    {"YAO_SANDBOX_LOG_LEVEL", "log-level"},
    {"YAO_SANDBOX_RUN_AS_USER", "sandbox-run-as-user"},
    /* comma-separated: apply() splits it (the flag is repeated instead) */
    {"YAO_SANDBOX_IMAGE_PULL_SECRETS", "sandbox-image-pull-secret"},
    {"YAO_SANDBOX_ALLOWED_SECRETS", "allowed-secret"},
};

int sbx_settings_parse(int argc, char **argv, sbx_getenv_fn env, struct sbx_settings *o,
                       char *err, size_t errlen) {
    memset(o, 0, sizeof(*o));
    sbx_defaults_init(&o->controller.defaults);
    o->controller.limits.max_running = 100;
    o->controller.workers = 4;
    o->controller.shards = 1;
    o->controller.resync_ms = 10 * 60 * 1000;
    o->max_response_bytes = KUBE_MAX_BODY;
    o->log_level = "info";
    o->metrics_addr = "";
    o->lease_name = "yao-sandbox-controller";
    o->lease_duration_ms = 15000;
    o->renew_deadline_ms = 10000;
    o->retry_period_ms = 2000;

    for (size_t i = 0; env && i < sizeof(env_map) / sizeof(env_map[0]); i++) {
        const char *v = env(env_map[i].var);
        if (v && apply(o, env_map[i].flag, v, env_map[i].var, err, errlen) < 0) return -1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { o->show_help = 1; continue; }
        if (!strcmp(a, "--version")) { o->show_version = 1; continue; }
        if (!strcmp(a, "--leader-elect") || !strcmp(a, "--leader-elect=true")) { o->leader_elect = 1; continue; }
        if (!strcmp(a, "--leader-elect=false")) { o->leader_elect = 0; continue; }
        if (strncmp(a, "--", 2) != 0) {
            errfmt(err, errlen, "unexpected argument \"%s\" (see --help)", a);
            return -1;
        }
        char name[64];
        const char *eq = strchr(a, '='), *val;
        size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (n >= sizeof(name)) { errfmt(err, errlen, "unknown flag %s", a); return -1; }
        memcpy(name, a + 2, n);
        name[n] = 0;
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) { errfmt(err, errlen, "flag --%s needs a value", name); return -1; }
            val = argv[++i];
        }
        char src[80];
        snprintf(src, sizeof(src), "--%s", name);
        if (apply(o, name, val, src, err, errlen) < 0) return -1;
    }
    if (check_requests(o, err, errlen) < 0) return -1;
    if (o->controller.shard >= o->controller.shards) {
        errfmt(err, errlen, "--shard %d (YAO_SANDBOX_SHARD) is not below --shards %d (YAO_SANDBOX_SHARDS)",
                 o->controller.shard, o->controller.shards);
        return -1;
    }
    o->lease_base = o->lease_name;
    if (o->controller.shards > 1) {
        /* One Lease per shard: two replicas of one shard fence each other, replicas of
         * different shards never meet. */
        int n = snprintf(o->lease_name_shard, sizeof(o->lease_name_shard), "%s-shard-%d", o->lease_name,
                         o->controller.shard);
        if (n < 0 || (size_t)n >= sizeof(o->lease_name_shard) || n > 253) {
            errfmt(err, errlen, "--lease-name too long for a shard suffix");
            return -1;
        }
        o->lease_name = o->lease_name_shard;
    }
    if (o->renew_deadline_ms >= o->lease_duration_ms || o->retry_period_ms >= o->renew_deadline_ms) {
        errfmt(err, errlen, "leader election needs retry-period < renew-deadline < lease-duration");
        return -1;
    }
    return 0;
}
