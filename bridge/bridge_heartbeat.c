/* bridge/bridge_heartbeat.c — the grpc mode's yao.Yao/Heartbeat as pure functions: the
 * interval (YAO_HEARTBEAT_INTERVAL, a Go duration, as Yao's own in-sandbox side reads it;
 * default 10 s), the schedule (a fixed-rate ticker whose first tick is one interval after
 * the start; a tick that finds the previous heartbeat still in flight is skipped, so they
 * never pile up), the request message, and what an answer means:
 *
 *   "ok" (or empty, proto3's default)  nothing; if heartbeats were failing, say they work again
 *   "shutdown"                         stop serving (bridge_serve.c ends the run cleanly)
 *   anything else                      said once, then treated as "ok"
 *   a failed call                      said when it starts failing or fails differently,
 *                                      then quiet; the next tick simply tries again
 *
 * No I/O and no clock: bridge_serve.c passes the time, starts the calls and prints. */
#include "bridge.h"

#include <stdio.h>
#include <string.h>

/* One unit of a Go duration at p: its length in *n and nanoseconds per unit, or 0. */
static double unit_ns(const char *p, size_t *n) {
    static const struct { const char *name; double ns; } units[] = {
        { "ns", 1 }, { "us", 1e3 }, { "\xc2\xb5s", 1e3 }, { "\xce\xbcs", 1e3 }, { "ms", 1e6 },
        { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 },
    };
    size_t i;

    for (i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t len = strlen(units[i].name);
        if (!strncmp(p, units[i].name, len)) {
            *n = len;
            return units[i].ns;
        }
    }
    return 0;
}

/* Parse a Go duration into whole milliseconds (nearest). */
int bhb_parse_interval(const char *s, int64_t *ms) {
    const char *p = s;
    double total = 0;

    if (!*p) return -1;
    while (*p) {
        double v = 0, scale = 1, per;
        int digits = 0;
        size_t ulen;

        for (; *p >= '0' && *p <= '9'; p++, digits++) v = v * 10 + (*p - '0');
        if (*p == '.')
            for (p++; *p >= '0' && *p <= '9'; p++, digits++) v += (*p - '0') * (scale /= 10);
        if (!digits || !(per = unit_ns(p, &ulen))) return -1;
        p += ulen;
        total += v * per;
        if (total > (double)BHB_MAX_MS * 1e6 * 2) return -1; /* far out of range: no overflow */
    }
    *ms = (int64_t)(total / 1e6 + 0.5);
    return *ms >= BHB_MIN_MS && *ms <= BHB_MAX_MS ? 0 : -1;
}

void bhb_init(struct bhb *h, int64_t interval_ms, int64_t now_ms) {
    memset(h, 0, sizeof *h);
    h->interval_ms = interval_ms;
    h->next_ms = now_ms + interval_ms;
}

/* Is one due? Moves the schedule on by one tick (fixed rate; ticks missed while the loop
 * was busy collapse into one, as Go's ticker drops them). */
int bhb_due(struct bhb *h, int64_t now_ms) {
    if (now_ms < h->next_ms) return 0;
    h->next_ms += h->interval_ms;
    if (h->next_ms <= now_ms) h->next_ms = now_ms + h->interval_ms;
    if (h->in_flight) {
        h->skipped++;
        return 0;
    }
    return 1;
}

void bhb_started(struct bhb *h, int64_t now_ms) {
    (void)now_ms;
    h->in_flight = 1;
    h->sent++;
}

int64_t bhb_wait_ms(const struct bhb *h, int64_t now_ms) {
    return h->next_ms > now_ms ? h->next_ms - now_ms : 0;
}

/* HeartbeatRequest, field numbers and types as Yao's grpc/pb/yao.proto has them. */
int bhb_encode(struct bridge_dyn *d, const char *sandbox_id, const struct bstats_sample *s) {
    if (bpb_add_bytes(d, 1, sandbox_id, strlen(sandbox_id)) < 0 ||
        bpb_add_varint(d, 2, (uint64_t)(int64_t)s->cpu_percent) < 0 ||
        bpb_add_varint(d, 3, (uint64_t)s->mem_bytes) < 0 ||
        bpb_add_varint(d, 4, (uint64_t)(int64_t)s->procs) < 0)
        return -1;
    return 0;
}

/* A failure: say it unless it is the one already said. */
static enum bhb_event failed(struct bhb *h, const char *why) {
    int same = h->failing && !strncmp(h->last_failure, why, sizeof h->last_failure - 1);

    h->failing = 1;
    h->failures++;
    snprintf(h->last_failure, sizeof h->last_failure, "%s", why);
    return same ? BHB_QUIET : BHB_LOG_FAILURE;
}

/* The call ended; see bridge.h. */
enum bhb_event bhb_finished(struct bhb *h, int ok, const unsigned char *msg, size_t n,
                            const char *why, char *action, size_t action_cap) {
    const unsigned char *v;
    size_t vn;
    int was_failing = h->failing;

    h->in_flight = 0;
    if (!ok) return failed(h, why);
    if (bpb_get_bytes(msg, n, 1, &v, &vn) < 0)
        return failed(h, "the response is not a HeartbeatResponse (bad protobuf)");
    h->failing = 0;
    h->failures = 0;
    h->last_failure[0] = '\0';
    if (vn == 8 && !memcmp(v, "shutdown", 8)) return BHB_SHUTDOWN;
    if ((vn == 2 && !memcmp(v, "ok", 2)) || vn == 0 || h->told_action)
        return was_failing ? BHB_LOG_RECOVERY : BHB_QUIET;
    h->told_action = 1;
    snprintf(action, action_cap, "%.*s", (int)(vn > 64 ? 64 : vn), (const char *)v);
    return BHB_LOG_ACTION;
}
