/* tests/unit/test_volhelper.c — the volume helper guard (sandbox/decide/volhelper_decide.c): which
 * pod holds a stopped Sandbox's workspace (Yao's Volume client's yao-vol-<uid>, owned by
 * that Sandbox, still running), and its name. */
#include "check.h"

#include "sandbox/decide/volhelper_decide.h"

static cJSON *pod(const char *component, const char *owner_uid, const char *phase) {
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"yao-vol-u1\",\"labels\":{\"app.kubernetes.io/component\":\"%s\"},"
             "\"ownerReferences\":[{\"kind\":\"Sandbox\",\"name\":\"s\",\"uid\":\"%s\"}]},"
             "\"status\":{\"phase\":\"%s\"}}",
             component, owner_uid, phase);
    cJSON *o = cJSON_Parse(text);
    CHECK(o != NULL);
    return o;
}

TEST(a_running_helper_of_the_sandbox_holds_it) {
    const char *phases[] = {"Pending", "Running", "Unknown", ""};
    for (size_t i = 0; i < sizeof phases / sizeof *phases; i++) {
        cJSON *p = pod("volume-helper", "u1", phases[i]);
        CHECK_INT(sbx_volume_helper_holds(p, "u1"), 1);
        cJSON_Delete(p);
    }
}

TEST(an_ended_helper_holds_nothing) {
    cJSON *p = pod("volume-helper", "u1", "Failed");   /* past its activeDeadlineSeconds */
    CHECK_INT(sbx_volume_helper_holds(p, "u1"), 0);
    cJSON_Delete(p);
    p = pod("volume-helper", "u1", "Succeeded");
    CHECK_INT(sbx_volume_helper_holds(p, "u1"), 0);
    cJSON_Delete(p);
}

TEST(a_pod_of_another_sandbox_or_kind_holds_nothing) {
    cJSON *p = pod("volume-helper", "u2", "Running");
    CHECK_INT(sbx_volume_helper_holds(p, "u1"), 0);
    cJSON_Delete(p);
    p = pod("sandbox", "u1", "Running");
    CHECK_INT(sbx_volume_helper_holds(p, "u1"), 0);
    cJSON_Delete(p);
    p = cJSON_Parse("{\"metadata\":{\"labels\":{\"app.kubernetes.io/component\":\"volume-helper\"}}}");
    CHECK_INT(sbx_volume_helper_holds(p, "u1"), 0);   /* no owner */
    cJSON_Delete(p);
    CHECK_INT(sbx_volume_helper_holds(NULL, "u1"), 0);
    p = pod("volume-helper", "u1", "Running");
    CHECK_INT(sbx_volume_helper_holds(p, ""), 0);
    cJSON_Delete(p);
}

TEST(the_name_is_the_clients) {
    char n[64];
    CHECK_INT(sbx_volume_helper_name("1234-abcd", n, sizeof n), 0);
    CHECK_STR(n, "yao-vol-1234-abcd");
    CHECK_INT(sbx_volume_helper_name("1234-abcd", n, 8), -1);
    CHECK_INT(sbx_volume_helper_name("", n, sizeof n), -1);
}
