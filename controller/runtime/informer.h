/* runtime/informer.h — list+watch of one resource kind into a local cache, after
 * client-go's reflector + indexer: paginated LIST, then WATCH from its resourceVersion with
 * bookmarks; 410 → relist (emitting deletes for objects that vanished meanwhile, and a
 * delete then an add for a name whose uid changed meanwhile: deleted and created again
 * while not watching is no update of one object); clean end
 * → watch again; failures → backoff with jitter (800 ms doubling to 30 s) and a new watch
 * from the same resourceVersion: only a 410 forces a relist. The first LIST is served from
 * the API server's watch cache (resourceVersion=0: possibly a little stale, never older
 * than what a new process could have seen); a relist after a 410 asks for data not older
 * than what the cache already holds (resourceVersionMatch=NotOlderThan), falling back to
 * a quorum read if that is refused. No list response is over the client's size limit
 * (kube_client_set_max_body): a page over it is asked again from etcd (the watch cache
 * answers resourceVersion=0 in one page whatever the limit) and then halved, from the
 * same continue token, so one tenant's big objects cannot keep the cache from ever
 * syncing. A watch silent for watch_stall_s (default 90 s) is
 * taken for a dead connection and re-opened from its resourceVersion (no relist): servers
 * with etcd progress notifications send a bookmark about every minute, so a live watch is
 * never silent that long; on servers without them a quiet watch is re-opened every 90 s
 * (one request). Every change is reported to a handler with the object's key
 * "namespace/name" so the controller can queue it; readers get copies from the cache, so
 * steady state costs no API calls. The cache holds each object (after its transform) as
 * compact JSON text packed against the first object of the cache (runtime/objpack.h):
 * ~1/60 of its cJSON tree; reading unpacks and parses it. One thread per informer. */
#ifndef YAO_RUNTIME_INFORMER_H
#define YAO_RUNTIME_INFORMER_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "kube/rest.h"

struct informer;

/* Called from the informer's thread after the cache changed. old/cur are the cached
 * versions before/after (either may be NULL: add / delete); they are borrowed. */
typedef void (*informer_change_fn)(void *ud, const char *key, const cJSON *old, const cJSON *cur);
/* Optional: shrink an object before it is cached (drop fields the controller never
 * reads). Modifies obj in place. */
typedef void (*informer_transform_fn)(cJSON *obj);
/* Optional: a client-side selection, for what a label selector cannot express (a hash of
 * a spec field). Called on each listed or watched object before its transform; an object
 * it refuses (returns 0) is never cached, and a cached one it now refuses is removed as if
 * deleted (handlers see old -> NULL). Must be pure and cheap; filter_ud is passed back. */
typedef int (*informer_filter_fn)(void *filter_ud, const cJSON *obj);

struct informer_options {
    const char *path;            /* collection, e.g. "/api/v1/pods" or "/api/v1/namespaces/ns/pods" */
    const char *label_selector;  /* NULL = everything */
    informer_change_fn on_change;
    void *ud;
    informer_transform_fn transform;
    informer_filter_fn filter;   /* NULL = keep everything the server sends */
    void *filter_ud;
    int page_size;               /* LIST limit (default 500; halved while a page is too large) */
    int watch_stall_s;           /* silence that ends a watch (default 90) */
};

struct informer *informer_new(struct kube_client *c, const struct informer_options *o);
/* Start the thread. 0 or -1. */
int informer_start(struct informer *inf);
/* Ask the thread to stop, and join it. */
void informer_stop(struct informer *inf);
void informer_free(struct informer *inf);

/* True once the first LIST has been loaded into the cache. */
int informer_synced(struct informer *inf);
/* A deep copy of the cached object (caller deletes), or NULL. */
cJSON *informer_get(struct informer *inf, const char *key);
/* Number of cached objects. */
size_t informer_count(struct informer *inf);
/* No event is being applied right now: every change the cache shows has been handed to the
 * handler, and the handler has returned. (A change is stored before its handler runs, so a
 * reader that sees it in the cache may be ahead of the handler; tests that act on what the
 * handlers keep wait for this too.) */
int informer_quiescent(struct informer *inf);
/* 1 when key is cached (nothing unpacked), else 0. */
int informer_has(struct informer *inf, const char *key);
/* Walk the cache under its read lock; fn must not call back into this informer. Each
 * object is parsed for its call and freed after it: fn must not keep pointers into it.
 * Stops when fn returns non-zero. */
void informer_foreach(struct informer *inf, int (*fn)(void *ud, const char *key, const cJSON *obj), void *ud);
/* Counters for metrics: lists, watch restarts, 410 relists, events. */
struct informer_stats { unsigned long lists, watches, relists_expired, events, errors, stalls; };
void informer_stats(struct informer *inf, struct informer_stats *out);

/* Walk the text of a List response without building the tree of all its items: each
 * element of "items" is parsed alone and handed to fn, which owns it (fn returns 0, or -1
 * to give up). The API server answers a LIST from its watch cache (resourceVersion=0) in
 * one page whatever the limit, and a cJSON tree takes about 7 times the text: for 10,000
 * pods the whole tree was ~250 MB at once, one item at a time it is the text and one
 * item. *metadata receives the list's metadata (an empty object when absent; caller
 * deletes). 0, or -1 when the text is not an object with an "items" array (*metadata NULL;
 * the items already handed over stay with fn). */
int informer_decode_list(const char *text, size_t len, int (*fn)(void *ud, cJSON *item), void *ud,
                         cJSON **metadata);

/* "namespace/name" (or "name" for cluster-scoped) of an object into out. 0 or -1. */
int informer_key(const cJSON *obj, char *out, size_t outlen);


#endif
