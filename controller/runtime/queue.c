/* runtime/queue.c — deduplicating, delaying, rate-limited work queue (see queue.h).
 * Ready keys form a FIFO ring; delayed keys a binary min-heap on due time with a map
 * from key to heap slot, so a re-add can move a key earlier in O(log n). A key handed to a
 * worker has a small record (when, and whether it was added again meanwhile). With a
 * namespace limit, each namespace with keys in flight has a small record: how many, and
 * the keys parked behind that limit (FIFO). Each key is parked at most once per hand-out,
 * so queue_get stays amortised O(1); deciding whether a namespace may use a spare slot
 * looks at the keys in flight (at most one per worker). */
#include "runtime/queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/backoff.h"
#include "base/strmap.h"

struct delayed {
    int64_t due_ms;
    char *key;          /* owned */
};

/* A key handed to a worker. */
struct inflight {
    int64_t since_ms;   /* when it was handed out */
    int again;          /* added while processed: queue_done queues it again */
};

/* A namespace with keys in flight or parked (only while a namespace limit is set). */
struct nsstate {
    int inflight;
    int quick;          /* its last key done was quick (see QUICK_MS) */
    char **parked;      /* owned keys, oldest first from parked_head */
    size_t parked_head, nparked, capparked;
};

struct workqueue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int shutting_down;
    int64_t base_ms, cap_ms;
    /* FIFO of ready keys (owned strings). */
    char **ring;
    size_t head, count, cap;
    struct strmap queued;      /* keys in the ring (dirty set); value unused */
    struct strmap processing;  /* keys handed to a worker -> struct inflight * */
    struct strmap failures;    /* key -> (uintptr_t) count */
    struct delayed *heap;      /* min-heap on due_ms */
    size_t nheap, capheap;
    struct strmap heap_pos;    /* key -> (uintptr_t) slot + 1 */
    int ns_limit;              /* 0: none */
    int ns_spare;              /* more while the namespace's keys in flight are quick */
    struct strmap ns;          /* namespace -> struct nsstate * */
    size_t parked;             /* keys parked in all namespaces */
};

struct workqueue *queue_new(int64_t base_ms, int64_t cap_ms) {
    struct workqueue *q = calloc(1, sizeof(*q));
    if (!q) return NULL;
    pthread_mutex_init(&q->lock, NULL);
    clock_mono_cond_init(&q->cond);
    q->base_ms = base_ms;
    q->cap_ms = cap_ms;
    strmap_init(&q->queued);
    strmap_init(&q->processing);
    strmap_init(&q->failures);
    strmap_init(&q->heap_pos);
    strmap_init(&q->ns);
    return q;
}

/* Free a namespace record and the keys parked in it. */
static void nsstate_free(void *v) {
    struct nsstate *s = v;
    for (size_t i = 0; i < s->nparked; i++) free(s->parked[s->parked_head + i]);
    free(s->parked);
    free(s);
}

void queue_set_namespace_limit(struct workqueue *q, int limit, int spare) {
    pthread_mutex_lock(&q->lock);
    q->ns_limit = limit > 0 ? limit : 0;
    q->ns_spare = limit > 0 && spare > 0 ? spare : 0;
    pthread_mutex_unlock(&q->lock);
}

/* The namespace of key (before the '/'; "" for none) into buf. */
static const char *key_ns(const char *key, char *buf, size_t n) {
    const char *slash = strchr(key, '/');
    size_t len = slash ? (size_t)(slash - key) : 0;
    if (len >= n) len = n - 1;
    memcpy(buf, key, len);
    buf[len] = 0;
    return buf;
}

/* The record of namespace ns, made when create is set. NULL if absent (or ENOMEM). */
static struct nsstate *ns_get(struct workqueue *q, const char *ns, int create) {
    struct nsstate *s = strmap_get(&q->ns, ns);
    if (s || !create) return s;
    s = calloc(1, sizeof(*s));
    if (s && strmap_put(&q->ns, ns, s, NULL) < 0) { free(s); s = NULL; }
    return s;
}

/* Drop the record of a namespace with nothing in flight or parked. */
static void ns_release(struct workqueue *q, const char *ns, struct nsstate *s) {
    if (s->inflight == 0 && s->nparked == 0) nsstate_free(strmap_remove(&q->ns, ns));
}

/* Park key (owned) behind its namespace's limit. 0, or -1 on ENOMEM (key not taken). */
static int ns_park(struct workqueue *q, struct nsstate *s, char *key) {
    if (s->parked_head + s->nparked == s->capparked) {
        if (s->parked_head > 0) {
            memmove(s->parked, s->parked + s->parked_head, s->nparked * sizeof(char *));
            s->parked_head = 0;
        } else {
            size_t ncap = s->capparked ? s->capparked * 2 : 8;
            char **p = realloc(s->parked, ncap * sizeof(*p));
            if (!p) return -1;
            s->parked = p;
            s->capparked = ncap;
        }
    }
    s->parked[s->parked_head + s->nparked++] = key;
    q->parked++;
    return 0;
}

void queue_free(struct workqueue *q) {
    if (!q) return;
    for (size_t i = 0; i < q->count; i++) free(q->ring[(q->head + i) % q->cap]);
    free(q->ring);
    for (size_t i = 0; i < q->nheap; i++) free(q->heap[i].key);
    free(q->heap);
    strmap_clear(&q->queued, NULL);
    strmap_clear(&q->processing, free);
    strmap_clear(&q->failures, NULL);
    strmap_clear(&q->heap_pos, NULL);
    strmap_clear(&q->ns, nsstate_free);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* Append key to the ring (caller holds the lock; key not yet queued). */
static void ring_push(struct workqueue *q, const char *key) {
    if (q->count == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 64;
        char **r = malloc(ncap * sizeof(*r));
        if (!r) return; /* ENOMEM: drop the add; the periodic resync will bring it back */
        for (size_t i = 0; i < q->count; i++) r[i] = q->ring[(q->head + i) % q->cap];
        free(q->ring);
        q->ring = r;
        q->cap = ncap;
        q->head = 0;
    }
    char *k = strdup(key);
    if (!k) return;
    if (strmap_put(&q->queued, key, (void *)1, NULL) < 0) { free(k); return; }
    q->ring[(q->head + q->count) % q->cap] = k;
    q->count++;
}

/* Put an owned key (already in the queued set) back at the head of the ring (caller holds
 * the lock). 0, or -1 on ENOMEM (key not taken). */
static int ring_push_front(struct workqueue *q, char *key) {
    if (q->count == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 64;
        char **r = malloc(ncap * sizeof(*r));
        if (!r) return -1;
        for (size_t i = 0; i < q->count; i++) r[i] = q->ring[(q->head + i) % q->cap];
        free(q->ring);
        q->ring = r;
        q->cap = ncap;
        q->head = 0;
    }
    q->head = (q->head + q->cap - 1) % q->cap;
    q->ring[q->head] = key;
    q->count++;
    return 0;
}

/* Make key ready unless it is already queued. A key a worker holds is only marked
 * (its in-flight record's again) and pushed by queue_done, so no two workers see it at
 * once. */
static void add_locked(struct workqueue *q, const char *key) {
    if (q->shutting_down || strmap_get(&q->queued, key)) return;
    struct inflight *f = strmap_get(&q->processing, key);
    if (f) {
        f->again = 1;   /* remembered: queue_done pushes it */
        return;
    }
    ring_push(q, key);
    pthread_cond_signal(&q->cond);
}

void queue_add(struct workqueue *q, const char *key) {
    pthread_mutex_lock(&q->lock);
    add_locked(q, key);
    pthread_mutex_unlock(&q->lock);
}

/* Heap helpers (caller holds the lock). */
static void heap_set(struct workqueue *q, size_t i, struct delayed d) {
    q->heap[i] = d;
    strmap_put(&q->heap_pos, d.key, (void *)(uintptr_t)(i + 1), NULL);
}

static void heap_up(struct workqueue *q, size_t i) {
    struct delayed d = q->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (q->heap[p].due_ms <= d.due_ms) break;
        heap_set(q, i, q->heap[p]);
        i = p;
    }
    heap_set(q, i, d);
}

static void heap_down(struct workqueue *q, size_t i) {
    struct delayed d = q->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = l;
        if (l >= q->nheap) break;
        if (r < q->nheap && q->heap[r].due_ms < q->heap[l].due_ms) m = r;
        if (q->heap[m].due_ms >= d.due_ms) break;
        heap_set(q, i, q->heap[m]);
        i = m;
    }
    heap_set(q, i, d);
}

/* Remove and return the root's key (owned by the caller). */
static char *heap_pop(struct workqueue *q) {
    char *key = q->heap[0].key;
    strmap_remove(&q->heap_pos, key);
    if (--q->nheap > 0) {
        q->heap[0] = q->heap[q->nheap];
        heap_down(q, 0);
    }
    return key;
}

void queue_add_after(struct workqueue *q, const char *key, int64_t delay_ms) {
    if (delay_ms <= 0) { queue_add(q, key); return; }
    int64_t now = clock_mono_ms();
    int64_t due = delay_ms > INT64_MAX - now ? INT64_MAX : now + delay_ms; /* saturate */
    pthread_mutex_lock(&q->lock);
    if (q->shutting_down) goto out;
    uintptr_t pos = (uintptr_t)strmap_get(&q->heap_pos, key);
    if (pos) {
        if (due < q->heap[pos - 1].due_ms) {
            q->heap[pos - 1].due_ms = due;
            heap_up(q, pos - 1);
            pthread_cond_broadcast(&q->cond);
        }
        goto out;
    }
    if (q->nheap == q->capheap) {
        size_t ncap = q->capheap ? q->capheap * 2 : 64;
        struct delayed *h = realloc(q->heap, ncap * sizeof(*h));
        if (!h) goto out;
        q->heap = h;
        q->capheap = ncap;
    }
    char *k = strdup(key);
    if (!k) goto out;
    q->heap[q->nheap] = (struct delayed){due, k};
    heap_up(q, q->nheap++);
    pthread_cond_broadcast(&q->cond); /* a sleeper may need to wake earlier */
out:
    pthread_mutex_unlock(&q->lock);
}

void queue_add_rate_limited(struct workqueue *q, const char *key) {
    pthread_mutex_lock(&q->lock);
    uintptr_t n = (uintptr_t)strmap_get(&q->failures, key);
    strmap_put(&q->failures, key, (void *)(n + 1), NULL);
    pthread_mutex_unlock(&q->lock);
    queue_add_after(q, key, backoff_exponential_ms((unsigned)n, q->base_ms, q->cap_ms));
}

void queue_forget(struct workqueue *q, const char *key) {
    pthread_mutex_lock(&q->lock);
    strmap_remove(&q->failures, key);
    pthread_mutex_unlock(&q->lock);
}

unsigned queue_failures(struct workqueue *q, const char *key) {
    pthread_mutex_lock(&q->lock);
    uintptr_t n = (uintptr_t)strmap_get(&q->failures, key);
    pthread_mutex_unlock(&q->lock);
    return (unsigned)n;
}

/* How long a key may be in flight and still count as quick. A namespace may use its spare
 * slots only once a key of it was done that quickly and while none of its keys in flight
 * has been out longer: a webhook or quota that stalls its writes makes its reconciles
 * slower than this, so a stuck namespace (or one not yet seen to be quick) is kept to its
 * limit and the reserved slots stay free for the others. */
#define QUICK_MS 1000

/* Take the oldest parked key of namespace s (owned by the caller; still queued). */
static char *parked_pop(struct workqueue *q, struct nsstate *s) {
    char *k = s->parked[s->parked_head++];
    s->nparked--;
    q->parked--;
    return k;
}

struct slow_scan {
    const char *ns;
    int64_t quick_since;    /* handed out at or after this: quick */
    int slow;               /* out: a key of ns in flight for longer */
};

static int find_slow(void *ud, const char *key, void *value) {
    struct slow_scan *c = ud;
    const struct inflight *f = value;
    char nsbuf[256];
    if (f->since_ms < c->quick_since && !strcmp(key_ns(key, nsbuf, sizeof(nsbuf)), c->ns)) c->slow = 1;
    return c->slow;
}

/* Whether namespace ns (record s) may have one more key in flight now: below its limit,
 * or below limit + spare while it is seen to be quick (its last key done and each of its
 * keys in flight). */
static int ns_may_take(struct workqueue *q, const char *ns, const struct nsstate *s, int64_t now) {
    if (s->inflight < q->ns_limit) return 1;
    if (s->inflight >= q->ns_limit + q->ns_spare || !s->quick) return 0;
    struct slow_scan c = {ns, now - QUICK_MS, 0};
    strmap_foreach(&q->processing, find_slow, &c);   /* at most one key per worker */
    return !c.slow;
}

struct spare_pick {
    struct workqueue *q;
    int64_t now;
    struct nsstate *s;      /* out: a namespace with parked keys that may take a spare slot */
};

static int pick_spare(void *ud, const char *ns, void *value) {
    struct spare_pick *p = ud;
    struct nsstate *s = value;
    if (s->nparked > 0 && ns_may_take(p->q, ns, s, p->now)) p->s = s;
    return p->s != NULL;
}

/* Hand key (owned; still in the queued set) to a worker: in flight from now. 0, or -1 on
 * ENOMEM (nothing changed). */
static int hand_out(struct workqueue *q, const char *key, struct nsstate *s, int64_t now) {
    struct inflight *f = malloc(sizeof(*f));
    if (!f) return -1;
    f->since_ms = now;
    f->again = 0;
    if (strmap_put(&q->processing, key, f, NULL) < 0) { free(f); return -1; }
    strmap_remove(&q->queued, key);
    if (s) s->inflight++;
    return 0;
}

/* The next key to hand out, taken off the ring or a namespace's parked keys and in flight,
 * or NULL when none may go now (*enomem set if one could not be handed out for lack of
 * memory: it is back at the head of the ring, or dropped for the resync to bring back).
 * Caller holds the lock. */
static char *next_key(struct workqueue *q, int64_t now, int *enomem) {
    char nsbuf[256];
    char *k = NULL;
    struct nsstate *s = NULL;
    *enomem = 0;
    while (q->count > 0 && !k) {
        k = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
        if (q->ns_limit == 0) break;
        const char *ns = key_ns(k, nsbuf, sizeof(nsbuf));
        s = ns_get(q, ns, 1);
        if (!s) break;                                  /* ENOMEM: handed out past the limit */
        if (!ns_may_take(q, ns, s, now)) {
            if (ns_park(q, s, k) == 0) k = NULL;        /* stays queued */
        } else if (s->inflight >= q->ns_limit && s->nparked > 0 && ns_park(q, s, k) == 0) {
            k = parked_pop(q, s);   /* a spare slot goes to the namespace's oldest key */
        }
    }
    if (!k && q->ns_spare > 0 && q->parked > 0) {
        /* Nothing else is ready: a namespace whose keys are parked and quick takes a spare
         * slot (an idle worker helps the one busy namespace). */
        struct spare_pick pick = {q, now, NULL};
        strmap_foreach(&q->ns, pick_spare, &pick);
        if (pick.s) k = parked_pop(q, s = pick.s);
    }
    if (!k || hand_out(q, k, s, now) == 0) return k;
    *enomem = 1;
    if (ring_push_front(q, k) < 0) { strmap_remove(&q->queued, k); free(k); }
    return NULL;
}

char *queue_get(struct workqueue *q) {
    char *key = NULL;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->shutting_down) break;
        int64_t now = clock_mono_ms();
        while (q->nheap > 0 && q->heap[0].due_ms <= now) {
            char *k = heap_pop(q);
            add_locked(q, k);
            free(k);
        }
        int enomem;
        key = next_key(q, now, &enomem);
        if (key) break;
        if (enomem || q->nheap > 0) {
            int64_t due = enomem ? now + 10 : q->heap[0].due_ms;   /* out of memory: try again soon */
            if (q->nheap > 0 && q->heap[0].due_ms < due) due = q->heap[0].due_ms;
            struct timespec ts;
            clock_mono_timespec(due, &ts);
            pthread_cond_timedwait(&q->cond, &q->lock, &ts);
        } else {
            pthread_cond_wait(&q->cond, &q->lock);
        }
    }
    pthread_mutex_unlock(&q->lock);
    return key;
}

void queue_done(struct workqueue *q, const char *key) {
    pthread_mutex_lock(&q->lock);
    struct inflight *f = strmap_remove(&q->processing, key);
    char nsbuf[256];
    const char *ns = key_ns(key, nsbuf, sizeof(nsbuf));
    struct nsstate *s = f ? ns_get(q, ns, 0) : NULL;
    if (s) {
        /* One slot of this namespace is free: its oldest parked key goes first. */
        if (s->inflight > 0) s->inflight--;
        s->quick = clock_mono_ms() - f->since_ms < QUICK_MS;
        if (s->nparked > 0) {
            char *k = parked_pop(q, s);
            if (ring_push_front(q, k) == 0) {
                pthread_cond_signal(&q->cond);
            } else {
                s->parked_head--;   /* ENOMEM: it stays parked */
                s->nparked++;
                q->parked++;
            }
        }
        ns_release(q, ns, s);
    }
    /* A key left the namespace it was in: a worker waiting may now take a spare slot. */
    if (q->ns_spare > 0 && q->parked > 0) pthread_cond_signal(&q->cond);
    if (f && f->again) add_locked(q, key);
    free(f);
    pthread_mutex_unlock(&q->lock);
}

void queue_shutdown(struct workqueue *q) {
    pthread_mutex_lock(&q->lock);
    q->shutting_down = 1;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

size_t queue_len(struct workqueue *q) {
    pthread_mutex_lock(&q->lock);
    size_t n = q->count + q->parked;
    pthread_mutex_unlock(&q->lock);
    return n;
}

size_t queue_waiting(struct workqueue *q) {
    pthread_mutex_lock(&q->lock);
    size_t n = q->nheap;
    pthread_mutex_unlock(&q->lock);
    return n;
}
