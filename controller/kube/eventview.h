/* kube/eventview.h — an Event (core/v1 or events.k8s.io/v1 shape, as `kubectl describe`
 * lists them) as people are shown it: who reported it, what, how often and when. The one
 * place an Event is read by path. Pure; the strings point into the object. */
#ifndef YAO_KUBE_EVENTVIEW_H
#define YAO_KUBE_EVENTVIEW_H

#include <stdint.h>

#include <cjson/cJSON.h>

struct kube_event_view {
    const char *type, *reason, *message;   /* NULL when absent */
    const char *from;       /* source.component, else reportingComponent (NULL: neither) */
    int64_t count;          /* count, else series.count, else 1 */
    /* When it last happened: lastTimestamp, series.lastObservedTime, eventTime,
     * firstTimestamp or the object's creationTimestamp, the first that parses (0: none);
     * and when it first did: firstTimestamp, else last_ms. */
    int64_t last_ms, first_ms;
};

/* Read the Event e into out (all absent when e is not an object). */
void kube_event_view_read(const cJSON *e, struct kube_event_view *out);

#endif
