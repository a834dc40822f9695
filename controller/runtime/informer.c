/* runtime/informer.c — list+watch cache (see informer.h). The cache is a strmap from key
 * to the object's compact JSON text, packed (runtime/objpack.c: deflated against the first
 * cached object of the kind, ~10x smaller), guarded by a rwlock: a cJSON tree costs 5.5–6
 * times its text (a 64-byte node and a malloc'd key and value per member), and at 10,000
 * Sandboxes the trees were 15 of the 16 KiB each Sandbox held. Readers unpack and parse
 * (informer_get always returned a copy, so that replaces a deep copy); informer_foreach
 * does it one object at a time. Handlers run on the informer thread after the cache was
 * updated and the lock released, with trees of the old and new versions. */
#include "runtime/informer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/heap.h"
#include "kube/kjson.h"
#include "base/errfmt.h"
#include "kube/watch.h"
#include "base/backoff.h"
#include "base/log.h"
#include "runtime/objpack.h"
#include "base/strmap.h"

struct informer {
    struct kube_client *client;
    char *path, *selector;
    informer_change_fn on_change;
    void *ud;
    informer_transform_fn transform;
    informer_filter_fn filter;
    void *filter_ud;
    int page_size;
    int stall_s;
    /* Which resourceVersion the next LIST asks for: LIST_ANY ("0", the watch cache) until
     * the first list; LIST_NOT_OLDER (the last RV, resourceVersionMatch=NotOlderThan) for a
     * relist; LIST_QUORUM (none) when that was refused with a 410. */
    enum { LIST_ANY, LIST_NOT_OLDER, LIST_QUORUM } list_mode;
    pthread_rwlock_t lock;
    /* Events being applied: counted from before the cache changes until the handler has
     * returned (informer_quiescent). */
    atomic_int applying;
    struct strmap cache;          /* key -> objpack blob of the object's compact JSON */
    struct objpack *pack;         /* used by the informer thread only, to pack */
    pthread_t thread;
    int started;
    /* Set by informer_stop, read by the thread (and by kube_watch as its stop flag): plain
     * (seq_cst) atomics, it publishes nothing else. */
    atomic_int stop;
    /* Set once the first list is in the cache (release), read by informer_synced (acquire):
     * a caller that saw it set also sees what the list cached. */
    atomic_int synced;
    char rv[128];                 /* last resourceVersion seen */
    pthread_mutex_t stats_lock;
    struct informer_stats stats;
    unsigned seed;
};

int informer_key(const cJSON *obj, char *out, size_t outlen) {
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    if (!cJSON_IsString(name)) return -1;
    int n = cJSON_IsString(ns) ? snprintf(out, outlen, "%s/%s", ns->valuestring, name->valuestring)
                               : snprintf(out, outlen, "%s", name->valuestring);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

struct informer *informer_new(struct kube_client *c, const struct informer_options *o) {
    struct informer *inf = calloc(1, sizeof(*inf));
    if (!inf) return NULL;
    inf->client = c;
    inf->path = strdup(o->path);
    inf->selector = o->label_selector ? strdup(o->label_selector) : NULL;
    inf->on_change = o->on_change;
    inf->ud = o->ud;
    inf->transform = o->transform ? o->transform : kj_strip_metadata;
    inf->filter = o->filter;
    inf->filter_ud = o->filter_ud;
    inf->page_size = o->page_size > 0 ? o->page_size : 500;
    inf->stall_s = o->watch_stall_s > 0 ? o->watch_stall_s : 90;
    inf->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)inf;
    pthread_rwlock_init(&inf->lock, NULL);
    pthread_mutex_init(&inf->stats_lock, NULL);
    strmap_init(&inf->cache);
    inf->pack = objpack_new();
    if (!inf->path || (o->label_selector && !inf->selector) || !inf->pack) {
        informer_free(inf);
        return NULL;
    }
    return inf;
}


void informer_free(struct informer *inf) {
    if (!inf) return;
    informer_stop(inf);
    strmap_clear(&inf->cache, free);
    objpack_free(inf->pack);
    pthread_rwlock_destroy(&inf->lock);
    pthread_mutex_destroy(&inf->stats_lock);
    free(inf->path);
    free(inf->selector);
    free(inf);
}

/* Bump one statistic. */
static void stat_inc(struct informer *inf, unsigned long *field) {
    pthread_mutex_lock(&inf->stats_lock);
    (*field)++;
    pthread_mutex_unlock(&inf->stats_lock);
}

void informer_stats(struct informer *inf, struct informer_stats *out) {
    pthread_mutex_lock(&inf->stats_lock);
    *out = inf->stats;
    pthread_mutex_unlock(&inf->stats_lock);
}

int informer_synced(struct informer *inf) { return atomic_load_explicit(&inf->synced, memory_order_acquire); }

/* The tree of a cached blob (NULL for NULL, or when out of memory). */
static cJSON *inflate(const struct informer *inf, const void *blob) {
    size_t len;
    char *text = blob ? objpack_unpack(inf->pack, blob, &len) : NULL;
    cJSON *obj = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    return obj;
}

cJSON *informer_get(struct informer *inf, const char *key) {
    pthread_rwlock_rdlock(&inf->lock);
    cJSON *copy = inflate(inf, strmap_get(&inf->cache, key));
    pthread_rwlock_unlock(&inf->lock);
    return copy;
}

int informer_has(struct informer *inf, const char *key) {
    pthread_rwlock_rdlock(&inf->lock);
    int yes = strmap_get(&inf->cache, key) != NULL;
    pthread_rwlock_unlock(&inf->lock);
    return yes;
}

size_t informer_count(struct informer *inf) {
    pthread_rwlock_rdlock(&inf->lock);
    size_t n = inf->cache.count;
    pthread_rwlock_unlock(&inf->lock);
    return n;
}

struct foreach_ctx {
    const struct informer *inf;
    int (*fn)(void *ud, const char *key, const cJSON *obj);
    void *ud;
};

/* Adapter from strmap's walk to the informer's: each object's tree lives for its call. An
 * object that cannot be parsed back (out of memory) is skipped. */
static int foreach_adapter(void *ud, const char *key, void *value) {
    struct foreach_ctx *f = ud;
    cJSON *obj = inflate(f->inf, value);
    int r = obj ? f->fn(f->ud, key, obj) : 0;
    cJSON_Delete(obj);
    return r;
}

void informer_foreach(struct informer *inf, int (*fn)(void *ud, const char *key, const cJSON *obj), void *ud) {
    struct foreach_ctx f = {inf, fn, ud};
    pthread_rwlock_rdlock(&inf->lock);
    strmap_foreach(&inf->cache, foreach_adapter, &f);
    pthread_rwlock_unlock(&inf->lock);
}

/* Store (cur != NULL) or remove the object under key, then tell the handler. Takes
 * ownership of cur. When its text cannot be made or stored (out of memory) the cache keeps
 * what it had and the handler is not called: the next event or relist brings it again. */
static void cache_apply(struct informer *inf, const char *key, cJSON *cur) {
    void *old = NULL, *blob = NULL;
    if (cur) {
        char *text = cJSON_PrintUnformatted(cur);
        blob = text ? objpack_pack(inf->pack, text, strlen(text)) : NULL;
        free(text);
        if (!blob) { cJSON_Delete(cur); return; }
    }
    atomic_fetch_add(&inf->applying, 1);
    pthread_rwlock_wrlock(&inf->lock);
    if (blob) {
        if (strmap_put(&inf->cache, key, blob, &old) < 0) { free(blob); cJSON_Delete(cur); cur = NULL; }
    } else {
        old = strmap_remove(&inf->cache, key);
    }
    pthread_rwlock_unlock(&inf->lock);
    if ((old || cur) && inf->on_change) {
        cJSON *was = inflate(inf, old);
        if (was || cur) inf->on_change(inf->ud, key, was, cur);   /* was NULL: out of memory */
        cJSON_Delete(was);
    }
    atomic_fetch_sub(&inf->applying, 1);
    free(old);
    cJSON_Delete(cur);
}

int informer_quiescent(struct informer *inf) { return atomic_load(&inf->applying) == 0; }

/* The object's resourceVersion, or NULL. */
static const char *object_rv(const cJSON *obj) {
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                      "resourceVersion");
    return cJSON_IsString(rv) ? rv->valuestring : NULL;
}

/* The object's metadata.uid, or NULL. */
static const char *object_uid(const cJSON *obj) {
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "uid");
    return cJSON_IsString(uid) ? uid->valuestring : NULL;
}

/* What the cache holds under key, against obj from a (re)list. */
enum cached { CACHED_OTHER,      /* nothing, or an older version of the same object */
              CACHED_SAME,       /* the same resourceVersion: a relist has nothing new to tell
                                  * (sample-controller's check in its update handler) */
              CACHED_REPLACED }; /* another object (uid) of the same name: the one cached was
                                  * deleted and this one created while we were not watching */

/* Compare obj with the cache's object under key. RVs and uids are compared for equality
 * only. */
static enum cached cached_state(struct informer *inf, const char *key, const cJSON *obj) {
    pthread_rwlock_rdlock(&inf->lock);
    const void *blob = strmap_get(&inf->cache, key);
    cJSON *was = blob ? inflate(inf, blob) : NULL;
    pthread_rwlock_unlock(&inf->lock);
    const char *rv = object_rv(obj), *was_rv = object_rv(was);
    const char *uid = object_uid(obj), *was_uid = object_uid(was);
    enum cached c = CACHED_OTHER;
    if (was && uid && was_uid && strcmp(uid, was_uid) != 0) c = CACHED_REPLACED;
    else if (rv && *rv && was_rv && !strcmp(was_rv, rv)) c = CACHED_SAME;
    cJSON_Delete(was);
    return c;
}

/* Remember the newest resourceVersion (RVs are opaque: we only store them). */
static void set_rv(struct informer *inf, const char *rv) {
    if (rv) snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
}

/* Build "<path>?k=v&..." for a list or watch call. */
static int build_path(struct informer *inf, char *out, size_t outlen, int watch, const char *cont,
                      long *timeout_s) {
    char limit[16];
    snprintf(out, outlen, "%s", inf->path);
    if (inf->selector && kube_path_add_query(out, outlen, "labelSelector", inf->selector) < 0) return -1;
    if (watch) {
        char timeout[16];
        *timeout_s = 300 + (long)(rand_r(&inf->seed) % 300);
        snprintf(timeout, sizeof(timeout), "%ld", *timeout_s);
        if (kube_path_add_query(out, outlen, "watch", "true") < 0 ||
            kube_path_add_query(out, outlen, "allowWatchBookmarks", "true") < 0 ||
            kube_path_add_query(out, outlen, "resourceVersion", inf->rv) < 0 ||
            kube_path_add_query(out, outlen, "timeoutSeconds", timeout) < 0)
            return -1;
        return 0;
    }
    snprintf(limit, sizeof(limit), "%d", inf->page_size);
    if (kube_path_add_query(out, outlen, "limit", limit) < 0) return -1;
    if (cont) return kube_path_add_query(out, outlen, "continue", cont); /* the token carries the RV */
    if (inf->list_mode == LIST_ANY) return kube_path_add_query(out, outlen, "resourceVersion", "0");
    if (inf->list_mode == LIST_NOT_OLDER && inf->rv[0])
        return kube_path_add_query(out, outlen, "resourceVersion", inf->rv) < 0 ||
                       kube_path_add_query(out, outlen, "resourceVersionMatch", "NotOlderThan") < 0
                   ? -1 : 0;
    return 0;
}

struct seen_ctx { struct strmap *seen; struct strmap *gone; };

/* Collect cached keys that the fresh list did not contain. */
static int collect_gone(void *ud, const char *key, void *value) {
    struct seen_ctx *s = ud;
    if (!strmap_get(s->seen, key)) strmap_put(s->gone, key, (void *)1, NULL);
    return 0;
}

struct key_list { char **v; size_t n; };

/* Copy a strmap's keys out so the cache can change while we walk them. */
static int push_key(void *ud, const char *key, void *value) {
    struct key_list *l = ud;
    char **v = realloc(l->v, (l->n + 1) * sizeof(*v));
    if (!v) return 1;
    l->v = v;
    if ((l->v[l->n] = strdup(key))) l->n++;
    return 0;
}

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

int informer_decode_list(const char *text, size_t len, int (*fn)(void *ud, cJSON *item), void *ud,
                         cJSON **metadata) {
    const char *p = text, *end = text + len, *next;
    int items_seen = 0;
    *metadata = NULL;
    p = skip_ws(p, end);
    if (p == end || *p++ != '{') return -1;
    for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == '}') break;
        /* a member: "key" : value */
        cJSON *key = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &next, 0);
        int is_items = cJSON_IsString(key) && !strcmp(key->valuestring, "items");
        int is_meta = cJSON_IsString(key) && !strcmp(key->valuestring, "metadata");
        int ok = cJSON_IsString(key);
        cJSON_Delete(key);
        if (!ok) goto bad;
        p = skip_ws(next, end);
        if (p == end || *p++ != ':') goto bad;
        p = skip_ws(p, end);
        if (is_items && p < end && *p == '[') {
            /* each element alone: parsed, handed over, and its text never looked at again */
            items_seen = 1;
            p = skip_ws(p + 1, end);
            if (p < end && *p == ']') {
                p++;
            } else {
                for (;;) {
                    cJSON *item = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &next, 0);
                    if (!item) goto bad;
                    if (fn(ud, item) < 0) goto bad;
                    p = skip_ws(next, end);
                    if (p < end && *p == ',') { p = skip_ws(p + 1, end); continue; }
                    if (p < end && *p == ']') { p++; break; }
                    goto bad;
                }
            }
        } else {
            cJSON *v = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &next, 0);
            if (!v) goto bad;
            p = next;
            if (is_items) {   /* "items": null — an empty list */
                if (!cJSON_IsNull(v)) { cJSON_Delete(v); goto bad; }
                items_seen = 1;
            }
            if (is_meta && !*metadata) *metadata = v;
            else cJSON_Delete(v);
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') { p++; continue; }
        if (p < end && *p == '}') break;
        goto bad;
    }
    if (!items_seen) goto bad;
    if (!*metadata) *metadata = cJSON_CreateObject();
    return *metadata ? 0 : -1;
bad:
    cJSON_Delete(*metadata);
    *metadata = NULL;
    return -1;
}

struct list_ctx { struct informer *inf; struct strmap *seen; };

/* One item of a LIST page into the cache. Items lack apiVersion/kind in a list; they are
 * kept as the server sent them. */
static int cache_item(void *ud, cJSON *item) {
    struct list_ctx *lc = ud;
    char key[512];
    if (informer_key(item, key, sizeof(key)) < 0) { cJSON_Delete(item); return 0; }
    /* Filtered out: not marked seen, so a cached copy is removed with the vanished ones. */
    if (lc->inf->filter && !lc->inf->filter(lc->inf->filter_ud, item)) { cJSON_Delete(item); return 0; }
    strmap_put(lc->seen, key, (void *)1, NULL);
    enum cached c = cached_state(lc->inf, key, item);
    if (c == CACHED_SAME) { cJSON_Delete(item); return 0; }
    /* A new uid under a cached name: not an update. Every book the handlers keep by uid
     * (a capacity slot or place in line, a warm claim, an expectation) must hear that the
     * old object went, and the new one is told as new. (client-go's relist reports it as
     * an update; a handler that keys its books by uid then keeps a ghost.) */
    if (c == CACHED_REPLACED) cache_apply(lc->inf, key, NULL);
    lc->inf->transform(item);
    cache_apply(lc->inf, key, item);
    return 0;
}

/* A list page was larger than the client takes (kube_client_set_max_body): ask for
 * smaller ones. A list served from the watch cache (resourceVersion=0) is one page
 * whatever its limit, so first leave the watch cache for a read that pages (etcd's, which
 * honours limit); then halve the page, down to one object. The smaller page stays for
 * the informer's later lists: its objects are that big. 1 when asking again may help, 0
 * when not (one object alone is over the limit). */
static int shrink_pages(struct informer *inf) {
    if (inf->list_mode == LIST_ANY) {
        inf->list_mode = LIST_QUORUM;
        return 1;
    }
    if (inf->page_size <= 1) return 0;
    inf->page_size /= 2;
    return 1;
}

/* LIST all pages into the cache, no response over the client's size limit. 0, or -1
 * (err set) — a 410 on a continue token restarts (once), a page over the limit is asked
 * again smaller (shrink_pages). */
static int do_list(struct informer *inf, char *err, size_t errlen) {
    char path[2048];
    char *cont = NULL;
    struct strmap seen;
    int rc = -1, restarted = 0;
    strmap_init(&seen);
    stat_inc(inf, &inf->stats.lists);
    for (;;) {
        cJSON *page = NULL;
        long unused;
        if (atomic_load(&inf->stop)) {   /* a long (or endless) pagination must not delay informer_stop */
            errfmt(err, errlen, "list %s: stopped", inf->path);
            goto out;
        }
        if (build_path(inf, path, sizeof(path), 0, cont, &unused) < 0) {
            errfmt(err, errlen, "list %s: path too long", inf->path);
            goto out;
        }
        struct kube_response resp;
        long st = kube_request(inf->client, "GET", path, NULL, NULL, 0, &resp) < 0 ? -1 : resp.status;
        int asked_cache = inf->list_mode == LIST_ANY && !cont, asked_page = inf->page_size;
        if (st < 0 && resp.too_large && shrink_pages(inf)) {
            /* the same continue token, a smaller page (a limit may change between pages) */
            LOGW("msg=\"list page too large; asking for smaller pages\" path=%s asked_page_size=%d "
                 "from_watch_cache=%d page_size=%d", inf->path, asked_page, asked_cache, inf->page_size);
            kube_response_free(&resp);
            continue;
        }
        if (st < 0) {
            errfmt(err, errlen, "GET %s: %s", path, resp.err);
        } else if (st != 200) {
            char msg[KUBE_ERR_MAX];
            kube_response_message(&resp, msg, sizeof(msg));
            errfmt(err, errlen, "GET %s: %s", path, msg);
        } else {
            struct list_ctx lc = {inf, &seen};
            if (informer_decode_list(resp.body, resp.len, cache_item, &lc, &page) < 0) {
                errfmt(err, errlen, "GET %s: malformed list in response", path);
                st = -1;
            }
        }
        kube_response_free(&resp);
        if (st != 200) {
            /* An expired continue token: start over from page one, once. If that expires
             * too, fail: run() backs off instead of looping on the server. */
            if (st == 410 && cont && !restarted) {
                restarted = 1;
                free(cont);
                cont = NULL;
                strmap_clear(&seen, NULL);
                continue;
            }
            /* Our resourceVersion refused outright: the next attempt reads from etcd. */
            if (st == 410 && !cont && inf->list_mode == LIST_NOT_OLDER) inf->list_mode = LIST_QUORUM;
            cJSON_Delete(page);
            goto out;
        }
        /* page: the list's metadata (continue token, resourceVersion); items went to the cache */
        const cJSON *md = page;
        const cJSON *next = cJSON_GetObjectItemCaseSensitive(md, "continue");
        free(cont);
        cont = NULL;
        if (cJSON_IsString(next) && next->valuestring[0]) {
            cont = strdup(next->valuestring);
            cJSON_Delete(page);
            if (!cont) goto out;
            continue;
        }
        set_rv(inf, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "resourceVersion")));
        cJSON_Delete(page);
        break;
    }
    /* Objects cached before but absent now were deleted while we were not watching. */
    struct strmap gone;
    strmap_init(&gone);
    struct seen_ctx sc = {&seen, &gone};
    pthread_rwlock_rdlock(&inf->lock);
    strmap_foreach(&inf->cache, collect_gone, &sc);
    pthread_rwlock_unlock(&inf->lock);
    struct key_list kl = {0};
    strmap_foreach(&gone, push_key, &kl);
    for (size_t i = 0; i < kl.n; i++) { cache_apply(inf, kl.v[i], NULL); free(kl.v[i]); }
    free(kl.v);
    strmap_clear(&gone, NULL);
    atomic_store_explicit(&inf->synced, 1, memory_order_release);
    inf->list_mode = LIST_NOT_OLDER;  /* from now on, never older than what we hold */
    rc = 0;
    /* The response text (tens of MB for 10,000 pods) and the items' parse trees are free
     * now, but between the small cached objects: give the whole free pages back, or the
     * process keeps the list's peak resident for good. */
    heap_trim();
out:
    free(cont);
    strmap_clear(&seen, NULL);
    return rc;
}

/* One watch event: update RV and cache. */
static int on_event(void *ud, const char *type, cJSON *object, cJSON *event) {
    struct informer *inf = ud;
    stat_inc(inf, &inf->stats.events);
    set_rv(inf, object_rv(object));
    if (!strcmp(type, "BOOKMARK")) return 0;
    char key[512];
    if (informer_key(object, key, sizeof(key)) < 0) return 0;
    if (!strcmp(type, "DELETED") || (inf->filter && !inf->filter(inf->filter_ud, object))) {
        cache_apply(inf, key, NULL);   /* a filtered-out object: removed if it was cached */
        return 0;
    }
    cJSON *obj = cJSON_DetachItemFromObjectCaseSensitive(event, "object");
    inf->transform(obj);
    cache_apply(inf, key, obj);
    return 0;
}

/* Sleep up to ms, waking early when asked to stop. */
static void nap(struct informer *inf, int64_t ms) {
    while (ms > 0 && !atomic_load(&inf->stop)) {
        int64_t step = ms > 100 ? 100 : ms;
        usleep((useconds_t)step * 1000);
        ms -= step;
    }
}

/* The informer thread: list, then watch until told to stop. */
static void *run(void *arg) {
    struct informer *inf = arg;
    char err[KUBE_ERR_MAX];
    unsigned failures = 0;
    int need_list = 1;
    while (!atomic_load(&inf->stop)) {
        if (need_list) {
            if (do_list(inf, err, sizeof(err)) < 0) {
                if (atomic_load(&inf->stop)) break;
                stat_inc(inf, &inf->stats.errors);
                LOGW("msg=\"list failed\" path=%s err=\"%s\"", inf->path, err);
                int64_t d = backoff_exponential_ms(failures++, 800, 30000);
                nap(inf, backoff_jitter_ms(d, 0.2, rand_r(&inf->seed) / (RAND_MAX + 1.0)));
                continue;
            }
            need_list = 0;
        }
        char path[2048];
        long timeout_s = 0;
        if (build_path(inf, path, sizeof(path), 1, NULL, &timeout_s) < 0) break;
        stat_inc(inf, &inf->stats.watches);
        unsigned long events_before = inf->stats.events;   /* only this thread writes it */
        int64_t started = clock_mono_ms();
        /* Where bookmarks flow (about once a minute) silence for stall_s means a dead
         * connection, which TCP keepalive alone notices later; elsewhere a quiet watch is
         * just re-opened from its RV (see informer.h): either way, watch again. */
        enum kube_watch_end end = kube_watch(inf->client, path, on_event, inf, &inf->stop, inf->stall_s,
                                             err, sizeof(err));
        /* A watch that ends within a second without a single event did not work, however
         * it ended (client-go: "very short watch"): back off, or a server that closes every
         * watch at once, or answers each with 410, gets watches or full LISTs in a tight loop. */
        int short_watch = inf->stats.events == events_before && clock_mono_ms() - started < 1000;
        switch (end) {
        case KUBE_WATCH_CLOSED:
        case KUBE_WATCH_EXPIRED:
            if (end == KUBE_WATCH_EXPIRED) {
                stat_inc(inf, &inf->stats.relists_expired);
                need_list = 1;
            }
            if (!short_watch) {
                failures = 0;
            } else {
                int64_t d = backoff_exponential_ms(failures++, 800, 30000);
                nap(inf, backoff_jitter_ms(d, 0.2, rand_r(&inf->seed) / (RAND_MAX + 1.0)));
            }
            break;
        case KUBE_WATCH_STOPPED:
            break;
        case KUBE_WATCH_QUIET:
            /* Not an error: where no bookmarks come, a resource nobody changes is silent.
             * Watch again at once from the same RV; a dead connection shows as a failed
             * reconnect, which backs off. */
            stat_inc(inf, &inf->stats.stalls);
            failures = 0;
            LOGD("msg=\"watch quiet; watching again\" path=%s silent_s=%d", inf->path, inf->stall_s);
            break;
        case KUBE_WATCH_UNANSWERED:
        case KUBE_WATCH_FAILED: {
            stat_inc(inf, &inf->stats.errors);
            if (end == KUBE_WATCH_UNANSWERED) stat_inc(inf, &inf->stats.stalls);
            if (!atomic_load(&inf->stop))
                LOGW("msg=\"watch failed\" path=%s err=\"%s\"", inf->path, err);
            int64_t d = backoff_exponential_ms(failures++, 800, 30000);
            nap(inf, backoff_jitter_ms(d, 0.2, rand_r(&inf->seed) / (RAND_MAX + 1.0)));
            /* Watch again from the same resourceVersion: if it is too old by now, the server
             * says 410 and that relists (client-go does the same). */
            break;
        }
        }
    }
    return NULL;
}

int informer_start(struct informer *inf) {
    if (inf->started) return 0;
    if (pthread_create(&inf->thread, NULL, run, inf) != 0) return -1;
    inf->started = 1;
    return 0;
}

void informer_stop(struct informer *inf) {
    if (!inf->started) return;
    atomic_store(&inf->stop, 1);
    kube_client_wake(inf->client);   /* a watch in progress sees stop now */
    pthread_join(inf->thread, NULL);
    inf->started = 0;
}
