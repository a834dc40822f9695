/* kube/eventview.c — an Event as people are shown it (see eventview.h). */
#include "kube/eventview.h"

#include <string.h>

#include "kube/kjson.h"

void kube_event_view_read(const cJSON *e, struct kube_event_view *out) {
    static const char *const when[] = {"lastTimestamp", "series.lastObservedTime", "eventTime", "firstTimestamp",
                                       "metadata.creationTimestamp"};
    memset(out, 0, sizeof(*out));
    out->count = 1;
    if (!cJSON_IsObject(e)) return;
    out->type = kj_str(e, "type");
    out->reason = kj_str(e, "reason");
    out->message = kj_str(e, "message");
    out->from = kj_str(e, "source.component");
    if (!out->from || !*out->from) out->from = kj_str(e, "reportingComponent");
    int64_t count = kj_int(e, "count", 0);
    if (count <= 0) count = kj_int(e, "series.count", 1);
    out->count = count > 0 ? count : 1;
    for (size_t i = 0; i < sizeof(when) / sizeof(when[0]) && !out->last_ms; i++) {
        const char *t = kj_str(e, when[i]);
        if (t && *t && kj_time_parse(t, &out->last_ms) != 0) out->last_ms = 0;
    }
    const char *first = kj_str(e, "firstTimestamp");
    if (!first || kj_time_parse(first, &out->first_ms) != 0) out->first_ms = out->last_ms;
}
