/* fuzz/fuzz_spec.c — bytes → cJSON → sbx_spec_parse → sbx_name_pod → sbx_build_pod /
 * sbx_build_pvc, the path every Sandbox object from the API server takes.
 *
 * Properties: a rejected spec yields a non-empty one-line message without control
 * characters (it becomes a condition message) and an empty struct; an accepted one is
 * within the documented limits, its pod name is a DNS-1123 label, both builders succeed,
 * every label value is valid, the quantities in the pod read back to the parsed values,
 * and the objects' JSON re-parses to the same tree. */
#include "fuzz.h"

#include "sandbox/model/builders.h"
#include "sandbox/model/naming.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/spec.h"

/* Valid Kubernetes label value: <= 63 of [A-Za-z0-9._-], alnum at both ends, or empty. */
static int label_value_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0) return 1;
    if (n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && c != '_' && c != '.') return 0;
        if ((i == 0 || i == n - 1) && !alnum) return 0;
    }
    return 1;
}

/* Print obj, parse it again, compare. */
static void check_roundtrip(const cJSON *obj) {
    char *text = cJSON_PrintUnformatted(obj);
    FUZZ_ASSERT(text);
    cJSON *back = cJSON_Parse(text);
    FUZZ_ASSERT(back);
    FUZZ_ASSERT(cJSON_Compare(obj, back, 1));
    cJSON_Delete(back);
    free(text);
}

static void check_labels(const cJSON *obj) {
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels"), *l;
    FUZZ_ASSERT(cJSON_IsObject(labels));
    cJSON_ArrayForEach(l, labels) {
        FUZZ_ASSERT(cJSON_IsString(l));
        FUZZ_ASSERT(label_value_ok(l->valuestring));
    }
}

/* The string at obj.key, or NULL. */
static const char *str_at(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void check_accepted(const cJSON *sb, const struct sbx_spec *s) {
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(sb, "metadata");
    const char *name = str_at(md, "name"), *uid = str_at(md, "uid"), *ns = str_at(md, "namespace");
    struct sbx_owner o = {name ? name : "sb", ns, uid ? uid : "uid-1", NULL};
    char pod_name[64], claim[80];
    int64_t v;

    FUZZ_ASSERT(s->user_id && *s->user_id && s->chat_id && *s->chat_id);
    FUZZ_ASSERT(s->image && *s->image);
    FUZZ_ASSERT(s->memory_bytes >= (4 << 20) && s->memory_bytes <= (INT64_C(1) << 40));
    FUZZ_ASSERT(s->cpu_millis >= 1 && s->cpu_millis <= 256000);
    FUZZ_ASSERT(s->workspace_bytes >= (1 << 20) && s->workspace_bytes <= (INT64_C(64) << 40));
    FUZZ_ASSERT(s->idle_timeout_ms >= 1000 && s->idle_timeout_ms <= INT64_C(8760) * 3600000);
    FUZZ_ASSERT(s->mount_path && s->mount_path[0] == '/');
    FUZZ_ASSERT(s->ttl_after_finished_s >= 0 && s->ttl_after_finished_s <= 2147483647);
    FUZZ_ASSERT(s->has_command == (s->command.n > 0) && s->has_args == (s->args.n > 0));
    if (s->lifecycle == SBX_ONE_SHOT) FUZZ_ASSERT(s->run.present);
    if (s->run.present) {
        FUZZ_ASSERT(s->run.command.n >= 1 && s->run.command.v[0][0]);
        FUZZ_ASSERT(s->run.timeout_ms >= 0 && s->run.timeout_ms <= INT64_C(8760) * 3600000);
        if (s->run.working_dir) FUZZ_ASSERT(s->run.working_dir[0] == '/');
    }

    FUZZ_ASSERT(sbx_name_pod(s->user_id, s->chat_id, pod_name, sizeof pod_name) == 0);
    FUZZ_ASSERT(sbx_is_dns_label(pod_name));
    sbx_claim_name(pod_name, claim, sizeof claim);
    FUZZ_ASSERT(strlen(claim) == strlen(pod_name) + strlen(SBX_CLAIM_SUFFIX));

    cJSON *pod = sbx_build_pod(&o, s, pod_name, claim);
    cJSON *pvc = sbx_build_pvc(&o, s, pod_name, claim);
    FUZZ_ASSERT(pod && pvc);
    FUZZ_ASSERT(!strcmp(str_at(cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "name"), pod_name));
    FUZZ_ASSERT(!strcmp(str_at(cJSON_GetObjectItemCaseSensitive(pvc, "metadata"), "name"), claim));
    check_labels(pod);
    check_labels(pvc);

    const cJSON *ctrs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers");
    FUZZ_ASSERT(cJSON_GetArraySize(ctrs) == 1);
    const cJSON *ctr = cJSON_GetArrayItem(ctrs, 0);
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ctr, "resources"), "limits");
    FUZZ_ASSERT(qty_parse_memory(str_at(lim, "memory"), &v) == 0 && v == s->memory_bytes);
    FUZZ_ASSERT(qty_parse_cpu(str_at(lim, "cpu"), &v) == 0 && v == s->cpu_millis);
    /* YAO_SANDBOX_NAME, YAO_USER_ID, YAO_CHAT_ID, spec.env, then a one-shot's run.env */
    FUZZ_ASSERT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ctr, "env")) ==
                (int)(3 + s->nenv + (s->lifecycle == SBX_ONE_SHOT ? s->run.nenv : 0)));
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pvc, "spec"),
                                         "resources"), "requests");
    FUZZ_ASSERT(qty_parse_memory(str_at(req, "storage"), &v) == 0 && v == s->workspace_bytes);

    check_roundtrip(pod);
    check_roundtrip(pvc);
    cJSON_Delete(pod);
    cJSON_Delete(pvc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *sb = cJSON_ParseWithLength((const char *)data, size);
    struct sbx_spec s;
    char err[1024];

    if (!sb) return 0;
    if (sbx_spec_parse(sb, NULL, &s, err, sizeof err) == 0) {
        check_accepted(sb, &s);
    } else {
        FUZZ_ASSERT(err[0] != '\0');
        for (const char *p = err; *p; p++)
            FUZZ_ASSERT((unsigned char)*p >= 0x20 && *p != 0x7f);
        FUZZ_ASSERT(s.user_id == NULL && s.image == NULL && s.env == NULL && s.nenv == 0);
    }
    sbx_spec_free(&s);
    cJSON_Delete(sb);
    return 0;
}
