/* tests/unit/test_eventview.c — an Event as people are shown it (kube/eventview.c): the
 * core/v1 fields, an events.k8s.io series' count and time, the reporter's two spellings,
 * the fallbacks for when it happened (down to the object's creation), and absent or
 * wrongly typed fields. */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>

#include "kube/eventview.h"
#include "kube/kjson.h"

static cJSON *parse(const char *js) {
    cJSON *o = cJSON_Parse(js);
    if (!o) { fprintf(stderr, "bad fixture %s\n", js); abort(); }
    return o;
}

static int64_t at(const char *t) {
    int64_t ms = 0;
    kj_time_parse(t, &ms);
    return ms;
}

TEST(a_core_event) {
    cJSON *e = parse("{\"type\":\"Warning\",\"reason\":\"Failed\",\"message\":\"boom\",\"count\":3,"
                     "\"source\":{\"component\":\"kubelet\"},\"reportingComponent\":\"other\","
                     "\"firstTimestamp\":\"2026-12-06T10:00:00Z\",\"lastTimestamp\":\"2026-12-06T10:05:00Z\"}");
    struct kube_event_view v;
    kube_event_view_read(e, &v);
    CHECK_STR(v.type, "Warning");
    CHECK_STR(v.reason, "Failed");
    CHECK_STR(v.message, "boom");
    CHECK_STR(v.from, "kubelet");
    CHECK_INT(v.count, 3);
    CHECK_INT(v.first_ms, at("2026-12-06T10:00:00Z"));
    CHECK_INT(v.last_ms, at("2026-12-06T10:05:00Z"));
    cJSON_Delete(e);
}

TEST(an_events_k8s_io_series) {
    cJSON *e = parse("{\"type\":\"Normal\",\"reason\":\"Pulled\",\"reportingComponent\":\"yao-sandbox\","
                     "\"source\":{\"component\":\"\"},\"eventTime\":\"2026-12-06T09:00:00.000000Z\","
                     "\"series\":{\"count\":7,\"lastObservedTime\":\"2026-12-06T09:30:00.000000Z\"}}");
    struct kube_event_view v;
    kube_event_view_read(e, &v);
    CHECK_STR(v.from, "yao-sandbox");   /* an empty source.component is no reporter */
    CHECK_INT(v.count, 7);
    CHECK_INT(v.last_ms, at("2026-12-06T09:30:00Z"));
    CHECK_INT(v.first_ms, v.last_ms);   /* no firstTimestamp: when it last happened */
    cJSON_Delete(e);
}

TEST(when_falls_back_to_the_objects_creation) {
    cJSON *e = parse("{\"lastTimestamp\":\"not a time\",\"eventTime\":null,"
                     "\"metadata\":{\"creationTimestamp\":\"2026-12-06T08:00:00Z\"}}");
    struct kube_event_view v;
    kube_event_view_read(e, &v);
    CHECK_INT(v.last_ms, at("2026-12-06T08:00:00Z"));
    CHECK_INT(v.count, 1);
    CHECK(!v.type && !v.reason && !v.message && !v.from);
    cJSON_Delete(e);
}

TEST(nothing_or_wrong_types_read_as_absent) {
    struct kube_event_view v;
    kube_event_view_read(NULL, &v);
    CHECK_INT(v.count, 1);
    CHECK_INT(v.last_ms + v.first_ms, 0);
    cJSON *e = parse("{\"type\":1,\"reason\":[],\"count\":-4,\"series\":{\"count\":\"9\"},\"source\":\"kubelet\"}");
    kube_event_view_read(e, &v);
    CHECK(!v.type && !v.reason && !v.from);
    CHECK_INT(v.count, 1);
    CHECK_INT(v.last_ms, 0);
    cJSON_Delete(e);
    e = parse("[1,2]");
    kube_event_view_read(e, &v);
    CHECK(!v.type && v.count == 1);
    cJSON_Delete(e);
}
