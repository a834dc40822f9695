/* tests/unit/test_class_decide.c — SandboxClass parsing and the resolution of a Sandbox's
 * effective spec under its class (sandbox/decide/class_decide.c): class defaults over flag
 * defaults, every ceiling with its exact InvalidSpec message, placement and runtime into
 * the pod, env from Secrets (sandbox/model/spec.c). */
#include "check.h"

#include "sandbox/model/builders.h"
#include "sandbox/decide/class_decide.h"
#include "sandbox/model/spec.h"

#define GIB (INT64_C(1) << 30)
#define MIB (INT64_C(1) << 20)

/* A Sandbox object with the given spec members (JSON text without braces). */
static cJSON *sandbox(const char *members) {
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"sb\",\"namespace\":\"ns\",\"uid\":\"u-1\"},"
             "\"spec\":{\"userID\":\"alice\",\"chatID\":\"c1\"%s%s}}",
             *members ? "," : "", members);
    cJSON *o = cJSON_Parse(buf);
    CHECK(o != NULL);
    return o;
}

/* A class object named name with the given spec members. */
static cJSON *class_obj(const char *name, const char *members) {
    char buf[4096];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"%s\"},\"spec\":{%s}}", name, members);
    cJSON *o = cJSON_Parse(buf);
    CHECK(o != NULL);
    return o;
}

/* Parse a class; CHECKs success. */
static int parse_class(const char *members, struct sbx_class *k) {
    char err[512];
    cJSON *o = class_obj("small", members);
    int rc = sbx_class_parse(o, k, err, sizeof err);
    if (rc) fprintf(stderr, "  class error: %s\n", err);
    cJSON_Delete(o);
    return rc;
}

/* Resolve spec members under class members ("" class → no class); returns rc, err out. */
static int resolve(const char *class_members, const char *spec_members, struct sbx_spec *s,
                   char *err, size_t errlen) {
    struct sbx_class k;
    struct sbx_defaults d;
    int have = class_members != NULL, rc;
    cJSON *sb = sandbox(spec_members);

    sbx_defaults_init(&d);
    if (have && parse_class(class_members, &k)) {
        cJSON_Delete(sb);
        return -2;
    }
    rc = sbx_class_resolve(sb, have ? &k : NULL, &d, s, err, errlen);
    if (have) sbx_class_free(&k);
    cJSON_Delete(sb);
    return rc;
}

/* Expect InvalidSpec with exactly msg. */
static void expect_invalid(const char *class_members, const char *spec_members, const char *msg) {
    char err[1024] = "";
    struct sbx_spec s;
    CHECK_INT(resolve(class_members, spec_members, &s, err, sizeof err), -1);
    CHECK_STR(err, msg);
}

#define SMALL \
    "\"image\":{\"default\":\"reg.example/sbx:1\",\"allowedPrefixes\":[\"reg.example/\",\"python:3\"]}," \
    "\"resources\":{\"memory\":{\"default\":\"1Gi\",\"max\":\"2Gi\"},\"cpu\":{\"default\":\"500m\",\"max\":2}," \
    "\"ephemeralStorage\":{\"default\":\"4Gi\",\"max\":\"8Gi\"}}," \
    "\"workspace\":{\"storageClassName\":\"fast\",\"defaultSize\":\"5Gi\",\"maxSize\":\"20Gi\"}," \
    "\"runtimeClassName\":\"gvisor\",\"priorityClassName\":\"sandboxes\"," \
    "\"nodeSelector\":{\"pool\":\"sandboxes\"}," \
    "\"tolerations\":[{\"key\":\"sandbox\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]," \
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":" \
    "[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]}]}}}," \
    "\"idleTimeout\":\"10m\",\"maxRunningPerUser\":3,\"maxRunningPerUserScope\":\"Cluster\""

/* ---- parsing ---------------------------------------------------------------------------- */

TEST(parse_full_class) {
    struct sbx_class k;
    CHECK_INT(parse_class(SMALL, &k), 0);
    CHECK_STR(k.name, "small");
    CHECK_STR(k.image, "reg.example/sbx:1");
    CHECK_INT(k.image_prefixes.n, 2);
    CHECK_STR(k.image_prefixes.v[1], "python:3");
    CHECK_INT(k.memory.dflt, GIB);
    CHECK_INT(k.memory.max, 2 * GIB);
    CHECK_INT(k.cpu.dflt, 500);
    CHECK_INT(k.cpu.max, 2000);
    CHECK_INT(k.ephemeral.dflt, 4 * GIB);
    CHECK_INT(k.ephemeral.max, 8 * GIB);
    CHECK_STR(k.storage_class, "fast");
    CHECK_INT(k.workspace.dflt, 5 * GIB);
    CHECK_INT(k.workspace.max, 20 * GIB);
    CHECK_STR(k.runtime_class, "gvisor");
    CHECK_STR(k.priority_class, "sandboxes");
    CHECK(k.node_selector && k.tolerations && k.affinity);
    CHECK_INT(k.idle_timeout_ms, 600000);
    CHECK_INT(k.max_running_per_user, 3);
    CHECK_INT(k.per_user_across_namespaces, 1);
    sbx_class_free(&k);
}

TEST(parse_empty_class_sets_nothing) {
    struct sbx_class k;
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"bare\"}}");
    char err[256];
    CHECK_INT(sbx_class_parse(o, &k, err, sizeof err), 0);
    CHECK(!k.image && !k.memory.max && !k.runtime_class && !k.node_selector && !k.max_running_per_user &&
          !k.per_user_across_namespaces);
    sbx_class_free(&k);
    cJSON_Delete(o);
}

static void expect_class_error(const char *members, const char *msg) {
    struct sbx_class k;
    char err[512] = "";
    cJSON *o = class_obj("bad", members);
    CHECK_INT(sbx_class_parse(o, &k, err, sizeof err), -1);
    CHECK_STR(err, msg);
    CHECK(k.name == NULL);   /* emptied */
    cJSON_Delete(o);
}

TEST(parse_warm_pool) {
    struct sbx_class k;
    CHECK_INT(parse_class("\"workspace\":{\"warmPool\":{\"size\":3,\"namespaces\":[\"team-a\",\"team-b\"]}}", &k), 0);
    CHECK_INT(k.warm_pool_size, 3);
    CHECK_INT(k.warm_pool_namespaces.n, 2);
    CHECK_STR(k.warm_pool_namespaces.v[1], "team-b");
    sbx_class_free(&k);
    CHECK_INT(parse_class("\"workspace\":{}", &k), 0);
    CHECK_INT(k.warm_pool_size, 0);   /* no pool by default */
    CHECK_INT(k.warm_pool_namespaces.n, 0);
    sbx_class_free(&k);
    expect_class_error("\"workspace\":{\"warmPool\":{\"size\":1001}}",
                       "SandboxClass \"bad\": spec.workspace.warmPool.size: must be an integer between 0 and 1000");
    expect_class_error("\"workspace\":{\"warmPool\":{\"size\":\"3\"}}",
                       "SandboxClass \"bad\": spec.workspace.warmPool.size: must be an integer between 0 and 1000");
    expect_class_error("\"workspace\":{\"warmPool\":[]}",
                       "SandboxClass \"bad\": spec.workspace.warmPool: must be an object");
}

TEST(parse_errors_name_the_class_and_field) {
    expect_class_error("\"resources\":{\"memory\":{\"default\":\"4Gi\",\"max\":\"2Gi\"}}",
                       "SandboxClass \"bad\": spec.resources.memory.default is above spec.resources.memory.max");
    expect_class_error("\"resources\":{\"cpu\":{\"max\":\"lots\"}}",
                       "SandboxClass \"bad\": spec.resources.cpu.max: \"lots\" is not a valid quantity");
    expect_class_error("\"resources\":{\"ephemeralStorage\":{\"max\":\"0\"}}",
                       "SandboxClass \"bad\": spec.resources.ephemeralStorage.max: must be greater than zero");
    expect_class_error("\"workspace\":{\"defaultSize\":\"50Gi\",\"maxSize\":\"10Gi\"}",
                       "SandboxClass \"bad\": spec.workspace.defaultSize is above spec.workspace.maxSize");
    expect_class_error("\"nodeSelector\":{\"pool\":1}", "SandboxClass \"bad\": spec.nodeSelector.pool: must be a string");
    expect_class_error("\"tolerations\":{}", "SandboxClass \"bad\": spec.tolerations: must be an array");
    expect_class_error("\"idleTimeout\":\"soon\"",
                       "SandboxClass \"bad\": spec.idleTimeout: must be a duration of at least 1s (e.g. 30m)");
    expect_class_error("\"maxRunningPerUser\":-1",
                       "SandboxClass \"bad\": spec.maxRunningPerUser: must be an integer between 0 and 1000000");
    expect_class_error("\"maxRunningPerUserScope\":\"cluster\"",
                       "SandboxClass \"bad\": spec.maxRunningPerUserScope: must be Namespace or Cluster");
    expect_class_error("\"image\":{\"allowedPrefixes\":[\"\"]}",
                       "SandboxClass \"bad\": spec.image.allowedPrefixes[0]: must be a non-empty string");
    expect_class_error("\"runtimeClassName\":7", "SandboxClass \"bad\": spec.runtimeClassName: must be a string");
    expect_class_error("\"lifecycle\":\"forever\"",
                       "SandboxClass \"bad\": spec.lifecycle: must be one of one-shot, session, long-running, persistent");
    expect_class_error("\"reclaim\":{\"idleAfter\":\"500ms\"}",
                       "SandboxClass \"bad\": spec.reclaim.idleAfter: must be a duration of at least 1s (e.g. 30m)");
    expect_class_error("\"reclaim\":[]", "SandboxClass \"bad\": spec.reclaim: must be an object");
}

TEST(parse_lifecycle_and_reclaim) {
    struct sbx_class k;
    CHECK_INT(parse_class("\"lifecycle\":\"long-running\",\"reclaim\":{\"idleAfter\":\"15m\"}", &k), 0);
    CHECK(k.has_lifecycle);
    CHECK_INT(k.lifecycle, SBX_LONG_RUNNING);
    CHECK_INT(k.reclaim_after_ms, 15 * 60000);
    sbx_class_free(&k);
    CHECK_INT(parse_class("", &k), 0);
    CHECK(!k.has_lifecycle && !k.reclaim_after_ms);
    sbx_class_free(&k);
}

TEST(warm_idle_is_parsed_checked_and_resolved_over_the_controllers) {
    struct sbx_class k;
    CHECK_INT(parse_class("\"warmIdle\":{\"cpu\":\"50m\",\"window\":\"10m\"}", &k), 0);
    CHECK_INT(k.warm_idle_cpu_millis, 50);
    CHECK_INT(k.warm_idle_window_ms, 10 * 60000);
    sbx_class_free(&k);
    CHECK_INT(parse_class("\"warmIdle\":{\"cpu\":\"0.1\"}", &k), 0);   /* window: 30 min */
    CHECK_INT(k.warm_idle_cpu_millis, 100);
    CHECK_INT(k.warm_idle_window_ms, SBX_WARM_IDLE_WINDOW_DEFAULT_MS);
    sbx_class_free(&k);
    expect_class_error("\"warmIdle\":{\"window\":\"5m\"}",
                       "SandboxClass \"bad\": spec.warmIdle.cpu: must be a CPU quantity between 1m and 256 (e.g. 50m)");
    expect_class_error("\"warmIdle\":{\"cpu\":\"50m\",\"window\":\"10ms\"}",
                       "SandboxClass \"bad\": spec.warmIdle.window: must be a duration of at least 1s (e.g. 30m)");
    expect_class_error("\"warmIdle\":true", "SandboxClass \"bad\": spec.warmIdle: must be an object");
    /* resolved: the class's, else the controller's (off by default) */
    struct sbx_spec s;
    char err[512] = "";
    CHECK_INT(resolve("\"warmIdle\":{\"cpu\":\"50m\",\"window\":\"2m\"}", "", &s, err, sizeof err), 0);
    CHECK_INT(s.warm_idle_cpu_millis, 50);
    CHECK_INT(s.warm_idle_window_ms, 2 * 60000);
    sbx_spec_free(&s);
    CHECK_INT(resolve("", "", &s, err, sizeof err), 0);
    CHECK_INT(s.warm_idle_cpu_millis, 0);
    sbx_spec_free(&s);
}

TEST(default_annotation) {
    cJSON *yes = cJSON_Parse("{\"metadata\":{\"name\":\"a\",\"annotations\":{\"sandbox.yaoapps.com/is-default-class\":\"true\"}}}");
    cJSON *no = cJSON_Parse("{\"metadata\":{\"name\":\"a\",\"annotations\":{\"sandbox.yaoapps.com/is-default-class\":\"false\"}}}");
    CHECK(sbx_class_is_default(yes));
    CHECK(!sbx_class_is_default(no));
    CHECK(!sbx_class_is_default(NULL));
    cJSON_Delete(yes);
    cJSON_Delete(no);
}

/* ---- resolution ------------------------------------------------------------------------- */

TEST(no_class_gives_the_flag_defaults) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve(NULL, "", &s, err, sizeof err), 0);
    CHECK_INT(s.memory_bytes, 2 * GIB);
    CHECK_INT(s.cpu_millis, 1000);
    CHECK_INT(s.ephemeral_bytes, 0);
    CHECK_INT(s.workspace_bytes, 10 * GIB);
    CHECK(s.class_name == NULL && s.runtime_class == NULL && s.node_selector == NULL);
    CHECK_INT(s.max_running_per_user, 0);
    sbx_spec_free(&s);
}

TEST(class_defaults_replace_the_flag_defaults) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve(SMALL, "", &s, err, sizeof err), 0);
    CHECK_STR(s.image, "reg.example/sbx:1");
    CHECK_INT(s.memory_bytes, GIB);
    CHECK_INT(s.cpu_millis, 500);
    CHECK_INT(s.cpu_request_millis, 100);         /* flag request, under the class's limit */
    CHECK_INT(s.memory_request_bytes, 256 * MIB);
    CHECK_INT(s.ephemeral_bytes, 4 * GIB);
    CHECK_INT(s.workspace_bytes, 5 * GIB);
    CHECK_STR(s.storage_class, "fast");
    CHECK_INT(s.idle_timeout_ms, 600000);
    CHECK_STR(s.class_name, "small");
    CHECK_STR(s.runtime_class, "gvisor");
    CHECK_STR(s.priority_class, "sandboxes");
    CHECK_STR(cJSON_GetObjectItem(s.node_selector, "pool")->valuestring, "sandboxes");
    CHECK_INT(cJSON_GetArraySize(s.tolerations), 1);
    CHECK(cJSON_GetObjectItem(s.affinity, "nodeAffinity") != NULL);
    CHECK_INT(s.max_running_per_user, 3);
    CHECK_INT(s.per_user_across_namespaces, 1);
    sbx_spec_free(&s);
}

TEST(sandbox_values_within_the_class_are_kept) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve(SMALL, "\"image\":\"python:3.12-slim\",\"idleTimeout\":\"1h\","
                             "\"resources\":{\"memory\":\"2Gi\",\"cpu\":\"2\",\"ephemeralStorage\":\"8Gi\"},"
                             "\"workspace\":{\"size\":\"20Gi\",\"storageClassName\":\"fast\"}",
                      &s, err, sizeof err), 0);
    CHECK_STR(s.image, "python:3.12-slim");
    CHECK_INT(s.memory_bytes, 2 * GIB);
    CHECK_INT(s.cpu_millis, 2000);
    CHECK_INT(s.ephemeral_bytes, 8 * GIB);
    CHECK_INT(s.workspace_bytes, 20 * GIB);
    CHECK_INT(s.idle_timeout_ms, 3600000);
    sbx_spec_free(&s);
}

TEST(a_class_with_only_ceilings_caps_the_flag_defaults) {
    struct sbx_spec s;
    char err[512];
    /* flags: 2Gi memory, 1 cpu, 10Gi workspace, no ephemeral limit */
    CHECK_INT(resolve("\"resources\":{\"memory\":{\"max\":\"1Gi\"},\"cpu\":{\"max\":\"4\"},"
                      "\"ephemeralStorage\":{\"max\":\"2Gi\"}},\"workspace\":{\"maxSize\":\"3Gi\"}",
                      "", &s, err, sizeof err), 0);
    CHECK_INT(s.memory_bytes, GIB);          /* capped */
    CHECK_INT(s.cpu_millis, 1000);           /* the flag default is under the max */
    CHECK_INT(s.ephemeral_bytes, 2 * GIB);   /* a maximum with no default: the maximum */
    CHECK_INT(s.workspace_bytes, 3 * GIB);
    sbx_spec_free(&s);
}

TEST(beyond_the_class_is_invalid_naming_field_and_limit) {
    expect_invalid(SMALL, "\"resources\":{\"memory\":\"4Gi\"}",
                   "spec.resources.memory: 4Gi is above the maximum 2Gi of SandboxClass \"small\" "
                   "(spec.resources.memory.max)");
    expect_invalid(SMALL, "\"resources\":{\"memory\":\"2Gi\",\"cpu\":\"2001m\"}",
                   "spec.resources.cpu: 2001m is above the maximum 2 of SandboxClass \"small\" "
                   "(spec.resources.cpu.max)");
    expect_invalid(SMALL, "\"resources\":{\"ephemeralStorage\":\"9Gi\"}",
                   "spec.resources.ephemeralStorage: 9Gi is above the maximum 8Gi of SandboxClass \"small\" "
                   "(spec.resources.ephemeralStorage.max)");
    expect_invalid(SMALL, "\"workspace\":{\"size\":\"64Ti\"}",
                   "spec.workspace.size: 64Ti is above the maximum 20Gi of SandboxClass \"small\" "
                   "(spec.workspace.maxSize)");
    expect_invalid(SMALL, "\"image\":\"docker.io/evil/miner:latest\"",
                   "spec.image: \"docker.io/evil/miner:latest\" is not allowed by SandboxClass \"small\" "
                   "(spec.image.allowedPrefixes: \"reg.example/\", \"python:3\")");
    expect_invalid(SMALL, "\"workspace\":{\"storageClassName\":\"premium\"}",
                   "spec.workspace.storageClassName: \"premium\" is not allowed by SandboxClass \"small\" "
                   "(spec.workspace.storageClassName: \"fast\")");
    expect_invalid("\"workspace\":{\"allowedStorageClassNames\":[\"a\",\"b\"]}", "",
                   "spec.workspace.storageClassName: the cluster default is not allowed by SandboxClass \"small\" "
                   "(spec.workspace.allowedStorageClassNames: \"a\", \"b\")");
    /* the Sandbox's own errors come first, unchanged */
    expect_invalid(SMALL, "\"resources\":{\"memory\":\"2Ti\"}",
                   "spec.resources.memory: \"2Ti\" is above the maximum 1Ti");
}

TEST(a_prefix_matches_only_at_the_start) {
    expect_invalid("\"image\":{\"allowedPrefixes\":[\"reg.example/\"]}", "\"image\":\"evil/reg.example/x\"",
                   "spec.image: \"evil/reg.example/x\" is not allowed by SandboxClass \"small\" "
                   "(spec.image.allowedPrefixes: \"reg.example/\")");
    /* the flag default image must pass the allowlist too */
    expect_invalid("\"image\":{\"allowedPrefixes\":[\"reg.example/\"]}", "",
                   "spec.image: \"yao-sandbox/sandbox:" YAO_VERSION "\" is not allowed by SandboxClass \"small\" "
                   "(spec.image.allowedPrefixes: \"reg.example/\")");
}

TEST(allowed_storage_classes) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve("\"workspace\":{\"storageClassName\":\"a\",\"allowedStorageClassNames\":[\"a\",\"b\"]}",
                      "\"workspace\":{\"storageClassName\":\"b\"}", &s, err, sizeof err), 0);
    CHECK_STR(s.storage_class, "b");
    sbx_spec_free(&s);
    CHECK_INT(resolve("\"workspace\":{\"storageClassName\":\"a\",\"allowedStorageClassNames\":[\"a\",\"b\"]}",
                      "", &s, err, sizeof err), 0);
    CHECK_STR(s.storage_class, "a");
    sbx_spec_free(&s);
}

/* ---- into the pod ----------------------------------------------------------------------- */

static cJSON *pod_of(const struct sbx_spec *s) {
    struct sbx_owner o = { "sb", "ns", "u-1", NULL };
    return sbx_build_pod(&o, s, "yao-sb-alice-c1", "yao-sb-alice-c1-workspace");
}

TEST(placement_runtime_and_ephemeral_storage_reach_the_pod) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve(SMALL, "", &s, err, sizeof err), 0);
    cJSON *pod = pod_of(&s);
    CHECK(pod != NULL);
    cJSON *spec = cJSON_GetObjectItem(pod, "spec");
    CHECK_STR(cJSON_GetObjectItem(spec, "runtimeClassName")->valuestring, "gvisor");
    CHECK_STR(cJSON_GetObjectItem(spec, "priorityClassName")->valuestring, "sandboxes");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "nodeSelector"), "pool")->valuestring, "sandboxes");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "tolerations"), 0), "key")->valuestring,
              "sandbox");
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "affinity"), "nodeAffinity") != NULL);
    cJSON *lim = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "containers"), 0),
                                                         "resources"), "limits");
    CHECK_STR(cJSON_GetObjectItem(lim, "ephemeral-storage")->valuestring, "4Gi");
    CHECK_STR(cJSON_GetObjectItem(lim, "memory")->valuestring, "1Gi");

    /* without a class: none of these, and another template hash (so a class change rolls the pod) */
    struct sbx_spec bare;
    CHECK_INT(resolve(NULL, "", &bare, err, sizeof err), 0);
    cJSON *pod2 = pod_of(&bare);
    cJSON *spec2 = cJSON_GetObjectItem(pod2, "spec");
    CHECK(!cJSON_GetObjectItem(spec2, "runtimeClassName") && !cJSON_GetObjectItem(spec2, "nodeSelector") &&
          !cJSON_GetObjectItem(spec2, "tolerations") && !cJSON_GetObjectItem(spec2, "affinity") &&
          !cJSON_GetObjectItem(spec2, "priorityClassName"));
    cJSON *lim2 = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(spec2, "containers"), 0),
                                                          "resources"), "limits");
    CHECK(!cJSON_GetObjectItem(lim2, "ephemeral-storage"));
    const char *h1 = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "annotations"),
                                         SBX_ANN_TEMPLATE_HASH)->valuestring;
    const char *h2 = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod2, "metadata"), "annotations"),
                                         SBX_ANN_TEMPLATE_HASH)->valuestring;
    CHECK(strcmp(h1, h2) != 0);
    cJSON_Delete(pod);
    cJSON_Delete(pod2);
    sbx_spec_free(&s);
    sbx_spec_free(&bare);
}

/* ---- env from Secrets (spec.c) ------------------------------------------------------------ */

TEST(env_from_a_secret) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve(NULL, "\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
                            "{\"name\":\"YAO_TOKEN\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"yao-token\",\"key\":\"token\"}}},"
                            "{\"name\":\"OPT\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"x.y\",\"key\":\"k_1.a\",\"optional\":true}}}]",
                      &s, err, sizeof err), 0);
    CHECK_INT(s.nenv, 3);
    CHECK(s.env[0].secret_name == NULL);
    CHECK_STR(s.env[1].secret_name, "yao-token");
    CHECK_STR(s.env[1].secret_key, "token");
    CHECK_INT(s.env[1].secret_optional, 0);
    CHECK_INT(s.env[2].secret_optional, 1);
    cJSON *pod = pod_of(&s);
    cJSON *env = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"), 0), "env");
    char *text = cJSON_PrintUnformatted(cJSON_GetArrayItem(env, 4));
    CHECK_STR(text, "{\"name\":\"YAO_TOKEN\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"yao-token\",\"key\":\"token\"}}}");
    cJSON_free(text);
    text = cJSON_PrintUnformatted(cJSON_GetArrayItem(env, 5));
    CHECK_STR(text, "{\"name\":\"OPT\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"x.y\",\"key\":\"k_1.a\",\"optional\":true}}}");
    cJSON_free(text);
    text = cJSON_PrintUnformatted(cJSON_GetArrayItem(env, 3));
    CHECK_STR(text, "{\"name\":\"A\",\"value\":\"1\"}");
    cJSON_free(text);
    cJSON_Delete(pod);
    sbx_spec_free(&s);
}

TEST(env_from_a_secret_in_run_env) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve(NULL, "\"lifecycle\":\"one-shot\",\"run\":{\"command\":[\"env\"],\"env\":[{\"name\":\"T\","
                            "\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}",
                      &s, err, sizeof err), 0);
    cJSON *pod = pod_of(&s);
    cJSON *env = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"), 0), "env");
    char *text = cJSON_PrintUnformatted(cJSON_GetArrayItem(env, 3));
    CHECK_STR(text, "{\"name\":\"T\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}");
    cJSON_free(text);
    cJSON_Delete(pod);
    sbx_spec_free(&s);
}

TEST(env_from_errors) {
    expect_invalid(NULL, "\"env\":[{\"name\":\"T\",\"value\":\"x\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]",
                   "spec.env[0]: value and valueFrom are mutually exclusive");
    expect_invalid(NULL, "\"env\":[{\"name\":\"T\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]",
                   "spec.env[0].valueFrom.configMapKeyRef: not supported (only secretKeyRef)");
    expect_invalid(NULL, "\"env\":[{\"name\":\"T\",\"valueFrom\":{}}]",
                   "spec.env[0].valueFrom.secretKeyRef: required");
    expect_invalid(NULL, "\"env\":[{\"name\":\"T\",\"valueFrom\":{\"secretKeyRef\":{\"key\":\"k\"}}}]",
                   "spec.env[0].valueFrom.secretKeyRef.name: required (a string)");
    expect_invalid(NULL, "\"env\":[{\"name\":\"T\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"Bad_Name\",\"key\":\"k\"}}}]",
                   "spec.env[0].valueFrom.secretKeyRef.name: \"Bad_Name\" is not a valid Secret name (lower-case DNS-1123 subdomain)");
    expect_invalid(NULL, "\"env\":[{\"name\":\"T\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"a/b\"}}}]",
                   "spec.env[0].valueFrom.secretKeyRef.key: \"a/b\" is not a valid Secret key (letters, digits, '-', '_', '.')");
    expect_invalid(NULL, "\"env\":[{\"name\":\"T\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\",\"optional\":\"yes\"}}}]",
                   "spec.env[0].valueFrom.secretKeyRef.optional: must be true or false");
}

TEST(pull_secrets_point_at_the_callers_defaults) {
    /* sbx_spec borrows the defaults' imagePullSecrets; resolution parses with a copy of
     * the defaults, so the spec must end up pointing at the caller's, which outlive it. */
    struct sbx_defaults d;
    struct sbx_class k;
    struct sbx_spec s;
    char err[512];
    cJSON *sb = sandbox("");

    sbx_defaults_init(&d);
    d.pull_secrets[0] = "regcred";
    d.npull_secrets = 1;
    CHECK_INT(parse_class(SMALL, &k), 0);
    CHECK_INT(sbx_class_resolve(sb, &k, &d, &s, err, sizeof err), 0);
    CHECK_INT(s.npull_secrets, 1);
    CHECK(s.pull_secrets == d.pull_secrets);
    cJSON *pod = pod_of(&s);
    cJSON *ps = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "imagePullSecrets");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(ps, 0), "name")->valuestring, "regcred");
    cJSON_Delete(pod);
    sbx_spec_free(&s);
    sbx_class_free(&k);
    cJSON_Delete(sb);
}

TEST(class_pull_secrets_replace_the_controllers) {
    /* spec.image.pullSecrets: the pod's imagePullSecrets instead of the controller's, owned
     * by the spec (the class is freed before the pod is built, as the reconciler does). */
    struct sbx_defaults d;
    struct sbx_class k;
    struct sbx_spec s;
    char err[512];
    cJSON *sb = sandbox("");

    sbx_defaults_init(&d);
    d.pull_secrets[0] = "controller-wide";
    d.npull_secrets = 1;
    CHECK_INT(parse_class("\"image\":{\"pullSecrets\":[\"team-registry\",\"mirror.creds\"]}", &k), 0);
    CHECK_INT((int)k.image_pull_secrets.n, 2);
    CHECK_INT(sbx_class_resolve(sb, &k, &d, &s, err, sizeof err), 0);
    sbx_class_free(&k);
    CHECK_INT((int)s.npull_secrets, 2);
    cJSON *pod = pod_of(&s);
    cJSON *ps = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "imagePullSecrets");
    CHECK_INT(cJSON_GetArraySize(ps), 2);
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(ps, 0), "name")->valuestring, "team-registry");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(ps, 1), "name")->valuestring, "mirror.creds");
    cJSON_Delete(pod);
    sbx_spec_free(&s);

    /* A class without pullSecrets keeps the controller's. */
    CHECK_INT(parse_class("\"image\":{\"default\":\"reg.example/sbx:1\"}", &k), 0);
    CHECK_INT(sbx_class_resolve(sb, &k, &d, &s, err, sizeof err), 0);
    CHECK_INT((int)s.npull_secrets, 1);
    CHECK_STR(s.pull_secrets[0], "controller-wide");
    sbx_spec_free(&s);
    sbx_class_free(&k);
    cJSON_Delete(sb);
}

TEST(class_pull_secret_errors_name_the_field) {
    expect_class_error("\"image\":{\"pullSecrets\":[\"Bad_Name\"]}",
                       "SandboxClass \"bad\": spec.image.pullSecrets[0]: \"Bad_Name\" is not a Secret name "
                       "(lower-case DNS-1123 subdomain)");
    expect_class_error("\"image\":{\"pullSecrets\":\"regcred\"}",
                       "SandboxClass \"bad\": spec.image.pullSecrets: must be an array of strings");
    expect_class_error("\"image\":{\"pullSecrets\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\","
                       "\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]}",
                       "SandboxClass \"bad\": spec.image.pullSecrets: at most 16 Secrets");
}

/* ---- Secrets by consent (issue 34) ------------------------------------------------------- */

/* sbx_class_allows_secrets of spec members under class members (NULL: no class) and the
 * flag list allowed (NULL: none); the message in why. */
static int secrets_ok(const char *class_members, const char *spec_members, const char *const *allowed,
                      char *why, size_t whylen) {
    struct sbx_class k;
    struct sbx_defaults d;
    struct sbx_spec s;
    char err[512];
    cJSON *sb = sandbox(spec_members);
    int have = class_members != NULL, rc;

    sbx_defaults_init(&d);
    for (d.nallowed_secrets = 0; allowed && allowed[d.nallowed_secrets]; d.nallowed_secrets++)
        d.allowed_secrets[d.nallowed_secrets] = allowed[d.nallowed_secrets];
    if (have) CHECK_INT(parse_class(class_members, &k), 0);
    rc = sbx_class_resolve(sb, have ? &k : NULL, &d, &s, err, sizeof err);
    CHECK_INT(rc, 0);
    why[0] = '\0';
    if (rc == 0) {
        rc = sbx_class_allows_secrets(have ? &k : NULL, &d, &s, why, whylen);
        sbx_spec_free(&s);
    }
    if (have) sbx_class_free(&k);
    cJSON_Delete(sb);
    return rc;
}

#define ENV_DB "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"P\",\"valueFrom\":{\"secretKeyRef\":" \
               "{\"name\":\"db-admin\",\"key\":\"password\"}}}]"
#define ENV_TOKEN "\"env\":[{\"name\":\"T\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"yao-token\",\"key\":\"token\"}}}]"

TEST(secrets_none_allowed_by_default) {
    char why[512];
    /* a class that says nothing allows none */
    CHECK_INT(secrets_ok("\"idleTimeout\":\"10m\"", ENV_DB, NULL, why, sizeof why), 0);
    CHECK_STR(why, "spec.env[1].valueFrom.secretKeyRef.name: Secret \"db-admin\" is not allowed by SandboxClass "
                   "\"small\" (spec.secrets.names: none)");
    CHECK_INT(secrets_ok("\"secrets\":{}", ENV_TOKEN, NULL, why, sizeof why), 0);
    CHECK_INT(secrets_ok("\"secrets\":{\"names\":[]}", ENV_TOKEN, NULL, why, sizeof why), 0);
    /* no class, no flag: none */
    CHECK_INT(secrets_ok(NULL, ENV_DB, NULL, why, sizeof why), 0);
    CHECK_STR(why, "spec.env[1].valueFrom.secretKeyRef.name: Secret \"db-admin\" is not allowed for Sandboxes "
                   "without a SandboxClass (the controller's --allowed-secret: none)");
    /* literal values need no consent */
    CHECK_INT(secrets_ok("\"idleTimeout\":\"10m\"", "\"env\":[{\"name\":\"A\",\"value\":\"1\"}]", NULL, why,
                         sizeof why), 1);
    CHECK_INT(secrets_ok(NULL, "", NULL, why, sizeof why), 1);
}

TEST(secrets_allowed_by_name) {
    char why[512];
    static const char *const flag[] = {"yao-token", NULL};
    const char *cls = "\"secrets\":{\"names\":[\"yao-token\",\"other\"]}";
    CHECK_INT(secrets_ok(cls, ENV_TOKEN, NULL, why, sizeof why), 1);
    CHECK_INT(secrets_ok(cls, ENV_DB, NULL, why, sizeof why), 0);
    CHECK_STR(why, "spec.env[1].valueFrom.secretKeyRef.name: Secret \"db-admin\" is not allowed by SandboxClass "
                   "\"small\" (spec.secrets.names: yao-token, other)");
    /* the flag list serves Sandboxes without a class only */
    CHECK_INT(secrets_ok(NULL, ENV_TOKEN, flag, why, sizeof why), 1);
    CHECK_INT(secrets_ok(NULL, ENV_DB, flag, why, sizeof why), 0);
    CHECK_STR(why, "spec.env[1].valueFrom.secretKeyRef.name: Secret \"db-admin\" is not allowed for Sandboxes "
                   "without a SandboxClass (the controller's --allowed-secret: yao-token)");
    CHECK_INT(secrets_ok("\"idleTimeout\":\"10m\"", ENV_TOKEN, flag, why, sizeof why), 0);
    /* exact names only: no prefix, no case folding */
    CHECK_INT(secrets_ok("\"secrets\":{\"names\":[\"yao\"]}", ENV_TOKEN, NULL, why, sizeof why), 0);
    CHECK_INT(secrets_ok("\"secrets\":{\"names\":[\"yao-token-2\"]}", ENV_TOKEN, NULL, why, sizeof why), 0);
    /* run.env is held to the same list */
    CHECK_INT(secrets_ok(cls, "\"lifecycle\":\"one-shot\",\"run\":{\"command\":[\"env\"],\"env\":[{\"name\":\"T\","
                              "\"valueFrom\":{\"secretKeyRef\":{\"name\":\"db-admin\",\"key\":\"k\"}}}]}",
                         NULL, why, sizeof why), 0);
    CHECK_STR(why, "spec.run.env[0].valueFrom.secretKeyRef.name: Secret \"db-admin\" is not allowed by SandboxClass "
                   "\"small\" (spec.secrets.names: yao-token, other)");
    /* the operator's pull secrets are not references of the Sandbox's */
    CHECK_INT(secrets_ok("\"image\":{\"pullSecrets\":[\"regcred\"]}", "", NULL, why, sizeof why), 1);
}

TEST(secrets_class_errors_name_the_field) {
    expect_class_error("\"secrets\":{\"names\":[\"Bad_Name\"]}",
                       "SandboxClass \"bad\": spec.secrets.names[0]: \"Bad_Name\" is not a Secret name "
                       "(lower-case DNS-1123 subdomain)");
    expect_class_error("\"secrets\":{\"names\":\"yao-token\"}",
                       "SandboxClass \"bad\": spec.secrets.names: must be an array of strings");
    expect_class_error("\"secrets\":[]", "SandboxClass \"bad\": spec.secrets: must be an object");
}

/* ---- the default lifecycle -------------------------------------------------------------- */

/* Resolve a whole Sandbox object (JSON text) under class members (NULL: no class) and flag
 * defaults d (NULL: built-in); returns rc, lifecycle in *l. */
static int resolve_obj(const char *class_members, const char *obj, const struct sbx_defaults *d,
                       enum sbx_lifecycle *l, char *err, size_t errlen) {
    struct sbx_class k;
    struct sbx_spec s;
    cJSON *sb = cJSON_Parse(obj);
    int rc;
    CHECK(sb != NULL);
    if (class_members && parse_class(class_members, &k)) { cJSON_Delete(sb); return -2; }
    rc = sbx_class_resolve(sb, class_members ? &k : NULL, d, &s, err, errlen);
    if (rc == 0) { *l = s.lifecycle; sbx_spec_free(&s); }
    if (class_members) sbx_class_free(&k);
    cJSON_Delete(sb);
    return rc;
}

#define SB_NONE "{\"metadata\":{\"name\":\"sb\"},\"spec\":{\"userID\":\"a\",\"chatID\":\"c\"}}"
#define SB_OWN(l) "{\"metadata\":{\"name\":\"sb\"},\"spec\":{\"userID\":\"a\",\"chatID\":\"c\",\"lifecycle\":\"" l "\"}}"
#define SB_PINNED(l) "{\"metadata\":{\"name\":\"sb\"},\"spec\":{\"userID\":\"a\",\"chatID\":\"c\"}," \
                     "\"status\":{\"lifecycle\":\"" l "\"}}"

TEST(lifecycle_own_then_recorded_then_class_then_flag) {
    enum sbx_lifecycle l = SBX_ONE_SHOT;
    char err[512] = "";
    struct sbx_defaults d;
    sbx_defaults_init(&d);
    /* nothing anywhere: the controller's default, session */
    CHECK_INT(resolve_obj(NULL, SB_NONE, NULL, &l, err, sizeof err), 0);
    CHECK_INT(l, SBX_SESSION);
    /* the controller's default set to persistent */
    d.lifecycle = SBX_PERSISTENT;
    CHECK_INT(resolve_obj(NULL, SB_NONE, &d, &l, err, sizeof err), 0);
    CHECK_INT(l, SBX_PERSISTENT);
    /* a class that sets none leaves the flag's */
    CHECK_INT(resolve_obj("\"idleTimeout\":\"5m\"", SB_NONE, &d, &l, err, sizeof err), 0);
    CHECK_INT(l, SBX_PERSISTENT);
    /* the class's default over the flag's */
    CHECK_INT(resolve_obj("\"lifecycle\":\"long-running\"", SB_NONE, &d, &l, err, sizeof err), 0);
    CHECK_INT(l, SBX_LONG_RUNNING);
    /* the Sandbox's own over the class's */
    CHECK_INT(resolve_obj("\"lifecycle\":\"long-running\"", SB_OWN("persistent"), &d, &l, err, sizeof err), 0);
    CHECK_INT(l, SBX_PERSISTENT);
    /* the one recorded when it was first resolved stays, whatever the class says now */
    CHECK_INT(resolve_obj("\"lifecycle\":\"long-running\"", SB_PINNED("session"), &d, &l, err, sizeof err), 0);
    CHECK_INT(l, SBX_SESSION);
    /* ... and its own value still wins over the recorded one (session → persistent) */
    CHECK_INT(resolve_obj(NULL, "{\"metadata\":{\"name\":\"sb\"},\"spec\":{\"userID\":\"a\",\"chatID\":\"c\","
                          "\"lifecycle\":\"persistent\"},\"status\":{\"lifecycle\":\"session\"}}", &d, &l, err,
                          sizeof err), 0);
    CHECK_INT(l, SBX_PERSISTENT);
    /* an unknown recorded value is ignored */
    CHECK_INT(resolve_obj("\"lifecycle\":\"long-running\"", SB_PINNED("weird"), &d, &l, err, sizeof err), 0);
    CHECK_INT(l, SBX_LONG_RUNNING);
}

TEST(lifecycle_one_shot_rules) {
    enum sbx_lifecycle l;
    char err[512] = "";
    /* a one-shot class default needs spec.run, and says where the lifecycle came from */
    CHECK_INT(resolve_obj("\"lifecycle\":\"one-shot\"", SB_NONE, NULL, &l, err, sizeof err), -1);
    CHECK_STR(err, "spec.run: required: the lifecycle is one-shot, the default of SandboxClass \"small\" "
                   "(spec.lifecycle); set spec.run, or another spec.lifecycle");
    CHECK_INT(resolve_obj("\"lifecycle\":\"one-shot\"", "{\"metadata\":{\"name\":\"sb\"},\"spec\":{\"userID\":\"a\","
                          "\"chatID\":\"c\",\"run\":{\"command\":[\"true\"]}}}", NULL, &l, err, sizeof err), 0);
    CHECK_INT(l, SBX_ONE_SHOT);
    /* never to or from one-shot against the recorded lifecycle */
    CHECK_INT(resolve_obj(NULL, "{\"metadata\":{\"name\":\"sb\"},\"spec\":{\"userID\":\"a\",\"chatID\":\"c\","
                          "\"lifecycle\":\"session\"},\"status\":{\"lifecycle\":\"one-shot\"}}", NULL, &l, err,
                          sizeof err), -1);
    CHECK_STR(err, "spec.lifecycle: cannot change from one-shot to session (to or from one-shot); create a new Sandbox");
    CHECK_INT(resolve_obj(NULL, "{\"metadata\":{\"name\":\"sb\"},\"spec\":{\"userID\":\"a\",\"chatID\":\"c\","
                          "\"lifecycle\":\"one-shot\",\"run\":{\"command\":[\"true\"]}},\"status\":{\"lifecycle\":"
                          "\"persistent\"}}", NULL, &l, err, sizeof err), -1);
    CHECK_STR(err, "spec.lifecycle: cannot change from persistent to one-shot (to or from one-shot); create a new Sandbox");
}

TEST(reclaim_threshold_reaches_the_spec) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve("\"reclaim\":{\"idleAfter\":\"90s\"}", "", &s, err, sizeof err), 0);
    CHECK_INT(s.reclaim_after_ms, 90000);
    sbx_spec_free(&s);
    CHECK_INT(resolve(NULL, "", &s, err, sizeof err), 0);
    CHECK_INT(s.reclaim_after_ms, 0);
    sbx_spec_free(&s);
}

/* ---- who may use a class (issue 23) -------------------------------------------------- */

TEST(scope_parses_namespaces_lifecycles_and_forks) {
    struct sbx_class k;
    CHECK_INT(parse_class("\"allowedNamespaces\":{\"selector\":{\"matchLabels\":{\"team\":\"a\"}}},"
                          "\"allowedLifecycles\":[\"session\",\"long-running\"],"
                          "\"workspace\":{\"allowForksAcrossUsers\":true}", &k), 0);
    CHECK(k.namespace_selector != NULL);
    CHECK_INT(k.allowed_lifecycles, (1u << SBX_SESSION) | (1u << SBX_LONG_RUNNING));
    CHECK_INT(k.forks_across_users, 1);
    sbx_class_free(&k);
    CHECK_INT(parse_class("", &k), 0);
    CHECK(k.namespace_selector == NULL);
    CHECK_INT(k.allowed_lifecycles, 0);
    CHECK_INT(k.forks_across_users, 0);
    sbx_class_free(&k);
}

TEST(scope_errors_name_the_field) {
    static const struct { const char *members, *want; } cases[] = {
        {"\"allowedNamespaces\":[]", "SandboxClass \"small\": spec.allowedNamespaces: must be an object"},
        {"\"allowedNamespaces\":{\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}}",
         "SandboxClass \"small\": spec.allowedNamespaces.selector.matchExpressions[0].values: required for operator In"},
        {"\"allowedLifecycles\":\"session\"", "SandboxClass \"small\": spec.allowedLifecycles: must be an array of "
                                              "lifecycles"},
        {"\"allowedLifecycles\":[\"session\",\"forever\"]", "SandboxClass \"small\": spec.allowedLifecycles[1]: must "
                                                            "be one of one-shot, session, long-running, persistent"},
        {"\"lifecycle\":\"persistent\",\"allowedLifecycles\":[\"session\"]",
         "SandboxClass \"small\": spec.lifecycle: persistent is not in spec.allowedLifecycles"},
        {"\"workspace\":{\"allowForksAcrossUsers\":\"yes\"}",
         "SandboxClass \"small\": spec.workspace.allowForksAcrossUsers: must be a boolean"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sbx_class k;
        char err[512] = "";
        cJSON *o = class_obj("small", cases[i].members);
        CHECK_INT(sbx_class_parse(o, &k, err, sizeof err), -1);
        CHECK_STR(err, cases[i].want);
        cJSON_Delete(o);
    }
}

TEST(namespace_scope) {
    struct sbx_class k;
    char why[512] = "";
    cJSON *team_a = cJSON_Parse("{\"team\":\"a\"}"), *team_b = cJSON_Parse("{\"team\":\"b\"}");
    CHECK_INT(parse_class("\"allowedNamespaces\":{\"selector\":{\"matchLabels\":{\"team\":\"a\"}}}", &k), 0);
    CHECK_INT(sbx_class_allows_namespace(&k, "ns-a", team_a, 1, why, sizeof why), 1);
    CHECK_INT(sbx_class_allows_namespace(&k, "ns-b", team_b, 1, why, sizeof why), 0);
    CHECK_STR(why, "spec.className: SandboxClass \"small\" may not be used in namespace \"ns-b\" "
                   "(spec.allowedNamespaces.selector does not select it)");
    CHECK_INT(sbx_class_allows_namespace(&k, "ns-c", NULL, 1, why, sizeof why), 0);
    /* Namespaces unreadable: a scoped class cannot be checked, so it refuses. */
    CHECK_INT(sbx_class_allows_namespace(&k, "ns-a", team_a, 0, why, sizeof why), 0);
    CHECK(strstr(why, "cannot read Namespaces") != NULL);
    sbx_class_free(&k);
    /* No selector: every namespace, readable or not; no class at all: likewise. */
    CHECK_INT(parse_class("", &k), 0);
    CHECK_INT(sbx_class_allows_namespace(&k, "ns-b", team_b, 0, why, sizeof why), 1);
    sbx_class_free(&k);
    CHECK_INT(sbx_class_allows_namespace(NULL, "ns-b", NULL, 0, why, sizeof why), 1);
    cJSON_Delete(team_a);
    cJSON_Delete(team_b);
}

TEST(lifecycle_scope) {
    struct sbx_class k;
    struct sbx_spec s;
    char why[512] = "", err[512];
    CHECK_INT(parse_class("\"allowedLifecycles\":[\"session\",\"one-shot\"]", &k), 0);
    cJSON *sb = sandbox("\"lifecycle\":\"persistent\"");
    CHECK_INT(sbx_class_resolve(sb, &k, NULL, &s, err, sizeof err), 0);
    CHECK_INT(sbx_class_allows_lifecycle(&k, &s, why, sizeof why), 0);
    CHECK_STR(why, "spec.lifecycle: persistent is not allowed by SandboxClass \"small\" (spec.allowedLifecycles: "
                   "one-shot, session)");
    sbx_spec_free(&s);
    cJSON_Delete(sb);
    sb = sandbox("\"lifecycle\":\"session\"");
    CHECK_INT(sbx_class_resolve(sb, &k, NULL, &s, err, sizeof err), 0);
    CHECK_INT(sbx_class_allows_lifecycle(&k, &s, why, sizeof why), 1);
    sbx_spec_free(&s);
    cJSON_Delete(sb);
    sbx_class_free(&k);
    /* Every lifecycle when the class names none. */
    CHECK_INT(parse_class("", &k), 0);
    sb = sandbox("\"lifecycle\":\"persistent\"");
    CHECK_INT(sbx_class_resolve(sb, &k, NULL, &s, err, sizeof err), 0);
    CHECK_INT(sbx_class_allows_lifecycle(&k, &s, why, sizeof why), 1);
    sbx_spec_free(&s);
    cJSON_Delete(sb);
    sbx_class_free(&k);
}

TEST(fork_limits_reach_the_spec) {
    struct sbx_spec s;
    char err[512];
    CHECK_INT(resolve("\"workspace\":{\"maxSize\":\"5Gi\",\"allowForksAcrossUsers\":true}",
                      "\"workspace\":{\"size\":\"1Gi\",\"from\":{\"sandbox\":\"other\"}}", &s, err, sizeof err), 0);
    CHECK_INT(s.workspace_max_bytes, 5 * GIB);
    CHECK_INT(s.forks_across_users, 1);
    CHECK_STR(s.workspace_from, "other");
    sbx_spec_free(&s);
    CHECK_INT(resolve("", "\"workspace\":{\"from\":{\"sandbox\":\"other\"}}", &s, err, sizeof err), 0);
    CHECK_INT(s.workspace_max_bytes, 0);
    CHECK_INT(s.forks_across_users, 0);
    sbx_spec_free(&s);
}
