/* tests/unit/test_objects.c — the pure object helpers (sandbox/objects.c): API paths of the
 * owned kinds (core and networking.k8s.io, namespaced and not), timestamps read from and
 * written to objects (absent and unparseable read as 0, 0 is not written), the Ready
 * condition found among others. */
#include "check.h"

#include "sandbox/objects.h"

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

TEST(timestamps_in_and_out) {
    cJSON *o = cJSON_Parse("{\"status\":{\"at\":\"2026-05-28T20:26:40Z\",\"bad\":\"yesterday\",\"n\":5}}");
    CHECK(sbx_time_at(o, "status.at") == 1780000000000LL);
    CHECK(sbx_time_at(o, "status.bad") == 0);
    CHECK(sbx_time_at(o, "status.n") == 0);
    CHECK(sbx_time_at(o, "status.none") == 0);
    CHECK(sbx_time_at(NULL, "status.at") == 0);
    cJSON *w = cJSON_CreateObject();
    sbx_add_time_ms(w, "t", 1780000000000LL);
    sbx_add_time_ms(w, "zero", 0);
    sbx_add_time_ms(w, "neg", -5);
    CHECK_STR(cJSON_GetObjectItem(w, "t")->valuestring, "2026-05-28T20:26:40Z");
    CHECK(cJSON_GetObjectItem(w, "zero") == NULL && cJSON_GetObjectItem(w, "neg") == NULL);
    cJSON_Delete(w);
    cJSON_Delete(o);
}

TEST(the_ready_condition_among_others) {
    cJSON *o = cJSON_Parse("{\"status\":{\"conditions\":[{\"type\":\"Workspace\",\"status\":\"True\"},"
                           "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Idle\"}]}}");
    const cJSON *c = sbx_ready_condition(o);
    CHECK(c != NULL);
    CHECK_STR(cJSON_GetObjectItem(c, "reason")->valuestring, "Idle");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"status\":{\"conditions\":[{\"type\":\"Workspace\"}]}}");
    CHECK(sbx_ready_condition(o) == NULL);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"status\":{\"conditions\":\"Ready\"}}");   /* not a list */
    CHECK(sbx_ready_condition(o) == NULL);
    cJSON_Delete(o);
    CHECK(sbx_ready_condition(NULL) == NULL);
}
