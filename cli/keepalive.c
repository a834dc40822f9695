/* cli/keepalive.c — the touch interval of a Sandbox from the policy it publishes (see
 * keepalive.h). Not here: the thread that touches (cli/session.c). */
#include "cli/keepalive.h"

#include "kube/kjson.h"
#include "sandbox/model/quantity.h"

int64_t cli_touch_interval_ms(int64_t window_ms) {
    if (window_ms <= 0) return CLI_TOUCH_MAX_MS;
    int64_t t = window_ms / 3;
    return t < CLI_TOUCH_MIN_MS ? CLI_TOUCH_MIN_MS : t > CLI_TOUCH_MAX_MS ? CLI_TOUCH_MAX_MS : t;
}

/* A positive duration at path in sb ("5s", "30m", "1h30m"), else 0. */
static int64_t duration_at(const cJSON *sb, const char *path) {
    const char *s = kj_str(sb, path);
    int64_t ms = 0;
    if (!s || !*s || qty_parse_duration(s, &ms) < 0 || ms <= 0) return 0;
    return ms;
}

int64_t cli_keepalive_window_ms(const cJSON *sb) {
    int64_t idle = duration_at(sb, "status.idleTimeout");
    if (!idle) idle = duration_at(sb, "spec.idleTimeout");
    int64_t reclaim = duration_at(sb, "status.reclaimAfter");
    if (!idle) return reclaim;
    if (!reclaim) return idle;
    return idle < reclaim ? idle : reclaim;
}

int64_t cli_touch_interval_of(const cJSON *sb) {
    return cli_touch_interval_ms(cli_keepalive_window_ms(sb));
}
