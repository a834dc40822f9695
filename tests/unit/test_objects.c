/* tests/unit/test_objects.c — the pure object helpers (sandbox/model/objects.c): API paths of the
 * owned kinds (core and networking.k8s.io, namespaced and not), timestamps written to
 * objects (0 and less are not written), the metadata of any object read once. */
#include "check.h"

#include "sandbox/model/objects.h"

TEST(paths_of_the_owned_kinds) {
    char p[256];
    sbx_core_path(p, sizeof p, "team-a", "pods");
    CHECK_STR(p, "/api/v1/namespaces/team-a/pods");
    sbx_core_path(p, sizeof p, NULL, "persistentvolumeclaims");
    CHECK_STR(p, "/api/v1/persistentvolumeclaims");
    sbx_core_path(p, sizeof p, "team-a", "networkpolicies");
    CHECK_STR(p, "/apis/networking.k8s.io/v1/namespaces/team-a/networkpolicies");
    sbx_core_path(p, sizeof p, NULL, "networkpolicies");
    CHECK_STR(p, "/apis/networking.k8s.io/v1/networkpolicies");
    char small[8];
    sbx_core_path(small, sizeof small, "team-a", "pods");   /* cut, still terminated */
    CHECK_STR(small, "/api/v1");
}

TEST(timestamps_written_to_objects) {
    cJSON *w = cJSON_CreateObject();
    sbx_add_time_ms(w, "t", 1780000000000LL);
    sbx_add_time_ms(w, "zero", 0);
    sbx_add_time_ms(w, "neg", -5);
    CHECK_STR(cJSON_GetObjectItem(w, "t")->valuestring, "2026-05-28T20:26:40Z");
    CHECK(cJSON_GetObjectItem(w, "zero") == NULL && cJSON_GetObjectItem(w, "neg") == NULL);
    cJSON_Delete(w);
}

TEST(metadata_read_once) {
    cJSON *o = cJSON_Parse(
        "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"n\",\"uid\":\"u\",\"resourceVersion\":\"3\",\"generation\":2,"
        "\"creationTimestamp\":\"2026-05-28T20:26:40Z\",\"labels\":{\"a\":\"1\",\"b\":2},"
        "\"annotations\":{\"x.io/k\":\"v\",\"x.io/n\":null},"
        "\"ownerReferences\":[{\"kind\":\"Other\",\"uid\":\"o\"},"
        "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\",\"name\":\"sb\",\"uid\":\"s\","
        "\"controller\":true}]}}");
    struct sbx_meta m;
    sbx_meta_read(o, &m);
    CHECK_STR(m.namespace_, "ns");
    CHECK_STR(m.name, "n");
    CHECK_STR(m.uid, "u");
    CHECK_STR(m.resource_version, "3");
    CHECK_INT(m.generation, 2);
    CHECK_INT(m.created_ms, 1780000000000LL);
    CHECK_INT(m.deleting, 0);
    CHECK_STR(m.controller_uid, "s");   /* the one with controller: true */
    CHECK_STR(m.sandbox_owner, "sb");
    CHECK_STR(m.sandbox_owner_uid, "s");
    CHECK_STR(sbx_meta_label(&m, "a"), "1");
    CHECK(sbx_meta_label(&m, "b") == NULL);          /* not a string */
    CHECK_STR(sbx_meta_annotation(&m, "x.io/k"), "v");   /* a key with dots and a slash */
    CHECK(sbx_meta_annotation(&m, "x.io/n") == NULL);
    CHECK(sbx_meta_annotation(&m, "missing") == NULL);
    CHECK(sbx_meta_annotation(NULL, "x.io/k") == NULL);
    cJSON_Delete(o);
    sbx_meta_read(NULL, &m);
    CHECK(!m.name && !m.uid && !m.labels && !m.annotations && !m.controller_uid && m.created_ms == 0);
    CHECK(sbx_meta_label(&m, "a") == NULL);
    o = cJSON_Parse("{\"metadata\":\"n\"}");
    sbx_meta_read(o, &m);
    CHECK(!m.name && !m.namespace_ && m.generation == 0 && !m.deleting);
    cJSON_Delete(o);
}
