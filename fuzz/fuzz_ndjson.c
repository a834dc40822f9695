/* fuzz/fuzz_ndjson.c — the watch stream's line splitter (kube/ndjson.c) and event parser
 * (kube_watch_parse_event) against hostile streams cut into fuzzer-chosen chunks.
 *
 * Input: byte 0 = flags: bits 0-3 → 1..16 chunk-size bytes follow; bit 4 → a small
 * max_line (1 + byte 1) instead of KUBE_WATCH_MAX_LINE; bit 5 → the callback stops the
 * stream at line (byte 1 % 8) + 1 with value 7. Byte 1 = that parameter. Then the chunk
 * sizes (0..255 each, cycled; 0 feeds an empty chunk), then the stream itself.
 *
 * Oracle: a naive splitter over the whole stream at once. Whatever the chunking, the
 * lines handed to the callback, the outcome (0, the stop value, or -1 for an overlong
 * line) and the pending tail must match it; every line honours the callback contract and
 * goes through kube_watch_parse_event, whose result must be a well-formed event. */
#include "fuzz.h"

#include "kube/ndjson.h"
#include "kube/watch.h"

#define STOP_VALUE 7

struct span { size_t off, len; };

struct run {
    const char *stream;
    const struct span *want;   /* the oracle's lines */
    size_t nwant, got;
    size_t stop_at;            /* 1-based line that stops the stream; 0 = never */
};

/* The oracle: lines of stream (one trailing '\r' stripped, empty ones skipped), and how
 * feeding the whole stream must end: 0, STOP_VALUE or -1. *tail = unfinished bytes. */
static int oracle(const char *s, size_t n, size_t max_line, size_t stop_at,
                  struct span *out, size_t *nout, size_t *tail) {
    size_t start = 0, i, k = 0;

    for (i = 0; i < n; i++) {
        if (s[i] != '\n') continue;
        size_t len = i - start;
        if (len > max_line) { *nout = k; return -1; }
        if (len && s[start + len - 1] == '\r') len--;
        if (len) {
            out[k].off = start;
            out[k].len = len;
            k++;
            if (stop_at && k == stop_at) { *nout = k; return STOP_VALUE; }
        }
        start = i + 1;
    }
    *nout = k;
    *tail = n - start;
    return *tail > max_line ? -1 : 0;
}

/* The callback: check the contract, compare with the oracle, parse the event. */
static int on_line(void *ud, char *line, size_t len) {
    struct run *r = ud;

    FUZZ_ASSERT(len > 0);
    FUZZ_ASSERT(line[len] == '\0');
    FUZZ_ASSERT(memchr(line, '\n', len) == NULL);
    FUZZ_ASSERT(r->got < r->nwant);
    FUZZ_ASSERT(r->want[r->got].len == len);
    FUZZ_ASSERT(memcmp(r->stream + r->want[r->got].off, line, len) == 0);
    r->got++;

    cJSON *ev = kube_watch_parse_event(line, len);
    if (ev) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
        FUZZ_ASSERT(cJSON_IsObject(ev) && cJSON_IsString(type) && type->valuestring);
        FUZZ_ASSERT(cJSON_IsObject(obj));
        int expired = kube_watch_status_is_expired(obj);
        FUZZ_ASSERT(expired == 0 || expired == 1);
        cJSON_Delete(ev);
    }
    return r->stop_at && r->got == r->stop_at ? STOP_VALUE : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct fuzz_in in = {data, size};
    uint8_t flags = fuzz_byte(&in), param = fuzz_byte(&in);
    size_t nsizes = (flags & 15u) + 1, got, i;
    const uint8_t *sizes = fuzz_bytes(&in, nsizes, &got);
    size_t max_line = (flags & 16u) ? (size_t)param + 1 : KUBE_WATCH_MAX_LINE;
    size_t stop_at = (flags & 32u) ? (size_t)(param % 8) + 1 : 0;
    const char *stream = (const char *)in.p;
    size_t n = in.n, tail = 0, nwant = 0;
    struct span *want;
    struct ndjson s;
    int expect, rc = 0;

    nsizes = got;
    want = malloc((n / 2 + 1) * sizeof(*want)); /* a line takes >= 2 bytes */
    if (!want) return 0;
    expect = oracle(stream, n, max_line, stop_at, want, &nwant, &tail);

    struct run r = {stream, want, nwant, 0, stop_at};
    ndjson_init(&s, max_line);
    size_t off = 0;
    for (i = 0; off < n || i == 0; i++) {
        size_t step = nsizes ? sizes[i % nsizes] : n;
        if (step > n - off) step = n - off;
        rc = ndjson_feed(&s, stream + off, step, on_line, &r);
        off += step;
        if (rc) break;
        if (i > 4 * n + 64) break;   /* only empty chunks: give the rest at once */
    }
    if (rc == 0 && off < n) rc = ndjson_feed(&s, stream + off, n - off, on_line, &r);

    FUZZ_ASSERT(rc == expect);
    FUZZ_ASSERT(r.got == nwant);
    if (rc == 0) FUZZ_ASSERT(ndjson_pending(&s) == tail);
    if (rc < 0) {
        /* Broken for good: every later feed fails, even an empty one. */
        FUZZ_ASSERT(ndjson_feed(&s, "x\n", 2, on_line, &r) == -1);
        FUZZ_ASSERT(ndjson_feed(&s, "", 0, on_line, &r) == -1);
        FUZZ_ASSERT(r.got == nwant);
    }
    ndjson_free(&s);
    free(want);
    return 0;
}
