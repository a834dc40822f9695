/* sandbox/io/class.c — the SandboxClass and Namespace informers and the choice of a
 * Sandbox's class: spec.className, else its Namespace's default (the label
 * SBX_LABEL_NAMESPACE_CLASS), else the class marked default (SBX_ANN_DEFAULT_CLASS), else
 * none (the controller's flags alone); then whether its namespace may use that class
 * (spec.allowedNamespaces). A Namespace whose labels change queues its Sandboxes. A class change is level-triggered: every Sandbox of that class
 * (and, when the default mark is involved, every Sandbox without spec.className) is
 * queued again, and its next pass resolves the new effective spec (a pod whose template
 * changed is replaced as for any spec change).
 *
 * Not here: what a class means (class_decide.c). */
#include "sandbox/io/class.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kjson.h"
#include "base/log.h"
#include "sandbox/decide/class_decide.h"
#include "sandbox/model/objects.h"
#include "sandbox/decide/reconcile_decide.h"

/* Namespaces are cached with their name and labels only. */
struct sbx_classes {
    const struct sbx_deps *deps;
    struct informer *classes;      /* SandboxClasses */
    struct informer *namespaces;   /* Namespaces, with their labels only */
    int classes_on;                /* readable at start; otherwise the flag defaults alone */
    int namespaces_on;             /* readable at start; otherwise scoped classes refuse */
    sbx_class_change_fn on_change; /* a class changed (after its Sandboxes were queued) */
    void *on_change_ud;
};

static void shrink_namespace(cJSON *ns) {
    cJSON *md = cJSON_GetObjectItemCaseSensitive(ns, "metadata");
    static const char *const drop[] = {"managedFields", "annotations", "finalizers", "ownerReferences"};
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) cJSON_DeleteItemFromObjectCaseSensitive(md, drop[i]);
    cJSON_DeleteItemFromObjectCaseSensitive(ns, "spec");
    cJSON_DeleteItemFromObjectCaseSensitive(ns, "status");
}

struct ns_requeue { struct sbx_classes *c; const char *ns; size_t nslen; };

static int requeue_of_namespace(void *ud, const char *key, const cJSON *sb) {
    struct ns_requeue *r = ud;
    (void)sb;
    if (!strncmp(key, r->ns, r->nslen) && key[r->nslen] == '/') queue_add(r->c->deps->queue, key);
    return 0;
}

/* A Namespace changed: when its labels did (the classes it may use, its default class),
 * its Sandboxes are queued. */
static void on_namespace(void *ud, const char *key, const cJSON *old, const cJSON *cur) {
    struct sbx_classes *c = ud;
    struct sbx_meta ma, mb;
    sbx_meta_read(old, &ma);
    sbx_meta_read(cur, &mb);
    const cJSON *a = ma.labels, *b = mb.labels;
    if (old && cur && ((!a && !b) || (a && b && cJSON_Compare(a, b, 1)))) return;
    struct ns_requeue r = {c, key, strlen(key)};
    informer_foreach(c->deps->sandboxes, requeue_of_namespace, &r);
}

struct class_requeue { struct sbx_classes *c; const char *name; int defaults; };

/* Queue a Sandbox whose class is the changed one. */
static int requeue_of_class(void *ud, const char *key, const cJSON *sb) {
    struct class_requeue *r = ud;
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    const char *cn = v.class_name;
    if ((cn && *cn && !strcmp(cn, r->name)) || ((!cn || !*cn) && r->defaults)) queue_add(r->c->deps->queue, key);
    return 0;
}

/* A SandboxClass changed: queue its Sandboxes. */
static void on_class(void *ud, const char *key, const cJSON *old, const cJSON *cur) {
    struct sbx_classes *c = ud;
    struct class_requeue r = {c, key, sbx_class_is_default(old) || sbx_class_is_default(cur)};
    informer_foreach(c->deps->sandboxes, requeue_of_class, &r);
    if (c->on_change) c->on_change(c->on_change_ud, old, cur);
}

struct sbx_classes *sbx_classes_new(const struct sbx_deps *deps, sbx_class_change_fn on_change, void *ud) {
    char path[256];
    struct sbx_classes *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    c->deps = deps;
    c->on_change = on_change;
    c->on_change_ud = ud;
    snprintf(path, sizeof(path), "/apis/%s/v1alpha1/%s", SBX_GROUP, SBX_CLASS_PLURAL);
    struct informer_options io = {.path = path, .on_change = on_class, .ud = c};
    c->classes = informer_new(deps->client, &io);
    io = (struct informer_options){.path = "/api/v1/namespaces", .on_change = on_namespace, .ud = c,
                                   .transform = shrink_namespace};
    c->namespaces = informer_new(deps->client, &io);
    if (!c->classes || !c->namespaces) {
        sbx_classes_free(c);
        return NULL;
    }
    return c;
}

void sbx_classes_stop(struct sbx_classes *c) {
    if (!c) return;
    if (c->classes) informer_stop(c->classes);
    if (c->namespaces) informer_stop(c->namespaces);
}

void sbx_classes_free(struct sbx_classes *c) {
    if (!c) return;
    sbx_classes_stop(c);
    informer_free(c->classes);
    informer_free(c->namespaces);
    free(c);
}

int sbx_classes_start(struct sbx_classes *c) {
    char path[256];
    snprintf(path, sizeof(path), "/apis/%s/v1alpha1/%s?limit=1", SBX_GROUP, SBX_CLASS_PLURAL);
    long st = kube_get(c->deps->client, path, NULL, NULL);
    /* Only a definite "no" turns classes off. Any other failure (the API server
     * restarting) starts the informer anyway and the controller waits for its cache:
     * a transient error must not let Sandboxes through without their class's limits. */
    c->classes_on = !(st == 401 || st == 403 || st == 404);
    /* Namespaces (their labels: class scopes, a namespace's default class): a namespaced
     * install's Role cannot grant the cluster-scoped read. Without it a class limited to
     * some namespaces refuses every Sandbox, and namespace default classes are not seen. */
    long ns_st = kube_get(c->deps->client, "/api/v1/namespaces?limit=1", NULL, NULL);
    c->namespaces_on = c->classes_on && !(ns_st == 401 || ns_st == 403);
    if (c->classes_on && !c->namespaces_on)
        LOGW("msg=\"Namespaces are not readable (no RBAC for the cluster-scoped namespaces read): a SandboxClass "
             "with spec.allowedNamespaces refuses every Sandbox, and the label %s on Namespaces is not seen\" "
             "status=%ld", SBX_LABEL_NAMESPACE_CLASS, ns_st);
    if (c->namespaces_on && informer_start(c->namespaces) < 0) return -1;
    if (!c->classes_on) {
        LOGW("msg=\"SandboxClasses are not readable (CRD not installed, or no RBAC for the cluster-scoped read): "
             "every Sandbox gets the controller's flag defaults; one naming a class is InvalidSpec; restart the "
             "controller after installing the CRD\" status=%ld", st);
        return 0;
    }
    return informer_start(c->classes);
}

int sbx_classes_synced(struct sbx_classes *c) {
    return !c->classes_on ||
           (informer_synced(c->classes) && (!c->namespaces_on || informer_synced(c->namespaces)));
}

struct default_pick { char name[256]; int64_t created_ms; int n; };

/* The newest class marked default (as Kubernetes picks among default StorageClasses);
 * equal creation times: the smaller name. */
static int pick_default(void *ud, const char *key, const cJSON *obj) {
    struct default_pick *p = ud;
    if (!sbx_class_is_default(obj)) return 0;
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    if (!p->n || m.created_ms > p->created_ms || (m.created_ms == p->created_ms && strcmp(key, p->name) < 0)) {
        snprintf(p->name, sizeof(p->name), "%s", key);
        p->created_ms = m.created_ms;
    }
    p->n++;
    return 0;
}

int sbx_class_for(struct sbx_classes *c, const struct sbx_sandbox_view *sb, struct sbx_class *out, int *found,
                  const char **reason, char *why, size_t whylen) {
    const char *name = sb->class_name, *ns = sb->meta.namespace_;
    struct default_pick p = {.n = 0};
    char ns_default[256] = "";
    *found = 0;
    *reason = SBX_REASON_INVALID;
    if (name && !*name) name = NULL;
    if (!c->classes_on) {
        if (!name) return 0;
        snprintf(why, whylen, "spec.className: SandboxClass \"%.253s\" cannot be used: the controller cannot read "
                 "SandboxClasses (CRD not installed, or no RBAC)", name);
        return -1;
    }
    cJSON *nsobj = c->namespaces_on && ns ? informer_get(c->namespaces, ns) : NULL;
    struct sbx_meta nsm;
    sbx_meta_read(nsobj, &nsm);
    const cJSON *labels = nsm.labels;
    if (!name) {
        /* The namespace's own default first (set by whoever may label Namespaces). */
        const char *v = sbx_meta_label(&nsm, SBX_LABEL_NAMESPACE_CLASS);
        if (v && *v) {
            snprintf(ns_default, sizeof(ns_default), "%s", v);
            name = ns_default;
        }
    }
    if (!name) {
        informer_foreach(c->classes, pick_default, &p);
        if (!p.n) { cJSON_Delete(nsobj); return 0; }   /* no default class: the flag defaults */
        name = p.name;
    }
    cJSON *obj = informer_get(c->classes, name);
    int rc = -1;
    if (!obj) {
        snprintf(why, whylen, "%s: SandboxClass \"%.253s\" not found", ns_default[0] ? "the namespace's "
                 SBX_LABEL_NAMESPACE_CLASS " label" : "spec.className", name);
    } else if (sbx_class_parse(obj, out, why, whylen) == 0) {
        if (sbx_class_allows_namespace(out, ns, labels, c->namespaces_on, why, whylen)) {
            *found = 1;
            rc = 0;
        } else {
            *reason = SBX_REASON_CLASS_NOT_ALLOWED;
            sbx_class_free(out);
        }
    }
    cJSON_Delete(obj);
    cJSON_Delete(nsobj);
    return rc;
}

int sbx_classes_readable(struct sbx_classes *c) { return c->classes_on; }

cJSON *sbx_classes_get(struct sbx_classes *c, const char *name) {
    return c->classes_on && name ? informer_get(c->classes, name) : NULL;
}

void sbx_classes_foreach(struct sbx_classes *c, int (*visit)(void *ud, const char *key, const cJSON *obj), void *ud) {
    if (c->classes_on) informer_foreach(c->classes, visit, ud);
}

int sbx_classes_allow_namespace(struct sbx_classes *c, const struct sbx_class *cls, const char *ns, char *why,
                                size_t whylen) {
    cJSON *nsobj = c->namespaces_on && ns ? informer_get(c->namespaces, ns) : NULL;
    struct sbx_meta nsm;
    sbx_meta_read(nsobj, &nsm);
    int ok = sbx_class_allows_namespace(cls, ns, nsm.labels, c->namespaces_on, why, whylen);
    cJSON_Delete(nsobj);
    return ok;
}

struct informer *sbx_classes_cache(struct sbx_classes *c) { return c->classes; }
