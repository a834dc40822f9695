/* cli/jsonpath.c — kubectl JSONPath templates (see jsonpath.h): a compiler from the
 * template text to a tree of text, expression and range nodes, and a renderer that walks
 * a cJSON tree with sets of matches. Pure. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jsonpath.h"
#include "base/errfmt.h"

enum step_kind { S_FIELD, S_WILD, S_INDEX, S_SLICE, S_RECURSE, S_FILTER };
enum filter_op { F_EXISTS, F_EQ, F_NE, F_LT, F_LE, F_GT, F_GE };

struct path;

struct step {
    enum step_kind kind;
    char *name;                /* S_FIELD */
    long i, j;                 /* S_INDEX: i; S_SLICE: [i:j] */
    int has_i, has_j;
    struct path *fpath;        /* S_FILTER: @... */
    enum filter_op op;
    cJSON *lit;                /* S_FILTER: the right side */
};

struct path {
    int from_root;             /* $: the root, else the current item */
    struct step *steps;
    size_t n;
};

enum node_kind { N_TEXT, N_EXPR, N_RANGE };

struct node {
    enum node_kind kind;
    char *text;                /* N_TEXT */
    struct path *path;         /* N_EXPR, N_RANGE */
    struct node *body;         /* N_RANGE */
    size_t nbody;
};

struct jsonpath {
    struct node *nodes;
    size_t n;
};

/* ---- freeing ---------------------------------------------------------------------------- */

static void path_free(struct path *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->steps[i].name);
        path_free(p->steps[i].fpath);
        cJSON_Delete(p->steps[i].lit);
    }
    free(p->steps);
    free(p);
}

static void nodes_free(struct node *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(v[i].text);
        path_free(v[i].path);
        nodes_free(v[i].body, v[i].nbody);
    }
    free(v);
}

void jsonpath_free(struct jsonpath *jp) {
    if (!jp) return;
    nodes_free(jp->nodes, jp->n);
    free(jp);
}

/* ---- compiling -------------------------------------------------------------------------- */

struct parser {
    const char *s;             /* the whole template */
    size_t pos;
    char *err;
    size_t errlen;
    int failed;
};

static int fail_at(struct parser *ps, size_t at, const char *what) {
    if (!ps->failed) errfmt(ps->err, ps->errlen, "jsonpath: %s at offset %zu", what, at);
    ps->failed = 1;
    return -1;
}

static int add_step(struct path *p, struct step st) {
    struct step *v = realloc(p->steps, (p->n + 1) * sizeof(*v));
    if (!v) return -1;
    p->steps = v;
    p->steps[p->n++] = st;
    return 0;
}

static int is_name_char(char c) {
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '/' || c == ':' || (unsigned char)c >= 0x80;
}

/* A field name at s[*i..end): letters, digits, _-/: and "\." for a dot. malloc'd. */
static char *parse_name(const char *s, size_t *i, size_t end) {
    size_t k = *i, n = 0;
    char *out = malloc(end - k + 1);
    if (!out) return NULL;
    while (k < end) {
        if (s[k] == '\\' && k + 1 < end && s[k + 1] == '.') { out[n++] = '.'; k += 2; continue; }
        if (!is_name_char(s[k])) break;
        out[n++] = s[k++];
    }
    out[n] = 0;
    *i = k;
    return out;
}

/* A quoted string at s[*i] (' or "), escapes \n \t \r \\ \" \'. malloc'd, or NULL with
 * *bad set when unterminated (NULL with *bad 0: out of memory). */
static char *parse_quoted(const char *s, size_t *i, size_t end, int *bad) {
    char q = s[*i];
    size_t k = *i + 1, n = 0;
    char *out = malloc(end - k + 1);
    *bad = 0;
    if (!out) return NULL;
    while (k < end && s[k] != q) {
        char c = s[k++];
        if (c == '\\' && k < end) {
            char e = s[k++];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        }
        out[n++] = c;
    }
    if (k >= end) { free(out); *bad = 1; return NULL; }
    out[n] = 0;
    *i = k + 1;
    return out;
}

static int parse_long(const char *s, size_t *i, size_t end, long *v) {
    size_t k = *i;
    if (k < end && (s[k] == '-' || s[k] == '+')) k++;
    if (k >= end || !isdigit((unsigned char)s[k])) return -1;
    char buf[32];
    size_t n = 0;
    for (k = *i; k < end && n < sizeof(buf) - 1 && (isdigit((unsigned char)s[k]) || (k == *i && (s[k] == '-' || s[k] == '+')));)
        buf[n++] = s[k++];
    buf[n] = 0;
    *v = strtol(buf, NULL, 10);
    *i = k;
    return 0;
}

static void skip_ws(const char *s, size_t *i, size_t end) {
    while (*i < end && isspace((unsigned char)s[*i])) (*i)++;
}

static struct path *parse_path(struct parser *ps, size_t *i, size_t end, int in_filter);

/* The literal on the right of a filter's operator. */
static cJSON *parse_literal(struct parser *ps, size_t *i, size_t end) {
    const char *s = ps->s;
    if (*i < end && (s[*i] == '"' || s[*i] == '\'')) {
        int bad;
        size_t at = *i;
        char *t = parse_quoted(s, i, end, &bad);
        if (!t) { fail_at(ps, at, bad ? "unterminated string" : ERR_OOM); return NULL; }
        cJSON *v = cJSON_CreateString(t);
        free(t);
        return v;
    }
    if (end - *i >= 4 && !strncmp(s + *i, "true", 4)) { *i += 4; return cJSON_CreateTrue(); }
    if (end - *i >= 5 && !strncmp(s + *i, "false", 5)) { *i += 5; return cJSON_CreateFalse(); }
    char *e;
    char buf[64];
    size_t n = 0;
    while (*i + n < end && n < sizeof(buf) - 1 && strchr("+-.eE0123456789", s[*i + n])) { buf[n] = s[*i + n]; n++; }
    buf[n] = 0;
    double d = n ? strtod(buf, &e) : 0;
    if (!n || *e) { fail_at(ps, *i, "expected a string, number, true or false"); return NULL; }
    *i += n;
    return cJSON_CreateNumber(d);
}

/* [?(@.x OP lit)] after "[?": fills st. */
static int parse_filter(struct parser *ps, size_t *i, size_t end, struct step *st) {
    const char *s = ps->s;
    skip_ws(s, i, end);
    if (*i >= end || s[*i] != '(') return fail_at(ps, *i, "expected ( after ?");
    (*i)++;
    skip_ws(s, i, end);
    if (*i >= end || s[*i] != '@') return fail_at(ps, *i, "a filter starts with @");
    st->kind = S_FILTER;
    st->fpath = parse_path(ps, i, end, 1);
    if (!st->fpath) return -1;
    skip_ws(s, i, end);
    static const struct { const char *t; enum filter_op op; } ops[] = {
        {"==", F_EQ}, {"!=", F_NE}, {"<=", F_LE}, {">=", F_GE}, {"<", F_LT}, {">", F_GT}};
    st->op = F_EXISTS;
    for (size_t k = 0; k < sizeof(ops) / sizeof(*ops); k++) {
        size_t l = strlen(ops[k].t);
        if (end - *i >= l && !strncmp(s + *i, ops[k].t, l)) { st->op = ops[k].op; *i += l; break; }
    }
    if (st->op != F_EXISTS) {
        skip_ws(s, i, end);
        st->lit = parse_literal(ps, i, end);
        if (!st->lit) return -1;
        skip_ws(s, i, end);
    }
    if (*i >= end || s[*i] != ')') return fail_at(ps, *i, "expected ) to close the filter");
    (*i)++;
    return 0;
}

/* [...] after the '[': fills st, consumes the ']'. */
static int parse_bracket(struct parser *ps, size_t *i, size_t end, struct step *st) {
    const char *s = ps->s;
    size_t at = *i;
    skip_ws(s, i, end);
    if (*i < end && (s[*i] == '\'' || s[*i] == '"')) {
        int bad;
        st->kind = S_FIELD;
        st->name = parse_quoted(s, i, end, &bad);
        if (!st->name) return fail_at(ps, at, bad ? "unterminated string" : ERR_OOM);
    } else if (*i < end && s[*i] == '*') {
        st->kind = S_WILD;
        (*i)++;
    } else if (*i < end && s[*i] == '?') {
        (*i)++;
        if (parse_filter(ps, i, end, st)) return -1;
    } else {
        long v;
        st->kind = S_INDEX;
        if (parse_long(s, i, end, &v) == 0) { st->i = v; st->has_i = 1; }
        skip_ws(s, i, end);
        if (*i < end && s[*i] == ':') {
            st->kind = S_SLICE;
            (*i)++;
            skip_ws(s, i, end);
            if (parse_long(s, i, end, &v) == 0) { st->j = v; st->has_j = 1; }
        } else if (!st->has_i) {
            return fail_at(ps, at, "expected an index, a slice, *, a quoted name or a filter in [ ]");
        }
    }
    skip_ws(s, i, end);
    if (*i >= end || s[*i] != ']') return fail_at(ps, *i, "expected ]");
    (*i)++;
    return 0;
}

/* A path at s[*i..end): [$|@] then .name, ..name, .*, [..] steps. In a filter it ends at
 * the first character that cannot continue it (an operator, a ')'); elsewhere it must
 * reach end. NULL on error (reported). */
static struct path *parse_path(struct parser *ps, size_t *i, size_t end, int in_filter) {
    const char *s = ps->s;
    struct path *p = calloc(1, sizeof(*p));
    if (!p) { fail_at(ps, *i, ERR_OOM); return NULL; }
    if (*i < end && s[*i] == '$') { p->from_root = 1; (*i)++; }
    else if (*i < end && s[*i] == '@') (*i)++;
    int first = 1;
    while (*i < end) {
        struct step st = {0};
        size_t at = *i;
        char c = s[*i];
        if (c == '.' && *i + 1 < end && s[*i + 1] == '.') {
            st.kind = S_RECURSE;
            if (add_step(p, st)) goto oom;
            *i += 2;
            if (*i < end && s[*i] == '[') continue;
            if (*i < end && s[*i] == '*') { (*i)++; st.kind = S_WILD; if (add_step(p, st)) goto oom; continue; }
            st.name = parse_name(s, i, end);
            if (!st.name) goto oom;
            if (!*st.name) { free(st.name); fail_at(ps, at, "expected a name after .."); goto bad; }
            st.kind = S_FIELD;
            if (add_step(p, st)) { free(st.name); goto oom; }
        } else if (c == '.') {
            (*i)++;
            if (*i < end && s[*i] == '*') { (*i)++; st.kind = S_WILD; if (add_step(p, st)) goto oom; first = 0; continue; }
            if (*i >= end || s[*i] == '[' || (in_filter && !is_name_char(s[*i]) && s[*i] != '\\')) {
                if (p->n == 0 && (*i >= end || s[*i] == '[')) { first = 0; continue; }   /* "{.}" / "{.[0]}" */
                fail_at(ps, at, "expected a name after .");
                goto bad;
            }
            st.name = parse_name(s, i, end);
            if (!st.name) goto oom;
            if (!*st.name) { free(st.name); fail_at(ps, *i, "unexpected character in a name"); goto bad; }
            st.kind = S_FIELD;
            if (add_step(p, st)) { free(st.name); goto oom; }
        } else if (c == '[') {
            (*i)++;
            if (parse_bracket(ps, i, end, &st)) { free(st.name); path_free(st.fpath); cJSON_Delete(st.lit); goto bad; }
            if (add_step(p, st)) { free(st.name); path_free(st.fpath); cJSON_Delete(st.lit); goto oom; }
        } else if (first && !in_filter && !p->from_root && is_name_char(c)) {
            st.name = parse_name(s, i, end);   /* kubectl takes {metadata.name} too */
            if (!st.name) goto oom;
            st.kind = S_FIELD;
            if (add_step(p, st)) { free(st.name); goto oom; }
        } else if (in_filter) {
            break;
        } else {
            fail_at(ps, at, "unexpected character in a path");
            goto bad;
        }
        first = 0;
    }
    return p;
oom:
    fail_at(ps, *i, ERR_OOM);
bad:
    path_free(p);
    return NULL;
}

static int add_node(struct node **v, size_t *n, struct node nd) {
    struct node *nv = realloc(*v, (*n + 1) * sizeof(*nv));
    if (!nv) return -1;
    *v = nv;
    (*v)[(*n)++] = nd;
    return 0;
}

/* The nodes from ps->pos up to the end of the template (depth 0) or to the {end} that
 * closes a range (depth > 0, consumed). */
static int parse_nodes(struct parser *ps, int depth, struct node **out, size_t *nout) {
    const char *s = ps->s;
    size_t len = strlen(s);
    *out = NULL;
    *nout = 0;
    while (ps->pos < len) {
        struct node nd = {0};
        if (s[ps->pos] != '{') {
            size_t k = ps->pos;
            while (k < len && s[k] != '{') {
                if (s[k] == '}') return fail_at(ps, k, "unexpected }");
                k++;
            }
            nd.kind = N_TEXT;
            nd.text = strndup(s + ps->pos, k - ps->pos);
            if (!nd.text || add_node(out, nout, nd)) { free(nd.text); return fail_at(ps, ps->pos, ERR_OOM); }
            ps->pos = k;
            continue;
        }
        size_t open = ps->pos, b = open + 1, e = b;
        /* the closing brace, outside quotes */
        char q = 0;
        while (e < len && (q || s[e] != '}')) {
            if (q && s[e] == '\\' && e + 1 < len) e++;
            else if (q && s[e] == q) q = 0;
            else if (!q && (s[e] == '"' || s[e] == '\'')) q = s[e];
            else if (!q && s[e] == '{') return fail_at(ps, e, "unexpected { inside { }");
            e++;
        }
        if (e >= len) return fail_at(ps, open, "unclosed {");
        ps->pos = e + 1;
        size_t i = b, end = e;
        skip_ws(s, &i, end);
        while (end > i && isspace((unsigned char)s[end - 1])) end--;
        if (i == end) return fail_at(ps, open, "empty { }");
        if (end - i == 3 && !strncmp(s + i, "end", 3)) {
            if (depth == 0) return fail_at(ps, open, "{end} without {range}");
            return 0;
        }
        if (s[i] == '"' || s[i] == '\'') {
            int bad;
            nd.kind = N_TEXT;
            nd.text = parse_quoted(s, &i, end, &bad);
            if (!nd.text) return fail_at(ps, open, bad ? "unterminated string" : ERR_OOM);
            if (i != end) { free(nd.text); return fail_at(ps, i, "text after a quoted string"); }
            if (add_node(out, nout, nd)) { free(nd.text); return fail_at(ps, open, ERR_OOM); }
            continue;
        }
        int range = end - i > 6 && !strncmp(s + i, "range", 5) && isspace((unsigned char)s[i + 5]);
        if (range) {
            i += 5;
            skip_ws(s, &i, end);
        }
        nd.kind = range ? N_RANGE : N_EXPR;
        nd.path = parse_path(ps, &i, end, 0);
        if (!nd.path) return -1;
        if (range && parse_nodes(ps, depth + 1, &nd.body, &nd.nbody)) {
            path_free(nd.path);
            nodes_free(nd.body, nd.nbody);
            return -1;
        }
        if (add_node(out, nout, nd)) {
            path_free(nd.path);
            nodes_free(nd.body, nd.nbody);
            return fail_at(ps, open, ERR_OOM);
        }
    }
    if (depth > 0) return fail_at(ps, len, "{range} without {end}");
    return 0;
}

int jsonpath_compile(const char *tmpl, struct jsonpath **out, char *err, size_t errlen) {
    struct parser ps = {.s = tmpl, .err = err, .errlen = errlen};
    *out = NULL;
    struct jsonpath *jp = calloc(1, sizeof(*jp));
    if (!jp) { errfmt(err, errlen, "jsonpath: out of memory"); return -1; }
    if (parse_nodes(&ps, 0, &jp->nodes, &jp->n)) {
        jsonpath_free(jp);
        return -1;
    }
    *out = jp;
    return 0;
}

/* ---- rendering -------------------------------------------------------------------------- */

struct vec {
    const cJSON **v;
    size_t n, cap;
    int oom;
};

static void vec_push(struct vec *x, const cJSON *j) {
    if (x->oom) return;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 8;
        const cJSON **v = realloc(x->v, cap * sizeof(*v));
        if (!v) { x->oom = 1; return; }
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = j;
}

static void descend(struct vec *x, const cJSON *j) {
    vec_push(x, j);
    if (cJSON_IsObject(j) || cJSON_IsArray(j))
        for (const cJSON *c = j->child; c; c = c->next) descend(x, c);
}

static int eval_path(const struct path *p, const cJSON *root, const cJSON *cur, struct vec *out);

/* Does item pass the filter step? */
static int filter_pass(const struct step *st, const cJSON *root, const cJSON *item) {
    struct vec r = {0};
    eval_path(st->fpath, root, item, &r);
    int pass = 0;
    if (st->op == F_EXISTS) {
        pass = r.n > 0 && !cJSON_IsNull(r.v[0]) && !cJSON_IsFalse(r.v[0]);
    } else if (r.n > 0) {
        const cJSON *v = r.v[0], *l = st->lit;
        int cmp = 0, comparable = 1;
        if (cJSON_IsString(v) && cJSON_IsString(l)) cmp = strcmp(v->valuestring, l->valuestring);
        else if (cJSON_IsNumber(v) && cJSON_IsNumber(l)) cmp = v->valuedouble < l->valuedouble ? -1 : v->valuedouble > l->valuedouble;
        else if (cJSON_IsBool(v) && cJSON_IsBool(l)) cmp = cJSON_IsTrue(v) != cJSON_IsTrue(l);
        else comparable = 0;
        switch (st->op) {
        case F_EQ: pass = comparable && cmp == 0; break;
        case F_NE: pass = !comparable || cmp != 0; break;
        case F_LT: pass = comparable && cmp < 0; break;
        case F_LE: pass = comparable && cmp <= 0; break;
        case F_GT: pass = comparable && cmp > 0; break;
        case F_GE: pass = comparable && cmp >= 0; break;
        case F_EXISTS: break;
        }
    }
    free(r.v);
    return pass;
}

/* Apply one step to every value in in, into out. */
static void apply_step(const struct step *st, const cJSON *root, const struct vec *in, struct vec *out) {
    for (size_t k = 0; k < in->n; k++) {
        const cJSON *j = in->v[k];
        switch (st->kind) {
        case S_FIELD:
            if (cJSON_IsObject(j)) {
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, st->name);
                if (c) vec_push(out, c);
            }
            break;
        case S_WILD:
            if (cJSON_IsObject(j) || cJSON_IsArray(j))
                for (const cJSON *c = j->child; c; c = c->next) vec_push(out, c);
            break;
        case S_INDEX:
            if (cJSON_IsArray(j)) {
                long n = cJSON_GetArraySize(j), i = st->i < 0 ? n + st->i : st->i;
                if (i >= 0 && i < n) vec_push(out, cJSON_GetArrayItem(j, (int)i));
            }
            break;
        case S_SLICE:
            if (cJSON_IsArray(j)) {
                long n = cJSON_GetArraySize(j);
                long a = st->has_i ? st->i : 0, b = st->has_j ? st->j : n;
                if (a < 0) a += n;
                if (b < 0) b += n;
                if (a < 0) a = 0;
                if (b > n) b = n;
                long i = 0;
                for (const cJSON *c = j->child; c && i < b; c = c->next, i++)
                    if (i >= a) vec_push(out, c);
            }
            break;
        case S_RECURSE:
            descend(out, j);
            break;
        case S_FILTER:
            if (cJSON_IsArray(j)) {
                for (const cJSON *c = j->child; c; c = c->next)
                    if (filter_pass(st, root, c)) vec_push(out, c);
            }
            break;
        }
    }
}

static int eval_path(const struct path *p, const cJSON *root, const cJSON *cur, struct vec *out) {
    struct vec a = {0}, b = {0};
    vec_push(&a, p->from_root ? root : cur);
    for (size_t k = 0; k < p->n && !a.oom; k++) {
        b.n = 0;
        apply_step(&p->steps[k], root, &a, &b);
        struct vec t = a;
        a = b;
        b = t;
        if (b.oom) a.oom = 1;
    }
    free(b.v);
    for (size_t k = 0; k < a.n; k++) vec_push(out, a.v[k]);
    int oom = a.oom || out->oom;
    free(a.v);
    return oom ? -1 : 0;
}

/* A value as kubectl prints it. */
static int print_value(struct dynbuf *out, const cJSON *v) {
    if (cJSON_IsString(v)) return dynbuf_append_str(out, v->valuestring);
    char *s = cJSON_PrintUnformatted(v);
    if (!s) return -1;
    int rc = dynbuf_append_str(out, s);
    free(s);
    return rc;
}

static int render_nodes(const struct node *v, size_t n, const cJSON *root, const cJSON *cur, struct dynbuf *out) {
    for (size_t k = 0; k < n; k++) {
        const struct node *nd = &v[k];
        if (nd->kind == N_TEXT) {
            if (dynbuf_append_str(out, nd->text) < 0) return -1;
            continue;
        }
        struct vec r = {0};
        if (eval_path(nd->path, root, cur, &r)) { free(r.v); return -1; }
        int rc = 0;
        for (size_t i = 0; i < r.n && !rc; i++) {
            if (nd->kind == N_RANGE) rc = render_nodes(nd->body, nd->nbody, root, r.v[i], out);
            else rc = (i && dynbuf_append(out, " ", 1) < 0) || print_value(out, r.v[i]) < 0 ? -1 : 0;
        }
        free(r.v);
        if (rc) return -1;
    }
    return 0;
}

int jsonpath_render(const struct jsonpath *jp, const cJSON *root, struct dynbuf *out) {
    return render_nodes(jp->nodes, jp->n, root, root, out);
}
