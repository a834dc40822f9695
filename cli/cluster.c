/* cli/cluster.c — the Sandbox through the API server, for every command (see cluster.h):
 * connect, get, patch, ensure it runs (waiting for it by watch is cli/waiter.c). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/cluster.h"
#include "base/errfmt.h"
#include "cli/keepalive.h"
#include "cli/output.h"
#include "cli/waitcond.h"
#include "kube/config.h"
#include "sandbox/model/naming.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/spec.h"

/* Sandbox names are DNS subdomains (the controller's one validator, sandbox/model/naming.h):
 * checked before they go into a URL. */
int cluster_valid_name(const char *s) { return sbx_is_dns_subdomain(s); }

/* API path of a Sandbox in the current namespace. */
void cluster_sandbox_path(const struct cli *c, const char *name, char *out, size_t n) {
    snprintf(out, n, "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL "/%s", c->ns, name);
}

/* Load the kubeconfig and make the client. 0 or 1 (error printed). */
int cluster_connect(struct cli *c) {
    struct kube_config cfg;
    char err[KUBE_ERR_MAX];
    struct args *a = c->a;
    int rc = a->context ? kube_config_load(a->kubeconfig, a->context, &cfg, err, sizeof(err))
                        : kube_config_auto(a->kubeconfig, &cfg, err, sizeof(err));
    if (rc < 0) return cli_fail("%s", err);
    if ((a->as || a->nas_groups) &&
        kube_config_set_impersonation(&cfg, a->as, a->as_groups, a->nas_groups, err, sizeof(err)) < 0) {
        kube_config_free(&cfg);
        return cli_fail("%s", err);   /* whether groups lack a user depends on the kubeconfig too */
    }
    const char *ns = a->namespace_ ? a->namespace_ : cfg.namespace_ && cfg.namespace_[0] ? cfg.namespace_ : "default";
    snprintf(c->ns, sizeof(c->ns), "%s", ns);
    c->kc = kube_client_new(&cfg, PROG "/" YAO_VERSION, err, sizeof(err));
    if (!c->kc) {
        kube_config_free(&cfg);
        return cli_fail("%s", err);
    }
    if (!cluster_valid_name(c->ns)) return cli_usage_error("invalid namespace \"%s\"", c->ns);
    return 0;
}

/* GET the Sandbox. 0 with *out, or 1 (error printed). */
int cluster_get(struct cli *c, const char *name, cJSON **out) {
    char path[640];
    struct kube_error err;
    cluster_sandbox_path(c, name, path, sizeof(path));
    *out = NULL;
    long st = kube_get(c->kc, path, out, &err);
    if (st == 200 && *out) return 0;
    cJSON_Delete(*out);
    *out = NULL;
    if (st == 404) return cli_fail("sandbox \"%s\" not found in namespace \"%s\"", name, c->ns);
    return cli_fail("getting sandbox \"%s\": %s", name, err.message);
}

/* Merge-patch the Sandbox: last-used-at = now (touch), and spec.paused when paused >= 0;
 * the Sandbox as patched into *answer when answer is not NULL. */
int cluster_patch(struct cli *c, const char *name, int touch, int paused, int quiet, cJSON **answer) {
    char path[640], now[40];
    struct kube_error err;
    cJSON *p = cJSON_CreateObject();
    if (!p) return cli_fail(ERR_OOM);
    if (touch) {
        kj_time_format(kj_now_ms(), now, sizeof(now));
        cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "metadata"), "annotations");
        cJSON_AddStringToObject(ann, SBX_ANN_LAST_USED, now);
    }
    if (paused >= 0) cJSON_AddBoolToObject(cJSON_AddObjectToObject(p, "spec"), "paused", paused);
    cluster_sandbox_path(c, name, path, sizeof(path));
    if (answer) *answer = NULL;
    long st = kube_merge_patch(c->kc, path, p, answer, &err);
    cJSON_Delete(p);
    if (st >= 200 && st < 300) return 0;
    if (answer) {
        cJSON_Delete(*answer);
        *answer = NULL;
    }
    if (quiet) return 1;
    if (st == 404) return cli_fail("sandbox \"%s\" not found in namespace \"%s\"", name, c->ns);
    return cli_fail("updating sandbox \"%s\": %s", name, err.message);
}

/* status.phase, "" when not set yet. */
const char *cluster_phase(const cJSON *sb) {
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    return v.phase ? v.phase : "";
}

/* Remember what a session needs of the running Sandbox: the touch interval from the
 * policy it publishes (cli/keepalive.h), its pod and the pod's start. */
static void note_running(struct cli *c, const cJSON *sb) {
    c->touch_interval_ms = cli_touch_interval_of(sb);
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    const char *pod = v.pod_name, *started = v.started_text;
    snprintf(c->pod, sizeof(c->pod), "%s", pod ? pod : "");
    snprintf(c->pod_started, sizeof(c->pod_started), "%s", started ? started : "");
}

/* The sandbox, running: unpause it if paused, mark it used (which also wakes an idle
 * long-running sandbox), and wait until it runs. 0 with *out, or 1. */
int cluster_ensure_running(struct cli *c, const char *name, cJSON **out) {
    cJSON *sb;
    *out = NULL;
    if (cluster_get(c, name, &sb)) return 1;
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    if (v.meta.deleting) {
        cJSON_Delete(sb);
        return cli_fail("sandbox \"%s\" is being deleted", name);
    }
    int paused = v.paused;
    int running = sbx_sandbox_phase_is(&v, "Running") && v.pod_name && *v.pod_name && !paused;
    if (cluster_patch(c, name, 1, paused ? 0 : -1, 0, NULL)) { cJSON_Delete(sb); return 1; }
    if (running) {
        note_running(c, sb);
        *out = sb;
        return 0;
    }
    cJSON_Delete(sb);
    struct wait_for w = {.kind = WAIT_RUNNING, .starting = 1};
    if (cluster_wait(c, name, &w, NULL, c->start_timeout_ms, out)) return 1;
    note_running(c, *out);
    return 0;
}

