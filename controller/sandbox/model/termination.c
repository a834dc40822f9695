/* sandbox/model/termination.c — one termination of the sandbox container (see termination.h). */
#include "sandbox/model/termination.h"

#include <string.h>

#include "kube/kjson.h"

/* An RFC 3339 time at path in ms since the epoch, or 0 (absent or malformed). */
static int64_t time_at(const cJSON *obj, const char *path) {
    int64_t ms;
    const char *s = kj_str(obj, path);
    return s && kj_time_parse(s, &ms) == 0 ? ms : 0;
}

void sbx_termination_read(const cJSON *obj, struct sbx_termination *t) {
    memset(t, 0, sizeof(*t));
    if (!cJSON_IsObject(obj)) return;
    t->present = 1;
    t->reason = kj_str(obj, "reason");
    t->exit_code = (int)kj_int(obj, "exitCode", 0);
    t->finished_text = kj_str(obj, "finishedAt");
    t->finished_ms = time_at(obj, "finishedAt");
    t->started_ms = time_at(obj, "startedAt");
    t->message = kj_str(obj, "message");
}

cJSON *sbx_termination_json(const struct sbx_termination *t) {
    if (!t->present) return NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    if ((t->reason && !cJSON_AddStringToObject(o, "reason", t->reason)) ||
        !cJSON_AddNumberToObject(o, "exitCode", t->exit_code)) {
        cJSON_Delete(o);
        return NULL;
    }
    if (t->finished_ms > 0) {
        char when[40];
        kj_time_format(t->finished_ms, when, sizeof(when));
        if (!cJSON_AddStringToObject(o, "finishedAt", when)) { cJSON_Delete(o); return NULL; }
    }
    return o;
}
