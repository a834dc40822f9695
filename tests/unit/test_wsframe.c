/* tests/unit/test_wsframe.c — kube/wsframe.c, the pure RFC 6455 client side of exec: the
 * upgrade request and the check of its answer, the bulk parser of server frames (fed
 * whole, byte by byte and split at every byte boundary; lengths 0/125/126/65535/65536 and
 * larger; fragmented messages with control frames between the fragments; close codes;
 * malformed frames) and the header and mask of client frames. */
#include "check.h"

#include <stdint.h>

#include "base/dynbuf.h"
#include "kube/wsframe.h"

/* ---- building server frames ----------------------------------------------------------- */

static void put_frame(struct dynbuf *b, int fin, int opcode, const unsigned char *p, uint64_t n) {
    unsigned char h[10];
    size_t hl = 2;
    h[0] = (unsigned char)((fin ? 0x80 : 0) | opcode);
    if (n < 126) {
        h[1] = (unsigned char)n;
    } else if (n <= 0xffff) {
        h[1] = 126;
        h[2] = (unsigned char)(n >> 8);
        h[3] = (unsigned char)n;
        hl = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++) h[2 + i] = (unsigned char)(n >> (56 - 8 * i));
        hl = 10;
    }
    dynbuf_append(b, h, hl);
    if (n) dynbuf_append(b, p, (size_t)n);
}

/* ---- collecting what the parser hands on ---------------------------------------------- */

struct got {
    struct dynbuf log;        /* one line per message / control frame */
    struct dynbuf msg;        /* the message being assembled */
    int in_msg, opcode;
    int bad;                  /* first/final out of order */
    int stop_at_close;        /* return this from the close callback */
};

static int got_data(void *ud, int opcode, const unsigned char *p, size_t n, int first, int final) {
    struct got *g = ud;
    if (first == g->in_msg) g->bad++;
    if (first) {
        g->in_msg = 1;
        g->opcode = opcode;
        dynbuf_reset(&g->msg);
    } else if (opcode != g->opcode) {
        g->bad++;
    }
    if (n) dynbuf_append(&g->msg, p, n);
    if (final) {
        /* A summary: opcode, length and a checksum of the content. */
        uint32_t sum = 0;
        for (size_t i = 0; i < g->msg.len; i++) sum = sum * 31 + (unsigned char)g->msg.data[i];
        dynbuf_printf(&g->log, "msg %d %zu %08x\n", opcode, g->msg.len, (unsigned)sum);
        g->in_msg = 0;
    }
    return 0;
}

static int got_control(void *ud, int opcode, const unsigned char *p, size_t n) {
    struct got *g = ud;
    dynbuf_printf(&g->log, "ctl %d %.*s\n", opcode, (int)n, (const char *)p);
    return opcode == KUBE_WS_CLOSE ? g->stop_at_close : 0;
}

static void got_init(struct got *g) {
    memset(g, 0, sizeof(*g));
    dynbuf_init(&g->log, 1 << 20);
    dynbuf_init(&g->msg, 64 << 20);
}

static void got_free(struct got *g) {
    dynbuf_free(&g->log);
    dynbuf_free(&g->msg);
}

/* Feed the stream in pieces cut at the given offsets (sorted, within len); the log. */
static char *parse_cut(const unsigned char *s, size_t len, const size_t *cuts, size_t ncuts, int *rc_out) {
    struct got g;
    struct kube_ws_parser ps;
    char err[160] = "";
    int rc = 0;
    got_init(&g);
    kube_ws_parser_init(&ps, got_data, got_control, &g);
    size_t pos = 0;
    for (size_t i = 0; i <= ncuts && rc == 0; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        rc = kube_ws_parser_feed(&ps, s + pos, end - pos, err, sizeof(err));
        pos = end;
    }
    if (g.bad) dynbuf_printf(&g.log, "BAD ORDER %d\n", g.bad);
    if (g.in_msg) dynbuf_printf(&g.log, "UNFINISHED\n");
    *rc_out = rc;
    char *log = dynbuf_take(&g.log);
    got_free(&g);
    return log;
}

static unsigned char *pattern(size_t n, unsigned seed) {
    unsigned char *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 7 + seed) ^ (i >> 8));
    return p;
}

/* A small stream: every length class up to 126, a fragmented message with a ping and a
 * pong between its fragments, empty frames, a close. */
static void small_stream(struct dynbuf *b) {
    unsigned char *p = pattern(300, 1);
    put_frame(b, 1, KUBE_WS_BINARY, (const unsigned char *)"\x01hello", 6);
    put_frame(b, 1, KUBE_WS_BINARY, p, 0);
    put_frame(b, 1, KUBE_WS_BINARY, p, 125);
    put_frame(b, 1, KUBE_WS_TEXT, p, 126);
    put_frame(b, 0, KUBE_WS_BINARY, p, 10);
    put_frame(b, 1, KUBE_WS_PING, (const unsigned char *)"pi", 2);
    put_frame(b, 0, KUBE_WS_CONT, p + 10, 0);
    put_frame(b, 1, KUBE_WS_PONG, (const unsigned char *)"", 0);
    put_frame(b, 0, KUBE_WS_CONT, p + 10, 200);
    put_frame(b, 1, KUBE_WS_CONT, p + 210, 90);
    put_frame(b, 1, KUBE_WS_CLOSE, (const unsigned char *)"\x03\xe8" "bye", 5);
    free(p);
}

TEST(whole_stream_gives_every_message_and_control_frame) {
    struct dynbuf b;
    dynbuf_init(&b, 1 << 20);
    small_stream(&b);
    int rc;
    char *log = parse_cut((unsigned char *)b.data, b.len, NULL, 0, &rc);
    CHECK_INT(rc, 0);
    /* The messages, in order; the checksums are those of the pattern's slices. */
    CHECK(strstr(log, "msg 2 6 ") == log);
    CHECK(strstr(log, "\nmsg 2 0 00000000\nmsg 2 125 ") != NULL);
    CHECK(strstr(log, "\nmsg 1 126 ") != NULL);
    CHECK(strstr(log, "\nctl 9 pi\nctl 10 \nmsg 2 300 ") != NULL);
    CHECK(strstr(log, "\nctl 8 \x03\xe8" "bye\n") != NULL);
    CHECK(strstr(log, "BAD") == NULL && strstr(log, "UNFINISHED") == NULL);
    free(log);
    dynbuf_free(&b);
}

TEST(every_split_point_and_byte_by_byte_give_the_same) {
    struct dynbuf b;
    dynbuf_init(&b, 1 << 20);
    small_stream(&b);
    int rc, bad = 0;
    char *want = parse_cut((unsigned char *)b.data, b.len, NULL, 0, &rc);
    for (size_t cut = 0; cut <= b.len; cut++) {
        char *log = parse_cut((unsigned char *)b.data, b.len, &cut, 1, &rc);
        if (rc != 0 || strcmp(log, want)) {
            if (!bad++) fprintf(stderr, "    split at %zu differs:\n%s\n", cut, log);
        }
        free(log);
    }
    CHECK_INT(bad, 0);
    size_t *cuts = malloc(b.len * sizeof(*cuts));
    for (size_t i = 0; i < b.len; i++) cuts[i] = i;
    char *log = parse_cut((unsigned char *)b.data, b.len, cuts, b.len, &rc);
    CHECK_INT(rc, 0);
    CHECK_STR(log, want);
    free(log);
    free(cuts);
    free(want);
    dynbuf_free(&b);
}

TEST(long_lengths_16_and_64_bit) {
    static const size_t lens[] = {65535, 65536, 70000, 3u << 20};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        struct dynbuf b;
        dynbuf_init(&b, 8 << 20);
        unsigned char *p = pattern(lens[i], (unsigned)i);
        put_frame(&b, 1, KUBE_WS_BINARY, p, lens[i]);
        put_frame(&b, 1, KUBE_WS_BINARY, (const unsigned char *)"\x03{}", 3);
        uint32_t sum = 0;
        for (size_t k = 0; k < lens[i]; k++) sum = sum * 31 + p[k];
        char want[80];
        snprintf(want, sizeof(want), "msg 2 %zu %08x\nmsg 2 3 ", lens[i], (unsigned)sum);
        /* Whole, and in uneven pieces that cut headers and payloads anywhere. */
        size_t cuts[64], n = 0;
        for (size_t c = 1; c < b.len && n < 64; c += 1 + (c * 7919) % 100000) cuts[n++] = c;
        int rc;
        char *whole = parse_cut((unsigned char *)b.data, b.len, NULL, 0, &rc);
        CHECK_INT(rc, 0);
        CHECK(strncmp(whole, want, strlen(want)) == 0);
        char *cut = parse_cut((unsigned char *)b.data, b.len, cuts, n, &rc);
        CHECK_INT(rc, 0);
        CHECK_STR(cut, whole);
        free(whole);
        free(cut);
        free(p);
        dynbuf_free(&b);
    }
}

TEST(nothing_is_parsed_after_a_close) {
    struct dynbuf b;
    dynbuf_init(&b, 1 << 20);
    put_frame(&b, 1, KUBE_WS_CLOSE, (const unsigned char *)"\x0f\xa0", 2);   /* 4000 */
    put_frame(&b, 1, KUBE_WS_BINARY, (const unsigned char *)"\x01x", 2);
    dynbuf_append(&b, "\xff\xff", 2);                                       /* garbage after */
    int rc;
    char *log = parse_cut((unsigned char *)b.data, b.len, NULL, 0, &rc);
    CHECK_INT(rc, 0);
    CHECK_STR(log, "ctl 8 \x0f\xa0\n");
    free(log);
    dynbuf_free(&b);
}

TEST(a_callback_stops_the_parser) {
    struct got g;
    struct kube_ws_parser ps;
    struct dynbuf b;
    char err[160];
    got_init(&g);
    g.stop_at_close = 7;
    dynbuf_init(&b, 1 << 20);
    put_frame(&b, 1, KUBE_WS_BINARY, (const unsigned char *)"\x01" "a", 2);
    put_frame(&b, 1, KUBE_WS_CLOSE, NULL, 0);
    put_frame(&b, 1, KUBE_WS_BINARY, (const unsigned char *)"\x01" "b", 2);
    kube_ws_parser_init(&ps, got_data, got_control, &g);
    CHECK_INT(kube_ws_parser_feed(&ps, (unsigned char *)b.data, b.len, err, sizeof(err)), 7);
    CHECK_INT(kube_ws_parser_feed(&ps, (unsigned char *)b.data, b.len, err, sizeof(err)), 0);
    CHECK(strstr(g.log.data, "msg 2 2 ") == g.log.data);
    CHECK(strstr(g.log.data, "ctl 8 \n") != NULL);
    CHECK(strstr(g.log.data + 1, "msg") == NULL);
    got_free(&g);
    dynbuf_free(&b);
}

static void expect_malformed(const char *bytes, size_t n, const char *why) {
    struct got g;
    struct kube_ws_parser ps;
    char err[160] = "";
    got_init(&g);
    kube_ws_parser_init(&ps, got_data, got_control, &g);
    /* Byte by byte too: the error comes at the same frame. */
    int rc = kube_ws_parser_feed(&ps, (const unsigned char *)bytes, n, err, sizeof(err));
    CHECK_INT(rc, -1);
    if (!strstr(err, why)) {
        fprintf(stderr, "    err \"%s\", expected \"%s\"\n", err, why);
        CHECK(0);
    }
    struct kube_ws_parser ps2;
    char err2[160] = "";
    kube_ws_parser_init(&ps2, got_data, got_control, &g);
    rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) rc = kube_ws_parser_feed(&ps2, (const unsigned char *)bytes + i, 1, err2, sizeof(err2));
    CHECK_INT(rc, -1);
    CHECK_STR(err2, err);
    got_free(&g);
}

TEST(malformed_frames_are_clear_errors) {
    expect_malformed("\xc2\x01x", 3, "reserved bits");
    expect_malformed("\x82\x81" "abcdx", 7, "masked");
    expect_malformed("\x83\x00", 2, "unknown WebSocket opcode 3");
    expect_malformed("\x8b\x00", 2, "unknown WebSocket opcode 11");
    expect_malformed("\x89\x7e\x00\x7e", 4, "control frame of 126 bytes");
    expect_malformed("\x09\x00", 2, "fragmented WebSocket control frame");
    expect_malformed("\x80\x01x", 3, "continuation frame outside a message");
    expect_malformed("\x02\x01x\x82\x01y", 6, "new WebSocket message inside");
    expect_malformed("\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x00", 10, "top bit");
}

/* ---- client frames --------------------------------------------------------------------- */

TEST(client_frame_headers_and_mask) {
    static const uint64_t lens[] = {0, 1, 125, 126, 65535, 65536, 1ull << 33};
    static const size_t hlen[] = {6, 6, 6, 8, 8, 14, 14};
    const unsigned char key[4] = {0x12, 0x34, 0x56, 0x78};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        unsigned char h[KUBE_WS_MAX_HEADER];
        size_t n = kube_ws_frame_header(h, KUBE_WS_BINARY, lens[i], key);
        CHECK_INT(n, hlen[i]);
        CHECK_INT(h[0], 0x82);
        CHECK(h[1] & 0x80);
        uint64_t l = h[1] & 127;
        if (l == 126) l = ((uint64_t)h[2] << 8) | h[3];
        else if (l == 127)
            for (int k = 0; k < 8; k++) l = (k ? l << 8 : 0) | h[2 + k];
        CHECK(l == lens[i]);
        CHECK(!memcmp(h + n - 4, key, 4));
    }
    /* Masking is byte i ^ key[i % 4], at every length and alignment; twice is a no-op. */
    unsigned char buf[80], orig[80];
    for (size_t i = 0; i < sizeof(orig); i++) orig[i] = (unsigned char)(i * 13 + 5);
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= sizeof(buf); n++) {
            memcpy(buf, orig, sizeof(buf));
            kube_ws_mask(buf + off, n, key);
            int ok = 1;
            for (size_t k = 0; k < n; k++) ok &= buf[off + k] == (orig[off + k] ^ key[k & 3]);
            for (size_t k = 0; k < off; k++) ok &= buf[k] == orig[k];
            kube_ws_mask(buf + off, n, key);
            ok &= !memcmp(buf, orig, sizeof(buf));
            if (!ok) {
                fprintf(stderr, "    mask wrong at offset %zu length %zu\n", off, n);
                CHECK(0);
                return;
            }
        }
}

/* ---- the handshake --------------------------------------------------------------------- */

TEST(accept_key_of_rfc6455) {
    char out[KUBE_WS_ACCEPT_LEN + 1];
    kube_ws_accept_for("dGhlIHNhbXBsZSBub25jZQ==", out);
    CHECK_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(upgrade_request) {
    char req[1024];
    size_t n = kube_ws_upgrade_request(req, sizeof(req), "h:6443", "/api/v1/x?command=a", "KEY", "v5.channel.k8s.io",
                                       "Bearer t", NULL, "ua/1");
    CHECK(n == strlen(req));
    CHECK(strncmp(req, "GET /api/v1/x?command=a HTTP/1.1\r\nHost: h:6443\r\n", 48) == 0);
    CHECK(strstr(req, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: KEY\r\n"
                      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
                      "Authorization: Bearer t\r\nUser-Agent: ua/1\r\n\r\n") != NULL);
    n = kube_ws_upgrade_request(req, sizeof(req), "h", "/", "K", "p", NULL, NULL, "ua");
    CHECK(n > 0 && !strstr(req, "Authorization"));
    CHECK_INT(kube_ws_upgrade_request(req, 40, "h", "/", "K", "p", NULL, NULL, "ua"), 0);
    /* impersonation: whole header lines after Authorization, before User-Agent */
    const char *const imp[] = {"Impersonate-User: alice", "Impersonate-Group: devs", NULL};
    n = kube_ws_upgrade_request(req, sizeof(req), "h", "/", "K", "p", "Bearer t", imp, "ua");
    CHECK(n == strlen(req));
    CHECK(strstr(req, "\r\nAuthorization: Bearer t\r\nImpersonate-User: alice\r\nImpersonate-Group: devs\r\n"
                      "User-Agent: ua\r\n\r\n") != NULL);
    /* too small for the extra lines: nothing */
    size_t without = kube_ws_upgrade_request(req, sizeof(req), "h", "/", "K", "p", "Bearer t", NULL, "ua");
    CHECK_INT(kube_ws_upgrade_request(req, without + 10, "h", "/", "K", "p", "Bearer t", imp, "ua"), 0);
}

TEST(answer_parsing_and_checks) {
    char acc[KUBE_WS_ACCEPT_LEN + 1], ans[512];
    kube_ws_accept_for("dGhlIHNhbXBsZSBub25jZQ==", acc);
    int n = snprintf(ans, sizeof(ans),
                     "HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
                     "Sec-Websocket-Accept: %s\r\nSec-WebSocket-Protocol:  v4.channel.k8s.io \r\n\r\n\x82\x01",
                     acc);
    struct kube_ws_answer a;
    size_t hdr = (size_t)n - 2;
    /* Incomplete at every length short of the blank line. */
    int early = 0;
    for (size_t l = 0; l < hdr; l++) early += kube_ws_parse_answer(ans, l, &a) != 0;
    CHECK_INT(early, 0);
    CHECK_INT(kube_ws_parse_answer(ans, (size_t)n, &a), 1);
    CHECK_INT(a.status, 101);
    CHECK_INT(a.header_len, hdr);
    CHECK_STR(a.protocol, "v4.channel.k8s.io");
    CHECK(kube_ws_check_answer(&a, "dGhlIHNhbXBsZSBub25jZQ==") == NULL);
    const char *why = kube_ws_check_answer(&a, "b3RoZXIga2V5IDEyMzQ1Ng==");
    CHECK(why && strstr(why, "Sec-WebSocket-Accept"));

    const char *refused = "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n\r\n{\"kind\":\"Status\"}";
    CHECK_INT(kube_ws_parse_answer(refused, strlen(refused), &a), 1);
    CHECK_INT(a.status, 403);
    CHECK(kube_ws_check_answer(&a, "k") != NULL);

    const char *noup = "HTTP/1.1 101 OK\r\nConnection: upgrade\r\n\r\n";
    CHECK_INT(kube_ws_parse_answer(noup, strlen(noup), &a), 1);
    why = kube_ws_check_answer(&a, "k");
    CHECK(why && strstr(why, "Upgrade"));

    CHECK_INT(kube_ws_parse_answer("SSH-2.0-x\r\n\r\n", 13, &a), -1);
    CHECK_INT(kube_ws_parse_answer("HTTP/1.1 1x1 x\r\n\r\n", 18, &a), -1);
    char *big = malloc(KUBE_WS_HS_MAX + 10);
    memcpy(big, "HTTP/1.1 101 x\r\n", 16);
    memset(big + 16, 'a', KUBE_WS_HS_MAX - 6);
    CHECK_INT(kube_ws_parse_answer(big, KUBE_WS_HS_MAX + 10, &a), -1);
    free(big);
}
