/* tests/unit/test_portforward.c — the pure part of kube/portforward.c: the request path,
 * the data message a client sends, and the demultiplexer of what the server sends (the
 * 2-byte little-endian port at the start of each channel, split anywhere; data on channel
 * 0 passed through byte-exactly; error text on channel 1, bounded; unknown channels and
 * a wrong port refused). No network. */
#include "check.h"

#include "kube/portforward.h"

struct sink {
    unsigned char buf[70000];
    size_t len;
    int calls;
    int abort_after;   /* > 0: return 7 on that call */
};

static int collect(void *ud, const unsigned char *p, size_t n) {
    struct sink *s = ud;
    s->calls++;
    if (s->abort_after && s->calls == s->abort_after) return 7;
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return 0;
}

/* Feed one whole message. */
static int msg(struct kube_pf_demux *d, const void *p, size_t n, char *err) {
    return kube_pf_demux_feed(d, p, n, 1, 1, err, 160);
}

TEST(path_is_encoded) {
    char out[256];
    CHECK_INT(kube_pf_path("ns-1", "yao-sb-a-b", 8080, out, sizeof out), 0);
    CHECK_STR(out, "/api/v1/namespaces/ns-1/pods/yao-sb-a-b/portforward?ports=8080");
    CHECK_INT(kube_pf_path("a b", "p/q", 1, out, sizeof out), 0);
    CHECK(strstr(out, "/namespaces/a%20b/pods/p%2Fq/portforward?ports=1") != NULL);
    CHECK_INT(kube_pf_path("ns", "pod", 0, out, sizeof out), -1);        /* no port 0 */
    CHECK_INT(kube_pf_path("ns", "pod", 65535, out, 20), -1);            /* too small */
}

TEST(data_message_is_channel_zero_then_bytes) {
    unsigned char out[8];
    const unsigned char in[] = {0x00, 0xff, 'a'};
    CHECK_INT(kube_pf_data_message(in, 3, out, sizeof out), 4);
    CHECK_INT(out[0], 0);
    CHECK(memcmp(out + 1, in, 3) == 0);
    CHECK_INT(kube_pf_data_message(in, 3, out, 3), 0);                  /* does not fit */
    CHECK_INT(kube_pf_data_message(NULL, 0, out, 1), 1);                /* empty payload */
}

TEST(port_prefix_then_data_byte_exact) {
    struct kube_pf_demux d;
    struct sink s = {0};
    char err[160] = "";
    kube_pf_demux_init(&d, 8080, collect, &s);
    /* the server's usual start: the port alone on each channel (8080 = 0x1f90, LE) */
    CHECK_INT(msg(&d, "\x00\x90\x1f", 3, err), 0);
    CHECK_INT(msg(&d, "\x01\x90\x1f", 3, err), 0);
    CHECK_INT(s.len, 0);
    CHECK_INT(s.calls, 0);
    /* then data, with every byte value */
    unsigned char m[257];
    m[0] = 0;
    for (int i = 0; i < 256; i++) m[i + 1] = (unsigned char)i;
    CHECK_INT(msg(&d, m, sizeof m, err), 0);
    CHECK_INT(s.len, 256);
    for (int i = 0; i < 256 && i < (int)s.len; i++) CHECK_INT(s.buf[i], i);
    CHECK_INT(d.error_len, 0);
}

TEST(port_prefix_split_and_sharing_a_message_with_data) {
    struct kube_pf_demux d;
    struct sink s = {0};
    char err[160] = "";
    kube_pf_demux_init(&d, 5900, collect, &s);   /* 0x170c */
    /* one prefix byte per message, then the rest of the prefix with data behind it */
    CHECK_INT(msg(&d, "\x00\x0c", 2, err), 0);
    CHECK_INT(msg(&d, "\x00\x17hello", 7, err), 0);
    CHECK_INT(s.len, 5);
    CHECK(memcmp(s.buf, "hello", 5) == 0);
    /* an empty message and a channel-only message change nothing */
    CHECK_INT(msg(&d, "", 0, err), 0);
    CHECK_INT(msg(&d, "\x00", 1, err), 0);
    CHECK_INT(s.len, 5);
}

TEST(fragments_carry_the_channel_only_in_the_first) {
    struct kube_pf_demux d;
    struct sink s = {0};
    char err[160] = "";
    kube_pf_demux_init(&d, 80, collect, &s);
    CHECK_INT(msg(&d, "\x00\x50\x00", 3, err), 0);
    /* a message in three fragments: "\x00abc" "\x01\x02" "xyz" — the \x01 is data here */
    CHECK_INT(kube_pf_demux_feed(&d, (const unsigned char *)"\x00" "abc", 4, 1, 0, err, sizeof err), 0);
    CHECK_INT(kube_pf_demux_feed(&d, (const unsigned char *)"\x01\x02", 2, 0, 0, err, sizeof err), 0);
    CHECK_INT(kube_pf_demux_feed(&d, (const unsigned char *)"xyz", 3, 0, 1, err, sizeof err), 0);
    CHECK_INT(s.len, 8);
    CHECK(memcmp(s.buf, "abc\x01\x02xyz", 8) == 0);
    CHECK_INT(d.error_len, 0);
}

TEST(error_channel_text_is_collected_and_bounded) {
    struct kube_pf_demux d;
    struct sink s = {0};
    char err[160] = "";
    kube_pf_demux_init(&d, 9999, collect, &s);   /* 0x270f */
    CHECK_INT(msg(&d, "\x01\x0f\x27", 3, err), 0);
    const char text[] = "\x01" "error forwarding port 9999 to pod p: connection refused";
    CHECK_INT(msg(&d, text, sizeof text - 1, err), 0);
    CHECK_STR(d.error, "error forwarding port 9999 to pod p: connection refused");
    CHECK_INT(s.len, 0);
    CHECK_INT(d.error_truncated, 0);
    /* more than KUBE_PF_ERROR_MAX: kept up to the bound, flagged */
    static unsigned char big[KUBE_PF_ERROR_MAX + 100];
    big[0] = 1;
    memset(big + 1, 'x', sizeof big - 1);
    CHECK_INT(msg(&d, big, sizeof big, err), 0);
    CHECK_INT(d.error_len, KUBE_PF_ERROR_MAX);
    CHECK_INT(strlen(d.error), KUBE_PF_ERROR_MAX);
    CHECK_INT(d.error_truncated, 1);
}

TEST(wrong_port_and_unknown_channel_are_refused) {
    struct kube_pf_demux d;
    struct sink s = {0};
    char err[160] = "";
    kube_pf_demux_init(&d, 8080, collect, &s);
    CHECK_INT(msg(&d, "\x00\x91\x1f", 3, err), -1);     /* 8081 */
    CHECK(strstr(err, "data channel names port 8081, not 8080") != NULL);
    kube_pf_demux_init(&d, 8080, collect, &s);
    CHECK_INT(msg(&d, "\x01\x1f\x90", 3, err), -1);     /* big-endian by mistake: 36895 */
    CHECK(strstr(err, "error channel names port 36895, not 8080") != NULL);
    kube_pf_demux_init(&d, 8080, collect, &s);
    CHECK_INT(msg(&d, "\x02\x90\x1f", 3, err), -1);     /* a second port's channel: not asked for */
    CHECK(strstr(err, "unknown channel 2") != NULL);
    CHECK_INT(s.len, 0);
}

TEST(consumer_abort_is_passed_on) {
    struct kube_pf_demux d;
    struct sink s = {0};
    char err[160] = "";
    s.abort_after = 2;
    kube_pf_demux_init(&d, 1, collect, &s);
    CHECK_INT(msg(&d, "\x00\x01\x00" "a", 4, err), 0);
    CHECK_INT(msg(&d, "\x00" "b", 2, err), 7);
    CHECK_INT(s.len, 1);
}
