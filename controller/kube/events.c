/* kube/events.c — POST a core/v1 Event for an object (see events.h). Event names follow
 * the client-go recorder: "<object>.<unique hex suffix>". */
#include "kube/events.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kube/kjson.h"
#include "runtime/log.h"

int kube_event_record(struct kube_client *c, const struct kube_object_ref *obj, const char *type,
                      const char *reason, const char *message, const char *component) {
    char name[320], now[40], path[512], err[KUBE_ERR_MAX];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(name, sizeof(name), "%.250s.%llx", obj->name,
             (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
    kj_time_format(kj_now_ms(), now, sizeof(now));

    cJSON *ev = cJSON_CreateObject();
    if (!ev) return -1;
    cJSON_AddStringToObject(ev, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "kind", "Event");
    cJSON *md = cJSON_AddObjectToObject(ev, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", obj->namespace_);
    cJSON *io = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion", obj->api_version);
    cJSON_AddStringToObject(io, "kind", obj->kind);
    cJSON_AddStringToObject(io, "namespace", obj->namespace_);
    cJSON_AddStringToObject(io, "name", obj->name);
    if (obj->uid) cJSON_AddStringToObject(io, "uid", obj->uid);
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "message", message);
    cJSON_AddStringToObject(ev, "firstTimestamp", now);
    cJSON_AddStringToObject(ev, "lastTimestamp", now);
    cJSON_AddNumberToObject(ev, "count", 1);
    cJSON *src = cJSON_AddObjectToObject(ev, "source");
    cJSON_AddStringToObject(src, "component", component);
    cJSON_AddStringToObject(ev, "reportingComponent", component);

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", obj->namespace_);
    long st = kube_create(c, path, ev, NULL, err, sizeof(err));
    cJSON_Delete(ev);
    if (st != 201 && st != 200) {
        LOGW("msg=\"could not record event\" object=%s/%s reason=%s err=\"%s\"", obj->namespace_, obj->name, reason, err);
        return -1;
    }
    return 0;
}
