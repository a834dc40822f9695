/* tests/unit/test_cli_keepalive.c — how often the CLI marks a sandbox used while a session
 * runs (cli/keepalive.c): a third of a window within 1 s..60 s, and the window from the
 * policy the controller publishes in status (idleTimeout, reclaimAfter), from spec with an
 * older controller, never from spec alone when status says otherwise. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cli/keepalive.h"

TEST(touch_interval_is_a_third_of_the_window_within_bounds) {
    CHECK_INT(cli_touch_interval_ms(30 * 60 * 1000), CLI_TOUCH_MAX_MS);   /* 30m: every 60 s */
    CHECK_INT(cli_touch_interval_ms(90 * 1000), 30 * 1000);               /* 90s: every 30 s */
    CHECK_INT(cli_touch_interval_ms(10 * 1000), 3333);
    CHECK_INT(cli_touch_interval_ms(1000), CLI_TOUCH_MIN_MS);             /* the floor */
    CHECK_INT(cli_touch_interval_ms(0), CLI_TOUCH_MAX_MS);                /* unknown */
    CHECK_INT(cli_touch_interval_ms(-5), CLI_TOUCH_MAX_MS);
    /* always well inside the window, whenever that is at least 3 s */
    for (int64_t w = 3000; w < 48LL * 3600 * 1000; w = w * 3 / 2)
        CHECK(cli_touch_interval_ms(w) * 3 <= w + 2);
}

/* A Sandbox object with the given members (NULL = absent). */
static cJSON *sandbox(const char *spec_idle, const char *status_idle, const char *status_reclaim) {
    cJSON *sb = cJSON_CreateObject();
    cJSON *spec = cJSON_AddObjectToObject(sb, "spec"), *status = cJSON_AddObjectToObject(sb, "status");
    cJSON_AddStringToObject(spec, "userID", "u");
    cJSON_AddStringToObject(status, "phase", "Running");
    if (spec_idle) cJSON_AddStringToObject(spec, "idleTimeout", spec_idle);
    if (status_idle) cJSON_AddStringToObject(status, "idleTimeout", status_idle);
    if (status_reclaim) cJSON_AddStringToObject(status, "reclaimAfter", status_reclaim);
    return sb;
}

TEST(window_follows_the_published_policy) {
    static const struct {
        const char *spec_idle, *status_idle, *status_reclaim;
        int64_t window_ms, interval_ms;
    } cases[] = {
        /* a class idle timeout of 5s, the Sandbox sets none: status says 5s (today's code
         * saw only spec: 60 s, and the session was deleted under a 15 s command) */
        {NULL, "5s", NULL, 5000, 1666},
        /* status wins over spec (the controller's clamp, a class ceiling) */
        {"30m", "90s", NULL, 90000, 30000},
        /* the reclaim window when it is the shorter */
        {NULL, "30m", "6s", 6000, 2000},
        {"2h", "2h", "30m", 30 * 60000, CLI_TOUCH_MAX_MS},
        /* the idle timeout when it is the shorter */
        {NULL, "9s", "1h", 9000, 3000},
        /* only a reclaim window: spec's idle timeout takes status's place */
        {"12s", NULL, "1h", 12000, 4000},
        {NULL, NULL, "3s", 3000, CLI_TOUCH_MIN_MS},
        /* an older controller: spec only, else nothing known */
        {"15s", NULL, NULL, 15000, 5000},
        {NULL, NULL, NULL, 0, CLI_TOUCH_MAX_MS},
        /* the floor */
        {NULL, "1s", NULL, 1000, CLI_TOUCH_MIN_MS},
        {NULL, "2s", "500ms", 500, CLI_TOUCH_MIN_MS},
        /* compound durations as Go writes them */
        {NULL, "1h30m", NULL, 90 * 60000, CLI_TOUCH_MAX_MS},
        {NULL, "1m30s", NULL, 90000, 30000},
        /* junk or non-positive in status is ignored, not taken as 0 */
        {"45s", "soon", NULL, 45000, 15000},
        {"45s", "0s", NULL, 45000, 15000},
        {NULL, "-5s", "bad", 0, CLI_TOUCH_MAX_MS},
        {NULL, "", "", 0, CLI_TOUCH_MAX_MS},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *sb = sandbox(cases[i].spec_idle, cases[i].status_idle, cases[i].status_reclaim);
        int64_t w = cli_keepalive_window_ms(sb), t = cli_touch_interval_of(sb);
        if (w != cases[i].window_ms || t != cases[i].interval_ms) {
            fprintf(stderr, "  case %zu (spec %s, status %s/%s): window %lld interval %lld\n", i,
                    cases[i].spec_idle ? cases[i].spec_idle : "-", cases[i].status_idle ? cases[i].status_idle : "-",
                    cases[i].status_reclaim ? cases[i].status_reclaim : "-", (long long)w, (long long)t);
        }
        CHECK_INT(w, cases[i].window_ms);
        CHECK_INT(t, cases[i].interval_ms);
        cJSON_Delete(sb);
    }
}

TEST(members_of_the_wrong_type_or_a_missing_object_are_unknown) {
    cJSON *sb = cJSON_Parse("{\"spec\":{\"idleTimeout\":20},\"status\":{\"idleTimeout\":{\"s\":5},\"reclaimAfter\":true}}");
    CHECK(sb != NULL);
    CHECK_INT(cli_keepalive_window_ms(sb), 0);
    CHECK_INT(cli_touch_interval_of(sb), CLI_TOUCH_MAX_MS);
    cJSON_Delete(sb);
    cJSON *empty = cJSON_CreateObject();
    CHECK_INT(cli_touch_interval_of(empty), CLI_TOUCH_MAX_MS);
    cJSON_Delete(empty);
    CHECK_INT(cli_touch_interval_of(NULL), CLI_TOUCH_MAX_MS);
}
