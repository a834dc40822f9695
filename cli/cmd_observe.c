/* cli/cmd_observe.c — the commands that watch or read a Sandbox without changing it:
 * wait (by watch, cli/waiter.c), logs (its pod's container log, streamed; a finished
 * one-shot whose pod is gone falls back to the tails in status.run) and describe (rendered
 * by cli/describe.c, with the Sandbox's Events). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/dynbuf.h"
#include "base/errfmt.h"
#include "cli/cli.h"
#include "cli/cluster.h"
#include "cli/describe.h"
#include "cli/fdio.h"
#include "cli/logstream.h"
#include "cli/output.h"
#include "cli/waitcond.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/spec.h"

#define NAME_PREFIX "sandbox." SBX_GROUP "/"
#define DEFAULT_WAIT_TIMEOUT_MS (30 * 1000)   /* kubectl wait's */

/* wait SANDBOX... --for=COND [--timeout D]: each in turn, within one deadline. */
int cmd_wait(struct cli *c) {
    const struct args *a = c->a;
    struct wait_for w;
    char err[300];
    if (wait_for_parse(a->for_, &w, err, sizeof(err)) < 0) return cli_usage_error("%s", err);
    int64_t timeout = DEFAULT_WAIT_TIMEOUT_MS;
    if (a->timeout && (qty_parse_duration(a->timeout, &timeout) < 0 || timeout <= 0))
        return cli_usage_error("invalid --timeout \"%s\" (a duration such as 30s, 5m)", a->timeout);
    for (size_t i = 0; i < a->npos; i++)
        if (!cluster_valid_name(a->pos[i])) return cli_usage_error("invalid sandbox name \"%s\"", a->pos[i]);
    if (cluster_connect(c)) return 1;
    int64_t deadline = clock_mono_ms() + timeout;
    for (size_t i = 0; i < a->npos; i++) {
        int64_t left = deadline - clock_mono_ms();
        if (cluster_wait(c, a->pos[i], &w, NULL, left > 0 ? left : 1, NULL)) return 1;
        printf(NAME_PREFIX "%s condition met\n", a->pos[i]);
        if (fflush(stdout) != 0) return cli_fail("writing output: %s", strerror(errno));
    }
    return 0;
}

/* The last n lines of s (all when n < 0). */
static const char *last_lines(const char *s, long n) {
    if (n < 0) return s;
    size_t len = strlen(s);
    const char *p = s + len;
    if (p > s && p[-1] == '\n') p--;   /* the final newline ends the last line */
    for (long k = 0; p > s; p--)
        if (p[-1] == '\n' && ++k == n) break;
    return n == 0 ? s + len : p;
}

/* A finished one-shot whose pod is gone: the tails kept in status.run. 0, or 1. */
static int logs_from_status(struct cli *c, const cJSON *sb, const char *name, long tail) {
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    if (!v.run.finished) {
        const char *phase = v.phase ? v.phase : "";
        return cli_fail("sandbox \"%s\" has no pod (phase %s): no logs to show", name, *phase ? phase : "none");
    }
    struct sbx_sandbox_shown sh;
    sbx_sandbox_view_shown(sb, &sh);
    const char *out = sh.run_stdout, *er = sh.run_stderr;
    fprintf(stderr, PROG ": the run's pod is gone; its output as kept in status.run%s\n",
            sh.run_truncated ? " (the last 1400 bytes of each stream)" : "");
    if (out && cli_write_all(1, last_lines(out, tail), strlen(last_lines(out, tail))) < 0)
        return cli_fail("writing output: %s", strerror(errno));
    if (er && *er) {
        const char *t = last_lines(er, tail);
        if (cli_write_all(2, t, strlen(t)) < 0) return 1;
    }
    (void)c;
    return 0;
}

/* logs SANDBOX [-f] [--tail N]: the container log of its pod. */
int cmd_logs(struct cli *c) {
    const struct args *a = c->a;
    const char *name = a->pos[0];
    long tail = -1;
    if (a->tail) {
        char *end;
        errno = 0;
        tail = strtol(a->tail, &end, 10);
        if (errno || *end || !*a->tail || tail < -1)
            return cli_usage_error("invalid --tail \"%s\" (a number of lines; -1: all)", a->tail);
    }
    if (cluster_connect(c)) return 1;
    cJSON *sb;
    if (cluster_get(c, name, &sb)) return 1;
    const char *phase = cluster_phase(sb);
    if (a->follow && (!*phase || !strcmp(phase, "Pending") || !strcmp(phase, "Creating"))) {
        /* follow a sandbox that is still starting: from its container's first line */
        cJSON_Delete(sb);
        struct wait_for w = {.kind = WAIT_STARTED};
        if (cluster_wait(c, name, &w, NULL, c->start_timeout_ms, &sb)) return 1;
    }
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    const char *pod = v.pod_name;
    if (!pod || !*pod) {
        int rc = logs_from_status(c, sb, name, tail);
        cJSON_Delete(sb);
        return rc;
    }
    char path[1024], err[KUBE_ERR_MAX], n[32];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/log", c->ns, pod);
    kube_path_add_query(path, sizeof(path), "container", SBX_CONTAINER_NAME);
    if (a->follow) kube_path_add_query(path, sizeof(path), "follow", "true");
    if (tail >= 0) {
        snprintf(n, sizeof(n), "%ld", tail);
        kube_path_add_query(path, sizeof(path), "tailLines", n);
    }
    long st = cli_stream_get(c->kc, path, 1, err, sizeof(err));
    int rc = 0;
    if (st == CLI_STREAM_CLOSED) rc = 0;                         /* our reader is done */
    else if (st == 404) rc = logs_from_status(c, sb, name, tail);   /* the pod went meanwhile */
    else if (st == 0) rc = cli_fail("reading the log of pod %s: %s", pod, err);
    else if (st >= 300) rc = cli_fail("reading the log of pod %s (sandbox \"%s\", phase %s): %s", pod, name,
                                      v.phase && *v.phase ? v.phase : "none", err);
    cJSON_Delete(sb);
    return rc;
}

/* describe SANDBOX: the object and its Events. */
int cmd_describe(struct cli *c) {
    const char *name = c->a->pos[0];
    if (cluster_connect(c)) return 1;
    cJSON *sb;
    if (cluster_get(c, name, &sb)) return 1;
    char path[1200], sel[600];
    struct kube_error err;
    struct sbx_meta m;
    sbx_meta_read(sb, &m);
    const char *uid = m.uid;
    snprintf(sel, sizeof(sel), "involvedObject.kind=" SBX_KIND ",involvedObject.name=%s%s%s", name, uid ? ",involvedObject.uid=" : "",
             uid ? uid : "");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", c->ns);
    kube_path_add_query(path, sizeof(path), "fieldSelector", sel);
    cJSON *list = NULL;
    long st = kube_get(c->kc, path, &list, &err);
    const cJSON *events = st == 200 ? kj_path(list, "items") : NULL;
    struct dynbuf b;
    dynbuf_init(&b, 64u << 20);
    int rc = describe_render(sb, events, kj_now_ms(), &b);
    if (rc == 0 && cli_write_all(1, b.data ? b.data : "", b.len) < 0) rc = cli_fail("writing output: %s", strerror(errno));
    else if (rc) rc = cli_fail(ERR_OOM);
    if (st != 200) fprintf(stderr, PROG ": reading the Events of sandbox \"%s\": %s\n", name, err.message);
    dynbuf_free(&b);
    cJSON_Delete(list);
    cJSON_Delete(sb);
    return rc;
}
