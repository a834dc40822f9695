/* tests/unit/test_starts.c — the create → Ready and wake histograms (sandbox/model/starts.c): a
 * create is timed from first sight (or its creationTimestamp when made while no controller
 * ran), a wake from leaving Stopped, each once, by lifecycle and class; a pod replaced under
 * a Running Sandbox, a start under way at a restart, a deletion, a finished one-shot and a
 * stop before Ready time nothing; class labels are bounded; the exposition parses. */
#include "check.h"

#include <stdio.h>
#include <string.h>

#include "base/dynbuf.h"
#include "kube/kjson.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/starts.h"

#define T0 1000000   /* monotonic ms */
#define WALL 1780000000000LL   /* 2026-05-28T20:26:40Z */

/* A Sandbox of uid/lifecycle/class in phase (NULL: none), Ready as given, created at created. */
static cJSON *sb(const char *uid, const char *lifecycle, const char *class_name, const char *phase, int ready,
                 const char *created) {
    char js[1024];
    snprintf(js, sizeof js,
             "{\"metadata\":{\"uid\":\"%s\",\"creationTimestamp\":\"%s\"},\"spec\":{\"lifecycle\":\"%s\"%s%s%s},"
             "\"status\":{%s%s%s\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             uid, created ? created : "2026-05-28T20:26:40Z", lifecycle, class_name ? ",\"className\":\"" : "",
             class_name ? class_name : "", class_name ? "\"" : "", phase ? "\"phase\":\"" : "", phase ? phase : "",
             phase ? "\"," : "", ready ? "True" : "False");
    cJSON *o = cJSON_Parse(js);
    if (!o) { fprintf(stderr, "bad fixture %s\n", js); abort(); }
    return o;
}

static char *render(struct sbx_starts *s) {
    static char text[1 << 20];
    struct dynbuf b;
    dynbuf_init(&b, 1 << 20);
    CHECK_INT(sbx_starts_render(s, &b), 0);
    snprintf(text, sizeof text, "%s", b.data ? b.data : "");
    dynbuf_free(&b);
    return text;
}

/* The value of the exposition line starting with prefix (-1 when absent). */
static double value_of(const char *text, const char *prefix) {
    const char *p = text;
    size_t n = strlen(prefix);
    while (p && *p) {
        if (!strncmp(p, prefix, n) && p[n] == ' ') return strtod(p + n + 1, NULL);
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}

/* sbx_starts_observe on the views of old and cur (NULL: none), as the Sandbox handler calls it. */
static void observe(struct sbx_starts *s, const cJSON *old, const cJSON *cur, int64_t mono, int64_t wall) {
    struct sbx_sandbox_view ov, cv;
    sbx_sandbox_view_parse(old, &ov);
    sbx_sandbox_view_parse(cur, &cv);
    sbx_starts_observe(s, old ? &ov : NULL, cur ? &cv : NULL, mono, wall);
}

/* Step a Sandbox from *prev to next (next is kept as the new *prev). */
static void step(struct sbx_starts *s, cJSON **prev, cJSON *next, int64_t mono) {
    observe(s, *prev, next, mono, WALL + (mono - T0));
    cJSON_Delete(*prev);
    *prev = next;
}

TEST(a_create_is_timed_from_first_sight_to_running_and_ready_once) {
    struct sbx_starts *s = sbx_starts_new();
    cJSON *cur = NULL;
    step(s, &cur, sb("u1", "session", "fast", NULL, 0, NULL), T0);
    CHECK_INT(sbx_starts_pending(s), 1);
    step(s, &cur, sb("u1", "session", "fast", "Creating", 0, NULL), T0 + 300);
    step(s, &cur, sb("u1", "session", "fast", "Running", 0, NULL), T0 + 600);   /* Running, not Ready yet */
    step(s, &cur, sb("u1", "session", "fast", "Running", 1, NULL), T0 + 1500);
    CHECK_INT(sbx_starts_pending(s), 0);
    step(s, &cur, sb("u1", "session", "fast", "Running", 1, NULL), T0 + 9000);   /* a resync: not again */
    const char *t = render(s);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_count{lifecycle=\"session\",class=\"fast\"}") == 1);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_sum{lifecycle=\"session\",class=\"fast\"}") == 1.5);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_bucket{lifecycle=\"session\",class=\"fast\",le=\"1\"}") == 0);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_bucket{lifecycle=\"session\",class=\"fast\",le=\"2\"}") == 1);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_bucket{lifecycle=\"session\",class=\"fast\",le=\"+Inf\"}") == 1);
    CHECK(strstr(t, "# TYPE yao_sandbox_create_ready_duration_seconds histogram\n") != NULL);
    CHECK(strstr(t, "# TYPE yao_sandbox_wake_duration_seconds histogram\n") != NULL);
    CHECK(strstr(t, "yao_sandbox_wake_duration_seconds_count") == NULL);   /* no wake yet */
    /* a pod replaced under the Running Sandbox (a spec change): Ready False then True, no new sample */
    step(s, &cur, sb("u1", "session", "fast", "Creating", 0, NULL), T0 + 10000);
    step(s, &cur, sb("u1", "session", "fast", "Running", 1, NULL), T0 + 12000);
    t = render(s);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_count{lifecycle=\"session\",class=\"fast\"}") == 1);
    cJSON_Delete(cur);
    sbx_starts_free(s);
}

TEST(a_wake_is_timed_from_leaving_stopped_by_its_own_lifecycle_and_class) {
    struct sbx_starts *s = sbx_starts_new();
    cJSON *cur = NULL;
    step(s, &cur, sb("u2", "long-running", NULL, "Running", 1, NULL), T0);   /* seen running: nothing */
    step(s, &cur, sb("u2", "long-running", NULL, "Stopping", 0, NULL), T0 + 100);
    step(s, &cur, sb("u2", "long-running", NULL, "Stopped", 0, NULL), T0 + 200);
    CHECK_INT(sbx_starts_pending(s), 0);
    step(s, &cur, sb("u2", "long-running", NULL, "Creating", 0, NULL), T0 + 60000);
    CHECK_INT(sbx_starts_pending(s), 1);
    step(s, &cur, sb("u2", "long-running", NULL, "Running", 1, NULL), T0 + 64000);
    const char *t = render(s);
    CHECK(value_of(t, "yao_sandbox_wake_duration_seconds_count{lifecycle=\"long-running\",class=\"\"}") == 1);
    CHECK(value_of(t, "yao_sandbox_wake_duration_seconds_sum{lifecycle=\"long-running\",class=\"\"}") == 4);
    CHECK(value_of(t, "yao_sandbox_wake_duration_seconds_bucket{lifecycle=\"long-running\",class=\"\",le=\"3\"}") == 0);
    CHECK(value_of(t, "yao_sandbox_wake_duration_seconds_bucket{lifecycle=\"long-running\",class=\"\",le=\"5\"}") == 1);
    CHECK(strstr(t, "create_ready_duration_seconds_count") == NULL);
    /* paused again during the next wake, before Ready: that start is dropped, not timed later */
    step(s, &cur, sb("u2", "long-running", NULL, "Stopped", 0, NULL), T0 + 70000);
    step(s, &cur, sb("u2", "long-running", NULL, "Creating", 0, NULL), T0 + 80000);
    step(s, &cur, sb("u2", "long-running", NULL, "Stopping", 0, NULL), T0 + 80100);
    CHECK_INT(sbx_starts_pending(s), 0);
    step(s, &cur, sb("u2", "long-running", NULL, "Stopped", 0, NULL), T0 + 80200);
    step(s, &cur, sb("u2", "long-running", NULL, "Creating", 0, NULL), T0 + 90000);
    step(s, &cur, sb("u2", "long-running", NULL, "Running", 1, NULL), T0 + 90500);
    t = render(s);
    CHECK(value_of(t, "yao_sandbox_wake_duration_seconds_count{lifecycle=\"long-running\",class=\"\"}") == 2);
    CHECK(value_of(t, "yao_sandbox_wake_duration_seconds_sum{lifecycle=\"long-running\",class=\"\"}") == 4.5);
    /* a wake by touch: timed from the touch the controller acted on, not from its status write */
    step(s, &cur, sb("u2", "long-running", NULL, "Stopped", 0, NULL), T0 + 100000);
    cJSON *touched = sb("u2", "long-running", NULL, "Stopped", 0, NULL);
    cJSON_AddItemToObject(cJSON_GetObjectItem(touched, "metadata"), "annotations",
                          cJSON_Parse("{\"sandbox.yaoapps.com/last-used-at\":\"2026-05-28T20:28:20Z\"}"));
    step(s, &cur, touched, T0 + 110000);
    CHECK_INT(sbx_starts_pending(s), 1);
    step(s, &cur, sb("u2", "long-running", NULL, "Creating", 0, NULL), T0 + 110700);
    step(s, &cur, sb("u2", "long-running", NULL, "Running", 1, NULL), T0 + 111000);
    t = render(s);
    CHECK(value_of(t, "yao_sandbox_wake_duration_seconds_count{lifecycle=\"long-running\",class=\"\"}") == 3);
    CHECK(value_of(t, "yao_sandbox_wake_duration_seconds_sum{lifecycle=\"long-running\",class=\"\"}") == 5.5);
    /* a status-only update while stopped (the controller's own) is no request */
    step(s, &cur, sb("u2", "long-running", NULL, "Stopped", 0, NULL), T0 + 120000);
    step(s, &cur, sb("u2", "long-running", NULL, "Stopped", 0, NULL), T0 + 121000);
    CHECK_INT(sbx_starts_pending(s), 0);
    cJSON_Delete(cur);
    sbx_starts_free(s);
}

TEST(a_sandbox_made_while_no_controller_ran_is_timed_from_its_creation) {
    struct sbx_starts *s = sbx_starts_new();
    cJSON *cur = NULL;
    /* created 30 s before this controller first saw it (WALL is 20:26:40) */
    step(s, &cur, sb("u3", "session", "c", NULL, 0, "2026-05-28T20:26:10Z"), T0);
    step(s, &cur, sb("u3", "session", "c", "Running", 1, "2026-05-28T20:26:10Z"), T0 + 2000);
    const char *t = render(s);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_sum{lifecycle=\"session\",class=\"c\"}") == 32);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_bucket{lifecycle=\"session\",class=\"c\",le=\"30\"}") == 0);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_bucket{lifecycle=\"session\",class=\"c\",le=\"60\"}") == 1);
    cJSON_Delete(cur);
    sbx_starts_free(s);
}

TEST(starts_under_way_at_a_restart_deletions_and_finished_runs_time_nothing) {
    struct sbx_starts *s = sbx_starts_new();
    cJSON *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    step(s, &a, sb("ua", "session", NULL, "Creating", 0, NULL), T0);   /* seen mid-start: create or wake? */
    CHECK_INT(sbx_starts_pending(s), 0);
    step(s, &a, sb("ua", "session", NULL, "Running", 1, NULL), T0 + 500);
    step(s, &b, sb("ub", "session", NULL, NULL, 0, NULL), T0);
    CHECK_INT(sbx_starts_pending(s), 1);
    observe(s, b, NULL, T0 + 100, WALL + 100);   /* deleted before Ready */
    CHECK_INT(sbx_starts_pending(s), 0);
    step(s, &c, sb("uc", "one-shot", NULL, NULL, 0, NULL), T0);
    step(s, &c, sb("uc", "one-shot", NULL, "Succeeded", 0, NULL), T0 + 800);   /* ran out before Ready was seen */
    CHECK_INT(sbx_starts_pending(s), 0);
    step(s, &c, sb("uc", "one-shot", NULL, "Running", 1, NULL), T0 + 900);   /* nothing left to time */
    step(s, &d, sb("ud", "session", NULL, "Stopped", 0, NULL), T0);   /* seen stopped: nothing */
    CHECK_INT(sbx_starts_pending(s), 0);
    const char *t = render(s);
    CHECK(strstr(t, "_count{") == NULL);
    cJSON *nouid = cJSON_Parse("{\"metadata\":{}}");
    observe(s, NULL, nouid, T0, WALL);   /* no uid: ignored */
    CHECK_INT(sbx_starts_pending(s), 0);
    cJSON_Delete(nouid);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
    cJSON_Delete(d);
    sbx_starts_free(s);
}

TEST(class_labels_are_bounded_and_escaped) {
    struct sbx_starts *s = sbx_starts_new();
    char uid[32], cls[32];
    for (int i = 0; i < SBX_STARTS_MAX_CLASSES + 10; i++) {
        snprintf(uid, sizeof uid, "u-%d", i);
        snprintf(cls, sizeof cls, "class-%d", i);
        cJSON *cur = NULL;
        step(s, &cur, sb(uid, "persistent", cls, NULL, 0, NULL), T0);
        step(s, &cur, sb(uid, "persistent", cls, "Running", 1, NULL), T0 + 100);
        cJSON_Delete(cur);
    }
    const char *t = render(s);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_count{lifecycle=\"persistent\",class=\"class-63\"}") == 1);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_count{lifecycle=\"persistent\",class=\"class-64\"}") == -1);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_count{lifecycle=\"persistent\",class=\"_other\"}") == 10);
    sbx_starts_free(s);
    /* a quote in a class (not a valid name, but the exposition stays valid whatever comes) */
    s = sbx_starts_new();
    cJSON *cur = NULL;
    step(s, &cur, sb("q", "persistent", "we\\\"ird", NULL, 0, NULL), T0);
    step(s, &cur, sb("q", "persistent", "we\\\"ird", "Running", 1, NULL), T0 + 100);
    cJSON_Delete(cur);
    t = render(s);
    CHECK(value_of(t, "yao_sandbox_create_ready_duration_seconds_count{lifecycle=\"persistent\",class=\"we\\\"ird\"}") == 1);
    sbx_starts_free(s);
}
