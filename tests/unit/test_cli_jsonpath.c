/* tests/unit/test_cli_jsonpath.c — kubectl JSONPath templates (cli/jsonpath.c): fields,
 * quoted and escaped names, indexes, negative indexes and slices, wildcards, recursive
 * descent, filters, nested ranges, quoted text, missing keys printing nothing, values
 * printed as kubectl does, and a clear error with its offset on every malformed template. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cli/jsonpath.h"

static const char *DOC =
    "{\"kind\":\"List\",\"items\":["
    "{\"metadata\":{\"name\":\"a\",\"annotations\":{\"sandbox.yaoapps.com/last-used-at\":\"T1\"}},"
    " \"spec\":{\"userID\":\"u1\",\"paused\":false,\"env\":[{\"name\":\"X\",\"value\":\"1\"},{\"name\":\"WHO\",\"value\":\"w\"}]},"
    " \"status\":{\"phase\":\"Running\",\"run\":{\"exitCode\":0},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
    "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"userID\":\"u2\",\"paused\":true},"
    " \"status\":{\"phase\":\"Stopped\",\"run\":{\"exitCode\":7}}},"
    "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"userID\":\"u1\"},\"status\":{\"phase\":\"Running\",\"n\":1.5}}]}";

/* The template rendered against DOC; "ERR: <message>" when it does not compile. */
static char *render(const char *tmpl) {
    static char out[4096];
    char err[256];
    struct jsonpath *jp;
    if (jsonpath_compile(tmpl, &jp, err, sizeof(err)) < 0) {
        snprintf(out, sizeof(out), "ERR: %s", err);
        return out;
    }
    cJSON *doc = cJSON_Parse(DOC);
    struct dynbuf b;
    dynbuf_init(&b, 1 << 20);
    CHECK_INT(jsonpath_render(jp, doc, &b), 0);
    snprintf(out, sizeof(out), "%.*s", (int)b.len, b.data ? b.data : "");
    dynbuf_free(&b);
    cJSON_Delete(doc);
    jsonpath_free(jp);
    return out;
}

TEST(fields_indexes_and_wildcards) {
    CHECK_STR(render("{.kind}"), "List");
    CHECK_STR(render("{$.kind}"), "List");
    CHECK_STR(render("{kind}"), "List");
    CHECK_STR(render("{.items[0].metadata.name}"), "a");
    CHECK_STR(render("{.items[-1].metadata.name}"), "c");
    CHECK_STR(render("{.items[*].metadata.name}"), "a b c");
    CHECK_STR(render("{.items[1:].metadata.name}"), "b c");
    CHECK_STR(render("{.items[:2].metadata.name}"), "a b");
    CHECK_STR(render("{.items[0:-1].spec.userID}"), "u1 u2");
    CHECK_STR(render("{.items[0]['metadata']['name']}"), "a");
    CHECK_STR(render("{.items[0].metadata.annotations.sandbox\\.yaoapps\\.com/last-used-at}"), "T1");
    CHECK_STR(render("{.items[0].metadata.annotations['sandbox.yaoapps.com/last-used-at']}"), "T1");
    CHECK_STR(render("{.items[2].status.*}"), "Running 1.5");
    CHECK_STR(render("{..exitCode}"), "0 7");
    CHECK_STR(render("{.items[0]..name}"), "a X WHO");
}

TEST(values_print_as_kubectl_does) {
    CHECK_STR(render("{.items[0].status.run.exitCode}"), "0");
    CHECK_STR(render("{.items[1].spec.paused}"), "true");
    CHECK_STR(render("{.items[2].status.n}"), "1.5");
    CHECK_STR(render("{.items[0].status.run}"), "{\"exitCode\":0}");
    CHECK_STR(render("{.items[0].status.conditions[*].type}"), "Ready");
}

TEST(missing_keys_print_nothing) {
    CHECK_STR(render("{.nope}"), "");
    CHECK_STR(render("x{.items[5].metadata.name}y"), "xy");
    CHECK_STR(render("{.items[*].status.run.exitCode}"), "0 7");
    CHECK_STR(render("{.kind.deeper}"), "");
    CHECK_STR(render("{.items.name}"), "");
}

TEST(filters) {
    CHECK_STR(render("{.items[?(@.status.phase==\"Running\")].metadata.name}"), "a c");
    CHECK_STR(render("{.items[?(@.status.phase != 'Running')].metadata.name}"), "b");
    CHECK_STR(render("{.items[?(@.status.run.exitCode>0)].metadata.name}"), "b");
    CHECK_STR(render("{.items[?(@.status.run.exitCode<=0)].metadata.name}"), "a");
    CHECK_STR(render("{.items[?(@.spec.paused==true)].metadata.name}"), "b");
    CHECK_STR(render("{.items[?(@.status.run)].metadata.name}"), "a b");
    CHECK_STR(render("{.items[0].spec.env[?(@.name==\"WHO\")].value}"), "w");
}

TEST(ranges_and_text) {
    CHECK_STR(render("{range .items[*]}{.metadata.name}={.status.phase}{\"\\n\"}{end}"), "a=Running\nb=Stopped\nc=Running\n");
    CHECK_STR(render("names: {range .items[*]}[{.metadata.name}]{end}."), "names: [a][b][c].");
    CHECK_STR(render("{range .items[*]}{.metadata.name}:{range .spec.env[*]}{.name},{end};{end}"), "a:X,WHO,;b:;c:;");
    CHECK_STR(render("{range .items[0:1]}{$.kind}/{.metadata.name}{end}"), "List/a");
    CHECK_STR(render("{'tab\\there'}"), "tab\there");
    CHECK_STR(render("plain text"), "plain text");
    CHECK_STR(render("{range .nothing[*]}x{end}"), "");
}

TEST(malformed_templates_are_refused_with_where) {
    static const struct { const char *tmpl, *err; } cases[] = {
        {"{.items", "jsonpath: unclosed { at offset 0"},
        {"ab{}", "jsonpath: empty { } at offset 2"},
        {"x}", "jsonpath: unexpected } at offset 1"},
        {"{.items[}", "jsonpath: expected an index, a slice, *, a quoted name or a filter in [ ] at offset 8"},
        {"{.items[0}", "jsonpath: expected ] at offset 9"},
        {"{range .items[*]}{.a}", "jsonpath: {range} without {end} at offset 21"},
        {"{end}", "jsonpath: {end} without {range} at offset 0"},
        {"{.a b}", "jsonpath: unexpected character in a path at offset 3"},
        {"{.items[?(@.a==)]}", "jsonpath: expected a string, number, true or false at offset 15"},
        {"{.items[?(.a)]}", "jsonpath: a filter starts with @ at offset 10"},
        {"{.items[?(@.a=='x']}", "jsonpath: expected ) to close the filter at offset 18"},
        {"{\"abc}", "jsonpath: unclosed { at offset 0"},
        {"{.a{.b}}", "jsonpath: unexpected { inside { } at offset 3"},
        {"{..}", "jsonpath: expected a name after .. at offset 1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char err[256] = "";
        struct jsonpath *jp = NULL;
        CHECK_INT(jsonpath_compile(cases[i].tmpl, &jp, err, sizeof(err)), -1);
        CHECK(jp == NULL);
        if (strcmp(err, cases[i].err)) fprintf(stderr, "  template %s: got \"%s\"\n", cases[i].tmpl, err);
        CHECK_STR(err, cases[i].err);
    }
}
