/* cli/cmd_sandbox.c — the commands on Sandbox objects themselves: create (get-or-create
 * under the canonical name), get, list (paged, server-side user/chat/label selection), start,
 * stop, touch, delete. None of them runs anything in a sandbox. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "cli/cli.h"
#include "cli/cluster.h"
#include "cli/output.h"
#include "cli/watchloop.h"
#include "cli/waitcond.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "kube/watch.h"
#include "sandbox/model/naming.h"
#include "sandbox/model/quantity.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/spec.h"

/* How kubectl -o name names a Sandbox: resource.group/NAME. */
#define NAME_PREFIX "sandbox." SBX_GROUP "/"

/* Wait (by watch, at most --start-timeout) until the Sandbox called name with uid is gone
 * (deleted, or replaced by one with another uid). 0, or 1 (error printed). */
static int wait_gone(struct cli *c, const char *name, const char *uid) {
    struct wait_for w = {.kind = WAIT_DELETE};
    return cluster_wait(c, name, &w, uid, c->start_timeout_ms, NULL);
}

/* The new Sandbox of (user, chat) under its canonical name, with the spec flags given. */
static cJSON *new_sandbox(const struct args *a, const char *name) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", SBX_API_VERSION);
    cJSON_AddStringToObject(o, "kind", SBX_KIND);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "metadata"), "name", name);
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(spec, "userID", a->user);
    cJSON_AddStringToObject(spec, "chatID", a->chat);
    if (a->lifecycle) cJSON_AddStringToObject(spec, "lifecycle", a->lifecycle);
    if (a->image) cJSON_AddStringToObject(spec, "image", a->image);
    if (a->idle_timeout) cJSON_AddStringToObject(spec, "idleTimeout", a->idle_timeout);
    if (a->class_) cJSON_AddStringToObject(spec, "className", a->class_);
    if (a->memory || a->cpu) {
        cJSON *r = cJSON_AddObjectToObject(spec, "resources");
        if (a->memory) cJSON_AddStringToObject(r, "memory", a->memory);
        if (a->cpu) cJSON_AddStringToObject(r, "cpu", a->cpu);
    }
    if (a->workspace_size) cJSON_AddStringToObject(cJSON_AddObjectToObject(spec, "workspace"), "size", a->workspace_size);
    return o;
}

/* Append "field=value" to a field selector, the value escaped as the API server reads it
 * ('\\', ',' and '=' after a backslash). 0, or -1 when out is too small. */
static int selector_add(char *out, size_t n, const char *field, const char *value) {
    size_t k = strlen(out);
    int w = snprintf(out + k, n - k, "%s%s=", k ? "," : "", field);
    if (w < 0 || (size_t)w >= n - k) return -1;
    k += (size_t)w;
    for (const char *p = value; *p; p++) {
        if (k + 3 > n) return -1;
        if (*p == '\\' || *p == ',' || *p == '=') out[k++] = '\\';
        out[k++] = *p;
    }
    out[k] = '\0';
    return 0;
}

/* The Sandbox of (user, chat) under another name than the canonical one (one applied
 * from a manifest, e.g. manifests/examples/sandbox.yaml): found by the CRD's selectable
 * fields spec.userID and spec.chatID; the oldest one not being deleted. 1 with *out, 0
 * when there is none (or the server cannot select by those fields: Kubernetes < 1.32),
 * -1 on error (printed). */
static int find_pair(struct cli *c, cJSON **out) {
    const struct args *a = c->a;
    char fsel[1200] = "", path[2048];
    struct kube_error err;
    *out = NULL;
    if (selector_add(fsel, sizeof(fsel), "spec.userID", a->user) < 0 ||
        selector_add(fsel, sizeof(fsel), "spec.chatID", a->chat) < 0)
        return 0;
    snprintf(path, sizeof(path), "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL, c->ns);
    if (kube_path_add_query(path, sizeof(path), "fieldSelector", fsel) < 0) return 0;
    cJSON *list = NULL;
    long st = kube_get(c->kc, path, &list, &err);
    if (st == 400) { cJSON_Delete(list); return 0; }
    if (st != 200 || !list) {
        cJSON_Delete(list);
        cli_fail("looking up the sandbox of (user \"%s\", chat \"%s\"): %s", a->user, a->chat, err.message);
        return -1;
    }
    const cJSON *it, *best = NULL;
    int64_t best_ms = 0;
    cJSON_ArrayForEach(it, kj_path(list, "items")) {
        struct sbx_sandbox_view v;
        sbx_sandbox_view_parse(it, &v);
        if (!v.user_id || !v.chat_id || strcmp(v.user_id, a->user) || strcmp(v.chat_id, a->chat) || v.meta.deleting)
            continue;
        if (!best || (v.meta.created_ms && best_ms && v.meta.created_ms < best_ms)) {   /* the oldest */
            best = it;
            best_ms = v.meta.created_ms;
        }
    }
    if (best) *out = cJSON_Duplicate(best, 1);
    cJSON_Delete(list);
    if (best && !*out) { cli_fail(ERR_OOM); return -1; }
    return best ? 1 : 0;
}

/* Get-or-create, as the Go client's GetOrCreate: the Sandbox has the canonical name of
 * (user, chat) (the name of its pod, sbx_name_pod), so of two concurrent calls the API
 * server lets one create it and the other gets 409 and reads it. GET first; 404 → POST;
 * 409 → GET again. A Sandbox of that name of another pair is a NameConflict naming both
 * pairs; one being deleted (an idle session removed by the controller) is waited out and
 * created anew. Without one of that name, a Sandbox of the pair under another name is
 * the one (name is set to it). An existing Sandbox is kept as it is, whatever the flags
 * say. 0 with *out and *created, or 1 (error printed). */
static int get_or_create(struct cli *c, char *name, size_t namelen, cJSON **out, int *created) {
    const struct args *a = c->a;
    char path[640];
    struct kube_error err;
    *out = NULL;
    *created = 0;
    for (int attempt = 0;; attempt++) {
        if (attempt == 10)   /* never seen: a GET 404 and a POST 409 ten times in a row */
            return cli_fail("sandbox \"%s\": created and deleted under us ten times in a row", name);
        cJSON *sb = NULL;
        cluster_sandbox_path(c, name, path, sizeof(path));
        long st = kube_get(c->kc, path, &sb, &err);
        if (st == 200 && sb) {
            struct sbx_sandbox_view v;
            sbx_sandbox_view_parse(sb, &v);
            const char *u = v.user_id, *ch = v.chat_id;
            if (!u || !ch || strcmp(u, a->user) || strcmp(ch, a->chat)) {
                int rc = cli_fail(SBX_REASON_CONFLICT ": sandbox \"%s\" in namespace \"%s\" belongs to (user \"%s\", "
                              "chat \"%s\"), not to (user \"%s\", chat \"%s\")", name, c->ns, u ? u : "",
                              ch ? ch : "", a->user, a->chat);
                cJSON_Delete(sb);
                return rc;
            }
            if (!v.meta.deleting) { *out = sb; return 0; }
            char uid[128];
            snprintf(uid, sizeof(uid), "%s", v.meta.uid ? v.meta.uid : "");
            cJSON_Delete(sb);
            if (isatty(2)) fprintf(stderr, PROG ": sandbox \"%s\" is being deleted; waiting for it to be gone...\n", name);
            if (wait_gone(c, name, uid)) return 1;
            continue;
        }
        cJSON_Delete(sb);
        if (st != 404) return cli_fail("getting sandbox \"%s\": %s", name, err.message);
        int found = find_pair(c, out);
        if (found < 0) return 1;
        if (found) {
            struct sbx_meta m;
            sbx_meta_read(*out, &m);
            snprintf(name, namelen, "%s", m.name ? m.name : "");
            return 0;
        }
        cJSON *obj = new_sandbox(a, name);
        snprintf(path, sizeof(path), "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL, c->ns);
        st = obj ? kube_create(c->kc, path, obj, out, &err) : -1;
        cJSON_Delete(obj);
        if (!obj) return cli_fail(ERR_OOM);
        if (st >= 200 && st < 300 && *out) { *created = 1; return 0; }
        cJSON_Delete(*out);
        *out = NULL;
        if (st != 409) return cli_fail("creating sandbox \"%s\": %s", name, err.message);
        /* someone else created it between our GET and POST: read it (loop) */
    }
}

/* create --user U --chat C [--lifecycle L] [--class K] [--image I] [--memory M] [--cpu C]
 * [--workspace-size S] [--idle-timeout D] [--wait]: the
 * Sandbox of (U, C), made when there is none; its name on stdout (before any wait, so a
 * caller knows it even when the wait fails). */
int cmd_create(struct cli *c) {
    const struct args *a = c->a;
    if (!a->user || !*a->user) return cli_usage_error("--user is required");
    if (!a->chat || !*a->chat) return cli_usage_error("--chat is required");
    if (strlen(a->user) > 128 || strlen(a->chat) > 128) return cli_usage_error("--user and --chat take at most 128 characters");
    enum sbx_lifecycle l;
    if (a->lifecycle && sbx_lifecycle_parse(a->lifecycle, &l) < 0)
        return cli_usage_error("unknown lifecycle \"%s\" (one-shot, session, long-running, persistent)", a->lifecycle);
    int64_t idle;
    if (a->idle_timeout && (qty_parse_duration(a->idle_timeout, &idle) < 0 || idle <= 0))
        return cli_usage_error("invalid --idle-timeout \"%s\" (a duration such as 90s, 30m, 2h)", a->idle_timeout);
    if (a->image && !*a->image) return cli_usage_error("--image is empty");
    int64_t q;
    if (a->memory && (qty_parse_memory(a->memory, &q) < 0 || q <= 0))
        return cli_usage_error("invalid --memory \"%s\" (a quantity such as 512Mi, 2Gi)", a->memory);
    if (a->cpu && (qty_parse_cpu(a->cpu, &q) < 0 || q <= 0))
        return cli_usage_error("invalid --cpu \"%s\" (a quantity such as 500m, 2)", a->cpu);
    if (a->workspace_size && (qty_parse_memory(a->workspace_size, &q) < 0 || q <= 0))
        return cli_usage_error("invalid --workspace-size \"%s\" (a quantity such as 1Gi, 10Gi)", a->workspace_size);
    if (a->class_ && !cluster_valid_name(a->class_))
        return cli_usage_error("invalid --class \"%s\" (the name of a SandboxClass)", a->class_);
    char name[254];   /* the canonical name (SBX_NAME_MAX), or a found one of up to 253 */
    if (sbx_name_pod(a->user, a->chat, name, sizeof(name)) < 0) return cli_fail("naming the sandbox: %s", strerror(errno));
    if (cluster_connect(c)) return 1;
    cJSON *sb;
    int created;
    if (get_or_create(c, name, sizeof(name), &sb, &created)) return 1;
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    int paused = v.paused, stopped = sbx_sandbox_phase_is(&v, "Stopped");
    cJSON_Delete(sb);
    if (isatty(2)) fprintf(stderr, PROG ": sandbox \"%s\" %s\n", name, created ? "created" : "exists");
    printf("%s\n", name);
    if (fflush(stdout) != 0) return cli_fail("writing output: %s", strerror(errno));
    if (!a->wait) return 0;
    if (paused || stopped)   /* create leaves a stopped one as it is: it would never run */
        return cli_fail("sandbox \"%s\" is %s; start it with '" PROG " -n %s start %s --wait'", name,
                    paused ? "paused" : "stopped", c->ns, name);
    struct wait_for w = {.kind = WAIT_RUNNING};
    if (cluster_wait(c, name, &w, NULL, c->start_timeout_ms, &sb)) return 1;
    cJSON_Delete(sb);
    return 0;
}


/* When the sandbox was last used: the newer of status.lastUsedAt and the annotation.
 * 0 with *ms and *text, or -1. */
static int last_used(const struct sbx_sandbox_view *v, int64_t *ms, const char **text) {
    const char *a = v->last_used_text, *b = v->last_used_at;
    int64_t ta = v->last_used_ms, tb = 0;
    int ha = ta != 0, hb = b && kj_time_parse(b, &tb) == 0;
    if (!ha && !hb) return -1;
    if (ha && (!hb || ta >= tb)) { *ms = ta; *text = a; } else { *ms = tb; *text = b; }
    return 0;
}

/* Age of a creation time (ms; 0 unknown) into out. */
static void age_of(int64_t created_ms, char *out, size_t n) {
    if (!created_ms) { snprintf(out, n, "<unknown>"); return; }
    out_human_age(kj_now_ms() - created_ms, out, n);
}

/* The readable `get` view (wide adds spec and status details). */
static int print_summary(const cJSON *sb, int wide) {
    struct sbx_sandbox_view v;
    struct sbx_sandbox_shown sh;
    sbx_sandbox_view_parse(sb, &v);
    sbx_sandbox_view_shown(sb, &sh);
    const char *rs = v.ready.status, *reason = v.ready.reason, *msg = v.ready.message;
    char age[32], lu[96] = "-";
    age_of(v.meta.created_ms, age, sizeof(age));
    const char *last;
    int64_t t;
    if (last_used(&v, &t, &last) == 0) {
        char ago[32];
        out_human_age(kj_now_ms() - t, ago, sizeof(ago));
        snprintf(lu, sizeof(lu), "%s (%s ago)", last, ago);
    }
    printf("Name:         %s\n", out_or_dash(v.meta.name));
    printf("Namespace:    %s\n", out_or_dash(v.meta.namespace_));
    printf("User:         %s\n", out_or_dash(v.user_id));
    printf("Chat:         %s\n", out_or_dash(v.chat_id));
    printf("Lifecycle:    %s\n", out_or_dash(sbx_sandbox_lifecycle(&v)));
    printf("Paused:       %s\n", v.paused ? "true" : "false");
    printf("Phase:        %s\n", out_or_dash(v.phase));
    printf("Pod:          %s\n", out_or_dash(v.pod_name));
    printf("Pod IP:       %s\n", out_or_dash(sh.pod_ip));
    printf("Node:         %s\n", out_or_dash(sh.node_name));
    printf("Ready:        %s%s%s%s\n", out_or_dash(rs), reason ? " (" : "", reason ? reason : "", reason ? ")" : "");
    if (msg && *msg) printf("Message:      %s\n", msg);
    printf("Last used:    %s\n", lu);
    printf("Age:          %s\n", age);
    if (wide) {
        printf("Image:        %s\n", out_or_dash(sh.image));
        printf("Idle timeout: %s\n", out_or_dash(sh.idle_timeout));
        printf("Memory:       %s\n", out_or_dash(sh.memory));
        printf("CPU:          %s\n", out_or_dash(sh.cpu));
        printf("Workspace:    %s (mounted at %s)\n", out_or_dash(v.workspace_claim),
               sh.mount_path ? sh.mount_path : DEFAULT_ROOT);
        printf("Started:      %s\n", out_or_dash(v.started_text));
        printf("Stopped:      %s\n", out_or_dash(v.stopped_text));
        if (v.run.present) {
            printf("Run:          exit code %d, started %s, finished %s\n", v.run.exit_code,
                   out_or_dash(v.run.started_text), out_or_dash(v.run.finished_text));
        }
        const cJSON *cond;
        if (v.conditions && v.conditions->child) printf("Conditions:\n");
        cJSON_ArrayForEach(cond, v.conditions) {
            printf("  %-10s %-6s %-18s %s\n", out_or_dash(kj_str(cond, "type")), out_or_dash(kj_str(cond, "status")),
                   out_or_dash(kj_str(cond, "reason")), kj_str(cond, "message") ? kj_str(cond, "message") : "");
        }
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Whether a Sandbox passes the list filters. User and chat are selected by the API server
 * (field selector); they are checked here again all the same. */
static int list_match(const struct args *a, const cJSON *sb) {
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    const char *u = v.user_id, *ch = v.chat_id, *l = sbx_sandbox_lifecycle(&v);
    if (a->user && (!u || strcmp(u, a->user))) return 0;
    if (a->chat && (!ch || strcmp(ch, a->chat))) return 0;
    if (a->phase && strcasecmp(v.phase ? v.phase : "", a->phase)) return 0;
    if (a->lifecycle && (!l || strcmp(l, a->lifecycle))) return 0;
    return 1;
}


/* How get and list print: the format, the table (its widths kept while watching). */
struct printer {
    const struct args *a;
    int all_ns, wide, rows_printed, yaml_docs;
    struct out_table t;
};

static void printer_init(struct printer *p, const struct args *a) {
    memset(p, 0, sizeof(*p));
    p->a = a;
    p->all_ns = a->all_ns;
    p->wide = a->output && !strcmp(a->output, "wide");
    p->t.ncols = (p->all_ns ? 1 : 0) + 9 + (p->wide ? 3 : 0);
}

/* One Sandbox as a table row. */
static void printer_row(struct printer *p, const cJSON *sb) {
    if (!p->rows_printed && !p->a->no_headers) {
        static const char *hdr[] = {"NAMESPACE", "NAME", "USER", "CHAT", "LIFECYCLE", "PHASE", "POD", "READY", "REASON",
                                    "AGE", "IP", "NODE", "LAST-USED"};
        out_table_add(&p->t, p->all_ns ? hdr : hdr + 1);
    }
    p->rows_printed = 1;
    struct sbx_sandbox_view v;
    struct sbx_sandbox_shown sh;
    sbx_sandbox_view_parse(sb, &v);
    sbx_sandbox_view_shown(sb, &sh);
    char age[32], lu[32] = "-";
    age_of(v.meta.created_ms, age, sizeof(age));
    const char *last;
    int64_t tm;
    if (last_used(&v, &tm, &last) == 0) out_human_age(kj_now_ms() - tm, lu, sizeof(lu));
    const char *row[] = {v.meta.namespace_, v.meta.name, out_or_dash(v.user_id), out_or_dash(v.chat_id),
                         out_or_dash(sbx_sandbox_lifecycle(&v)), out_or_dash(v.phase), out_or_dash(v.pod_name),
                         out_or_dash(v.ready.status), out_or_dash(v.ready.reason), age, out_or_dash(sh.pod_ip),
                         out_or_dash(sh.node_name), lu};
    out_table_add(&p->t, p->all_ns ? row : row + 1);
}

/* -o name: sandbox/NAME. 0, or 1 when stdout failed. */
static int print_name(const cJSON *sb) {
    struct sbx_meta m;
    sbx_meta_read(sb, &m);
    return printf(NAME_PREFIX "%s\n", m.name ? m.name : "") < 0;
}

/* Print one Sandbox in the chosen format (a table row is kept until printer_flush). */
static int printer_one(struct printer *p, const cJSON *sb) {
    const char *o = p->a->output;
    if (o && !strcmp(o, "json")) return out_json(sb);
    if (o && !strcmp(o, "yaml")) {
        if (p->yaml_docs++) fputs("---\n", stdout);
        return out_yaml(sb);
    }
    if (o && !strcmp(o, "name")) return print_name(sb);
    if (out_is_jsonpath(o)) return out_jsonpath(o, sb);
    printer_row(p, sb);
    return 0;
}

static int printer_flush(struct printer *p) {
    out_table_flush(&p->t);
    return fflush(stdout) == 0 ? 0 : 1;
}

static void printer_free(struct printer *p) {
    out_table_print_free(&p->t);
}

/* The watch of get -w / list -w: each change printed as it comes. */
struct watch_print {
    struct printer *p;
    const struct args *a;
    const char *name;         /* get -w: only this one */
    int failed;               /* printing failed (stdout gone) */
};

static int on_watch_event(void *ud, const char *type, const cJSON *obj) {
    struct watch_print *w = ud;
    (void)type;
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    if (w->name && (!m.name || strcmp(m.name, w->name))) return 0;
    if (!w->name && !list_match(w->a, obj)) return 0;
    if (printer_one(w->p, obj) || printer_flush(w->p)) { w->failed = 1; return 1; }
    return 0;
}

/* Watch base (the collection with its selectors) from rv, printing every change, until
 * interrupted or stdout goes away; relist lists again (and prints) when the watch
 * expired. A failed watch is tried again after a second, three times without an event. */
static int watch_and_print(struct cli *c, const char *base, const char *rv, struct watch_print *w,
                           int (*relist)(void *, struct cli_watch *, char *, size_t), void *list_ud) {
    struct cli_watch cw = {.base = base, .on_event = on_watch_event, .event_ud = w, .relist = relist,
                           .list_ud = list_ud, .max_failures = 3, .pause_ms = 1000};
    char err[KUBE_ERR_MAX];
    cli_watch_set_rv(&cw, rv);
    enum cli_watch_end end = cli_watch_run(c->kc, &cw, err, sizeof(err));
    if (w->failed) return errno == EPIPE ? 0 : 1;
    if (end == CLI_WATCH_FAILED) return err[0] ? cli_fail("watching sandboxes: %s", err) : 1;
    return 0;
}

struct get_state { struct cli *c; struct printer *p; struct watch_print *w; const char *name; };

/* get -w after an expired watch: GET again and print it. */
static int get_relist(void *ud, struct cli_watch *cw, char *err, size_t errlen) {
    struct get_state *g = ud;
    cJSON *sb;
    err[0] = '\0';   /* cluster_get tells the user itself */
    (void)errlen;
    if (cluster_get(g->c, g->name, &sb)) return -1;
    struct sbx_meta m;
    sbx_meta_read(sb, &m);
    cli_watch_set_rv(cw, m.resource_version);
    int rc = printer_one(g->p, sb) || printer_flush(g->p);
    cJSON_Delete(sb);
    if (rc) g->w->failed = 1;
    return rc ? -1 : 0;
}

/* get SANDBOX [-o json|yaml|wide|name|jsonpath=T] [-w] */
int cmd_get(struct cli *c) {
    const struct args *a = c->a;
    if (out_check_format(a->output, "json,yaml,wide,name,jsonpath")) return 2;
    if (cluster_connect(c)) return 1;
    cJSON *sb;
    if (cluster_get(c, a->pos[0], &sb)) return 1;
    const char *o = a->output;
    if (!a->watch) {
        int rc = !o ? print_summary(sb, 0) : !strcmp(o, "json") ? out_json(sb)
               : !strcmp(o, "yaml") ? out_yaml(sb)
               : !strcmp(o, "name") ? print_name(sb)
               : out_is_jsonpath(o) ? out_jsonpath(o, sb)
               : print_summary(sb, 1);
        cJSON_Delete(sb);
        return rc;
    }
    /* -w: as kubectl get -w, a row (or the format's form) now and one for each change */
    struct printer p;
    printer_init(&p, a);
    struct watch_print w = {.p = &p, .a = a, .name = a->pos[0]};
    char rv[128];
    struct sbx_meta m;
    sbx_meta_read(sb, &m);
    snprintf(rv, sizeof(rv), "%s", m.resource_version ? m.resource_version : "");
    int rc = printer_one(&p, sb) || printer_flush(&p);
    cJSON_Delete(sb);
    if (!rc) {
        char base[1024], sel[400];
        snprintf(base, sizeof(base), "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL, c->ns);
        snprintf(sel, sizeof(sel), "metadata.name=%s", a->pos[0]);
        kube_path_add_query(base, sizeof(base), "fieldSelector", sel);
        struct get_state g = {c, &p, &w, a->pos[0]};
        rc = watch_and_print(c, base, rv, &w, get_relist, &g);
    }
    printer_free(&p);
    return rc;
}

struct list_query {
    const struct args *a;
    char fsel[1200];
    char rv[128];             /* of the list */
};

/* The collection's path with the selectors (no paging, no watch). 0, or 1 (error printed). */
static int list_base(struct cli *c, const struct list_query *q, char *path, size_t n) {
    if (q->a->all_ns) snprintf(path, n, "/apis/" SBX_API_VERSION "/" SBX_PLURAL);
    else snprintf(path, n, "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL, c->ns);
    if (q->fsel[0] && kube_path_add_query(path, n, "fieldSelector", q->fsel) < 0) return cli_fail("field selector too long");
    if (q->a->selector && kube_path_add_query(path, n, "labelSelector", q->a->selector) < 0) return cli_fail("label selector too long");
    return 0;
}

/* Every page of the list, filtered; the list's resourceVersion in q->rv. 0 with *out, or 1. */
static int list_all(struct cli *c, struct list_query *q, cJSON **out) {
    const struct args *a = q->a;
    cJSON *items = cJSON_CreateArray();
    char cont[1024] = "";
    *out = NULL;
    do {
        char path[4096];
        struct kube_error err;
        if (list_base(c, q, path, sizeof(path))) { cJSON_Delete(items); return 1; }
        kube_path_add_query(path, sizeof(path), "limit", "500");
        if (cont[0] && kube_path_add_query(path, sizeof(path), "continue", cont) < 0) {
            cJSON_Delete(items);
            return cli_fail("continue token too long");
        }
        cJSON *list = NULL;
        long st = kube_get(c->kc, path, &list, &err);
        if (st != 200 || !list) {
            cJSON_Delete(list);
            cJSON_Delete(items);
            return cli_fail("listing sandboxes%s: %s", st == 400 && q->fsel[0] && !a->selector ? " by spec.userID/spec.chatID (the CRD's "
                        "selectableFields need Kubernetes 1.32)" : st == 400 && a->selector ? " with -l" : "", err.message);
        }
        cJSON *its = cJSON_DetachItemFromObjectCaseSensitive(list, "items"), *it;
        while (its && (it = cJSON_DetachItemViaPointer(its, its->child)))
            if (list_match(a, it)) cJSON_AddItemToArray(items, it); else cJSON_Delete(it);
        cJSON_Delete(its);
        struct kube_list_meta lm;
        kube_list_meta_read(list, &lm);
        snprintf(cont, sizeof(cont), "%s", lm.continue_ ? lm.continue_ : "");
        snprintf(q->rv, sizeof(q->rv), "%s", lm.resource_version ? lm.resource_version : "");
        cJSON_Delete(list);
    } while (cont[0]);
    *out = items;
    return 0;
}

struct list_state { struct cli *c; struct printer *p; struct watch_print *w; struct list_query *q; };

/* list -w after an expired watch: list again and print every row. */
static int list_relist(void *ud, struct cli_watch *cw, char *err, size_t errlen) {
    struct list_state *l = ud;
    cJSON *items;
    err[0] = '\0';   /* list_all tells the user itself */
    (void)errlen;
    if (list_all(l->c, l->q, &items)) return -1;
    cli_watch_set_rv(cw, l->q->rv);
    const cJSON *sb;
    int rc = 0;
    cJSON_ArrayForEach(sb, items) if (!rc) rc = printer_one(l->p, sb);
    cJSON_Delete(items);
    if (rc || printer_flush(l->p)) {
        l->w->failed = 1;
        return -1;
    }
    return 0;
}

/* list: every page of Sandboxes; --user and --chat through the server-side field selector
 * on the CRD's selectable fields spec.userID and spec.chatID, -l as the label selector,
 * --phase and --lifecycle filtered here; -w then watches with the same selectors. */
int cmd_list(struct cli *c) {
    struct args *a = c->a;
    if (out_check_format(a->output, "json,yaml,wide,name,jsonpath")) return 2;
    if (a->selector && (!*a->selector || strlen(a->selector) > 900))
        return cli_usage_error("-l takes a label selector such as app=web,tier!=db (at most 900 characters)");
    if (a->lifecycle) {
        enum sbx_lifecycle l;
        if (sbx_lifecycle_parse(a->lifecycle, &l) < 0)
            return cli_usage_error("unknown lifecycle \"%s\" (one-shot, session, long-running, persistent)", a->lifecycle);
    }
    struct list_query q = {.a = a};
    if ((a->user && selector_add(q.fsel, sizeof(q.fsel), "spec.userID", a->user) < 0) ||
        (a->chat && selector_add(q.fsel, sizeof(q.fsel), "spec.chatID", a->chat) < 0))
        return cli_usage_error("--user or --chat too long");
    if (cluster_connect(c)) return 1;
    cJSON *items;
    if (list_all(c, &q, &items)) return 1;
    int rc = 0;
    const char *o = a->output;
    if (!a->watch && o && (!strcmp(o, "json") || !strcmp(o, "yaml") || out_is_jsonpath(o))) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddStringToObject(l, "apiVersion", "v1");
        cJSON_AddStringToObject(l, "kind", "List");
        cJSON_AddItemToObject(l, "items", items);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(l, "metadata"), "resourceVersion", q.rv);
        rc = !strcmp(o, "json") ? out_json(l) : !strcmp(o, "yaml") ? out_yaml(l) : out_jsonpath(o, l);
        cJSON_Delete(l);
        return rc;
    }
    if (!items->child && (!o || !strcmp(o, "wide"))) {
        if (a->all_ns) fprintf(stderr, "No sandboxes found.\n");
        else fprintf(stderr, "No sandboxes found in namespace %s.\n", c->ns);
    }
    struct printer p;
    printer_init(&p, a);
    const cJSON *sb;
    cJSON_ArrayForEach(sb, items) if (!rc) rc = printer_one(&p, sb);
    cJSON_Delete(items);
    if (!rc) rc = printer_flush(&p);
    if (!rc && a->watch) {
        char base[4096];
        struct watch_print w = {.p = &p, .a = a};
        struct list_state ls = {c, &p, &w, &q};
        rc = list_base(c, &q, base, sizeof(base)) ? 1 : watch_and_print(c, base, q.rv, &w, list_relist, &ls);
    }
    printer_free(&p);
    return rc;
}


/* start SANDBOX [--wait]: clear spec.paused and mark it used. */
int cmd_start(struct cli *c) {
    const char *name = c->a->pos[0];
    if (cluster_connect(c)) return 1;
    cJSON *sb;
    if (cluster_get(c, name, &sb)) return 1;
    cJSON_Delete(sb);
    if (cluster_patch(c, name, 1, 0, 0, NULL)) return 1;
    if (c->a->wait) {
        struct wait_for w = {.kind = WAIT_RUNNING, .starting = 1};
        if (cluster_wait(c, name, &w, NULL, c->start_timeout_ms, &sb)) return 1;
        struct sbx_sandbox_view v;
        sbx_sandbox_view_parse(sb, &v);
        printf("sandbox/%s running (pod %s)\n", name, out_or_dash(v.pod_name));
        cJSON_Delete(sb);
    } else {
        printf("sandbox/%s starting\n", name);
    }
    return 0;
}

/* stop SANDBOX [--wait]: set spec.paused (the controller deletes the pod). */
int cmd_stop(struct cli *c) {
    const char *name = c->a->pos[0];
    if (cluster_connect(c)) return 1;
    if (cluster_patch(c, name, 0, 1, 0, NULL)) return 1;
    if (c->a->wait) {
        cJSON *sb;
        struct wait_for w = {.kind = WAIT_STOPPED};
        if (cluster_wait(c, name, &w, NULL, c->start_timeout_ms, &sb)) return 1;
        cJSON_Delete(sb);
        printf("sandbox/%s stopped\n", name);
    } else {
        printf("sandbox/%s stopping\n", name);
    }
    return 0;
}

/* touch SANDBOX: last-used-at = now. */
int cmd_touch(struct cli *c) {
    if (cluster_connect(c)) return 1;
    return cluster_patch(c, c->a->pos[0], 1, -1, 0, NULL);
}

/* delete SANDBOX... [--wait]: DELETE each (uid precondition: never a successor of the same
 * name), then, with --wait, until each is gone. Every name is tried; exit 1 when any
 * failed. */
int cmd_delete(struct cli *c) {
    const struct args *a = c->a;
    for (size_t i = 0; i < a->npos; i++)
        if (!cluster_valid_name(a->pos[i])) return cli_usage_error("invalid sandbox name \"%s\"", a->pos[i]);
    if (cluster_connect(c)) return 1;
    char (*uids)[128] = calloc(a->npos, sizeof(*uids));
    if (!uids) return cli_fail(ERR_OOM);
    int rc = 0;
    for (size_t i = 0; i < a->npos; i++) {
        const char *name = a->pos[i];
        char path[640];
        struct kube_error err;
        cJSON *sb;
        if (cluster_get(c, name, &sb)) { rc = 1; continue; }
        struct sbx_meta m;
        sbx_meta_read(sb, &m);
        snprintf(uids[i], sizeof(uids[i]), "%s", m.uid ? m.uid : "");
        int deleting = m.deleting;
        cJSON_Delete(sb);
        if (!deleting) {
            cluster_sandbox_path(c, name, path, sizeof(path));
            long st = kube_delete(c->kc, path, uids[i][0] ? uids[i] : NULL, &err);
            if (st == 409) {
                rc = cli_fail("sandbox \"%s\" was replaced meanwhile (a new one of that name): not deleted", name);
                uids[i][0] = 0;
                continue;
            }
            if (st != 404 && (st < 200 || st >= 300)) {
                rc = cli_fail("deleting sandbox \"%s\": %s", name, err.message);
                uids[i][0] = 0;
                continue;
            }
        }
        printf("sandbox \"%s\" deleted\n", name);
        if (!a->wait) uids[i][0] = 0;
    }
    if (fflush(stdout) != 0) rc = cli_fail("writing output: %s", strerror(errno));
    for (size_t i = 0; i < a->npos; i++)
        if (uids[i][0] && wait_gone(c, a->pos[i], uids[i])) rc = 1;
    free(uids);
    return rc;
}
