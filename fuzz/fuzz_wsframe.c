/* fuzz/fuzz_wsframe.c — the bulk WebSocket parser of exec (kube/wsframe.c) on arbitrary
 * server bytes, and the 101 answer parser.
 *
 * Input: bytes 0-1 = two cut points (scaled to the rest of the input); the rest = the
 * stream. Oracle: feeding it whole, in three pieces at the cut points and byte by byte
 * gives the same callbacks (kind, opcode, first/final, payload, concatenated per message)
 * and the same verdict and error text; first/final always alternate properly; control
 * payloads stay within 125 bytes. kube_ws_parse_answer on the stream must never read past
 * it, and a complete answer's header length is within it. */
#include "fuzz.h"

#include "base/dynbuf.h"
#include "kube/wsframe.h"

struct log {
    struct dynbuf b;
    int in_msg;
};

static int on_data(void *ud, int opcode, const unsigned char *p, size_t n, int first, int final) {
    struct log *l = ud;
    FUZZ_ASSERT(first != l->in_msg);   /* first exactly when no message is open */
    l->in_msg = !final;
    /* Pieces of a message are logged as one run of payload, so different cuts compare. */
    if (first) dynbuf_printf(&l->b, "[%d:", opcode);
    dynbuf_append(&l->b, p, n);
    if (final) dynbuf_append(&l->b, "]", 1);
    return 0;
}

static int on_control(void *ud, int opcode, const unsigned char *p, size_t n) {
    struct log *l = ud;
    FUZZ_ASSERT(n <= 125);
    dynbuf_printf(&l->b, "{%d:%zu:", opcode, n);
    dynbuf_append(&l->b, p, n);
    dynbuf_append(&l->b, "}", 1);
    return 0;
}

/* Parse s in pieces ending at cuts (ascending, within n; ncuts may be 0). */
static int run(const uint8_t *s, size_t n, const size_t *cuts, size_t ncuts, struct log *l, char *err, size_t errlen) {
    struct kube_ws_parser ps;
    kube_ws_parser_init(&ps, on_data, on_control, l);
    size_t pos = 0;
    int rc = 0;
    for (size_t i = 0; i <= ncuts && rc == 0; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        rc = kube_ws_parser_feed(&ps, s + pos, end - pos, err, errlen);
        pos = end;
    }
    dynbuf_printf(&l->b, "|rc=%d open=%d", rc, l->in_msg);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const uint8_t *s = data + 2;
    size_t n = size - 2;
    size_t c1 = n * data[0] / 256, c2 = n * data[1] / 256;
    size_t cuts[2] = {c1 < c2 ? c1 : c2, c1 < c2 ? c2 : c1};

    struct log whole, three, bytes;
    char e1[160] = "", e2[160] = "", e3[160] = "";
    dynbuf_init(&whole.b, 1 << 20);
    dynbuf_init(&three.b, 1 << 20);
    dynbuf_init(&bytes.b, 1 << 20);
    whole.in_msg = three.in_msg = bytes.in_msg = 0;
    run(s, n, NULL, 0, &whole, e1, sizeof(e1));
    run(s, n, cuts, 2, &three, e2, sizeof(e2));
    size_t *all = malloc((n ? n : 1) * sizeof(*all));
    FUZZ_ASSERT(all);
    for (size_t i = 0; i < n; i++) all[i] = i;
    run(s, n, all, n, &bytes, e3, sizeof(e3));
    free(all);
    FUZZ_ASSERT(whole.b.len == three.b.len && !memcmp(whole.b.data, three.b.data, whole.b.len));
    FUZZ_ASSERT(whole.b.len == bytes.b.len && !memcmp(whole.b.data, bytes.b.data, whole.b.len));
    FUZZ_ASSERT(!strcmp(e1, e2) && !strcmp(e1, e3));
    dynbuf_free(&whole.b);
    dynbuf_free(&three.b);
    dynbuf_free(&bytes.b);

    /* The answer parser on the same bytes, copied so a read past them is caught. */
    char *copy = malloc(n ? n : 1);
    FUZZ_ASSERT(copy);
    if (n) memcpy(copy, s, n);
    struct kube_ws_answer a;
    int k = kube_ws_parse_answer(copy, n, &a);
    FUZZ_ASSERT(k >= -1 && k <= 1);
    if (k == 1) {
        FUZZ_ASSERT(a.header_len <= n && a.status >= 0 && a.status <= 999);
        kube_ws_check_answer(&a, "dGhlIHNhbXBsZSBub25jZQ==");
    }
    free(copy);
    return 0;
}
