/* kube/events.h — recording Kubernetes Events (core/v1) about objects, the way
 * `kubectl describe` shows them, after client-go's record package: callers hand an event
 * to a recorder and return at once; one background thread writes them to the API server.
 *
 * - Bounded queue: at most queue_max events wait; when full the oldest is dropped (and
 *   counted). Recording never blocks on I/O and never fails.
 * - Aggregation: an event identical to one already recorded (same object uid, kind,
 *   namespace, name, type, reason and message) within window_ms does not make a new Event:
 *   the existing one gets count += n and a new lastTimestamp (a merge PATCH). Identical
 *   events still waiting in the queue are folded into one entry first (no request each).
 * - Rate limit: a token bucket per object (client-go's spam filter: burst 25, one token
 *   per 5 minutes). Every API write for the object takes a token; without one the event
 *   is dropped (and counted).
 * - Names: "<object name, truncated>.<16 hex>", a valid DNS subdomain of at most 253
 *   characters whatever the object's name.
 * Best effort by design: what cannot be written is logged and counted, never retried
 * beyond the REST client's own retries. */
#ifndef YAO_KUBE_EVENTS_H
#define YAO_KUBE_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include "kube/rest.h"

struct kube_object_ref {
    const char *api_version, *kind, *namespace_, *name, *uid;
};

struct kube_recorder_options {
    const char *component;   /* source.component and reportingComponent (required) */
    size_t queue_max;        /* events waiting at most (default 1000) */
    int burst;               /* tokens per object (default 25) */
    int64_t refill_ms;       /* one token back per (default 300000: 5 min) */
    int64_t window_ms;       /* identical events within this share an Event (default 600000) */
    size_t cache_max;        /* Events and buckets remembered, least recently used go (default 4096) */
};

/* Occurrences (one kube_recorder_event call = one occurrence) by outcome. recorded =
 * created + aggregated + dropped_queue + dropped_rate + failed + pending. */
struct kube_recorder_stats {
    uint64_t recorded;       /* kube_recorder_event calls */
    uint64_t created;        /* occurrences that made a new Event object */
    uint64_t aggregated;     /* occurrences counted into an existing Event (count raised) */
    uint64_t dropped_queue;  /* dropped: the queue was full (the oldest goes) */
    uint64_t dropped_rate;   /* dropped: the object's token bucket was empty */
    uint64_t failed;         /* the API write failed */
    uint64_t writes;         /* API writes that succeeded (POST + PATCH) */
    size_t pending;          /* waiting in the queue (each entry may hold several occurrences) */
};

struct kube_recorder;

/* A recorder writing through c (the recorder owns c and frees it; give it a client of its
 * own so its writes never queue behind the workers' and it can be cancelled apart).
 * Starts the writer thread. NULL on ENOMEM (c is freed then too). */
struct kube_recorder *kube_recorder_new(struct kube_client *c, const struct kube_recorder_options *o);
/* Record one event. type: "Normal" or "Warning"; reason: CamelCase; message: one line
 * (cut at 1024 bytes). Copies everything; returns at once. NULL-safe on r. */
void kube_recorder_event(struct kube_recorder *r, const struct kube_object_ref *obj, const char *type,
                         const char *reason, const char *message);
/* Wait until the queue is empty and nothing is being written, at most max_ms. 0, or -1
 * when events were still waiting at the deadline. */
int kube_recorder_flush(struct kube_recorder *r, long max_ms);
/* Stop the writer (its client is cancelled: an Event being written is abandoned at
 * once), drop what still waits, free everything. Flush first to send it. */
void kube_recorder_free(struct kube_recorder *r);
void kube_recorder_stats(struct kube_recorder *r, struct kube_recorder_stats *out);

/* ---- the pure parts (exposed for tests) ---- */

/* The Event name for an object: object_name made a valid DNS subdomain prefix (lower
 * case, [a-z0-9.-], cut so the whole fits in 253 characters, no '-' or '.' at its end)
 * + "." + unique as 16 hex digits. out needs 254 bytes. 0, or -1 if outlen is too small. */
#define KUBE_EVENT_NAME_MAX 253
int kube_event_name(const char *object_name, uint64_t unique, char *out, size_t outlen);
/* The aggregation key of an event: equal keys ⇔ same object (uid, kind, namespace,
 * name), type, reason and message. malloc'd; NULL on ENOMEM. */
char *kube_event_key(const struct kube_object_ref *obj, const char *type, const char *reason,
                     const char *message);
/* The rate-limit key of an object (one bucket per object). malloc'd; NULL on ENOMEM. */
char *kube_event_object_key(const struct kube_object_ref *obj);

/* A token bucket: starts full (burst tokens), one token back every refill_ms, never more
 * than burst. */
struct kube_token_bucket {
    double tokens;
    int64_t last_ms;
    int started;
};
/* Take one token at now_ms: 1 taken, 0 empty. */
int kube_bucket_take(struct kube_token_bucket *b, int burst, int64_t refill_ms, int64_t now_ms);

#endif
