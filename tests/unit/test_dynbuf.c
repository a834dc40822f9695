/* tests/unit/test_dynbuf.c — the bounded growable buffer: appends up to and past the
 * ceiling, printf, consume, reset, take (ownership hand-off) and reuse after free. */
#include "check.h"
#include "base/dynbuf.h"

#include <stdint.h>

TEST(init_allocates_nothing) {
    struct dynbuf b;
    dynbuf_init(&b, 100);
    CHECK(b.data == NULL);
    CHECK_INT(b.len, 0);
    CHECK_INT(b.cap, 0);
    CHECK_INT(b.max, 100);
    dynbuf_free(&b);
}

TEST(append_nul_terminates) {
    struct dynbuf b;
    dynbuf_init(&b, 100);
    CHECK_INT(dynbuf_append(&b, "hello", 5), 0);
    CHECK_INT(b.len, 5);
    CHECK_STR(b.data, "hello");
    CHECK_INT(dynbuf_append(&b, " world", 6), 0);
    CHECK_STR(b.data, "hello world");
    CHECK_INT(b.len, 11);
    CHECK_INT(dynbuf_append(&b, NULL, 0), 0);
    CHECK_INT(b.len, 11);
    /* embedded NUL bytes are data too */
    CHECK_INT(dynbuf_append(&b, "a\0b", 3), 0);
    CHECK_INT(b.len, 14);
    CHECK(memcmp(b.data + 11, "a\0b", 4) == 0);
    dynbuf_free(&b);
}

TEST(append_respects_max_exactly) {
    struct dynbuf b;
    dynbuf_init(&b, 8);
    CHECK_INT(dynbuf_append(&b, "12345", 5), 0);
    CHECK_INT(dynbuf_append(&b, "6789", 4), -1); /* 9 > 8 */
    CHECK_STR(b.data, "12345");                  /* unchanged */
    CHECK_INT(b.len, 5);
    CHECK_INT(dynbuf_append(&b, "678", 3), 0);   /* exactly 8 */
    CHECK_STR(b.data, "12345678");
    CHECK_INT(dynbuf_append(&b, "9", 1), -1);
    CHECK_INT(b.len, 8);
    CHECK(b.cap <= 9);
    dynbuf_free(&b);
}

TEST(max_zero_holds_nothing) {
    struct dynbuf b;
    dynbuf_init(&b, 0);
    CHECK_INT(dynbuf_append(&b, "", 0), 0);
    CHECK_INT(dynbuf_append(&b, "a", 1), -1);
    CHECK_INT(b.len, 0);
    CHECK_INT(dynbuf_printf(&b, "%s", ""), 0);
    CHECK_INT(dynbuf_printf(&b, "%d", 1), -1);
    dynbuf_free(&b);
}

TEST(huge_max_does_not_wrap) {
    struct dynbuf b;
    dynbuf_init(&b, SIZE_MAX);
    CHECK(b.max < SIZE_MAX);
    CHECK_INT(dynbuf_append_str(&b, "abc"), 0);
    CHECK_STR(b.data, "abc");
    dynbuf_free(&b);
}

TEST(growth_many_small_appends) {
    struct dynbuf b;
    size_t i;
    int bad = 0;
    dynbuf_init(&b, 10000);
    for (i = 0; i < 10000; i++)
        if (dynbuf_append(&b, &"0123456789"[i % 10], 1) != 0) bad++;
    CHECK_INT(bad, 0);
    CHECK_INT(b.len, 10000);
    CHECK_INT(b.cap, 10001); /* growth is clamped to max + 1 */
    for (i = 0; i < 10000; i++)
        if (b.data[i] != (char)('0' + i % 10)) bad++;
    CHECK_INT(bad, 0);
    CHECK_INT(b.data[10000], 0);
    CHECK_INT(dynbuf_append(&b, "x", 1), -1);
    dynbuf_free(&b);
}

TEST(append_str) {
    struct dynbuf b;
    dynbuf_init(&b, 10);
    CHECK_INT(dynbuf_append_str(&b, "abc"), 0);
    CHECK_INT(dynbuf_append_str(&b, ""), 0);
    CHECK_INT(dynbuf_append_str(&b, NULL), -1);
    CHECK_INT(dynbuf_append_str(&b, "defghijk"), -1);
    CHECK_STR(b.data, "abc");
    CHECK_INT(dynbuf_append_str(&b, "defghij"), 0);
    CHECK_STR(b.data, "abcdefghij");
    dynbuf_free(&b);
}

TEST(printf_formats_and_bounds) {
    struct dynbuf b;
    dynbuf_init(&b, 20);
    CHECK_INT(dynbuf_printf(&b, "%s=%d", "x", 42), 0);
    CHECK_STR(b.data, "x=42");
    CHECK_INT(dynbuf_printf(&b, ",%05.1f", 3.5), 0);
    CHECK_STR(b.data, "x=42,003.5");
    CHECK_INT(dynbuf_printf(&b, "%s", "0123456789A"), -1); /* 10 + 11 > 20 */
    CHECK_STR(b.data, "x=42,003.5");
    CHECK_INT(b.len, 10);
    CHECK_INT(dynbuf_printf(&b, "%s", "0123456789"), 0);   /* exactly 20 */
    CHECK_INT(b.len, 20);
    CHECK_STR(b.data, "x=42,003.50123456789");
    dynbuf_free(&b);
}

TEST(printf_grows_from_empty) {
    struct dynbuf b;
    dynbuf_init(&b, 4096);
    CHECK_INT(dynbuf_printf(&b, "%0300d", 7), 0);
    CHECK_INT(b.len, 300);
    CHECK_INT(b.data[0], '0');
    CHECK_INT(b.data[299], '7');
    CHECK_INT(b.data[300], 0);
    dynbuf_free(&b);
}

TEST(consume) {
    struct dynbuf b;
    dynbuf_init(&b, 100);
    dynbuf_append_str(&b, "line1\nline2\n");
    dynbuf_consume(&b, 6);
    CHECK_STR(b.data, "line2\n");
    CHECK_INT(b.len, 6);
    dynbuf_consume(&b, 0);
    CHECK_STR(b.data, "line2\n");
    dynbuf_consume(&b, 6);
    CHECK_INT(b.len, 0);
    CHECK_STR(b.data, "");
    dynbuf_append_str(&b, "ab");
    dynbuf_consume(&b, 99); /* clamped */
    CHECK_INT(b.len, 0);
    CHECK_STR(b.data, "");
    dynbuf_free(&b);
}

TEST(reset_keeps_memory) {
    struct dynbuf b;
    char *before;
    size_t cap;
    dynbuf_init(&b, 100);
    dynbuf_append_str(&b, "something");
    before = b.data;
    cap = b.cap;
    dynbuf_reset(&b);
    CHECK_INT(b.len, 0);
    CHECK(b.data == before);
    CHECK_INT(b.cap, cap);
    CHECK_STR(b.data, "");
    dynbuf_free(&b);
}

TEST(take_hands_over) {
    struct dynbuf b;
    char *s;
    dynbuf_init(&b, 100);
    s = dynbuf_take(&b);            /* empty, never allocated */
    CHECK(s != NULL);
    CHECK_STR(s, "");
    free(s);
    dynbuf_append_str(&b, "payload");
    s = dynbuf_take(&b);
    CHECK_STR(s, "payload");
    CHECK(b.data == NULL);
    CHECK_INT(b.len, 0);
    CHECK_INT(b.cap, 0);
    CHECK_INT(b.max, 100);
    /* reusable: starts over, and does not touch the taken bytes */
    CHECK_INT(dynbuf_append_str(&b, "next"), 0);
    CHECK_STR(b.data, "next");
    CHECK_STR(s, "payload");
    free(s);
    dynbuf_free(&b);
}

TEST(free_then_reuse) {
    struct dynbuf b;
    dynbuf_init(&b, 5);
    dynbuf_append_str(&b, "abc");
    dynbuf_free(&b);
    CHECK(b.data == NULL);
    CHECK_INT(b.len, 0);
    dynbuf_free(&b); /* idempotent */
    CHECK_INT(dynbuf_append_str(&b, "abcde"), 0);
    CHECK_INT(dynbuf_append_str(&b, "f"), -1);
    CHECK_STR(b.data, "abcde");
    dynbuf_free(&b);
}
