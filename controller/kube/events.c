/* kube/events.c — the asynchronous Event recorder (see events.h). Callers append to a
 * queue under a lock and return; one writer thread takes the oldest entry, asks the
 * object's token bucket, and either raises the count of the Event already written for an
 * identical occurrence (merge PATCH of count and lastTimestamp) or POSTs a new Event.
 * The queue, the Events written and the buckets are all bounded (queue_max, cache_max
 * with least-recently-used eviction). This file does not decide what is worth an Event:
 * that is the caller's (sandbox/io/status.c). */
#include "kube/events.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "kube/kjson.h"
#include "base/log.h"
#include "base/strmap.h"

#define MESSAGE_MAX 1024

/* ---- pure parts ------------------------------------------------------------------------ */

int kube_event_name(const char *object_name, uint64_t unique, char *out, size_t outlen) {
    const size_t suffix = 17;   /* "." + 16 hex */
    if (outlen < KUBE_EVENT_NAME_MAX + 1) return -1;
    size_t max = KUBE_EVENT_NAME_MAX - suffix, n = 0;
    for (const char *p = object_name ? object_name : ""; *p && n < max; p++) {
        char ch = *p;
        if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
        else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.')) ch = '-';
        /* a dot right after a dot (or at the start) would make an empty label */
        if (ch == '.' && (n == 0 || out[n - 1] == '.' || out[n - 1] == '-')) ch = '-';
        if (ch == '-' && n > 0 && out[n - 1] == '.') continue;
        if (n == 0 && ch == '-') continue;
        out[n++] = ch;
    }
    while (n > 0 && (out[n - 1] == '-' || out[n - 1] == '.')) n--;
    if (n == 0) { memcpy(out, "event", 5); n = 5; }
    snprintf(out + n, outlen - n, ".%016llx", (unsigned long long)unique);
    return 0;
}

/* Join parts with the unit separator (absent parts as empty). malloc'd or NULL. */
static char *join_key(const char *const *parts, int nparts) {
    size_t len = 1;
    for (int i = 0; i < nparts; i++) len += (parts[i] ? strlen(parts[i]) : 0) + 1;
    char *k = malloc(len), *p = k;
    if (!k) return NULL;
    for (int i = 0; i < nparts; i++) {
        size_t l = parts[i] ? strlen(parts[i]) : 0;
        memcpy(p, parts[i] ? parts[i] : "", l);
        p += l;
        *p++ = '\x1f';
    }
    *p = 0;
    return k;
}

char *kube_event_object_key(const struct kube_object_ref *obj) {
    const char *parts[] = {obj->api_version, obj->kind, obj->namespace_, obj->name, obj->uid};
    return join_key(parts, 5);
}

char *kube_event_key(const struct kube_object_ref *obj, const char *type, const char *reason,
                     const char *message) {
    const char *parts[] = {obj->api_version, obj->kind, obj->namespace_, obj->name, obj->uid, type, reason, message};
    return join_key(parts, 8);
}

int kube_bucket_take(struct kube_token_bucket *b, int burst, int64_t refill_ms, int64_t now_ms) {
    if (!b->started) {
        b->started = 1;
        b->tokens = burst;
        b->last_ms = now_ms;
    }
    if (now_ms > b->last_ms && refill_ms > 0) {
        b->tokens += (double)(now_ms - b->last_ms) / (double)refill_ms;
        if (b->tokens > burst) b->tokens = burst;
        b->last_ms = now_ms;
    }
    if (b->tokens < 1.0) return 0;
    b->tokens -= 1.0;
    return 1;
}

/* ---- a small least-recently-used map (Events written, buckets) --------------------------- */

struct lru_node {
    struct lru_node *prev, *next;  /* prev: more recent */
    char *key;                     /* owned */
};

struct lru {
    struct strmap map;             /* key -> node */
    struct lru_node *head, *tail;  /* head: most recently used */
    size_t max;
};

static void lru_unlink(struct lru *l, struct lru_node *n) {
    if (n->prev) n->prev->next = n->next; else l->head = n->next;
    if (n->next) n->next->prev = n->prev; else l->tail = n->prev;
    n->prev = n->next = NULL;
}

static void lru_push_front(struct lru *l, struct lru_node *n) {
    n->prev = NULL;
    n->next = l->head;
    if (l->head) l->head->prev = n;
    l->head = n;
    if (!l->tail) l->tail = n;
}

/* The node for key, made the most recent; NULL if absent. */
static struct lru_node *lru_get(struct lru *l, const char *key) {
    struct lru_node *n = strmap_get(&l->map, key);
    if (n) { lru_unlink(l, n); lru_push_front(l, n); }
    return n;
}

static void lru_remove(struct lru *l, struct lru_node *n) {
    strmap_remove(&l->map, n->key);
    lru_unlink(l, n);
    free(n->key);
    free(n);
}

/* Insert a new node (size bytes, zeroed, a struct lru_node first) under key, evicting the
 * least recently used beyond max. The node, or NULL on ENOMEM. */
static struct lru_node *lru_add(struct lru *l, const char *key, size_t size) {
    struct lru_node *n = calloc(1, size);
    if (!n || !(n->key = strdup(key)) || strmap_put(&l->map, key, n, NULL) < 0) {
        if (n) free(n->key);
        free(n);
        return NULL;
    }
    lru_push_front(l, n);
    while (l->map.count > l->max && l->tail) lru_remove(l, l->tail);
    return n;
}

static void lru_clear(struct lru *l) {
    while (l->head) lru_remove(l, l->head);
    strmap_clear(&l->map, NULL);
}

/* ---- the recorder ------------------------------------------------------------------------- */

/* One queued entry: an event and how many identical occurrences it stands for. */
struct pending {
    struct pending *prev, *next;   /* prev: older */
    char *key;                     /* aggregation key (owned) */
    char *api_version, *kind, *ns, *name, *uid, *type, *reason, *message;
    uint64_t count;
    int64_t first_wall_ms, last_wall_ms;
};

/* An Event written, found again by the aggregation key. */
struct written {
    struct lru_node node;
    char name[KUBE_EVENT_NAME_MAX + 1];
    char ns[64];
    uint64_t count;
    int64_t first_mono_ms;         /* the window starts at the Event's creation */
};

struct bucket {
    struct lru_node node;
    struct kube_token_bucket b;
};

struct kube_recorder {
    struct kube_client *client;    /* owned */
    struct kube_recorder_options opt;
    char *component;
    pthread_t thread;
    pthread_mutex_t lock;          /* guards the queue, busy, stop and stats */
    pthread_cond_t work;           /* an entry was queued, or stop */
    pthread_cond_t idle;           /* the queue emptied and nothing is being written */
    struct pending *oldest, *newest;
    size_t npending;
    struct strmap by_key;          /* aggregation key -> queued entry */
    int busy, stop;
    struct kube_recorder_stats stats;
    /* The writer thread's alone: no lock. */
    struct lru written, buckets;
    atomic_uint_fast64_t seq;      /* makes names unique within one nanosecond */
};

static void pending_free(struct pending *p) {
    if (!p) return;
    free(p->key);
    free(p->api_version);
    free(p->kind);
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->type);
    free(p->reason);
    free(p->message);
    free(p);
}

/* Unlink p from the queue (lock held). */
static void queue_unlink(struct kube_recorder *r, struct pending *p) {
    if (p->prev) p->prev->next = p->next; else r->oldest = p->next;
    if (p->next) p->next->prev = p->prev; else r->newest = p->prev;
    strmap_remove(&r->by_key, p->key);
    r->npending--;
}

static void *writer(void *arg);

struct kube_recorder *kube_recorder_new(struct kube_client *c, const struct kube_recorder_options *o) {
    struct kube_recorder *r = calloc(1, sizeof(*r));
    if (!r) { kube_client_free(c); return NULL; }
    r->client = c;
    r->opt = *o;
    if (!r->opt.queue_max) r->opt.queue_max = 1000;
    if (r->opt.burst <= 0) r->opt.burst = 25;
    if (r->opt.refill_ms <= 0) r->opt.refill_ms = 300000;
    if (r->opt.window_ms <= 0) r->opt.window_ms = 600000;
    if (!r->opt.cache_max) r->opt.cache_max = 4096;
    r->component = strdup(o->component ? o->component : "yao-sandbox");
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->work, NULL);
    clock_mono_cond_init(&r->idle);
    strmap_init(&r->by_key);
    strmap_init(&r->written.map);
    strmap_init(&r->buckets.map);
    r->written.max = r->buckets.max = r->opt.cache_max;
    if (!r->component || pthread_create(&r->thread, NULL, writer, r) != 0) {
        free(r->component);
        pthread_cond_destroy(&r->work);
        pthread_cond_destroy(&r->idle);
        pthread_mutex_destroy(&r->lock);
        kube_client_free(c);
        free(r);
        return NULL;
    }
    return r;
}

/* strdup that keeps NULL. 0, or -1 on ENOMEM. */
static int dup_opt(char **out, const char *s) {
    *out = s ? strdup(s) : NULL;
    return s && !*out ? -1 : 0;
}

void kube_recorder_event(struct kube_recorder *r, const struct kube_object_ref *obj, const char *type,
                         const char *reason, const char *message) {
    if (!r) return;
    char msg[MESSAGE_MAX + 1];
    snprintf(msg, sizeof(msg), "%s", message ? message : "");
    char *key = kube_event_key(obj, type, reason, msg);
    int64_t wall = kj_now_ms();
    pthread_mutex_lock(&r->lock);
    r->stats.recorded++;
    struct pending *p = key ? strmap_get(&r->by_key, key) : NULL;
    if (p) {                        /* the same event is still waiting: fold it in */
        p->count++;
        p->last_wall_ms = wall;
        pthread_mutex_unlock(&r->lock);
        free(key);
        return;
    }
    pthread_mutex_unlock(&r->lock);
    p = calloc(1, sizeof(*p));
    if (!p || !key || dup_opt(&p->api_version, obj->api_version) || dup_opt(&p->kind, obj->kind) ||
        dup_opt(&p->ns, obj->namespace_) || dup_opt(&p->name, obj->name) || dup_opt(&p->uid, obj->uid) ||
        dup_opt(&p->type, type) || dup_opt(&p->reason, reason) || dup_opt(&p->message, msg)) {
        if (p) p->key = key; else free(key);
        pending_free(p);
        pthread_mutex_lock(&r->lock);
        r->stats.dropped_queue++;
        pthread_mutex_unlock(&r->lock);
        return;
    }
    p->key = key;
    p->count = 1;
    p->first_wall_ms = p->last_wall_ms = wall;
    pthread_mutex_lock(&r->lock);
    struct pending *again = strmap_get(&r->by_key, key);
    if (again || r->stop) {         /* queued meanwhile by another thread, or stopping */
        if (again) { again->count++; again->last_wall_ms = wall; } else r->stats.dropped_queue++;
        pthread_mutex_unlock(&r->lock);
        pending_free(p);
        return;
    }
    if (strmap_put(&r->by_key, key, p, NULL) < 0) {
        r->stats.dropped_queue++;
        pthread_mutex_unlock(&r->lock);
        pending_free(p);
        return;
    }
    p->prev = r->newest;
    if (r->newest) r->newest->next = p; else r->oldest = p;
    r->newest = p;
    r->npending++;
    struct pending *victim = NULL;
    int say = 0;
    if (r->npending > r->opt.queue_max) {   /* full: the oldest goes, never the caller */
        victim = r->oldest;
        queue_unlink(r, victim);
        say = r->stats.dropped_queue % 1000 == 0;   /* the log says it now and then; the metric always */
        r->stats.dropped_queue += victim->count;
    }
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->lock);
    if (victim) {
        if (say)
            LOGW("msg=\"event queue full: oldest events dropped (counted in yao_sandbox_events_dropped_total)\" "
                 "object=%s/%s reason=%s", victim->ns ? victim->ns : "", victim->name ? victim->name : "",
                 victim->reason ? victim->reason : "");
        pending_free(victim);
    }
}

/* Count an outcome (writer thread). */
static void count(struct kube_recorder *r, uint64_t *field, uint64_t n) {
    pthread_mutex_lock(&r->lock);
    *field += n;
    pthread_mutex_unlock(&r->lock);
}

/* PATCH the Event w with the new count and lastTimestamp. The HTTP status or -1. */
static long patch_count(struct kube_recorder *r, const struct written *w, uint64_t total, const char *last,
                        struct kube_error *err) {
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events/%s", w->ns, w->name);
    cJSON *patch = cJSON_CreateObject();
    if (!patch) return kube_error_oom(err);
    cJSON_AddNumberToObject(patch, "count", (double)total);
    cJSON_AddStringToObject(patch, "lastTimestamp", last);
    long st = kube_merge_patch(r->client, path, patch, NULL, err);
    cJSON_Delete(patch);
    return st;
}

/* POST a new Event for p named name. The HTTP status or -1. */
static long post_event(struct kube_recorder *r, const struct pending *p, const char *name,
                       struct kube_error *err) {
    char first[40], last[40], path[512];
    kj_time_format(p->first_wall_ms, first, sizeof(first));
    kj_time_format(p->last_wall_ms, last, sizeof(last));
    cJSON *ev = cJSON_CreateObject();
    if (!ev) return kube_error_oom(err);
    cJSON_AddStringToObject(ev, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "kind", "Event");
    cJSON *md = cJSON_AddObjectToObject(ev, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", p->ns);
    cJSON *io = cJSON_AddObjectToObject(ev, "involvedObject");
    if (p->api_version) cJSON_AddStringToObject(io, "apiVersion", p->api_version);
    if (p->kind) cJSON_AddStringToObject(io, "kind", p->kind);
    cJSON_AddStringToObject(io, "namespace", p->ns);
    if (p->name) cJSON_AddStringToObject(io, "name", p->name);
    if (p->uid) cJSON_AddStringToObject(io, "uid", p->uid);
    if (p->type) cJSON_AddStringToObject(ev, "type", p->type);
    if (p->reason) cJSON_AddStringToObject(ev, "reason", p->reason);
    cJSON_AddStringToObject(ev, "message", p->message ? p->message : "");
    cJSON_AddStringToObject(ev, "firstTimestamp", first);
    cJSON_AddStringToObject(ev, "lastTimestamp", last);
    cJSON_AddNumberToObject(ev, "count", (double)p->count);
    cJSON *src = cJSON_AddObjectToObject(ev, "source");
    cJSON_AddStringToObject(src, "component", r->component);
    cJSON_AddStringToObject(ev, "reportingComponent", r->component);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", p->ns);
    long st = kube_create(r->client, path, ev, NULL, err);
    cJSON_Delete(ev);
    return st;
}

/* Write one queued entry (writer thread, no lock held). */
static void write_one(struct kube_recorder *r, struct pending *p) {
    struct kube_error err = {0};
    char last[40];
    int64_t now = clock_mono_ms();
    struct kube_object_ref ref = {p->api_version, p->kind, p->ns, p->name, p->uid};
    if (!p->ns || !p->ns[0] || strlen(p->ns) >= sizeof(((struct written *)0)->ns)) {
        count(r, &r->stats.failed, p->count);
        return;
    }
    char *okey = kube_event_object_key(&ref);
    struct bucket *b = okey ? (struct bucket *)lru_get(&r->buckets, okey) : NULL;
    if (okey && !b) b = (struct bucket *)lru_add(&r->buckets, okey, sizeof(*b));
    free(okey);
    if (b && !kube_bucket_take(&b->b, r->opt.burst, r->opt.refill_ms, now)) {
        count(r, &r->stats.dropped_rate, p->count);
        LOGD("msg=\"event rate-limited\" object=%s/%s reason=%s", p->ns, p->name ? p->name : "",
             p->reason ? p->reason : "");
        return;
    }
    struct written *w = (struct written *)lru_get(&r->written, p->key);
    if (w && now - w->first_mono_ms < r->opt.window_ms) {
        kj_time_format(p->last_wall_ms, last, sizeof(last));
        long st = patch_count(r, w, w->count + p->count, last, &err);
        if (st == 200) {
            w->count += p->count;
            pthread_mutex_lock(&r->lock);
            r->stats.aggregated += p->count;
            r->stats.writes++;
            pthread_mutex_unlock(&r->lock);
            return;
        }
        if (st != 404) {
            count(r, &r->stats.failed, p->count);
            LOGW("msg=\"could not update event\" object=%s/%s reason=%s err=\"%s\"", p->ns, p->name ? p->name : "",
                 p->reason ? p->reason : "", err.message);
            return;
        }
        /* The Event went (its TTL, or deleted): a new one follows. */
    }
    if (w) { lru_remove(&r->written, &w->node); w = NULL; }
    char name[KUBE_EVENT_NAME_MAX + 1];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t unique = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec + atomic_fetch_add(&r->seq, 1);
    kube_event_name(p->name, unique, name, sizeof(name));
    long st = post_event(r, p, name, &err);
    if (st != 201 && st != 200) {
        count(r, &r->stats.failed, p->count);
        LOGW("msg=\"could not record event\" object=%s/%s reason=%s err=\"%s\"", p->ns, p->name ? p->name : "",
             p->reason ? p->reason : "", err.message);
        return;
    }
    w = (struct written *)lru_add(&r->written, p->key, sizeof(*w));
    if (w) {
        snprintf(w->name, sizeof(w->name), "%s", name);
        snprintf(w->ns, sizeof(w->ns), "%s", p->ns);
        w->count = p->count;
        w->first_mono_ms = now;
    }
    pthread_mutex_lock(&r->lock);
    r->stats.created++;
    r->stats.aggregated += p->count - 1;
    r->stats.writes++;
    pthread_mutex_unlock(&r->lock);
}

/* The writer thread: oldest entry first, until stopped. */
static void *writer(void *arg) {
    struct kube_recorder *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->stop && !r->oldest) pthread_cond_wait(&r->work, &r->lock);
        if (r->stop) break;
        struct pending *p = r->oldest;
        queue_unlink(r, p);
        r->busy = 1;
        pthread_mutex_unlock(&r->lock);
        write_one(r, p);
        pending_free(p);
        pthread_mutex_lock(&r->lock);
        r->busy = 0;
        if (!r->oldest) pthread_cond_broadcast(&r->idle);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int kube_recorder_flush(struct kube_recorder *r, long max_ms) {
    if (!r) return 0;
    struct timespec until;
    clock_mono_timespec(clock_mono_ms() + max_ms, &until);
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    while ((r->oldest || r->busy) && rc == 0) rc = pthread_cond_timedwait(&r->idle, &r->lock, &until);
    int left = r->oldest || r->busy;
    pthread_mutex_unlock(&r->lock);
    return left ? -1 : 0;
}

void kube_recorder_free(struct kube_recorder *r) {
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    pthread_cond_broadcast(&r->work);
    pthread_mutex_unlock(&r->lock);
    kube_client_cancel(r->client);
    pthread_join(r->thread, NULL);
    uint64_t dropped = 0;
    while (r->oldest) {
        struct pending *p = r->oldest;
        queue_unlink(r, p);
        dropped += p->count;
        pending_free(p);
    }
    r->stats.dropped_queue += dropped;
    if (dropped) LOGW("msg=\"events dropped at shutdown\" count=%llu", (unsigned long long)dropped);
    strmap_clear(&r->by_key, NULL);
    lru_clear(&r->written);
    lru_clear(&r->buckets);
    kube_client_free(r->client);
    pthread_cond_destroy(&r->work);
    pthread_cond_destroy(&r->idle);
    pthread_mutex_destroy(&r->lock);
    free(r->component);
    free(r);
}

void kube_recorder_stats(struct kube_recorder *r, struct kube_recorder_stats *out) {
    memset(out, 0, sizeof(*out));
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    *out = r->stats;
    out->pending = r->npending;
    pthread_mutex_unlock(&r->lock);
}
