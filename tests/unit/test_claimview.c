/* tests/unit/test_claimview.c — the claim view (sandbox/model/claimview.c): every field of a
 * workspace claim (size, class, phase, the annotations and label the controller reads)
 * and of its metadata, pointing into the object; a missing, NULL or non-object claim reads
 * as no claim; wrong types read as absent; quantities that do not parse read as 0 bytes
 * (the text kept); a bad adopted-at time reads as 0; unicode and long values. */
#include "check.h"

#include <stdio.h>
#include <string.h>

#include "sandbox/model/claimview.h"

static cJSON *parse(const char *js) {
    cJSON *o = cJSON_Parse(js);
    if (!o) { fprintf(stderr, "bad fixture %s\n", js); abort(); }
    return o;
}

TEST(every_field_of_a_claim) {
    cJSON *o = parse(
        "{\"metadata\":{\"namespace\":\"team-a\",\"name\":\"ws-1\",\"uid\":\"c-1\",\"resourceVersion\":\"9\","
        "\"creationTimestamp\":\"2026-05-28T20:26:40Z\",\"deletionTimestamp\":\"2026-05-28T20:27:00Z\","
        "\"labels\":{\"sandbox.yaoapps.com/warm-pool\":\"k1\"},"
        "\"annotations\":{\"sandbox.yaoapps.com/warm-adopted-at\":\"2026-05-28T20:26:50Z\","
        "\"sandbox.yaoapps.com/fork-from\":\"src-ws\",\"sandbox.yaoapps.com/fork-copied\":\"2026-05-28T20:26:55Z\","
        "\"sandbox.yaoapps.com/cloned-size\":\"3Gi\",\"volume.kubernetes.io/selected-node\":\"node-1\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\",\"name\":\"sb-1\","
        "\"uid\":\"u-1\",\"controller\":true}]},"
        "\"spec\":{\"storageClassName\":\"fast\",\"resources\":{\"requests\":{\"storage\":\"2Gi\"}}},"
        "\"status\":{\"phase\":\"Bound\",\"capacity\":{\"storage\":\"5Gi\"}}}");
    struct sbx_claim_view v;
    sbx_claim_view_parse(o, &v);
    CHECK(v.obj == o);
    CHECK_STR(v.meta.namespace_, "team-a");
    CHECK_STR(v.meta.name, "ws-1");
    CHECK_STR(v.meta.uid, "c-1");
    CHECK_STR(v.meta.resource_version, "9");
    CHECK_INT(v.meta.created_ms, 1780000000000LL);
    CHECK_INT(v.meta.deleting, 1);
    CHECK_STR(v.meta.controller_uid, "u-1");
    CHECK_STR(v.meta.sandbox_owner, "sb-1");
    CHECK_STR(v.meta.sandbox_owner_uid, "u-1");
    CHECK_STR(v.storage_class, "fast");
    CHECK_STR(v.request, "2Gi");
    CHECK_STR(v.capacity, "5Gi");
    CHECK_INT(v.request_bytes, 2LL << 30);
    CHECK_INT(v.capacity_bytes, 5LL << 30);
    CHECK_STR(v.phase, "Bound");
    CHECK_INT(v.bound, 1);
    CHECK_STR(v.adopted_at, "2026-05-28T20:26:50Z");
    CHECK_INT(v.adopted_ms, 1780000010000LL);
    CHECK_STR(v.fork_from, "src-ws");
    CHECK_STR(v.fork_copied, "2026-05-28T20:26:55Z");
    CHECK_STR(v.cloned_size, "3Gi");
    CHECK_STR(v.selected_node, "node-1");
    CHECK_STR(v.warm_pool, "k1");
    const cJSON *spec = cJSON_GetObjectItem(o, "spec");
    CHECK(v.storage_class == cJSON_GetObjectItem(spec, "storageClassName")->valuestring);   /* not a copy */
    cJSON_Delete(o);
}

static void check_no_claim(const struct sbx_claim_view *v) {
    CHECK(v->obj == NULL);
    CHECK(!v->meta.name && !v->meta.uid && !v->meta.namespace_ && !v->meta.resource_version);
    CHECK(!v->meta.sandbox_owner && !v->meta.controller_uid);
    CHECK(!v->storage_class && !v->request && !v->capacity && !v->phase);
    CHECK_INT(v->request_bytes + v->capacity_bytes + v->adopted_ms + v->bound, 0);
    CHECK(!v->adopted_at && !v->fork_from && !v->fork_copied && !v->cloned_size && !v->selected_node);
    CHECK(!v->warm_pool);
}

TEST(no_claim) {
    struct sbx_claim_view v;
    sbx_claim_view_parse(NULL, &v);
    check_no_claim(&v);
    const char *nots[] = {"[]", "\"pvc\"", "3", "null"};
    for (size_t i = 0; i < sizeof(nots) / sizeof(nots[0]); i++) {
        cJSON *o = parse(nots[i]);
        sbx_claim_view_parse(o, &v);
        check_no_claim(&v);
        cJSON_Delete(o);
    }
    cJSON *o = parse("{}");   /* an object without anything: a claim with nothing known */
    sbx_claim_view_parse(o, &v);
    CHECK(v.obj == o);
    CHECK(!v.meta.name && !v.phase && !v.bound && !v.request && !v.storage_class);
    cJSON_Delete(o);
}

TEST(wrong_types_and_bad_values) {
    cJSON *o = parse(
        "{\"metadata\":{\"name\":7,\"uid\":true,\"annotations\":{\"sandbox.yaoapps.com/warm-adopted-at\":\"later\","
        "\"sandbox.yaoapps.com/fork-from\":5,\"sandbox.yaoapps.com/cloned-size\":\"lots\"},"
        "\"labels\":{\"sandbox.yaoapps.com/warm-pool\":[\"k\"]},"
        "\"ownerReferences\":[{\"kind\":\"Sandbox\",\"uid\":\"u\",\"controller\":\"true\"}]},"
        "\"spec\":{\"storageClassName\":null,\"resources\":{\"requests\":{\"storage\":\"two gigs\"}}},"
        "\"status\":{\"phase\":\"bound\",\"capacity\":{\"storage\":5}}}");
    struct sbx_claim_view v;
    sbx_claim_view_parse(o, &v);
    CHECK(!v.meta.name && !v.meta.uid);
    CHECK(!v.meta.controller_uid && !v.meta.sandbox_owner_uid);   /* "true" is not true */
    CHECK(v.adopted_at != NULL);
    CHECK_INT(v.adopted_ms, 0);   /* not a time */
    CHECK(v.fork_from == NULL);
    CHECK_STR(v.cloned_size, "lots");
    CHECK(v.warm_pool == NULL);
    CHECK(v.storage_class == NULL);
    CHECK_STR(v.request, "two gigs");
    CHECK_INT(v.request_bytes, 0);
    CHECK(v.capacity == NULL);
    CHECK_INT(v.capacity_bytes, 0);
    CHECK_STR(v.phase, "bound");
    CHECK_INT(v.bound, 0);   /* the phase is exact */
    cJSON_Delete(o);
}

TEST(an_owner_of_another_kind_is_a_controller_but_no_sandbox) {
    cJSON *o = parse("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\","
                     "\"name\":\"db\",\"uid\":\"s-1\",\"controller\":true}]}}");
    struct sbx_claim_view v;
    sbx_claim_view_parse(o, &v);
    CHECK_STR(v.meta.controller_uid, "s-1");
    CHECK(v.meta.sandbox_owner == NULL && v.meta.sandbox_owner_uid == NULL);
    cJSON_Delete(o);
}

TEST(unicode_and_long_values) {
    char node[501], js[2048];
    memset(node, 'n', 500);
    node[500] = 0;
    snprintf(js, sizeof js,
             "{\"metadata\":{\"name\":\"\\u00e9t\\u00e9\",\"annotations\":{\"volume.kubernetes.io/selected-node\":"
             "\"%s\",\"sandbox.yaoapps.com/fork-from\":\"\\ud83d\\ude00\"}},\"spec\":{\"storageClassName\":\"%s\"}}",
             node, node);
    cJSON *o = parse(js);
    struct sbx_claim_view v;
    sbx_claim_view_parse(o, &v);
    CHECK_STR(v.meta.name, "\xc3\xa9t\xc3\xa9");
    CHECK_STR(v.selected_node, node);
    CHECK_INT(strlen(v.storage_class), 500);
    CHECK_STR(v.fork_from, "\xf0\x9f\x98\x80");
    cJSON_Delete(o);
}
