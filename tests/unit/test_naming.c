/* tests/unit/test_naming.c — pod names and label values: plain and hashed forms with
 * hashes checked against independently computed SHA-256 prefixes, unicode, upper case,
 * 200- and 500-char IDs, path-like IDs, cuts that land on '-', and 20000 (user, chat)
 * pairs — adversarial ones included — that must all map to distinct valid DNS labels. */
#include "check.h"
#include "sandbox/model/naming.h"

/* Pod name for (u, c) into a static buffer, "(error)" on failure. */
static const char *pod(const char *u, const char *c) {
    static char out[64];
    if (sbx_name_pod(u, c, out, sizeof(out)) != 0) return "(error)";
    return out;
}

/* A string of n copies of ch (n < 1024), in one of two static buffers. */
static const char *rep(char ch, size_t n) {
    static char buf[2][1024];
    static int which;
    char *b = buf[which ^= 1];
    memset(b, ch, n);
    b[n] = '\0';
    return b;
}

/* Independent check of the Kubernetes label-value grammar. */
static int is_label_value(const char *s) {
    size_t n = strlen(s), i;
    if (n == 0) return 1;
    if (n > 63) return 0;
    for (i = 0; i < n; i++) {
        char ch = s[i];
        int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && ch != '-' && ch != '_' && ch != '.') return 0;
        if ((i == 0 || i == n - 1) && !alnum) return 0;
    }
    return 1;
}

TEST(short_hash_is_sha256_prefix) {
    char h[9];
    sbx_short_hash("abc", 3, h);
    CHECK_STR(h, "ba7816bf");
    sbx_short_hash("", 0, h);
    CHECK_STR(h, "e3b0c442");
    sbx_short_hash("Alice\0c1", 8, h);
    CHECK_STR(h, "431e9c96");
}

TEST(plain_form) {
    CHECK_STR(pod("alice", "c1"), "yao-sb-alice-c1");
    CHECK_STR(pod("42", "7"), "yao-sb-42-7");
    CHECK_STR(pod("u", "c"), "yao-sb-u-c");
}

TEST(plain_form_exactly_63) {
    char want[64];
    /* 7 + 27 + 1 + 28 = 63 */
    snprintf(want, sizeof(want), "yao-sb-%s-%s", rep('a', 27), rep('b', 28));
    CHECK_STR(pod(rep('a', 27), rep('b', 28)), want);
    CHECK_INT(strlen(want), 63);
}

TEST(one_char_too_long_is_hashed) {
    char want[64];
    /* 7 + 27 + 1 + 29 = 64: both sides are cut to 23 */
    snprintf(want, sizeof(want), "yao-sb-%s-%s-15dc9fad", rep('a', 23), rep('b', 23));
    CHECK_STR(pod(rep('a', 27), rep('b', 29)), want);
    CHECK_INT(strlen(want), 63);
}

TEST(uppercase_is_hashed) {
    char upper[64];
    snprintf(upper, sizeof(upper), "%s", pod("Alice", "c1"));
    CHECK_STR(upper, "yao-sb-alice-c1-431e9c96");
    CHECK_STR(pod("alice", "c1"), "yao-sb-alice-c1");
    CHECK_STR(pod("ALICE", "C1"), "yao-sb-alice-c1-64fddf6e");
}

TEST(unicode_ids) {
    /* "用户" / "聊天": nothing survives sanitising → "x" */
    CHECK_STR(pod("\xe7\x94\xa8\xe6\x88\xb7", "\xe8\x81\x8a\xe5\xa4\xa9"), "yao-sb-x-x-c4aab7da");
    /* "josé" / "héllo": a multi-byte char becomes one '-', trimmed at the end */
    CHECK_STR(pod("jos\xc3\xa9", "h\xc3\xa9llo"), "yao-sb-jos-h-llo-9af42c73");
}

TEST(path_like_ids) {
    CHECK_STR(pod("../../etc", "passwd"), "yao-sb-etc-passwd-c1a137e3");
    CHECK_STR(pod("!!!", "..."), "yao-sb-x-x-5f0057a2");
    CHECK(sbx_is_dns_label(pod("/", "\\")));
    CHECK(sbx_is_dns_label(pod(".", "..")));
}

TEST(ids_with_dashes) {
    CHECK_STR(pod("a-b", "c"), "yao-sb-a-b-c-695274f6");
    CHECK_STR(pod("a", "b-c"), "yao-sb-a-b-c-02654a5c");
    /* leading, trailing and doubled dashes are normalised; the hash keeps it apart */
    CHECK_STR(pod("-a--b-", "c"), "yao-sb-a-b-c-08f4f600");
}

TEST(id_200_chars) {
    char want[64];
    /* chat "c" needs 1, so the user keeps 46 - 1 = 45 */
    snprintf(want, sizeof(want), "yao-sb-%s-c-98c7c641", rep('a', 45));
    CHECK_STR(pod(rep('a', 200), "c"), want);
    CHECK_INT(strlen(want), 63);
}

TEST(ids_500_chars) {
    char want[64];
    char u[501], c[501];
    memcpy(u, rep('u', 500), 501);
    memcpy(c, rep('c', 500), 501);
    snprintf(want, sizeof(want), "yao-sb-%s-%s-3bb51895", rep('u', 23), rep('c', 23));
    CHECK_STR(pod(u, c), want);
    /* a plain short user and a long upper-case chat: the chat gets 46 - 2 */
    memcpy(c, rep('C', 500), 501);
    snprintf(want, sizeof(want), "yao-sb-u1-%s-0d4c4af5", rep('c', 44));
    CHECK_STR(pod("u1", c), want);
}

TEST(cut_landing_on_dash_is_trimmed) {
    char u[64], want[64];
    /* the user's first 23 sanitised chars end in '-': it is dropped */
    snprintf(u, sizeof(u), "%s-%s", rep('a', 22), rep('b', 30));
    snprintf(want, sizeof(want), "yao-sb-%s-%s-14af4453", rep('a', 22), rep('c', 23));
    CHECK_STR(pod(u, rep('c', 30)), want);
}

TEST(rejects_empty_null_and_small_out) {
    char out[64];
    CHECK_INT(sbx_name_pod("", "c", out, sizeof(out)), -1);
    CHECK_STR(out, "");
    CHECK_INT(sbx_name_pod("u", "", out, sizeof(out)), -1);
    CHECK_INT(sbx_name_pod(NULL, "c", out, sizeof(out)), -1);
    CHECK_INT(sbx_name_pod("u", NULL, out, sizeof(out)), -1);
    CHECK_INT(sbx_name_pod("u", "c", out, 63), -1);
    CHECK_INT(sbx_name_pod("u", "c", out, 64), 0);
    CHECK_STR(out, "yao-sb-u-c");
}

TEST(dns_label_check) {
    CHECK(sbx_is_dns_label("a"));
    CHECK(sbx_is_dns_label("a-b"));
    CHECK(sbx_is_dns_label("a--b"));
    CHECK(sbx_is_dns_label("0"));
    CHECK(sbx_is_dns_label(rep('a', 63)));
    CHECK(!sbx_is_dns_label(rep('a', 64)));
    CHECK(!sbx_is_dns_label(""));
    CHECK(!sbx_is_dns_label(NULL));
    CHECK(!sbx_is_dns_label("-a"));
    CHECK(!sbx_is_dns_label("a-"));
    CHECK(!sbx_is_dns_label("A"));
    CHECK(!sbx_is_dns_label("a_b"));
    CHECK(!sbx_is_dns_label("a.b"));
    CHECK(!sbx_is_dns_label("a b"));
    CHECK(!sbx_is_dns_label("\xc3\xa9"));
}

/* The one subdomain validator (object names: the controller's and the CLI's alike). */
TEST(dns_subdomain_check) {
    CHECK(sbx_is_dns_subdomain("a"));
    CHECK(sbx_is_dns_subdomain("a.b-c.d"));
    CHECK(sbx_is_dns_subdomain("a--b.0"));
    CHECK(sbx_is_dns_subdomain(rep('a', 253)));
    CHECK(!sbx_is_dns_subdomain(rep('a', 254)));
    CHECK(!sbx_is_dns_subdomain(""));
    CHECK(!sbx_is_dns_subdomain(NULL));
    CHECK(!sbx_is_dns_subdomain("a.-b"));   /* a label may not start with '-' (the CLI's old check took it) */
    CHECK(!sbx_is_dns_subdomain("a-.b"));
    CHECK(!sbx_is_dns_subdomain("a..b"));
    CHECK(!sbx_is_dns_subdomain(".a"));
    CHECK(!sbx_is_dns_subdomain("a."));
    CHECK(!sbx_is_dns_subdomain("-a"));
    CHECK(!sbx_is_dns_subdomain("A"));
    CHECK(!sbx_is_dns_subdomain("a_b"));
    CHECK(!sbx_is_dns_subdomain("../x"));
    CHECK(!sbx_is_dns_subdomain("\xc3\xa9"));
}

/* Growable array of owned strings, for the collision test. */
struct strs { char **v; size_t n, cap; };

static void strs_push(struct strs *a, const char *s) {
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 1024;
        a->v = realloc(a->v, a->cap * sizeof(*a->v));
        if (!a->v) abort();
    }
    a->v[a->n] = strdup(s);
    if (!a->v[a->n]) abort();
    a->n++;
}

static void strs_free(struct strs *a) {
    size_t i;
    for (i = 0; i < a->n; i++) free(a->v[i]);
    free(a->v);
}

static int cmp_str(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Adds the pair: its key (user + '\x01' + chat) and its pod name. */
static void add_pair(struct strs *keys, struct strs *names, const char *u, const char *c,
                     int *bad) {
    char key[2048], name[64];
    snprintf(key, sizeof(key), "%s\x01%s", u, c);
    strs_push(keys, key);
    if (sbx_name_pod(u, c, name, sizeof(name)) != 0 || !sbx_is_dns_label(name) ||
        strncmp(name, "yao-sb-", 7) != 0) {
        (*bad)++;
        fprintf(stderr, "  bad name for (%s, %s): %s\n", u, c, name);
    }
    strs_push(names, name);
}

TEST(twenty_thousand_pairs_distinct) {
    static const char *const seps[] = {"-", "_", ".", "/", " ", "--", "\xc3\xa9", "@", ""};
    static const char *const adversarial[][2] = {
        {"a-b", "c"}, {"a", "b-c"}, {"a-b-c", "x"}, {"a", "b"}, {"A", "b"}, {"a", "B"},
        {"A", "B"}, {"a_b", "c"}, {"a.b", "c"}, {"a b", "c"}, {"a--b", "c"}, {"-a-b-", "c"},
        {"ab", "c"}, {"a", "bc"}, {"x", "x"}, {"X", "x"}, {"\xe7\x94\xa8", "x"},
        {"\xe6\x88\xb7", "x"}, {"!", "x"}, {"?", "x"}, {"yao-sb-a", "b"}, {"yao", "sb-a-b"},
        {"a-b-c", "02654a5c"}, {"a", "b-c-02654a5c"}, {"../../etc", "passwd"},
        {"..", "etc-passwd"}, {"etc", "passwd"},
    };
    struct strs keys = {0}, names = {0};
    char u[700], c[700];
    size_t i, j, k;
    int bad = 0, dup_keys = 0, dup_names = 0;

    for (i = 0; i < sizeof(adversarial) / sizeof(adversarial[0]); i++)
        add_pair(&keys, &names, adversarial[i][0], adversarial[i][1], &bad);
    /* plain grid: 60 x 60 */
    for (i = 0; i < 60; i++)
        for (j = 0; j < 60; j++) {
            snprintf(u, sizeof(u), "user%zu", i);
            snprintf(c, sizeof(c), "chat%zu", j);
            add_pair(&keys, &names, u, c, &bad);
        }
    /* the same IDs split differently across the pair, with every separator */
    for (i = 0; i < 400; i++)
        for (k = 0; k < sizeof(seps) / sizeof(seps[0]); k++) {
            snprintf(u, sizeof(u), "u%zu%sx", i, seps[k]);
            snprintf(c, sizeof(c), "c%zu", i);
            add_pair(&keys, &names, u, c, &bad);
            snprintf(u, sizeof(u), "u%zu", i);
            snprintf(c, sizeof(c), "x%sc%zu", seps[k], i);
            add_pair(&keys, &names, u, c, &bad);
        }
    /* case variants of the same letters */
    for (i = 0; i < 1000; i++) {
        snprintf(u, sizeof(u), "%s%zu", (i & 1) ? "Bob" : "bob", i / 2);
        snprintf(c, sizeof(c), "%s", (i & 2) ? "Chat" : "CHAT");
        add_pair(&keys, &names, u, c, &bad);
    }
    /* long IDs that differ only past the cut (200 and 500 chars) */
    for (i = 0; i < 3000; i++) {
        size_t len = (i & 1) ? 500 : 200;
        memset(u, 'u', len);
        snprintf(u + len, sizeof(u) - len, "%zu", i);
        memset(c, 'c', len);
        c[len] = '\0';
        add_pair(&keys, &names, u, c, &bad);
        snprintf(c + len, sizeof(c) - len, "%zu", i);
        memcpy(u, "u", 2);
        add_pair(&keys, &names, u, c, &bad);
    }
    /* unicode that sanitises to the same thing */
    for (i = 0; i < 1500; i++) {
        snprintf(u, sizeof(u), "\xe7\x94\xa8%zu\xe6\x88\xb7", i);
        add_pair(&keys, &names, u, "\xe8\x81\x8a", &bad);
        snprintf(u, sizeof(u), "\xe6\x88\xb7%zu\xe7\x94\xa8", i);
        add_pair(&keys, &names, u, "\xe8\x81\x8a", &bad);
    }
    /* names that look like our own hashed names */
    for (i = 0; i < 1000; i++) {
        snprintf(u, sizeof(u), "a%zu-b", i);
        snprintf(c, sizeof(c), "c-%08zx", i);
        add_pair(&keys, &names, u, c, &bad);
    }

    CHECK(names.n >= 20000);
    CHECK_INT(bad, 0);
    qsort(keys.v, keys.n, sizeof(*keys.v), cmp_str);
    for (i = 1; i < keys.n; i++)
        if (strcmp(keys.v[i - 1], keys.v[i]) == 0) dup_keys++;
    CHECK_INT(dup_keys, 0); /* the generator itself produced distinct pairs */
    qsort(names.v, names.n, sizeof(*names.v), cmp_str);
    for (i = 1; i < names.n; i++)
        if (strcmp(names.v[i - 1], names.v[i]) == 0) {
            dup_names++;
            fprintf(stderr, "  duplicate name %s\n", names.v[i]);
        }
    CHECK_INT(dup_names, 0);
    strs_free(&keys);
    strs_free(&names);
}

TEST(label_value_unchanged_when_valid) {
    char out[64];
    sbx_label_value("alice", out, sizeof(out));
    CHECK_STR(out, "alice");
    sbx_label_value("", out, sizeof(out));
    CHECK_STR(out, "");
    sbx_label_value("Alice.B_c-1", out, sizeof(out));
    CHECK_STR(out, "Alice.B_c-1");
    sbx_label_value(rep('a', 63), out, sizeof(out));
    CHECK_STR(out, rep('a', 63));
    sbx_label_value("long-running", out, sizeof(out));
    CHECK_STR(out, "long-running");
}

TEST(label_value_sanitised_and_hashed) {
    char out[64], want[64];
    sbx_label_value("\xe7\x94\xa8\xe6\x88\xb7", out, sizeof(out));
    CHECK_STR(out, "0d0e1a86");
    sbx_label_value("user@example.com", out, sizeof(out));
    CHECK_STR(out, "user-example.com-b4c9a289");
    sbx_label_value("-abc-", out, sizeof(out));
    CHECK_STR(out, "abc-4d40a3ac");
    sbx_label_value("_a", out, sizeof(out));
    CHECK_STR(out, "a-34fb7160");
    sbx_label_value("h\xc3\xa9llo w\xc3\xb6rld", out, sizeof(out));
    CHECK_STR(out, "h-llo-w-rld-a1003f7d");
    snprintf(want, sizeof(want), "%s-28165978", rep('a', 54));
    sbx_label_value(rep('a', 100), out, sizeof(out));
    CHECK_STR(out, want);
    CHECK_INT(strlen(out), 63);
    snprintf(want, sizeof(want), "%s-ffe054fe", rep('a', 54));
    sbx_label_value(rep('a', 64), out, sizeof(out));
    CHECK_STR(out, want);
    sbx_label_value(NULL, out, sizeof(out));
    CHECK_STR(out, "");
}

TEST(label_values_valid_and_distinct) {
    static const char *const in[] = {
        "a/b", "a b", "a\tb", "a:b", "a@b", "A@b", "..", "-", "_", ".x.", "x" "\xff",
        "\xff" "x", "../../etc/passwd", "a--", "--a", "user@example.com ",
    };
    char out[sizeof(in) / sizeof(in[0])][64];
    size_t i, j;
    int invalid = 0, same = 0;
    for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        sbx_label_value(in[i], out[i], sizeof(out[i]));
        if (!is_label_value(out[i]) || out[i][0] == '\0') invalid++;
    }
    for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        for (j = i + 1; j < sizeof(in) / sizeof(in[0]); j++)
            if (strcmp(out[i], out[j]) == 0) same++;
    CHECK_INT(invalid, 0);
    CHECK_INT(same, 0);
}
