/* tests/unit/test_events.c — the Event recorder (kube/events.c). The pure parts: Event
 * names (valid DNS subdomains of at most 253 characters for any object name), aggregation
 * keys, the token bucket. Then against the fake API server (scenario bounded_io.json):
 * 100 repeats make one Event whose count is 100; repeats spread out are rate-limited at
 * the burst; a slow Events endpoint never slows the caller, and the bounded queue drops
 * the oldest; an Event that went away is created again; flush and free are bounded. */
#include <pthread.h>

#include "check.h"
#include "../fake/fake.h"
#include "kube/events.h"
#include "sandbox/model/naming.h"

#define K FAKE_K

FAKE_SHARED("bounded_io.json")

/* ---- pure parts ---- */

TEST(name_of_a_short_object) {
    char out[KUBE_EVENT_NAME_MAX + 1];
    CHECK_INT(kube_event_name("alice-chat42", 0x1234, out, sizeof(out)), 0);
    CHECK_STR(out, "alice-chat42.0000000000001234");
    CHECK(sbx_is_dns_subdomain(out));
    CHECK_INT(kube_event_name("x", 1, out, 100), -1);   /* a buffer too small is refused */
}

TEST(name_of_a_long_object_fits_and_is_valid) {
    char name[400], out[KUBE_EVENT_NAME_MAX + 1];
    memset(name, 'a', 300);
    name[300] = 0;
    CHECK_INT(kube_event_name(name, UINT64_MAX, out, sizeof(out)), 0);
    CHECK_INT(strlen(out), 253);
    CHECK(sbx_is_dns_subdomain(out));
    CHECK(strcmp(out + 236, ".ffffffffffffffff") == 0);
    /* the cut lands on a '-' (a label may not end with one): it goes */
    memset(name, 'b', 235);
    name[235] = '-';
    memset(name + 236, 'c', 50);
    name[286] = 0;
    CHECK_INT(kube_event_name(name, 7, out, sizeof(out)), 0);
    CHECK(sbx_is_dns_subdomain(out));
    CHECK_INT(strlen(out), 235 + 17);
    /* a 253-character subdomain with dots, cut after a dot */
    for (int i = 0; i < 253; i++) name[i] = (i % 8 == 7) ? '.' : 'd';
    name[253] = 0;
    CHECK_INT(kube_event_name(name, 7, out, sizeof(out)), 0);
    CHECK(sbx_is_dns_subdomain(out));
    CHECK(strlen(out) <= 253);
}

TEST(name_of_odd_objects_is_valid) {
    const char *odd[] = {"", "-", ".", "..a..", "UPPER", "a_b c", "-x-", "ü", "a.-b", "a-.b", "x."};
    char out[KUBE_EVENT_NAME_MAX + 1];
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        CHECK_INT(kube_event_name(odd[i], 42, out, sizeof(out)), 0);
        if (!sbx_is_dns_subdomain(out)) fprintf(stderr, "  invalid: \"%s\" -> \"%s\"\n", odd[i], out);
        CHECK(sbx_is_dns_subdomain(out));
    }
    CHECK_INT(kube_event_name("UPPER", 42, out, sizeof(out)), 0);
    CHECK_STR(out, "upper.000000000000002a");
    /* random names of every length up to 400 from a hostile alphabet */
    static const char alpha[] = "ab09-._XY\x01\xc3";
    unsigned seed = 12345;
    int bad = 0;
    for (int n = 0; n < 3000; n++) {
        char name[401];
        int len = (int)(rand_r(&seed) % 401);
        for (int i = 0; i < len; i++) name[i] = alpha[rand_r(&seed) % (sizeof(alpha) - 1)];
        name[len] = 0;
        if (kube_event_name(name, (uint64_t)n, out, sizeof(out)) != 0 || !sbx_is_dns_subdomain(out)) bad++;
    }
    CHECK_INT(bad, 0);
}

TEST(subdomain_check) {
    CHECK(sbx_is_dns_subdomain("a.b-c.d"));
    CHECK(!sbx_is_dns_subdomain(""));
    CHECK(!sbx_is_dns_subdomain("a..b"));
    CHECK(!sbx_is_dns_subdomain("a-.b"));
    CHECK(!sbx_is_dns_subdomain("-a"));
    CHECK(!sbx_is_dns_subdomain("a."));
    CHECK(!sbx_is_dns_subdomain("A"));
    char long_name[300];
    memset(long_name, 'a', 254);
    long_name[254] = 0;
    CHECK(!sbx_is_dns_subdomain(long_name));
    long_name[253] = 0;
    CHECK(sbx_is_dns_subdomain(long_name));
}

TEST(aggregation_keys) {
    struct kube_object_ref a = {"v1", "Sandbox", "ns", "n", "uid-1"}, b = a;
    char *k1 = kube_event_key(&a, "Warning", "CapacityExceeded", "msg");
    char *k2 = kube_event_key(&b, "Warning", "CapacityExceeded", "msg");
    CHECK_STR(k1, k2);
    char *k3 = kube_event_key(&a, "Normal", "CapacityExceeded", "msg");
    char *k4 = kube_event_key(&a, "Warning", "Started", "msg");
    char *k5 = kube_event_key(&a, "Warning", "CapacityExceeded", "msg2");
    b.uid = "uid-2";                   /* a same-named successor is another object */
    char *k6 = kube_event_key(&b, "Warning", "CapacityExceeded", "msg");
    /* the parts cannot run into each other */
    char *k7 = kube_event_key(&a, "Warning", "Capacity", "Exceededmsg");
    CHECK(strcmp(k1, k3) && strcmp(k1, k4) && strcmp(k1, k5) && strcmp(k1, k6) && strcmp(k1, k7));
    char *o1 = kube_event_object_key(&a), *o2 = kube_event_object_key(&b);
    CHECK(strcmp(o1, o2) != 0);
    free(k1); free(k2); free(k3); free(k4); free(k5); free(k6); free(k7); free(o1); free(o2);
}

TEST(token_bucket) {
    struct kube_token_bucket b = {0};
    int taken = 0;
    for (int i = 0; i < 30; i++) taken += kube_bucket_take(&b, 25, 300000, 1000);
    CHECK_INT(taken, 25);                                   /* the burst */
    CHECK_INT(kube_bucket_take(&b, 25, 300000, 1000 + 299999), 0);
    CHECK_INT(kube_bucket_take(&b, 25, 300000, 1000 + 300000), 1);   /* one per 5 min */
    CHECK_INT(kube_bucket_take(&b, 25, 300000, 1000 + 300001), 0);
    taken = 0;                                              /* never more than the burst */
    for (int i = 0; i < 40; i++) taken += kube_bucket_take(&b, 25, 300000, 1000LL + 86400000LL * 10);
    CHECK_INT(taken, 25);
}

/* ---- against the fake ---- */

/* A recorder on a fresh client to the fake. */
static struct kube_recorder *recorder(size_t queue_max) {
    struct kube_client *c = up() ? fake_client(&fake) : NULL;
    if (!c) return NULL;
    kube_client_set_retries(c, 1);
    struct kube_recorder_options o = {.component = "test", .queue_max = queue_max};
    return kube_recorder_new(c, &o);
}

/* Requests to the Events of ns: POSTs, PATCHes; *last_count = the count in the last one. */
static void events_seen(const char *ns, int *posts, int *patches, double *last_count, char *post_name, size_t nlen) {
    cJSON *log = fake_log(&fake);
    char coll[128];
    snprintf(coll, sizeof(coll), "/api/v1/namespaces/%s/events", ns);
    *posts = *patches = 0;
    *last_count = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, log) {
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(e, "method"));
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(e, "path"));
        if (!m || !p || strncmp(p, coll, strlen(coll)) != 0) continue;
        cJSON *body = cJSON_Parse(cJSON_GetStringValue(cJSON_GetObjectItem(e, "body")));
        const cJSON *cnt = cJSON_GetObjectItem(body, "count");
        if (cJSON_IsNumber(cnt)) *last_count = cnt->valuedouble;
        if (!strcmp(m, "POST")) {
            (*posts)++;
            const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"), "name"));
            if (post_name && name) snprintf(post_name, nlen, "%s", name);
        } else if (!strcmp(m, "PATCH")) {
            (*patches)++;
        }
        cJSON_Delete(body);
    }
    cJSON_Delete(log);
}

TEST(hundred_repeats_make_one_event_with_count_100) {
    struct kube_recorder *r = recorder(0);
    if (!r) { CHECK(r != NULL); return; }
    struct kube_object_ref obj = {"sandbox.yaoapps.com/v1alpha1", "Sandbox", "t", "hundred", "uid-hundred"};
    for (int i = 0; i < 100; i++) kube_recorder_event(r, &obj, "Warning", "CapacityExceeded", "over the cap");
    CHECK_INT(kube_recorder_flush(r, 5000), 0);
    int posts, patches;
    double last;
    events_seen("t", &posts, &patches, &last, NULL, 0);
    struct kube_recorder_stats s;
    kube_recorder_stats(r, &s);
    CHECK_INT(posts, 1);
    CHECK(last == 100);                        /* every occurrence counted */
    CHECK(posts + patches <= 25);              /* far fewer writes than occurrences */
    CHECK_INT(s.recorded, 100);
    CHECK_INT(s.created, 1);
    CHECK_INT(s.aggregated, 99);
    CHECK_INT(s.dropped_queue + s.dropped_rate + s.failed, 0);
    CHECK_INT(s.writes, posts + patches);
    fprintf(stderr, "  100 repeats: %d POST, %d PATCH, count %.0f\n", posts, patches, last);
    kube_recorder_free(r);
}

TEST(repeats_one_by_one_are_rate_limited_at_the_burst) {
    struct kube_recorder *r = recorder(0);
    if (!r) { CHECK(r != NULL); return; }
    /* another object in the same namespace: its own key and bucket */
    struct kube_object_ref obj = {"sandbox.yaoapps.com/v1alpha1", "Sandbox", "t", "spaced", "uid-spaced"};
    int posts0, patches0;
    double last;
    events_seen("t", &posts0, &patches0, &last, NULL, 0);
    for (int i = 0; i < 40; i++) {
        kube_recorder_event(r, &obj, "Normal", "Started", "pod is running");
        kube_recorder_flush(r, 5000);           /* each repeat its own write */
    }
    int posts, patches;
    events_seen("t", &posts, &patches, &last, NULL, 0);
    struct kube_recorder_stats s;
    kube_recorder_stats(r, &s);
    CHECK_INT(posts - posts0, 1);
    CHECK_INT(patches - patches0, 24);         /* 25 writes: the burst */
    CHECK(last == 25);
    CHECK_INT(s.dropped_rate, 15);
    CHECK_INT(s.created + s.aggregated, 25);
    kube_recorder_free(r);
}

TEST(slow_events_endpoint_never_slows_the_caller) {
    struct kube_recorder *r = recorder(10);
    if (!r) { CHECK(r != NULL); return; }
    struct kube_object_ref obj = {"sandbox.yaoapps.com/v1alpha1", "Sandbox", "slow", "s", "uid-slow"};
    long long worst = 0, t0 = clock_mono_ms();
    for (int i = 0; i < 50; i++) {
        char msg[64];
        snprintf(msg, sizeof(msg), "distinct message %d", i);
        long long a = clock_mono_ms();
        kube_recorder_event(r, &obj, "Warning", "Slow", msg);
        long long took = clock_mono_ms() - a;
        if (took > worst) worst = took;
    }
    long long all = clock_mono_ms() - t0;
    fprintf(stderr, "  50 events against a 2 s endpoint: %lld ms in all, slowest call %lld ms\n", all, worst);
    CHECK(all < 200 * K);                      /* the endpoint takes 2 s per Event */
    struct kube_recorder_stats s;
    kube_recorder_stats(r, &s);
    CHECK(s.pending <= 10);                    /* bounded queue ... */
    CHECK(s.dropped_queue >= 39);              /* ... the oldest dropped, counted */
    /* a flush is bounded by its deadline */
    long long f0 = clock_mono_ms();
    CHECK_INT(kube_recorder_flush(r, 300), -1);
    long long flushed = clock_mono_ms() - f0;
    CHECK(flushed >= 250 && flushed < 1500 * K);
    /* free abandons the POST in flight at once */
    f0 = clock_mono_ms();
    kube_recorder_free(r);
    long long freed = clock_mono_ms() - f0;
    fprintf(stderr, "  flush(300 ms) took %lld ms, free %lld ms\n", flushed, freed);
    CHECK(freed < 500 * K);
}

TEST(long_object_name_gives_a_valid_event_name) {
    struct kube_recorder *r = recorder(0);
    if (!r) { CHECK(r != NULL); return; }
    char name[254];
    memset(name, 'l', 253);
    name[120] = '.';
    name[253] = 0;
    struct kube_object_ref obj = {"sandbox.yaoapps.com/v1alpha1", "Sandbox", "t", name, "uid-long"};
    kube_recorder_event(r, &obj, "Normal", "Started", "long");
    CHECK_INT(kube_recorder_flush(r, 5000), 0);
    int posts, patches;
    double last;
    char ev[512] = "";
    events_seen("t", &posts, &patches, &last, ev, sizeof(ev));
    CHECK(strlen(ev) <= 253 && strlen(ev) > 17);
    CHECK(sbx_is_dns_subdomain(ev));
    CHECK(strncmp(ev, name, 100) == 0);
    struct kube_recorder_stats s;
    kube_recorder_stats(r, &s);
    CHECK_INT(s.created, 1);
    kube_recorder_free(r);
}

TEST(event_gone_is_created_again) {
    struct kube_recorder *r = recorder(0);
    if (!r) { CHECK(r != NULL); return; }
    struct kube_object_ref obj = {"sandbox.yaoapps.com/v1alpha1", "Sandbox", "gone", "g", "uid-g"};
    kube_recorder_event(r, &obj, "Normal", "Started", "again");
    CHECK_INT(kube_recorder_flush(r, 5000), 0);
    kube_recorder_event(r, &obj, "Normal", "Started", "again");
    CHECK_INT(kube_recorder_flush(r, 5000), 0);
    int posts, patches;
    double last;
    events_seen("gone", &posts, &patches, &last, NULL, 0);
    CHECK_INT(posts, 2);
    CHECK_INT(patches, 1);
    struct kube_recorder_stats s;
    kube_recorder_stats(r, &s);
    CHECK_INT(s.created, 2);
    CHECK_INT(s.failed, 0);
    kube_recorder_free(r);
}

/* Many threads record at once: every occurrence is accounted for. */
struct burst_arg { struct kube_recorder *r; int id; };

static void *burst(void *p) {
    struct burst_arg *a = p;
    struct kube_object_ref obj = {"v1", "Sandbox", "t", "threads", "uid-threads"};
    for (int i = 0; i < 200; i++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "m%d", i % 5);
        kube_recorder_event(a->r, &obj, "Normal", "Burst", msg);
    }
    return NULL;
}

TEST(concurrent_recording_accounts_for_every_occurrence) {
    struct kube_recorder *r = recorder(0);
    if (!r) { CHECK(r != NULL); return; }
    pthread_t t[4];
    struct burst_arg a[4];
    for (int i = 0; i < 4; i++) { a[i] = (struct burst_arg){r, i}; pthread_create(&t[i], NULL, burst, &a[i]); }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK_INT(kube_recorder_flush(r, 10000), 0);
    struct kube_recorder_stats s;
    kube_recorder_stats(r, &s);
    CHECK_INT(s.recorded, 800);
    CHECK_INT(s.created + s.aggregated + s.dropped_queue + s.dropped_rate + s.failed, 800);
    CHECK(s.created >= 1 && s.created <= 5); /* five distinct messages (a first one may meet an empty bucket) */
    kube_recorder_free(r);
}
