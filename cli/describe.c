/* cli/describe.c — rendering `describe` (see describe.h). Sections and their order follow
 * kubectl describe: the metadata, then Spec and Status, Conditions and Events as aligned
 * tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/describe.h"
#include "cli/output.h"
#include "kube/eventview.h"
#include "kube/kjson.h"
#include "sandbox/model/sandboxview.h"

/* "KEY:" padded to the value column at this indent. */
static void field(struct dynbuf *b, int indent, const char *key, const char *value) {
    int pad = 22 - indent - (int)strlen(key) - 1;
    dynbuf_printf(b, "%*s%s:%*s%s\n", indent, "", key, pad > 1 ? pad : 1, "", value && *value ? value : "<none>");
}

static void field_if(struct dynbuf *b, int indent, const char *key, const char *value) {
    if (value && *value) field(b, indent, key, value);
}

/* A map (labels, annotations) one k=v a line under KEY:, or <none>. */
static void map_field(struct dynbuf *b, const char *key, const cJSON *m) {
    const cJSON *it = m ? m->child : NULL;
    if (!it) { field(b, 0, key, NULL); return; }
    int first = 1;
    for (; it; it = it->next) {
        char line[2048];
        snprintf(line, sizeof(line), "%s=%s", it->string, cJSON_IsString(it) ? it->valuestring : "");
        if (first) field(b, 0, key, line);
        else dynbuf_printf(b, "%22s%s\n", "", line);
        first = 0;
    }
}

/* A time with its age: "2026-12-02T01:00:00Z (3m ago)". */
static void time_field(struct dynbuf *b, int indent, const char *key, const char *t, int64_t now_ms) {
    int64_t ms;
    if (!t || !*t) return;
    char v[160], age[32];
    if (kj_time_parse(t, &ms) == 0) {
        out_human_age(now_ms - ms, age, sizeof(age));
        snprintf(v, sizeof(v), "%s (%s ago)", t, age);
    } else {
        snprintf(v, sizeof(v), "%s", t);
    }
    field(b, indent, key, v);
}

/* A block of text (a run's output), each line indented. */
static void text_block(struct dynbuf *b, int indent, const char *key, const char *text) {
    if (!text) return;
    if (!*text) { field(b, indent, key, "<empty>"); return; }
    dynbuf_printf(b, "%*s%s:\n", indent, "", key);
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        dynbuf_printf(b, "%*s%.*s\n", indent + 2, "", (int)n, p);
        p += n + (nl ? 1 : 0);
    }
}

/* Rows of cells printed with aligned columns (like output.c's table, into b). */
struct rows { const char *cells[64][6]; size_t n, ncols; };

static void rows_print(struct dynbuf *b, const struct rows *r) {
    size_t w[6] = {0};
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->ncols; k++) {
            size_t l = strlen(r->cells[i][k] ? r->cells[i][k] : "");
            if (l > w[k]) w[k] = l;
        }
    for (size_t i = 0; i < r->n; i++) {
        dynbuf_append_str(b, "  ");
        for (size_t k = 0; k < r->ncols; k++) {
            const char *s = r->cells[i][k] ? r->cells[i][k] : "";
            if (k + 1 < r->ncols) dynbuf_printf(b, "%-*s  ", (int)w[k], s);
            else dynbuf_printf(b, "%s\n", s);
        }
    }
}

/* Events oldest first, by when each last happened. */
struct shown_event { const cJSON *obj; struct kube_event_view v; };

static int by_time(const void *a, const void *b) {
    int64_t ta = ((const struct shown_event *)a)->v.last_ms, tb = ((const struct shown_event *)b)->v.last_ms;
    return ta < tb ? -1 : ta > tb;
}

static void events_section(struct dynbuf *b, const cJSON *events, int64_t now_ms) {
    if (!events) { dynbuf_append_str(b, "Events:                <unable to read them>\n"); return; }
    size_t n = (size_t)cJSON_GetArraySize(events);
    if (!n) { dynbuf_append_str(b, "Events:                <none>\n"); return; }
    struct shown_event *v = malloc(n * sizeof(*v));
    if (!v) return;
    size_t k = 0;
    for (const cJSON *e = events->child; e && k < n; e = e->next, k++) {
        v[k].obj = e;
        kube_event_view_read(e, &v[k].v);
    }
    qsort(v, k, sizeof(*v), by_time);
    size_t first = k > 63 ? k - 63 : 0;   /* the most recent ones */
    struct rows r = {.ncols = 5};
    char ages[64][96];
    r.cells[r.n][0] = "Type"; r.cells[r.n][1] = "Reason"; r.cells[r.n][2] = "Age"; r.cells[r.n][3] = "From";
    r.cells[r.n++][4] = "Message";
    r.cells[r.n][0] = "----"; r.cells[r.n][1] = "------"; r.cells[r.n][2] = "----"; r.cells[r.n][3] = "----";
    r.cells[r.n++][4] = "-------";
    for (size_t i = first; i < k; i++) {
        const struct kube_event_view *e = &v[i].v;
        char age[32], over[32];
        if (e->last_ms) out_human_age(now_ms - e->last_ms, age, sizeof(age)); else snprintf(age, sizeof(age), "<unknown>");
        if (e->count > 1 && e->first_ms) {
            out_human_age(now_ms - e->first_ms, over, sizeof(over));
            snprintf(ages[r.n], sizeof(ages[r.n]), "%s (x%lld over %s)", age, (long long)e->count, over);
        } else {
            snprintf(ages[r.n], sizeof(ages[r.n]), "%s", age);
        }
        r.cells[r.n][0] = e->type;
        r.cells[r.n][1] = e->reason;
        r.cells[r.n][2] = ages[r.n];
        r.cells[r.n][3] = e->from;
        r.cells[r.n][4] = e->message;
        r.n++;
    }
    dynbuf_append_str(b, "Events:\n");
    rows_print(b, &r);
    free(v);
}

int describe_render(const cJSON *sb, const cJSON *events, int64_t now_ms, struct dynbuf *b) {
    char v[2048];
    struct sbx_sandbox_view sv;
    struct sbx_sandbox_shown sh;
    sbx_sandbox_view_parse(sb, &sv);
    sbx_sandbox_view_shown(sb, &sh);
    field(b, 0, "Name", sv.meta.name);
    field(b, 0, "Namespace", sv.meta.namespace_);
    map_field(b, "Labels", sv.meta.labels);
    map_field(b, "Annotations", sv.meta.annotations);
    field(b, 0, "API Version", sh.api_version);
    field(b, 0, "Kind", sh.kind);
    time_field(b, 0, "Created", sv.meta.created_text, now_ms);
    time_field(b, 0, "Deleting Since", sv.meta.deletion_text, now_ms);

    dynbuf_append_str(b, "Spec:\n");
    field(b, 2, "User ID", sv.user_id);
    field(b, 2, "Chat ID", sv.chat_id);
    const char *lc = sv.lifecycle;
    field(b, 2, "Lifecycle", lc && *lc ? lc : "<default>");
    field(b, 2, "Class", sv.class_name ? sv.class_name : "<default>");
    field(b, 2, "Image", sh.image ? sh.image : "<default>");
    field(b, 2, "Paused", sv.paused ? "true" : "false");
    field_if(b, 2, "Idle Timeout", sh.idle_timeout);
    const char *mem = sh.memory, *cpu = sh.cpu;
    if (mem || cpu) {
        snprintf(v, sizeof(v), "%s%s%s%s%s", mem ? "memory " : "", mem ? mem : "", mem && cpu ? ", " : "",
                 cpu ? "cpu " : "", cpu ? cpu : "");
        field(b, 2, "Resources", v);
    }
    const char *wsz = sh.workspace_size, *mp = sh.mount_path, *wsc = sh.workspace_storage_class;
    if (wsz || mp || wsc) {
        snprintf(v, sizeof(v), "%s%s%s%s%s%s", wsz ? "size " : "", wsz ? wsz : "", mp ? (wsz ? ", at " : "at ") : "",
                 mp ? mp : "", wsc ? ", class " : "", wsc ? wsc : "");
        field(b, 2, "Workspace", v);
    }
    const cJSON *it;
    int first = 1;
    cJSON_ArrayForEach(it, sh.ports) {
        snprintf(v, sizeof(v), "%lld/%s%s%s", (long long)kj_int(it, "port", 0), kj_str(it, "protocol") ? kj_str(it, "protocol") : "TCP",
                 kj_str(it, "name") ? " " : "", kj_str(it, "name") ? kj_str(it, "name") : "");
        if (first) field(b, 2, "Ports", v); else dynbuf_printf(b, "%22s%s\n", "", v);
        first = 0;
    }
    first = 1;
    cJSON_ArrayForEach(it, sh.env) {
        snprintf(v, sizeof(v), "%s=%s", kj_str(it, "name") ? kj_str(it, "name") : "", kj_str(it, "value") ? kj_str(it, "value") : "");
        if (first) field(b, 2, "Env", v); else dynbuf_printf(b, "%22s%s\n", "", v);
        first = 0;
    }
    const cJSON *run = sh.run;
    if (run) {
        size_t k = 0;
        v[0] = 0;
        cJSON_ArrayForEach(it, kj_path(run, "command"))
            if (cJSON_IsString(it) && k + 4 < sizeof(v)) {
                int need_q = !*it->valuestring || strpbrk(it->valuestring, " \t\n\"'\\$") != NULL;
                int w = snprintf(v + k, sizeof(v) - k, need_q ? "%s\"%s\"" : "%s%s", k ? " " : "", it->valuestring);
                if (w > 0) k += (size_t)w < sizeof(v) - k ? (size_t)w : sizeof(v) - k - 1;
            }
        dynbuf_append_str(b, "  Run:\n");
        field(b, 4, "Command", v);
        field_if(b, 4, "Working Dir", kj_str(run, "workingDir"));
        field_if(b, 4, "Timeout", kj_str(run, "timeout"));
        if (sh.has_ttl_after_finished) {
            snprintf(v, sizeof(v), "%llds", (long long)sh.ttl_after_finished_s);
            field(b, 4, "TTL After Finished", v);
        }
    }

    dynbuf_append_str(b, "Status:\n");
    field(b, 2, "Phase", sv.phase);
    field_if(b, 2, "Lifecycle", sv.status_lifecycle);
    field_if(b, 2, "Class", sv.status_class_name);
    const char *pod = sv.pod_name, *ip = sh.pod_ip, *node = sh.node_name;
    if (pod) {
        snprintf(v, sizeof(v), "%s%s%s%s%s%s", pod, ip || node ? " (" : "", ip ? ip : "", ip && node ? ", node " : node ? "node " : "",
                 node ? node : "", ip || node ? ")" : "");
        field(b, 2, "Pod", v);
    }
    field_if(b, 2, "Workspace Claim", sv.workspace_claim);
    time_field(b, 2, "Started", sv.started_text, now_ms);
    time_field(b, 2, "Stopped", sv.stopped_text, now_ms);
    time_field(b, 2, "Last Used", sv.last_used_text, now_ms);
    field_if(b, 2, "Idle Timeout", sh.status_idle_timeout);
    field_if(b, 2, "Reclaim After", sh.reclaim_after);
    time_field(b, 2, "Idle At", sh.idle_at, now_ms);
    if (sh.has_queue_position) {
        snprintf(v, sizeof(v), "%lld", (long long)sh.queue_position);
        field(b, 2, "Queue Position", v);
    }
    if (sh.has_restart_count) {
        snprintf(v, sizeof(v), "%lld", (long long)sh.restart_count);
        field(b, 2, "Restart Count", v);
    }
    const struct sbx_termination *lt = &sv.last_termination;
    if (lt->present) {
        snprintf(v, sizeof(v), "%s, exit code %d, at %s", lt->reason ? lt->reason : "-", lt->exit_code,
                 lt->finished_text ? lt->finished_text : "-");
        field(b, 2, "Last Termination", v);
    }
    if (sh.has_observed_generation) {
        snprintf(v, sizeof(v), "%lld (generation %lld)", (long long)sh.observed_generation, (long long)sv.meta.generation);
        field(b, 2, "Observed Generation", v);
    }
    if (sv.run.present) {
        dynbuf_append_str(b, "  Run:\n");
        if (sh.has_run_exit_code) {
            snprintf(v, sizeof(v), "%lld", (long long)sh.run_exit_code);
            field(b, 4, "Exit Code", v);
        }
        time_field(b, 4, "Started", sv.run.started_text, now_ms);
        time_field(b, 4, "Finished", sv.run.finished_text, now_ms);
        if (sh.run_truncated)
            field(b, 4, "Output", "the last 1400 bytes of each stream (the whole output: yao-sandbox logs)");
        text_block(b, 4, "Stdout", sh.run_stdout);
        text_block(b, 4, "Stderr", sh.run_stderr);
    }

    const cJSON *conds = sv.conditions;
    if (conds && conds->child) {
        struct rows r = {.ncols = 5};
        r.cells[r.n][0] = "Type"; r.cells[r.n][1] = "Status"; r.cells[r.n][2] = "Reason";
        r.cells[r.n][3] = "Last Transition"; r.cells[r.n++][4] = "Message";
        r.cells[r.n][0] = "----"; r.cells[r.n][1] = "------"; r.cells[r.n][2] = "------";
        r.cells[r.n][3] = "---------------"; r.cells[r.n++][4] = "-------";
        cJSON_ArrayForEach(it, conds) {
            if (r.n >= 64) break;
            r.cells[r.n][0] = kj_str(it, "type");
            r.cells[r.n][1] = kj_str(it, "status");
            r.cells[r.n][2] = kj_str(it, "reason");
            r.cells[r.n][3] = kj_str(it, "lastTransitionTime");
            r.cells[r.n][4] = kj_str(it, "message");
            r.n++;
        }
        dynbuf_append_str(b, "Conditions:\n");
        rows_print(b, &r);
    } else {
        dynbuf_append_str(b, "Conditions:            <none>\n");
    }
    events_section(b, events, now_ms);
    return b->data || b->len == 0 ? 0 : -1;
}
