/* tests/unit/test_queue.c — the work queue (runtime/queue.c): dedup, FIFO order, a key
 * being processed is never handed out twice and comes back once after queue_done,
 * delayed adds (earliest due wins, ordering, saturation of huge delays), per-key failure
 * backoff and forget, shutdown waking blocked workers, and a multi-threaded stress run
 * (10000 keys, concurrent adders, no key held by two workers at once); the per-namespace
 * limit and its spare slots (taken only by a namespace seen quick, also from parked keys),
 * and under random load with that limit every request is served by a later hand-out.
 * Timing checks use CLOCK_MONOTONIC with tight lower and generous upper bounds. */
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "base/clock.h"
#include "runtime/queue.h"

/* ---- helpers -------------------------------------------------------------------------- */

static void sleep_ms(int64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

/* Gets one key, checks it is want, marks it done and frees it. */
static void take(struct workqueue *q, const char *want) {
    char *k = queue_get(q);
    CHECK_STR(k, want);
    if (k) {
        queue_done(q, k);
        free(k);
    }
}

/* Gets one key and returns the ms elapsed since t0 (taken by the caller before the add,
 * so scheduling delays can only lengthen it); the key goes to *out (caller frees, after
 * queue_done). */
static int64_t get_since(struct workqueue *q, int64_t t0, char **out) {
    *out = queue_get(q);
    return clock_mono_ms() - t0;
}

/* ---- basics --------------------------------------------------------------------------- */

TEST(dedup_same_key) {
    struct workqueue *q = queue_new(5, 1000);
    CHECK(q != NULL);
    queue_add(q, "ns/a");
    queue_add(q, "ns/a");
    queue_add(q, "ns/a");
    CHECK_INT(queue_len(q), 1);
    CHECK_INT(queue_waiting(q), 0);
    take(q, "ns/a");
    CHECK_INT(queue_len(q), 0);
    CHECK_INT(queue_waiting(q), 0);
    queue_free(q);
}

TEST(fifo_order) {
    struct workqueue *q = queue_new(5, 1000);
    queue_add(q, "ns/a");
    queue_add(q, "ns/b");
    queue_add(q, "ns/c");
    queue_add(q, "ns/a"); /* already queued: keeps its place */
    queue_add(q, "ns/d");
    CHECK_INT(queue_len(q), 4);
    take(q, "ns/a");
    take(q, "ns/b");
    take(q, "ns/c");
    take(q, "ns/d");
    CHECK_INT(queue_len(q), 0);
    queue_free(q);
}

TEST(fifo_across_ring_growth) {
    struct workqueue *q = queue_new(5, 1000);
    char key[32];
    int bad = 0;
    /* interleave gets and adds so the ring wraps before it grows */
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        queue_add(q, key);
    }
    for (int i = 0; i < 30; i++) {
        char *k = queue_get(q);
        snprintf(key, sizeof(key), "k%d", i);
        if (!k || strcmp(k, key)) bad++;
        queue_done(q, k);
        free(k);
    }
    for (int i = 50; i < 1000; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        queue_add(q, key);
    }
    CHECK_INT(queue_len(q), 970);
    for (int i = 30; i < 1000; i++) {
        char *k = queue_get(q);
        snprintf(key, sizeof(key), "k%d", i);
        if (!k || strcmp(k, key)) bad++;
        queue_done(q, k);
        free(k);
    }
    CHECK_INT(bad, 0);
    CHECK_INT(queue_len(q), 0);
    queue_free(q);
}

TEST(processing_key_is_held_until_done) {
    struct workqueue *q = queue_new(5, 1000);
    queue_add(q, "ns/a");
    char *a = queue_get(q);
    CHECK_STR(a, "ns/a");
    /* re-added (several times) while being processed: not handed out */
    queue_add(q, "ns/a");
    queue_add(q, "ns/a");
    queue_add(q, "ns/a");
    CHECK_INT(queue_len(q), 0);
    queue_add(q, "ns/b");
    CHECK_INT(queue_len(q), 1);
    take(q, "ns/b");
    CHECK_INT(queue_len(q), 0);
    /* done: now it is queued again, once */
    queue_done(q, a);
    free(a);
    CHECK_INT(queue_len(q), 1);
    take(q, "ns/a");
    CHECK_INT(queue_len(q), 0);
    CHECK_INT(queue_waiting(q), 0);
    queue_free(q);
}

TEST(done_without_readd_does_not_requeue) {
    struct workqueue *q = queue_new(5, 1000);
    queue_add(q, "ns/a");
    char *a = queue_get(q);
    queue_done(q, a);
    free(a);
    CHECK_INT(queue_len(q), 0);
    queue_done(q, "ns/never-seen"); /* harmless */
    CHECK_INT(queue_len(q), 0);
    /* after done the key is a normal key again */
    queue_add(q, "ns/a");
    CHECK_INT(queue_len(q), 1);
    take(q, "ns/a");
    queue_free(q);
}

TEST(free_with_pending_keys) {
    struct workqueue *q = queue_new(60000, 120000); /* nothing comes due during the test */
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        queue_add(q, key);
        queue_add_after(q, key, 60000 + i);
        queue_add_rate_limited(q, key);
    }
    char *k = queue_get(q); /* one in processing too */
    CHECK_STR(k, "k0");
    free(k);
    CHECK_INT(queue_len(q), 99);
    CHECK_INT(queue_waiting(q), 100);
    queue_free(q); /* valgrind: nothing leaks */
    queue_free(NULL);
}

/* ---- delays --------------------------------------------------------------------------- */

TEST(add_after_earliest_due_wins) {
    struct workqueue *q = queue_new(5, 1000);
    char *k;
    int64_t t0 = clock_mono_ms();
    queue_add_after(q, "ns/x", 500);
    queue_add_after(q, "ns/x", 50);
    CHECK_INT(queue_waiting(q), 1);
    CHECK_INT(queue_len(q), 0);
    int64_t dt = get_since(q, t0, &k);
    CHECK_STR(k, "ns/x");
    CHECK(dt >= 50);
    CHECK(dt <= 400);
    queue_done(q, k);
    free(k);
    /* the 500 ms entry was replaced, not kept */
    CHECK_INT(queue_waiting(q), 0);
    CHECK_INT(queue_len(q), 0);

    /* the other way round: a later due time does not postpone an earlier one */
    t0 = clock_mono_ms();
    queue_add_after(q, "ns/y", 50);
    queue_add_after(q, "ns/y", 5000);
    CHECK_INT(queue_waiting(q), 1);
    dt = get_since(q, t0, &k);
    CHECK_STR(k, "ns/y");
    CHECK(dt >= 50);
    CHECK(dt <= 400);
    queue_done(q, k);
    free(k);
    CHECK_INT(queue_waiting(q), 0);
    queue_free(q);
}

TEST(add_after_orders_by_due_time) {
    struct workqueue *q = queue_new(5, 1000);
    char *k;
    int64_t t0 = clock_mono_ms();
    queue_add_after(q, "ns/c", 180);
    queue_add_after(q, "ns/a", 60);
    queue_add_after(q, "ns/b", 120);
    CHECK_INT(queue_waiting(q), 3);
    k = queue_get(q);
    CHECK_STR(k, "ns/a");
    CHECK(clock_mono_ms() - t0 >= 55);
    queue_done(q, k);
    free(k);
    k = queue_get(q);
    CHECK_STR(k, "ns/b");
    CHECK(clock_mono_ms() - t0 >= 115);
    queue_done(q, k);
    free(k);
    k = queue_get(q);
    CHECK_STR(k, "ns/c");
    CHECK(clock_mono_ms() - t0 >= 175);
    CHECK(clock_mono_ms() - t0 <= 1500);
    queue_done(q, k);
    free(k);
    CHECK_INT(queue_waiting(q), 0);
    queue_free(q);
}

TEST(add_after_nonpositive_is_now) {
    struct workqueue *q = queue_new(5, 1000);
    queue_add_after(q, "ns/a", 0);
    queue_add_after(q, "ns/b", -5);
    CHECK_INT(queue_len(q), 2);
    CHECK_INT(queue_waiting(q), 0);
    take(q, "ns/a");
    take(q, "ns/b");
    queue_free(q);
}

TEST(delayed_key_already_queued_is_handed_out_once) {
    struct workqueue *q = queue_new(5, 1000);
    queue_add(q, "ns/a");
    queue_add_after(q, "ns/a", 20);
    sleep_ms(40);
    /* the due entry meets the queued one: merged */
    take(q, "ns/a");
    CHECK_INT(queue_len(q), 0);
    CHECK_INT(queue_waiting(q), 0);
    queue_free(q);
}

TEST(delayed_key_due_while_processing_waits_for_done) {
    struct workqueue *q = queue_new(5, 1000);
    queue_add(q, "ns/a");
    char *a = queue_get(q);
    queue_add_after(q, "ns/a", 20); /* the worker asks to look again soon */
    queue_add(q, "ns/b");
    sleep_ms(40);
    take(q, "ns/b"); /* pops the due "ns/a": processing, so only marked */
    CHECK_INT(queue_len(q), 0);
    CHECK_INT(queue_waiting(q), 0);
    queue_done(q, a);
    free(a);
    CHECK_INT(queue_len(q), 1);
    take(q, "ns/a");
    queue_free(q);
}

/* A blocked worker must wake for a newly added earlier due time. */
struct getter { struct workqueue *q; char *key; int64_t returned_at; };

static void *getter_main(void *arg) {
    struct getter *g = arg;
    g->key = queue_get(g->q);
    g->returned_at = clock_mono_ms();
    return NULL;
}

TEST(sleeping_worker_wakes_for_earlier_due) {
    struct workqueue *q = queue_new(5, 1000);
    struct getter g = {q, NULL, 0};
    pthread_t t;
    queue_add_after(q, "ns/late", 5000);
    CHECK_INT(pthread_create(&t, NULL, getter_main, &g), 0);
    sleep_ms(30); /* the worker is now (normally) in a timed wait for "late" */
    int64_t t0 = clock_mono_ms();
    queue_add_after(q, "ns/soon", 50);
    pthread_join(t, NULL);
    CHECK_STR(g.key, "ns/soon");
    CHECK(g.returned_at - t0 >= 49);
    CHECK(g.returned_at - t0 <= 1500);
    CHECK_INT(queue_waiting(q), 1);
    free(g.key);
    queue_free(q);
}

TEST(huge_delay_saturates) {
    struct workqueue *q = queue_new(5, 1000);
    queue_add_after(q, "ns/never", INT64_MAX);
    queue_add_after(q, "ns/never", INT64_MAX - 1);
    CHECK_INT(queue_waiting(q), 1);
    CHECK_INT(queue_len(q), 0);
    /* still ordered before by anything sooner */
    queue_add_after(q, "ns/soon", 10);
    take(q, "ns/soon");
    CHECK_INT(queue_waiting(q), 1);
    /* a worker waiting for it sleeps until shutdown */
    struct getter g = {q, (char *)"unset", 0};
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, getter_main, &g), 0);
    sleep_ms(50);
    int64_t t0 = clock_mono_ms();
    queue_shutdown(q);
    pthread_join(t, NULL);
    CHECK(g.key == NULL);
    CHECK(g.returned_at - t0 <= 5000);
    queue_free(q);
}

/* ---- failures and backoff ------------------------------------------------------------- */

TEST(rate_limited_counts_and_forget_resets) {
    struct workqueue *q = queue_new(5, 1000);
    CHECK_INT(queue_failures(q, "ns/a"), 0);
    queue_add_rate_limited(q, "ns/a");
    queue_add_rate_limited(q, "ns/a");
    queue_add_rate_limited(q, "ns/a");
    queue_add_rate_limited(q, "ns/b");
    CHECK_INT(queue_failures(q, "ns/a"), 3);
    CHECK_INT(queue_failures(q, "ns/b"), 1);
    CHECK_INT(queue_waiting(q), 2); /* one delayed entry per key */
    queue_forget(q, "ns/a");
    CHECK_INT(queue_failures(q, "ns/a"), 0);
    CHECK_INT(queue_failures(q, "ns/b"), 1);
    queue_forget(q, "ns/unknown");
    CHECK_INT(queue_failures(q, "ns/unknown"), 0);
    queue_free(q);
}

TEST(rate_limited_backoff_doubles_and_caps) {
    /* base 100 ms, cap 400 ms: 100, 200, 400, 400, then after forget 100 again. Each
     * delay is pinned between two markers added with delay - 50 and delay + 50, so the
     * order the keys come out in proves the delay whatever the load; elapsed time gives
     * a second, lower-bound check. */
    static const int64_t want[] = {100, 200, 400, 400, 100};
    struct workqueue *q = queue_new(100, 400);
    for (int i = 0; i < 5; i++) {
        if (i == 4) {
            queue_forget(q, "ns/a");
            CHECK_INT(queue_failures(q, "ns/a"), 0);
        }
        int64_t t0 = clock_mono_ms();
        queue_add_after(q, "ns/before", want[i] - 50);
        queue_add_rate_limited(q, "ns/a");
        queue_add_after(q, "ns/after", want[i] + 50);
        CHECK_INT(queue_failures(q, "ns/a"), i < 4 ? i + 1 : 1);
        take(q, "ns/before");
        char *k;
        int64_t dt = get_since(q, t0, &k);
        CHECK_STR(k, "ns/a");
        if (dt < want[i]) {
            fprintf(stderr, "  failure %d: waited %lld ms, want >= %lld\n", i + 1,
                    (long long)dt, (long long)want[i]);
            CHECK(0);
        }
        queue_done(q, k);
        free(k);
        take(q, "ns/after");
    }
    queue_free(q);
}

/* ---- shutdown ------------------------------------------------------------------------- */

TEST(shutdown_wakes_blocked_get) {
    struct workqueue *q = queue_new(5, 1000);
    struct getter g = {q, (char *)"unset", 0};
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, getter_main, &g), 0);
    sleep_ms(50);
    int64_t t0 = clock_mono_ms();
    queue_shutdown(q);
    pthread_join(t, NULL);
    CHECK(g.key == NULL);
    CHECK(g.returned_at - t0 <= 5000);
    /* after shutdown: get returns NULL at once, adds are ignored */
    queue_add(q, "ns/a");
    queue_add_after(q, "ns/b", 10);
    CHECK_INT(queue_len(q), 0);
    CHECK_INT(queue_waiting(q), 0);
    CHECK(queue_get(q) == NULL);
    queue_free(q);
}

TEST(shutdown_wakes_timed_wait_and_all_workers) {
    struct workqueue *q = queue_new(5, 1000);
    struct getter g[3];
    pthread_t t[3];
    queue_add_after(q, "ns/later", 60000);
    for (int i = 0; i < 3; i++) {
        g[i] = (struct getter){q, (char *)"unset", 0};
        CHECK_INT(pthread_create(&t[i], NULL, getter_main, &g[i]), 0);
    }
    sleep_ms(50);
    int64_t t0 = clock_mono_ms();
    queue_shutdown(q);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK(g[i].key == NULL);
        CHECK(g[i].returned_at - t0 <= 5000);
    }
    queue_free(q);
}

/* ---- concurrency ---------------------------------------------------------------------- */

#define NKEYS 10000
#define NWORKERS 4
#define NADDERS 2

struct stress {
    struct workqueue *q;
    pthread_mutex_t lock;
    unsigned char inflight[NKEYS];
    unsigned processed[NKEYS];
    int inflight_now;
    int overlaps, bad_keys;
};

static int key_index(const char *k) {
    int i;
    if (sscanf(k, "ns/key-%d", &i) != 1 || i < 0 || i >= NKEYS) return -1;
    return i;
}

static void *stress_worker(void *arg) {
    struct stress *s = arg;
    char *k;
    while ((k = queue_get(s->q)) != NULL) {
        int i = key_index(k), first = 0;
        pthread_mutex_lock(&s->lock);
        if (i < 0) s->bad_keys++;
        else {
            if (s->inflight[i]) s->overlaps++;
            s->inflight[i] = 1;
            s->inflight_now++;
            first = s->processed[i] == 0;
        }
        pthread_mutex_unlock(&s->lock);
        if (i >= 0 && i % 7 == 0) sched_yield(); /* widen the window for overlaps */
        /* re-add while processing (once, or it would loop forever) */
        if (i >= 0 && i % 97 == 0 && first) {
            queue_add(s->q, k);
            sleep_ms(1); /* a broken queue would hand k to an idle worker now */
        }
        pthread_mutex_lock(&s->lock);
        if (i >= 0) {
            s->inflight[i] = 0;
            s->inflight_now--;
            s->processed[i]++;
        }
        pthread_mutex_unlock(&s->lock);
        queue_done(s->q, k);
        free(k);
    }
    return NULL;
}

struct adder { struct stress *s; int seed; };

static void *stress_adder(void *arg) {
    struct adder *a = arg;
    char key[32];
    unsigned x = (unsigned)a->seed * 2654435761u + 1;
    for (int n = 0; n < NKEYS; n++) {
        /* a permutation of all keys per adder (stride coprime to NKEYS) */
        int i = (int)(((unsigned)n * (a->seed ? 7919u : 1u) + (unsigned)a->seed * 13u) % NKEYS);
        snprintf(key, sizeof(key), "ns/key-%d", i);
        x = x * 1103515245u + 12345u;
        if ((x >> 16) % 10 == 0) queue_add_after(a->s->q, key, 1 + (x >> 20) % 5);
        else queue_add(a->s->q, key);
        if ((x >> 16) % 5 == 0) queue_add(a->s->q, key); /* duplicate add */
    }
    return NULL;
}

TEST(workers_never_share_a_key_and_see_every_key) {
    static struct stress s; /* large: keep off the stack */
    pthread_t w[NWORKERS], ad[NADDERS];
    struct adder args[NADDERS];
    memset(&s, 0, sizeof(s));
    s.q = queue_new(5, 1000);
    pthread_mutex_init(&s.lock, NULL);
    for (int i = 0; i < NWORKERS; i++) CHECK_INT(pthread_create(&w[i], NULL, stress_worker, &s), 0);
    for (int i = 0; i < NADDERS; i++) {
        args[i] = (struct adder){&s, i};
        CHECK_INT(pthread_create(&ad[i], NULL, stress_adder, &args[i]), 0);
    }
    for (int i = 0; i < NADDERS; i++) pthread_join(ad[i], NULL);

    /* wait (up to 120 s, valgrind is slow) until every key was processed and all is idle */
    int64_t deadline = clock_mono_ms() + 120000;
    int missing = NKEYS;
    for (;;) {
        pthread_mutex_lock(&s.lock);
        missing = 0;
        for (int i = 0; i < NKEYS; i++)
            if (!s.processed[i]) missing++;
        int busy = s.inflight_now;
        pthread_mutex_unlock(&s.lock);
        if (!missing && !busy && queue_len(s.q) == 0 && queue_waiting(s.q) == 0) break;
        if (clock_mono_ms() > deadline) break;
        sleep_ms(5);
    }
    queue_shutdown(s.q);
    for (int i = 0; i < NWORKERS; i++) pthread_join(w[i], NULL);

    CHECK_INT(missing, 0);
    CHECK_INT(s.overlaps, 0);
    CHECK_INT(s.bad_keys, 0);
    unsigned long total = 0;
    for (int i = 0; i < NKEYS; i++) total += s.processed[i];
    CHECK(total >= NKEYS);
    /* never more hand-outs than adds: at most 2 per adder per key, plus one re-add */
    CHECK(total <= (unsigned long)NKEYS * (NADDERS * 2 + 2));
    queue_free(s.q);
    pthread_mutex_destroy(&s.lock);
}

/* ---- per-namespace limit ------------------------------------------------------------ */

TEST(namespace_limit_parks_keys_behind_a_busy_namespace) {
    struct workqueue *q = queue_new(5, 1000);
    queue_set_namespace_limit(q, 2, 0);
    queue_add(q, "slow/a");
    queue_add(q, "slow/b");
    queue_add(q, "slow/c");
    queue_add(q, "slow/d");
    queue_add(q, "fast/x");
    char *a = queue_get(q), *b = queue_get(q);
    CHECK_STR(a, "slow/a");
    CHECK_STR(b, "slow/b");
    /* slow has 2 in flight: c and d are parked, x goes first */
    char *x = queue_get(q);
    CHECK_STR(x, "fast/x");
    CHECK_INT(queue_len(q), 2);         /* parked keys are still queued ... */
    queue_add(q, "slow/c");             /* ... and deduplicated */
    CHECK_INT(queue_len(q), 2);
    queue_done(q, x);
    free(x);
    /* one slow key done: the oldest parked one is next, ahead of newer keys */
    queue_add(q, "fast/y");
    queue_done(q, a);
    free(a);
    take(q, "slow/c");                  /* (done at once: d is unparked ahead of y too) */
    take(q, "slow/d");
    take(q, "fast/y");
    queue_done(q, b);
    free(b);
    CHECK_INT(queue_len(q), 0);
    queue_free(q);
}

TEST(namespace_limit_off_by_default) {
    struct workqueue *q = queue_new(5, 1000);
    queue_add(q, "ns/a");
    queue_add(q, "ns/b");
    queue_add(q, "ns/c");
    char *a = queue_get(q), *b = queue_get(q), *c = queue_get(q);
    CHECK_STR(a, "ns/a");
    CHECK_STR(b, "ns/b");
    CHECK_STR(c, "ns/c");
    queue_done(q, a); queue_done(q, b); queue_done(q, c);
    free(a); free(b); free(c);
    queue_free(q);
}

TEST(namespace_limit_free_with_parked_keys) {
    struct workqueue *q = queue_new(5, 1000);
    queue_set_namespace_limit(q, 1, 0);
    for (int i = 0; i < 20; i++) {
        char k[32];
        snprintf(k, sizeof(k), "ns/k%d", i);
        queue_add(q, k);
    }
    char *k0 = queue_get(q);
    CHECK_STR(k0, "ns/k0");
    /* every other key is parked: a get would block; the queue frees them all */
    CHECK_INT(queue_len(q), 19);
    free(k0);
    queue_free(q);
}

struct ns_worker_arg {
    struct workqueue *q;
    pthread_mutex_t *lock;
    int *inflight_slow, *max_slow, *fast_done;
};

static void *ns_worker(void *p) {
    struct ns_worker_arg *a = p;
    char *k;
    while ((k = queue_get(a->q))) {
        int slow = !strncmp(k, "slow/", 5);
        pthread_mutex_lock(a->lock);
        if (slow && ++*a->inflight_slow > *a->max_slow) *a->max_slow = *a->inflight_slow;
        pthread_mutex_unlock(a->lock);
        sleep_ms(slow ? 40 : 1);
        pthread_mutex_lock(a->lock);
        if (slow) --*a->inflight_slow; else ++*a->fast_done;
        pthread_mutex_unlock(a->lock);
        queue_done(a->q, k);
        free(k);
    }
    return NULL;
}

TEST(namespace_limit_holds_under_concurrency) {
    struct workqueue *q = queue_new(5, 1000);
    queue_set_namespace_limit(q, 3, 0);
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    int inflight = 0, max_slow = 0, fast_done = 0;
    struct ns_worker_arg arg = {q, &lock, &inflight, &max_slow, &fast_done};
    pthread_t t[4];
    for (int i = 0; i < 50; i++) {
        char k[32];
        snprintf(k, sizeof(k), "slow/k%d", i);
        queue_add(q, k);
    }
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, ns_worker, &arg);
    int64_t t0 = clock_mono_ms();
    sleep_ms(30);
    for (int i = 0; i < 10; i++) {
        char k[32];
        snprintf(k, sizeof(k), "fast/k%d", i);
        queue_add(q, k);
    }
    /* the fast keys are done long before the 50 slow ones (40 ms each: 670 ms on 3 workers;
     * without the limit the fast ones wait behind them all, 500 ms on 4) */
    for (;;) {
        pthread_mutex_lock(&lock);
        int d = fast_done;
        pthread_mutex_unlock(&lock);
        if (d == 10 || clock_mono_ms() - t0 > 5000) break;
        sleep_ms(1);
    }
    int64_t fast_ms = clock_mono_ms() - t0;
    while (queue_len(q) > 0 && clock_mono_ms() - t0 < 10000) sleep_ms(5);
    sleep_ms(50);
    queue_shutdown(q);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK_INT(fast_done, 10);
    CHECK(fast_ms < 300);
    CHECK(max_slow <= 3);
    queue_free(q);
}

/* ---- spare slots: the reserved worker helps a namespace seen to be quick ------------- */

struct timed_getter { struct workqueue *q; char *key; int returned; };

static void *timed_getter_main(void *arg) {
    struct timed_getter *g = arg;
    g->key = queue_get(g->q);
    __atomic_store_n(&g->returned, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A key got by another thread within ms, or NULL if none came (the queue is then shut
 * down to release that thread: the test's last get). */
static char *get_within(struct workqueue *q, int64_t ms) {
    struct timed_getter g = {q, NULL, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, timed_getter_main, &g) != 0) return NULL;
    int64_t t0 = clock_mono_ms();
    while (!__atomic_load_n(&g.returned, __ATOMIC_ACQUIRE) && clock_mono_ms() - t0 < ms) sleep_ms(2);
    if (!__atomic_load_n(&g.returned, __ATOMIC_ACQUIRE)) queue_shutdown(q);
    pthread_join(t, NULL);
    return g.key;
}

static void done_free(struct workqueue *q, char *k) {
    if (!k) return;
    queue_done(q, k);
    free(k);
}

/* A queue with the namespace limit 2 and one spare slot, keys ns/a, ns/b, ... (n of them)
 * added in that order. */
static struct workqueue *spare_queue(int n) {
    struct workqueue *q = queue_new(5, 1000);
    queue_set_namespace_limit(q, 2, 1);
    for (int i = 0; i < n; i++) {
        char k[8] = "ns/a";
        k[3] = (char)('a' + i);
        queue_add(q, k);
    }
    return q;
}

TEST(spare_slot_goes_to_a_namespace_seen_quick) {
    struct workqueue *q = spare_queue(5);
    char *a = queue_get(q), *b = queue_get(q);
    done_free(q, a);                     /* done at once: the namespace is quick */
    char *c = queue_get(q);
    CHECK_STR(c, "ns/c");
    char *d = get_within(q, 2000);       /* the limit is 2; the spare slot takes d */
    CHECK_STR(d, "ns/d");
    char *e = get_within(q, 300);        /* limit + spare reached: e waits */
    CHECK(e == NULL);
    CHECK_INT(queue_len(q), 1);
    done_free(q, b); done_free(q, c); done_free(q, d);
    free(e);
    queue_free(q);
}

TEST(no_spare_slot_before_a_key_was_done_quickly) {
    struct workqueue *q = spare_queue(3);
    char *a = queue_get(q), *b = queue_get(q);
    char *c = get_within(q, 300);        /* nothing done yet: a burst keeps to the limit */
    CHECK(c == NULL);
    done_free(q, a); done_free(q, b);
    free(c);
    queue_free(q);
}

TEST(no_spare_slot_while_a_key_in_flight_is_slow) {
    struct workqueue *q = spare_queue(4);
    char *a = queue_get(q), *b = queue_get(q);
    done_free(q, a);
    char *c = queue_get(q);
    sleep_ms(1100);                      /* b and c have now been out longer than a second */
    char *d = get_within(q, 300);
    CHECK(d == NULL);
    done_free(q, b); done_free(q, c);
    free(d);
    queue_free(q);
}

TEST(idle_worker_takes_a_parked_key_once_the_namespace_is_quick) {
    struct workqueue *q = spare_queue(4);
    char *a = queue_get(q), *b = queue_get(q);
    /* A worker waits: c and d are parked (the limit, and not seen quick yet). */
    struct timed_getter g = {q, NULL, 0};
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, timed_getter_main, &g), 0);
    sleep_ms(50);
    CHECK_INT(queue_len(q), 2);
    done_free(q, a);                     /* quick: c goes to the waiting worker ... */
    pthread_join(t, NULL);
    CHECK_STR(g.key, "ns/c");
    char *d = get_within(q, 2000);       /* ... and an idle one takes parked d (spare) */
    CHECK_STR(d, "ns/d");
    CHECK_INT(queue_len(q), 0);
    done_free(q, b); done_free(q, g.key); done_free(q, d);
    queue_free(q);
}

/* ---- namespace limit under random load --------------------------------------------------- */

/* Workers hold keys for random times (some longer than a second, so namespaces go slow and
 * quick again), re-add their key now or later while holding it, and an adder adds keys now
 * or after a delay, in three namespaces at the controller's setting (limit workers - 1,
 * one spare). Every request must be followed by a hand-out that starts after it (the
 * controller's requeue contract: a pass after the last add sees the newest state), and no
 * key may be held by two workers at once. */
#define RKEYS 24
#define RWORKERS 4

struct random_load {
    struct workqueue *q;
    pthread_mutex_t lock;
    int64_t requested_us[RKEYS];   /* latest request not yet followed by a hand-out; 0 none */
    unsigned char held[RKEYS];
    int overlaps;
    unsigned long handouts;
};

static void random_key(int i, char *buf, size_t n) { snprintf(buf, n, "ns%d/key-%d", i % 3, i); }

static int random_key_index(const char *k) {
    const char *dash = strrchr(k, '-');
    return dash ? atoi(dash + 1) : -1;
}

/* Record a request for key i and make it (now when delay_ms is 0). */
static void random_request(struct random_load *r, int i, int64_t delay_ms) {
    char key[32];
    random_key(i, key, sizeof(key));
    pthread_mutex_lock(&r->lock);
    r->requested_us[i] = clock_mono_us();
    if (delay_ms > 0) queue_add_after(r->q, key, delay_ms);
    else queue_add(r->q, key);
    pthread_mutex_unlock(&r->lock);
}

struct random_worker { struct random_load *r; unsigned seed; };

static void *random_worker_main(void *arg) {
    struct random_worker *w = arg;
    struct random_load *r = w->r;
    char *k;
    while ((k = queue_get(r->q)) != NULL) {
        int64_t start_us = clock_mono_us();   /* before any request this pass could miss */
        int i = random_key_index(k);
        pthread_mutex_lock(&r->lock);
        if (r->held[i]) r->overlaps++;
        r->held[i] = 1;
        r->handouts++;
        if (r->requested_us[i] && r->requested_us[i] < start_us) r->requested_us[i] = 0;
        pthread_mutex_unlock(&r->lock);
        unsigned x = rand_r(&w->seed) % 100;
        sleep_ms(x < 70 ? rand_r(&w->seed) % 3 : x < 97 ? rand_r(&w->seed) % 60 : 1000 + rand_r(&w->seed) % 300);
        /* A requeue while held: now (marked, pushed by queue_done) or later (the heap). */
        if (rand_r(&w->seed) % 3 == 0) random_request(r, i, rand_r(&w->seed) % 2 ? 0 : rand_r(&w->seed) % 200);
        pthread_mutex_lock(&r->lock);
        r->held[i] = 0;
        pthread_mutex_unlock(&r->lock);
        queue_done(r->q, k);
        free(k);
    }
    return NULL;
}

TEST(namespace_limit_under_random_load_serves_every_request_after_it) {
    static struct random_load r;
    memset(&r, 0, sizeof(r));
    pthread_mutex_init(&r.lock, NULL);
    r.q = queue_new(5, 1000);
    queue_set_namespace_limit(r.q, RWORKERS - 1, 1);
    pthread_t t[RWORKERS];
    struct random_worker w[RWORKERS];
    for (int i = 0; i < RWORKERS; i++) {
        w[i] = (struct random_worker){&r, 17u * (unsigned)i + 1};
        CHECK_INT(pthread_create(&t[i], NULL, random_worker_main, &w[i]), 0);
    }
    unsigned seed = 12345;
    int64_t end = clock_mono_ms() + 2000;
    while (clock_mono_ms() < end) {
        int i = (int)(rand_r(&seed) % RKEYS);
        random_request(&r, i, rand_r(&seed) % 4 == 0 ? 0 : rand_r(&seed) % 400);
        sleep_ms(rand_r(&seed) % 3);
    }
    /* Drained: no request left unserved (up to 60 s, valgrind is slow). */
    int64_t deadline = clock_mono_ms() + 60000;
    int unserved;
    for (;;) {
        unserved = 0;
        pthread_mutex_lock(&r.lock);
        for (int i = 0; i < RKEYS; i++)
            if (r.requested_us[i]) unserved++;
        pthread_mutex_unlock(&r.lock);
        if (!unserved || clock_mono_ms() > deadline) break;
        sleep_ms(20);
    }
    queue_shutdown(r.q);
    for (int i = 0; i < RWORKERS; i++) pthread_join(t[i], NULL);
    CHECK_INT(unserved, 0);
    CHECK_INT(r.overlaps, 0);
    CHECK(r.handouts > 100);
    queue_free(r.q);
    pthread_mutex_destroy(&r.lock);
}
