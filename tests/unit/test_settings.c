/* tests/unit/test_settings.c — controller configuration (sandbox/manager/settings.c): built-in
 * defaults, every YAO_SANDBOX_* variable (through a fake getenv backed by a table),
 * flags over environment, "--flag=value" and "--flag value", boolean and help/version
 * flags, errors that name the offending flag or variable, the lease timing order, and
 * defaults that a Sandbox spec would accept (or a startup error). */
#include "check.h"

#include <stdarg.h>

#include "sandbox/manager/settings.h"
#include "sandbox/model/spec.h"

#define SEC INT64_C(1000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define GIB (INT64_C(1) << 30)
#define MIB (INT64_C(1) << 20)
#define TIB (INT64_C(1) << 40)

/* ---- a fake environment --------------------------------------------------------------- */

static const char *const *fake_env;  /* NULL-terminated name, value pairs */
static int foreign_lookups;          /* lookups of names outside YAO_SANDBOX_* */

static const char *fake_getenv(const char *name) {
    if (strncmp(name, "YAO_SANDBOX_", 12) != 0) foreign_lookups++;
    for (const char *const *p = fake_env; p && p[0]; p += 2)
        if (!strcmp(p[0], name)) return p[1];
    return NULL;
}

static char err[512];

/* Parses argv (a NULL-terminated list after argv[0]) with env (NULL-terminated pairs). */
static int parse_with(const char *const *env, struct sbx_settings *o, ...) {
    char *argv[64];
    int argc = 0;
    va_list ap;
    const char *a;
    argv[argc++] = (char *)"yao-sandbox-controller";
    va_start(ap, o);
    while ((a = va_arg(ap, const char *)) != NULL && argc < 63) argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    fake_env = env;
    err[0] = '\0';
    return sbx_settings_parse(argc, argv, fake_getenv, o, err, sizeof(err));
}

/* err contains every given substring (NULL-terminated list). */
static int err_has(const char *first, ...) {
    va_list ap;
    const char *s = first;
    int ok = 1;
    va_start(ap, first);
    for (; s; s = va_arg(ap, const char *))
        if (!strstr(err, s)) {
            fprintf(stderr, "  error \"%s\" lacks \"%s\"\n", err, s);
            ok = 0;
        }
    va_end(ap);
    return ok;
}

/* ---- defaults ------------------------------------------------------------------------- */

TEST(defaults) {
    struct sbx_settings o;
    foreign_lookups = 0;
    CHECK_INT(parse_with(NULL, &o, NULL), 0);
    CHECK_STR(err, "");
    CHECK_INT(o.controller.limits.max_running, 100);
    CHECK_INT(o.controller.limits.max_running_per_user, 0);
    CHECK_INT(o.controller.workers, 4);
    CHECK_INT(o.controller.resync_ms, 10 * MIN);
    CHECK_INT(o.max_response_bytes, 64 * MIB);
    CHECK(o.controller.namespace_ == NULL);
    CHECK_STR(o.controller.defaults.image, "yao-sandbox/sandbox:" YAO_VERSION);
    CHECK_INT(o.controller.defaults.image_builtin, 1);
    CHECK_INT(o.controller.defaults.pull_policy, SBX_PULL_BY_IMAGE);
    CHECK_INT(o.controller.defaults.memory_request_bytes, 256 * MIB);
    CHECK_INT(o.controller.defaults.cpu_request_millis, 100);
    CHECK_INT(o.memory_request_set, 0);
    CHECK_INT(o.cpu_request_set, 0);
    CHECK_INT(o.controller.defaults.idle_timeout_ms, 30 * MIN);
    CHECK_INT(o.controller.defaults.memory_bytes, 2 * GIB);
    CHECK_INT(o.controller.defaults.cpu_millis, 1000);
    CHECK_INT(o.controller.defaults.workspace_bytes, 10 * GIB);
    CHECK(o.controller.defaults.storage_class == NULL);
    CHECK(o.kubeconfig == NULL);
    CHECK_STR(o.log_level, "info");
    CHECK_STR(o.metrics_addr, "");
    CHECK_INT(o.leader_elect, 0);
    CHECK_STR(o.lease_name, "yao-sandbox-controller");
    CHECK(o.lease_namespace == NULL);
    CHECK_INT(o.lease_duration_ms, 15 * SEC);
    CHECK_INT(o.renew_deadline_ms, 10 * SEC);
    CHECK_INT(o.retry_period_ms, 2 * SEC);
    CHECK_INT(o.show_help, 0);
    CHECK_INT(o.show_version, 0);
    CHECK_INT(foreign_lookups, 0); /* only YAO_SANDBOX_* variables are read */
}

TEST(default_lifecycle) {
    struct sbx_settings o;
    static const char *const env[] = {"YAO_SANDBOX_LIFECYCLE", "persistent", NULL};
    CHECK_INT(parse_with(NULL, &o, NULL), 0);
    CHECK_INT(o.controller.defaults.lifecycle, SBX_SESSION);
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK_INT(o.controller.defaults.lifecycle, SBX_PERSISTENT);
    CHECK_INT(parse_with(env, &o, "--lifecycle=long-running", NULL), 0);   /* the flag wins */
    CHECK_INT(o.controller.defaults.lifecycle, SBX_LONG_RUNNING);
}

TEST(no_env_function) {
    struct sbx_settings o;
    char *argv[] = {(char *)"ctl", (char *)"--workers=2", NULL};
    err[0] = '\0';
    CHECK_INT(sbx_settings_parse(2, argv, NULL, &o, err, sizeof(err)), 0);
    CHECK_INT(o.controller.workers, 2);
    CHECK_INT(o.controller.limits.max_running, 100);
    /* argc 0 or 1: defaults */
    CHECK_INT(sbx_settings_parse(1, argv, NULL, &o, err, sizeof(err)), 0);
    CHECK_INT(o.controller.workers, 4);
}

TEST(usage_mentions_every_flag) {
    static const char *const flags[] = {
        "--kubeconfig", "--namespace", "--image", "--max-running", "--idle-timeout",
        "--memory", "--cpu", "--workspace-size", "--storage-class", "--workers", "--resync",
        "--metrics-addr", "--leader-elect", "--lease-name", "--lease-namespace",
        "--image-pull-policy", "YAO_SANDBOX_IMAGE_PULL_POLICY", "--memory-request",
        "YAO_SANDBOX_MEMORY_REQUEST", "--cpu-request", "YAO_SANDBOX_CPU_REQUEST", "IfNotPresent",
        "256Mi", "100m", SBX_DEFAULT_IMAGE,
        "--lease-duration", "--renew-deadline", "--retry-period", "--log-level", "--version",
        "--help", "YAO_SANDBOX_MAX", "--lifecycle", "YAO_SANDBOX_LIFECYCLE",
        "--shards", "YAO_SANDBOX_SHARDS", "--shard ", "YAO_SANDBOX_SHARD;",
        "--max-response-size", "YAO_SANDBOX_MAX_RESPONSE_SIZE",
        "--warm-idle-cpu", "YAO_SANDBOX_WARM_IDLE_CPU", "--warm-idle-window", "YAO_SANDBOX_WARM_IDLE_WINDOW",
    };
    const char *u = sbx_settings_usage();
    CHECK(u != NULL);
    for (size_t i = 0; u && i < sizeof(flags) / sizeof(flags[0]); i++)
        if (!strstr(u, flags[i])) {
            fprintf(stderr, "  usage lacks %s\n", flags[i]);
            CHECK(0);
        }
}

/* ---- environment ---------------------------------------------------------------------- */

static const char *const full_env[] = {
    "YAO_SANDBOX_NAMESPACE", "sandboxes",
    "YAO_SANDBOX_IMAGE", "registry.local/sb:1.2",
    "YAO_SANDBOX_MAX", "7",
    "YAO_SANDBOX_MAX_PER_USER", "2",
    "YAO_SANDBOX_IDLE_TIMEOUT", "1h30m",
    "YAO_SANDBOX_MEMORY", "512m",
    "YAO_SANDBOX_CPU", "0.5",
    "YAO_SANDBOX_MEMORY_REQUEST", "128m",
    "YAO_SANDBOX_CPU_REQUEST", "0.25",
    "YAO_SANDBOX_IMAGE_PULL_POLICY", "Always",
    "YAO_SANDBOX_WORKSPACE_SIZE", "20Gi",
    "YAO_SANDBOX_STORAGE_CLASS", "fast-ssd",
    "YAO_SANDBOX_WARM_WORKSPACES", "3",
    "YAO_SANDBOX_WORKERS", "8",
    "YAO_SANDBOX_RESYNC", "5m",
    "YAO_SANDBOX_METRICS_ADDR", ":9090",
    "YAO_SANDBOX_LEASE_NAMESPACE", "yao-system",
    "YAO_SANDBOX_LOG_LEVEL", "debug",
    "PATH", "/bin", /* unrelated */
    NULL,
};

TEST(env_applied) {
    struct sbx_settings o;
    CHECK_INT(parse_with(full_env, &o, NULL), 0);
    CHECK_STR(err, "");
    CHECK_STR(o.controller.namespace_, "sandboxes");
    CHECK_STR(o.controller.defaults.image, "registry.local/sb:1.2");
    CHECK_INT(o.controller.defaults.image_builtin, 0);
    CHECK_INT(o.controller.limits.max_running, 7);
    CHECK_INT(o.controller.limits.max_running_per_user, 2);
    CHECK_INT(o.controller.warm_workspaces, 3);
    CHECK_INT(o.controller.defaults.idle_timeout_ms, 90 * MIN);
    CHECK_INT(o.controller.defaults.memory_bytes, 512 * MIB); /* Docker-style "m" */
    CHECK_INT(o.controller.defaults.cpu_millis, 500);
    CHECK_INT(o.controller.defaults.memory_request_bytes, 128 * MIB);
    CHECK_INT(o.controller.defaults.cpu_request_millis, 250);
    CHECK_INT(o.controller.defaults.pull_policy, SBX_PULL_ALWAYS);
    CHECK_INT(o.controller.defaults.workspace_bytes, 20 * GIB);
    CHECK_STR(o.controller.defaults.storage_class, "fast-ssd");
    CHECK_INT(o.controller.workers, 8);
    CHECK_INT(o.controller.resync_ms, 5 * MIN);
    CHECK_STR(o.metrics_addr, ":9090");
    CHECK_STR(o.lease_namespace, "yao-system");
    CHECK_STR(o.log_level, "debug");
    /* strings point into the environment's values */
    CHECK(o.controller.defaults.image == full_env[3]);
}

TEST(env_empty_strings) {
    static const char *const env[] = {
        "YAO_SANDBOX_NAMESPACE", "", "YAO_SANDBOX_STORAGE_CLASS", "", NULL,
    };
    struct sbx_settings o;
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK(o.controller.namespace_ == NULL);          /* "" = all namespaces */
    CHECK(o.controller.defaults.storage_class == NULL);
}

TEST(env_max_zero_means_no_limit) {
    static const char *const env[] = {"YAO_SANDBOX_MAX", "0", NULL};
    struct sbx_settings o;
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK_INT(o.controller.limits.max_running, 0);
}

/* ---- flags ---------------------------------------------------------------------------- */

TEST(flags_equals_form) {
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, "--kubeconfig=/tmp/kc", "--namespace=ns1",
                         "--image=img:2", "--max-running=3", "--idle-timeout=90s",
                         "--memory=1Gi", "--cpu=250m", "--workspace-size=1Gi",
                         "--memory-request=300Mi", "--cpu-request=20m", "--image-pull-policy=Never",
                         "--storage-class=standard", "--workers=16", "--resync=0",
                         "--metrics-addr=127.0.0.1:8080", "--lease-name=l1",
                         "--lease-namespace=ns2", "--lease-duration=30s",
                         "--renew-deadline=20s", "--retry-period=5s", "--log-level=warn",
                         "--max-running-per-user=4", NULL), 0);
    CHECK_STR(err, "");
    CHECK_STR(o.kubeconfig, "/tmp/kc");
    CHECK_STR(o.controller.namespace_, "ns1");
    CHECK_STR(o.controller.defaults.image, "img:2");
    CHECK_INT(o.controller.limits.max_running, 3);
    CHECK_INT(o.controller.limits.max_running_per_user, 4);
    CHECK_INT(o.controller.defaults.idle_timeout_ms, 90 * SEC);
    CHECK_INT(o.controller.defaults.memory_bytes, GIB);
    CHECK_INT(o.controller.defaults.cpu_millis, 250);
    CHECK_INT(o.controller.defaults.memory_request_bytes, 300 * MIB);
    CHECK_INT(o.controller.defaults.cpu_request_millis, 20);
    CHECK_INT(o.controller.defaults.pull_policy, SBX_PULL_NEVER);
    CHECK_INT(o.controller.defaults.workspace_bytes, GIB);
    CHECK_STR(o.controller.defaults.storage_class, "standard");
    CHECK_INT(o.controller.workers, 16);
    CHECK_INT(o.controller.resync_ms, 0);
    CHECK_STR(o.metrics_addr, "127.0.0.1:8080");
    CHECK_STR(o.lease_name, "l1");
    CHECK_STR(o.lease_namespace, "ns2");
    CHECK_INT(o.lease_duration_ms, 30 * SEC);
    CHECK_INT(o.renew_deadline_ms, 20 * SEC);
    CHECK_INT(o.retry_period_ms, 5 * SEC);
    CHECK_STR(o.log_level, "warn");
}

TEST(flags_space_form) {
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, "--kubeconfig", "/tmp/kc", "--max-running", "12",
                         "--idle-timeout", "2h", "--memory", "2g", "--cpu", "1.5",
                         "--workers", "1", "--log-level", "error", "--lease-duration", "1m",
                         NULL), 0);
    CHECK_STR(o.kubeconfig, "/tmp/kc");
    CHECK_INT(o.controller.limits.max_running, 12);
    CHECK_INT(o.controller.defaults.idle_timeout_ms, 2 * HOUR);
    CHECK_INT(o.controller.defaults.memory_bytes, 2 * GIB);
    CHECK_INT(o.controller.defaults.cpu_millis, 1500);
    CHECK_INT(o.controller.workers, 1);
    CHECK_STR(o.log_level, "error");
    CHECK_INT(o.lease_duration_ms, MIN);
    /* a value may contain '=' in the space form, and starts after the first '=' */
    CHECK_INT(parse_with(NULL, &o, "--metrics-addr", "a=b", "--lease-name=x=y", NULL), 0);
    CHECK_STR(o.metrics_addr, "a=b");
    CHECK_STR(o.lease_name, "x=y");
}

TEST(flag_values_point_into_argv) {
    struct sbx_settings o;
    char kc[] = "/etc/kube/config";
    char *argv[] = {(char *)"ctl", (char *)"--kubeconfig", kc, NULL};
    CHECK_INT(sbx_settings_parse(3, argv, NULL, &o, err, sizeof(err)), 0);
    CHECK(o.kubeconfig == kc);
}

TEST(warm_idle_defaults_off_and_set_by_flag_or_env) {
    struct sbx_settings o;
    static const char *const none[] = {NULL};
    static const char *const env[] = {"YAO_SANDBOX_WARM_IDLE_CPU", "50m", "YAO_SANDBOX_WARM_IDLE_WINDOW", "5m", NULL};
    CHECK_INT(parse_with(none, &o, NULL), 0);
    CHECK_INT(o.controller.defaults.warm_idle_cpu_millis, 0);
    CHECK_INT(o.controller.defaults.warm_idle_window_ms, 30 * MIN);
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK_INT(o.controller.defaults.warm_idle_cpu_millis, 50);
    CHECK_INT(o.controller.defaults.warm_idle_window_ms, 5 * MIN);
    CHECK_INT(parse_with(env, &o, "--warm-idle-cpu=0", NULL), 0);
    CHECK_INT(o.controller.defaults.warm_idle_cpu_millis, 0);
    CHECK(parse_with(none, &o, "--warm-idle-cpu=lots", NULL) < 0);
    CHECK(parse_with(none, &o, "--warm-idle-window=5ms", NULL) < 0);
}

TEST(flags_override_env) {
    struct sbx_settings o;
    CHECK_INT(parse_with(full_env, &o, "--max-running=50", "--idle-timeout", "10m",
                         "--namespace=", "--log-level=info", "--image", "other:3", NULL), 0);
    CHECK_INT(o.controller.limits.max_running, 50);
    CHECK_INT(o.controller.defaults.idle_timeout_ms, 10 * MIN);
    CHECK(o.controller.namespace_ == NULL);
    CHECK_STR(o.log_level, "info");
    CHECK_STR(o.controller.defaults.image, "other:3");
    /* what the flags did not set still comes from the environment */
    CHECK_INT(o.controller.workers, 8);
    CHECK_INT(o.controller.defaults.memory_bytes, 512 * MIB);
    CHECK_STR(o.lease_namespace, "yao-system");
    /* the last flag wins */
    CHECK_INT(parse_with(full_env, &o, "--workers=2", "--workers", "3", NULL), 0);
    CHECK_INT(o.controller.workers, 3);
}

TEST(boolean_and_info_flags) {
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, "--leader-elect", NULL), 0);
    CHECK_INT(o.leader_elect, 1);
    CHECK_INT(parse_with(NULL, &o, "--leader-elect=true", NULL), 0);
    CHECK_INT(o.leader_elect, 1);
    CHECK_INT(parse_with(NULL, &o, "--leader-elect", "--leader-elect=false", NULL), 0);
    CHECK_INT(o.leader_elect, 0);
    CHECK_INT(parse_with(NULL, &o, "-h", NULL), 0);
    CHECK_INT(o.show_help, 1);
    CHECK_INT(parse_with(NULL, &o, "--help", NULL), 0);
    CHECK_INT(o.show_help, 1);
    CHECK_INT(o.show_version, 0);
    CHECK_INT(parse_with(NULL, &o, "--version", NULL), 0);
    CHECK_INT(o.show_version, 1);
    CHECK_INT(o.show_help, 0);
    /* --leader-elect takes no separate value: the next word is its own argument */
    CHECK_INT(parse_with(NULL, &o, "--leader-elect", "--workers", "2", NULL), 0);
    CHECK_INT(o.leader_elect, 1);
    CHECK_INT(o.controller.workers, 2);
}

TEST(limits_at_the_edges) {
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, "--workers=256", "--max-running=1000000",
                         "--idle-timeout=1s", "--memory=4Mi", "--cpu=1m",
                         "--workspace-size=1Mi", NULL), 0);
    CHECK_INT(o.controller.workers, 256);
    CHECK_INT(o.controller.limits.max_running, 1000000);
    CHECK_INT(o.controller.defaults.idle_timeout_ms, SEC);
    CHECK_INT(o.controller.defaults.memory_bytes, 4 * MIB);
    CHECK_INT(o.controller.defaults.cpu_millis, 1);
    CHECK_INT(o.controller.defaults.workspace_bytes, MIB);
}

/* ---- requests and pull policy ---------------------------------------------------------- */

TEST(requests_and_pull_policy_flags_override_env) {
    struct sbx_settings o;
    CHECK_INT(parse_with(full_env, &o, "--cpu-request", "0.1", "--image-pull-policy", "IfNotPresent", NULL), 0);
    CHECK_INT(o.controller.defaults.cpu_request_millis, 100);
    CHECK_INT(o.controller.defaults.memory_request_bytes, 128 * MIB); /* still the variable's */
    CHECK_INT(o.controller.defaults.pull_policy, SBX_PULL_IF_NOT_PRESENT);
    CHECK_INT(o.memory_request_set, 1);
    CHECK_INT(o.cpu_request_set, 1);
}

TEST(pull_policy_is_validated) {
    static const char *const bad[] = {"always", "Sometimes", "", "IfNotPresent "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sbx_settings o;
        char flag[64];
        snprintf(flag, sizeof(flag), "--image-pull-policy=%s", bad[i]);
        CHECK_INT(parse_with(NULL, &o, flag, NULL), -1);
        CHECK(err_has("--image-pull-policy", "Always, IfNotPresent or Never", NULL));
        const char *env[] = {"YAO_SANDBOX_IMAGE_PULL_POLICY", bad[i], NULL};
        CHECK_INT(parse_with(env, &o, NULL), -1);
        CHECK(err_has("YAO_SANDBOX_IMAGE_PULL_POLICY", "not an image pull policy", NULL));
    }
}

TEST(explicit_request_above_limit_is_an_error) {
    struct sbx_settings o;
    /* either order, flag or variable: checked once everything is read */
    CHECK_INT(parse_with(NULL, &o, "--memory-request=3Gi", NULL), -1);
    CHECK(err_has("memory request 3Gi", "YAO_SANDBOX_MEMORY_REQUEST", "memory limit 2Gi", NULL));
    CHECK_INT(parse_with(NULL, &o, "--memory-request=1Gi", "--memory=512Mi", NULL), -1);
    CHECK(err_has("memory request 1Gi", "memory limit 512Mi", "--memory", NULL));
    static const char *const env[] = {"YAO_SANDBOX_CPU_REQUEST", "2", NULL};
    CHECK_INT(parse_with(env, &o, NULL), -1);
    CHECK(err_has("cpu request 2", "--cpu-request / YAO_SANDBOX_CPU_REQUEST", "cpu limit 1", NULL));
    /* raised together with the limit it is fine, and equal to the limit too */
    CHECK_INT(parse_with(env, &o, "--cpu=2", "--memory-request=2g", NULL), 0);
    CHECK_INT(o.controller.defaults.cpu_request_millis, 2000);
    CHECK_INT(o.controller.defaults.memory_request_bytes, 2 * GIB);
}

TEST(builtin_requests_are_capped_by_a_lowered_limit) {
    /* only the limit lowered below the built-in request: no error, each Sandbox gets the
     * limit as its request */
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, "--memory=128Mi", "--cpu=50m", NULL), 0);
    cJSON *sb = cJSON_Parse("{\"spec\":{\"userID\":\"u\",\"chatID\":\"c\"}}");
    struct sbx_spec s;
    char e[256];
    CHECK_INT(sbx_spec_parse(sb, &o.controller.defaults, &s, e, sizeof(e)), 0);
    CHECK_INT(s.memory_request_bytes, 128 * MIB);
    CHECK_INT(s.cpu_request_millis, 50);
    sbx_spec_free(&s);
    cJSON_Delete(sb);
}

TEST(request_values_are_validated) {
    static const char *const cases[][2] = {
        {"--memory-request=lots", "--memory-request"},
        {"--memory-request=1Mi", "at least 4Mi"},
        {"--cpu-request=0", "--cpu-request"},
        {"--cpu-request=-1", "not a cpu quantity"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sbx_settings o;
        CHECK_INT(parse_with(NULL, &o, cases[i][0], NULL), -1);
        CHECK(err_has(cases[i][1], NULL));
    }
}

/* ---- errors --------------------------------------------------------------------------- */

TEST(env_errors_name_the_variable) {
    static const char *const cases[][3] = {
        /* variable, value, words of the message */
        {"YAO_SANDBOX_IDLE_TIMEOUT", "soon", "duration"},
        {"YAO_SANDBOX_IDLE_TIMEOUT", "500ms", "duration"},
        {"YAO_SANDBOX_IDLE_TIMEOUT", "-5m", "duration"},
        {"YAO_SANDBOX_RESYNC", "often", "duration"},
        {"YAO_SANDBOX_MEMORY", "lots", "memory"},
        {"YAO_SANDBOX_MEMORY", "1Mi", "memory"},
        {"YAO_SANDBOX_MEMORY", "2GB", "memory"},
        {"YAO_SANDBOX_CPU", "fast", "cpu"},
        {"YAO_SANDBOX_CPU", "0", "cpu"},
        {"YAO_SANDBOX_WORKSPACE_SIZE", "big", "storage"},
        {"YAO_SANDBOX_MAX", "abc", "count"},
        {"YAO_SANDBOX_MAX", "-1", "count"},
        {"YAO_SANDBOX_MAX", "1000001", "count"},
        {"YAO_SANDBOX_MAX", "", "count"},
        {"YAO_SANDBOX_MAX", "5x", "count"},
        {"YAO_SANDBOX_MAX", "99999999999999999999", "count"},
        {"YAO_SANDBOX_WARM_WORKSPACES", "-1", "count"},
        {"YAO_SANDBOX_WARM_WORKSPACES", "1001", "count"},
        {"YAO_SANDBOX_WORKERS", "0", "worker"},
        {"YAO_SANDBOX_WORKERS", "257", "worker"},
        {"YAO_SANDBOX_LOG_LEVEL", "verbose", "log level"},
        {"YAO_SANDBOX_LOG_LEVEL", "INFO", "log level"},
        {"YAO_SANDBOX_IMAGE", "", "image"},
        {"YAO_SANDBOX_LIFECYCLE", "forever", "lifecycle"},
        /* every Sandbox without spec.run would be InvalidSpec */
        {"YAO_SANDBOX_LIFECYCLE", "one-shot", "spec.run"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *env[] = {cases[i][0], cases[i][1], NULL};
        struct sbx_settings o;
        int rc = parse_with(env, &o, NULL);
        if (rc != -1) fprintf(stderr, "  %s=%s accepted\n", cases[i][0], cases[i][1]);
        CHECK_INT(rc, -1);
        CHECK(err_has(cases[i][0], cases[i][2], NULL));
        if (cases[i][1][0]) CHECK(err_has(cases[i][1], NULL)); /* quotes the value */
    }
}

TEST(flag_errors_name_the_flag) {
    static const char *const cases[][3] = {
        {"--idle-timeout", "30", "duration"},      /* a unit is required */
        {"--idle-timeout", "0", "duration"},
        {"--resync", "-1s", "duration"},
        {"--lease-duration", "50ms", "duration"},
        {"--renew-deadline", "x", "duration"},
        {"--retry-period", "1d", "duration"},
        {"--memory", "1.5", "memory"},             /* 2 bytes: below 4Mi */
        {"--memory", "2 Gi", "memory"},
        {"--cpu", "-1", "cpu"},
        {"--cpu", "0.0001", "cpu"},
        {"--workspace-size", "1Ki", "storage"},
        {"--max-running", "many", "count"},
        {"--workers", "-3", "worker"},
        {"--log-level", "trace", "log level"},
        {"--image", "", "image"},
        {"--lifecycle", "Session", "lifecycle"},
        {"--max-response-size", "1Ki", "size"},
        {"--max-response-size", "65Mi", "size"},
        {"--max-response-size", "lots", "size"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char arg[128];
        struct sbx_settings o;
        snprintf(arg, sizeof(arg), "%s=%s", cases[i][0], cases[i][1]);
        int rc = parse_with(NULL, &o, arg, NULL);
        if (rc != -1) fprintf(stderr, "  %s accepted\n", arg);
        CHECK_INT(rc, -1);
        CHECK(err_has(cases[i][0], cases[i][2], NULL));
        /* the space form gives the same message */
        char first[sizeof(err)];
        snprintf(first, sizeof(first), "%s", err);
        CHECK_INT(parse_with(NULL, &o, cases[i][0], cases[i][1], NULL), -1);
        CHECK_STR(err, first);
    }
}

TEST(max_response_size) {
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, "--max-response-size", "1Mi", NULL), 0);
    CHECK_INT(o.max_response_bytes, MIB);
    static const char *const env[] = {"YAO_SANDBOX_MAX_RESPONSE_SIZE", "64Ki", NULL};
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK_INT(o.max_response_bytes, 64 * 1024);
}

TEST(unknown_flag_and_stray_argument) {
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, "--bogus=1", NULL), -1);
    CHECK(err_has("unknown flag", "--bogus", NULL));
    CHECK_INT(parse_with(NULL, &o, "--bogus", "1", NULL), -1);
    CHECK(err_has("--bogus", NULL));
    CHECK_INT(parse_with(NULL, &o, "--max-running-per-user=-1", NULL), -1);
    CHECK(err_has("--max-running-per-user", "not a count", NULL));
    CHECK_INT(parse_with(NULL, &o, "--max_running=3", NULL), -1); /* underscore */
    CHECK(err_has("--max_running", NULL));
    CHECK_INT(parse_with(NULL, &o, "-workers=3", NULL), -1);
    CHECK(err_has("-workers=3", NULL));
    CHECK_INT(parse_with(NULL, &o, "--workers=2", "extra", NULL), -1);
    CHECK(err_has("unexpected argument", "extra", NULL));
    CHECK_INT(parse_with(NULL, &o, "--leader-elect=maybe", NULL), -1);
    CHECK(err_has("--leader-elect", NULL));
    /* a flag name longer than any real one */
    char longflag[200];
    memset(longflag, 'x', sizeof(longflag) - 1);
    longflag[0] = longflag[1] = '-';
    longflag[sizeof(longflag) - 1] = '\0';
    CHECK_INT(parse_with(NULL, &o, longflag, NULL), -1);
    CHECK(err_has("unknown flag", NULL));
}

TEST(missing_value) {
    static const char *const flags[] = {"--kubeconfig", "--image", "--idle-timeout",
                                        "--workers", "--log-level", "--lease-duration"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        struct sbx_settings o;
        CHECK_INT(parse_with(NULL, &o, "--workers=2", flags[i], NULL), -1);
        CHECK(err_has(flags[i], "needs a value", NULL));
    }
}

TEST(env_error_reported_before_flags) {
    static const char *const env[] = {"YAO_SANDBOX_WORKERS", "lots", NULL};
    struct sbx_settings o;
    CHECK_INT(parse_with(env, &o, "--workers=2", NULL), -1);
    CHECK(err_has("YAO_SANDBOX_WORKERS", NULL));
}

TEST(error_fits_small_buffer) {
    struct sbx_settings o;
    char small[16];
    char *argv[] = {(char *)"ctl", (char *)"--idle-timeout=definitely-not-a-duration", NULL};
    memset(small, 'X', sizeof(small));
    CHECK_INT(sbx_settings_parse(2, argv, NULL, &o, small, sizeof(small)), -1);
    CHECK(memchr(small, '\0', sizeof(small)) != NULL);
    CHECK(strncmp(small, "--idle-timeout", 14) == 0);
}

/* ---- leader-election timing ----------------------------------------------------------- */

TEST(lease_ordering) {
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, "--renew-deadline=15s", NULL), -1); /* == lease */
    CHECK(err_has("retry-period < renew-deadline < lease-duration", NULL));
    CHECK_INT(parse_with(NULL, &o, "--renew-deadline=20s", NULL), -1); /* > lease */
    CHECK(err_has("renew-deadline", NULL));
    CHECK_INT(parse_with(NULL, &o, "--retry-period=10s", NULL), -1);   /* == renew */
    CHECK(err_has("retry-period", NULL));
    CHECK_INT(parse_with(NULL, &o, "--lease-duration=10s", NULL), -1); /* == renew */
    CHECK_INT(parse_with(NULL, &o, "--lease-duration=3s", "--renew-deadline=2s",
                         "--retry-period=1s", NULL), 0);
    CHECK_INT(o.lease_duration_ms, 3 * SEC);
    CHECK_INT(o.renew_deadline_ms, 2 * SEC);
    CHECK_INT(o.retry_period_ms, SEC);
    CHECK_INT(parse_with(NULL, &o, "--lease-duration=300ms", "--renew-deadline=200ms",
                         "--retry-period=100ms", NULL), 0);
    CHECK_INT(o.retry_period_ms, 100);
}

TEST(shards) {
    struct sbx_settings o;
    /* default: one shard, the Lease name unchanged */
    CHECK_INT(parse_with(NULL, &o, NULL), 0);
    CHECK_INT(o.controller.shards, 1);
    CHECK_INT(o.controller.shard, 0);
    CHECK_STR(o.lease_name, "yao-sandbox-controller");
    CHECK_INT(parse_with(NULL, &o, "--shards=1", "--lease-name=l", NULL), 0);
    CHECK_STR(o.lease_name, "l");
    /* S > 1: the shard's own Lease */
    CHECK_INT(parse_with(NULL, &o, "--shards", "4", "--shard=3", NULL), 0);
    CHECK_INT(o.controller.shards, 4);
    CHECK_INT(o.controller.shard, 3);
    CHECK_STR(o.lease_name, "yao-sandbox-controller-shard-3");
    CHECK_INT(parse_with(NULL, &o, "--lease-name=ctl", "--shards=2", NULL), 0);
    CHECK_STR(o.lease_name, "ctl-shard-0");
    /* the environment, and flags over it */
    static const char *const env[] = {"YAO_SANDBOX_SHARDS", "3", "YAO_SANDBOX_SHARD", "2", NULL};
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK_INT(o.controller.shards, 3);
    CHECK_INT(o.controller.shard, 2);
    CHECK_STR(o.lease_name, "yao-sandbox-controller-shard-2");
    CHECK_INT(parse_with(env, &o, "--shard=1", NULL), 0);
    CHECK_INT(o.controller.shard, 1);
    CHECK_STR(o.lease_name, "yao-sandbox-controller-shard-1");
    /* errors */
    CHECK_INT(parse_with(NULL, &o, "--shards=0", NULL), -1);
    CHECK(err_has("--shards", "not a shard count", NULL));
    CHECK_INT(parse_with(NULL, &o, "--shards=1025", NULL), -1);
    CHECK_INT(parse_with(NULL, &o, "--shards=x", NULL), -1);
    CHECK_INT(parse_with(NULL, &o, "--shard=-1", NULL), -1);
    CHECK(err_has("--shard", "not a shard number", NULL));
    CHECK_INT(parse_with(NULL, &o, "--shards=2", "--shard=2", NULL), -1);
    CHECK(err_has("--shard 2", "not below --shards 2", NULL));
    CHECK_INT(parse_with(NULL, &o, "--shard=1", NULL), -1);   /* one shard: only 0 */
    static const char *const bad_env[] = {"YAO_SANDBOX_SHARDS", "two", NULL};
    CHECK_INT(parse_with(bad_env, &o, NULL), -1);
    CHECK(err_has("YAO_SANDBOX_SHARDS", NULL));
}

/* ---- defaults a Sandbox can live with ------------------------------------------------- */

/* 0 if a minimal Sandbox parses under the settings' defaults. */
static int minimal_spec_ok(const struct sbx_settings *o) {
    cJSON *sb = cJSON_Parse("{\"spec\":{\"userID\":\"alice\",\"chatID\":\"c1\"}}");
    struct sbx_spec s;
    char e[256];
    int rc = sbx_spec_parse(sb, &o->controller.defaults, &s, e, sizeof(e));
    if (rc == 0) sbx_spec_free(&s);
    else fprintf(stderr, "  spec rejected: %s\n", e);
    cJSON_Delete(sb);
    return rc;
}

TEST(accepted_defaults_make_a_valid_spec) {
    static const char *const ok[] = {
        "--idle-timeout=8760h", "--memory=1Ti", "--cpu=256", "--workspace-size=64Ti",
        "--storage-class=fast-ssd", "--image=registry.example.com:5000/a/b@sha256:abc",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct sbx_settings o;
        CHECK_INT(parse_with(NULL, &o, ok[i], NULL), 0);
        CHECK_INT(minimal_spec_ok(&o), 0);
    }
}

TEST(defaults_no_sandbox_could_use_are_rejected) {
    /* each of these would turn every Sandbox without the field into InvalidSpec */
    static const char *const cases[][2] = {
        {"--idle-timeout=8761h", "--idle-timeout"},
        {"--memory=2Ti", "--memory"},
        {"--cpu=257", "--cpu"},
        {"--workspace-size=65Ti", "--workspace-size"},
        {"--image=has space", "--image"},
        {"--storage-class=Not_A_Class", "--storage-class"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sbx_settings o;
        int rc = parse_with(NULL, &o, cases[i][0], NULL);
        if (rc == 0) {
            fprintf(stderr, "  %s accepted\n", cases[i][0]);
            minimal_spec_ok(&o);
        }
        CHECK_INT(rc, -1);
        CHECK(err_has(cases[i][1], NULL));
    }
    /* from the environment, the variable is named */
    static const char *const env[] = {"YAO_SANDBOX_MEMORY", "2Ti", NULL};
    struct sbx_settings o;
    CHECK_INT(parse_with(env, &o, NULL), -1);
    CHECK(err_has("YAO_SANDBOX_MEMORY", NULL));
}

/* ---- sandbox pod identity and pull secrets -------------------------------------------- */

TEST(sandbox_run_as_user) {
    struct sbx_settings o;
    CHECK_INT(parse_with(NULL, &o, NULL), 0);
    CHECK_INT(o.controller.defaults.run_as_user, 1000);
    CHECK_INT(parse_with(NULL, &o, "--sandbox-run-as-user=auto", NULL), 0);
    CHECK_INT(o.controller.defaults.run_as_user, SBX_RUN_AS_AUTO);
    CHECK_INT(parse_with(NULL, &o, "--sandbox-run-as-user", "1000680000", NULL), 0);
    CHECK_INT(o.controller.defaults.run_as_user, 1000680000);
    CHECK_INT(minimal_spec_ok(&o), 0);
    static const char *const env[] = {"YAO_SANDBOX_RUN_AS_USER", "auto", NULL};
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK_INT(o.controller.defaults.run_as_user, SBX_RUN_AS_AUTO);
    CHECK_INT(minimal_spec_ok(&o), 0);
    CHECK_INT(parse_with(env, &o, "--sandbox-run-as-user=2000", NULL), 0);   /* flag wins */
    CHECK_INT(o.controller.defaults.run_as_user, 2000);
    static const char *const bad[] = {"0", "-1", "root", "", "2147483648", "12x", "AUTO"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char flag[64];
        snprintf(flag, sizeof(flag), "--sandbox-run-as-user=%s", bad[i]);
        CHECK_INT(parse_with(NULL, &o, flag, NULL), -1);
        CHECK(err_has("--sandbox-run-as-user", "or auto", NULL));
    }
    static const char *const bad_env[] = {"YAO_SANDBOX_RUN_AS_USER", "0", NULL};
    CHECK_INT(parse_with(bad_env, &o, NULL), -1);
    CHECK(err_has("YAO_SANDBOX_RUN_AS_USER", NULL));
}

TEST(sandbox_image_pull_secrets) {
    struct sbx_settings o;
    const struct sbx_defaults *d = &o.controller.defaults;
    CHECK_INT(parse_with(NULL, &o, NULL), 0);
    CHECK_INT(d->npull_secrets, 0);
    CHECK_INT(parse_with(NULL, &o, "--sandbox-image-pull-secret=regcred", "--sandbox-image-pull-secret",
                         "mirror", NULL), 0);
    CHECK_INT(d->npull_secrets, 2);
    CHECK_STR(d->pull_secrets[0], "regcred");
    CHECK_STR(d->pull_secrets[1], "mirror");
    CHECK_INT(minimal_spec_ok(&o), 0);
    static const char *const env[] = {"YAO_SANDBOX_IMAGE_PULL_SECRETS", "a,,b.c,", NULL};
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK_INT(d->npull_secrets, 2);
    CHECK_STR(d->pull_secrets[0], "a");
    CHECK_STR(d->pull_secrets[1], "b.c");
    /* flags replace the variable's list, they do not add to it */
    CHECK_INT(parse_with(env, &o, "--sandbox-image-pull-secret=x", NULL), 0);
    CHECK_INT(d->npull_secrets, 1);
    CHECK_STR(d->pull_secrets[0], "x");
    CHECK_INT(parse_with(NULL, &o, "--sandbox-image-pull-secret=Bad_Name", NULL), -1);
    CHECK(err_has("--sandbox-image-pull-secret", "Bad_Name", NULL));
    static const char *const bad_env[] = {"YAO_SANDBOX_IMAGE_PULL_SECRETS", "ok,NOT-OK", NULL};
    CHECK_INT(parse_with(bad_env, &o, NULL), -1);
    CHECK(err_has("YAO_SANDBOX_IMAGE_PULL_SECRETS", "NOT-OK", NULL));
    static const char *const many[] = {"YAO_SANDBOX_IMAGE_PULL_SECRETS",
                                       "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", NULL};
    CHECK_INT(parse_with(many, &o, NULL), -1);
    CHECK(err_has("YAO_SANDBOX_IMAGE_PULL_SECRETS", "more than 16", NULL));
    const char *const usage = sbx_settings_usage();
    CHECK(strstr(usage, "--sandbox-run-as-user") && strstr(usage, "YAO_SANDBOX_RUN_AS_USER"));
    CHECK(strstr(usage, "--sandbox-image-pull-secret") && strstr(usage, "YAO_SANDBOX_IMAGE_PULL_SECRETS"));
}

/* The Secrets Sandboxes without a class may name (issue 34): none by default, a
 * comma-separated variable, a repeatable flag that replaces it. */
TEST(allowed_secrets) {
    struct sbx_settings o;
    const struct sbx_defaults *d = &o.controller.defaults;
    CHECK_INT(parse_with(NULL, &o, NULL), 0);
    CHECK_INT(d->nallowed_secrets, 0);
    static const char *const env[] = {"YAO_SANDBOX_ALLOWED_SECRETS", "yao-token,,a.b,", NULL};
    CHECK_INT(parse_with(env, &o, NULL), 0);
    CHECK_INT(d->nallowed_secrets, 2);
    CHECK_STR(d->allowed_secrets[0], "yao-token");
    CHECK_STR(d->allowed_secrets[1], "a.b");
    CHECK_INT(parse_with(env, &o, "--allowed-secret", "x", "--allowed-secret=y", NULL), 0);
    CHECK_INT(d->nallowed_secrets, 2);
    CHECK_STR(d->allowed_secrets[0], "x");
    CHECK_STR(d->allowed_secrets[1], "y");
    CHECK_INT(parse_with(NULL, &o, "--allowed-secret=Bad_Name", NULL), -1);
    CHECK(err_has("--allowed-secret", "Bad_Name", NULL));
    static const char *const bad_env[] = {"YAO_SANDBOX_ALLOWED_SECRETS", "ok,NOT-OK", NULL};
    CHECK_INT(parse_with(bad_env, &o, NULL), -1);
    CHECK(err_has("YAO_SANDBOX_ALLOWED_SECRETS", "NOT-OK", NULL));
    char many[64 * 4 + 16] = "";
    for (int i = 0; i < 65; i++) snprintf(many + strlen(many), sizeof many - strlen(many), "%ss%d", i ? "," : "", i);
    static const char *many_env[] = {"YAO_SANDBOX_ALLOWED_SECRETS", NULL, NULL};
    many_env[1] = many;
    CHECK_INT(parse_with(many_env, &o, NULL), -1);
    CHECK(err_has("YAO_SANDBOX_ALLOWED_SECRETS", "more than 64", NULL));
    CHECK(strstr(sbx_settings_usage(), "--allowed-secret") && strstr(sbx_settings_usage(), "YAO_SANDBOX_ALLOWED_SECRETS"));
}
