/* kube/events.h — recording Kubernetes Events (core/v1) about an object, the way
 * `kubectl describe` shows them. Best effort: a failure to record is logged, never fatal. */
#ifndef YAO_KUBE_EVENTS_H
#define YAO_KUBE_EVENTS_H

#include "kube/rest.h"

struct kube_object_ref {
    const char *api_version, *kind, *namespace_, *name, *uid;
};

/* type: "Normal" or "Warning"; reason: CamelCase; message: one line. 0 or -1. */
int kube_event_record(struct kube_client *c, const struct kube_object_ref *obj, const char *type,
                      const char *reason, const char *message, const char *component);

#endif
