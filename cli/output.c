/* cli/output.c — the CLI's output formats (see output.h): ages, kubectl-style JSON,
 * block YAML, tables. Pure formatting on stdout; nothing here talks to a cluster. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/errfmt.h"
#include "cli/cli.h"
#include "cli/fdio.h"
#include "cli/jsonpath.h"
#include "cli/output.h"
#include "base/dynbuf.h"
#include "kube/kjson.h"

/* Human age like kubectl: 45s, 3m20s, 25m, 3h20m, 20h, 3d4h, 30d, 2y. */
void out_human_age(int64_t ms, char *out, size_t n) {
    long long s = ms < 0 ? 0 : ms / 1000;
    if (s < 120) snprintf(out, n, "%llds", s);
    else if (s < 600) {
        if (s % 60) snprintf(out, n, "%lldm%llds", s / 60, s % 60);
        else snprintf(out, n, "%lldm", s / 60);
    } else if (s < 3 * 3600) snprintf(out, n, "%lldm", s / 60);
    else if (s < 8 * 3600) {
        if ((s / 60) % 60) snprintf(out, n, "%lldh%lldm", s / 3600, (s / 60) % 60);
        else snprintf(out, n, "%lldh", s / 3600);
    } else if (s < 48 * 3600) snprintf(out, n, "%lldh", s / 3600);
    else if (s < 8 * 86400) {
        if ((s / 3600) % 24) snprintf(out, n, "%lldd%lldh", s / 86400, (s / 3600) % 24);
        else snprintf(out, n, "%lldd", s / 86400);
    } else if (s < 2LL * 365 * 86400) snprintf(out, n, "%lldd", s / 86400);
    else snprintf(out, n, "%lldy", s / (365LL * 86400));
}

/* A JSON string literal (quoted, escaped) for s. */
static void json_quote(struct dynbuf *b, const char *s) {
    cJSON *tmp = cJSON_CreateString(s);
    char *q = tmp ? cJSON_PrintUnformatted(tmp) : NULL;
    dynbuf_append_str(b, q ? q : "\"\"");
    free(q);
    cJSON_Delete(tmp);
}

/* Indented JSON, four spaces a level, "key": value — as kubectl prints it. */
static void json_node(struct dynbuf *b, const cJSON *v, int ind) {
    int obj = cJSON_IsObject(v);
    if ((obj || cJSON_IsArray(v)) && v->child) {
        dynbuf_append_str(b, obj ? "{\n" : "[\n");
        for (const cJSON *it = v->child; it; it = it->next) {
            dynbuf_printf(b, "%*s", ind + 4, "");
            if (obj) { json_quote(b, it->string); dynbuf_append_str(b, ": "); }
            json_node(b, it, ind + 4);
            dynbuf_append_str(b, it->next ? ",\n" : "\n");
        }
        dynbuf_printf(b, "%*s%c", ind, "", obj ? '}' : ']');
    } else if (obj || cJSON_IsArray(v)) {
        dynbuf_append_str(b, obj ? "{}" : "[]");
    } else if (cJSON_IsString(v)) {
        json_quote(b, v->valuestring);
    } else {
        char *s = cJSON_PrintUnformatted(v);
        dynbuf_append_str(b, s ? s : "null");
        free(s);
    }
}

/* Print a JSON value to stdout. 0, or 1 when stdout fails. */
int out_json(const cJSON *v) {
    struct dynbuf b;
    dynbuf_init(&b, SIZE_MAX);
    json_node(&b, v, 0);
    dynbuf_append(&b, "\n", 1);
    int rc = b.data && cli_write_all(1, b.data, b.len) == 0 ? 0 : cli_fail("writing output: %s", strerror(errno));
    dynbuf_free(&b);
    return rc;
}

/* True when a string can be written as a plain YAML scalar. */
static int yaml_plain(const char *s) {
    static const char *const special[] = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"};
    if (!*s || strchr("-?:,[]{}#&*!|>'\"%@` .+0123456789", s[0])) return 0;
    for (size_t i = 0; i < sizeof(special) / sizeof(*special); i++)
        if (!strcasecmp(s, special[i])) return 0;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || strchr("-_./", c))) return 0;
    }
    return 1;
}

/* A YAML scalar for a string: plain when unambiguous, else double-quoted. */
static void yaml_string(struct dynbuf *b, const char *s) {
    if (yaml_plain(s)) dynbuf_append_str(b, s);
    else json_quote(b, s);   /* JSON escapes are valid in a YAML double-quoted scalar */
}

static void yaml_node(struct dynbuf *b, const cJSON *v, int ind, int inline_first);

/* A value after "key:" or "- ". */
static void yaml_value(struct dynbuf *b, const cJSON *v, int ind, int after_dash) {
    if (cJSON_IsObject(v) && v->child) {
        if (after_dash) yaml_node(b, v, ind + 2, 1);
        else { dynbuf_append(b, "\n", 1); yaml_node(b, v, ind + 2, 0); }
    } else if (cJSON_IsArray(v) && v->child) {
        dynbuf_append(b, "\n", 1);
        yaml_node(b, v, after_dash ? ind + 2 : ind, 0);
    } else {
        if (!after_dash) dynbuf_append(b, " ", 1);
        if (cJSON_IsObject(v)) dynbuf_append_str(b, "{}");
        else if (cJSON_IsArray(v)) dynbuf_append_str(b, "[]");
        else if (cJSON_IsString(v)) yaml_string(b, v->valuestring);
        else {
            char *s = cJSON_PrintUnformatted(v);
            dynbuf_append_str(b, s ? s : "null");
            free(s);
        }
        dynbuf_append(b, "\n", 1);
    }
}

/* Block-style YAML of an object or array at indentation ind. */
static void yaml_node(struct dynbuf *b, const cJSON *v, int ind, int inline_first) {
    const cJSON *it;
    int first = 1;
    cJSON_ArrayForEach(it, v) {
        if (!(first && inline_first)) dynbuf_printf(b, "%*s", ind, "");
        first = 0;
        if (cJSON_IsArray(v)) {
            dynbuf_append_str(b, "- ");
            yaml_value(b, it, ind, 1);
        } else {
            yaml_string(b, it->string);
            dynbuf_append(b, ":", 1);
            yaml_value(b, it, ind, 0);
        }
    }
}

/* Print a JSON value as block-style YAML to stdout. */
int out_yaml(const cJSON *v) {
    struct dynbuf b;
    dynbuf_init(&b, SIZE_MAX);
    yaml_node(&b, v, 0, 0);
    int rc = cli_write_all(1, b.data ? b.data : "", b.len) == 0 ? 0 : 1;
    dynbuf_free(&b);
    return rc;
}


/* A duration for messages: "120s", "1500ms". */
void out_duration(int64_t ms, char *out, size_t n) {
    if (ms % 1000) snprintf(out, n, "%lldms", (long long)ms);
    else snprintf(out, n, "%llds", (long long)(ms / 1000));
}

/* "-" for a missing value in tables and summaries. */
const char *out_or_dash(const char *s) { return s && *s ? s : "-"; }


/* Check -o against the formats a command accepts. */
int out_check_format(const char *o, const char *allowed) {
    if (!o) return 0;
    char list[64];
    snprintf(list, sizeof(list), "%s", allowed);
    int jp_ok = 0;
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "jsonpath")) jp_ok = 1;
        else if (!strcmp(t, o)) return 0;
    }
    if (jp_ok && (!strcmp(o, "jsonpath") || !strncmp(o, "jsonpath=", 9))) {
        if (!o[8] || !o[9]) return cli_usage_error("-o jsonpath needs a template, e.g. -o jsonpath='{.status.phase}'");
        char err[256];
        struct jsonpath *jp;
        if (jsonpath_compile(o + 9, &jp, err, sizeof(err)) < 0) return cli_usage_error("-o %s: %s", o, err);
        jsonpath_free(jp);
        return 0;
    }
    return cli_usage_error("unknown output format \"%s\" (one of %s%s)", o, allowed, jp_ok ? "=TEMPLATE" : "");
}

int out_is_jsonpath(const char *o) { return o && !strncmp(o, "jsonpath=", 9); }

/* Print v through -o jsonpath=TEMPLATE. */
int out_jsonpath(const char *o, const cJSON *v) {
    char err[256];
    struct jsonpath *jp;
    if (jsonpath_compile(o + 9, &jp, err, sizeof(err)) < 0) return cli_fail("%s", err);
    struct dynbuf b;
    dynbuf_init(&b, SIZE_MAX);
    int rc = jsonpath_render(jp, v, &b) < 0 ? cli_fail(ERR_OOM)
           : cli_write_all(1, b.data ? b.data : "", b.len) < 0 ? cli_fail("writing output: %s", strerror(errno)) : 0;
    dynbuf_free(&b);
    jsonpath_free(jp);
    return rc;
}


/* Append a row of ncols cells (copied). */
void out_table_add(struct out_table *t, const char *const *row) {
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 32;
        t->cells = realloc(t->cells, t->cap * t->ncols * sizeof(char *));
        if (!t->cells) { cli_fail(ERR_OOM); exit(1); }
    }
    for (size_t i = 0; i < t->ncols; i++) t->cells[t->nrows * t->ncols + i] = strdup(row[i] ? row[i] : "");
    t->nrows++;
}

/* Print the rows with aligned columns (at least as wide as before) and drop them. */
void out_table_flush(struct out_table *t) {
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t i = 0; i < t->ncols; i++) {
            size_t n = strlen(t->cells[r * t->ncols + i]);
            if (n > t->w[i]) t->w[i] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t i = 0; i < t->ncols; i++) {
            const char *s = t->cells[r * t->ncols + i];
            if (i + 1 < t->ncols) printf("%-*s   ", (int)t->w[i], s);
            else printf("%s\n", s);
            free(t->cells[r * t->ncols + i]);
        }
    }
    t->nrows = 0;
}

/* Print the table with aligned columns and release it. */
void out_table_print_free(struct out_table *t) {
    out_table_flush(t);
    free(t->cells);
    t->cells = NULL;
    t->cap = 0;
}
