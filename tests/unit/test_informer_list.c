/* tests/unit/test_informer_list.c — informer_decode_list (runtime/informer.c): a List
 * response's items handed over one by one, in order, each a whole object; the list's
 * metadata (resourceVersion, continue) kept whatever the member order; whitespace, escapes
 * and brackets inside strings; an empty and a null items; malformed text refused (with
 * the items before the fault already handed over); and a handler that gives up. */
#include "check.h"

#include "runtime/informer.h"

struct got {
    int n;
    char names[16][64];
    int fail_at;   /* give up at this item (1-based), 0 never */
};

static int take(void *ud, cJSON *item) {
    struct got *g = ud;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(item, "metadata");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "name"));
    g->n++;
    if (g->n <= 16) snprintf(g->names[g->n - 1], sizeof g->names[0], "%s", name ? name : "?");
    cJSON_Delete(item);
    return g->fail_at && g->n >= g->fail_at ? -1 : 0;
}

static int decode(const char *text, struct got *g, cJSON **md) {
    return informer_decode_list(text, strlen(text), take, g, md);
}

TEST(items_in_order_and_metadata) {
    const char *t = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"42\","
                    "\"continue\":\"tok\"},\"items\":[{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":[1,2,{}]}},"
                    "{\"metadata\":{\"name\":\"b\"}},{\"metadata\":{\"name\":\"c\"}}]}";
    struct got g = {0};
    cJSON *md = NULL;
    CHECK_INT(decode(t, &g, &md), 0);
    CHECK_INT(g.n, 3);
    CHECK_STR(g.names[0], "a");
    CHECK_STR(g.names[1], "b");
    CHECK_STR(g.names[2], "c");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "resourceVersion")), "42");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "continue")), "tok");
    cJSON_Delete(md);
}

TEST(metadata_after_items_whitespace_and_tricky_strings) {
    const char *t = " \n{ \"items\" : [ {\"metadata\":{\"name\":\"x]}\\\",{\"}} ,\r\n"
                    "\t{\"metadata\":{\"name\":\"y\"},\"note\":\"[[[\"} ] ,\n"
                    " \"metadata\" : { \"resourceVersion\" : \"7\" } , \"ite\\u006ds2\": [1] }\n";
    struct got g = {0};
    cJSON *md = NULL;
    CHECK_INT(decode(t, &g, &md), 0);
    CHECK_INT(g.n, 2);
    CHECK_STR(g.names[0], "x]}\",{");
    CHECK_STR(g.names[1], "y");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "resourceVersion")), "7");
    cJSON_Delete(md);
}

TEST(empty_and_null_items) {
    struct got g = {0};
    cJSON *md = NULL;
    CHECK_INT(decode("{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}", &g, &md), 0);
    CHECK_INT(g.n, 0);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "resourceVersion")), "1");
    cJSON_Delete(md);
    md = NULL;
    CHECK_INT(decode("{\"items\":null}", &g, &md), 0);
    CHECK_INT(g.n, 0);
    CHECK(cJSON_IsObject(md));   /* no metadata: an empty object */
    cJSON_Delete(md);
}

TEST(malformed_refused) {
    static const char *const bad[] = {
        "", "[]", "{", "{\"items\":[{\"metadata\":{}}", "{\"items\":[{},]}", "{\"items\":[{} {}]}",
        "{\"items\":{}}", "{\"items\":3}", "{\"metadata\":{}}", "{\"items\":[] \"metadata\":{}}",
        "{items:[]}", "{\"items\":[]", "{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"a\":tru}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct got g = {0};
        cJSON *md = (cJSON *)&g;   /* must be reset to NULL */
        int rc = decode(bad[i], &g, &md);
        if (rc != -1) fprintf(stderr, "  accepted: %s\n", bad[i]);
        CHECK_INT(rc, -1);
        CHECK(md == NULL);
    }
    /* the items before a fault were handed over (and are the handler's) */
    struct got g = {0};
    cJSON *md = NULL;
    CHECK_INT(decode("{\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}},{\"metadata\":", &g, &md), -1);
    CHECK_INT(g.n, 2);
    CHECK(md == NULL);
}

TEST(handler_gives_up) {
    struct got g = {.fail_at = 2};
    cJSON *md = NULL;
    CHECK_INT(decode("{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}},"
                     "{\"metadata\":{\"name\":\"c\"}}]}", &g, &md), -1);
    CHECK_INT(g.n, 2);
    CHECK(md == NULL);
}

TEST(not_nul_terminated) {
    /* the response body is a counted buffer: nothing past len is read */
    const char full[] = "{\"items\":[{\"metadata\":{\"name\":\"a\"}}]}GARBAGE";
    struct got g = {0};
    cJSON *md = NULL;
    CHECK_INT(informer_decode_list(full, strlen(full) - strlen("GARBAGE"), take, &g, &md), 0);
    CHECK_INT(g.n, 1);
    cJSON_Delete(md);
    g.n = 0;
    CHECK_INT(informer_decode_list(full, 20, take, &g, &md), -1);
    CHECK_INT(g.n, 0);
}
