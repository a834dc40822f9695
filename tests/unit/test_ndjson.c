/* tests/unit/test_ndjson.c — the NDJSON line splitter: the same stream cut at every
 * chunk boundary (one and two cuts), at random boundaries (fixed seed) and byte by byte
 * must give identical lines; CRLF, empty lines, the max_line ceiling, the unfinished
 * tail, and the callback's stop value. */
#include "check.h"
#include "kube/ndjson.h"

/* Collects lines as "line\x1e" records and checks each callback's contract. */
struct sink {
    struct dynbuf out;
    int calls;
    int bad;        /* contract violations: NUL/len mismatch, empty, '\n', trailing '\r' */
    int stop_at;    /* return stop_value on this call (1-based); 0 = never */
    int stop_value;
};

static void sink_init(struct sink *k) {
    memset(k, 0, sizeof(*k));
    dynbuf_init(&k->out, 1 << 20);
}

static int sink_line(void *ud, char *line, size_t len) {
    struct sink *k = ud;
    k->calls++;
    if (len == 0 || line[len] != '\0' || memchr(line, '\n', len) || line[len - 1] == '\r')
        k->bad++;
    if (dynbuf_append(&k->out, line, len) != 0 || dynbuf_append(&k->out, "\x1e", 1) != 0)
        k->bad++;
    if (k->stop_at && k->calls == k->stop_at) return k->stop_value;
    return 0;
}

/* Feed a NUL-terminated literal (without its NUL). */
static int feed_str(struct ndjson *s, const char *str, struct sink *k) {
    return ndjson_feed(s, str, strlen(str), sink_line, k);
}

static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
    "\n"
    "{\"type\":\"MODIFIED\",\"object\":{}}\r\n"
    "\r\n"
    "\n\n"
    "{\"type\":\"BOOKMARK\",\"u\":\"\xe7\x94\xa8\xe6\x88\xb7\"}\n"
    "x\ry\n"
    "{\"type\":\"DELETED\"}\n"
    "tail-without-newline";

static const char EXPECTED[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\x1e"
    "{\"type\":\"MODIFIED\",\"object\":{}}\x1e"
    "{\"type\":\"BOOKMARK\",\"u\":\"\xe7\x94\xa8\xe6\x88\xb7\"}\x1e"
    "x\ry\x1e"
    "{\"type\":\"DELETED\"}\x1e";

#define TAIL_LEN (sizeof("tail-without-newline") - 1)

/* Feed STREAM cut at the given ascending positions; 0 if the lines and the pending tail
 * are exactly as expected. */
static int run_cuts(const size_t *cuts, size_t ncuts) {
    struct ndjson s;
    struct sink k;
    size_t len = sizeof(STREAM) - 1, prev = 0, i;
    int rc = 0, fail = 0;

    ndjson_init(&s, 256);
    sink_init(&k);
    for (i = 0; i <= ncuts && rc == 0; i++) {
        size_t at = i < ncuts ? cuts[i] : len;
        rc = ndjson_feed(&s, STREAM + prev, at - prev, sink_line, &k);
        prev = at;
    }
    if (rc != 0 || k.bad || k.calls != 5) fail = 1;
    if (k.out.len != sizeof(EXPECTED) - 1 || memcmp(k.out.data, EXPECTED, k.out.len) != 0) fail = 1;
    if (ndjson_pending(&s) != TAIL_LEN) fail = 1;
    ndjson_free(&s);
    dynbuf_free(&k.out);
    return fail;
}

TEST(whole_stream_in_one_chunk) {
    CHECK_INT(run_cuts(NULL, 0), 0);
}

TEST(every_single_boundary) {
    size_t len = sizeof(STREAM) - 1, i;
    int failures = 0;
    for (i = 0; i <= len; i++) failures += run_cuts(&i, 1);
    CHECK_INT(failures, 0);
}

TEST(every_pair_of_boundaries) {
    size_t len = sizeof(STREAM) - 1, i, j, cuts[2];
    int failures = 0;
    for (i = 0; i <= len; i++)
        for (j = i; j <= len; j++) {
            cuts[0] = i;
            cuts[1] = j;
            failures += run_cuts(cuts, 2);
        }
    CHECK_INT(failures, 0);
}

TEST(byte_by_byte) {
    size_t len = sizeof(STREAM) - 1, i, cuts[sizeof(STREAM)];
    for (i = 0; i < len; i++) cuts[i] = i + 1;
    CHECK_INT(run_cuts(cuts, len), 0);
}

/* xorshift32: a fixed, libc-independent sequence. */
static uint32_t rng_next(uint32_t *st) {
    uint32_t x = *st;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *st = x;
}

TEST(random_boundaries_fixed_seed) {
    size_t len = sizeof(STREAM) - 1, cuts[64], n;
    uint32_t seed = 0x5eed1234u;
    int round, failures = 0;
    for (round = 0; round < 2000; round++) {
        size_t at = 0;
        n = 0;
        while (n < 64) {
            at += rng_next(&seed) % 24; /* zero-length chunks included */
            if (at > len) break;
            cuts[n++] = at;
        }
        failures += run_cuts(cuts, n);
    }
    CHECK_INT(failures, 0);
}

TEST(crlf_and_lone_cr) {
    struct ndjson s;
    struct sink k;
    ndjson_init(&s, 64);
    sink_init(&k);
    CHECK_INT(feed_str(&s, "a\r\nb\r\r\n\r\n\rc\n", &k), 0);
    /* "a"; "b\r" (only one trailing CR stripped); "\r\n" is empty; "\rc" keeps a leading CR */
    CHECK_INT(k.out.len, 8);
    CHECK(memcmp(k.out.data, "a\x1e" "b\r\x1e" "\rc\x1e", 8) == 0);
    CHECK_INT(k.calls, 3);
    CHECK_INT(ndjson_pending(&s), 0);
    ndjson_free(&s);
    dynbuf_free(&k.out);
}

TEST(empty_lines_skipped) {
    struct ndjson s;
    struct sink k;
    ndjson_init(&s, 64);
    sink_init(&k);
    CHECK_INT(feed_str(&s, "\n\n\r\n\n", &k), 0);
    CHECK_INT(k.calls, 0);
    CHECK_INT(feed_str(&s, "", &k), 0);
    CHECK_INT(ndjson_feed(&s, NULL, 0, sink_line, &k), 0);
    CHECK_INT(k.calls, 0);
    CHECK_INT(ndjson_pending(&s), 0);
    ndjson_free(&s);
    dynbuf_free(&k.out);
}

TEST(pending_tail) {
    struct ndjson s;
    struct sink k;
    ndjson_init(&s, 64);
    sink_init(&k);
    CHECK_INT(feed_str(&s, "{\"a\":", &k), 0);
    CHECK_INT(ndjson_pending(&s), 5);
    CHECK_INT(feed_str(&s, "1}", &k), 0);
    CHECK_INT(ndjson_pending(&s), 7);
    CHECK_INT(k.calls, 0);
    CHECK_INT(feed_str(&s, "\n{", &k), 0);
    CHECK_INT(k.calls, 1);
    CHECK_STR(k.out.data, "{\"a\":1}\x1e");
    CHECK_INT(ndjson_pending(&s), 1);
    ndjson_free(&s);
    dynbuf_free(&k.out);
}

TEST(line_at_max_is_fine) {
    struct ndjson s;
    struct sink k;
    ndjson_init(&s, 16);
    sink_init(&k);
    CHECK_INT(feed_str(&s, "0123456789abcdef\n", &k), 0); /* 16 */
    CHECK_INT(feed_str(&s, "0123456789abcde\r\n", &k), 0); /* 15 + CR */
    CHECK_INT(k.calls, 2);
    CHECK_STR(k.out.data, "0123456789abcdef\x1e" "0123456789abcde\x1e");
    ndjson_free(&s);
    dynbuf_free(&k.out);
}

TEST(line_over_max_in_one_chunk) {
    struct ndjson s;
    struct sink k;
    ndjson_init(&s, 16);
    sink_init(&k);
    CHECK_INT(feed_str(&s, "ok\n0123456789abcdefg\nlater\n", &k), -1);
    CHECK_INT(k.calls, 1);        /* "ok" was delivered before the long line */
    CHECK_INT(ndjson_pending(&s), 0);
    /* the stream is unusable from now on */
    CHECK_INT(feed_str(&s, "fine\n", &k), -1);
    CHECK_INT(k.calls, 1);
    ndjson_free(&s);
    /* a fresh splitter works again */
    ndjson_init(&s, 16);
    CHECK_INT(feed_str(&s, "fine\n", &k), 0);
    CHECK_INT(k.calls, 2);
    ndjson_free(&s);
    dynbuf_free(&k.out);
}

TEST(line_over_max_across_chunks) {
    struct ndjson s;
    struct sink k;
    int i, rc = 0;
    ndjson_init(&s, 16);
    sink_init(&k);
    for (i = 0; i < 16 && rc == 0; i++) rc = feed_str(&s, "x", &k);
    CHECK_INT(rc, 0);
    CHECK_INT(ndjson_pending(&s), 16);
    CHECK_INT(feed_str(&s, "y", &k), -1); /* 17th byte without '\n' */
    CHECK_INT(k.calls, 0);
    ndjson_free(&s);
    /* same when the overflowing byte arrives together with the newline */
    ndjson_init(&s, 16);
    CHECK_INT(feed_str(&s, "0123456789", &k), 0);
    CHECK_INT(feed_str(&s, "abcdefg\n", &k), -1);
    CHECK_INT(k.calls, 0);
    ndjson_free(&s);
    dynbuf_free(&k.out);
}

TEST(callback_stop_value_propagates) {
    struct ndjson s;
    struct sink k;
    ndjson_init(&s, 64);
    sink_init(&k);
    k.stop_at = 2;
    k.stop_value = 7;
    CHECK_INT(feed_str(&s, "one\ntwo\nthree\nfour", &k), 7);
    CHECK_INT(k.calls, 2);
    CHECK_STR(k.out.data, "one\x1etwo\x1e");
    CHECK_INT(ndjson_pending(&s), 0); /* the rest of the chunk is dropped */
    ndjson_free(&s);

    /* a negative stop value comes back as is, also when the line ends in a later chunk */
    ndjson_init(&s, 64);
    k.calls = 0;
    k.stop_at = 1;
    k.stop_value = -42;
    CHECK_INT(feed_str(&s, "par", &k), 0);
    CHECK_INT(feed_str(&s, "tial\r\n", &k), -42);
    CHECK_INT(k.calls, 1);
    ndjson_free(&s);
    dynbuf_free(&k.out);
}

static int count_line(void *ud, char *line, size_t len) {
    size_t *total = ud;
    (void)line;
    *total += len;
    return 0;
}

/* A 1 MiB line fed one byte at a time: linear work finishes at once; rescanning the
 * pending tail on every chunk would take ~5 * 10^11 steps. */
TEST(long_line_byte_by_byte_is_linear) {
    struct ndjson s;
    size_t total = 0, i, n = (size_t)1 << 20;
    int rc = 0;
    ndjson_init(&s, n);
    for (i = 0; i < n && rc == 0; i++) rc = ndjson_feed(&s, "z", 1, count_line, &total);
    CHECK_INT(rc, 0);
    CHECK_INT(ndjson_pending(&s), n);
    CHECK_INT(ndjson_feed(&s, "\n", 1, count_line, &total), 0);
    CHECK_INT(total, n);
    CHECK_INT(ndjson_pending(&s), 0);
    ndjson_free(&s);
}
