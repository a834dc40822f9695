/* kube/watch.h — one watch stream: a long-lived GET ?watch=true whose body is
 * newline-delimited JSON events, split across arbitrary HTTP chunks (kube/ndjson.h),
 * parsed one event at a time and handed to a callback. Detects 410 Gone (HTTP status or
 * an ERROR event) so the caller can relist. Reconnecting, resourceVersion bookkeeping and
 * caching are the informer's job (runtime/informer.h), not this file's. */
#ifndef YAO_KUBE_WATCH_H
#define YAO_KUBE_WATCH_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "kube/rest.h"

/* Longest single event line accepted (one object); a longer one ends the stream. */
#define KUBE_WATCH_MAX_LINE (16u << 20)

enum kube_watch_end {
    KUBE_WATCH_CLOSED = 0,   /* the server ended the stream cleanly: watch again from the last RV */
    KUBE_WATCH_EXPIRED = 1,  /* 410 Gone / Expired: relist */
    KUBE_WATCH_STOPPED = 2,  /* the callback or the stop flag asked to stop */
    KUBE_WATCH_QUIET = 3,    /* answered, then no byte for stall_s: a quiet resource (the
                              * server sends no bookmarks) or a dead connection; watch
                              * again from the last RV (a dead one fails to reconnect) */
    KUBE_WATCH_FAILED = -1,  /* transport error, HTTP error, malformed stream: back off, retry */
    KUBE_WATCH_UNANSWERED = -2,   /* no answer at all for stall_s (no status line): a stuck
                                   * connection or server; back off and retry, as FAILED */
};

/* Called per event with its type ("ADDED", "MODIFIED", "DELETED", "BOOKMARK") and its
 * object, which the callback may keep by detaching it from event (cJSON_DetachItemFromObject
 * (event, "object")). Return 0 to go on, non-zero to stop the stream. */
typedef int (*kube_watch_fn)(void *ud, const char *type, cJSON *object, cJSON *event);

/* Run one watch request on path (which must already carry watch=true and the
 * resourceVersion). Blocks until the stream ends; *stop is seen at once when the setter
 * then calls kube_client_wake(c), else within about a second.
 * stall_s: give up when no byte arrives for that long (0 = never): KUBE_WATCH_QUIET once
 * the server answered, else KUBE_WATCH_UNANSWERED. err says why for every end but
 * CLOSED and STOPPED. */
enum kube_watch_end kube_watch(struct kube_client *c, const char *path, kube_watch_fn fn,
                               void *ud, const atomic_int *stop, long stall_s,
                               char *err, size_t errlen);

/* Parse one event line; for the fuzzer and tests. Returns the event (caller deletes) with
 * a string "type" and an object "object", or NULL if the line is not a valid event. */
cJSON *kube_watch_parse_event(const char *line, size_t len);

/* True if an ERROR event's Status (or a response body) says 410 Gone / Expired. */
int kube_watch_status_is_expired(const cJSON *status);

#endif
