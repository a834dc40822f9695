/* sandbox/decide/class_decide.c — SandboxClass parsing and the resolution of a Sandbox's
 * effective spec under its class (see class_decide.h).
 *
 * The class only narrows what sbx_spec_parse already allows: its defaults replace the
 * flag defaults before the spec is parsed, and its ceilings are checked on the parsed
 * spec, so every message names the Sandbox field at fault and the class field that limits
 * it. The CRD (crd/sandboxclass.yaml) validates the class's shape on the API server; the
 * checks here hold for a class that bypassed it.
 *
 * Not here: choosing the class of a Sandbox and the informer (class.c), any I/O. */
#include "sandbox/decide/class_decide.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"
#include "sandbox/model/naming.h"
#include "sandbox/decide/hostalias_decide.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/selector.h"

#define SBX_CLASS_PREFIXES_MAX 64
#define SBX_CLASS_NAME_MAX 253
#define SBX_CLASS_QUOTE_MAX 64

/* Parsing context: the class's name and the error buffer. */
struct cls_ctx {
    const char *name;
    char *err;
    size_t errlen;
};

/* "SandboxClass \"name\": " + the message; returns -1. */
__attribute__((format(printf, 2, 3)))
static int cls_fail(struct cls_ctx *c, const char *fmt, ...) {
    va_list ap;
    int n;

    if (!c->err || !c->errlen) return -1;
    n = snprintf(c->err, c->errlen, "SandboxClass \"%s\": ", c->name ? c->name : "?");
    if (n < 0 || (size_t)n >= c->errlen) return -1;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* s quoted for a message: at most SBX_CLASS_QUOTE_MAX bytes, quotes, backslashes and
 * control characters replaced by '?'. out >= SBX_CLASS_QUOTE_MAX + 8. */
static const char *cls_quote(const char *s, char *out, size_t outlen) {
    size_t o = 0;

    out[o++] = '"';
    for (size_t i = 0; s[i] && o + 6 < outlen; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (i >= SBX_CLASS_QUOTE_MAX && (ch & 0xC0) != 0x80) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        out[o++] = (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\') ? '?' : (char)ch;
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

/* The member, or NULL when absent or null. */
static const cJSON *cls_member(const cJSON *obj, const char *key) {
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    return cJSON_IsNull(v) ? NULL : v;
}

/* Optional object member: 0 (*out NULL when absent), -1 for another type. */
static int cls_object(struct cls_ctx *c, const cJSON *obj, const char *key, const char *path,
                      const cJSON **out) {
    const cJSON *v = cls_member(obj, key);

    *out = v;
    if (v && !cJSON_IsObject(v)) return cls_fail(c, "%s: must be an object", path);
    return 0;
}

/* Optional string member copied into *out (NULL when absent or ""). */
static int cls_string(struct cls_ctx *c, const cJSON *obj, const char *key, const char *path,
                      char **out) {
    const cJSON *v = cls_member(obj, key);

    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsString(v)) return cls_fail(c, "%s: must be a string", path);
    if (!*v->valuestring) return 0;
    if (strlen(v->valuestring) > SBX_CLASS_NAME_MAX * 4)
        return cls_fail(c, "%s: too long", path);
    *out = strdup(v->valuestring);
    return *out ? 0 : cls_fail(c, ERR_OOM);
}

/* Optional array of non-empty strings into out. */
static int cls_strv(struct cls_ctx *c, const cJSON *obj, const char *key, const char *path,
                    struct sbx_strv *out) {
    const cJSON *arr = cls_member(obj, key), *it;
    size_t n;

    out->v = NULL;
    out->n = 0;
    if (!arr) return 0;
    if (!cJSON_IsArray(arr)) return cls_fail(c, "%s: must be an array of strings", path);
    n = (size_t)cJSON_GetArraySize(arr);
    if (n > SBX_CLASS_PREFIXES_MAX)
        return cls_fail(c, "%s: at most %d elements", path, SBX_CLASS_PREFIXES_MAX);
    if (n == 0) return 0;
    out->v = calloc(n, sizeof *out->v);
    if (!out->v) return cls_fail(c, ERR_OOM);
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it) || !*it->valuestring)
            return cls_fail(c, "%s[%zu]: must be a non-empty string", path, out->n);
        out->v[out->n] = strdup(it->valuestring);
        if (!out->v[out->n]) return cls_fail(c, ERR_OOM);
        out->n++;
    }
    return 0;
}

enum cls_unit { CLS_BYTES, CLS_CPU };

/* One quantity member (string or integer) into *out; absent → 0. Must be positive. */
static int cls_qty(struct cls_ctx *c, const cJSON *obj, const char *key, const char *path,
                   enum cls_unit unit, int64_t *out) {
    char text[64], q[SBX_CLASS_QUOTE_MAX + 8];
    const cJSON *v = cls_member(obj, key);
    int rc;

    *out = 0;
    if (!v) return 0;
    if (cJSON_IsString(v)) {
        if (strlen(v->valuestring) >= sizeof text)
            return cls_fail(c, "%s: %s is not a valid quantity", path,
                            cls_quote(v->valuestring, q, sizeof q));
        snprintf(text, sizeof text, "%s", v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        snprintf(text, sizeof text, "%.15g", v->valuedouble);
    } else {
        return cls_fail(c, "%s: must be a string or an integer", path);
    }
    rc = unit == CLS_CPU ? qty_parse_cpu(text, out) : qty_parse_memory(text, out);
    if (rc != 0) return cls_fail(c, "%s: %s is not a valid quantity", path, cls_quote(text, q, sizeof q));
    if (*out <= 0) return cls_fail(c, "%s: must be greater than zero", path);
    return 0;
}

/* {default, max} of spec.resources.<key>: default not above max. */
static int cls_limit(struct cls_ctx *c, const cJSON *res, const char *key, enum cls_unit unit,
                     struct sbx_class_limit *out) {
    char path[96], p2[112];
    const cJSON *o;

    snprintf(path, sizeof path, "spec.resources.%s", key);
    if (cls_object(c, res, key, path, &o)) return -1;
    snprintf(p2, sizeof p2, "%s.default", path);
    if (cls_qty(c, o, "default", p2, unit, &out->dflt)) return -1;
    snprintf(p2, sizeof p2, "%s.max", path);
    if (cls_qty(c, o, "max", p2, unit, &out->max)) return -1;
    if (out->max && out->dflt > out->max)
        return cls_fail(c, "%s.default is above %s.max", path, path);
    return 0;
}

/* An optional JSON member of the given type, copied (nodeSelector, tolerations, affinity);
 * the API server validates the shape when the pod is created. */
static int cls_json(struct cls_ctx *c, const cJSON *spec, const char *key, int array, cJSON **out) {
    const cJSON *v = cls_member(spec, key);

    *out = NULL;
    if (!v) return 0;
    if (array ? !cJSON_IsArray(v) : !cJSON_IsObject(v))
        return cls_fail(c, "spec.%s: must be %s", key, array ? "an array" : "an object");
    if (!array && strcmp(key, "nodeSelector") == 0) {
        const cJSON *it;
        cJSON_ArrayForEach(it, v)
            if (!cJSON_IsString(it)) return cls_fail(c, "spec.nodeSelector.%s: must be a string", it->string);
    }
    if ((array ? cJSON_GetArraySize(v) : (v->child != NULL)) == 0) return 0;
    *out = cJSON_Duplicate(v, 1);
    return *out ? 0 : cls_fail(c, ERR_OOM);
}

/* spec.workspace.warmPool: {size: 0-1000, namespaces: [names]} (sandbox/decide/warm_decide.h). */
static int cls_warm_pool(struct cls_ctx *c, const cJSON *ws, struct sbx_class *k) {
    const cJSON *wp, *v;
    if (cls_object(c, ws, "warmPool", "spec.workspace.warmPool", &wp)) return -1;
    v = cls_member(wp, "size");
    if (v) {
        double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (x < 0 || x > 1000 || x != (double)(int)x)
            return cls_fail(c, "spec.workspace.warmPool.size: must be an integer between 0 and 1000");
        k->warm_pool_size = (int)x;
    }
    return cls_strv(c, wp, "namespaces", "spec.workspace.warmPool.namespaces", &k->warm_pool_namespaces);
}

/* Who may use the class: spec.allowedNamespaces {selector} and spec.allowedLifecycles. */
static int cls_scope(struct cls_ctx *c, const cJSON *spec, struct sbx_class *k) {
    const cJSON *an, *sel, *lcs, *it;
    char err[512];

    if (cls_object(c, spec, "allowedNamespaces", "spec.allowedNamespaces", &an)) return -1;
    sel = cls_member(an, "selector");
    if (sel) {
        if (sbx_selector_validate(sel, "spec.allowedNamespaces.selector", err, sizeof err) != 0)
            return cls_fail(c, "%s", err);
        k->namespace_selector = cJSON_Duplicate(sel, 1);
        if (!k->namespace_selector) return cls_fail(c, ERR_OOM);
    }
    lcs = cls_member(spec, "allowedLifecycles");
    if (!lcs) return 0;
    if (!cJSON_IsArray(lcs)) return cls_fail(c, "spec.allowedLifecycles: must be an array of lifecycles");
    size_t i = 0;
    cJSON_ArrayForEach(it, lcs) {
        enum sbx_lifecycle l;
        if (!cJSON_IsString(it) || sbx_lifecycle_parse(it->valuestring, &l) != 0)
            return cls_fail(c, "spec.allowedLifecycles[%zu]: must be one of one-shot, session, long-running, "
                            "persistent", i);
        k->allowed_lifecycles |= 1u << l;
        i++;
    }
    if (i && k->has_lifecycle && !(k->allowed_lifecycles & (1u << k->lifecycle)))
        return cls_fail(c, "spec.lifecycle: %s is not in spec.allowedLifecycles", sbx_lifecycle_name(k->lifecycle));
    return 0;
}

static int cls_parse(struct cls_ctx *c, const cJSON *obj, struct sbx_class *k) {
    const cJSON *spec, *img, *res, *ws, *v;
    char qbuf[SBX_CLASS_QUOTE_MAX + 8];
    const char *name = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
                           cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name"))
                           ? cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                              "name")->valuestring
                           : NULL;

    if (!name || !*name) return cls_fail(c, "metadata.name: required");
    c->name = name;
    k->name = strdup(name);
    if (!k->name) return cls_fail(c, ERR_OOM);
    if (cls_object(c, obj, "spec", "spec", &spec)) return -1;

    if (cls_object(c, spec, "image", "spec.image", &img)) return -1;
    if (cls_string(c, img, "default", "spec.image.default", &k->image)) return -1;
    if (cls_strv(c, img, "allowedPrefixes", "spec.image.allowedPrefixes", &k->image_prefixes)) return -1;
    if (cls_strv(c, img, "pullSecrets", "spec.image.pullSecrets", &k->image_pull_secrets)) return -1;
    if (k->image_pull_secrets.n > SBX_PULL_SECRETS_MAX)
        return cls_fail(c, "spec.image.pullSecrets: at most %d Secrets", SBX_PULL_SECRETS_MAX);
    for (size_t i = 0; i < k->image_pull_secrets.n; i++)
        if (!sbx_is_dns_subdomain(k->image_pull_secrets.v[i]))
            return cls_fail(c, "spec.image.pullSecrets[%zu]: %s is not a Secret name (lower-case DNS-1123 "
                            "subdomain)", i, cls_quote(k->image_pull_secrets.v[i], qbuf, sizeof qbuf));

    {
        const cJSON *sec;
        if (cls_object(c, spec, "secrets", "spec.secrets", &sec)) return -1;
        if (cls_strv(c, sec, "names", "spec.secrets.names", &k->secret_names)) return -1;
        if (k->secret_names.n > SBX_ALLOWED_SECRETS_MAX)
            return cls_fail(c, "spec.secrets.names: at most %d Secrets", SBX_ALLOWED_SECRETS_MAX);
        for (size_t i = 0; i < k->secret_names.n; i++)
            if (!sbx_is_dns_subdomain(k->secret_names.v[i]))
                return cls_fail(c, "spec.secrets.names[%zu]: %s is not a Secret name (lower-case DNS-1123 "
                                "subdomain)", i, cls_quote(k->secret_names.v[i], qbuf, sizeof qbuf));
    }

    if (cls_object(c, spec, "resources", "spec.resources", &res)) return -1;
    if (cls_limit(c, res, "memory", CLS_BYTES, &k->memory) ||
        cls_limit(c, res, "cpu", CLS_CPU, &k->cpu) ||
        cls_limit(c, res, "ephemeralStorage", CLS_BYTES, &k->ephemeral))
        return -1;

    if (cls_object(c, spec, "workspace", "spec.workspace", &ws)) return -1;
    if (cls_qty(c, ws, "defaultSize", "spec.workspace.defaultSize", CLS_BYTES, &k->workspace.dflt) ||
        cls_qty(c, ws, "maxSize", "spec.workspace.maxSize", CLS_BYTES, &k->workspace.max))
        return -1;
    if (k->workspace.max && k->workspace.dflt > k->workspace.max)
        return cls_fail(c, "spec.workspace.defaultSize is above spec.workspace.maxSize");
    if (cls_string(c, ws, "storageClassName", "spec.workspace.storageClassName", &k->storage_class) ||
        cls_strv(c, ws, "allowedStorageClassNames", "spec.workspace.allowedStorageClassNames",
                 &k->storage_classes))
        return -1;
    if (cls_warm_pool(c, ws, k)) return -1;
    v = cls_member(ws, "allowForksAcrossUsers");
    if (v && !cJSON_IsBool(v)) return cls_fail(c, "spec.workspace.allowForksAcrossUsers: must be a boolean");
    k->forks_across_users = cJSON_IsTrue(v);

    if (cls_string(c, spec, "runtimeClassName", "spec.runtimeClassName", &k->runtime_class) ||
        cls_string(c, spec, "priorityClassName", "spec.priorityClassName", &k->priority_class) ||
        cls_json(c, spec, "nodeSelector", 0, &k->node_selector) ||
        cls_json(c, spec, "tolerations", 1, &k->tolerations) ||
        cls_json(c, spec, "affinity", 0, &k->affinity) ||
        cls_json(c, spec, "hostAliases", 1, &k->host_aliases))
        return -1;
    {
        char why[256];
        if (sbx_host_aliases_check(k->host_aliases, why, sizeof why)) return cls_fail(c, "%s", why);
    }

    v = cls_member(spec, "lifecycle");
    if (v) {
        if (!cJSON_IsString(v) || sbx_lifecycle_parse(v->valuestring, &k->lifecycle) != 0)
            return cls_fail(c, "spec.lifecycle: must be one of one-shot, session, long-running, persistent");
        k->has_lifecycle = 1;
    }
    v = cls_member(spec, "idleTimeout");
    if (v) {
        if (!cJSON_IsString(v) || qty_parse_duration(v->valuestring, &k->idle_timeout_ms) != 0 ||
            k->idle_timeout_ms < 1000)
            return cls_fail(c, "spec.idleTimeout: must be a duration of at least 1s (e.g. 30m)");
    }
    v = cls_member(spec, "maxRunningPerUser");
    if (v) {
        double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (!cJSON_IsNumber(v) || x < 0 || x > 1000000 || x != (double)(int)x)
            return cls_fail(c, "spec.maxRunningPerUser: must be an integer between 0 and 1000000");
        k->max_running_per_user = (int)x;
    }
    v = cls_member(spec, "maxRunningPerUserScope");
    if (v) {
        if (!cJSON_IsString(v) ||
            (strcmp(v->valuestring, "Namespace") != 0 && strcmp(v->valuestring, "Cluster") != 0))
            return cls_fail(c, "spec.maxRunningPerUserScope: must be Namespace or Cluster");
        k->per_user_across_namespaces = !strcmp(v->valuestring, "Cluster");
    }
    const cJSON *rec;
    if (cls_object(c, spec, "reclaim", "spec.reclaim", &rec)) return -1;
    v = cls_member(rec, "idleAfter");
    if (v) {
        if (!cJSON_IsString(v) || qty_parse_duration(v->valuestring, &k->reclaim_after_ms) != 0 ||
            k->reclaim_after_ms < 1000)
            return cls_fail(c, "spec.reclaim.idleAfter: must be a duration of at least 1s (e.g. 30m)");
    }
    const cJSON *act;
    if (cls_object(c, spec, "activity", "spec.activity", &act)) return -1;
    v = cls_member(act, "cpu");
    if (v) {
        char num[32];
        const char *q = cJSON_IsString(v) ? v->valuestring : NULL;
        if (!q && cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 256) {
            snprintf(num, sizeof num, "%g", v->valuedouble);
            q = num;
        }
        if (!q || qty_parse_cpu(q, &k->activity_cpu_millis) != 0 || k->activity_cpu_millis < 1 ||
            k->activity_cpu_millis > 256000)
            return cls_fail(c, "spec.activity.cpu: must be a CPU quantity between 1m and 256 (e.g. 50m)");
    }
    const cJSON *warm;
    if (cls_object(c, spec, "warmIdle", "spec.warmIdle", &warm)) return -1;
    if (warm) {
        v = cls_member(warm, "cpu");
        if (!v || !cJSON_IsString(v) || qty_parse_cpu(v->valuestring, &k->warm_idle_cpu_millis) != 0 ||
            k->warm_idle_cpu_millis < 1 || k->warm_idle_cpu_millis > 256000)
            return cls_fail(c, "spec.warmIdle.cpu: must be a CPU quantity between 1m and 256 (e.g. 50m)");
        k->warm_idle_window_ms = SBX_WARM_IDLE_WINDOW_DEFAULT_MS;
        v = cls_member(warm, "window");
        if (v && (!cJSON_IsString(v) || qty_parse_duration(v->valuestring, &k->warm_idle_window_ms) != 0 ||
                  k->warm_idle_window_ms < 1000))
            return cls_fail(c, "spec.warmIdle.window: must be a duration of at least 1s (e.g. 30m)");
    }
    char nerr[512];
    if (sbx_network_parse_class(cls_member(spec, "network"), &k->network, nerr, sizeof nerr) != 0)
        return cls_fail(c, "%s", nerr);
    return cls_scope(c, spec, k);
}

int sbx_class_parse(const cJSON *obj, struct sbx_class *out, char *err, size_t errlen) {
    struct cls_ctx c = { NULL, err, errlen };

    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = '\0';
    if (!cJSON_IsObject(obj)) return cls_fail(&c, "not a JSON object");
    if (cls_parse(&c, obj, out) == 0) return 0;
    sbx_class_free(out);
    return -1;
}

static void cls_strv_free(struct sbx_strv *v) {
    for (size_t i = 0; i < v->n; i++) free(v->v[i]);
    free(v->v);
}

void sbx_class_free(struct sbx_class *c) {
    if (!c) return;
    free(c->name);
    free(c->image);
    cls_strv_free(&c->image_prefixes);
    cls_strv_free(&c->image_pull_secrets);
    cls_strv_free(&c->secret_names);
    free(c->storage_class);
    cls_strv_free(&c->storage_classes);
    cls_strv_free(&c->warm_pool_namespaces);
    free(c->runtime_class);
    free(c->priority_class);
    cJSON_Delete(c->node_selector);
    cJSON_Delete(c->tolerations);
    cJSON_Delete(c->affinity);
    cJSON_Delete(c->host_aliases);
    sbx_network_free(&c->network);
    cJSON_Delete(c->namespace_selector);
    memset(c, 0, sizeof *c);
}

int sbx_class_is_default(const cJSON *obj) {
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                       "annotations");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ann, SBX_ANN_DEFAULT_CLASS);
    return cJSON_IsString(v) && strcmp(v->valuestring, "true") == 0;
}

/* ---- resolution ------------------------------------------------------------------------ */

/* The default under a class limit: the class's default, else the flag default capped at
 * the class's maximum. */
static int64_t res_default(const struct sbx_class_limit *l, int64_t flag) {
    if (l->dflt) return l->dflt;
    if (l->max && (flag == 0 || flag > l->max)) return l->max;
    return flag;
}

/* Human quantity for messages. */
static const char *res_show(enum cls_unit unit, int64_t v, char *out, size_t outlen) {
    if ((unit == CLS_CPU ? qty_format_cpu(v, out, outlen) : qty_format_memory(v, out, outlen)) != 0)
        snprintf(out, outlen, "%lld", (long long)v);
    return out;
}

/* value above the class's max → the InvalidSpec message. */
static int res_ceiling(const struct sbx_class *k, const char *field, const char *class_field,
                       enum cls_unit unit, int64_t value, int64_t max, char *err, size_t errlen) {
    char a[32], b[32];

    if (!max || value <= max) return 0;
    return errfmt(err, errlen, "%s: %s is above the maximum %s of SandboxClass \"%s\" (%s)", field,
                    res_show(unit, value, a, sizeof a), res_show(unit, max, b, sizeof b), k->name, class_field);
}

/* "\"a\", \"b\"" of v into out. */
static const char *res_list(const struct sbx_strv *v, char *out, size_t outlen) {
    char q[SBX_CLASS_QUOTE_MAX + 8];
    size_t o = 0;

    out[0] = '\0';
    for (size_t i = 0; i < v->n && o + 1 < outlen; i++) {
        int n = snprintf(out + o, outlen - o, "%s%s", i ? ", " : "", cls_quote(v->v[i], q, sizeof q));
        if (n < 0) break;
        o += (size_t)n;
    }
    return out;
}

static int res_dup(const char *s, char **out) {
    *out = s ? strdup(s) : NULL;
    return s && !*out ? -1 : 0;
}

static int res_json(const cJSON *v, cJSON **out) {
    *out = v ? cJSON_Duplicate(v, 1) : NULL;
    return v && !*out ? -1 : 0;
}

/* 1 with *out when obj's path.lifecycle is a known lifecycle; else 0. */
static int res_lifecycle_at(const cJSON *obj, const char *path, enum sbx_lifecycle *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, path), "lifecycle");
    return cJSON_IsString(v) && sbx_lifecycle_parse(v->valuestring, out) == 0;
}

/* The default lifecycle of sandbox into d (see sbx_class_resolve). 0, or -1 with err. */
static int res_lifecycle(const cJSON *sandbox, const struct sbx_class *k, struct sbx_defaults *d,
                         char *err, size_t errlen) {
    enum sbx_lifecycle own, pinned;
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(sandbox, "spec");
    int has_own = res_lifecycle_at(sandbox, "spec", &own);
    int has_pinned = res_lifecycle_at(sandbox, "status", &pinned);

    if (has_own) {
        if (has_pinned && (own == SBX_ONE_SHOT) != (pinned == SBX_ONE_SHOT))
            return errfmt(err, errlen, "spec.lifecycle: cannot change from %s to %s (to or from one-shot); "
                            "create a new Sandbox", sbx_lifecycle_name(pinned), sbx_lifecycle_name(own));
        return 0;   /* sbx_spec_parse reads it */
    }
    if (has_pinned) {
        d->lifecycle = pinned;
        return 0;
    }
    if (!k || !k->has_lifecycle) return 0;
    d->lifecycle = k->lifecycle;
    if (k->lifecycle == SBX_ONE_SHOT && !cJSON_GetObjectItemCaseSensitive(spec, "run"))
        return errfmt(err, errlen, "spec.run: required: the lifecycle is one-shot, the default of SandboxClass "
                        "\"%s\" (spec.lifecycle); set spec.run, or another spec.lifecycle", k->name);
    return 0;
}

int sbx_class_resolve(const cJSON *sandbox, const struct sbx_class *k, const struct sbx_defaults *flags,
                      struct sbx_spec *out, char *err, size_t errlen) {
    char q[SBX_CLASS_QUOTE_MAX + 8], list[1024];
    struct sbx_defaults d;

    memset(out, 0, sizeof *out);
    if (flags) d = *flags;
    else sbx_defaults_init(&d);
    if (res_lifecycle(sandbox, k, &d, err, errlen) != 0) return -1;
    if (k) {
        if (k->image) { d.image = k->image; d.image_builtin = 0; }
        d.memory_bytes = res_default(&k->memory, d.memory_bytes);
        d.cpu_millis = res_default(&k->cpu, d.cpu_millis);
        d.ephemeral_bytes = res_default(&k->ephemeral, d.ephemeral_bytes);
        d.workspace_bytes = res_default(&k->workspace, d.workspace_bytes);
        if (k->storage_class) d.storage_class = k->storage_class;
        if (k->idle_timeout_ms) d.idle_timeout_ms = k->idle_timeout_ms;
        if (k->warm_idle_cpu_millis) {
            d.warm_idle_cpu_millis = k->warm_idle_cpu_millis;
            d.warm_idle_window_ms = k->warm_idle_window_ms;
        }
    }
    if (sbx_spec_parse(sandbox, &d, out, err, errlen) != 0) return -1;
    /* The spec borrows the imagePullSecrets array of the defaults it was parsed with:
     * point it at the caller's, not at the local copy d. */
    if (out->npull_secrets) out->pull_secrets = flags->pull_secrets;
    if (!k) return 0;
    /* The class's pullSecrets replace the controller's: an owned copy (the class is freed
     * before the spec is used), which out->pull_secrets then points at. */
    if (k->image_pull_secrets.n) {
        out->class_pull_secrets.v = calloc(k->image_pull_secrets.n, sizeof *out->class_pull_secrets.v);
        if (!out->class_pull_secrets.v) goto oom;
        for (size_t i = 0; i < k->image_pull_secrets.n; i++) {
            out->class_pull_secrets.v[i] = strdup(k->image_pull_secrets.v[i]);
            if (!out->class_pull_secrets.v[i]) goto oom;
            out->class_pull_secrets.n = i + 1;
        }
        out->pull_secrets = (const char *const *)out->class_pull_secrets.v;
        out->npull_secrets = out->class_pull_secrets.n;
    }

    if (k->image_prefixes.n) {
        size_t i;
        for (i = 0; i < k->image_prefixes.n; i++)
            if (strncmp(out->image, k->image_prefixes.v[i], strlen(k->image_prefixes.v[i])) == 0) break;
        if (i == k->image_prefixes.n) {
            errfmt(err, errlen, "spec.image: %s is not allowed by SandboxClass \"%s\" "
                     "(spec.image.allowedPrefixes: %s)", cls_quote(out->image, q, sizeof q), k->name,
                     res_list(&k->image_prefixes, list, sizeof list));
            goto fail;
        }
    }
    if (res_ceiling(k, "spec.resources.memory", "spec.resources.memory.max", CLS_BYTES, out->memory_bytes,
                    k->memory.max, err, errlen) ||
        res_ceiling(k, "spec.resources.cpu", "spec.resources.cpu.max", CLS_CPU, out->cpu_millis,
                    k->cpu.max, err, errlen) ||
        res_ceiling(k, "spec.resources.ephemeralStorage", "spec.resources.ephemeralStorage.max", CLS_BYTES,
                    out->ephemeral_bytes, k->ephemeral.max, err, errlen) ||
        res_ceiling(k, "spec.workspace.size", "spec.workspace.maxSize", CLS_BYTES, out->workspace_bytes,
                    k->workspace.max, err, errlen))
        goto fail;
    /* The allowed storage classes: the list, else the class's own storageClassName alone. */
    if (k->storage_classes.n || k->storage_class) {
        struct sbx_strv one = { &((struct sbx_class *)k)->storage_class, 1 };
        const struct sbx_strv *allowed = k->storage_classes.n ? &k->storage_classes : &one;
        size_t i;
        const char *sc = out->storage_class ? out->storage_class : "";
        for (i = 0; i < allowed->n; i++)
            if (strcmp(sc, allowed->v[i]) == 0) break;
        if (i == allowed->n) {
            errfmt(err, errlen, "spec.workspace.storageClassName: %s is not allowed by SandboxClass \"%s\" "
                     "(%s: %s)", out->storage_class ? cls_quote(sc, q, sizeof q) : "the cluster default",
                     k->name, k->storage_classes.n ? "spec.workspace.allowedStorageClassNames"
                                                   : "spec.workspace.storageClassName",
                     res_list(allowed, list, sizeof list));
            goto fail;
        }
    }
    if (res_dup(k->name, &out->class_name) || res_dup(k->runtime_class, &out->runtime_class) ||
        res_dup(k->priority_class, &out->priority_class) || res_json(k->node_selector, &out->node_selector) ||
        res_json(k->tolerations, &out->tolerations) || res_json(k->affinity, &out->affinity) ||
        res_json(k->host_aliases, &out->host_aliases)) {
        errfmt(err, errlen, "out of memory while resolving the SandboxClass");
        goto fail;
    }
    out->max_running_per_user = k->max_running_per_user;
    out->per_user_across_namespaces = k->per_user_across_namespaces;
    out->reclaim_after_ms = k->reclaim_after_ms;
    out->workspace_max_bytes = k->workspace.max;
    out->forks_across_users = k->forks_across_users;
    out->activity_cpu_millis = k->activity_cpu_millis;
    return 0;
oom:
    errfmt(err, errlen, "out of memory while resolving the SandboxClass");
fail:
    sbx_spec_free(out);
    return -1;
}

/* ---- who may use a class ----------------------------------------------------------- */

int sbx_class_allows_namespace(const struct sbx_class *k, const char *ns, const cJSON *ns_labels, int ns_known,
                               char *why, size_t whylen) {
    char q[SBX_CLASS_QUOTE_MAX + 8];

    if (!k || !k->namespace_selector) return 1;
    if (!ns_known) {
        errfmt(why, whylen, "spec.className: SandboxClass \"%s\" is limited to some namespaces "
               "(spec.allowedNamespaces), and the controller cannot read Namespaces (no RBAC for the cluster-scoped "
               "namespaces read)", k->name);
        return 0;
    }
    if (sbx_selector_matches(k->namespace_selector, ns_labels)) return 1;
    errfmt(why, whylen, "spec.className: SandboxClass \"%s\" may not be used in namespace %s "
           "(spec.allowedNamespaces.selector does not select it)", k->name, cls_quote(ns ? ns : "", q, sizeof q));
    return 0;
}

/* "a, b, c" (or "none") of names into out. */
static void cls_names(const char *const *v, size_t n, char *out, size_t outlen) {
    size_t o = 0;
    out[0] = '\0';
    if (!n) snprintf(out, outlen, "none");
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(out + o, outlen - o, "%s%s", i ? ", " : "", v[i]);
        if (w < 0 || (size_t)w >= outlen - o) {
            if (outlen > 4) snprintf(out + (o < outlen - 4 ? o : outlen - 4), 4, "...");
            return;
        }
        o += (size_t)w;
    }
}

int sbx_class_allows_secrets(const struct sbx_class *k, const struct sbx_defaults *d, const struct sbx_spec *s,
                             char *why, size_t whylen) {
    const char *const *names = k ? (const char *const *)k->secret_names.v : (d ? d->allowed_secrets : NULL);
    size_t n = k ? k->secret_names.n : (d ? d->nallowed_secrets : 0);
    char list[512], q[SBX_CLASS_QUOTE_MAX + 8];

    for (int run = 0; run < 2; run++) {
        const struct sbx_env *env = run ? s->run.env : s->env;
        size_t nenv = run ? s->run.nenv : s->nenv;
        for (size_t i = 0; i < nenv; i++) {
            size_t j;
            if (!env[i].secret_name) continue;
            for (j = 0; j < n; j++)
                if (!strcmp(names[j], env[i].secret_name)) break;
            if (j < n) continue;
            cls_names(names, n, list, sizeof list);
            if (k)
                errfmt(why, whylen, "%s[%zu].valueFrom.secretKeyRef.name: Secret %s is not allowed by SandboxClass "
                       "\"%s\" (spec.secrets.names: %s)", run ? "spec.run.env" : "spec.env", i,
                       cls_quote(env[i].secret_name, q, sizeof q), k->name, list);
            else
                errfmt(why, whylen, "%s[%zu].valueFrom.secretKeyRef.name: Secret %s is not allowed for Sandboxes "
                       "without a SandboxClass (the controller's --allowed-secret: %s)", run ? "spec.run.env" : "spec.env",
                       i, cls_quote(env[i].secret_name, q, sizeof q), list);
            return 0;
        }
    }
    return 1;
}

int sbx_class_allows_lifecycle(const struct sbx_class *k, const struct sbx_spec *s, char *why, size_t whylen) {
    char list[128];
    size_t o = 0;

    if (!k || !k->allowed_lifecycles || (k->allowed_lifecycles & (1u << s->lifecycle))) return 1;
    list[0] = '\0';
    for (int l = SBX_ONE_SHOT; l <= SBX_PERSISTENT; l++) {
        if (!(k->allowed_lifecycles & (1u << l))) continue;
        int n = snprintf(list + o, sizeof list - o, "%s%s", o ? ", " : "", sbx_lifecycle_name((enum sbx_lifecycle)l));
        if (n < 0 || (size_t)n >= sizeof list - o) break;
        o += (size_t)n;
    }
    errfmt(why, whylen, "spec.lifecycle: %s is not allowed by SandboxClass \"%s\" (spec.allowedLifecycles: %s)",
           sbx_lifecycle_name(s->lifecycle), k->name, list);
    return 0;
}
