/* tests/unit/test_rest_cancel.c — bounded, cancellable requests (kube/rest.c) against the
 * fake API server (scenario bounded_io.json): kube_client_cancel ends a request within
 * about 100 ms whether it waits for an answer (a 10 s stall), for a Retry-After of 30 s,
 * or in the client's own back-off; a cancelled client makes no request at all; the
 * client's deadline bounds a whole request, retries and waits included; a silent watch
 * ends within about 100 ms of its stop flag and kube_client_wake (curl's own loop took up
 * to a second). The cancel comes once the fake has seen the request(s), so only the
 * cancel's own latency is measured. */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "../fake/fake.h"
#include "kube/watch.h"

#define K FAKE_K

FAKE_SHARED("bounded_io.json")

struct call {
    struct kube_client *c;
    const char *path;
    long status;
    struct kube_error err;
    long long ended_ms;
};

static void *do_get(void *p) {
    struct call *k = p;
    k->status = kube_get(k->c, k->path, NULL, &k->err);
    k->ended_ms = clock_mono_ms();
    return NULL;
}

/* Requests the fake saw for path. */
static int seen(const char *path) {
    const cJSON *e[1];
    cJSON *log = fake_log(&fake);
    int n = fake_requests(log, "GET", path, e, 1);
    cJSON_Delete(log);
    return n;
}

/* Start a GET of path on a fresh client; once the fake has seen `requests` more of them,
 * wait wait_ms, cancel, and return how long the call went on after the cancel (ms); -1
 * when the client could not be made. */
static long long cancel_after(const char *path, int requests, long wait_ms, struct call *k) {
    memset(k, 0, sizeof(*k));
    k->c = up() ? fake_client(&fake) : NULL;
    if (!k->c) return -1;
    k->path = path;
    int before = seen(path);
    pthread_t t;
    pthread_create(&t, NULL, do_get, k);
    for (long long until = clock_mono_ms() + 20000; seen(path) < before + requests && clock_mono_ms() < until;)
        fake_sleep_ms(10);
    fake_sleep_ms(wait_ms);
    long long cancelled = clock_mono_ms();
    kube_client_cancel(k->c);
    pthread_join(t, NULL);
    long long after = k->ended_ms - cancelled;
    kube_client_free(k->c);
    return after;
}

TEST(cancel_ends_a_stalled_request) {
    struct call k;
    long long after = cancel_after("/api/v1/namespaces/t/pods/stall", 1, 300, &k);
    CHECK(after >= 0);
    fprintf(stderr, "  stalled GET returned %lld ms after the cancel\n", after);
    CHECK(after < 100 * K);
    CHECK_INT(k.status, -1);
    CHECK(strstr(k.err.message, KUBE_CANCELLED_MSG) != NULL);
}

TEST(cancel_ends_a_retry_after_wait) {
    struct call k;
    long long after = cancel_after("/api/v1/namespaces/t/pods/throttled", 1, 300, &k);
    CHECK(after >= 0);
    fprintf(stderr, "  Retry-After: 30 wait returned %lld ms after the cancel\n", after);
    CHECK(after < 100 * K);
    CHECK_INT(k.status, 429);       /* the last answer stands */
}

TEST(cancel_ends_a_backoff_sleep) {
    struct call k;
    /* 503 without Retry-After: 200, 400, 800 ms ... of the client's own back-off */
    long long after = cancel_after("/api/v1/namespaces/t/pods/unavailable", 2, 100, &k);
    CHECK(after >= 0);
    fprintf(stderr, "  back-off returned %lld ms after the cancel\n", after);
    CHECK(after < 100 * K);
    CHECK_INT(k.status, 503);
}

TEST(cancelled_client_sends_nothing) {
    struct kube_client *c = up() ? fake_client(&fake) : NULL;
    if (!c) { CHECK(c != NULL); return; }
    kube_client_cancel(c);
    CHECK(kube_client_cancelled(c));
    struct kube_error kerr = {0};
    const cJSON *e[8];
    cJSON *before = fake_log(&fake);
    int n0 = fake_requests(before, NULL, "/api/v1/namespaces/fast/configmaps/x", e, 8);
    cJSON_Delete(before);
    long long t0 = clock_mono_ms();
    CHECK_INT(kube_get(c, "/api/v1/namespaces/fast/configmaps/x", NULL, &kerr), -1);
    CHECK(clock_mono_ms() - t0 < 50 * K);
    CHECK(strstr(kerr.message, KUBE_CANCELLED_MSG) != NULL);
    CHECK_INT(kerr.reason, KUBE_REASON_TRANSPORT);
    cJSON *after = fake_log(&fake);
    CHECK_INT(fake_requests(after, NULL, "/api/v1/namespaces/fast/configmaps/x", e, 8), n0);
    cJSON_Delete(after);
    kube_client_free(c);
}

TEST(deadline_bounds_retries_and_waits) {
    struct kube_client *c = up() ? fake_client(&fake) : NULL;
    if (!c) { CHECK(c != NULL); return; }
    struct kube_error kerr = {0};
    kube_client_set_deadline(c, 1000);
    /* Retry-After: 30 would be waited for (5 attempts: 2 min); the deadline forbids it */
    long long t0 = clock_mono_ms();
    CHECK_INT(kube_get(c, "/api/v1/namespaces/t/pods/throttled", NULL, &kerr), 429);
    long long took = clock_mono_ms() - t0;
    fprintf(stderr, "  429 + Retry-After: 30 with a 1 s deadline: %lld ms\n", took);
    CHECK(took < 1000);   /* (the deadline itself, also under valgrind) */
    /* a stall of 10 s: the attempt's timeout is cut to the deadline */
    t0 = clock_mono_ms();
    CHECK_INT(kube_get(c, "/api/v1/namespaces/t/pods/stall", NULL, &kerr), -1);
    took = clock_mono_ms() - t0;
    fprintf(stderr, "  10 s stall with a 1 s deadline: %lld ms\n", took);
    CHECK(took >= 900 && took < 1500 * K);
    /* back-off: 503s retried while the deadline allows, never past it */
    t0 = clock_mono_ms();
    CHECK_INT(kube_get(c, "/api/v1/namespaces/t/pods/unavailable", NULL, &kerr), 503);
    took = clock_mono_ms() - t0;
    CHECK(took < 1200 * K);
    kube_client_free(c);
}

TEST(connections_are_reused_after_the_change) {
    /* The transfer loop is ours now (multi handle per pooled connection): many calls in a
     * row still work and answer promptly. */
    struct kube_client *c = up() ? fake_client(&fake) : NULL;
    if (!c) { CHECK(c != NULL); return; }
    struct kube_error kerr = {0};
    long long t0 = clock_mono_ms();
    int ok = 0;
    for (int i = 0; i < 50; i++) ok += kube_get(c, "/api/v1/namespaces/fast/configmaps/x", NULL, &kerr) == 200;
    CHECK_INT(ok, 50);
    fprintf(stderr, "  50 GETs: %lld ms\n", clock_mono_ms() - t0);
    kube_client_free(c);
}

struct watch_call {
    struct kube_client *c;
    atomic_int stop;
    enum kube_watch_end end;
    long long ended_ms;
};

static int ignore_event(void *ud, const char *type, cJSON *obj, cJSON *event) { return 0; }

static void *do_watch(void *p) {
    struct watch_call *w = p;
    char err[KUBE_ERR_MAX];
    w->end = kube_watch(w->c, "/api/v1/namespaces/t/configmaps?watch=true", ignore_event, NULL, &w->stop, 0,
                        err, sizeof(err));
    w->ended_ms = clock_mono_ms();
    return NULL;
}

TEST(stop_flag_ends_a_silent_watch) {
    struct watch_call w = {.c = up() ? fake_client(&fake) : NULL};
    if (!w.c) { CHECK(w.c != NULL); return; }
    int before = seen("/api/v1/namespaces/t/configmaps");
    pthread_t t;
    pthread_create(&t, NULL, do_watch, &w);
    for (long long until = clock_mono_ms() + 20000; seen("/api/v1/namespaces/t/configmaps") <= before && clock_mono_ms() < until;)
        fake_sleep_ms(10);
    fake_sleep_ms(300);
    long long t0 = clock_mono_ms();
    atomic_store(&w.stop, 1);
    kube_client_wake(w.c);
    pthread_join(t, NULL);
    long long after = w.ended_ms - t0;
    fprintf(stderr, "  silent watch returned %lld ms after its stop flag\n", after);
    CHECK(after < 100 * K);
    CHECK_INT(w.end, KUBE_WATCH_STOPPED);
    kube_client_free(w.c);
}
