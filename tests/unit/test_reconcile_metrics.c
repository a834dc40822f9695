/* tests/unit/test_reconcile_metrics.c — the controller's Prometheus exposition
 * (sandbox/io/metrics.c, through sbx_controller_metrics) read as a scraper reads it, while
 * single passes on the fake API server (reconcile_env.h) move a Sandbox from nothing to
 * Running and away: the per-phase counts follow the Sandbox cache, the pod and claim the
 * pass made are counted as creates and as POSTs, the create → Ready histogram gets its
 * sample, and the whole text stays well formed (one TYPE per family before its samples,
 * histogram buckets cumulative up to +Inf = _count, every value a number). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/dynbuf.h"
#include "reconcile_env.h"

/* One scrape, NUL-terminated (NULL on failure); free() it. */
static char *scrape(struct env *e, int is_leader) {
    struct dynbuf b;
    dynbuf_init(&b, 1 << 20);
    char *t = sbx_controller_metrics(e->ctl, is_leader, &b) == 0 ? dynbuf_take(&b) : NULL;
    dynbuf_free(&b);
    return t;
}

/* The value of the sample whose name and labels are exactly `series` ("name{a=\"b\"}" or
 * "name"); NAN when the text has no such line. */
static double sample(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, series, n) && p[n] == ' ') return strtod(p + n + 1, NULL);
    return NAN;
}

/* The value of series in a fresh scrape. */
static double scraped(struct env *e, const char *series) {
    char *t = scrape(e, 1);
    double v = t ? sample(t, series) : NAN;
    free(t);
    return v;
}

/* Scrape until series reads want (at most 10 s: the counts follow the Sandbox informer's
 * handler, which runs on its own thread). 1 when it did. */
static int scrape_until(struct env *e, const char *series, double want) {
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(5))
        if (scraped(e, series) == want) return 1;
    fprintf(stderr, "  %s stayed at %g, not %g\n", series, scraped(e, series), want);
    return 0;
}

#define RUNNING_SESSION "yao_sandbox_sandboxes{phase=\"Running\",lifecycle=\"session\"}"
#define CREATING_SESSION "yao_sandbox_sandboxes{phase=\"Creating\",lifecycle=\"session\"}"
#define CREATES "yao_sandbox_objects_written_total{op=\"create\"}"
#define POSTS_OK "yao_sandbox_api_requests_total{verb=\"POST\",code=\"2xx\"}"
#define READY_COUNT "yao_sandbox_create_ready_duration_seconds_count{lifecycle=\"session\",class=\"\"}"

static double or_zero(double v) { return isnan(v) ? 0 : v; }

TEST(counts_follow_a_sandbox_from_creation_to_deletion) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    double running0 = scraped(e, RUNNING_SESSION), creating0 = scraped(e, CREATING_SESSION);
    double creates0 = scraped(e, CREATES), posts0 = or_zero(scraped(e, POSTS_OK));
    double ready0 = or_zero(scraped(e, READY_COUNT));
    CHECK(running0 == 0 && creating0 == 0);   /* every (phase, lifecycle) is there, at 0 */
    struct names n;
    names_of(&n, "m1", "mia", "c1");
    CHECK_INT(seed_sandbox(e, "m1", "mia", "c1", ",\"lifecycle\":\"session\"", NULL), 0);
    CHECK_INT(pass(e, &n, NULL), 0);   /* the pod and its claim */
    CHECK(stored_exists(e, n.pod) && stored_exists(e, n.pvc));
    CHECK(scrape_until(e, CREATING_SESSION, creating0 + 1));
    CHECK(scraped(e, CREATES) >= creates0 + 2);
    CHECK(scraped(e, POSTS_OK) >= posts0 + 2);
    /* the kubelet and the provisioner: Running and Ready */
    CHECK_INT(claim_bound(e, n.pvc), 0);
    CHECK_INT(pod_running(e, n.pod, 0), 0);
    CHECK_INT(pass(e, &n, NULL), 0);
    char phase[32];
    CHECK_STR(stored_str(e, n.sb, "status.phase", phase, sizeof phase), "Running");
    CHECK(scrape_until(e, RUNNING_SESSION, running0 + 1));
    CHECK_INT((int)scraped(e, CREATING_SESSION), (int)creating0);
    CHECK(scrape_until(e, READY_COUNT, ready0 + 1));
    /* gone from the cache: gone from the counts */
    CHECK_INT(fakeapi_remove(&e->fa, n.sb), 0);
    CHECK(scrape_until(e, RUNNING_SESSION, running0));
}

/* Every sample's family has its TYPE line first (once); histograms' buckets never fall and
 * +Inf equals _count; every value is a number. */
static void check_well_formed(const char *text) {
    char types[128][96];
    int ntypes = 0, lines = 0;
    double last_bucket = -1;
    char bucket_series[256] = "";
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        p += len + (nl ? 1 : 0);
        lines++;
        if (!strncmp(line, "# HELP ", 7)) continue;
        char fam[96], type[32];
        if (sscanf(line, "# TYPE %95s %31s", fam, type) == 2) {
            for (int i = 0; i < ntypes; i++)
                if (!strcmp(types[i], fam)) { fprintf(stderr, "  TYPE twice: %s\n", fam); CHECK(!"one TYPE per family"); }
            CHECK(!strcmp(type, "counter") || !strcmp(type, "gauge") || !strcmp(type, "histogram"));
            if (ntypes < 128) snprintf(types[ntypes++], sizeof types[0], "%s", fam);
            continue;
        }
        CHECK(line[0] != '#' && line[0] != '\0');
        /* name{labels} value */
        const char *sp = strrchr(line, ' ');
        CHECK(sp != NULL);
        if (!sp) continue;
        char *end;
        errno = 0;
        double v = strtod(sp + 1, &end);
        if (*end || errno) fprintf(stderr, "  not a number: %s\n", line);
        CHECK(*end == '\0' && errno == 0);
        size_t nlen = strcspn(line, "{ ");
        char name[96];
        snprintf(name, sizeof name, "%.*s", (int)(nlen < sizeof name ? nlen : sizeof name - 1), line);
        int known = 0;
        for (int i = 0; i < ntypes && !known; i++) {
            size_t fl = strlen(types[i]);
            known = !strcmp(name, types[i]) ||
                    (!strncmp(name, types[i], fl) && (!strcmp(name + fl, "_bucket") || !strcmp(name + fl, "_sum") ||
                                                      !strcmp(name + fl, "_count")));
        }
        if (!known) fprintf(stderr, "  no TYPE before: %s\n", line);
        CHECK(known);
        /* buckets of one series: cumulative, and +Inf then _count the same */
        const char *le = strstr(line, "le=\"");
        if (strstr(name, "_bucket") && le) {
            char series[256];
            snprintf(series, sizeof series, "%.*s", (int)(le - line), line);
            if (strcmp(series, bucket_series)) { snprintf(bucket_series, sizeof bucket_series, "%s", series); last_bucket = -1; }
            CHECK(v >= last_bucket);
            last_bucket = v;
        } else if (strstr(name, "_count") && bucket_series[0]) {
            CHECK(v == last_bucket);
            bucket_series[0] = '\0';
        }
    }
    CHECK(ntypes > 30);
    CHECK(lines > 100);
}

TEST(the_exposition_is_well_formed) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    char *t = scrape(e, 1);
    CHECK(t != NULL);
    if (!t) return;
    check_well_formed(t);
    CHECK(sample(t, "yao_sandbox_leader") == 1);
    CHECK(sample(t, "yao_sandbox_informer_lists_total{resource=\"sandboxes\"}") >= 1);
    CHECK(sample(t, "yao_sandbox_informer_watches_total{resource=\"pods\"}") >= 1);
    CHECK(sample(t, "process_resident_memory_bytes") > 0);
    free(t);
    t = scrape(e, 0);   /* a standby replica says so */
    CHECK(t && sample(t, "yao_sandbox_leader") == 0);
    free(t);
}
