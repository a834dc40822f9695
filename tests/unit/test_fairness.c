/* tests/unit/test_fairness.c — one slow namespace cannot hold every worker. Four workers
 * take keys "ns/name" from the work queue with the controller's namespace limit
 * (workers - 1) and GET a per-namespace path on the fake API server (bounded_io.json):
 * namespace "slow" stalls every request 5 s, "fast" answers at once. Eight slow keys are
 * queued first, then five fast ones: the fast ones are done within a second, not after
 * the stalls. Then shutdown with the stop flag: the workers stuck in 5 s requests return
 * at once. Without the limit every worker sits in a slow request. */
#include <pthread.h>

#include "check.h"
#include "../fake/fake.h"
#include "runtime/queue.h"

#define K FAKE_K

#define WORKERS 4

static struct fake fake;

struct shared {
    struct workqueue *q;
    struct kube_client *c;
    pthread_mutex_t lock;
    int fast_done, slow_done;
    long long last_fast_ms;
};

static void *worker(void *p) {
    struct shared *s = p;
    char *key;
    while ((key = queue_get(s->q))) {
        char path[256];
        struct kube_error err;
        const char *slash = strchr(key, '/');
        snprintf(path, sizeof(path), "/api/v1/namespaces/%.*s/configmaps/x", (int)(slash - key), key);
        long st = kube_get(s->c, path, NULL, &err);
        pthread_mutex_lock(&s->lock);
        if (!strncmp(key, "fast/", 5)) {
            if (st == 200) s->fast_done++;
            s->last_fast_ms = clock_mono_ms();
        } else {
            s->slow_done++;
        }
        pthread_mutex_unlock(&s->lock);
        queue_done(s->q, key);
        free(key);
    }
    return NULL;
}

TEST(slow_namespace_does_not_hold_every_worker) {
    if (fake_start(&fake, "bounded_io.json") != 0) { CHECK(0); return; }
    struct shared s = {.q = queue_new(5, 1000), .c = fake_client(&fake)};
    pthread_mutex_init(&s.lock, NULL);
    if (!s.q || !s.c) { CHECK(0); fake_stop(&fake); return; }
    queue_set_namespace_limit(s.q, WORKERS - 1, 1);   /* what sbx_controller_new sets */
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, &s);
    for (int i = 0; i < 8; i++) {
        char k[32];
        snprintf(k, sizeof(k), "slow/sb%d", i);
        queue_add(s.q, k);
    }
    fake_sleep_ms(200);                             /* the slow requests are on the wire */
    long long t0 = clock_mono_ms();
    for (int i = 0; i < 5; i++) {
        char k[32];
        snprintf(k, sizeof(k), "fast/sb%d", i);
        queue_add(s.q, k);
    }
    for (;;) {
        pthread_mutex_lock(&s.lock);
        int d = s.fast_done;
        pthread_mutex_unlock(&s.lock);
        if (d == 5 || clock_mono_ms() - t0 > 15000) break;
        fake_sleep_ms(5);
    }
    pthread_mutex_lock(&s.lock);
    long long fast_ms = s.last_fast_ms - t0;
    int fast = s.fast_done, slow = s.slow_done;
    pthread_mutex_unlock(&s.lock);
    fprintf(stderr, "  5 fast keys done %lld ms after they were queued; slow done so far: %d\n", fast_ms, slow);
    CHECK_INT(fast, 5);
    CHECK(fast_ms < (RUNNING_ON_VALGRIND ? 3000 : 1000));  /* not behind a 5 s stall */
    CHECK_INT(slow, 0);

    /* Shutdown: the stop flag ends the 5 s requests in flight at once. */
    long long s0 = clock_mono_ms();
    queue_shutdown(s.q);
    kube_client_cancel(s.c);
    for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
    long long stop_ms = clock_mono_ms() - s0;
    fprintf(stderr, "  workers stopped %lld ms after the cancel\n", stop_ms);
    CHECK(stop_ms < 200 * K);
    kube_client_free(s.c);
    queue_free(s.q);
    pthread_mutex_destroy(&s.lock);
    fake_stop(&fake);
}
