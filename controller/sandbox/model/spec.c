/* sandbox/model/spec.c — the Sandbox API in C: parse and re-validate a Sandbox's spec into
 * struct sbx_spec (controller defaults applied), the spec recorded in its status, and the
 * names of its enums.
 *
 * The CRD schema (crd/sandbox.yaml) validates the same rules on the API server; this file
 * checks them again because the schema may be missing, older, or bypassed, and the
 * controller must never build an object from an invalid spec. Every limit below has its
 * twin in the CRD: change both together. Error messages are one line, start with the JSON
 * path of the field, quote the offending value (escaped, cut at 64 bytes) and end up
 * verbatim in the Ready=False/InvalidSpec condition.
 *
 * Not here: the objects built from a parsed spec (builders.c), naming rules (naming.c),
 * unit parsing (quantity.c), any I/O. */
#include "sandbox/model/spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/kjson.h"
#include "sandbox/model/naming.h"
#include "sandbox/model/quantity.h"

/* Limits, mirrored in crd/sandbox.yaml. Lengths count Unicode code points, like the
 * API server's maxLength. */
#define SBX_ID_MAX_CHARS 128
#define SBX_IMAGE_MAX_CHARS 1024
#define SBX_ARGV_MAX_ITEMS 256
#define SBX_ARG_MAX_CHARS 32768
#define SBX_ENV_MAX_ITEMS 256
#define SBX_ENV_NAME_MAX_CHARS 256
#define SBX_ENV_VALUE_MAX_CHARS 32768
/* What one Sandbox may carry into its pod, in all (bytes): command and args together, and
 * run.command, each at most 128 KiB (Linux's MAX_ARG_STRLEN, and well under ARG_MAX); the
 * names and values of spec.env and spec.run.env together at most 256 KiB. With the rest
 * of the spec a pod stays far below the API server's 1.5 MiB request limit, and a
 * tenant's Sandboxes stay small in every list. */
#define SBX_ARGV_MAX_BYTES (128 * 1024)
#define SBX_ENV_MAX_BYTES (256 * 1024)
#define SBX_PATH_MAX_CHARS 1024
#define SBX_CLASS_MAX_CHARS 253
#define SBX_PORTS_MAX_ITEMS 64
#define SBX_PORT_NAME_MAX_CHARS 15

#define SBX_MIB (INT64_C(1) << 20)
#define SBX_TIB (INT64_C(1) << 40)
#define SBX_MEMORY_MIN (4 * SBX_MIB)
#define SBX_MEMORY_MAX SBX_TIB
#define SBX_CPU_MIN 1                   /* millicores */
#define SBX_CPU_MAX (256 * 1000)
#define SBX_WORKSPACE_MIN SBX_MIB
#define SBX_WORKSPACE_MAX (64 * SBX_TIB)

#define SBX_DURATION_MAX_MS (INT64_C(8760) * 3600 * 1000)   /* one year */
#define SBX_IDLE_MIN_MS 1000
#define SBX_RUN_TIMEOUT_DEFAULT_MS (INT64_C(10) * 60 * 1000)
#define SBX_TTL_DEFAULT_S 300
#define SBX_TTL_MAX_S INT64_C(2147483647)   /* int32, like Job's field */

#ifndef YAO_VERSION
#error "YAO_VERSION (the project version) must be defined by the build; see CMakeLists.txt"
#endif

/* How much of an offending value an error message quotes. */
#define SBX_QUOTE_MAX 64

static const char *const sbx_reserved_env[] = {
    "YAO_SANDBOX_NAME", "YAO_USER_ID", "YAO_CHAT_ID",
};

/* Parsing context: the defaults in force and where the error message goes. */
struct sbx_pctx {
    const struct sbx_defaults *d;
    char *err;
    size_t errlen;
};

/* ---- small helpers ------------------------------------------------------------------ */

/* Write the error message (printf-style) and return -1. */
__attribute__((format(printf, 2, 3)))
static int sbx_fail(struct sbx_pctx *c, const char *fmt, ...) {
    va_list ap;

    va_start(ap, fmt);
    errfmt_v(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int sbx_enomem(struct sbx_pctx *c) {
    return sbx_fail(c, "out of memory while parsing the Sandbox spec");
}

/* Quote s for an error message: "..." with quotes, backslashes and control characters
 * escaped, cut after SBX_QUOTE_MAX bytes on a UTF-8 boundary with "..." appended, so the
 * message stays one readable line whatever the input. out >= 4 * SBX_QUOTE_MAX + 8. */
static const char *sbx_quote(const char *s, char *out, size_t outlen) {
    size_t i, o = 0;

    out[o++] = '"';
    for (i = 0; s[i] && o + 8 < outlen; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (i >= SBX_QUOTE_MAX && (ch & 0xC0) != 0x80) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

/* Number of Unicode code points in UTF-8 s (continuation bytes not counted). */
static size_t sbx_utf8_len(const char *s) {
    size_t n = 0;

    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

/* True if s holds an ASCII control character (the CRD's [^\x00-\x1f\x7f]). */
static int sbx_has_ctl(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
    return 0;
}


static int sbx_dup(struct sbx_pctx *c, const char *s, char **out) {
    *out = strdup(s);
    return *out ? 0 : sbx_enomem(c);
}

/* Optional string member: 0 with *out = NULL when absent, 0 with *out set when a string,
 * -1 (error written) for any other type. */
static int sbx_opt_string(struct sbx_pctx *c, const cJSON *obj, const char *key,
                          const char *path, const char **out) {
    const cJSON *v = kj_member(obj, key);

    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsString(v)) return sbx_fail(c, "%s: must be a string", path);
    *out = v->valuestring;
    return 0;
}

/* Optional object member, same convention as sbx_opt_string. */
static int sbx_opt_object(struct sbx_pctx *c, const cJSON *obj, const char *key,
                          const char *path, const cJSON **out) {
    const cJSON *v = kj_member(obj, key);

    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return sbx_fail(c, "%s: must be an object", path);
    *out = v;
    return 0;
}

/* A user or chat ID: required, 1..128 characters, no control characters. */
static int sbx_parse_id(struct sbx_pctx *c, const cJSON *spec, const char *key, char **out) {
    char path[32], q[4 * SBX_QUOTE_MAX + 8];
    const char *s;
    size_t n;

    snprintf(path, sizeof path, "spec.%s", key);
    if (sbx_opt_string(c, spec, key, path, &s)) return -1;
    if (!s) return sbx_fail(c, "%s: required", path);
    if (!*s) return sbx_fail(c, "%s: must not be empty", path);
    n = sbx_utf8_len(s);
    if (n > SBX_ID_MAX_CHARS)
        return sbx_fail(c, "%s: must be at most %d characters (got %zu)", path,
                        SBX_ID_MAX_CHARS, n);
    if (sbx_has_ctl(s))
        return sbx_fail(c, "%s: %s must not contain control characters", path,
                        sbx_quote(s, q, sizeof q));
    return sbx_dup(c, s, out);
}

/* An image reference: non-empty, at most 1024 characters, no whitespace or controls.
 * what names the value in messages ("spec.image" or the controller default). */
static int sbx_check_image(struct sbx_pctx *c, const char *s, const char *what) {
    char q[4 * SBX_QUOTE_MAX + 8];
    size_t n;

    if (!s || !*s) return sbx_fail(c, "%s: must not be empty", what);
    n = sbx_utf8_len(s);
    if (n > SBX_IMAGE_MAX_CHARS)
        return sbx_fail(c, "%s: must be at most %d characters (got %zu)", what,
                        SBX_IMAGE_MAX_CHARS, n);
    for (const char *p = s; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' ||
            *p == '\f' || (unsigned char)*p < 0x20 || *p == 0x7f)
            return sbx_fail(c, "%s: %s must not contain whitespace or control characters",
                            what, sbx_quote(s, q, sizeof q));
    return 0;
}

/* An environment variable name as the CRD allows it: [A-Za-z_][A-Za-z0-9_.-]* — a subset
 * of Kubernetes' own rule ([-._a-zA-Z][-._a-zA-Z0-9]*) that a POSIX shell can also name. */
static int sbx_is_env_name(const char *s) {
    unsigned char ch = (unsigned char)s[0];

    if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_')) return 0;
    for (s++; *s; s++) {
        ch = (unsigned char)*s;
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-'))
            return 0;
    }
    return 1;
}

/* An absolute path of at most 1024 characters without control characters. A mount point
 * (mount != 0) must also not be "/" and not contain ".." elements; a working directory
 * may (it is only cd'ed into). */
static int sbx_check_abs_path(struct sbx_pctx *c, const char *s, const char *path,
                              int mount) {
    char q[4 * SBX_QUOTE_MAX + 8];
    const char *p;
    size_t n = sbx_utf8_len(s);

    if (s[0] != '/')
        return sbx_fail(c, "%s: %s must be an absolute path", path, sbx_quote(s, q, sizeof q));
    if (n > SBX_PATH_MAX_CHARS)
        return sbx_fail(c, "%s: must be at most %d characters (got %zu)", path,
                        SBX_PATH_MAX_CHARS, n);
    if (sbx_has_ctl(s))
        return sbx_fail(c, "%s: %s must not contain control characters", path,
                        sbx_quote(s, q, sizeof q));
    if (!mount) return 0;
    if (s[strspn(s, "/")] == '\0') return sbx_fail(c, "%s: must not be \"/\"", path);
    for (p = s; (p = strstr(p, "..")) != NULL; p += 2)
        if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
            return sbx_fail(c, "%s: %s must not contain \"..\" elements", path,
                            sbx_quote(s, q, sizeof q));
    return 0;
}

/* ---- typed parsers ------------------------------------------------------------------ */

/* A string array member (command, args, run.command): at most 256 elements of at most
 * 32768 characters each. Absent → empty. */
static int sbx_parse_strv(struct sbx_pctx *c, const cJSON *obj, const char *key,
                          const char *path, struct sbx_strv *out) {
    const cJSON *arr = kj_member(obj, key), *it;
    size_t i = 0, n;

    out->v = NULL;
    out->n = 0;
    if (!arr) return 0;
    if (!cJSON_IsArray(arr)) return sbx_fail(c, "%s: must be an array of strings", path);
    n = (size_t)cJSON_GetArraySize(arr);
    if (n > SBX_ARGV_MAX_ITEMS)
        return sbx_fail(c, "%s: must have at most %d elements (got %zu)", path,
                        SBX_ARGV_MAX_ITEMS, n);
    if (n == 0) return 0;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it)) return sbx_fail(c, "%s[%zu]: must be a string", path, i);
        if (sbx_utf8_len(it->valuestring) > SBX_ARG_MAX_CHARS)
            return sbx_fail(c, "%s[%zu]: must be at most %d characters", path, i,
                            SBX_ARG_MAX_CHARS);
        i++;
    }
    out->v = calloc(n, sizeof *out->v);
    if (!out->v) return sbx_enomem(c);
    cJSON_ArrayForEach(it, arr) {
        out->v[out->n] = strdup(it->valuestring);
        if (!out->v[out->n]) return sbx_enomem(c);
        out->n++;
    }
    return 0;
}

static size_t sbx_strv_bytes(const struct sbx_strv *v) {
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++) n += strlen(v->v[i]);
    return n;
}

static size_t sbx_env_bytes(const struct sbx_env *e, size_t n) {
    size_t b = 0;
    for (size_t i = 0; i < n; i++) b += strlen(e[i].name) + strlen(e[i].value);
    return b;
}

/* valueFrom of env item i at path: only {secretKeyRef: {name, key, optional}}, a Secret of
 * the Sandbox's own namespace (a pod cannot name another's), read by the kubelet. */
static int sbx_parse_env_from(struct sbx_pctx *c, const cJSON *from, const char *path, size_t i,
                              struct sbx_env *e) {
    char q[4 * SBX_QUOTE_MAX + 8];
    const cJSON *ref, *opt, *it;
    const char *name, *key;

    if (!cJSON_IsObject(from)) return sbx_fail(c, "%s[%zu].valueFrom: must be an object", path, i);
    cJSON_ArrayForEach(it, from)
        if (strcmp(it->string, "secretKeyRef") != 0)
            return sbx_fail(c, "%s[%zu].valueFrom.%s: not supported (only secretKeyRef)", path, i,
                            it->string);
    ref = kj_member(from, "secretKeyRef");
    if (!ref) return sbx_fail(c, "%s[%zu].valueFrom.secretKeyRef: required", path, i);
    if (!cJSON_IsObject(ref))
        return sbx_fail(c, "%s[%zu].valueFrom.secretKeyRef: must be an object", path, i);
    name = cJSON_IsString(kj_member(ref, "name")) ? kj_member(ref, "name")->valuestring : NULL;
    key = cJSON_IsString(kj_member(ref, "key")) ? kj_member(ref, "key")->valuestring : NULL;
    if (!name) return sbx_fail(c, "%s[%zu].valueFrom.secretKeyRef.name: required (a string)", path, i);
    if (!sbx_is_dns_subdomain(name))
        return sbx_fail(c, "%s[%zu].valueFrom.secretKeyRef.name: %s is not a valid Secret name "
                        "(lower-case DNS-1123 subdomain)", path, i, sbx_quote(name, q, sizeof q));
    if (!key) return sbx_fail(c, "%s[%zu].valueFrom.secretKeyRef.key: required (a string)", path, i);
    /* Secret data keys: [-._a-zA-Z0-9]+, at most 253 characters */
    if (!*key || strlen(key) > SBX_CLASS_MAX_CHARS || strspn(key, "-._abcdefghijklmnopqrstuvwxyz"
                                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != strlen(key))
        return sbx_fail(c, "%s[%zu].valueFrom.secretKeyRef.key: %s is not a valid Secret key "
                        "(letters, digits, '-', '_', '.')", path, i, sbx_quote(key, q, sizeof q));
    opt = kj_member(ref, "optional");
    if (opt && !cJSON_IsBool(opt))
        return sbx_fail(c, "%s[%zu].valueFrom.secretKeyRef.optional: must be true or false", path, i);
    e->secret_optional = cJSON_IsTrue(opt);
    e->secret_name = strdup(name);
    e->secret_key = strdup(key);
    return e->secret_name && e->secret_key ? 0 : sbx_enomem(c);
}

/* An env list member (spec.env, spec.run.env): objects {name, value} or {name, valueFrom};
 * names valid, unique, not reserved; values strings of at most 32768 characters
 * (absent = ""); valueFrom a secretKeyRef (sbx_parse_env_from), never with value. */
static int sbx_parse_env(struct sbx_pctx *c, const cJSON *obj, const char *key,
                         const char *path, struct sbx_env **out, size_t *nout) {
    char q[4 * SBX_QUOTE_MAX + 8];
    const cJSON *arr = kj_member(obj, key), *it;
    size_t i = 0, j, k, n;

    *out = NULL;
    *nout = 0;
    if (!arr) return 0;
    if (!cJSON_IsArray(arr))
        return sbx_fail(c, "%s: must be an array of {name, value} objects", path);
    n = (size_t)cJSON_GetArraySize(arr);
    if (n > SBX_ENV_MAX_ITEMS)
        return sbx_fail(c, "%s: must have at most %d elements (got %zu)", path,
                        SBX_ENV_MAX_ITEMS, n);
    if (n == 0) return 0;
    *out = calloc(n, sizeof **out);
    if (!*out) return sbx_enomem(c);
    cJSON_ArrayForEach(it, arr) {
        const cJSON *name, *value, *from;
        size_t len;

        if (!cJSON_IsObject(it))
            return sbx_fail(c, "%s[%zu]: must be an object with name and value", path, i);
        name = kj_member(it, "name");
        value = kj_member(it, "value");
        if (!name) return sbx_fail(c, "%s[%zu].name: required", path, i);
        if (!cJSON_IsString(name)) return sbx_fail(c, "%s[%zu].name: must be a string", path, i);
        len = sbx_utf8_len(name->valuestring);
        if (len == 0) return sbx_fail(c, "%s[%zu].name: must not be empty", path, i);
        if (len > SBX_ENV_NAME_MAX_CHARS)
            return sbx_fail(c, "%s[%zu].name: must be at most %d characters (got %zu)", path, i,
                            SBX_ENV_NAME_MAX_CHARS, len);
        if (!sbx_is_env_name(name->valuestring))
            return sbx_fail(c, "%s[%zu].name: %s is not a valid variable name (a letter or '_', "
                            "then letters, digits, '_', '.' or '-')", path, i,
                            sbx_quote(name->valuestring, q, sizeof q));
        for (k = 0; k < sizeof sbx_reserved_env / sizeof *sbx_reserved_env; k++)
            if (strcmp(name->valuestring, sbx_reserved_env[k]) == 0)
                return sbx_fail(c, "%s[%zu].name: %s is reserved (set by the controller)",
                                path, i, sbx_quote(name->valuestring, q, sizeof q));
        for (j = 0; j < i; j++)
            if (strcmp((*out)[j].name, name->valuestring) == 0)
                return sbx_fail(c, "%s[%zu].name: duplicate name %s (also %s[%zu])", path, i,
                                sbx_quote(name->valuestring, q, sizeof q), path, j);
        if (value && !cJSON_IsString(value))
            return sbx_fail(c, "%s[%zu].value: must be a string", path, i);
        if (value && sbx_utf8_len(value->valuestring) > SBX_ENV_VALUE_MAX_CHARS)
            return sbx_fail(c, "%s[%zu].value: must be at most %d characters", path, i,
                            SBX_ENV_VALUE_MAX_CHARS);
        from = kj_member(it, "valueFrom");
        if (from && value)
            return sbx_fail(c, "%s[%zu]: value and valueFrom are mutually exclusive", path, i);
        (*out)[i].name = strdup(name->valuestring);
        (*out)[i].value = strdup(value ? value->valuestring : "");
        *nout = ++i;   /* counted now so that sbx_spec_free frees a half-built entry */
        if (!(*out)[i - 1].name || !(*out)[i - 1].value) return sbx_enomem(c);
        if (from && sbx_parse_env_from(c, from, path, i - 1, &(*out)[i - 1])) return -1;
    }
    return 0;
}

enum sbx_qty_kind { SBX_QTY_BYTES, SBX_QTY_CPU };

/* Human form of a limit for messages: "4Mi", "1Ti", "1m", "256". */
static const char *sbx_qty_show(enum sbx_qty_kind kind, int64_t v, char *out, size_t outlen) {
    int rc = kind == SBX_QTY_CPU ? qty_format_cpu(v, out, outlen)
                                 : qty_format_memory(v, out, outlen);
    if (rc != 0) snprintf(out, outlen, "%lld", (long long)v);
    return out;
}

/* A quantity member (memory, cpu, workspace size): a string, or an integer as the CRD's
 * x-kubernetes-int-or-string allows; parsed with quantity.h and kept within [min, max].
 * Absent → *out = dflt (the controller default, range-checked as well). */
static int sbx_parse_qty(struct sbx_pctx *c, const cJSON *obj, const char *key,
                         const char *path, enum sbx_qty_kind kind, int64_t min, int64_t max,
                         int64_t dflt, int64_t *out) {
    char text[64], shown[4 * SBX_QUOTE_MAX + 32], lim[32];
    const cJSON *v = obj ? kj_member(obj, key) : NULL;
    int rc;

    if (!v) {
        *out = dflt;
        snprintf(shown, sizeof shown, "controller default %s",
                 sbx_qty_show(kind, dflt, lim, sizeof lim));
    } else {
        if (cJSON_IsString(v)) {
            sbx_quote(v->valuestring, shown, sizeof shown);
            snprintf(text, sizeof text, "%s", v->valuestring);
            if (strlen(v->valuestring) >= sizeof text) text[0] = '\0';   /* too long: junk */
        } else if (cJSON_IsNumber(v)) {
            snprintf(text, sizeof text, "%.15g", v->valuedouble);
            snprintf(shown, sizeof shown, "%s", text);
        } else {
            return sbx_fail(c, "%s: must be a string or an integer", path);
        }
        rc = kind == SBX_QTY_CPU ? qty_parse_cpu(text, out) : qty_parse_memory(text, out);
        if (rc != 0 || !text[0]) return sbx_fail(c, "%s: %s is not a valid quantity", path, shown);
    }
    if (*out < min)
        return sbx_fail(c, "%s: %s is below the minimum %s", path, shown,
                        sbx_qty_show(kind, min, lim, sizeof lim));
    if (*out > max)
        return sbx_fail(c, "%s: %s is above the maximum %s", path, shown,
                        sbx_qty_show(kind, max, lim, sizeof lim));
    return 0;
}

/* Duration member: a string such as "90s" or "1h30m" within [min_ms, SBX_DURATION_MAX_MS];
 * "0" only when min_ms == 0. Absent → *out = dflt (range-checked too). */
static int sbx_parse_duration(struct sbx_pctx *c, const cJSON *obj, const char *key,
                              const char *path, int64_t min_ms, int64_t dflt, int64_t *out) {
    char q[4 * SBX_QUOTE_MAX + 32];
    const char *s;

    if (sbx_opt_string(c, obj, key, path, &s)) return -1;
    if (!s) {
        *out = dflt;
        snprintf(q, sizeof q, "controller default %lldms", (long long)dflt);
    } else {
        sbx_quote(s, q, sizeof q);
        if (qty_parse_duration(s, out) != 0)
            return sbx_fail(c, "%s: %s is not a valid duration (e.g. 90s, 30m, 2h, 1h30m)",
                            path, q);
    }
    if (*out < min_ms) {
        if (min_ms == SBX_IDLE_MIN_MS)
            return sbx_fail(c, "%s: %s is below the minimum 1s", path, q);
        return sbx_fail(c, "%s: %s must not be negative", path, q);
    }
    if (*out > SBX_DURATION_MAX_MS)
        return sbx_fail(c, "%s: %s is above the maximum 8760h", path, q);
    return 0;
}

/* One request of spec.resources.requests: given, it must lie within [min, max] and not
 * above the limit (the API server refuses a pod whose request exceeds its limit, so this
 * is reported as InvalidSpec rather than silently changed); absent, the controller's
 * default request, capped at the limit, so that lowering only a limit in a spec (memory
 * 128Mi under a 256Mi default request) still gives a valid pod. */
static int sbx_parse_request(struct sbx_pctx *c, const cJSON *res, const cJSON *req,
                             const char *key, enum sbx_qty_kind kind, int64_t min,
                             int64_t max, int64_t dflt, int64_t limit, int64_t *out) {
    char path[64], lim[32], got[32];

    snprintf(path, sizeof path, "spec.resources.requests.%s", key);
    if (!req || !kj_member(req, key)) {
        *out = dflt < limit ? dflt : limit;
        return 0;
    }
    if (sbx_parse_qty(c, req, key, path, kind, min, max, dflt, out)) return -1;
    if (*out > limit)
        return sbx_fail(c, "%s: %s is above the %s limit %s (%s); a request cannot exceed "
                        "its limit", path, sbx_qty_show(kind, *out, got, sizeof got),
                        key, sbx_qty_show(kind, limit, lim, sizeof lim),
                        res && kj_member(res, key)
                            ? (kind == SBX_QTY_CPU ? "spec.resources.cpu" : "spec.resources.memory")
                            : (kind == SBX_QTY_CPU ? "the controller default YAO_SANDBOX_CPU"
                                                   : "the controller default YAO_SANDBOX_MEMORY"));
    return 0;
}

/* spec.resources: memory and cpu are the limits (the field names predate requests);
 * requests {memory, cpu} are optional and default to the controller's, capped at the
 * limits. */
static int sbx_parse_resources(struct sbx_pctx *c, const cJSON *spec, struct sbx_spec *s) {
    const cJSON *res, *req = NULL;

    if (sbx_opt_object(c, spec, "resources", "spec.resources", &res)) return -1;
    if (sbx_parse_qty(c, res, "memory", "spec.resources.memory", SBX_QTY_BYTES, SBX_MEMORY_MIN,
                      SBX_MEMORY_MAX, c->d->memory_bytes, &s->memory_bytes))
        return -1;
    if (sbx_parse_qty(c, res, "cpu", "spec.resources.cpu", SBX_QTY_CPU, SBX_CPU_MIN,
                      SBX_CPU_MAX, c->d->cpu_millis, &s->cpu_millis))
        return -1;
    if (res && kj_member(res, "ephemeralStorage")) {
        if (sbx_parse_qty(c, res, "ephemeralStorage", "spec.resources.ephemeralStorage", SBX_QTY_BYTES,
                          SBX_WORKSPACE_MIN, SBX_WORKSPACE_MAX, 0, &s->ephemeral_bytes))
            return -1;
    } else {
        s->ephemeral_bytes = c->d->ephemeral_bytes;   /* 0: no limit */
    }
    if (res && sbx_opt_object(c, res, "requests", "spec.resources.requests", &req)) return -1;
    if (sbx_parse_request(c, res, req, "memory", SBX_QTY_BYTES, SBX_MEMORY_MIN, SBX_MEMORY_MAX,
                          c->d->memory_request_bytes, s->memory_bytes, &s->memory_request_bytes))
        return -1;
    return sbx_parse_request(c, res, req, "cpu", SBX_QTY_CPU, SBX_CPU_MIN, SBX_CPU_MAX,
                             c->d->cpu_request_millis, s->cpu_millis, &s->cpu_request_millis);
}

/* spec.workspace.from: {sandbox: NAME}, a Sandbox of the same namespace other than this
 * one (self is the Sandbox's own metadata.name, NULL when it has none yet). */
static int sbx_parse_workspace_from(struct sbx_pctx *c, const cJSON *ws, const char *self,
                                    struct sbx_spec *s) {
    char q[4 * SBX_QUOTE_MAX + 8];
    const cJSON *from;
    const char *src = NULL;

    if (!ws || sbx_opt_object(c, ws, "from", "spec.workspace.from", &from)) return ws ? -1 : 0;
    if (!from) return 0;
    if (sbx_opt_string(c, from, "sandbox", "spec.workspace.from.sandbox", &src)) return -1;
    if (!src) return sbx_fail(c, "spec.workspace.from.sandbox: required");
    if (!sbx_is_dns_subdomain(src))
        return sbx_fail(c, "spec.workspace.from.sandbox: %s is not a Sandbox name (lower-case "
                        "DNS-1123 subdomain)", sbx_quote(src, q, sizeof q));
    if (self && !strcmp(src, self))
        return sbx_fail(c, "spec.workspace.from.sandbox: a Sandbox cannot start from its own workspace");
    return sbx_dup(c, src, &s->workspace_from);
}

/* spec.workspace: size, storageClassName ("" kept: no class), mountPath, from. */
static int sbx_parse_workspace(struct sbx_pctx *c, const cJSON *spec, const char *self,
                               struct sbx_spec *s) {
    char q[4 * SBX_QUOTE_MAX + 8];
    const cJSON *ws;
    const char *cls = NULL, *mount = NULL;

    if (sbx_opt_object(c, spec, "workspace", "spec.workspace", &ws)) return -1;
    if (sbx_parse_qty(c, ws, "size", "spec.workspace.size", SBX_QTY_BYTES, SBX_WORKSPACE_MIN,
                      SBX_WORKSPACE_MAX, c->d->workspace_bytes, &s->workspace_bytes))
        return -1;
    if (ws && sbx_opt_string(c, ws, "storageClassName", "spec.workspace.storageClassName",
                             &cls))
        return -1;
    if (!cls) cls = c->d->storage_class;
    if (cls && *cls && !sbx_is_dns_subdomain(cls))
        return sbx_fail(c, "spec.workspace.storageClassName: %s is not a valid StorageClass "
                        "name (lower-case DNS-1123 subdomain)", sbx_quote(cls, q, sizeof q));
    if (cls && sbx_dup(c, cls, &s->storage_class)) return -1;
    if (ws && sbx_opt_string(c, ws, "mountPath", "spec.workspace.mountPath", &mount))
        return -1;
    if (!mount) mount = "/workspace";
    if (sbx_check_abs_path(c, mount, "spec.workspace.mountPath", 1)) return -1;
    if (sbx_dup(c, mount, &s->mount_path)) return -1;
    return sbx_parse_workspace_from(c, ws, self, s);
}

/* spec.run: command (required, command[0] non-empty), workingDir, env, timeout. */
static int sbx_parse_run(struct sbx_pctx *c, const cJSON *spec, struct sbx_run *r) {
    const cJSON *run;
    const char *wd;

    if (sbx_opt_object(c, spec, "run", "spec.run", &run)) return -1;
    if (!run) return 0;
    r->present = 1;
    if (sbx_parse_strv(c, run, "command", "spec.run.command", &r->command)) return -1;
    if (r->command.n == 0)
        return sbx_fail(c, "spec.run.command: required (at least one element)");
    if (sbx_strv_bytes(&r->command) > SBX_ARGV_MAX_BYTES)
        return sbx_fail(c, "spec.run.command: must be at most %d bytes in all (got %zu)", SBX_ARGV_MAX_BYTES,
                        sbx_strv_bytes(&r->command));
    if (!r->command.v[0][0]) return sbx_fail(c, "spec.run.command[0]: must not be empty");
    if (sbx_opt_string(c, run, "workingDir", "spec.run.workingDir", &wd)) return -1;
    if (wd) {
        if (sbx_check_abs_path(c, wd, "spec.run.workingDir", 0)) return -1;
        if (sbx_dup(c, wd, &r->working_dir)) return -1;
    }
    if (sbx_parse_env(c, run, "env", "spec.run.env", &r->env, &r->nenv)) return -1;
    return sbx_parse_duration(c, run, "timeout", "spec.run.timeout", 0,
                              SBX_RUN_TIMEOUT_DEFAULT_MS, &r->timeout_ms);
}

static const char *const sbx_port_protocol_names[] = {
    [SBX_PROTO_TCP] = "TCP",
    [SBX_PROTO_UDP] = "UDP",
    [SBX_PROTO_SCTP] = "SCTP",
};

/* An IANA service name, as Kubernetes' IsValidPortName: 1-15 characters of [a-z0-9-], at
 * least one letter, no '-' at either end, no "--". */
static int sbx_is_port_name(const char *s) {
    size_t n = strlen(s);
    int letter = 0;

    if (n == 0 || n > SBX_PORT_NAME_MAX_CHARS || s[0] == '-' || s[n - 1] == '-' || strstr(s, "--")) return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 'a' && s[i] <= 'z') letter = 1;
        else if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '-')) return 0;
    }
    return letter;
}

/* spec.ports: objects {name, port, protocol}; names valid and unique, ports 1-65535 and
 * unique per protocol (the CRD's list-map keys), protocol TCP (default), UDP or SCTP. */
static int sbx_parse_ports(struct sbx_pctx *c, const cJSON *spec, struct sbx_spec *s) {
    char q[4 * SBX_QUOTE_MAX + 8];
    const cJSON *arr = kj_member(spec, "ports"), *it;
    size_t i = 0, n;

    if (!arr) return 0;
    if (!cJSON_IsArray(arr)) return sbx_fail(c, "spec.ports: must be an array of {name, port, protocol} objects");
    n = (size_t)cJSON_GetArraySize(arr);
    if (n > SBX_PORTS_MAX_ITEMS)
        return sbx_fail(c, "spec.ports: must have at most %d elements (got %zu)", SBX_PORTS_MAX_ITEMS, n);
    if (n == 0) return 0;
    s->ports = calloc(n, sizeof *s->ports);
    if (!s->ports) return sbx_enomem(c);
    cJSON_ArrayForEach(it, arr) {
        const cJSON *name, *port, *proto;
        struct sbx_port *p = &s->ports[i];
        double x;

        if (!cJSON_IsObject(it)) return sbx_fail(c, "spec.ports[%zu]: must be an object with name and port", i);
        name = kj_member(it, "name");
        port = kj_member(it, "port");
        proto = kj_member(it, "protocol");
        if (!name) return sbx_fail(c, "spec.ports[%zu].name: required", i);
        if (!cJSON_IsString(name)) return sbx_fail(c, "spec.ports[%zu].name: must be a string", i);
        if (!sbx_is_port_name(name->valuestring))
            return sbx_fail(c, "spec.ports[%zu].name: %s is not a valid port name (at most 15 characters: "
                            "lower-case letters, digits and '-', at least one letter, no '-' at either end "
                            "or twice in a row)", i, sbx_quote(name->valuestring, q, sizeof q));
        if (!port) return sbx_fail(c, "spec.ports[%zu].port: required", i);
        x = cJSON_IsNumber(port) ? port->valuedouble : 0;
        if (!cJSON_IsNumber(port) || x != x || x < 1 || x > 65535 || x != (double)(int)x)
            return sbx_fail(c, "spec.ports[%zu].port: must be an integer between 1 and 65535", i);
        p->port = (int)x;
        p->protocol = SBX_PROTO_TCP;
        if (proto) {
            size_t k, nk = sizeof sbx_port_protocol_names / sizeof *sbx_port_protocol_names;
            if (!cJSON_IsString(proto)) return sbx_fail(c, "spec.ports[%zu].protocol: must be a string", i);
            for (k = 0; k < nk && strcmp(proto->valuestring, sbx_port_protocol_names[k]) != 0; k++) {}
            if (k == nk)
                return sbx_fail(c, "spec.ports[%zu].protocol: %s is not one of TCP, UDP, SCTP", i,
                                sbx_quote(proto->valuestring, q, sizeof q));
            p->protocol = (enum sbx_port_protocol)k;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(s->ports[j].name, name->valuestring) == 0)
                return sbx_fail(c, "spec.ports[%zu].name: duplicate name %s (also spec.ports[%zu])", i,
                                sbx_quote(name->valuestring, q, sizeof q), j);
            if (s->ports[j].port == p->port && s->ports[j].protocol == p->protocol)
                return sbx_fail(c, "spec.ports[%zu].port: duplicate port %d/%s (also spec.ports[%zu])", i, p->port,
                                sbx_port_protocol_names[p->protocol], j);
        }
        p->name = strdup(name->valuestring);
        s->nports = ++i;   /* counted now so that sbx_spec_free frees a half-built entry */
        if (!p->name) return sbx_enomem(c);
    }
    return 0;
}

/* spec.service: {enabled}; enabled needs at least one port. */
static int sbx_parse_service(struct sbx_pctx *c, const cJSON *spec, struct sbx_spec *s) {
    const cJSON *svc, *en;

    if (sbx_opt_object(c, spec, "service", "spec.service", &svc)) return -1;
    if (!svc) return 0;
    en = kj_member(svc, "enabled");
    if (en && !cJSON_IsBool(en)) return sbx_fail(c, "spec.service.enabled: must be true or false");
    s->service = cJSON_IsTrue(en);
    if (s->service && s->nports == 0)
        return sbx_fail(c, "spec.service.enabled: needs at least one port in spec.ports");
    return 0;
}

/* The whole spec, in the order of the CRD's fields, into s (zeroed by the caller). */
static int sbx_parse_spec(struct sbx_pctx *c, const cJSON *sandbox, struct sbx_spec *s) {
    char q[4 * SBX_QUOTE_MAX + 8];
    const cJSON *spec, *v;
    const char *str;

    if (!cJSON_IsObject(sandbox)) return sbx_fail(c, "Sandbox: not a JSON object");
    spec = kj_member(sandbox, "spec");
    if (!spec) return sbx_fail(c, "spec: required");
    if (!cJSON_IsObject(spec)) return sbx_fail(c, "spec: must be an object");

    if (sbx_parse_id(c, spec, "userID", &s->user_id)) return -1;
    if (sbx_parse_id(c, spec, "chatID", &s->chat_id)) return -1;

    if (sbx_opt_string(c, spec, "image", "spec.image", &str)) return -1;
    if (str) {
        if (sbx_check_image(c, str, "spec.image")) return -1;
    } else {
        str = c->d->image;
        if (!str || !*str)
            return sbx_fail(c, "spec.image: not set and the controller has no default image");
        if (sbx_check_image(c, str, "spec.image (controller default)")) return -1;
        s->image_builtin = c->d->image_builtin;
    }
    if (sbx_dup(c, str, &s->image)) return -1;

    if (sbx_opt_string(c, spec, "lifecycle", "spec.lifecycle", &str)) return -1;
    s->lifecycle = c->d->lifecycle;
    if (str && sbx_lifecycle_parse(str, &s->lifecycle) != 0)
        return sbx_fail(c, "spec.lifecycle: %s is not one of one-shot, session, long-running, "
                        "persistent", sbx_quote(str, q, sizeof q));

    if (sbx_parse_duration(c, spec, "idleTimeout", "spec.idleTimeout", SBX_IDLE_MIN_MS,
                           c->d->idle_timeout_ms, &s->idle_timeout_ms))
        return -1;

    v = kj_member(spec, "paused");
    if (v && !cJSON_IsBool(v)) return sbx_fail(c, "spec.paused: must be true or false");
    s->paused = cJSON_IsTrue(v);

    if (sbx_parse_strv(c, spec, "command", "spec.command", &s->command)) return -1;
    if (sbx_parse_strv(c, spec, "args", "spec.args", &s->args)) return -1;
    s->has_command = s->command.n > 0;
    s->has_args = s->args.n > 0;
    if (sbx_strv_bytes(&s->command) + sbx_strv_bytes(&s->args) > SBX_ARGV_MAX_BYTES)
        return sbx_fail(c, "spec.command and spec.args: must be at most %d bytes in all (got %zu)",
                        SBX_ARGV_MAX_BYTES, sbx_strv_bytes(&s->command) + sbx_strv_bytes(&s->args));

    if (sbx_parse_env(c, spec, "env", "spec.env", &s->env, &s->nenv)) return -1;

    if (sbx_parse_resources(c, spec, s)) return -1;
    s->pull_policy = c->d->pull_policy;
    s->run_as_user = c->d->run_as_user;
    s->warm_idle_cpu_millis = c->d->warm_idle_cpu_millis;
    s->warm_idle_window_ms = c->d->warm_idle_window_ms;
    if (s->run_as_user != SBX_RUN_AS_AUTO && (s->run_as_user < 1 || s->run_as_user > INT32_MAX))
        return sbx_fail(c, "sandbox run-as user: must be between 1 and 2147483647, or auto");
    for (size_t i = 0; i < c->d->npull_secrets; i++) {
        if (!sbx_is_dns_subdomain(c->d->pull_secrets[i]))
            return sbx_fail(c, "sandbox image pull secret %s: not a Secret name (lower-case "
                            "DNS-1123 subdomain)", sbx_quote(c->d->pull_secrets[i], q, sizeof q));
    }
    s->pull_secrets = c->d->npull_secrets ? c->d->pull_secrets : NULL;
    s->npull_secrets = c->d->npull_secrets;

    v = kj_member(sandbox, "metadata");
    v = v ? kj_member(v, "name") : NULL;
    if (sbx_parse_workspace(c, spec, cJSON_IsString(v) ? v->valuestring : NULL, s)) return -1;

    if (sbx_parse_run(c, spec, &s->run)) return -1;
    if (sbx_env_bytes(s->env, s->nenv) + sbx_env_bytes(s->run.env, s->run.nenv) > SBX_ENV_MAX_BYTES)
        return sbx_fail(c, "spec.env and spec.run.env: names and values must be at most %d bytes in all (got %zu)",
                        SBX_ENV_MAX_BYTES, sbx_env_bytes(s->env, s->nenv) + sbx_env_bytes(s->run.env, s->run.nenv));
    if (s->lifecycle == SBX_ONE_SHOT && !s->run.present)
        return sbx_fail(c, "spec.run: required when lifecycle is one-shot");

    v = kj_member(spec, "ttlSecondsAfterFinished");
    s->ttl_after_finished_s = SBX_TTL_DEFAULT_S;
    if (v) {
        double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (!cJSON_IsNumber(v) || x != x || x < 0 || x > (double)SBX_TTL_MAX_S ||
            x != (double)(int64_t)x)
            return sbx_fail(c, "spec.ttlSecondsAfterFinished: must be an integer between 0 "
                            "and 2147483647");
        s->ttl_after_finished_s = (int64_t)x;
    }
    if (sbx_parse_ports(c, spec, s)) return -1;
    return sbx_parse_service(c, spec, s);
}

/* ---- public: parsing ---------------------------------------------------------------- */

void sbx_defaults_init(struct sbx_defaults *d) {
    d->image = SBX_DEFAULT_IMAGE;
    d->image_builtin = 1;
    d->idle_timeout_ms = INT64_C(30) * 60 * 1000;
    d->memory_bytes = INT64_C(2) << 30;
    d->cpu_millis = 1000;
    d->memory_request_bytes = SBX_DEFAULT_MEMORY_REQUEST;
    d->cpu_request_millis = SBX_DEFAULT_CPU_REQUEST;
    d->pull_policy = SBX_PULL_BY_IMAGE;
    d->workspace_bytes = INT64_C(10) << 30;
    d->storage_class = NULL;
    d->run_as_user = SBX_RUN_AS_DEFAULT;
    d->npull_secrets = 0;
    d->ephemeral_bytes = 0;
    d->lifecycle = SBX_SESSION;
    d->warm_idle_cpu_millis = 0;                       /* warm-idle off */
    d->warm_idle_window_ms = SBX_WARM_IDLE_WINDOW_DEFAULT_MS;
}

static const char *const sbx_lifecycle_names[] = {
    [SBX_ONE_SHOT] = "one-shot",
    [SBX_SESSION] = "session",
    [SBX_LONG_RUNNING] = "long-running",
    [SBX_PERSISTENT] = "persistent",
};

static const char *const sbx_pull_policy_names[] = {
    [SBX_PULL_IF_NOT_PRESENT] = "IfNotPresent",
    [SBX_PULL_ALWAYS] = "Always",
    [SBX_PULL_NEVER] = "Never",
};

const char *sbx_pull_policy_name(enum sbx_pull_policy p) {
    if ((unsigned)p >= sizeof sbx_pull_policy_names / sizeof *sbx_pull_policy_names)
        return "IfNotPresent";
    return sbx_pull_policy_names[p];
}

enum sbx_pull_policy sbx_pull_policy_for(enum sbx_pull_policy p, const char *image) {
    if (p != SBX_PULL_BY_IMAGE) return p;
    if (!image) return SBX_PULL_IF_NOT_PRESENT;
    /* [host[:port]/]path[:tag][@digest]: the tag is after the last ':' of the last path
     * component (a ':' before the last '/' is the registry's port). */
    const char *digest = strchr(image, '@');
    size_t n = digest ? (size_t)(digest - image) : strlen(image);
    const char *last = image;
    for (size_t i = 0; i < n; i++)
        if (image[i] == '/') last = image + i + 1;
    const char *colon = memchr(last, ':', n - (size_t)(last - image));
    if (!colon) return digest ? SBX_PULL_IF_NOT_PRESENT : SBX_PULL_ALWAYS;
    size_t taglen = n - (size_t)(colon + 1 - image);
    return taglen == 6 && memcmp(colon + 1, "latest", 6) == 0 ? SBX_PULL_ALWAYS : SBX_PULL_IF_NOT_PRESENT;
}

int sbx_pull_policy_parse(const char *s, enum sbx_pull_policy *out) {
    if (!s) return -1;
    for (size_t i = 0; i < sizeof sbx_pull_policy_names / sizeof *sbx_pull_policy_names; i++)
        if (strcmp(s, sbx_pull_policy_names[i]) == 0) {
            *out = (enum sbx_pull_policy)i;
            return 0;
        }
    return -1;
}

const char *sbx_port_protocol_name(enum sbx_port_protocol p) {
    if ((unsigned)p >= sizeof sbx_port_protocol_names / sizeof *sbx_port_protocol_names) return "TCP";
    return sbx_port_protocol_names[p];
}

const char *sbx_lifecycle_name(enum sbx_lifecycle l) {
    if ((unsigned)l >= sizeof sbx_lifecycle_names / sizeof *sbx_lifecycle_names) return "unknown";
    return sbx_lifecycle_names[l];
}

int sbx_lifecycle_parse(const char *s, enum sbx_lifecycle *out) {
    if (!s) return -1;
    for (size_t i = 0; i < sizeof sbx_lifecycle_names / sizeof *sbx_lifecycle_names; i++)
        if (strcmp(s, sbx_lifecycle_names[i]) == 0) {
            *out = (enum sbx_lifecycle)i;
            return 0;
        }
    return -1;
}

int sbx_spec_parse(const cJSON *sandbox, const struct sbx_defaults *d,
                   struct sbx_spec *out, char *err, size_t errlen) {
    struct sbx_defaults builtin;
    struct sbx_pctx c = { d, err, errlen };

    if (!d) {
        sbx_defaults_init(&builtin);
        c.d = &builtin;
    }
    if (err && errlen) err[0] = '\0';
    memset(out, 0, sizeof *out);
    if (sbx_parse_spec(&c, sandbox, out) == 0) return 0;
    sbx_spec_free(out);
    return -1;
}

/* A string member of obj's path parent ("spec", "status"), or NULL. */
static const char *rec_str(const cJSON *obj, const char *parent, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, parent), key);
    return cJSON_IsString(v) && *v->valuestring ? v->valuestring : NULL;
}

int sbx_spec_recorded(const cJSON *sandbox, const struct sbx_defaults *d, struct sbx_spec *out, char *err,
                      size_t errlen) {
    struct sbx_defaults builtin;
    const char *user = rec_str(sandbox, "spec", "userID"), *chat = rec_str(sandbox, "spec", "chatID"), *v;
    int64_t ms;

    memset(out, 0, sizeof *out);
    if (!d) {
        sbx_defaults_init(&builtin);
        d = &builtin;
    }
    if (!user || !chat || strlen(user) > SBX_ID_MAX_CHARS * 4 || strlen(chat) > SBX_ID_MAX_CHARS * 4) {
        errfmt(err, errlen, "spec.userID and spec.chatID: required, at most %d characters", SBX_ID_MAX_CHARS);
        return -1;
    }
    out->user_id = strdup(user);
    out->chat_id = strdup(chat);
    v = rec_str(sandbox, "status", "className");
    out->class_name = v ? strdup(v) : NULL;
    if (!out->user_id || !out->chat_id || (v && !out->class_name)) {
        sbx_spec_free(out);
        errfmt_oom(err, errlen);
        return -1;
    }
    v = rec_str(sandbox, "status", "lifecycle");
    if (!v || sbx_lifecycle_parse(v, &out->lifecycle) != 0) out->lifecycle = d->lifecycle;
    out->idle_timeout_ms = d->idle_timeout_ms;
    if ((v = rec_str(sandbox, "status", "idleTimeout")) && qty_parse_duration(v, &ms) == 0 && ms > 0)
        out->idle_timeout_ms = ms;
    else if ((v = rec_str(sandbox, "spec", "idleTimeout")) && qty_parse_duration(v, &ms) == 0 && ms > 0)
        out->idle_timeout_ms = ms;
    if ((v = rec_str(sandbox, "status", "reclaimAfter")) && qty_parse_duration(v, &ms) == 0 && ms > 0)
        out->reclaim_after_ms = ms;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sandbox, "spec"), "paused");
    out->paused = cJSON_IsTrue(p);
    const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sandbox, "spec"),
                                                        "ttlSecondsAfterFinished");
    out->ttl_after_finished_s = cJSON_IsNumber(ttl) && ttl->valuedouble >= 0 && ttl->valuedouble <= 1e9
                                    ? (int64_t)ttl->valuedouble : SBX_TTL_DEFAULT_S;
    out->run_as_user = d->run_as_user;
    return 0;
}

static void sbx_strv_free(struct sbx_strv *v) {
    for (size_t i = 0; i < v->n; i++) free(v->v[i]);
    free(v->v);
}

static void sbx_env_free(struct sbx_env *e, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(e[i].name);
        free(e[i].value);
        free(e[i].secret_name);
        free(e[i].secret_key);
    }
    free(e);
}

void sbx_spec_free(struct sbx_spec *s) {
    if (!s) return;
    free(s->user_id);
    free(s->chat_id);
    free(s->image);
    sbx_strv_free(&s->command);
    sbx_strv_free(&s->args);
    sbx_env_free(s->env, s->nenv);
    free(s->storage_class);
    free(s->mount_path);
    free(s->workspace_from);
    sbx_strv_free(&s->run.command);
    free(s->run.working_dir);
    sbx_env_free(s->run.env, s->run.nenv);
    for (size_t i = 0; i < s->nports; i++) free(s->ports[i].name);
    free(s->ports);
    free(s->class_name);
    sbx_strv_free(&s->class_pull_secrets);
    free(s->runtime_class);
    free(s->priority_class);
    cJSON_Delete(s->node_selector);
    cJSON_Delete(s->tolerations);
    cJSON_Delete(s->affinity);
    cJSON_Delete(s->host_aliases);
    cJSON_Delete(s->host_aliases_resolved);
    memset(s, 0, sizeof *s);
}

int sbx_ws_source_check(const struct sbx_spec *s, const struct sbx_ws_source *src,
                        char *why, size_t whylen) {
    char q1[4 * SBX_QUOTE_MAX + 8], q2[4 * SBX_QUOTE_MAX + 8];
    const char *want = s->storage_class, *have = src->storage_class;

    if (!want || (have && !strcmp(want, have))) return 0;   /* NULL: the clone takes the source's */
    snprintf(why, whylen, "spec.workspace.storageClassName %s differs from the StorageClass %s of "
             "claim %s; a claim can be cloned only within its StorageClass",
             sbx_quote(want, q1, sizeof q1), sbx_quote(have ? have : "", q2, sizeof q2),
             src->claim ? src->claim : "?");
    return -1;
}
