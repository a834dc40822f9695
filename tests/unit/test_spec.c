/* tests/unit/test_spec.c — the Sandbox API in C (sandbox/model/spec.c): defaults, parsing of
 * every field, one readable error per invalid input; and the exact shape of the PVC and
 * Pod the controller builds (sandbox/model/builders.c). Fixtures: tests/unit/data/spec/ ($YAO_TEST_DATA, else next
 * to this file). */
#include "check.h"

#include "sandbox/model/builders.h"
#include "sandbox/model/oneshot.h"

#include <stdarg.h>

#include "kube/kjson.h"
#include "sandbox/model/naming.h"
#include "sandbox/decide/shard_decide.h"
#include "sandbox/model/spec.h"

#define GIB (INT64_C(1) << 30)
#define MIB (INT64_C(1) << 20)

/* ---- helpers -------------------------------------------------------------------------- */

/* Reads tests/unit/data/<rel> and parses it; NULL (and a failed CHECK) on error. */
static cJSON *load_fixture(const char *rel) {
    char path[1024];
    const char *dir = getenv("YAO_TEST_DATA");
    FILE *f;
    char *buf;
    long n;
    cJSON *json;

    if (dir && *dir) {
        snprintf(path, sizeof path, "%s/%s", dir, rel);
    } else {
        const char *slash = strrchr(__FILE__, '/');
        int len = slash ? (int)(slash - __FILE__) + 1 : 0;
        snprintf(path, sizeof path, "%.*sdata/%s", len, __FILE__, rel);
    }
    f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    json = cJSON_Parse(buf);
    free(buf);
    CHECK(json != NULL);
    return json;
}

/* Follows a path of keys (and "#N" array indices) ending with NULL. */
static const cJSON *jat(const cJSON *root, ...) {
    va_list ap;
    const char *k;
    const cJSON *cur = root;

    va_start(ap, root);
    while (cur && (k = va_arg(ap, const char *)) != NULL) {
        if (k[0] == '#')
            cur = cJSON_GetArrayItem(cur, atoi(k + 1));
        else
            cur = cJSON_GetObjectItemCaseSensitive(cur, k);
    }
    va_end(ap);
    return cur;
}
#define JAT(...) jat(__VA_ARGS__, (const char *)NULL)
#define JSTR(...) cJSON_GetStringValue(JAT(__VA_ARGS__))
#define JNUM(...) (cJSON_IsNumber(JAT(__VA_ARGS__)) ? JAT(__VA_ARGS__)->valuedouble : -12345.0)
#define JTRUE(...) cJSON_IsTrue(JAT(__VA_ARGS__))
#define JFALSE(...) cJSON_IsFalse(JAT(__VA_ARGS__))
#define JSIZE(...) cJSON_GetArraySize(JAT(__VA_ARGS__))

/* Parses {"spec": <spec_json>} with the given defaults (NULL = built-in). */
static int parse_text(const char *spec_json, const struct sbx_defaults *d, struct sbx_spec *s,
                      char *err, size_t errlen) {
    size_t n = strlen(spec_json) + 128;
    char *doc = malloc(n);
    cJSON *json;
    int rc;

    snprintf(doc, n, "{\"kind\":\"Sandbox\",\"metadata\":{\"name\":\"t\"},\"spec\":%s}", spec_json);
    json = cJSON_Parse(doc);
    free(doc);
    CHECK(json != NULL);
    if (!json) return -99;
    rc = sbx_spec_parse(json, d, s, err, errlen);
    cJSON_Delete(json);
    return rc;
}

/* True if s is a valid label value: <= 63, [A-Za-z0-9._-], alnum at both ends, or "". */
static int is_label_value(const char *s) {
    size_t n = strlen(s);

    if (n == 0) return 1;
    if (n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && c != '_' && c != '.') return 0;
        if ((i == 0 || i == n - 1) && !alnum) return 0;
    }
    return 1;
}

/* A spec as the controller would build it after a successful parse of `file`. */
struct built {
    struct sbx_spec spec;
    cJSON *json, *pod, *pvc;
    char pod_name[64], claim[80];
};

static int build_from(const char *file, struct built *b) {
    char err[256];
    struct sbx_defaults d;
    struct sbx_owner o = {0};

    memset(b, 0, sizeof *b);
    sbx_defaults_init(&d);
    b->json = load_fixture(file);
    if (!b->json) return -1;
    CHECK_INT(sbx_spec_parse(b->json, &d, &b->spec, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(sbx_name_pod(b->spec.user_id, b->spec.chat_id, b->pod_name, sizeof b->pod_name), 0);
    sbx_claim_name(b->pod_name, b->claim, sizeof b->claim);
    o.name = JSTR(b->json, "metadata", "name");
    o.namespace_ = JSTR(b->json, "metadata", "namespace");
    o.uid = JSTR(b->json, "metadata", "uid");
    b->pod = sbx_build_pod(&o, &b->spec, b->pod_name, b->claim);
    b->pvc = sbx_build_pvc(&o, &b->spec, b->pod_name, b->claim);
    CHECK(b->pod != NULL);
    CHECK(b->pvc != NULL);
    return b->pod && b->pvc ? 0 : -1;
}

static void built_free(struct built *b) {
    cJSON_Delete(b->json);
    cJSON_Delete(b->pod);
    cJSON_Delete(b->pvc);
    sbx_spec_free(&b->spec);
}

/* ---- defaults and enums ------------------------------------------------------------- */

TEST(defaults_init_builtin) {
    struct sbx_defaults d;

    memset(&d, 0x5a, sizeof d);
    sbx_defaults_init(&d);
    CHECK_STR(d.image, "yao-sandbox/sandbox:" YAO_VERSION);
    CHECK_INT(d.image_builtin, 1);
    CHECK_INT(d.pull_policy, SBX_PULL_BY_IMAGE);
    CHECK_INT(d.idle_timeout_ms, 30 * 60 * 1000);
    CHECK_INT(d.memory_bytes, 2 * GIB);
    CHECK_INT(d.cpu_millis, 1000);
    CHECK_INT(d.memory_request_bytes, 256 * MIB);
    CHECK_INT(d.cpu_request_millis, 100);
    CHECK_INT(d.workspace_bytes, 10 * GIB);
    CHECK(d.storage_class == NULL);
}

TEST(lifecycle_names_round_trip) {
    static const char *const names[] = { "one-shot", "session", "long-running", "persistent" };
    enum sbx_lifecycle l;

    for (int i = 0; i < 4; i++) {
        CHECK_STR(sbx_lifecycle_name((enum sbx_lifecycle)i), names[i]);
        CHECK_INT(sbx_lifecycle_parse(names[i], &l), 0);
        CHECK_INT(l, i);
    }
    CHECK_INT(sbx_lifecycle_parse("Session", &l), -1);
    CHECK_INT(sbx_lifecycle_parse("oneshot", &l), -1);
    CHECK_INT(sbx_lifecycle_parse("", &l), -1);
    CHECK_INT(sbx_lifecycle_parse(NULL, &l), -1);
    CHECK_INT(SBX_ONE_SHOT, 0);
}

TEST(minimal_spec_gets_defaults) {
    char err[256] = "junk";
    struct sbx_spec s;
    cJSON *json = load_fixture("spec/minimal.json");

    CHECK_INT(sbx_spec_parse(json, NULL, &s, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(s.user_id, "alice");
    CHECK_STR(s.chat_id, "chat1");
    CHECK_STR(s.image, SBX_DEFAULT_IMAGE);
    CHECK_INT(s.pull_policy, SBX_PULL_BY_IMAGE);
    CHECK_INT(s.lifecycle, SBX_SESSION);
    CHECK_INT(s.idle_timeout_ms, 30 * 60 * 1000);
    CHECK_INT(s.paused, 0);
    CHECK_INT(s.has_command, 0);
    CHECK_INT(s.has_args, 0);
    CHECK_INT(s.command.n, 0);
    CHECK(s.command.v == NULL);
    CHECK_INT(s.args.n, 0);
    CHECK_INT(s.nenv, 0);
    CHECK(s.env == NULL);
    CHECK_INT(s.memory_bytes, 2 * GIB);
    CHECK_INT(s.cpu_millis, 1000);
    CHECK_INT(s.memory_request_bytes, 256 * MIB);
    CHECK_INT(s.cpu_request_millis, 100);
    CHECK_INT(s.workspace_bytes, 10 * GIB);
    CHECK(s.storage_class == NULL);
    CHECK_STR(s.mount_path, "/workspace");
    CHECK_INT(s.run.present, 0);
    CHECK_INT(s.ttl_after_finished_s, 300);
    sbx_spec_free(&s);
    cJSON_Delete(json);
}

TEST(controller_defaults_are_applied) {
    char err[256];
    struct sbx_spec s;
    struct sbx_defaults d;

    sbx_defaults_init(&d);
    /* the built-in image is marked as such on the Sandboxes that take it */
    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\"}", &d, &s, err, sizeof err), 0);
    CHECK_INT(s.image_builtin, 1);
    sbx_spec_free(&s);
    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\",\"image\":\"mine:1\"}", &d, &s, err, sizeof err), 0);
    CHECK_INT(s.image_builtin, 0);
    sbx_spec_free(&s);
    d.image = "example.com/custom:2";
    d.image_builtin = 0;
    d.idle_timeout_ms = 5 * 60 * 1000;
    d.memory_bytes = 4 * GIB;
    d.cpu_millis = 2500;
    d.workspace_bytes = 1 * GIB;
    d.storage_class = "standard";
    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\"}", &d, &s, err, sizeof err), 0);
    CHECK_STR(s.image, "example.com/custom:2");
    CHECK_INT(s.idle_timeout_ms, 5 * 60 * 1000);
    CHECK_INT(s.memory_bytes, 4 * GIB);
    CHECK_INT(s.cpu_millis, 2500);
    CHECK_INT(s.workspace_bytes, GIB);
    CHECK_STR(s.storage_class, "standard");
    sbx_spec_free(&s);

    /* the spec wins over the controller */
    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\",\"image\":\"mine:1\","
                         "\"idleTimeout\":\"90s\",\"resources\":{\"memory\":\"1Gi\"},"
                         "\"workspace\":{\"storageClassName\":\"\"}}", &d, &s, err, sizeof err), 0);
    CHECK_STR(s.image, "mine:1");
    CHECK_INT(s.idle_timeout_ms, 90 * 1000);
    CHECK_INT(s.memory_bytes, GIB);
    CHECK_INT(s.cpu_millis, 2500);
    CHECK_STR(s.storage_class, "");
    sbx_spec_free(&s);
}

TEST(invalid_controller_defaults_are_refused) {
    char err[256];
    struct sbx_spec s;
    struct sbx_defaults d;
    const char *ok = "{\"userID\":\"u\",\"chatID\":\"c\"}";

    sbx_defaults_init(&d);
    d.image = NULL;
    CHECK_INT(parse_text(ok, &d, &s, err, sizeof err), -1);
    CHECK(strstr(err, "spec.image: not set") != NULL);

    sbx_defaults_init(&d);
    d.image = "bad image";
    CHECK_INT(parse_text(ok, &d, &s, err, sizeof err), -1);
    CHECK(strstr(err, "spec.image (controller default)") != NULL);

    sbx_defaults_init(&d);
    d.memory_bytes = MIB;
    CHECK_INT(parse_text(ok, &d, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.resources.memory: controller default 1Mi is below the minimum 4Mi");

    sbx_defaults_init(&d);
    d.cpu_millis = 0;
    CHECK_INT(parse_text(ok, &d, &s, err, sizeof err), -1);
    CHECK(strstr(err, "spec.resources.cpu: controller default 0 is below the minimum 1m") != NULL);

    sbx_defaults_init(&d);
    d.idle_timeout_ms = 10;
    CHECK_INT(parse_text(ok, &d, &s, err, sizeof err), -1);
    CHECK(strstr(err, "spec.idleTimeout") != NULL);

    sbx_defaults_init(&d);
    d.storage_class = "Not_A_Class";
    CHECK_INT(parse_text(ok, &d, &s, err, sizeof err), -1);
    CHECK(strstr(err, "spec.workspace.storageClassName") != NULL);
}

/* ---- every field -------------------------------------------------------------------- */

TEST(full_spec_every_field) {
    char err[256];
    struct sbx_spec s;
    cJSON *json = load_fixture("spec/full.json");

    CHECK_INT(sbx_spec_parse(json, NULL, &s, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(s.user_id, "Bob@Example.com");
    CHECK_STR(s.chat_id, "Research Chat #7");
    CHECK_STR(s.image, "registry.example.com/yao/workspace:1.4.2");
    CHECK_INT(s.lifecycle, SBX_LONG_RUNNING);
    CHECK_INT(s.idle_timeout_ms, 90 * 60 * 1000);
    CHECK_INT(s.paused, 1);
    CHECK_INT(s.has_command, 1);
    CHECK_INT(s.command.n, 2);
    if (s.command.n == 2) {
        CHECK_STR(s.command.v[0], "/usr/bin/tini");
        CHECK_STR(s.command.v[1], "--");
    }
    CHECK_INT(s.has_args, 1);
    CHECK_INT(s.args.n, 4);
    if (s.args.n == 4) CHECK_STR(s.args.v[3], "8080");
    CHECK_INT(s.nenv, 3);
    if (s.nenv == 3) {
        CHECK_STR(s.env[0].name, "LANG");
        CHECK_STR(s.env[0].value, "C.UTF-8");
        CHECK_STR(s.env[1].name, "EMPTY");
        CHECK_STR(s.env[1].value, "");
        CHECK_STR(s.env[2].name, "my.dotted-name");
        CHECK_STR(s.env[2].value, "line1\nline2");
    }
    CHECK_INT(s.memory_bytes, 512 * MIB);
    CHECK_INT(s.cpu_millis, 500);
    CHECK_INT(s.memory_request_bytes, 384 * MIB);
    CHECK_INT(s.cpu_request_millis, 250);
    CHECK_INT(s.workspace_bytes, 20 * GIB);
    CHECK_STR(s.storage_class, "fast-ssd");
    CHECK_STR(s.mount_path, "/home/sandbox/work");
    CHECK_INT(s.run.present, 1);
    CHECK_INT(s.run.command.n, 3);
    if (s.run.command.n == 3) CHECK_STR(s.run.command.v[2], "make test");
    CHECK_STR(s.run.working_dir, "/home/sandbox/work/src");
    CHECK_INT(s.run.nenv, 1);
    if (s.run.nenv == 1) {
        CHECK_STR(s.run.env[0].name, "CI");
        CHECK_STR(s.run.env[0].value, "1");
    }
    CHECK_INT(s.run.timeout_ms, 90 * 1000);
    CHECK_INT(s.ttl_after_finished_s, 60);
    sbx_spec_free(&s);
    CHECK(s.user_id == NULL && s.env == NULL && s.nenv == 0);
    sbx_spec_free(&s);   /* freeing twice is harmless: free zeroes */
    cJSON_Delete(json);
}

TEST(one_shot_spec) {
    char err[256];
    struct sbx_spec s;
    cJSON *json = load_fixture("spec/one-shot.json");

    CHECK_INT(sbx_spec_parse(json, NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.lifecycle, SBX_ONE_SHOT);
    CHECK_INT(s.memory_bytes, 2 * GIB);   /* Docker-style "2g" is binary */
    CHECK_INT(s.cpu_millis, 1000);
    CHECK_INT(s.run.present, 1);
    CHECK_INT(s.run.command.n, 2);
    CHECK(s.run.working_dir == NULL);
    CHECK_INT(s.run.nenv, 0);
    CHECK_INT(s.run.timeout_ms, 10 * 60 * 1000);
    CHECK_INT(s.ttl_after_finished_s, 300);
    sbx_spec_free(&s);
    cJSON_Delete(json);
}

TEST(quantity_and_duration_forms) {
    static const struct { const char *json; int64_t mem, cpu, ws; } cases[] = {
        { "{\"memory\":\"2Gi\",\"cpu\":\"1\"}", 2 * GIB, 1000, 0 },
        { "{\"memory\":\"2g\",\"cpu\":\"1.0\"}", 2 * GIB, 1000, 0 },
        { "{\"memory\":\"512Mi\",\"cpu\":\"500m\"}", 512 * MIB, 500, 0 },
        { "{\"memory\":\"1.5Gi\",\"cpu\":\"0.25\"}", 3 * GIB / 2, 250, 0 },
        { "{\"memory\":\"1G\",\"cpu\":\"256\"}", 1000000000, 256000, 0 },
        { "{\"memory\":2147483648,\"cpu\":2}", 2 * GIB, 2000, 0 },
        { "{\"memory\":\"4Mi\",\"cpu\":\"1m\"}", 4 * MIB, 1, 0 },
        { "{\"memory\":\"1Ti\",\"cpu\":1.5}", INT64_C(1) << 40, 1500, 0 },
    };
    char err[256], doc[256];
    struct sbx_spec s;

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(doc, sizeof doc, "{\"userID\":\"u\",\"chatID\":\"c\",\"resources\":%s}",
                 cases[i].json);
        CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), 0);
        if (err[0]) fprintf(stderr, "  case %zu: %s\n", i, err);
        CHECK_INT(s.memory_bytes, cases[i].mem);
        CHECK_INT(s.cpu_millis, cases[i].cpu);
        sbx_spec_free(&s);
    }

    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\",\"workspace\":{\"size\":\"1Mi\"},"
                         "\"idleTimeout\":\"1s\",\"run\":{\"command\":[\"true\"],\"timeout\":\"0\"}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.workspace_bytes, MIB);
    CHECK_INT(s.idle_timeout_ms, 1000);
    CHECK_INT(s.run.timeout_ms, 0);
    CHECK_INT(s.lifecycle, SBX_SESSION);   /* run is allowed, unused, outside one-shot */
    sbx_spec_free(&s);

    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\",\"workspace\":{\"size\":\"64Ti\"},"
                         "\"idleTimeout\":\"8760h\"}", NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.workspace_bytes, INT64_C(64) << 40);
    CHECK_INT(s.idle_timeout_ms, INT64_C(8760) * 3600 * 1000);
    sbx_spec_free(&s);

    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\",\"workspace\":{\"size\":10737418240}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.workspace_bytes, 10 * GIB);
    sbx_spec_free(&s);
}

TEST(edge_values_accepted) {
    char err[256], doc[1400], id[600];
    struct sbx_spec s;

    /* 128 two-byte characters (256 bytes) is within "128 characters" */
    id[0] = '\0';
    for (int i = 0; i < 128; i++) strcat(id, "\xc3\xa9");
    snprintf(doc, sizeof doc, "{\"userID\":\"%s\",\"chatID\":\"%s\"}", id, id);
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(strlen(s.user_id), 256);
    sbx_spec_free(&s);

    /* JSON nulls mean "not given"; "/a..b" is a name, not a ".." element; trailing / ok */
    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\",\"image\":null,\"lifecycle\":null,"
                         "\"paused\":null,\"env\":null,\"resources\":{\"memory\":null},"
                         "\"workspace\":{\"mountPath\":\"/a..b/c/\"},\"run\":null,"
                         "\"ttlSecondsAfterFinished\":0,\"command\":[],\"args\":[\"x\"]}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(s.image, SBX_DEFAULT_IMAGE);
    CHECK_INT(s.memory_bytes, 2 * GIB);
    CHECK_STR(s.mount_path, "/a..b/c/");
    CHECK_INT(s.ttl_after_finished_s, 0);
    CHECK_INT(s.has_command, 0);   /* an empty list is "not given" */
    CHECK_INT(s.has_args, 1);
    sbx_spec_free(&s);

    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\",\"env\":[{\"name\":\"_x.y-Z9\","
                         "\"value\":\"=\"},{\"name\":\"yao_user_id\",\"value\":\"\"}],"
                         "\"ttlSecondsAfterFinished\":2147483647}", NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.nenv, 2);
    CHECK_INT(s.ttl_after_finished_s, 2147483647);
    sbx_spec_free(&s);

    /* a working directory may contain ".." (it is only cd'ed into); StorageClass names
     * follow IsDNS1123Subdomain, which has no per-label limit */
    CHECK_INT(parse_text("{\"userID\":\"u\",\"chatID\":\"c\",\"run\":{\"command\":[\"ls\"],"
                         "\"workingDir\":\"/x/../..\"},\"workspace\":{\"storageClassName\":"
                         "\"a-storage-class-name-with-a-first-label-longer-than-sixty-three-chars.example.com\"}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(s.run.working_dir, "/x/../..");
    sbx_spec_free(&s);
}

/* ---- invalid input ------------------------------------------------------------------ */

struct bad_case {
    const char *spec;     /* JSON of spec */
    const char *want[3];  /* substrings the error must contain */
};

static void check_bad(const struct bad_case *bc, size_t n) {
    char err[512];
    struct sbx_spec s;

    for (size_t i = 0; i < n; i++) {
        int before = check_failures_in_test;
        memset(&s, 0x5a, sizeof s);
        CHECK_INT(parse_text(bc[i].spec, NULL, &s, err, sizeof err), -1);
        for (int k = 0; k < 3 && bc[i].want[k]; k++) CHECK(strstr(err, bc[i].want[k]) != NULL);
        CHECK(strchr(err, '\n') == NULL);
        CHECK(s.user_id == NULL && s.image == NULL && s.env == NULL && s.nenv == 0 &&
              s.command.v == NULL && s.run.command.v == NULL && s.mount_path == NULL);
        if (check_failures_in_test != before)
            fprintf(stderr, "  case %zu: spec %.120s\n    error: %s\n", i, bc[i].spec, err);
    }
}

#define U "\"userID\":\"u\",\"chatID\":\"c\""

TEST(invalid_ids_and_image) {
    static const struct bad_case bc[] = {
        { "{\"chatID\":\"c\"}", { "spec.userID: required" } },
        { "{\"userID\":\"u\"}", { "spec.chatID: required" } },
        { "{\"userID\":\"\",\"chatID\":\"c\"}", { "spec.userID: must not be empty" } },
        { "{\"userID\":42,\"chatID\":\"c\"}", { "spec.userID: must be a string" } },
        { "{\"userID\":\"u\",\"chatID\":[\"c\"]}", { "spec.chatID: must be a string" } },
        { "{\"userID\":\"a\\nb\",\"chatID\":\"c\"}",
          { "spec.userID: \"a\\x0ab\" must not contain control characters" } },
        { "{" U ",\"image\":\"\"}", { "spec.image: must not be empty" } },
        { "{" U ",\"image\":\"ubuntu latest\"}",
          { "spec.image: \"ubuntu latest\" must not contain whitespace" } },
        { "{" U ",\"image\":\"ubuntu\\t\"}", { "spec.image", "whitespace" } },
        { "{" U ",\"image\":7}", { "spec.image: must be a string" } },
        { "{" U ",\"lifecycle\":\"forever\"}",
          { "spec.lifecycle: \"forever\" is not one of one-shot, session, long-running, persistent" } },
        { "{" U ",\"lifecycle\":\"Session\"}", { "spec.lifecycle: \"Session\"" } },
        { "{" U ",\"paused\":\"yes\"}", { "spec.paused: must be true or false" } },
        { "{" U ",\"paused\":1}", { "spec.paused" } },
    };
    char err[512], doc[4096], id[200];
    struct sbx_spec s;

    check_bad(bc, sizeof bc / sizeof *bc);

    memset(id, 'x', 129);
    id[129] = '\0';
    snprintf(doc, sizeof doc, "{\"userID\":\"%s\",\"chatID\":\"c\"}", id);
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.userID: must be at most 128 characters (got 129)");
    snprintf(doc, sizeof doc, "{\"userID\":\"u\",\"chatID\":\"%s\"}", id);
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.chatID: must be at most 128 characters (got 129)");

    memset(doc, 0, sizeof doc);
    strcpy(doc, "{" U ",\"image\":\"");
    memset(doc + strlen(doc), 'i', 1025);
    strcat(doc, "\"}");
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.image: must be at most 1024 characters (got 1025)");

    /* wrong document shapes */
    cJSON *j = cJSON_Parse("[1,2]");
    CHECK_INT(sbx_spec_parse(j, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "Sandbox: not a JSON object");
    cJSON_Delete(j);
    j = cJSON_Parse("{\"metadata\":{}}");
    CHECK_INT(sbx_spec_parse(j, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec: required");
    cJSON_Delete(j);
    j = cJSON_Parse("{\"spec\":\"x\"}");
    CHECK_INT(sbx_spec_parse(j, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec: must be an object");
    cJSON_Delete(j);
    CHECK_INT(sbx_spec_parse(NULL, NULL, &s, err, sizeof err), -1);
}

TEST(invalid_durations) {
    static const struct bad_case bc[] = {
        { "{" U ",\"idleTimeout\":\"5x\"}",
          { "spec.idleTimeout: \"5x\" is not a valid duration" } },
        { "{" U ",\"idleTimeout\":\"\"}", { "spec.idleTimeout: \"\" is not a valid duration" } },
        { "{" U ",\"idleTimeout\":\"-5m\"}", { "spec.idleTimeout", "not a valid duration" } },
        { "{" U ",\"idleTimeout\":\"30\"}", { "spec.idleTimeout: \"30\" is not a valid duration" } },
        { "{" U ",\"idleTimeout\":\"500ms\"}",
          { "spec.idleTimeout: \"500ms\" is below the minimum 1s" } },
        { "{" U ",\"idleTimeout\":\"0\"}", { "spec.idleTimeout: \"0\" is below the minimum 1s" } },
        { "{" U ",\"idleTimeout\":\"8761h\"}",
          { "spec.idleTimeout: \"8761h\" is above the maximum 8760h" } },
        { "{" U ",\"idleTimeout\":\"99999999999999999999h\"}", { "spec.idleTimeout", "not a valid" } },
        { "{" U ",\"idleTimeout\":1800}", { "spec.idleTimeout: must be a string" } },
        { "{" U ",\"run\":{\"command\":[\"x\"],\"timeout\":\"soon\"}}",
          { "spec.run.timeout: \"soon\" is not a valid duration" } },
        { "{" U ",\"run\":{\"command\":[\"x\"],\"timeout\":\"9000h\"}}",
          { "spec.run.timeout", "above the maximum 8760h" } },
    };
    check_bad(bc, sizeof bc / sizeof *bc);
}

TEST(invalid_quantities) {
    static const struct bad_case bc[] = {
        { "{" U ",\"resources\":{\"memory\":\"2x\"}}",
          { "spec.resources.memory: \"2x\" is not a valid quantity" } },
        { "{" U ",\"resources\":{\"memory\":\"-1Gi\"}}",
          { "spec.resources.memory: \"-1Gi\" is not a valid quantity" } },
        { "{" U ",\"resources\":{\"memory\":\"\"}}", { "spec.resources.memory", "not a valid quantity" } },
        { "{" U ",\"resources\":{\"memory\":\"2K\"}}",
          { "spec.resources.memory: \"2K\" is not a valid quantity" } },
        { "{" U ",\"resources\":{\"memory\":\"1Mi\"}}",
          { "spec.resources.memory: \"1Mi\" is below the minimum 4Mi" } },
        { "{" U ",\"resources\":{\"memory\":0}}",
          { "spec.resources.memory: 0 is below the minimum 4Mi" } },
        { "{" U ",\"resources\":{\"memory\":-5}}", { "spec.resources.memory: -5 is not a valid quantity" } },
        { "{" U ",\"resources\":{\"memory\":\"1025Gi\"}}",
          { "spec.resources.memory: \"1025Gi\" is above the maximum 1Ti" } },
        { "{" U ",\"resources\":{\"memory\":\"99999999999999999999999\"}}",
          { "spec.resources.memory", "not a valid quantity" } },
        { "{" U ",\"resources\":{\"memory\":true}}",
          { "spec.resources.memory: must be a string or an integer" } },
        { "{" U ",\"resources\":{\"cpu\":\"0\"}}", { "spec.resources.cpu: \"0\" is below the minimum 1m" } },
        { "{" U ",\"resources\":{\"cpu\":\"0.0001\"}}",
          { "spec.resources.cpu: \"0.0001\" is not a valid quantity" } },
        { "{" U ",\"resources\":{\"cpu\":\"257\"}}",
          { "spec.resources.cpu: \"257\" is above the maximum 256" } },
        { "{" U ",\"resources\":{\"cpu\":\"1 core\"}}", { "spec.resources.cpu", "not a valid quantity" } },
        { "{" U ",\"resources\":{\"cpu\":\"1Gi\"}}", { "spec.resources.cpu", "not a valid quantity" } },
        { "{" U ",\"resources\":\"big\"}", { "spec.resources: must be an object" } },
        { "{" U ",\"workspace\":{\"size\":\"512Ki\"}}",
          { "spec.workspace.size: \"512Ki\" is below the minimum 1Mi" } },
        { "{" U ",\"workspace\":{\"size\":\"65Ti\"}}",
          { "spec.workspace.size: \"65Ti\" is above the maximum 64Ti" } },
        { "{" U ",\"workspace\":{\"size\":\"lots\"}}", { "spec.workspace.size: \"lots\" is not a valid quantity" } },
        { "{" U ",\"workspace\":[]}", { "spec.workspace: must be an object" } },
    };
    check_bad(bc, sizeof bc / sizeof *bc);
}

/* ---- requests and limits ------------------------------------------------------------ */

TEST(requests_are_separate_from_limits) {
    char err[256];
    struct sbx_spec s;
    struct sbx_defaults d;

    /* given explicitly, in either unit style, at most the limits */
    CHECK_INT(parse_text("{" U ",\"resources\":{\"memory\":\"1g\",\"cpu\":\"2\","
                         "\"requests\":{\"memory\":\"512m\",\"cpu\":\"0.5\"}}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(s.memory_bytes, GIB);
    CHECK_INT(s.cpu_millis, 2000);
    CHECK_INT(s.memory_request_bytes, 512 * MIB);
    CHECK_INT(s.cpu_request_millis, 500);
    sbx_spec_free(&s);

    /* equal to the limits is fine (Guaranteed QoS) */
    CHECK_INT(parse_text("{" U ",\"resources\":{\"memory\":\"1Gi\",\"cpu\":\"1\","
                         "\"requests\":{\"memory\":1073741824,\"cpu\":\"1000m\"}}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.memory_request_bytes, GIB);
    CHECK_INT(s.cpu_request_millis, 1000);
    sbx_spec_free(&s);

    /* only one request given: the other one is the controller's */
    CHECK_INT(parse_text("{" U ",\"resources\":{\"requests\":{\"cpu\":\"250m\"}}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.cpu_request_millis, 250);
    CHECK_INT(s.memory_request_bytes, 256 * MIB);
    CHECK_INT(s.memory_bytes, 2 * GIB);
    sbx_spec_free(&s);

    /* controller defaults for requests are applied */
    sbx_defaults_init(&d);
    d.memory_request_bytes = 64 * MIB;
    d.cpu_request_millis = 50;
    CHECK_INT(parse_text("{" U "}", &d, &s, err, sizeof err), 0);
    CHECK_INT(s.memory_request_bytes, 64 * MIB);
    CHECK_INT(s.cpu_request_millis, 50);
    sbx_spec_free(&s);
}

TEST(default_requests_never_exceed_a_lowered_limit) {
    char err[256];
    struct sbx_spec s;
    struct sbx_defaults d;

    /* spec lowers only the limits below the default requests (256Mi, 100m) */
    CHECK_INT(parse_text("{" U ",\"resources\":{\"memory\":\"128Mi\",\"cpu\":\"50m\"}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(s.memory_bytes, 128 * MIB);
    CHECK_INT(s.memory_request_bytes, 128 * MIB);
    CHECK_INT(s.cpu_millis, 50);
    CHECK_INT(s.cpu_request_millis, 50);
    sbx_spec_free(&s);

    /* a controller whose default limits are below its default requests: capped too */
    sbx_defaults_init(&d);
    d.memory_bytes = 64 * MIB;
    d.cpu_millis = 20;
    CHECK_INT(parse_text("{" U "}", &d, &s, err, sizeof err), 0);
    CHECK_INT(s.memory_request_bytes, 64 * MIB);
    CHECK_INT(s.cpu_request_millis, 20);
    sbx_spec_free(&s);

    /* and in the pod */
    struct sbx_owner o = { "t", "ns", "uid-1", NULL };
    CHECK_INT(parse_text("{" U ",\"resources\":{\"memory\":\"128Mi\"}}", NULL, &s, err, sizeof err), 0);
    cJSON *pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    const cJSON *c = JAT(pod, "spec", "containers", "#0");
    CHECK_STR(JSTR(c, "resources", "limits", "memory"), "128Mi");
    CHECK_STR(JSTR(c, "resources", "requests", "memory"), "128Mi");
    CHECK_STR(JSTR(c, "resources", "limits", "cpu"), "1");
    CHECK_STR(JSTR(c, "resources", "requests", "cpu"), "100m");
    cJSON_Delete(pod);
    sbx_spec_free(&s);
}

/* Sharded: every owned object carries the shard label; unsharded: none (as before). */
TEST(shard_label_on_owned_objects) {
    struct sbx_spec s;
    char e[256];
    CHECK_INT(parse_text("{" U "}", NULL, &s, e, sizeof e), 0);
    struct sbx_shard_labels l;
    sbx_shard_labels_init(&l, 4, 3);
    struct sbx_owner plain = { "t", "ns", "uid-1", NULL }, sharded = { "t", "ns", "uid-1", &l };
    cJSON *objs[4] = {sbx_build_pod(&plain, &s, "yao-sb-u-c", "yao-sb-u-c-workspace"),
                      sbx_build_pvc(&plain, &s, "yao-sb-u-c", "yao-sb-u-c-workspace"),
                      sbx_build_pod(&sharded, &s, "yao-sb-u-c", "yao-sb-u-c-workspace"),
                      sbx_build_pvc(&sharded, &s, "yao-sb-u-c", "yao-sb-u-c-workspace")};
    for (int i = 0; i < 4; i++) {
        CHECK(objs[i] != NULL);
        const char *v = JSTR(objs[i], "metadata", "labels", "sandbox.yaoapps.com/shard");
        const char *of = JSTR(objs[i], "metadata", "labels", "sandbox.yaoapps.com/shards");
        if (i < 2) CHECK(v == NULL && of == NULL);
        else { CHECK_STR(v, "3"); CHECK_STR(of, "4"); }
        CHECK_STR(JSTR(objs[i], "metadata", "labels", "sandbox.yaoapps.com/name"), "t");
        cJSON_Delete(objs[i]);
    }
    sbx_spec_free(&s);
}

TEST(request_above_limit_is_invalid) {
    static const struct bad_case bc[] = {
        { "{" U ",\"resources\":{\"memory\":\"1Gi\",\"requests\":{\"memory\":\"2Gi\"}}}",
          { "spec.resources.requests.memory: 2Gi is above the memory limit 1Gi (spec.resources.memory)",
            "cannot exceed" } },
        { "{" U ",\"resources\":{\"cpu\":\"500m\",\"requests\":{\"cpu\":\"1\"}}}",
          { "spec.resources.requests.cpu: 1 is above the cpu limit 500m (spec.resources.cpu)" } },
        /* above the controller's default limit (2Gi / 1 core) when the spec sets no limit */
        { "{" U ",\"resources\":{\"requests\":{\"memory\":\"3Gi\"}}}",
          { "spec.resources.requests.memory: 3Gi is above the memory limit 2Gi",
            "controller default YAO_SANDBOX_MEMORY" } },
        { "{" U ",\"resources\":{\"requests\":{\"cpu\":\"1001m\"}}}",
          { "spec.resources.requests.cpu", "controller default YAO_SANDBOX_CPU" } },
        { "{" U ",\"resources\":{\"requests\":{\"memory\":\"lots\"}}}",
          { "spec.resources.requests.memory: \"lots\" is not a valid quantity" } },
        { "{" U ",\"resources\":{\"requests\":{\"memory\":\"1Mi\"}}}",
          { "spec.resources.requests.memory: \"1Mi\" is below the minimum 4Mi" } },
        { "{" U ",\"resources\":{\"requests\":{\"cpu\":\"0\"}}}",
          { "spec.resources.requests.cpu: \"0\" is below the minimum 1m" } },
        { "{" U ",\"resources\":{\"requests\":[]}}", { "spec.resources.requests: must be an object" } },
    };
    check_bad(bc, sizeof bc / sizeof *bc);
}

/* ---- image pull policy ---------------------------------------------------------------- */

TEST(pull_policy_names_round_trip) {
    static const char *const names[] = { "IfNotPresent", "Always", "Never" };
    enum sbx_pull_policy p;

    for (int i = 0; i < 3; i++) {
        CHECK_INT(sbx_pull_policy_parse(names[i], &p), 0);
        CHECK_INT(p, i);
        CHECK_STR(sbx_pull_policy_name(p), names[i]);
    }
    CHECK_INT(sbx_pull_policy_parse("ifnotpresent", &p), -1);
    CHECK_INT(sbx_pull_policy_parse("", &p), -1);
    CHECK_INT(sbx_pull_policy_parse(NULL, &p), -1);
    CHECK_INT(SBX_PULL_IF_NOT_PRESENT, 0);   /* a zeroed spec means the safe default */
}

TEST(pull_policy_reaches_the_pod) {
    char err[256];
    struct sbx_spec s;
    struct sbx_defaults d;
    struct sbx_owner o = { "t", "ns", "uid-1", NULL };
    static const char *const want[] = { "IfNotPresent", "Always", "Never" };

    for (int i = 0; i < 3; i++) {
        sbx_defaults_init(&d);
        d.pull_policy = (enum sbx_pull_policy)i;
        CHECK_INT(parse_text("{" U ",\"image\":\"mine:latest\"}", &d, &s, err, sizeof err), 0);
        cJSON *pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
        CHECK_STR(JSTR(pod, "spec", "containers", "#0", "image"), "mine:latest");
        CHECK_STR(JSTR(pod, "spec", "containers", "#0", "imagePullPolicy"), want[i]);
        cJSON_Delete(pod);
        sbx_spec_free(&s);
    }
}

TEST(pull_policy_by_image_is_the_kubernetes_default) {
    /* Unset, the policy follows the image as Kubernetes defaults a container's: a tag that
     * may move (":latest", or none) is pulled every start, a version tag or a digest once
     * per node. The registry's port is not a tag. */
    static const struct { const char *image, *want; } cases[] = {
        {"yao-sandbox/sandbox:0.1.0", "IfNotPresent"},
        {"reg.example:5000/yao-sandbox/sandbox:0.1.0", "IfNotPresent"},
        {"mine:latest", "Always"},
        {"reg.example:5000/team/mine:latest", "Always"},
        {"mine", "Always"},
        {"reg.example:5000/team/mine", "Always"},
        {"reg.example:5000/team/mine@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "IfNotPresent"},
        {"mine:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "Always"},
        {"mine:1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "IfNotPresent"},
        {"mine:latest-1", "IfNotPresent"},
    };
    struct sbx_defaults d;
    struct sbx_spec s;
    char err[512], text[512];
    struct sbx_owner o = { "t", "ns", "uid-1", NULL };

    sbx_defaults_init(&d);
    CHECK_INT(d.pull_policy, SBX_PULL_BY_IMAGE);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(text, sizeof text, "{" U ",\"image\":\"%s\"}", cases[i].image);
        CHECK_INT(parse_text(text, &d, &s, err, sizeof err), 0);
        cJSON *pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
        CHECK_STR(JSTR(pod, "spec", "containers", "#0", "imagePullPolicy"), cases[i].want);
        cJSON_Delete(pod);
        sbx_spec_free(&s);
    }
    /* A policy set explicitly is the policy of every image. */
    CHECK_INT(sbx_pull_policy_for(SBX_PULL_IF_NOT_PRESENT, "mine:latest"), SBX_PULL_IF_NOT_PRESENT);
    CHECK_INT(sbx_pull_policy_for(SBX_PULL_NEVER, "mine"), SBX_PULL_NEVER);
    CHECK_INT(sbx_pull_policy_for(SBX_PULL_ALWAYS, "mine:1"), SBX_PULL_ALWAYS);
    /* "auto" is not a Kubernetes policy: only the three names parse. */
    enum sbx_pull_policy p;
    CHECK_INT(sbx_pull_policy_parse("ByImage", &p), -1);
}

TEST(default_image_is_this_release) {
    /* the tag is the project version the build passes in, never "latest" */
    CHECK_STR(SBX_DEFAULT_IMAGE, "yao-sandbox/sandbox:" YAO_VERSION);
    CHECK(strlen(YAO_VERSION) > 0);
    CHECK(strcmp(YAO_VERSION, "latest") != 0);
    CHECK(strchr(YAO_VERSION, '.') != NULL);
}

TEST(invalid_env_and_argv) {
    static const struct bad_case bc[] = {
        { "{" U ",\"env\":{\"A\":\"1\"}}", { "spec.env: must be an array" } },
        { "{" U ",\"env\":[\"A=1\"]}", { "spec.env[0]: must be an object" } },
        { "{" U ",\"env\":[{\"value\":\"1\"}]}", { "spec.env[0].name: required" } },
        { "{" U ",\"env\":[{\"name\":\"\"}]}", { "spec.env[0].name: must not be empty" } },
        { "{" U ",\"env\":[{\"name\":3}]}", { "spec.env[0].name: must be a string" } },
        { "{" U ",\"env\":[{\"name\":\"OK\"},{\"name\":\"1ABC\"}]}",
          { "spec.env[1].name: \"1ABC\" is not a valid variable name" } },
        { "{" U ",\"env\":[{\"name\":\"A=B\"}]}", { "spec.env[0].name: \"A=B\" is not a valid" } },
        { "{" U ",\"env\":[{\"name\":\"-x\"}]}", { "spec.env[0].name: \"-x\" is not a valid" } },
        { "{" U ",\"env\":[{\"name\":\"A B\"}]}", { "spec.env[0].name", "not a valid variable name" } },
        { "{" U ",\"env\":[{\"name\":\"FOO\",\"value\":\"1\"},{\"name\":\"BAR\"},{\"name\":\"FOO\"}]}",
          { "spec.env[2].name: duplicate name \"FOO\" (also spec.env[0])" } },
        { "{" U ",\"env\":[{\"name\":\"YAO_USER_ID\",\"value\":\"x\"}]}",
          { "spec.env[0].name: \"YAO_USER_ID\" is reserved" } },
        { "{" U ",\"env\":[{\"name\":\"YAO_SANDBOX_NAME\"}]}", { "spec.env[0].name", "reserved" } },
        { "{" U ",\"env\":[{\"name\":\"YAO_CHAT_ID\"}]}", { "spec.env[0].name", "reserved" } },
        { "{" U ",\"env\":[{\"name\":\"N\",\"value\":5}]}", { "spec.env[0].value: must be a string" } },
        { "{" U ",\"command\":\"sleep 1\"}", { "spec.command: must be an array of strings" } },
        { "{" U ",\"command\":[\"a\",1]}", { "spec.command[1]: must be a string" } },
        { "{" U ",\"args\":[null]}", { "spec.args[0]: must be a string" } },
    };
    check_bad(bc, sizeof bc / sizeof *bc);
}

/* Builds {"userID":"u","chatID":"c","<key>":[ n copies of item ]} into a malloc'd string. */
static char *repeat_doc(const char *key, const char *item, size_t n) {
    size_t len = 64 + strlen(key) + n * (strlen(item) + 1), o;
    char *doc = malloc(len);

    o = (size_t)snprintf(doc, len, "{" U ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(doc + o, len - o, "%s%s", i ? "," : "", item);
    snprintf(doc + o, len - o, "]}");
    return doc;
}

TEST(invalid_sizes_of_lists_and_values) {
    char err[512], *doc, *big;
    struct sbx_spec s;

    doc = repeat_doc("args", "\"a\"", 257);
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.args: must have at most 256 elements (got 257)");
    free(doc);
    doc = repeat_doc("args", "\"a\"", 256);
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.args.n, 256);
    sbx_spec_free(&s);
    free(doc);

    /* the totals (issue 34): command and args at most 128 KiB together, run.command as
     * much, env and run.env names and values 256 KiB together; each exactly at the bound
     * passes */
    {
        char item[32768 + 3];
        item[0] = '"';
        memset(item + 1, 'x', 32768);
        strcpy(item + 32769, "\"");
        doc = repeat_doc("args", item, 4);   /* 4 x 32 KiB = 128 KiB */
        CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), 0);
        sbx_spec_free(&s);
        free(doc);
        doc = repeat_doc("command", item, 5);
        CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), -1);
        CHECK_STR(err, "spec.command and spec.args: must be at most 131072 bytes in all (got 163840)");
        free(doc);
        /* command and args count together */
        size_t len = 6 * 32800 + 128;
        big = malloc(len);
        size_t o = (size_t)snprintf(big, len, "{" U ",\"command\":[%s,%s],\"args\":[%s,%s,\"y\"]}", item, item,
                                    item, item);
        CHECK(o < len);
        CHECK_INT(parse_text(big, NULL, &s, err, sizeof err), -1);
        CHECK_STR(err, "spec.command and spec.args: must be at most 131072 bytes in all (got 131073)");
        o = (size_t)snprintf(big, len, "{" U ",\"lifecycle\":\"one-shot\",\"run\":{\"command\":[%s,%s,%s,%s,\"y\"]}}",
                             item, item, item, item);
        CHECK(o < len);
        CHECK_INT(parse_text(big, NULL, &s, err, sizeof err), -1);
        CHECK_STR(err, "spec.run.command: must be at most 131072 bytes in all (got 131073)");
        free(big);
        /* env: 8 values of 32 KiB less their one-letter name = 256 KiB exactly; one more byte fails */
        len = 10 * 32800 + 256;
        big = malloc(len);
        o = (size_t)snprintf(big, len, "{" U ",\"env\":[");
        for (int i = 0; i < 7; i++)
            o += (size_t)snprintf(big + o, len - o, "%s{\"name\":\"%c\",\"value\":\"%.32767s\"}", i ? "," : "",
                                  'A' + i, item + 1);
        o += (size_t)snprintf(big + o, len - o, "],\"lifecycle\":\"one-shot\",\"run\":{\"command\":[\"true\"],"
                              "\"env\":[{\"name\":\"Z\",\"value\":\"%.32767s\"}]}}", item + 1);
        CHECK(o < len);
        CHECK_INT(parse_text(big, NULL, &s, err, sizeof err), 0);
        sbx_spec_free(&s);
        char *at = strstr(big, "\"Z\",\"value\":\"") + strlen("\"Z\",\"value\":\"");
        memmove(at + 1, at, strlen(at) + 1);
        *at = 'x';   /* the last value is now 32768 bytes: one past the total */
        CHECK_INT(parse_text(big, NULL, &s, err, sizeof err), -1);
        CHECK_STR(err, "spec.env and spec.run.env: names and values must be at most 262144 bytes in all (got 262145)");
        free(big);
    }

    /* 257 distinct names: the count check comes first */
    big = malloc(257 * 24 + 64);
    size_t o = (size_t)sprintf(big, "{" U ",\"env\":[");
    for (int i = 0; i < 257; i++) o += (size_t)sprintf(big + o, "%s{\"name\":\"V%d\"}", i ? "," : "", i);
    strcpy(big + o, "]}");
    CHECK_INT(parse_text(big, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.env: must have at most 256 elements (got 257)");
    free(big);

    /* one argv element of 32769 characters */
    big = malloc(32769 + 64);
    o = (size_t)sprintf(big, "{" U ",\"command\":[\"sh\",\"");
    memset(big + o, 'c', 32769);
    strcpy(big + o + 32769, "\"]}");
    CHECK_INT(parse_text(big, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.command[1]: must be at most 32768 characters");
    free(big);

    /* an env value of 32769 characters */
    big = malloc(32769 + 64);
    o = (size_t)sprintf(big, "{" U ",\"env\":[{\"name\":\"V\",\"value\":\"");
    memset(big + o, 'v', 32769);
    strcpy(big + o + 32769, "\"}]}");
    CHECK_INT(parse_text(big, NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.env[0].value: must be at most 32768 characters");
    free(big);
}

TEST(invalid_workspace_run_ttl) {
    static const struct bad_case bc[] = {
        { "{" U ",\"workspace\":{\"storageClassName\":\"Fast_SSD\"}}",
          { "spec.workspace.storageClassName: \"Fast_SSD\" is not a valid StorageClass name" } },
        { "{" U ",\"workspace\":{\"storageClassName\":\"a..b\"}}", { "spec.workspace.storageClassName" } },
        { "{" U ",\"workspace\":{\"storageClassName\":\"-a\"}}", { "spec.workspace.storageClassName" } },
        { "{" U ",\"workspace\":{\"mountPath\":\"workspace\"}}",
          { "spec.workspace.mountPath: \"workspace\" must be an absolute path" } },
        { "{" U ",\"workspace\":{\"mountPath\":\"\"}}", { "spec.workspace.mountPath", "absolute" } },
        { "{" U ",\"workspace\":{\"mountPath\":\"/\"}}", { "spec.workspace.mountPath: must not be \"/\"" } },
        { "{" U ",\"workspace\":{\"mountPath\":\"//\"}}", { "spec.workspace.mountPath: must not be \"/\"" } },
        { "{" U ",\"workspace\":{\"mountPath\":\"/a/../etc\"}}",
          { "spec.workspace.mountPath: \"/a/../etc\" must not contain \"..\" elements" } },
        { "{" U ",\"workspace\":{\"mountPath\":\"/a/..\"}}", { "spec.workspace.mountPath", "\"..\"" } },
        { "{" U ",\"workspace\":{\"mountPath\":\"/a\\tb\"}}", { "spec.workspace.mountPath", "control" } },
        { "{" U ",\"lifecycle\":\"one-shot\"}", { "spec.run: required when lifecycle is one-shot" } },
        { "{" U ",\"lifecycle\":\"one-shot\",\"run\":{}}", { "spec.run.command: required" } },
        { "{" U ",\"lifecycle\":\"one-shot\",\"run\":{\"command\":[]}}", { "spec.run.command: required" } },
        { "{" U ",\"run\":{\"command\":[\"\",\"x\"]}}", { "spec.run.command[0]: must not be empty" } },
        { "{" U ",\"run\":[\"ls\"]}", { "spec.run: must be an object" } },
        { "{" U ",\"run\":{\"command\":[\"ls\"],\"workingDir\":\"src\"}}",
          { "spec.run.workingDir: \"src\" must be an absolute path" } },
        { "{" U ",\"run\":{\"command\":[\"ls\"],\"workingDir\":\"/x\\ny\"}}",
          { "spec.run.workingDir: \"/x\\x0ay\" must not contain control characters" } },
        { "{" U ",\"run\":{\"command\":[\"ls\"],\"env\":[{\"name\":\"YAO_CHAT_ID\"}]}}",
          { "spec.run.env[0].name: \"YAO_CHAT_ID\" is reserved" } },
        { "{" U ",\"run\":{\"command\":[\"ls\"],\"env\":[{\"name\":\"A\"},{\"name\":\"A\"}]}}",
          { "spec.run.env[1].name: duplicate name" } },
        { "{" U ",\"ttlSecondsAfterFinished\":-1}", { "spec.ttlSecondsAfterFinished: must be an integer" } },
        { "{" U ",\"ttlSecondsAfterFinished\":1.5}", { "spec.ttlSecondsAfterFinished" } },
        { "{" U ",\"ttlSecondsAfterFinished\":\"300\"}", { "spec.ttlSecondsAfterFinished" } },
        { "{" U ",\"ttlSecondsAfterFinished\":2147483648}", { "spec.ttlSecondsAfterFinished" } },
    };
    check_bad(bc, sizeof bc / sizeof *bc);
}

TEST(error_message_is_one_safe_line) {
    char err[512], small[16];
    struct sbx_spec s;
    char doc[1024];

    /* control characters are escaped, long values cut with "..." */
    CHECK_INT(parse_text("{" U ",\"lifecycle\":\"a\\r\\nb\\\"c\\\\\"}", NULL, &s, err, sizeof err), -1);
    CHECK_STR(err, "spec.lifecycle: \"a\\x0d\\x0ab\\\"c\\\\\" is not one of one-shot, session, "
                   "long-running, persistent");
    snprintf(doc, sizeof doc, "{" U ",\"resources\":{\"memory\":\"%0200d\"}}", 7);
    doc[strlen(doc) - 4] = 'x';   /* "000...0x": junk, 200 chars */
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), -1);
    CHECK(strstr(err, "spec.resources.memory: \"0000") != NULL);
    CHECK(strstr(err, "...\" is not a valid quantity") != NULL);
    CHECK(strlen(err) < 160);
    /* the cut never splits a UTF-8 sequence */
    snprintf(doc, sizeof doc, "{" U ",\"lifecycle\":\"a%s\"}",
             "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5"
             "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5"
             "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5"
             "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5");
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), -1);
    CHECK(strstr(err, "\xe6\x97\xa5\xe6\x97\xa5...\"") != NULL);

    /* small or absent buffers are safe */
    CHECK_INT(parse_text("{\"chatID\":\"c\"}", NULL, &s, small, sizeof small), -1);
    CHECK_STR(small, "spec.userID: re");
    CHECK_INT(parse_text("{\"chatID\":\"c\"}", NULL, &s, NULL, 0), -1);
    CHECK_INT(parse_text("{" U "}", NULL, &s, NULL, 0), 0);
    sbx_spec_free(&s);
}

/* ---- builders ----------------------------------------------------------------------- */

TEST(claim_name) {
    char out[80], tiny[8];

    sbx_claim_name("yao-sb-alice-chat1", out, sizeof out);
    CHECK_STR(out, "yao-sb-alice-chat1-workspace");
    sbx_claim_name("yao-sb-alice-chat1", tiny, sizeof tiny);
    CHECK_STR(tiny, "yao-sb-");
}

TEST(pvc_exact_shape) {
    struct built b;

    if (build_from("spec/full.json", &b) == 0) {
        const cJSON *p = b.pvc;
        CHECK_STR(JSTR(p, "apiVersion"), "v1");
        CHECK_STR(JSTR(p, "kind"), "PersistentVolumeClaim");
        CHECK_STR(JSTR(p, "metadata", "name"), b.claim);
        CHECK(strncmp(b.claim, b.pod_name, strlen(b.pod_name)) == 0);
        CHECK_STR(b.claim + strlen(b.pod_name), "-workspace");
        CHECK_STR(JSTR(p, "metadata", "namespace"), "team-a");
        CHECK_STR(JSTR(p, "metadata", "labels", "app.kubernetes.io/managed-by"), "yao-sandbox");
        CHECK_STR(JSTR(p, "metadata", "labels", "sandbox.yaoapps.com/name"), "bob-research");
        CHECK_STR(JSTR(p, "metadata", "labels", "sandbox.yaoapps.com/lifecycle"), "long-running");
        CHECK(is_label_value(JSTR(p, "metadata", "labels", "sandbox.yaoapps.com/user")));
        CHECK(is_label_value(JSTR(p, "metadata", "labels", "sandbox.yaoapps.com/chat")));
        CHECK_INT(cJSON_GetArraySize(JAT(p, "metadata", "labels")), 5);
        CHECK_STR(JSTR(p, "metadata", "annotations", "sandbox.yaoapps.com/user-id"), "Bob@Example.com");
        CHECK_STR(JSTR(p, "metadata", "annotations", "sandbox.yaoapps.com/chat-id"), "Research Chat #7");
        CHECK_INT(JSIZE(p, "metadata", "ownerReferences"), 1);
        CHECK_STR(JSTR(p, "metadata", "ownerReferences", "#0", "apiVersion"),
                  "sandbox.yaoapps.com/v1alpha1");
        CHECK_STR(JSTR(p, "metadata", "ownerReferences", "#0", "kind"), "Sandbox");
        CHECK_STR(JSTR(p, "metadata", "ownerReferences", "#0", "name"), "bob-research");
        CHECK_STR(JSTR(p, "metadata", "ownerReferences", "#0", "uid"),
                  "6f1e0c52-3d1a-4b7e-9a57-1c0de0f00d42");
        CHECK(JTRUE(p, "metadata", "ownerReferences", "#0", "controller"));
        CHECK(JTRUE(p, "metadata", "ownerReferences", "#0", "blockOwnerDeletion"));
        CHECK_INT(JSIZE(p, "spec", "accessModes"), 1);
        CHECK_STR(JSTR(p, "spec", "accessModes", "#0"), "ReadWriteOnce");
        CHECK_STR(JSTR(p, "spec", "resources", "requests", "storage"), "20Gi");
        CHECK_STR(JSTR(p, "spec", "storageClassName"), "fast-ssd");
        CHECK_STR(JSTR(p, "spec", "volumeMode"), "Filesystem");
        CHECK(JAT(p, "status") == NULL);
    }
    built_free(&b);

    if (build_from("spec/minimal.json", &b) == 0) {
        CHECK(JAT(b.pvc, "spec", "storageClassName") == NULL);   /* cluster default */
        CHECK_STR(JSTR(b.pvc, "spec", "resources", "requests", "storage"), "10Gi");
        CHECK_STR(JSTR(b.pvc, "metadata", "name"), "yao-sb-alice-chat1-workspace");
        CHECK_STR(JSTR(b.pvc, "metadata", "labels", "sandbox.yaoapps.com/user"), "alice");
        CHECK_STR(JSTR(b.pvc, "metadata", "labels", "sandbox.yaoapps.com/lifecycle"), "session");
    }
    built_free(&b);
}

TEST(pvc_empty_storage_class_is_kept) {
    char err[256];
    struct sbx_spec s;
    struct sbx_owner o = { "n", "ns", "uid-1", NULL };
    cJSON *pvc;

    CHECK_INT(parse_text("{" U ",\"workspace\":{\"storageClassName\":\"\",\"size\":\"1.5Gi\"}}",
                         NULL, &s, err, sizeof err), 0);
    pvc = sbx_build_pvc(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    CHECK_STR(JSTR(pvc, "spec", "storageClassName"), "");
    CHECK_STR(JSTR(pvc, "spec", "resources", "requests", "storage"), "1536Mi");
    cJSON_Delete(pvc);
    sbx_spec_free(&s);
}

/* spec.workspace.from: parsed and checked; the claim built from a source is its clone. */
TEST(workspace_from_clone) {
    char err[256];
    struct sbx_spec s;
    struct sbx_owner o = { "n", "ns", "uid-1", NULL };
    struct sbx_ws_source src = { "yao-sb-a-b-workspace", "yao-test", INT64_C(20) << 30, 0 };
    cJSON *pvc;
    static const struct { const char *spec, *err; } bad[] = {
        { "{" U ",\"workspace\":{\"from\":{}}}", "spec.workspace.from.sandbox: required" },
        { "{" U ",\"workspace\":{\"from\":\"a\"}}", "spec.workspace.from: must be an object" },
        { "{" U ",\"workspace\":{\"from\":{\"sandbox\":7}}}", "spec.workspace.from.sandbox: must be a string" },
        { "{" U ",\"workspace\":{\"from\":{\"sandbox\":\"Chat_1\"}}}",
          "spec.workspace.from.sandbox: \"Chat_1\" is not a Sandbox name" },
        { "{" U ",\"workspace\":{\"from\":{\"sandbox\":\"t\"}}}",
          "spec.workspace.from.sandbox: a Sandbox cannot start from its own workspace" },
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(parse_text(bad[i].spec, NULL, &s, err, sizeof err), -1);
        CHECK(strstr(err, bad[i].err) != NULL);
        CHECK(s.workspace_from == NULL);
    }
    CHECK_INT(parse_text("{" U "}", NULL, &s, err, sizeof err), 0);
    CHECK(s.workspace_from == NULL);
    sbx_spec_free(&s);

    /* The size: the larger of the spec's and the source's. */
    CHECK(sbx_clone_bytes(INT64_C(10) << 30, INT64_C(20) << 30) == INT64_C(20) << 30);
    CHECK(sbx_clone_bytes(INT64_C(30) << 30, INT64_C(20) << 30) == INT64_C(30) << 30);
    CHECK(sbx_clone_bytes(INT64_C(10) << 30, 0) == INT64_C(10) << 30);

    CHECK_INT(parse_text("{" U ",\"workspace\":{\"from\":{\"sandbox\":\"chat-a\"}}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_STR(s.workspace_from, "chat-a");
    CHECK_INT(sbx_ws_source_check(&s, &src, err, sizeof err), 0);   /* no class: the source's */
    pvc = sbx_build_pvc_from(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace", &src);
    CHECK_STR(JSTR(pvc, "spec", "dataSource", "kind"), "PersistentVolumeClaim");
    CHECK_STR(JSTR(pvc, "spec", "dataSource", "name"), "yao-sb-a-b-workspace");
    CHECK(JAT(pvc, "spec", "dataSource", "apiGroup") == NULL);   /* core */
    CHECK_STR(JSTR(pvc, "spec", "storageClassName"), "yao-test");
    CHECK_STR(JSTR(pvc, "spec", "resources", "requests", "storage"), "20Gi");
    CHECK_STR(JSTR(pvc, "metadata", "name"), "yao-sb-u-c-workspace");
    cJSON_Delete(pvc);
    src.claim = NULL;
    CHECK(sbx_build_pvc_from(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace", &src) == NULL);
    src.claim = "yao-sb-a-b-workspace";
    pvc = sbx_build_pvc(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");   /* no source given */
    CHECK(JAT(pvc, "spec", "dataSource") == NULL);
    CHECK_STR(JSTR(pvc, "spec", "resources", "requests", "storage"), "10Gi");
    cJSON_Delete(pvc);
    sbx_spec_free(&s);

    /* A class of its own: the same as the source's, or refused. */
    CHECK_INT(parse_text("{" U ",\"workspace\":{\"storageClassName\":\"yao-test\",\"size\":\"30Gi\","
                         "\"from\":{\"sandbox\":\"chat-a\"}}}", NULL, &s, err, sizeof err), 0);
    CHECK_INT(sbx_ws_source_check(&s, &src, err, sizeof err), 0);
    pvc = sbx_build_pvc_from(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace", &src);
    CHECK_STR(JSTR(pvc, "spec", "resources", "requests", "storage"), "30Gi");
    cJSON_Delete(pvc);
    sbx_spec_free(&s);
    CHECK_INT(parse_text("{" U ",\"workspace\":{\"storageClassName\":\"fast\","
                         "\"from\":{\"sandbox\":\"chat-a\"}}}", NULL, &s, err, sizeof err), 0);
    CHECK_INT(sbx_ws_source_check(&s, &src, err, sizeof err), -1);
    CHECK_STR(err, "spec.workspace.storageClassName \"fast\" differs from the StorageClass \"yao-test\" of "
              "claim yao-sb-a-b-workspace; a claim can be cloned only within its StorageClass");
    sbx_spec_free(&s);
}

TEST(pod_exact_shape) {
    struct built b;

    if (build_from("spec/full.json", &b) == 0) {
        const cJSON *p = b.pod, *c = JAT(b.pod, "spec", "containers", "#0");
        CHECK_STR(JSTR(p, "apiVersion"), "v1");
        CHECK_STR(JSTR(p, "kind"), "Pod");
        CHECK_STR(JSTR(p, "metadata", "name"), b.pod_name);
        CHECK(sbx_is_dns_label(b.pod_name));
        CHECK_STR(JSTR(p, "metadata", "namespace"), "team-a");
        CHECK_STR(JSTR(p, "metadata", "labels", "app.kubernetes.io/managed-by"), "yao-sandbox");
        CHECK_STR(JSTR(p, "metadata", "labels", "sandbox.yaoapps.com/name"), "bob-research");
        CHECK_STR(JSTR(p, "metadata", "labels", "sandbox.yaoapps.com/lifecycle"), "long-running");
        CHECK_STR(JSTR(p, "metadata", "annotations", "sandbox.yaoapps.com/user-id"), "Bob@Example.com");
        CHECK_STR(JSTR(p, "metadata", "annotations", "sandbox.yaoapps.com/chat-id"), "Research Chat #7");
        CHECK_STR(JSTR(p, "metadata", "ownerReferences", "#0", "uid"),
                  "6f1e0c52-3d1a-4b7e-9a57-1c0de0f00d42");
        CHECK(JTRUE(p, "metadata", "ownerReferences", "#0", "controller"));
        CHECK(JTRUE(p, "metadata", "ownerReferences", "#0", "blockOwnerDeletion"));

        CHECK_STR(JSTR(p, "spec", "restartPolicy"), "Always");
        CHECK(JFALSE(p, "spec", "automountServiceAccountToken"));
        CHECK(JFALSE(p, "spec", "enableServiceLinks"));
        CHECK(JNUM(p, "spec", "terminationGracePeriodSeconds") == 10);
        CHECK(JTRUE(p, "spec", "securityContext", "runAsNonRoot"));
        CHECK(JNUM(p, "spec", "securityContext", "runAsUser") == 1000);
        CHECK(JNUM(p, "spec", "securityContext", "runAsGroup") == 1000);
        CHECK(JNUM(p, "spec", "securityContext", "fsGroup") == 1000);
        CHECK_STR(JSTR(p, "spec", "securityContext", "seccompProfile", "type"), "RuntimeDefault");
        CHECK(JAT(p, "spec", "serviceAccountName") == NULL);
        CHECK(JAT(p, "spec", "hostNetwork") == NULL);

        CHECK_INT(JSIZE(p, "spec", "containers"), 1);
        CHECK_STR(JSTR(c, "name"), "sandbox");
        CHECK_STR(JSTR(c, "image"), "registry.example.com/yao/workspace:1.4.2");
        CHECK_INT(JSIZE(c, "command"), 2);
        CHECK_STR(JSTR(c, "command", "#0"), "/usr/bin/tini");
        CHECK_INT(JSIZE(c, "args"), 4);
        CHECK_STR(JSTR(c, "args", "#2"), "http.server");
        CHECK(JFALSE(c, "securityContext", "allowPrivilegeEscalation"));
        CHECK(JFALSE(c, "securityContext", "privileged"));
        CHECK(JFALSE(c, "securityContext", "readOnlyRootFilesystem"));
        CHECK_INT(JSIZE(c, "securityContext", "capabilities", "drop"), 1);
        CHECK_STR(JSTR(c, "securityContext", "capabilities", "drop", "#0"), "ALL");
        CHECK(JAT(c, "securityContext", "capabilities", "add") == NULL);
        CHECK_STR(JSTR(c, "resources", "limits", "memory"), "512Mi");
        CHECK_STR(JSTR(c, "resources", "limits", "cpu"), "500m");
        CHECK_STR(JSTR(c, "resources", "requests", "memory"), "384Mi");
        CHECK_STR(JSTR(c, "resources", "requests", "cpu"), "250m");
        CHECK_STR(JSTR(c, "imagePullPolicy"), "IfNotPresent");

        /* env: the three injected ones first, then spec.env in order */
        CHECK_INT(JSIZE(c, "env"), 6);
        CHECK_STR(JSTR(c, "env", "#0", "name"), "YAO_SANDBOX_NAME");
        CHECK_STR(JSTR(c, "env", "#0", "value"), "bob-research");
        CHECK_STR(JSTR(c, "env", "#1", "name"), "YAO_USER_ID");
        CHECK_STR(JSTR(c, "env", "#1", "value"), "Bob@Example.com");
        CHECK_STR(JSTR(c, "env", "#2", "name"), "YAO_CHAT_ID");
        CHECK_STR(JSTR(c, "env", "#2", "value"), "Research Chat #7");
        CHECK_STR(JSTR(c, "env", "#3", "name"), "LANG");
        CHECK_STR(JSTR(c, "env", "#3", "value"), "C.UTF-8");
        CHECK_STR(JSTR(c, "env", "#4", "name"), "EMPTY");
        CHECK_STR(JSTR(c, "env", "#4", "value"), "");
        CHECK_STR(JSTR(c, "env", "#5", "name"), "my.dotted-name");
        CHECK_STR(JSTR(c, "env", "#5", "value"), "line1\nline2");

        /* the workspace volume, from the claim, mounted at mountPath */
        CHECK_INT(JSIZE(c, "volumeMounts"), 1);
        CHECK_STR(JSTR(c, "volumeMounts", "#0", "name"), "workspace");
        CHECK_STR(JSTR(c, "volumeMounts", "#0", "mountPath"), "/home/sandbox/work");
        CHECK_INT(JSIZE(p, "spec", "volumes"), 1);
        CHECK_STR(JSTR(p, "spec", "volumes", "#0", "name"), "workspace");
        CHECK_STR(JSTR(p, "spec", "volumes", "#0", "persistentVolumeClaim", "claimName"), b.claim);
        CHECK(JAT(p, "status") == NULL);
    }
    built_free(&b);
}

TEST(pod_defaults_idle_process_and_resources) {
    struct built b;

    if (build_from("spec/minimal.json", &b) == 0) {
        const cJSON *c = JAT(b.pod, "spec", "containers", "#0");
        CHECK_STR(JSTR(b.pod, "metadata", "name"), "yao-sb-alice-chat1");
        CHECK_STR(JSTR(b.pod, "metadata", "namespace"), "yao");
        /* the versioned sandbox image of this release, used from the node if it is there */
        CHECK_STR(JSTR(c, "image"), "yao-sandbox/sandbox:" YAO_VERSION);
        CHECK(strstr(JSTR(c, "image"), ":latest") == NULL);
        CHECK_STR(JSTR(c, "imagePullPolicy"), "IfNotPresent");
        CHECK_INT(JSIZE(c, "command"), 3);
        CHECK_STR(JSTR(c, "command", "#0"), "/bin/sh");
        CHECK_STR(JSTR(c, "command", "#1"), "-c");
        CHECK_STR(JSTR(c, "command", "#2"), SBX_IDLE_SCRIPT);
        CHECK(JAT(c, "args") == NULL);
        CHECK_STR(JSTR(c, "resources", "limits", "memory"), "2Gi");
        CHECK_STR(JSTR(c, "resources", "limits", "cpu"), "1");
        /* requests are not the limits: sized for density */
        CHECK_STR(JSTR(c, "resources", "requests", "memory"), "256Mi");
        CHECK_STR(JSTR(c, "resources", "requests", "cpu"), "100m");
        CHECK_INT(JSIZE(c, "env"), 3);
        CHECK_STR(JSTR(c, "env", "#0", "value"), "alice-chat1");
        CHECK_STR(JSTR(c, "volumeMounts", "#0", "mountPath"), "/workspace");
        CHECK_STR(JSTR(b.pod, "spec", "volumes", "#0", "persistentVolumeClaim", "claimName"),
                  "yao-sb-alice-chat1-workspace");
        CHECK_STR(JSTR(b.pod, "spec", "restartPolicy"), "Always");
    }
    built_free(&b);
}

TEST(pod_one_shot_never_restarts) {
    struct built b;

    if (build_from("spec/one-shot.json", &b) == 0) {
        const cJSON *c = JAT(b.pod, "spec", "containers", "#0");
        CHECK_STR(JSTR(b.pod, "spec", "restartPolicy"), "Never");
        CHECK_STR(JSTR(b.pod, "metadata", "labels", "sandbox.yaoapps.com/lifecycle"), "one-shot");
        /* spec.run is the main process, through the wrapper (oneshot.h), argv exact */
        CHECK_INT(JSIZE(c, "command"), 6);
        CHECK_STR(JSTR(c, "command", "#0"), "/bin/sh");
        CHECK_STR(JSTR(c, "command", "#1"), "-c");
        CHECK_STR(JSTR(c, "command", "#2"), SBX_RUN_SCRIPT);
        CHECK_STR(JSTR(c, "command", "#3"), "yao-run");
        CHECK_STR(JSTR(c, "command", "#4"), "python3");
        CHECK_STR(JSTR(c, "command", "#5"), "main.py");
        CHECK(JAT(c, "args") == NULL && JAT(c, "workingDir") == NULL);
        CHECK_STR(JSTR(c, "terminationMessagePolicy"), "FallbackToLogsOnError");
        CHECK_STR(JSTR(c, "terminationMessagePath"), "/dev/termination-log");
        /* run.timeout defaults to 10 min: the kubelet's deadline */
        CHECK_INT(cJSON_GetNumberValue(JAT(b.pod, "spec", "activeDeadlineSeconds")), 600);
        CHECK_STR(JSTR(c, "resources", "limits", "memory"), "2Gi");
        CHECK_STR(JSTR(c, "resources", "limits", "cpu"), "1");
    }
    built_free(&b);
}

TEST(pod_one_shot_run_options) {
    char err[256];
    struct sbx_spec s;
    struct sbx_owner o = { "n", NULL, "uid-1", NULL };
    cJSON *pod;
    const cJSON *c;

    /* workingDir and env go to the container; the timeout rounds up to whole seconds;
     * spec.command is not the main process of a one-shot */
    CHECK_INT(parse_text("{" U ",\"lifecycle\":\"one-shot\",\"command\":[\"ignored\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
                         "\"run\":{\"command\":[\"make\",\"a b\"],\"workingDir\":\"/workspace/src\","
                         "\"env\":[{\"name\":\"A\",\"value\":\"2\"},{\"name\":\"B\"}],\"timeout\":\"1500ms\"}}",
                         NULL, &s, err, sizeof err), 0);
    pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    c = JAT(pod, "spec", "containers", "#0");
    CHECK_INT(JSIZE(c, "command"), 6);
    CHECK_STR(JSTR(c, "command", "#5"), "a b");
    CHECK_STR(JSTR(c, "workingDir"), "/workspace/src");
    CHECK_INT(JSIZE(c, "env"), 6);   /* the three YAO_*, spec.env's A, then run.env's A and B */
    CHECK_STR(JSTR(c, "env", "#3", "value"), "1");
    CHECK_STR(JSTR(c, "env", "#4", "name"), "A");
    CHECK_STR(JSTR(c, "env", "#4", "value"), "2");
    CHECK_STR(JSTR(c, "env", "#5", "value"), "");
    CHECK_INT(cJSON_GetNumberValue(JAT(pod, "spec", "activeDeadlineSeconds")), 2);
    cJSON_Delete(pod);
    sbx_spec_free(&s);

    /* no timeout: no deadline */
    CHECK_INT(parse_text("{" U ",\"lifecycle\":\"one-shot\",\"run\":{\"command\":[\"true\"],\"timeout\":\"0\"}}",
                         NULL, &s, err, sizeof err), 0);
    pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    CHECK(JAT(pod, "spec", "activeDeadlineSeconds") == NULL);
    CHECK(JAT(pod, "spec", "containers", "#0", "workingDir") == NULL);
    cJSON_Delete(pod);
    sbx_spec_free(&s);
}

TEST(pod_command_args_variants) {
    char err[256];
    struct sbx_spec s;
    struct sbx_owner o = { "n", NULL, "uid-1", NULL };
    cJSON *pod;

    /* args only: the image's entrypoint with these args */
    CHECK_INT(parse_text("{" U ",\"args\":[\"--serve\"]}", NULL, &s, err, sizeof err), 0);
    pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    CHECK(JAT(pod, "spec", "containers", "#0", "command") == NULL);
    CHECK_STR(JSTR(pod, "spec", "containers", "#0", "args", "#0"), "--serve");
    CHECK(JAT(pod, "metadata", "namespace") == NULL);
    cJSON_Delete(pod);
    sbx_spec_free(&s);

    /* command only */
    CHECK_INT(parse_text("{" U ",\"command\":[\"sleep\",\"infinity\"],\"args\":[]}", NULL, &s,
                         err, sizeof err), 0);
    pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    CHECK_INT(JSIZE(pod, "spec", "containers", "#0", "command"), 2);
    CHECK(JAT(pod, "spec", "containers", "#0", "args") == NULL);
    cJSON_Delete(pod);

    /* missing owner identity → NULL, never a half object */
    struct sbx_owner no_uid = { "n", "ns", NULL, NULL }, no_name = { NULL, "ns", "u", NULL };
    CHECK(sbx_build_pod(&no_uid, &s, "p", "p-workspace") == NULL);
    CHECK(sbx_build_pvc(&no_name, &s, "p", "p-workspace") == NULL);
    CHECK(sbx_build_pod(NULL, &s, "p", "p-workspace") == NULL);
    CHECK(sbx_build_pod(&o, &s, "p", NULL) == NULL);
    sbx_spec_free(&s);
}

/* IDs that need sanitising still give a valid pod name, claim name and label values; the
 * raw IDs survive in the annotations and env. Builders do not re-validate, so a 500-char
 * ID (refused by the parser) is used here to prove the naming path is robust too. */
TEST(awkward_ids_give_valid_names_and_labels) {
    static const char *const ids[][2] = {
        { "Alice", "Chat-ONE" },
        { "\xe7\x94\xa8\xe6\x88\xb7\xe4\xb8\x80", "\xf0\x9f\x92\xac \xe8\x81\x8a\xe5\xa4\xa9" },
        { "user@example.com", "../../etc/passwd" },
        { "---", "___" },
        { NULL, NULL },   /* 500-char IDs, filled below */
    };
    char long_u[501], long_c[501], pod_name[64], claim[80];
    struct sbx_owner o = { "a-sandbox-name-that-is-rather-long-and-goes-on-and-on-past-63-chars-x",
                           "ns", "uid", NULL };

    memset(long_u, 'U', 500);
    long_u[500] = '\0';
    for (int i = 0; i < 500; i++) long_c[i] = "Zz9-_."[i % 6];
    long_c[500] = '\0';
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        struct sbx_spec s;
        cJSON *pod, *pvc;
        const char *u = ids[i][0] ? ids[i][0] : long_u, *c = ids[i][1] ? ids[i][1] : long_c;

        memset(&s, 0, sizeof s);
        s.user_id = (char *)u;
        s.chat_id = (char *)c;
        s.image = (char *)"img";
        s.lifecycle = SBX_SESSION;
        s.memory_bytes = 2 * GIB;
        s.cpu_millis = 1000;
        s.workspace_bytes = GIB;
        CHECK_INT(sbx_name_pod(u, c, pod_name, sizeof pod_name), 0);
        CHECK(sbx_is_dns_label(pod_name));
        CHECK(strncmp(pod_name, "yao-sb-", 7) == 0);
        sbx_claim_name(pod_name, claim, sizeof claim);
        CHECK(strlen(claim) <= 63 + 10);
        pod = sbx_build_pod(&o, &s, pod_name, claim);
        pvc = sbx_build_pvc(&o, &s, pod_name, claim);
        CHECK(pod != NULL && pvc != NULL);
        for (int k = 0; k < 2; k++) {
            const cJSON *obj = k ? pvc : pod;
            CHECK(is_label_value(JSTR(obj, "metadata", "labels", "sandbox.yaoapps.com/user")));
            CHECK(is_label_value(JSTR(obj, "metadata", "labels", "sandbox.yaoapps.com/chat")));
            CHECK(is_label_value(JSTR(obj, "metadata", "labels", "sandbox.yaoapps.com/name")));
            CHECK_STR(JSTR(obj, "metadata", "annotations", "sandbox.yaoapps.com/user-id"), u);
            CHECK_STR(JSTR(obj, "metadata", "annotations", "sandbox.yaoapps.com/chat-id"), c);
        }
        CHECK_STR(JSTR(pod, "spec", "containers", "#0", "env", "#1", "value"), u);
        CHECK_STR(JSTR(pod, "spec", "containers", "#0", "env", "#2", "value"), c);
        CHECK_STR(JSTR(pod, "spec", "containers", "#0", "volumeMounts", "#0", "mountPath"),
                  "/workspace");   /* mount_path NULL falls back to the default */
        /* uppercase / unicode / long IDs hash: two different pairs never share a name */
        if (i == 0) {
            char other[64];
            CHECK_INT(sbx_name_pod("alice", "chat-one", other, sizeof other), 0);
            CHECK(strcmp(other, pod_name) != 0);
        }
        cJSON_Delete(pod);
        cJSON_Delete(pvc);
    }
}

TEST(built_objects_serialise) {
    struct built b;

    if (build_from("spec/full.json", &b) == 0) {
        char *text = cJSON_PrintUnformatted(b.pod);
        cJSON *back = cJSON_Parse(text);
        CHECK(back != NULL);
        CHECK(cJSON_Compare(back, b.pod, 1));
        cJSON_Delete(back);
        free(text);
    }
    built_free(&b);
}

/* ---- allocation failures ------------------------------------------------------------ */

static long alloc_budget = -1;   /* < 0: unlimited */

static void *failing_malloc(size_t n) {
    if (alloc_budget == 0) return NULL;
    if (alloc_budget > 0) alloc_budget--;
    return malloc(n);
}

/* Every cJSON allocation inside the builders fails in turn: each time the builder returns
 * NULL and frees what it had built (ASan/valgrind see no leak). */
TEST(builders_survive_allocation_failure) {
    struct built b;
    cJSON_Hooks hooks = { failing_malloc, free };
    struct sbx_owner o = {0};
    int pod_ok = 0, pvc_ok = 0;
    long k;

    if (build_from("spec/full.json", &b) != 0) {
        built_free(&b);
        return;
    }
    o.name = JSTR(b.json, "metadata", "name");
    o.namespace_ = JSTR(b.json, "metadata", "namespace");
    o.uid = JSTR(b.json, "metadata", "uid");
    cJSON_InitHooks(&hooks);
    for (k = 0; k < 2000 && !pod_ok; k++) {
        alloc_budget = k;
        cJSON *pod = sbx_build_pod(&o, &b.spec, b.pod_name, b.claim);
        alloc_budget = -1;
        if (pod) {
            pod_ok = 1;
            CHECK(cJSON_Compare(pod, b.pod, 1));
        }
        cJSON_Delete(pod);
    }
    CHECK(pod_ok);
    CHECK(k > 50);   /* there really were that many allocations to fail */
    for (k = 0; k < 2000 && !pvc_ok; k++) {
        alloc_budget = k;
        cJSON *pvc = sbx_build_pvc(&o, &b.spec, b.pod_name, b.claim);
        alloc_budget = -1;
        if (pvc) {
            pvc_ok = 1;
            CHECK(cJSON_Compare(pvc, b.pvc, 1));
        }
        cJSON_Delete(pvc);
    }
    CHECK(pvc_ok);
    cJSON_InitHooks(NULL);
    built_free(&b);
}

/* ---- template hash ------------------------------------------------------------------- */

/* The pod's template-hash annotation for a spec given as JSON members. */
static void hash_of(const char *members, char *out) {
    char err[256];
    struct sbx_spec s;
    struct sbx_owner o = { "t", "ns", "uid-1", NULL };
    out[0] = 0;
    CHECK_INT(parse_text(members, NULL, &s, err, sizeof err), 0);
    cJSON *pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    const char *h = JSTR(pod, "metadata", "annotations", SBX_ANN_TEMPLATE_HASH);
    CHECK(h != NULL);
    if (h) snprintf(out, SBX_TEMPLATE_HASH_LEN + 1, "%s", h);
    cJSON_Delete(pod);
    sbx_spec_free(&s);
}

TEST(template_hash_follows_what_reaches_the_pod) {
    char base[SBX_TEMPLATE_HASH_LEN + 1], again[SBX_TEMPLATE_HASH_LEN + 1], other[SBX_TEMPLATE_HASH_LEN + 1];
    hash_of("{" U "}", base);
    CHECK_INT(strlen(base), SBX_TEMPLATE_HASH_LEN);
    CHECK(strspn(base, "0123456789abcdef") == SBX_TEMPLATE_HASH_LEN);
    hash_of("{" U "}", again);
    CHECK_STR(again, base);                              /* stable */
    /* what does not reach the pod leaves it alone */
    hash_of("{" U ",\"paused\":true,\"idleTimeout\":\"5m\",\"lifecycle\":\"long-running\"}", again);
    /* (the lifecycle label is metadata, not spec) */
    CHECK_STR(again, base);
    static const char *const changes[] = {
        "{" U ",\"image\":\"busybox:1.36\"}",
        "{" U ",\"command\":[\"sleep\",\"1d\"]}",
        "{" U ",\"args\":[\"-c\",\"true\"]}",
        "{" U ",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}",
        "{" U ",\"resources\":{\"memory\":\"1Gi\"}}",
        "{" U ",\"resources\":{\"cpu\":\"2\"}}",
        "{" U ",\"workspace\":{\"mountPath\":\"/data\"}}",
    };
    for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
        hash_of(changes[i], other);
        if (!strcmp(other, base)) fprintf(stderr, "  same hash for %s\n", changes[i]);
        CHECK(strcmp(other, base) != 0);
    }
}

/* ---- controller-wide pod identity and pull secrets ------------------------------------ */

/* The pod of a minimal spec under defaults d (NULL on a refused spec, err set). */
static cJSON *pod_under(const struct sbx_defaults *d, char *err, size_t errlen) {
    struct sbx_spec s;
    struct sbx_owner o = { "t", "ns", "uid-1", NULL };
    if (parse_text("{" U "}", d, &s, err, errlen) != 0) return NULL;
    cJSON *pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    sbx_spec_free(&s);
    return pod;
}

TEST(pod_run_as_user_from_the_controller) {
    struct sbx_defaults d;
    char err[256];
    cJSON *pod;

    sbx_defaults_init(&d);
    CHECK_INT(d.run_as_user, 1000);
    CHECK_INT(d.npull_secrets, 0);
    pod = pod_under(&d, err, sizeof err);
    CHECK(pod != NULL);
    CHECK(JNUM(pod, "spec", "securityContext", "runAsUser") == 1000);
    CHECK(JAT(pod, "spec", "imagePullSecrets") == NULL);
    cJSON_Delete(pod);

    d.run_as_user = 424242;
    pod = pod_under(&d, err, sizeof err);
    CHECK(pod != NULL);
    CHECK(JNUM(pod, "spec", "securityContext", "runAsUser") == 424242);
    CHECK(JNUM(pod, "spec", "securityContext", "runAsGroup") == 424242);
    CHECK(JNUM(pod, "spec", "securityContext", "fsGroup") == 424242);
    cJSON_Delete(pod);

    /* auto: the platform chooses uid, gid and fsGroup; the rest of the hardening stays */
    d.run_as_user = SBX_RUN_AS_AUTO;
    pod = pod_under(&d, err, sizeof err);
    CHECK(pod != NULL);
    CHECK(JAT(pod, "spec", "securityContext", "runAsUser") == NULL);
    CHECK(JAT(pod, "spec", "securityContext", "runAsGroup") == NULL);
    CHECK(JAT(pod, "spec", "securityContext", "fsGroup") == NULL);
    CHECK(JTRUE(pod, "spec", "securityContext", "runAsNonRoot"));
    CHECK_STR(JSTR(pod, "spec", "securityContext", "seccompProfile", "type"), "RuntimeDefault");
    CHECK(JFALSE(pod, "spec", "containers", "#0", "securityContext", "allowPrivilegeEscalation"));
    CHECK_STR(JSTR(pod, "spec", "containers", "#0", "securityContext", "capabilities", "drop", "#0"), "ALL");
    {   /* a different pod, so a changed setting is seen on the pods */
        char base[SBX_TEMPLATE_HASH_LEN + 1];
        hash_of("{" U "}", base);
        CHECK(strcmp(JSTR(pod, "metadata", "annotations", SBX_ANN_TEMPLATE_HASH), base) != 0);
    }
    cJSON_Delete(pod);

    /* out of range (root included): refused, named */
    static const int64_t bad[] = { 0, -2, INT64_C(2147483648) };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        d.run_as_user = bad[i];
        CHECK(pod_under(&d, err, sizeof err) == NULL);
        CHECK(strstr(err, "run-as user") != NULL);
    }
}

TEST(pod_image_pull_secrets_from_the_controller) {
    struct sbx_defaults d;
    char err[256];
    char base[SBX_TEMPLATE_HASH_LEN + 1];
    cJSON *pod;

    sbx_defaults_init(&d);
    d.pull_secrets[0] = "regcred";
    d.pull_secrets[1] = "mirror.example-pull";
    d.npull_secrets = 2;
    pod = pod_under(&d, err, sizeof err);
    CHECK(pod != NULL);
    CHECK_INT(JSIZE(pod, "spec", "imagePullSecrets"), 2);
    CHECK_STR(JSTR(pod, "spec", "imagePullSecrets", "#0", "name"), "regcred");
    CHECK_STR(JSTR(pod, "spec", "imagePullSecrets", "#1", "name"), "mirror.example-pull");
    hash_of("{" U "}", base);
    CHECK(strcmp(JSTR(pod, "metadata", "annotations", SBX_ANN_TEMPLATE_HASH), base) != 0);
    cJSON_Delete(pod);

    static const char *const bad[] = { "Regcred", "has space", "-lead", "", "a_b" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        d.pull_secrets[1] = bad[i];
        CHECK(pod_under(&d, err, sizeof err) == NULL);
        CHECK(strstr(err, "image pull secret") != NULL);
    }
}

/* ---- ports and the Service ----------------------------------------------------------- */

TEST(ports_parse_and_reach_the_container) {
    char err[256];
    struct sbx_spec s;
    struct sbx_owner o = { "t", "ns", "uid-1", NULL };
    CHECK_INT(parse_text("{" U ",\"ports\":[{\"name\":\"http\",\"port\":8080},"
                         "{\"name\":\"vnc\",\"port\":5900,\"protocol\":\"TCP\"},"
                         "{\"name\":\"dns\",\"port\":8080,\"protocol\":\"UDP\"}],\"service\":{\"enabled\":true}}",
                         NULL, &s, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(s.nports, 3);
    CHECK_INT(s.service, 1);
    if (s.nports == 3) {
        CHECK_STR(s.ports[0].name, "http");
        CHECK_INT(s.ports[0].port, 8080);
        CHECK_INT(s.ports[0].protocol, SBX_PROTO_TCP);   /* the default */
        CHECK_INT(s.ports[2].protocol, SBX_PROTO_UDP);
    }
    cJSON *pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    CHECK_INT(JSIZE(pod, "spec", "containers", "#0", "ports"), 3);
    CHECK_STR(JSTR(pod, "spec", "containers", "#0", "ports", "#1", "name"), "vnc");
    CHECK(JNUM(pod, "spec", "containers", "#0", "ports", "#1", "containerPort") == 5900);
    CHECK_STR(JSTR(pod, "spec", "containers", "#0", "ports", "#2", "protocol"), "UDP");
    CHECK_STR(JSTR(pod, "metadata", "labels", SBX_LABEL_POD), "yao-sb-u-c");

    cJSON *svc = sbx_build_service(&o, &s, "yao-sb-u-c");
    CHECK(svc != NULL);
    CHECK_STR(JSTR(svc, "kind"), "Service");
    CHECK_STR(JSTR(svc, "metadata", "name"), "yao-sb-u-c");
    CHECK_STR(JSTR(svc, "metadata", "namespace"), "ns");
    CHECK_STR(JSTR(svc, "metadata", "ownerReferences", "#0", "uid"), "uid-1");
    CHECK(JTRUE(svc, "metadata", "ownerReferences", "#0", "controller"));
    CHECK_STR(JSTR(svc, "spec", "type"), "ClusterIP");
    CHECK_STR(JSTR(svc, "spec", "selector", SBX_LABEL_POD), "yao-sb-u-c");
    CHECK_STR(JSTR(svc, "spec", "selector", SBX_LABEL_NAME), "t");
    CHECK_INT(JSIZE(svc, "spec", "selector"), 2);
    CHECK_INT(JSIZE(svc, "spec", "ports"), 3);
    CHECK(JNUM(svc, "spec", "ports", "#0", "port") == 8080);
    CHECK(JNUM(svc, "spec", "ports", "#0", "targetPort") == 8080);
    CHECK_STR(JSTR(svc, "spec", "ports", "#2", "protocol"), "UDP");
    /* every selector label is on the pod, with the same value: the Service selects it */
    const cJSON *kv;
    cJSON_ArrayForEach(kv, JAT(svc, "spec", "selector"))
        CHECK_STR(JSTR(pod, "metadata", "labels", kv->string), kv->valuestring);

    /* a live Service as the API server returns it (extra fields) matches; a changed one not */
    cJSON *live = cJSON_Duplicate(svc, 1);
    cJSON_AddStringToObject(cJSON_GetObjectItem(live, "spec"), "clusterIP", "10.0.0.7");
    cJSON_AddStringToObject(cJSON_GetArrayItem(JAT(live, "spec", "ports"), 0), "nodePort", "x");
    CHECK_INT(sbx_service_matches(live, svc), 1);
    cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(JAT(live, "spec", "ports"), 1), "port"), 5901);
    CHECK_INT(sbx_service_matches(live, svc), 0);
    cJSON_Delete(live);
    live = cJSON_Duplicate(svc, 1);
    cJSON_AddStringToObject(cJSON_GetObjectItem(live, "spec") ? (cJSON *)JAT(live, "spec", "selector") : NULL, "x", "y");
    CHECK_INT(sbx_service_matches(live, svc), 0);
    cJSON_Delete(live);
    live = cJSON_Duplicate(svc, 1);
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(cJSON_GetObjectItem(live, "spec"), "ports"), 2);
    CHECK_INT(sbx_service_matches(live, svc), 0);
    cJSON_Delete(live);
    cJSON_Delete(svc);
    cJSON_Delete(pod);
    sbx_spec_free(&s);

    /* no ports: no ports member on the container (the hash of such pods is unchanged), no Service */
    CHECK_INT(parse_text("{" U "}", NULL, &s, err, sizeof err), 0);
    pod = sbx_build_pod(&o, &s, "yao-sb-u-c", "yao-sb-u-c-workspace");
    CHECK(JAT(pod, "spec", "containers", "#0", "ports") == NULL);
    CHECK(sbx_build_service(&o, &s, "yao-sb-u-c") == NULL);
    CHECK_INT(s.service, 0);
    cJSON_Delete(pod);
    sbx_spec_free(&s);
}

TEST(ports_change_the_template_hash) {
    char base[SBX_TEMPLATE_HASH_LEN + 1], a[SBX_TEMPLATE_HASH_LEN + 1], b[SBX_TEMPLATE_HASH_LEN + 1],
        svc[SBX_TEMPLATE_HASH_LEN + 1];
    hash_of("{" U "}", base);
    hash_of("{" U ",\"ports\":[{\"name\":\"http\",\"port\":8080}]}", a);
    hash_of("{" U ",\"ports\":[{\"name\":\"http\",\"port\":8081}]}", b);
    hash_of("{" U ",\"ports\":[{\"name\":\"http\",\"port\":8080}],\"service\":{\"enabled\":true}}", svc);
    CHECK(strcmp(base, a) != 0);
    CHECK(strcmp(a, b) != 0);
    CHECK_STR(svc, a);   /* the Service is not the pod's business */
    hash_of("{" U ",\"ports\":[]}", a);
    CHECK_STR(a, base);  /* an empty list is no ports */
}

TEST(invalid_ports_and_service) {
    static const struct bad_case bc[] = {
        { "{" U ",\"ports\":{}}", { "spec.ports: must be an array" } },
        { "{" U ",\"ports\":[1]}", { "spec.ports[0]: must be an object" } },
        { "{" U ",\"ports\":[{\"port\":80}]}", { "spec.ports[0].name: required" } },
        { "{" U ",\"ports\":[{\"name\":\"Http\",\"port\":80}]}", { "spec.ports[0].name:", "\"Http\"", "not a valid port name" } },
        { "{" U ",\"ports\":[{\"name\":\"1234\",\"port\":80}]}", { "spec.ports[0].name:", "at least one letter" } },
        { "{" U ",\"ports\":[{\"name\":\"a--b\",\"port\":80}]}", { "spec.ports[0].name:" } },
        { "{" U ",\"ports\":[{\"name\":\"-ab\",\"port\":80}]}", { "spec.ports[0].name:" } },
        { "{" U ",\"ports\":[{\"name\":\"abcdefghijklmnop\",\"port\":80}]}", { "spec.ports[0].name:", "15" } },
        { "{" U ",\"ports\":[{\"name\":\"web\"}]}", { "spec.ports[0].port: required" } },
        { "{" U ",\"ports\":[{\"name\":\"web\",\"port\":0}]}", { "spec.ports[0].port: must be an integer between 1 and 65535" } },
        { "{" U ",\"ports\":[{\"name\":\"web\",\"port\":65536}]}", { "spec.ports[0].port:" } },
        { "{" U ",\"ports\":[{\"name\":\"web\",\"port\":80.5}]}", { "spec.ports[0].port:" } },
        { "{" U ",\"ports\":[{\"name\":\"web\",\"port\":\"80\"}]}", { "spec.ports[0].port:" } },
        { "{" U ",\"ports\":[{\"name\":\"web\",\"port\":80,\"protocol\":\"tcp\"}]}",
          { "spec.ports[0].protocol:", "\"tcp\"", "TCP, UDP, SCTP" } },
        { "{" U ",\"ports\":[{\"name\":\"web\",\"port\":80},{\"name\":\"web\",\"port\":81}]}",
          { "spec.ports[1].name: duplicate name \"web\" (also spec.ports[0])" } },
        { "{" U ",\"ports\":[{\"name\":\"a\",\"port\":80},{\"name\":\"b\",\"port\":80,\"protocol\":\"TCP\"}]}",
          { "spec.ports[1].port: duplicate port 80/TCP (also spec.ports[0])" } },
        { "{" U ",\"service\":{\"enabled\":true}}", { "spec.service.enabled: needs at least one port" } },
        { "{" U ",\"ports\":[{\"name\":\"a\",\"port\":80}],\"service\":{\"enabled\":\"yes\"}}", { "spec.service.enabled: must be true or false" } },
        { "{" U ",\"service\":[]}", { "spec.service: must be an object" } },
    };
    check_bad(bc, sizeof bc / sizeof *bc);
    /* 64 ports are fine, 65 are not */
    char *doc = malloc(65 * 48 + 64);
    size_t n = (size_t)sprintf(doc, "{" U ",\"ports\":[");
    for (int i = 0; i < 65; i++) n += (size_t)sprintf(doc + n, "%s{\"name\":\"p%d\",\"port\":%d}", i ? "," : "", i, 1000 + i);
    sprintf(doc + n, "]}");
    char err[256];
    struct sbx_spec s;
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), -1);
    CHECK(strstr(err, "spec.ports: must have at most 64 elements (got 65)") != NULL);
    char *cut = strstr(doc, ",{\"name\":\"p64\"");
    strcpy(cut, "]}");
    CHECK_INT(parse_text(doc, NULL, &s, err, sizeof err), 0);
    CHECK_INT(s.nports, 64);
    sbx_spec_free(&s);
    free(doc);
}

TEST(status_endpoints_follow_the_pod_and_the_service) {
    char err[256];
    struct sbx_spec s;
    CHECK_INT(parse_text("{" U ",\"ports\":[{\"name\":\"http\",\"port\":8080},{\"name\":\"dns\",\"port\":53,"
                         "\"protocol\":\"UDP\"}],\"service\":{\"enabled\":true}}", NULL, &s, err, sizeof err), 0);
    cJSON *st = cJSON_CreateObject();
    CHECK_INT(sbx_status_add_endpoints(st, &s, "ns", "yao-sb-u-c", "10.88.0.7", "10.96.3.4"), 0);
    CHECK_INT(JSIZE(st, "endpoints"), 2);
    CHECK_STR(JSTR(st, "endpoints", "#0", "name"), "http");
    CHECK(JNUM(st, "endpoints", "#0", "port") == 8080);
    CHECK_STR(JSTR(st, "endpoints", "#0", "protocol"), "TCP");
    CHECK_STR(JSTR(st, "endpoints", "#0", "podAddress"), "10.88.0.7:8080");
    CHECK_STR(JSTR(st, "endpoints", "#0", "serviceAddress"), "10.96.3.4:8080");
    CHECK_STR(JSTR(st, "endpoints", "#0", "serviceDNS"), "yao-sb-u-c.ns.svc:8080");
    CHECK_STR(JSTR(st, "endpoints", "#1", "protocol"), "UDP");
    CHECK_STR(JSTR(st, "service", "name"), "yao-sb-u-c");
    CHECK_STR(JSTR(st, "service", "clusterIP"), "10.96.3.4");
    CHECK_STR(JSTR(st, "service", "dnsName"), "yao-sb-u-c.ns.svc");
    cJSON_Delete(st);
    /* no pod IP (stopped), no Service yet; IPv6 in brackets */
    st = cJSON_CreateObject();
    CHECK_INT(sbx_status_add_endpoints(st, &s, "ns", "yao-sb-u-c", NULL, ""), 0);
    CHECK(JAT(st, "endpoints", "#0", "podAddress") == NULL);
    CHECK(JAT(st, "endpoints", "#0", "serviceAddress") == NULL);
    CHECK(JAT(st, "service") == NULL);
    cJSON_Delete(st);
    st = cJSON_CreateObject();
    CHECK_INT(sbx_status_add_endpoints(st, &s, "ns", "x", "fd00::7", "fd00:96::4"), 0);
    CHECK_STR(JSTR(st, "endpoints", "#1", "podAddress"), "[fd00::7]:53");
    CHECK_STR(JSTR(st, "endpoints", "#1", "serviceAddress"), "[fd00:96::4]:53");
    cJSON_Delete(st);
    sbx_spec_free(&s);
    /* no ports: nothing at all */
    CHECK_INT(parse_text("{" U "}", NULL, &s, err, sizeof err), 0);
    st = cJSON_CreateObject();
    CHECK_INT(sbx_status_add_endpoints(st, &s, "ns", "x", "10.0.0.1", "10.0.0.2"), 0);
    CHECK_INT(cJSON_GetArraySize(st), 0);
    cJSON_Delete(st);
    sbx_spec_free(&s);
}

/* ---- the policy recorded for a running pod (issue 23) ------------------------------ */

TEST(recorded_spec_comes_from_status_then_spec_then_defaults) {
    struct sbx_spec s;
    char err[256];
    cJSON *sb = cJSON_Parse("{\"metadata\":{\"name\":\"sb\",\"namespace\":\"ns\",\"uid\":\"u\"},"
                            "\"spec\":{\"userID\":\"alice\",\"chatID\":\"c1\",\"paused\":true,\"idleTimeout\":\"9m\","
                            "\"ttlSecondsAfterFinished\":60,\"image\":\"not/allowed\"},"
                            "\"status\":{\"lifecycle\":\"long-running\",\"className\":\"small\","
                            "\"idleTimeout\":\"20s\",\"reclaimAfter\":\"1m30s\"}}");
    CHECK_INT(sbx_spec_recorded(sb, NULL, &s, err, sizeof err), 0);
    CHECK_STR(s.user_id, "alice");
    CHECK_STR(s.chat_id, "c1");
    CHECK_INT(s.lifecycle, SBX_LONG_RUNNING);
    CHECK_STR(s.class_name, "small");
    CHECK_INT(s.idle_timeout_ms, 20000);     /* the status's, not the spec's 9m */
    CHECK_INT(s.reclaim_after_ms, 90000);
    CHECK_INT(s.paused, 1);                  /* the user's own word still counts */
    CHECK_INT(s.ttl_after_finished_s, 60);
    CHECK(s.image == NULL);                  /* never builds a pod */
    sbx_spec_free(&s);
    cJSON_Delete(sb);
    /* Recorded by an older controller (no policy in status): the spec's idleTimeout, then
     * the defaults'. */
    struct sbx_defaults d;
    sbx_defaults_init(&d);
    d.idle_timeout_ms = 7000;
    sb = cJSON_Parse("{\"spec\":{\"userID\":\"a\",\"chatID\":\"b\",\"idleTimeout\":\"9m\"},"
                     "\"status\":{\"lifecycle\":\"session\"}}");
    CHECK_INT(sbx_spec_recorded(sb, &d, &s, err, sizeof err), 0);
    CHECK_INT(s.idle_timeout_ms, 9 * 60000);
    CHECK_INT(s.lifecycle, SBX_SESSION);
    CHECK(s.class_name == NULL);
    CHECK_INT(s.reclaim_after_ms, 0);
    CHECK_INT(s.paused, 0);
    CHECK_INT(s.ttl_after_finished_s, 300);
    sbx_spec_free(&s);
    cJSON_Delete(sb);
    sb = cJSON_Parse("{\"spec\":{\"userID\":\"a\",\"chatID\":\"b\"},\"status\":{\"idleTimeout\":\"junk\"}}");
    CHECK_INT(sbx_spec_recorded(sb, &d, &s, err, sizeof err), 0);
    CHECK_INT(s.idle_timeout_ms, 7000);
    CHECK_INT(s.lifecycle, d.lifecycle);
    sbx_spec_free(&s);
    cJSON_Delete(sb);
    /* No usable IDs: nothing to govern. */
    sb = cJSON_Parse("{\"spec\":{\"userID\":\"\",\"chatID\":\"b\"}}");
    CHECK_INT(sbx_spec_recorded(sb, &d, &s, err, sizeof err), -1);
    CHECK(strstr(err, "spec.userID") != NULL);
    cJSON_Delete(sb);
}

TEST(pod_records_its_class_and_a_fork_its_cloned_size) {
    struct sbx_spec s;
    char err[256];
    cJSON *sb = cJSON_Parse("{\"metadata\":{\"name\":\"sb\",\"namespace\":\"ns\",\"uid\":\"u\"},"
                            "\"spec\":{\"userID\":\"alice\",\"chatID\":\"c1\",\"workspace\":{\"size\":\"1Gi\"}}}");
    CHECK_INT(sbx_spec_parse(sb, NULL, &s, err, sizeof err), 0);
    struct sbx_owner o = {.name = "sb", .namespace_ = "ns", .uid = "u"};
    cJSON *pod = sbx_build_pod(&o, &s, "yao-sb-alice-c1", "yao-sb-alice-c1-workspace");
    CHECK_STR(kj_map_get(pod, "metadata.annotations", SBX_ANN_CLASS), "");   /* no class */
    const char *h1 = kj_map_get(pod, "metadata.annotations", SBX_ANN_TEMPLATE_HASH);
    char hash[SBX_TEMPLATE_HASH_LEN + 1];
    snprintf(hash, sizeof hash, "%s", h1 ? h1 : "");
    s.class_name = strdup("small");
    cJSON *pod2 = sbx_build_pod(&o, &s, "yao-sb-alice-c1", "yao-sb-alice-c1-workspace");
    CHECK_STR(kj_map_get(pod2, "metadata.annotations", SBX_ANN_CLASS), "small");
    /* The class is not part of the hash: pods built by earlier controllers keep theirs. */
    CHECK_STR(kj_map_get(pod2, "metadata.annotations", SBX_ANN_TEMPLATE_HASH), hash);
    struct sbx_ws_source src = {.claim = "src-workspace", .storage_class = "std", .bytes = INT64_C(2) << 30};
    cJSON *pvc = sbx_build_pvc_from(&o, &s, "yao-sb-alice-c1", "yao-sb-alice-c1-workspace", &src);
    CHECK_STR(kj_map_get(pvc, "metadata.annotations", SBX_ANN_CLONED_SIZE), "2Gi");
    CHECK_STR(kj_str(pvc, "spec.resources.requests.storage"), "2Gi");
    cJSON *plain = sbx_build_pvc(&o, &s, "yao-sb-alice-c1", "yao-sb-alice-c1-workspace");
    CHECK(kj_map_get(plain, "metadata.annotations", SBX_ANN_CLONED_SIZE) == NULL);
    cJSON_Delete(plain);
    cJSON_Delete(pvc);
    cJSON_Delete(pod2);
    cJSON_Delete(pod);
    sbx_spec_free(&s);
    cJSON_Delete(sb);
}

TEST(only_a_sandbox_of_this_group_is_an_owner) {
    static const struct { const char *refs; int ours; } cases[] = {
        {"[{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\",\"name\":\"a\",\"uid\":\"u\","
         "\"controller\":true}]", 1},
        /* another product's Sandbox kind */
        {"[{\"apiVersion\":\"agents.x-k8s.io/v1alpha1\",\"kind\":\"Sandbox\",\"name\":\"a\",\"uid\":\"u\","
         "\"controller\":true}]", 0},
        {"[{\"apiVersion\":\"sandbox.yaoapps.com.evil/v1\",\"kind\":\"Sandbox\",\"name\":\"a\",\"uid\":\"u\","
         "\"controller\":true}]", 0},
        /* not the controller */
        {"[{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\",\"name\":\"a\",\"uid\":\"u\"}]", 0},
        {"[{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"SandboxClass\",\"name\":\"a\",\"uid\":\"u\","
         "\"controller\":true}]", 0},
        {"[]", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"metadata\":{\"ownerReferences\":%s}}", cases[i].refs);
        cJSON *o = cJSON_Parse(text);
        const cJSON *r = sbx_sandbox_controller_ref(o);
        CHECK_INT(r != NULL, cases[i].ours);
        if (r) CHECK_STR(kj_str(r, "uid"), "u");
        cJSON_Delete(o);
    }
    CHECK(sbx_sandbox_controller_ref(NULL) == NULL);
}
