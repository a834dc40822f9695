/* tests/unit/test_termination.c — one termination of the sandbox container
 * (sandbox/model/termination.c): read from a container status's state.terminated (every field,
 * times in ms), nothing from NULL or a non-object, and written back as
 * status.lastTermination {reason, exitCode, finishedAt} that reads the same. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kube/kjson.h"
#include "sandbox/model/termination.h"

TEST(a_terminated_state_is_read_whole) {
    cJSON *o = cJSON_Parse("{\"reason\":\"OOMKilled\",\"exitCode\":137,\"startedAt\":\"2026-12-06T01:00:00Z\","
                           "\"finishedAt\":\"2026-12-06T01:00:05Z\",\"message\":\"killed\"}");
    struct sbx_termination t;
    sbx_termination_read(o, &t);
    CHECK_INT(t.present, 1);
    CHECK_STR(t.reason, "OOMKilled");
    CHECK_INT(t.exit_code, 137);
    CHECK(t.finished_ms > 0 && t.finished_ms - t.started_ms == 5000);
    CHECK_STR(t.message, "killed");
    cJSON_Delete(o);
}

TEST(nothing_is_read_from_nothing) {
    struct sbx_termination t;
    memset(&t, 0xff, sizeof t);
    sbx_termination_read(NULL, &t);
    CHECK_INT(t.present, 0);
    CHECK(t.reason == NULL && t.message == NULL && t.finished_ms == 0);
    cJSON *s = cJSON_CreateString("terminated");
    sbx_termination_read(s, &t);
    CHECK_INT(t.present, 0);
    cJSON_Delete(s);
    CHECK(sbx_termination_json(&t) == NULL);
}

TEST(the_status_form_reads_back_the_same) {
    struct sbx_termination t = {.present = 1, .reason = "Error", .exit_code = 3, .finished_ms = 1796500805000LL};
    cJSON *o = sbx_termination_json(&t);
    CHECK(o != NULL);
    CHECK_STR(kj_str(o, "reason"), "Error");
    CHECK_INT((int)kj_int(o, "exitCode", -1), 3);
    CHECK(kj_str(o, "startedAt") == NULL && kj_str(o, "message") == NULL);   /* not in the status form */
    struct sbx_termination back;
    sbx_termination_read(o, &back);
    CHECK_INT(back.present, 1);
    CHECK_INT(back.exit_code, 3);
    CHECK(back.finished_ms == t.finished_ms);
    cJSON_Delete(o);
    /* no time known: no finishedAt */
    t.finished_ms = 0;
    t.reason = NULL;
    o = sbx_termination_json(&t);
    CHECK(o && !kj_str(o, "finishedAt") && !kj_str(o, "reason"));
    cJSON_Delete(o);
}
