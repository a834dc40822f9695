/* tests/unit/fakeapi.h — an in-process fake Kubernetes API server for unit tests of code
 * that talks to one through kube/rest.h and runtime/informer.h (the reconcile pass).
 * Header-only (static functions), included by tests/unit/test_reconcile_*.c.
 *
 * Plain HTTP/1.1 on 127.0.0.1 (a free port), a thread per connection, keep-alive. It keeps
 * objects in memory by (group/version, resource, namespace, name) and answers as the API
 * server does, as far as the controller needs:
 *   GET      an object (404 when absent); a collection (one namespace or all) as a List
 *            with metadata.resourceVersion, filtered by labelSelector (k=v, k==v, k!=v, k,
 *            !k) and fieldSelector (metadata.name, metadata.namespace); watch=true
 *            streams the collection's events after resourceVersion
 *            (chunked, one JSON line each) until timeoutSeconds, the client goes or stop.
 *   POST     create in a collection (metadata.generateName honoured): 409 AlreadyExists
 *            when the name is taken; the server sets uid, resourceVersion,
 *            creationTimestamp, generation.
 *   PUT      replace an object, or its status (…/status); a metadata.resourceVersion in the
 *            body that is not the current one → 409 Conflict.
 *   PATCH    merge patch (RFC 7386) of the object or of its status (…/status), or of a
 *            pod's containers' resources (…/resize, matched by container name); a
 *            metadata.resourceVersion or metadata.uid in the patch that does not match →
 *            409. generation moves when spec changes.
 *   DELETE   with DeleteOptions preconditions (uid, resourceVersion) → 409 on mismatch,
 *            404 when absent; an object with finalizers only gets deletionTimestamp, and goes
 *            when its last finalizer is removed.
 * Every request is logged (method, path, query, body, status answered) for the tests to
 * assert on what was asked. Faults are injected per method and path: a status (with
 * Retry-After), or a dropped connection, for the next N matching requests.
 * Objects are seeded and changed from the test through the same store (fakeapi_seed,
 * fakeapi_patch, fakeapi_remove), which emits watch events like a client's write. */
#ifndef YAO_TEST_FAKEAPI_H
#define YAO_TEST_FAKEAPI_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "kube/config.h"
#include "kube/rest.h"

/* Where an object or a collection lives. */
struct fa_where {
    char prefix[128];   /* "/api/v1", "/apis/yao.dev/v1alpha1" */
    char res[64];       /* "pods" */
    char ns[128];       /* "" when cluster-scoped or all namespaces */
    char name[256];     /* "" for a collection */
    char sub[64];       /* "status", or "" */
};

struct fa_obj {
    struct fa_where at;
    cJSON *obj;
};

struct fa_event {
    struct fa_where at;   /* of the object (name set) */
    long rv;
    char *line;           /* {"type":...,"object":...}\n */
    cJSON *obj;           /* the object as the event shows it (for label filtering) */
};

struct fa_request {
    char method[8];
    char *path;           /* without the query */
    char *query;          /* "" when none */
    char *body;           /* "" when none */
    int status;           /* answered; 0 = dropped, 200 for a watch */
};

struct fa_fault {
    char method[8];       /* "" = any */
    char path[640];       /* exact path (no query) */
    int status;           /* 0 with drop */
    int retry_after_s;    /* -1: no header */
    int drop;             /* close the connection without an answer */
    int times;            /* left */
    char body[1024];      /* the answer's body; "" = an InternalError Status */
};

struct fakeapi {
    int listen_fd, port;
    char server[64];
    pthread_t acceptor;
    int running;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int stopping;
    long rv;
    long uids;
    struct fa_obj *objs;
    size_t nobjs, capobjs;
    struct fa_event *events;
    size_t nevents, capevents;
    struct fa_request *log;
    size_t nlog, caplog;
    struct fa_fault faults[16];
    size_t nfaults;
    pthread_t *conns;
    int *conn_fds;
    size_t nconns, capconns;
    struct fa_where held[4];   /* collections whose watch events wait (fakeapi_hold) */
    size_t nheld;
};

/* ---- small helpers ------------------------------------------------------------------ */

static inline void *fa_grow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return p;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(p, n * size);
    if (!q) { fprintf(stderr, "fakeapi: out of memory\n"); abort(); }
    *cap = n;
    return q;
}

static inline char *fa_strndup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) { fprintf(stderr, "fakeapi: out of memory\n"); abort(); }
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static inline cJSON *fa_md(cJSON *obj) {
    cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(md)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
        md = cJSON_AddObjectToObject(obj, "metadata");
    }
    return md;
}

static inline const char *fa_md_str(const cJSON *obj, const char *field) {
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), field));
}

static inline void fa_set_str(cJSON *o, const char *key, const char *v) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    cJSON_AddStringToObject(o, key, v);
}

static inline void fa_now_rfc3339(char *out, size_t n) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Split a path into where it points. 0, or -1 when it is no API path. */
static inline int fa_parse_path(const char *path, struct fa_where *w) {
    char buf[1024], *seg[12], *save = NULL;
    int n = 0, rest;
    memset(w, 0, sizeof(*w));
    if (strlen(path) >= sizeof(buf)) return -1;
    strcpy(buf, path);
    for (char *s = strtok_r(buf, "/", &save); s && n < 12; s = strtok_r(NULL, "/", &save)) seg[n++] = s;
    if (n >= 2 && !strcmp(seg[0], "api")) {
        snprintf(w->prefix, sizeof w->prefix, "/api/%s", seg[1]);
        rest = 2;
    } else if (n >= 3 && !strcmp(seg[0], "apis")) {
        snprintf(w->prefix, sizeof w->prefix, "/apis/%s/%s", seg[1], seg[2]);
        rest = 3;
    } else {
        return -1;
    }
    char **r = seg + rest;
    int m = n - rest;
    if (m < 1) return -1;
    if (!strcmp(r[0], "namespaces") && m >= 3) {
        snprintf(w->ns, sizeof w->ns, "%s", r[1]);
        snprintf(w->res, sizeof w->res, "%s", r[2]);
        if (m >= 4) snprintf(w->name, sizeof w->name, "%s", r[3]);
        if (m >= 5) snprintf(w->sub, sizeof w->sub, "%s", r[4]);
        return m > 5 ? -1 : 0;
    }
    snprintf(w->res, sizeof w->res, "%s", r[0]);
    if (m >= 2) snprintf(w->name, sizeof w->name, "%s", r[1]);
    if (m >= 3) snprintf(w->sub, sizeof w->sub, "%s", r[2]);
    return m > 3 ? -1 : 0;
}

static inline int fa_same_object(const struct fa_where *a, const struct fa_where *b) {
    return !strcmp(a->prefix, b->prefix) && !strcmp(a->res, b->res) && !strcmp(a->ns, b->ns) &&
           !strcmp(a->name, b->name);
}

/* Does the object at `at` belong to collection c (c->ns "" = every namespace)? */
static inline int fa_in_collection(const struct fa_where *at, const struct fa_where *c) {
    return !strcmp(at->prefix, c->prefix) && !strcmp(at->res, c->res) && (!c->ns[0] || !strcmp(at->ns, c->ns));
}

/* A query parameter's value (URL-decoded) into out; 1 found, 0 not. */
static inline int fa_query(const char *query, const char *key, char *out, size_t n) {
    size_t kl = strlen(key);
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
        if ((size_t)(end - p) > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            size_t o = 0;
            for (const char *q = p + kl + 1; q < end && o + 1 < n; q++) {
                if (*q == '%' && q + 2 < end) {
                    char hex[3] = {q[1], q[2], 0};
                    out[o++] = (char)strtol(hex, NULL, 16);
                    q += 2;
                } else {
                    out[o++] = *q == '+' ? ' ' : *q;
                }
            }
            out[o] = '\0';
            return 1;
        }
        p = amp ? amp + 1 : NULL;
    }
    if (n) out[0] = '\0';
    return 0;
}

/* Does obj match the label selector sel (terms joined by ',')? */
static inline int fa_selector_matches(const cJSON *obj, const char *sel) {
    char buf[1024], *save = NULL;
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");
    if (!sel || !*sel) return 1;
    snprintf(buf, sizeof buf, "%s", sel);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *ne = strstr(t, "!="), *eq = strchr(t, '=');
        if (ne) {
            *ne = '\0';
            const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, t));
            if (v && !strcmp(v, ne + 2)) return 0;
        } else if (eq) {
            *eq = '\0';
            const char *want = eq[1] == '=' ? eq + 2 : eq + 1;
            const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, t));
            if (!v || strcmp(v, want)) return 0;
        } else if (t[0] == '!') {
            if (cJSON_GetObjectItemCaseSensitive(labels, t + 1)) return 0;
        } else if (!cJSON_GetObjectItemCaseSensitive(labels, t)) {
            return 0;
        }
    }
    return 1;
}

/* Does obj match the field selector sel (metadata.name and metadata.namespace, = or ==
 * or !=, joined by ',')? Another field matches nothing. */
static inline int fa_fields_match(const cJSON *obj, const char *sel) {
    char buf[1024], *save = NULL;
    if (!sel || !*sel) return 1;
    snprintf(buf, sizeof buf, "%s", sel);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *ne = strstr(t, "!="), *eq = strchr(t, '=');
        if (!eq) return 0;
        const char *want = ne ? ne + 2 : eq[1] == '=' ? eq + 2 : eq + 1;
        *(ne ? ne : eq) = '\0';
        const char *have = !strcmp(t, "metadata.name") ? fa_md_str(obj, "name")
                           : !strcmp(t, "metadata.namespace") ? fa_md_str(obj, "namespace") : NULL;
        if (!strcmp(t, "metadata.namespace") && !have) have = "";
        if (!strcmp(t, "metadata.name") || !strcmp(t, "metadata.namespace")) {
            int same = have && !strcmp(have, want);
            if (ne ? same : !same) return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

/* RFC 7386 merge patch of patch into *target (replaced when either is no object). */
static inline void fa_merge_patch(cJSON **target, const cJSON *patch) {
    if (!cJSON_IsObject(patch)) {
        cJSON_Delete(*target);
        *target = cJSON_Duplicate(patch, 1);
        return;
    }
    if (!cJSON_IsObject(*target)) {
        cJSON_Delete(*target);
        *target = cJSON_CreateObject();
    }
    const cJSON *p;
    cJSON_ArrayForEach(p, patch) {
        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(*target, p->string);
            continue;
        }
        cJSON *cur = cJSON_DetachItemFromObjectCaseSensitive(*target, p->string);
        fa_merge_patch(&cur, p);
        cJSON_AddItemToObject(*target, p->string, cur);
    }
}

/* The pods/resize subresource (Kubernetes >= 1.33): of a strategic merge patch, only each
 * container's resources (matched by name in spec.containers) change. */
static inline void fa_resize_patch(cJSON *pod, const cJSON *patch) {
    const cJSON *pc;
    cJSON_ArrayForEach(pc, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(patch, "spec"), "containers")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pc, "name"));
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(pc, "resources");
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers")) {
            const char *have = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name"));
            if (!name || !have || strcmp(name, have) || !res) continue;
            cJSON *cur = cJSON_DetachItemFromObjectCaseSensitive(c, "resources");
            fa_merge_patch(&cur, res);
            if (cur) cJSON_AddItemToObject(c, "resources", cur);
        }
    }
}

/* ---- the store (callers hold fa->lock) ------------------------------------------------ */

static inline struct fa_obj *fa_find(struct fakeapi *fa, const struct fa_where *w) {
    for (size_t i = 0; i < fa->nobjs; i++)
        if (fa_same_object(&fa->objs[i].at, w)) return &fa->objs[i];
    return NULL;
}

static inline void fa_emit(struct fakeapi *fa, const char *type, const struct fa_where *at, const cJSON *obj) {
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddItemToObject(ev, "object", cJSON_Duplicate(obj, 1));
    char *s = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    fa->events = fa_grow(fa->events, &fa->capevents, fa->nevents + 1, sizeof(*fa->events));
    struct fa_event *e = &fa->events[fa->nevents++];
    e->at = *at;
    e->rv = fa->rv;
    size_t l = strlen(s);
    e->line = malloc(l + 2);
    if (!e->line) abort();
    memcpy(e->line, s, l);
    e->line[l] = '\n';
    e->line[l + 1] = '\0';
    free(s);
    e->obj = cJSON_Duplicate(obj, 1);
    pthread_cond_broadcast(&fa->changed);
}

static inline void fa_bump_rv(struct fakeapi *fa, cJSON *obj) {
    char rv[32];
    snprintf(rv, sizeof rv, "%ld", ++fa->rv);
    fa_set_str(fa_md(obj), "resourceVersion", rv);
}

/* Store obj (taken) as a new object at w. keep_meta: keep a given uid/creationTimestamp. */
static inline cJSON *fa_store_new(struct fakeapi *fa, const struct fa_where *w, cJSON *obj, int keep_meta) {
    cJSON *md = fa_md(obj);
    char buf[64];
    fa_set_str(md, "name", w->name);
    if (w->ns[0]) fa_set_str(md, "namespace", w->ns);
    if (!keep_meta || !fa_md_str(obj, "uid")) {
        snprintf(buf, sizeof buf, "uid-%ld", ++fa->uids);
        fa_set_str(md, "uid", buf);
    }
    if (!keep_meta || !fa_md_str(obj, "creationTimestamp")) {
        fa_now_rfc3339(buf, sizeof buf);
        fa_set_str(md, "creationTimestamp", buf);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(md, "generation");
    cJSON_AddNumberToObject(md, "generation", 1);
    cJSON_DeleteItemFromObjectCaseSensitive(md, "deletionTimestamp");
    fa_bump_rv(fa, obj);
    fa->objs = fa_grow(fa->objs, &fa->capobjs, fa->nobjs + 1, sizeof(*fa->objs));
    fa->objs[fa->nobjs].at = *w;
    fa->objs[fa->nobjs].obj = obj;
    fa->nobjs++;
    fa_emit(fa, "ADDED", w, obj);
    return obj;
}

static inline void fa_drop(struct fakeapi *fa, struct fa_obj *o) {
    struct fa_where at = o->at;
    cJSON *obj = o->obj;
    fa_bump_rv(fa, obj);
    *o = fa->objs[--fa->nobjs];
    fa_emit(fa, "DELETED", &at, obj);
    cJSON_Delete(obj);
}

static inline int fa_has_finalizers(const cJSON *obj) {
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                               "finalizers")) > 0;
}

/* The object o changed into next (taken): fix what a client cannot change, bump the
 * version and generation, emit; an object being deleted whose finalizers are gone goes. */
static inline void fa_store_update(struct fakeapi *fa, struct fa_obj *o, cJSON *next) {
    cJSON *md = fa_md(next), *old_md = fa_md(o->obj);
    static const char *const fixed[] = {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, fixed[i]);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(old_md, fixed[i]);
        if (v) cJSON_AddItemToObject(md, fixed[i], cJSON_Duplicate(v, 1));
    }
    double gen = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(old_md, "generation"));
    if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(o->obj, "spec"),
                       cJSON_GetObjectItemCaseSensitive(next, "spec"), 1))
        gen += 1;
    cJSON_DeleteItemFromObjectCaseSensitive(md, "generation");
    cJSON_AddNumberToObject(md, "generation", gen);
    fa_bump_rv(fa, next);
    cJSON_Delete(o->obj);
    o->obj = next;
    if (fa_md_str(next, "deletionTimestamp") && !fa_has_finalizers(next)) {
        fa_drop(fa, o);
        return;
    }
    fa_emit(fa, "MODIFIED", &o->at, next);
}

/* ---- the HTTP side -------------------------------------------------------------------- */

static inline const char *fa_reason_phrase(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

static inline int fa_send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static inline int fa_respond(int fd, int status, const char *extra_headers, const char *body) {
    char head[512];
    size_t bl = strlen(body);
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s\r\n",
                     status, fa_reason_phrase(status), bl, extra_headers ? extra_headers : "");
    /* one write: a head and a body sent apart meet Nagle and the delayed ACK (40 ms) */
    char *msg = malloc((size_t)n + bl);
    if (!msg) abort();
    memcpy(msg, head, (size_t)n);
    memcpy(msg + n, body, bl);
    int rc = fa_send_all(fd, msg, (size_t)n + bl);
    free(msg);
    return rc;
}

/* A Status body. */
static inline char *fa_status_body(int code, const char *reason, const char *msg) {
    cJSON *st = cJSON_CreateObject();
    cJSON_AddStringToObject(st, "kind", "Status");
    cJSON_AddStringToObject(st, "apiVersion", "v1");
    cJSON_AddStringToObject(st, "status", "Failure");
    cJSON_AddStringToObject(st, "message", msg);
    cJSON_AddStringToObject(st, "reason", reason);
    cJSON_AddNumberToObject(st, "code", code);
    char *s = cJSON_PrintUnformatted(st);
    cJSON_Delete(st);
    return s;
}

struct fa_answer {
    int status;
    char *body;      /* malloc'd */
};

static inline void fa_fail(struct fa_answer *a, int code, const char *reason, const char *msg) {
    a->status = code;
    a->body = fa_status_body(code, reason, msg);
}

static inline void fa_ok(struct fa_answer *a, int code, const cJSON *obj) {
    a->status = code;
    a->body = cJSON_PrintUnformatted(obj);
}

/* Does a metadata.<field> the client sent contradict the stored one? */
static inline int fa_precondition_fails(const cJSON *sent, const cJSON *stored, const char *field) {
    const char *want = fa_md_str(sent, field);
    const char *have = fa_md_str(stored, field);
    return want && *want && (!have || strcmp(want, have));
}

/* Answer one non-watch request (fa->lock held). */
static inline void fa_handle(struct fakeapi *fa, const char *method, const char *path, const char *query, const char *body,
                      struct fa_answer *a) {
    struct fa_where w;
    if (fa_parse_path(path, &w) < 0) { fa_fail(a, 404, "NotFound", "the server could not find the requested resource"); return; }
    cJSON *in = body && *body ? cJSON_Parse(body) : NULL;
    struct fa_obj *o = w.name[0] ? fa_find(fa, &w) : NULL;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s \"%s\" not found", w.res, w.name);

    if (!strcmp(method, "GET") && w.name[0]) {
        if (!o || (w.sub[0] && strcmp(w.sub, "status"))) fa_fail(a, 404, "NotFound", msg);
        else fa_ok(a, 200, o->obj);
    } else if (!strcmp(method, "GET")) {
        char sel[512], fields[512];
        fa_query(query, "labelSelector", sel, sizeof sel);
        fa_query(query, "fieldSelector", fields, sizeof fields);
        cJSON *list = cJSON_CreateObject(), *items;
        char rv[32];
        snprintf(rv, sizeof rv, "%ld", fa->rv);
        cJSON_AddStringToObject(list, "kind", "List");
        cJSON_AddStringToObject(list, "apiVersion", "v1");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(list, "metadata"), "resourceVersion", rv);
        items = cJSON_AddArrayToObject(list, "items");
        for (size_t i = 0; i < fa->nobjs; i++)
            if (fa_in_collection(&fa->objs[i].at, &w) && fa_selector_matches(fa->objs[i].obj, sel) &&
                fa_fields_match(fa->objs[i].obj, fields))
                cJSON_AddItemToArray(items, cJSON_Duplicate(fa->objs[i].obj, 1));
        fa_ok(a, 200, list);
        cJSON_Delete(list);
    } else if (!strcmp(method, "POST") && !w.name[0]) {
        const char *name = fa_md_str(in, "name"), *gen = fa_md_str(in, "generateName");
        char made[300];
        if (cJSON_IsObject(in) && (!name || !*name) && gen && *gen) {
            /* generateName: the prefix and five characters, as the API server does */
            static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
            unsigned long k = (unsigned long)++fa->uids * 2654435761u;
            char tail[6];
            for (int i = 0; i < 5; i++, k /= 27) tail[i] = alnum[k % 27];
            tail[5] = '\0';
            snprintf(made, sizeof made, "%.250s%s", gen, tail);
            fa_set_str(fa_md(in), "name", made);
            name = fa_md_str(in, "name");
        }
        if (!cJSON_IsObject(in) || !name || !*name) {
            fa_fail(a, 422, "Invalid", "metadata.name: Required value");
        } else {
            snprintf(w.name, sizeof w.name, "%s", name);
            if (fa_find(fa, &w)) {
                snprintf(msg, sizeof msg, "%s \"%s\" already exists", w.res, w.name);
                fa_fail(a, 409, "AlreadyExists", msg);
            } else {
                cJSON *stored = fa_store_new(fa, &w, in, 0);
                in = NULL;
                fa_ok(a, 201, stored);
            }
        }
    } else if ((!strcmp(method, "PUT") || !strcmp(method, "PATCH")) && w.name[0]) {
        int resize = !strcmp(w.sub, "resize") && !strcmp(w.res, "pods") && !strcmp(method, "PATCH");
        if (!o || (w.sub[0] && strcmp(w.sub, "status") && !resize)) {
            fa_fail(a, 404, "NotFound", msg);
        } else if (!cJSON_IsObject(in)) {
            fa_fail(a, 400, "BadRequest", "the body is no JSON object");
        } else if (fa_precondition_fails(in, o->obj, "resourceVersion") || fa_precondition_fails(in, o->obj, "uid")) {
            snprintf(msg, sizeof msg, "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                     "please apply your changes to the latest version and try again", w.res, w.name);
            fa_fail(a, 409, "Conflict", msg);
        } else {
            cJSON *next;
            if (!strcmp(method, "PUT") && !w.sub[0]) {
                next = in;
                in = NULL;
            } else {
                next = cJSON_Duplicate(o->obj, 1);
                if (!strcmp(method, "PATCH") && !w.sub[0]) {
                    fa_merge_patch(&next, in);
                } else if (resize) {
                    fa_resize_patch(next, in);
                } else {
                    /* the status subresource: only status changes */
                    cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(next, "status");
                    const cJSON *sent = cJSON_GetObjectItemCaseSensitive(in, "status");
                    if (!strcmp(method, "PUT")) {
                        cJSON_Delete(st);
                        st = sent ? cJSON_Duplicate(sent, 1) : NULL;
                    } else if (sent) {
                        fa_merge_patch(&st, sent);
                    }
                    if (st) cJSON_AddItemToObject(next, "status", st);
                }
            }
            if (!strcmp(method, "PUT") && !w.sub[0]) {
                /* a replace keeps the stored status (the status subresource owns it) */
                cJSON_DeleteItemFromObjectCaseSensitive(next, "status");
                const cJSON *st = cJSON_GetObjectItemCaseSensitive(o->obj, "status");
                if (st) cJSON_AddItemToObject(next, "status", cJSON_Duplicate(st, 1));
            }
            struct fa_where at = o->at;
            fa_store_update(fa, o, next);
            o = fa_find(fa, &at);
            if (o) fa_ok(a, 200, o->obj);
            else fa_fail(a, 200, "Success", "deleted");   /* its last finalizer went */
        }
    } else if (!strcmp(method, "DELETE") && w.name[0] && !w.sub[0]) {
        const cJSON *pre = cJSON_GetObjectItemCaseSensitive(in, "preconditions");
        const char *puid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pre, "uid"));
        const char *prv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pre, "resourceVersion"));
        if (!o) {
            fa_fail(a, 404, "NotFound", msg);
        } else if ((puid && strcmp(puid, fa_md_str(o->obj, "uid"))) ||
                   (prv && strcmp(prv, fa_md_str(o->obj, "resourceVersion")))) {
            snprintf(msg, sizeof msg, "Precondition failed: %s in precondition: %s, %s in object meta: %s",
                     puid && strcmp(puid, fa_md_str(o->obj, "uid")) ? "UID" : "ResourceVersion", puid ? puid : prv,
                     puid && strcmp(puid, fa_md_str(o->obj, "uid")) ? "UID" : "ResourceVersion",
                     puid && strcmp(puid, fa_md_str(o->obj, "uid")) ? fa_md_str(o->obj, "uid")
                                                                    : fa_md_str(o->obj, "resourceVersion"));
            fa_fail(a, 409, "Conflict", msg);
        } else if (fa_has_finalizers(o->obj)) {
            if (!fa_md_str(o->obj, "deletionTimestamp")) {
                char ts[64];
                fa_now_rfc3339(ts, sizeof ts);
                fa_set_str(fa_md(o->obj), "deletionTimestamp", ts);
                fa_bump_rv(fa, o->obj);
                fa_emit(fa, "MODIFIED", &o->at, o->obj);
            }
            fa_ok(a, 200, o->obj);
        } else {
            fa_ok(a, 200, o->obj);
            fa_drop(fa, o);
        }
    } else {
        fa_fail(a, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
    }
    cJSON_Delete(in);
}

static inline void fa_log(struct fakeapi *fa, const char *method, const char *path, const char *query, const char *body,
                   int status) {
    fa->log = fa_grow(fa->log, &fa->caplog, fa->nlog + 1, sizeof(*fa->log));
    struct fa_request *r = &fa->log[fa->nlog++];
    snprintf(r->method, sizeof r->method, "%s", method);
    r->path = fa_strndup(path, strlen(path));
    r->query = fa_strndup(query, strlen(query));
    r->body = fa_strndup(body, strlen(body));
    r->status = status;
}

/* The fault for this request, used up by one (fa->lock held), or NULL. */
static inline struct fa_fault *fa_take_fault(struct fakeapi *fa, const char *method, const char *path) {
    for (size_t i = 0; i < fa->nfaults; i++) {
        struct fa_fault *f = &fa->faults[i];
        if (f->times <= 0 || strcmp(f->path, path) || (f->method[0] && strcmp(f->method, method))) continue;
        f->times--;
        return f;
    }
    return NULL;
}

static inline int fa_client_gone(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return 1;
    char c;
    return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Stream the collection's events after rv until timeout_s, the client goes or stop. */
/* Must a watcher of collection c wait before event e (e is c's, in a held collection)?
 * Others' events pass; c's later ones wait behind it, keeping the order. */
static inline int fa_event_waits(const struct fakeapi *fa, const struct fa_event *e, const struct fa_where *c) {
    if (!fa_in_collection(&e->at, c)) return 0;
    for (size_t i = 0; i < fa->nheld; i++)
        if (fa_in_collection(&e->at, &fa->held[i])) return 1;
    return 0;
}

static inline int fa_watch(struct fakeapi *fa, int fd, const struct fa_where *c, const char *sel, long rv, long timeout_s) {
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    if (fa_send_all(fd, head, strlen(head)) < 0) return -1;
    int64_t end = clock_mono_ms() + (timeout_s > 0 ? timeout_s * 1000 : 300000);
    size_t next = 0;
    pthread_mutex_lock(&fa->lock);
    while (next < fa->nevents && fa->events[next].rv <= rv) next++;
    for (;;) {
        while (next < fa->nevents && !fa_event_waits(fa, &fa->events[next], c)) {
            struct fa_event *e = &fa->events[next++];
            if (!fa_in_collection(&e->at, c) || !fa_selector_matches(e->obj, sel)) continue;
            char sz[32];
            size_t l = strlen(e->line);
            int n = snprintf(sz, sizeof sz, "%zx\r\n", l);
            char *chunk = malloc((size_t)n + l + 3);
            if (!chunk) abort();
            memcpy(chunk, sz, (size_t)n);
            memcpy(chunk + n, e->line, l);
            memcpy(chunk + n + l, "\r\n", 3);
            pthread_mutex_unlock(&fa->lock);
            int rc = fa_send_all(fd, chunk, (size_t)n + l + 2);
            free(chunk);
            if (rc < 0) return -1;
            pthread_mutex_lock(&fa->lock);
        }
        if (fa->stopping) { pthread_mutex_unlock(&fa->lock); return -1; }
        if (clock_mono_ms() >= end) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 500 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&fa->changed, &fa->lock, &ts);
        if ((next >= fa->nevents || fa_event_waits(fa, &fa->events[next], c)) && fa_client_gone(fd)) { pthread_mutex_unlock(&fa->lock); return -1; }
    }
    pthread_mutex_unlock(&fa->lock);
    return fa_send_all(fd, "0\r\n\r\n", 5);
}

struct fa_conn_arg {
    struct fakeapi *fa;
    int fd;
};

static inline void *fa_conn_main(void *arg) {
    struct fakeapi *fa = ((struct fa_conn_arg *)arg)->fa;
    int fd = ((struct fa_conn_arg *)arg)->fd;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    free(arg);
    for (;;) {
        /* one request: headers, then Content-Length bytes of body */
        char *hend = NULL;
        while (!(hend = len ? memmem(buf, len, "\r\n\r\n", 4) : NULL)) {
            buf = fa_grow(buf, &cap, len + 4096, 1);
            ssize_t r = recv(fd, buf + len, cap - len, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) goto done;
            len += (size_t)r;
        }
        size_t hlen = (size_t)(hend - buf) + 4, blen = 0;
        char *head = fa_strndup(buf, hlen);
        int expect_continue = 0;
        for (char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
            if (!strncasecmp(l + 2, "Content-Length:", 15)) blen = (size_t)strtoul(l + 17, NULL, 10);
            if (!strncasecmp(l + 2, "Expect:", 7) && strstr(l + 2, "100-continue")) expect_continue = 1;
        }
        if (expect_continue && len < hlen + blen &&
            fa_send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0) { free(head); goto done; }
        while (len < hlen + blen) {
            buf = fa_grow(buf, &cap, hlen + blen + 1, 1);
            ssize_t r = recv(fd, buf + len, cap - len, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { free(head); goto done; }
            len += (size_t)r;
        }
        char method[16] = "", target[2048] = "";
        if (sscanf(head, "%15s %2047s", method, target) != 2) { free(head); goto done; }
        free(head);
        char *body = fa_strndup(buf + hlen, blen);
        memmove(buf, buf + hlen + blen, len - hlen - blen);
        len -= hlen + blen;
        char *q = strchr(target, '?');
        const char *query = "";
        if (q) { *q = '\0'; query = q + 1; }

        char watch[16];
        fa_query(query, "watch", watch, sizeof watch);
        pthread_mutex_lock(&fa->lock);
        struct fa_fault *f = fa_take_fault(fa, method, target);
        struct fa_fault fault = f ? *f : (struct fa_fault){0};
        if (f) {
            fa_log(fa, method, target, query, body, fault.drop ? 0 : fault.status);
            pthread_mutex_unlock(&fa->lock);
            free(body);
            if (fault.drop) goto done;
            char hdr[64] = "", *st = fault.body[0] ? fa_strndup(fault.body, strlen(fault.body))
                                                   : fa_status_body(fault.status, "InternalError", "injected fault");
            if (fault.retry_after_s >= 0) snprintf(hdr, sizeof hdr, "Retry-After: %d\r\n", fault.retry_after_s);
            int rc = fa_respond(fd, fault.status, hdr, st);
            free(st);
            if (rc < 0) goto done;
            continue;
        }
        if (!strcmp(method, "GET") && (!strcmp(watch, "true") || !strcmp(watch, "1"))) {
            struct fa_where c;
            char sel[512], rvs[32], to[32];
            fa_log(fa, method, target, query, body, 200);
            pthread_mutex_unlock(&fa->lock);
            free(body);
            fa_query(query, "labelSelector", sel, sizeof sel);
            fa_query(query, "resourceVersion", rvs, sizeof rvs);
            fa_query(query, "timeoutSeconds", to, sizeof to);
            if (fa_parse_path(target, &c) < 0 || c.name[0]) {
                char *st = fa_status_body(404, "NotFound", "no such collection");
                int rc = fa_respond(fd, 404, NULL, st);
                free(st);
                if (rc < 0) goto done;
                continue;
            }
            if (fa_watch(fa, fd, &c, sel, atol(rvs), atol(to)) < 0) goto done;
            continue;
        }
        struct fa_answer a = {0};
        fa_handle(fa, method, target, query, body, &a);
        fa_log(fa, method, target, query, body, a.status);
        pthread_mutex_unlock(&fa->lock);
        free(body);
        int rc = fa_respond(fd, a.status, NULL, a.body ? a.body : "{}");
        free(a.body);
        if (rc < 0) goto done;
    }
done:
    /* The client sees the end at once; the fd itself is closed by fakeapi_stop (its
     * number stays ours until then). */
    shutdown(fd, SHUT_RDWR);
    free(buf);
    return NULL;
}

static inline void *fa_accept_main(void *arg) {
    struct fakeapi *fa = arg;
    for (;;) {
        int fd = accept(fa->listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return NULL;
        }
        pthread_mutex_lock(&fa->lock);
        if (fa->stopping) { pthread_mutex_unlock(&fa->lock); close(fd); return NULL; }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct fa_conn_arg *ca = malloc(sizeof(*ca));
        if (!ca) abort();
        ca->fa = fa;
        ca->fd = fd;
        size_t cap = fa->capconns;
        fa->conns = fa_grow(fa->conns, &cap, fa->nconns + 1, sizeof(*fa->conns));
        cap = fa->capconns;
        fa->conn_fds = fa_grow(fa->conn_fds, &cap, fa->nconns + 1, sizeof(*fa->conn_fds));
        fa->capconns = cap;
        if (pthread_create(&fa->conns[fa->nconns], NULL, fa_conn_main, ca) != 0) {
            free(ca);
            close(fd);
        } else {
            fa->conn_fds[fa->nconns++] = fd;
        }
        pthread_mutex_unlock(&fa->lock);
    }
}

/* ---- the test's side ------------------------------------------------------------------ */

/* Listen on 127.0.0.1 (a free port) and serve. 0 or -1. */
static inline int fakeapi_start(struct fakeapi *fa) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    memset(fa, 0, sizeof(*fa));
    pthread_mutex_init(&fa->lock, NULL);
    pthread_cond_init(&fa->changed, NULL);
    fa->rv = 100;
    fa->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fa->listen_fd < 0 || bind(fa->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fa->listen_fd, 64) < 0 || getsockname(fa->listen_fd, (struct sockaddr *)&sa, &sl) < 0) {
        fprintf(stderr, "fakeapi: listen: %s\n", strerror(errno));
        if (fa->listen_fd >= 0) close(fa->listen_fd);
        fa->listen_fd = -1;
        return -1;
    }
    fa->port = ntohs(sa.sin_port);
    snprintf(fa->server, sizeof fa->server, "http://127.0.0.1:%d", fa->port);
    if (pthread_create(&fa->acceptor, NULL, fa_accept_main, fa) != 0) return -1;
    fa->running = 1;
    return 0;
}

/* Stop serving (open connections are cut) and free everything. */
static inline void fakeapi_stop(struct fakeapi *fa) {
    if (fa->running) {
        pthread_mutex_lock(&fa->lock);
        fa->stopping = 1;
        pthread_cond_broadcast(&fa->changed);
        for (size_t i = 0; i < fa->nconns; i++) shutdown(fa->conn_fds[i], SHUT_RDWR);
        pthread_mutex_unlock(&fa->lock);
        shutdown(fa->listen_fd, SHUT_RDWR);
        pthread_join(fa->acceptor, NULL);
        for (size_t i = 0; i < fa->nconns; i++) {
            pthread_join(fa->conns[i], NULL);
            close(fa->conn_fds[i]);
        }
        fa->running = 0;
    }
    if (fa->listen_fd >= 0) close(fa->listen_fd);
    fa->listen_fd = -1;
    for (size_t i = 0; i < fa->nobjs; i++) cJSON_Delete(fa->objs[i].obj);
    for (size_t i = 0; i < fa->nevents; i++) { free(fa->events[i].line); cJSON_Delete(fa->events[i].obj); }
    for (size_t i = 0; i < fa->nlog; i++) { free(fa->log[i].path); free(fa->log[i].query); free(fa->log[i].body); }
    free(fa->objs);
    free(fa->events);
    free(fa->log);
    free(fa->conns);
    free(fa->conn_fds);
    fa->objs = NULL; fa->events = NULL; fa->log = NULL; fa->conns = NULL; fa->conn_fds = NULL;
    fa->nobjs = fa->nevents = fa->nlog = fa->nconns = 0;
    pthread_cond_destroy(&fa->changed);
    pthread_mutex_destroy(&fa->lock);
}

/* A kube client for the fake (no credentials), or NULL. */
static inline struct kube_client *fakeapi_client(const struct fakeapi *fa) {
    char doc[512], err[512];
    struct kube_config cfg;
    snprintf(doc, sizeof doc,
             "current-context: fake\n"
             "clusters:\n- name: fake\n  cluster: {server: '%s'}\n"
             "contexts:\n- name: fake\n  context: {cluster: fake, namespace: t}\n", fa->server);
    if (kube_config_parse(doc, strlen(doc), NULL, NULL, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "fakeapi: kubeconfig: %s\n", err);
        return NULL;
    }
    struct kube_client *c = kube_client_new(&cfg, "yao-reconcile-tests", err, sizeof err);
    if (!c) {
        fprintf(stderr, "fakeapi: client: %s\n", err);
        kube_config_free(&cfg);
    }
    return c;
}

/* Create the object json in collection path as a client's POST would (uid, version,
 * creationTimestamp set by the server; a metadata.creationTimestamp or uid given is kept,
 * to seed an object of the past). 0, or -1 (exists, bad JSON or path). */
static inline int fakeapi_seed(struct fakeapi *fa, const char *collection, const char *json) {
    struct fa_where w;
    cJSON *obj = cJSON_Parse(json);
    const char *name = fa_md_str(obj, "name");
    if (!obj || !name || fa_parse_path(collection, &w) < 0 || w.name[0]) {
        fprintf(stderr, "fakeapi: cannot seed %s: %s\n", collection, json);
        cJSON_Delete(obj);
        return -1;
    }
    snprintf(w.name, sizeof w.name, "%s", name);
    pthread_mutex_lock(&fa->lock);
    int rc = fa_find(fa, &w) ? -1 : 0;
    if (rc == 0) fa_store_new(fa, &w, obj, 1);
    else cJSON_Delete(obj);
    pthread_mutex_unlock(&fa->lock);
    return rc;
}

/* Hold (on) or release (off) the watch events of collection path: while held, a watcher
 * of it stops before its next event there, as an informer behind the server would; its
 * reads (GET, LIST) see the store. Released, the events flow in order. 0, or -1. */
static inline int fakeapi_hold(struct fakeapi *fa, const char *collection, int on) {
    struct fa_where w;
    if (fa_parse_path(collection, &w) < 0 || w.name[0]) return -1;
    pthread_mutex_lock(&fa->lock);
    size_t i = 0;
    while (i < fa->nheld && !(fa_in_collection(&w, &fa->held[i]) && !strcmp(w.ns, fa->held[i].ns))) i++;
    int rc = 0;
    if (on && i == fa->nheld) {
        if (fa->nheld < sizeof fa->held / sizeof fa->held[0]) fa->held[fa->nheld++] = w;
        else rc = -1;
    } else if (!on && i < fa->nheld) {
        fa->held[i] = fa->held[--fa->nheld];
    }
    pthread_cond_broadcast(&fa->changed);
    pthread_mutex_unlock(&fa->lock);
    return rc;
}

/* The stored object at path (a copy to cJSON_Delete), or NULL. */
static inline cJSON *fakeapi_get(struct fakeapi *fa, const char *path) {
    struct fa_where w;
    cJSON *out = NULL;
    if (fa_parse_path(path, &w) < 0) return NULL;
    pthread_mutex_lock(&fa->lock);
    struct fa_obj *o = fa_find(fa, &w);
    if (o) out = cJSON_Duplicate(o->obj, 1);
    pthread_mutex_unlock(&fa->lock);
    return out;
}

/* Merge-patch the stored object at path with json, as a client's PATCH would (status
 * included: the test plays kubelet and provisioner too). 0, or -1 (absent, bad JSON). */
static inline int fakeapi_patch(struct fakeapi *fa, const char *path, const char *json) {
    struct fa_where w;
    cJSON *p = cJSON_Parse(json);
    int rc = -1;
    if (!p || fa_parse_path(path, &w) < 0) { cJSON_Delete(p); return -1; }
    pthread_mutex_lock(&fa->lock);
    struct fa_obj *o = fa_find(fa, &w);
    if (o) {
        cJSON *next = cJSON_Duplicate(o->obj, 1);
        fa_merge_patch(&next, p);
        fa_store_update(fa, o, next);
        rc = 0;
    }
    pthread_mutex_unlock(&fa->lock);
    cJSON_Delete(p);
    return rc;
}

/* Delete the object at path as a client's DELETE would (finalizers hold it). 0 or -1. */
static inline int fakeapi_remove(struct fakeapi *fa, const char *path) {
    struct fa_answer a = {0};
    pthread_mutex_lock(&fa->lock);
    fa_handle(fa, "DELETE", path, "", "", &a);
    pthread_mutex_unlock(&fa->lock);
    free(a.body);
    return a.status == 200 ? 0 : -1;
}

/* How many objects collection path (one namespace or all) holds. */
static inline int fakeapi_count_objects(struct fakeapi *fa, const char *collection) {
    struct fa_where w;
    int n = 0;
    if (fa_parse_path(collection, &w) < 0) return -1;
    pthread_mutex_lock(&fa->lock);
    for (size_t i = 0; i < fa->nobjs; i++) n += fa_in_collection(&fa->objs[i].at, &w);
    pthread_mutex_unlock(&fa->lock);
    return n;
}

/* Copies of the objects of collection path (one namespace or all) that match the label
 * selector sel (NULL: all), as a JSON array to cJSON_Delete. */
static inline cJSON *fakeapi_list(struct fakeapi *fa, const char *collection, const char *sel) {
    struct fa_where w;
    cJSON *out = cJSON_CreateArray();
    if (fa_parse_path(collection, &w) < 0) return out;
    pthread_mutex_lock(&fa->lock);
    for (size_t i = 0; i < fa->nobjs; i++)
        if (fa_in_collection(&fa->objs[i].at, &w) && fa_selector_matches(fa->objs[i].obj, sel))
            cJSON_AddItemToArray(out, cJSON_Duplicate(fa->objs[i].obj, 1));
    pthread_mutex_unlock(&fa->lock);
    return out;
}

/* The next `times` requests of method ("" = any) to path (exact, no query) get status
 * (with Retry-After: retry_after_s unless < 0), or with status 0 the connection closed. */
static inline void fa_add_fault(struct fakeapi *fa, const char *method, const char *path, int status, int retry_after_s,
                                int times, const char *body) {
    pthread_mutex_lock(&fa->lock);
    if (fa->nfaults < sizeof fa->faults / sizeof fa->faults[0]) {
        struct fa_fault *f = &fa->faults[fa->nfaults++];
        snprintf(f->method, sizeof f->method, "%s", method);
        snprintf(f->path, sizeof f->path, "%s", path);
        f->status = status;
        f->retry_after_s = retry_after_s;
        f->drop = status == 0;
        f->times = times;
        snprintf(f->body, sizeof f->body, "%s", body ? body : "");
    }
    pthread_mutex_unlock(&fa->lock);
}

static inline void fakeapi_fault(struct fakeapi *fa, const char *method, const char *path, int status, int retry_after_s,
                          int times) {
    fa_add_fault(fa, method, path, status, retry_after_s, times, NULL);
}

/* fakeapi_fault answered with body (a Status the test writes, e.g. with causes). */
static inline void fakeapi_fault_body(struct fakeapi *fa, const char *method, const char *path, int status,
                                      const char *body, int times) {
    fa_add_fault(fa, method, path, status, -1, times, body);
}

/* Forget the faults not used up. */
static inline void fakeapi_clear_faults(struct fakeapi *fa) {
    pthread_mutex_lock(&fa->lock);
    fa->nfaults = 0;
    pthread_mutex_unlock(&fa->lock);
}

/* The number of requests logged so far: a mark for the counts below. */
static inline size_t fakeapi_mark(struct fakeapi *fa) {
    pthread_mutex_lock(&fa->lock);
    size_t n = fa->nlog;
    pthread_mutex_unlock(&fa->lock);
    return n;
}

/* Requests of method (NULL = any; watches excluded unless method is "WATCH") to path
 * (exact, without query) since mark, answered with status (0 = any). */
static inline int fakeapi_count_status(struct fakeapi *fa, size_t since, const char *method, const char *path, int status) {
    int n = 0;
    pthread_mutex_lock(&fa->lock);
    for (size_t i = since; i < fa->nlog; i++) {
        const struct fa_request *r = &fa->log[i];
        int is_watch = strstr(r->query, "watch=true") != NULL;
        if (strcmp(r->path, path)) continue;
        if (method && !strcmp(method, "WATCH")) { n += is_watch; continue; }
        if (is_watch || (method && strcmp(r->method, method)) || (status && r->status != status)) continue;
        n++;
    }
    pthread_mutex_unlock(&fa->lock);
    return n;
}

static inline int fakeapi_count(struct fakeapi *fa, size_t since, const char *method, const char *path) {
    return fakeapi_count_status(fa, since, method, path, 0);
}

/* Writes (POST, PUT, PATCH, DELETE) since mark, to any path. */
static inline int fakeapi_count_writes(struct fakeapi *fa, size_t since) {
    int n = 0;
    pthread_mutex_lock(&fa->lock);
    for (size_t i = since; i < fa->nlog; i++) n += strcmp(fa->log[i].method, "GET") != 0;
    pthread_mutex_unlock(&fa->lock);
    return n;
}

/* The body (parsed; cJSON_Delete it) of the last request of method to path since mark,
 * or NULL. */
static inline cJSON *fakeapi_last_body(struct fakeapi *fa, size_t since, const char *method, const char *path) {
    cJSON *out = NULL;
    pthread_mutex_lock(&fa->lock);
    for (size_t i = fa->nlog; i-- > since;) {
        const struct fa_request *r = &fa->log[i];
        if (!strcmp(r->method, method) && !strcmp(r->path, path)) { out = cJSON_Parse(r->body); break; }
    }
    pthread_mutex_unlock(&fa->lock);
    return out;
}

/* Print the requests since mark (for a failing test). */
static inline void fakeapi_dump(struct fakeapi *fa, size_t since) {
    pthread_mutex_lock(&fa->lock);
    for (size_t i = since; i < fa->nlog; i++)
        fprintf(stderr, "    %s %s%s%s -> %d\n", fa->log[i].method, fa->log[i].path, fa->log[i].query[0] ? "?" : "",
                fa->log[i].query, fa->log[i].status);
    pthread_mutex_unlock(&fa->lock);
}

/* The current resourceVersion of the store. */
static inline long fakeapi_rv(struct fakeapi *fa) {
    pthread_mutex_lock(&fa->lock);
    long rv = fa->rv;
    pthread_mutex_unlock(&fa->lock);
    return rv;
}

#endif
