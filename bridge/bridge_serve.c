/* bridge/bridge_serve.c — the grpc mode's one poll() loop: read MCP JSON-RPC lines from
 * stdin, answer some at once (ping, errors), start an RPC for the others
 * (bridge_mcp.c decides, bridge_grpc.c calls), and write each reply as one line to stdout
 * as its call finishes — several calls may be in flight at once, on one HTTP/2 connection.
 *
 * Beside them, on the same connection, a yao.Yao/Heartbeat every YAO_HEARTBEAT_INTERVAL
 * with the sandbox's CPU, memory and process count (bridge_stats.c samples, bridge_heartbeat.c
 * schedules and judges the answer). A failing heartbeat is said once on stderr and tried
 * again at the next tick; it never touches MCP serving.
 *
 * Back-pressure: stdin is not read while MAX_INFLIGHT calls are running or more than
 * OUT_HIGH bytes of replies wait for stdout. The run ends at stdin EOF, once every call
 * has finished and every reply is written (exit 0) — or, the same way, when a heartbeat is
 * answered "shutdown": stdin is no longer read, requests already read get an
 * MCP_ERR_SHUTDOWN reply, calls in flight finish and are answered. RPC failures are
 * answered in-band and never end the run; only stdio failures do. */
#include "bridge.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_INFLIGHT 64
#define OUT_HIGH (1024 * 1024)
#define READ_CHUNK (64 * 1024)
#define CGROUP_ROOT "/sys/fs/cgroup"
#define PROC_ROOT "/proc"
#define HEARTBEAT_MIN_TIMEOUT_MS 1000

/* The heartbeat's side of the loop. */
struct beat {
    struct bhb hb;
    struct bstats stats;
    int shutdown;      /* Yao said "shutdown" */
    int told_stats;    /* said that no cgroup figures were found */
};

/* The first newline in the buffer, or NULL (an empty buffer has no data pointer at all:
 * memchr must not see it). */
static unsigned char *line_end(struct bridge_dyn *d) {
    return BRIDGE_DYN_LEN(d) ? memchr(BRIDGE_DYN_PTR(d), '\n', BRIDGE_DYN_LEN(d)) : NULL;
}

/* MCP calls in flight (the heartbeat's own call is not one). */
static int mcp_in_flight(const struct bgrpc *g) {
    const struct bgrpc_call *c;
    int n = 0;

    for (c = g->active; c; c = c->next) n += c->req.rpc != MCP_RPC_HEARTBEAT;
    return n;
}

/* An interval as text for messages ("10s", "500ms"). */
static const char *interval_text(int64_t ms, char *buf, size_t cap) {
    if (ms % 1000) snprintf(buf, cap, "%lldms", (long long)ms);
    else snprintf(buf, cap, "%llds", (long long)(ms / 1000));
    return buf;
}

/* Start a heartbeat call, if one is due. -1 only when out of memory. */
static int beat_maybe_start(struct bgrpc *g, struct beat *b, int64_t now) {
    struct bstats_sample sample;
    struct bgrpc_call *c;

    if (b->shutdown || !bhb_due(&b->hb, now)) return 0;
    if (!(c = calloc(1, sizeof *c))) return -1;
    bstats_sample(&b->stats, now * 1000, &sample);
    if (!b->stats.cgroup_version && !b->told_stats) {
        b->told_stats = 1;
        bridge_log("no cgroup CPU or memory figures under %s: heartbeats report 0 for them", CGROUP_ROOT);
    }
    c->req.rpc = MCP_RPC_HEARTBEAT;
    bridge_dyn_init(&c->req.body, 1024);
    if (bhb_encode(&c->req.body, g->cfg->sandbox_id, &sample) < 0) {
        bgrpc_call_free(c);
        return -1;
    }
    /* a heartbeat older than its interval is moot: it may take that long, at least 1 s */
    c->timeout_ms = (int)(b->hb.interval_ms > HEARTBEAT_MIN_TIMEOUT_MS ? b->hb.interval_ms
                                                                       : HEARTBEAT_MIN_TIMEOUT_MS);
    bhb_started(&b->hb, now);
    bgrpc_start(g, c);
    return 0;
}

/* A heartbeat call ended: say what needs saying; note a shutdown. */
static void beat_finished(struct bgrpc *g, struct beat *b, struct bgrpc_call *c) {
    char why[400], action[80] = "", nb[24], iv[32];
    int ok = c->outcome == BGRPC_OK;
    enum bhb_event ev;

    why[0] = '\0';
    if (c->outcome == BGRPC_STATUS) {
        const char *detail = c->grpc_message && *c->grpc_message ? c->grpc_message : c->error;
        snprintf(why, sizeof why, "%s%s%.300s", bgrpc_code_name(c->grpc_status, nb, sizeof nb),
                 *detail ? ": " : "", detail);
    } else if (!ok) {
        snprintf(why, sizeof why, "%s", c->error);
    }
    ev = bhb_finished(&b->hb, ok, ok ? BRIDGE_DYN_PTR(&c->resp) + 5 : NULL,
                      ok ? BRIDGE_DYN_LEN(&c->resp) - 5 : 0, why, action, sizeof action);
    switch (ev) {
    case BHB_QUIET: break;
    case BHB_LOG_FAILURE:
        bridge_log("heartbeat to %s failed: %s (MCP serving goes on; trying again every %s, said "
                   "again only if it fails differently)", g->cfg->addr, why,
                   interval_text(b->hb.interval_ms, iv, sizeof iv));
        break;
    case BHB_LOG_RECOVERY:
        bridge_log("heartbeat to %s works again", g->cfg->addr);
        break;
    case BHB_LOG_ACTION:
        bridge_log("heartbeat to %s answered action \"%s\", which this bridge does not know: "
                   "taken as \"ok\"", g->cfg->addr, action);
        break;
    case BHB_SHUTDOWN:
        b->shutdown = 1;
        bridge_log("Yao answered the heartbeat with \"shutdown\": reading no more requests, "
                   "finishing the %d call(s) in flight, then exiting", mcp_in_flight(g));
        break;
    }
}

/* After a shutdown: answer a request that was already read without calling anything. */
static int line_refused(struct bgrpc *g, const char *p, size_t n, struct bridge_dyn *out) {
    struct mcp_req req;
    int r;

    if (n && p[n - 1] == '\r') n--;
    r = mcp_handle_line(p, n, g->cfg->sandbox_id, &req, out);
    if (r != MCP_CALL) return r < 0 ? -1 : 0;
    r = mcp_reply_error(out, req.id, MCP_ERR_SHUTDOWN, "not sent: Yao asked this sandbox to shut down "
                        "(its Heartbeat answered \"shutdown\")", -1);
    mcp_req_free(&req);
    return r;
}

/* Turn one finished call into its reply line. */
static int reply(struct bridge_dyn *out, struct bgrpc_call *c) {
    const char *method = mcp_rpc_path(c->req.rpc) + strlen("/yao.Yao/");
    struct bridge_dyn m;
    char nb[24];
    int r;

    if (c->outcome == BGRPC_OK)
        return mcp_reply_result(out, &c->req, BRIDGE_DYN_PTR(&c->resp) + 5, BRIDGE_DYN_LEN(&c->resp) - 5);
    bridge_dyn_init(&m, 4096);
    if (c->outcome == BGRPC_STATUS) {
        const char *detail = c->grpc_message && *c->grpc_message ? c->grpc_message : c->error;
        r = bridge_dyn_addf(&m, "%s: %s%s%.3000s", method, bgrpc_code_name(c->grpc_status, nb, sizeof nb),
                            *detail ? ": " : "", detail);
        /* the server's DEADLINE_EXCEEDED (it got our grpc-timeout) is the same event as our
         * own timer firing first: one code for both */
        if (r == 0)
            r = mcp_reply_error(out, c->req.id, c->grpc_status == 4 ? MCP_ERR_DEADLINE : MCP_ERR_RPC,
                                bridge_dyn_str(&m), c->grpc_status);
    } else {
        r = bridge_dyn_addf(&m, "%s: %s", method, c->error);
        if (r == 0)
            r = mcp_reply_error(out, c->req.id, c->outcome == BGRPC_DEADLINE ? MCP_ERR_DEADLINE
                                                                             : MCP_ERR_CONNECTION,
                                bridge_dyn_str(&m), -1);
    }
    bridge_dyn_free(&m);
    return r;
}

/* Handle one complete line: a reply, a call, or nothing. 0 or -1 (out of memory). */
static int line(struct bgrpc *g, const char *p, size_t n, struct bridge_dyn *out) {
    struct bgrpc_call *c = calloc(1, sizeof *c);
    int r;

    if (!c) return -1;
    if (n && p[n - 1] == '\r') n--;
    r = mcp_handle_line(p, n, g->cfg->sandbox_id, &c->req, out);
    if (r == MCP_CALL) {
        bgrpc_start(g, c); /* the client owns it until it is done */
        return 0;
    }
    free(c);
    return r < 0 ? -1 : 0;
}

int bridge_serve_run(struct bgrpc *g, int in_fd, int out_fd, struct bridge_err *err) {
    struct bridge_dyn in, out;
    int in_eof = 0, skipping = 0;
    unsigned char *buf = malloc(READ_CHUNK);
    struct beat *b = calloc(1, sizeof *b);
    int64_t start = bridge_now_ms();

    bridge_dyn_init(&in, BRIDGE_MSG_MAX);
    bridge_dyn_init(&out, BRIDGE_OUT_MAX);
    if (!buf || !b) goto nomem;
    bhb_init(&b->hb, g->cfg->heartbeat_ms, start);
    bstats_init(&b->stats, CGROUP_ROOT, PROC_ROOT, start * 1000);
    for (;;) {
        struct bgrpc_call *c;
        struct pollfd pfd[3];
        int64_t nearest, now;
        unsigned char *nl;
        int timeout, mcp_active;

        /* complete lines -> replies or calls; after a shutdown only replies */
        while ((mcp_active = mcp_in_flight(g)) < MAX_INFLIGHT &&
               BRIDGE_DYN_LEN(&out) < OUT_HIGH &&
               (nl = line_end(&in))) {
            size_t n = (size_t)(nl - BRIDGE_DYN_PTR(&in));
            if (!skipping && (b->shutdown ? line_refused : line)(g, (const char *)BRIDGE_DYN_PTR(&in), n,
                                                                 &out) < 0)
                goto nomem;
            skipping = 0;
            bridge_dyn_consume(&in, n + 1);
        }
        if (b->shutdown && !line_end(&in)) {
            /* a request still being written when Yao said stop is not one we read */
            bridge_dyn_consume(&in, BRIDGE_DYN_LEN(&in));
            in_eof = 1;
        }
        if (in_eof && BRIDGE_DYN_LEN(&in) && !line_end(&in)) {
            /* a last line without its newline still counts */
            if (!skipping && line(g, (const char *)BRIDGE_DYN_PTR(&in), BRIDGE_DYN_LEN(&in), &out) < 0)
                goto nomem;
            bridge_dyn_consume(&in, BRIDGE_DYN_LEN(&in));
        }
        /* finished calls -> replies (a heartbeat's end is the heartbeat's business) */
        while ((c = bgrpc_take_done(g))) {
            int r = 0;
            if (c->req.rpc == MCP_RPC_HEARTBEAT) beat_finished(g, b, c);
            else r = reply(&out, c);
            bgrpc_call_free(c);
            if (r < 0) {
                bridge_err_set(err, BRIDGE_EXIT_IO, "stdout is not keeping up: more than %u bytes "
                               "of replies waiting", BRIDGE_OUT_MAX);
                goto done;
            }
        }
        /* the end: no request left, no MCP call in flight (a heartbeat in flight is not
         * waited for), every reply written */
        if (in_eof && !BRIDGE_DYN_LEN(&in) && !mcp_in_flight(g) && !BRIDGE_DYN_LEN(&out))
            break;

        now = bridge_now_ms();
        if (beat_maybe_start(g, b, now) < 0) goto nomem;
        nearest = bgrpc_expire(g, now);
        if (g->done) continue; /* deadlines passed, or a heartbeat could not connect: handle first */
        if (!b->shutdown && (nearest < 0 || now + bhb_wait_ms(&b->hb, now) < nearest))
            nearest = now + bhb_wait_ms(&b->hb, now);
        timeout = nearest < 0 ? -1 : (int)(nearest - now > 60000 ? 60000 : nearest - now + 1);
        mcp_active = mcp_in_flight(g);
        pfd[0].fd = in_fd;
        pfd[0].events = !in_eof && !b->shutdown && mcp_active < MAX_INFLIGHT && BRIDGE_DYN_LEN(&out) < OUT_HIGH &&
                        !line_end(&in) ? POLLIN : 0;
        if (!pfd[0].events) pfd[0].fd = -1;
        pfd[1].fd = out_fd;
        pfd[1].events = BRIDGE_DYN_LEN(&out) ? POLLOUT : 0;
        pfd[2].fd = bgrpc_fd(g);
        pfd[2].events = bgrpc_events(g);
        pfd[0].revents = pfd[1].revents = pfd[2].revents = 0;
        if (poll(pfd, 3, timeout) < 0) {
            if (errno == EINTR) continue;
            bridge_err_set(err, BRIDGE_EXIT_IO, "poll: %s", strerror(errno));
            goto done;
        }
        if (pfd[1].revents & (POLLOUT | POLLERR | POLLHUP)) {
            if (!BRIDGE_DYN_LEN(&out)) {
                bridge_err_set(err, BRIDGE_EXIT_IO, "write stdout: the reader closed it");
                goto done;
            }
            ssize_t w = write(out_fd, BRIDGE_DYN_PTR(&out), BRIDGE_DYN_LEN(&out));
            if (w > 0) bridge_dyn_consume(&out, (size_t)w);
            else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                bridge_err_set(err, BRIDGE_EXIT_IO, "write stdout: %s", strerror(errno));
                goto done;
            }
        }
        if (pfd[2].revents) bgrpc_io(g, pfd[2].revents);
        if (pfd[0].revents) {
            ssize_t n = read(in_fd, buf, READ_CHUNK);
            if (n > 0) {
                if (bridge_dyn_add(&in, buf, (size_t)n) < 0) {
                    /* a line longer than any request may be: answer it, skip to its end */
                    bridge_dyn_consume(&in, BRIDGE_DYN_LEN(&in));
                    if (!skipping) {
                        char m[96];
                        snprintf(m, sizeof m, "invalid request: longer than %u bytes", BRIDGE_MSG_MAX);
                        if (mcp_reply_error(&out, NULL, -32600, m, -1) < 0) goto nomem;
                    }
                    skipping = 1;
                    nl = memchr(buf, '\n', (size_t)n);
                    if (nl) {
                        skipping = 0;
                        if (bridge_dyn_add(&in, nl + 1, (size_t)(buf + n - nl - 1)) < 0) goto nomem;
                    }
                }
            } else if (n == 0) {
                in_eof = 1;
            } else if (errno != EAGAIN && errno != EINTR) {
                bridge_err_set(err, BRIDGE_EXIT_IO, "read stdin: %s", strerror(errno));
                goto done;
            }
        }
    }
    goto done;
nomem:
    bridge_err_set(err, BRIDGE_EXIT_IO, "out of memory");
done:
    free(buf);
    free(b);
    bridge_dyn_free(&in);
    bridge_dyn_free(&out);
    return err->code;
}
