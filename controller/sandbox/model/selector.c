/* sandbox/model/selector.c — label selectors: validation and matching (see selector.h). */
#include "sandbox/model/selector.h"

#include <string.h>

#include "base/errfmt.h"

#define SELECTOR_ITEMS_MAX 64

static const cJSON *member(const cJSON *o, const char *k) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsNull(v) ? NULL : v;
}

static int is_set_op(const char *op) { return !strcmp(op, "In") || !strcmp(op, "NotIn"); }

int sbx_selector_validate(const cJSON *sel, const char *field, char *err, size_t errlen) {
    const cJSON *kv, *e;
    if (!cJSON_IsObject(sel)) return errfmt(err, errlen, "%s: must be an object", field);
    cJSON_ArrayForEach(kv, sel) {
        if (strcmp(kv->string, "matchLabels") != 0 && strcmp(kv->string, "matchExpressions") != 0)
            return errfmt(err, errlen, "%s.%.64s: unknown field (matchLabels, matchExpressions)", field, kv->string);
    }
    const cJSON *ml = member(sel, "matchLabels"), *me = member(sel, "matchExpressions");
    if (ml && !cJSON_IsObject(ml)) return errfmt(err, errlen, "%s.matchLabels: must be an object", field);
    if (me && !cJSON_IsArray(me)) return errfmt(err, errlen, "%s.matchExpressions: must be an array", field);
    if ((ml && cJSON_GetArraySize(ml) > SELECTOR_ITEMS_MAX) || (me && cJSON_GetArraySize(me) > SELECTOR_ITEMS_MAX))
        return errfmt(err, errlen, "%s: at most %d labels and %d expressions", field, SELECTOR_ITEMS_MAX,
                      SELECTOR_ITEMS_MAX);
    cJSON_ArrayForEach(kv, ml) {
        if (!cJSON_IsString(kv)) return errfmt(err, errlen, "%s.matchLabels.%.64s: must be a string", field, kv->string);
    }
    int i = 0;
    cJSON_ArrayForEach(e, me) {
        const cJSON *key = member(e, "key"), *op = member(e, "operator"), *vals = member(e, "values"), *v;
        if (!cJSON_IsObject(e)) return errfmt(err, errlen, "%s.matchExpressions[%d]: must be an object", field, i);
        if (!cJSON_IsString(key) || !*key->valuestring)
            return errfmt(err, errlen, "%s.matchExpressions[%d].key: required", field, i);
        if (!cJSON_IsString(op) || (!is_set_op(op->valuestring) && strcmp(op->valuestring, "Exists") != 0 &&
                                    strcmp(op->valuestring, "DoesNotExist") != 0))
            return errfmt(err, errlen, "%s.matchExpressions[%d].operator: must be In, NotIn, Exists or DoesNotExist",
                          field, i);
        if (vals && !cJSON_IsArray(vals))
            return errfmt(err, errlen, "%s.matchExpressions[%d].values: must be an array of strings", field, i);
        int n = vals ? cJSON_GetArraySize(vals) : 0;
        if (is_set_op(op->valuestring) && n == 0)
            return errfmt(err, errlen, "%s.matchExpressions[%d].values: required for operator %s", field, i,
                          op->valuestring);
        if (!is_set_op(op->valuestring) && n != 0)
            return errfmt(err, errlen, "%s.matchExpressions[%d].values: must be empty for operator %s", field, i,
                          op->valuestring);
        cJSON_ArrayForEach(v, vals) {
            if (!cJSON_IsString(v))
                return errfmt(err, errlen, "%s.matchExpressions[%d].values: must be an array of strings", field, i);
        }
        i++;
    }
    return 0;
}

/* The value of label key, or NULL. */
static const char *label(const cJSON *labels, const char *key) {
    const cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int in_values(const cJSON *vals, const char *s) {
    const cJSON *v;
    cJSON_ArrayForEach(v, vals) {
        if (cJSON_IsString(v) && !strcmp(v->valuestring, s)) return 1;
    }
    return 0;
}

int sbx_selector_matches(const cJSON *sel, const cJSON *labels) {
    const cJSON *kv, *e;
    cJSON_ArrayForEach(kv, member(sel, "matchLabels")) {
        const char *have = label(labels, kv->string);
        if (!cJSON_IsString(kv) || !have || strcmp(have, kv->valuestring) != 0) return 0;
    }
    cJSON_ArrayForEach(e, member(sel, "matchExpressions")) {
        const cJSON *key = member(e, "key"), *op = member(e, "operator");
        if (!cJSON_IsString(key) || !cJSON_IsString(op)) return 0;
        const char *have = label(labels, key->valuestring);
        const char *o = op->valuestring;
        int ok = !strcmp(o, "In")             ? have && in_values(member(e, "values"), have)
                 : !strcmp(o, "NotIn")        ? !have || !in_values(member(e, "values"), have)
                 : !strcmp(o, "Exists")       ? have != NULL
                 : !strcmp(o, "DoesNotExist") ? have == NULL
                                              : 0;
        if (!ok) return 0;
    }
    return 1;
}
