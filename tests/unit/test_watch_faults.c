/* tests/unit/test_watch_faults.c — watches like client-go's (runtime/informer.c,
 * kube/watch.c) against the fake API server (tests/fake/scenarios/watch_faults.json):
 * failed watches (500, a reset mid-stream) are retried from the last resourceVersion with
 * backoff and never force a relist; a watch silent past the stall limit is dropped and
 * resumed from the last resourceVersion (no relist), while bookmarks keep a watch alive
 * past that limit; the first LIST reads the watch cache (resourceVersion=0), a relist
 * after a 410 asks for data not older than the cache (NotOlderThan at the last RV) and
 * falls back to a quorum read when that is refused too. */
#include <pthread.h>

#include "check.h"
#include "../fake/fake.h"
#include "runtime/informer.h"

FAKE_SHARED("watch_faults.json")

struct run {
    struct kube_client *client;
    struct informer *inf;
    char path[128];
};

static void on_change(void *ud, const char *key, const cJSON *old, const cJSON *cur) {}

/* An informer on namespace ns with the given stall limit (s). 0 or -1. */
static int run_start(struct run *r, const char *ns, int stall_s) {
    memset(r, 0, sizeof(*r));
    snprintf(r->path, sizeof r->path, "/api/v1/namespaces/%s/pods", ns);
    if (!up() || !(r->client = fake_client(&fake))) return -1;
    struct informer_options o = {.path = r->path, .on_change = on_change, .watch_stall_s = stall_s};
    r->inf = informer_new(r->client, &o);
    return r->inf && informer_start(r->inf) == 0 ? 0 : -1;
}

static void run_stop(struct run *r) {
    if (r->inf) informer_free(r->inf);
    if (r->client) kube_client_free(r->client);
}

#define WAIT_FOR(cond, ms) do {                                              \
    long long wait_deadline_ = clock_mono_ms() + (ms);                          \
    while (!(cond) && clock_mono_ms() < wait_deadline_) fake_sleep_ms(10);      \
} while (0)

/* The requests for the run's collection: each list's "resourceVersion/match" joined by
 * ',' ("-" when absent), each watch's resourceVersion, and the watches' start times. */
struct seen {
    char lists[256], watch_rvs[256];
    int nlists, nwatches;
    double start[8];
};

static void requests(struct run *r, struct seen *s) {
    const cJSON *e[64];
    cJSON *log = fake_log(&fake);
    int n = fake_requests(log, "GET", r->path, e, 64);
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < n && i < 64; i++) {
        const char *w = fake_query(e[i], "watch"), *rv = fake_query(e[i], "resourceVersion");
        if (!w || strcmp(w, "true") != 0) {
            const char *m = fake_query(e[i], "resourceVersionMatch");
            size_t used = strlen(s->lists);
            snprintf(s->lists + used, sizeof s->lists - used, "%s%s/%s", used ? "," : "", rv ? rv : "-", m ? m : "-");
            s->nlists++;
            continue;
        }
        size_t used = strlen(s->watch_rvs);
        snprintf(s->watch_rvs + used, sizeof s->watch_rvs - used, "%s%s", used ? "," : "", rv ? rv : "?");
        if (s->nwatches < 8) s->start[s->nwatches] = fake_time(e[i], "t");
        s->nwatches++;
    }
    cJSON_Delete(log);
}

static struct informer_stats stats(struct run *r) {
    struct informer_stats s;
    informer_stats(r->inf, &s);
    return s;
}

TEST(failed_watches_resume_without_relisting) {
    struct run r;
    struct seen q;
    if (run_start(&r, "flaky", 90) != 0) { CHECK(!"informer started"); run_stop(&r); return; }
    /* Backoff 0.8 + 1.6 + 3.2 s (+20 % jitter) before the fourth watch. */
    WAIT_FOR(informer_count(r.inf) == 3, 15000);
    CHECK_INT(informer_count(r.inf), 3);
    struct informer_stats s = stats(&r);
    CHECK_INT(s.errors, 3);
    CHECK_INT(s.lists, 1);                       /* was 2: three failures forced a relist */
    requests(&r, &q);
    CHECK_INT(q.nlists, 1);
    CHECK_STR(q.watch_rvs, "7,7,8,8");           /* resumed from the last RV each time */
    run_stop(&r);
}

TEST(stalled_watch_is_dropped_and_resumed_from_its_rv) {
    struct run r;
    struct seen q;
    if (run_start(&r, "quiet", 2) != 0) { CHECK(!"informer started"); run_stop(&r); return; }
    /* (the second watch counts in the stats just before its request reaches the fake) */
    WAIT_FOR((requests(&r, &q), q.nwatches >= 2), 8000);
    struct informer_stats s = stats(&r);
    CHECK(s.stalls >= 1);
    CHECK_INT(s.lists, 1);                       /* a stall is not a reason to relist */
    CHECK(q.nwatches >= 2);
    if (q.nwatches >= 2) {
        CHECK(!strncmp(q.watch_rvs, "20,21", 5));   /* resumed after the last event */
        double gap = q.start[1] - q.start[0];
        fprintf(stderr, "  silent watch replaced after %.2f s (stall limit 2 s)\n", gap);
        CHECK(gap >= 1.9);
        CHECK(gap < 2.0 + 1.0 + 1.0);            /* limit + progress-callback tick + backoff */
    }
    run_stop(&r);
}

TEST(bookmarks_keep_a_watch_alive_past_the_stall_limit) {
    struct run r;
    struct seen q;
    if (run_start(&r, "busy", 1) != 0) { CHECK(!"informer started"); run_stop(&r); return; }
    /* Three bookmarks trickle in over about 3 s (one byte every 15 ms), longer than the
     * 1 s limit; the stream never stops for a whole second until they are through. */
    WAIT_FOR(stats(&r).events >= 3, 8000);
    struct informer_stats s = stats(&r);
    CHECK_INT(s.events, 3);
    requests(&r, &q);
    CHECK_INT(q.nwatches, 1);
    CHECK_INT(s.stalls, 0);
    run_stop(&r);
}

TEST(lists_read_the_watch_cache_and_never_go_back_in_time) {
    struct run r;
    struct seen q;
    if (run_start(&r, "gone", 90) != 0) { CHECK(!"informer started"); run_stop(&r); return; }
    /* (the second watch counts in the stats just before its request reaches the fake) */
    WAIT_FOR(stats(&r).lists >= 3 && informer_count(r.inf) == 1 && (requests(&r, &q), q.nwatches >= 2), 10000);
    cJSON *g3 = informer_get(r.inf, "gone/g3");
    CHECK(g3 != NULL);
    cJSON_Delete(g3);
    CHECK_INT(informer_count(r.inf), 1);         /* g1 and g2 vanished meanwhile */
    requests(&r, &q);
    /* first: the watch cache; after the 410: not older than RV 41; refused: quorum */
    CHECK_STR(q.lists, "0/-,41/NotOlderThan,-/-");
    CHECK_STR(q.watch_rvs, "40,46");
    run_stop(&r);
}
