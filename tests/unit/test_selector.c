/* tests/unit/test_selector.c — label selectors (sandbox/model/selector.c): validation messages
 * and matching as the API server means it (matchLabels, In, NotIn, Exists, DoesNotExist;
 * an empty selector selects everything, NotIn and DoesNotExist select a missing label). */
#include "check.h"

#include "sandbox/model/selector.h"

static cJSON *json(const char *text) {
    cJSON *o = cJSON_Parse(text);
    CHECK(o != NULL);
    return o;
}

static int matches(const char *sel, const char *labels) {
    cJSON *s = json(sel), *l = labels ? json(labels) : NULL;
    char err[256];
    int v = sbx_selector_validate(s, "sel", err, sizeof err);
    if (v) fprintf(stderr, "  invalid: %s\n", err);
    int m = v ? -1 : sbx_selector_matches(s, l);
    cJSON_Delete(s);
    cJSON_Delete(l);
    return m;
}

static void invalid(const char *sel, const char *want) {
    cJSON *s = json(sel);
    char err[256] = "";
    CHECK_INT(sbx_selector_validate(s, "spec.allowedNamespaces.selector", err, sizeof err), -1);
    CHECK_STR(err, want);
    cJSON_Delete(s);
}

TEST(match_labels) {
    CHECK_INT(matches("{\"matchLabels\":{\"team\":\"a\"}}", "{\"team\":\"a\",\"x\":\"y\"}"), 1);
    CHECK_INT(matches("{\"matchLabels\":{\"team\":\"a\"}}", "{\"team\":\"b\"}"), 0);
    CHECK_INT(matches("{\"matchLabels\":{\"team\":\"a\"}}", "{}"), 0);
    CHECK_INT(matches("{\"matchLabels\":{\"team\":\"a\"}}", NULL), 0);
    CHECK_INT(matches("{\"matchLabels\":{\"team\":\"a\",\"tier\":\"x\"}}", "{\"team\":\"a\"}"), 0);
}

TEST(empty_selects_everything) {
    CHECK_INT(matches("{}", NULL), 1);
    CHECK_INT(matches("{\"matchLabels\":{},\"matchExpressions\":[]}", "{\"a\":\"b\"}"), 1);
}

TEST(expressions) {
    const char *in = "{\"matchExpressions\":[{\"key\":\"team\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}]}";
    CHECK_INT(matches(in, "{\"team\":\"b\"}"), 1);
    CHECK_INT(matches(in, "{\"team\":\"c\"}"), 0);
    CHECK_INT(matches(in, "{}"), 0);
    const char *notin = "{\"matchExpressions\":[{\"key\":\"team\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}";
    CHECK_INT(matches(notin, "{\"team\":\"b\"}"), 1);
    CHECK_INT(matches(notin, "{\"team\":\"a\"}"), 0);
    CHECK_INT(matches(notin, "{}"), 1);   /* a missing label is not in the set */
    const char *ex = "{\"matchExpressions\":[{\"key\":\"yao\",\"operator\":\"Exists\"}]}";
    CHECK_INT(matches(ex, "{\"yao\":\"\"}"), 1);
    CHECK_INT(matches(ex, "{\"other\":\"1\"}"), 0);
    const char *dne = "{\"matchExpressions\":[{\"key\":\"yao\",\"operator\":\"DoesNotExist\",\"values\":[]}]}";
    CHECK_INT(matches(dne, "{\"other\":\"1\"}"), 1);
    CHECK_INT(matches(dne, "{\"yao\":\"1\"}"), 0);
    /* All terms must hold. */
    const char *both = "{\"matchLabels\":{\"a\":\"1\"},\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Exists\"}]}";
    CHECK_INT(matches(both, "{\"a\":\"1\",\"b\":\"2\"}"), 1);
    CHECK_INT(matches(both, "{\"a\":\"1\"}"), 0);
    CHECK_INT(matches(both, "{\"b\":\"2\"}"), 0);
}

TEST(validation_names_the_field) {
    invalid("[]", "spec.allowedNamespaces.selector: must be an object");
    invalid("{\"matchLabel\":{}}", "spec.allowedNamespaces.selector.matchLabel: unknown field (matchLabels, "
                                   "matchExpressions)");
    invalid("{\"matchLabels\":{\"a\":1}}", "spec.allowedNamespaces.selector.matchLabels.a: must be a string");
    invalid("{\"matchExpressions\":{}}", "spec.allowedNamespaces.selector.matchExpressions: must be an array");
    invalid("{\"matchExpressions\":[{\"operator\":\"Exists\"}]}",
            "spec.allowedNamespaces.selector.matchExpressions[0].key: required");
    invalid("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Equals\",\"values\":[\"x\"]}]}",
            "spec.allowedNamespaces.selector.matchExpressions[0].operator: must be In, NotIn, Exists or DoesNotExist");
    invalid("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"},{\"key\":\"b\",\"operator\":\"In\"}]}",
            "spec.allowedNamespaces.selector.matchExpressions[1].values: required for operator In");
    invalid("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}",
            "spec.allowedNamespaces.selector.matchExpressions[0].values: must be empty for operator Exists");
    invalid("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[1]}]}",
            "spec.allowedNamespaces.selector.matchExpressions[0].values: must be an array of strings");
}
