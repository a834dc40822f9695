/* tests/unit/test_portforward.c — the pure part of kube/portforward.c: the request path,
 * the data message a client sends, and the demultiplexer of what the server sends (the
 * 2-byte little-endian port at the start of each channel, split anywhere; data on channel
 * 0 passed through byte-exactly; error text on channel 1, bounded; unknown channels and
 * a wrong port refused); and whole sessions against a scripted stand-in for the endpoint
 * (exec_peer.h on 127.0.0.1): echo byte-exact both ways, the pod's error text, a wrong
 * port, a refused upgrade, a local EOF, the stop flag. */
#include "base/clock.h"
#include "check.h"
#include "exec_peer.h"

#include <stdatomic.h>
#include <time.h>

#include "kube/config.h"
#include "kube/portforward.h"
#include "kube/rest.h"

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

TEST(port_mappings_like_kubectl) {
    uint16_t l = 1, r = 1;
    CHECK_INT(kube_pf_parse_mapping("8080", &l, &r), 0);
    CHECK_INT(l, 8080);
    CHECK_INT(r, 8080);
    CHECK_INT(kube_pf_parse_mapping("9000:80", &l, &r), 0);
    CHECK_INT(l, 9000);
    CHECK_INT(r, 80);
    CHECK_INT(kube_pf_parse_mapping(":5900", &l, &r), 0);
    CHECK_INT(l, 0);
    CHECK_INT(r, 5900);
    CHECK_INT(kube_pf_parse_mapping("0:65535", &l, &r), 0);
    CHECK_INT(l, 0);
    CHECK_INT(r, 65535);
    static const char *const bad[] = {"", "0", "65536", "80:", "a:80", "80:x", "1:2:3", "-1", " 80", "80 ",
                                      "123456", "8080:0", "+80", NULL};
    for (int i = 0; bad[i]; i++) {
        int rc = kube_pf_parse_mapping(bad[i], &l, &r);
        if (rc != -1) fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
        CHECK_INT(rc, -1);
    }
    CHECK_INT(kube_pf_parse_mapping(NULL, &l, &r), -1);
}

/* ---- sessions against the scripted peer ------------------------------------------------ */

static struct kube_client *pf_client(const struct peer *p) {
    struct kube_config cfg;
    char url[64], err[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", p->port);
    memset(&cfg, 0, sizeof(cfg));
    cfg.server = strdup(url);
    cfg.token = strdup("t0ken");
    pthread_mutex_init(&cfg.lock, NULL);
    cfg.lock_ready = 1;
    struct kube_client *c = kube_client_new(&cfg, "test", err, sizeof(err));
    if (c) kube_client_set_retries(c, 1);
    return c;
}

/* The local application: writes `len` patterned bytes (then shuts its write side when
 * asked), and reads everything back until EOF. */
struct app {
    int fd;
    size_t len, got;
    int shut_after, bad;
    pthread_t wr, rd;
};

static void *app_write(void *arg) {
    struct app *a = arg;
    unsigned char buf[8192];
    size_t off = 0;
    while (off < a->len) {
        size_t k = a->len - off < sizeof buf ? a->len - off : sizeof buf;
        for (size_t i = 0; i < k; i++) buf[i] = (unsigned char)((off + i) % 253);
        ssize_t w = send(a->fd, buf, k, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
    if (a->shut_after) shutdown(a->fd, SHUT_WR);
    return NULL;
}

static void *app_read(void *arg) {
    struct app *a = arg;
    unsigned char buf[16384];
    for (;;) {
        ssize_t r = recv(a->fd, buf, sizeof buf, 0);
        if (r <= 0) break;
        for (ssize_t i = 0; i < r; i++)
            if (buf[i] != (unsigned char)((a->got + (size_t)i) % 253)) a->bad = 1;
        __atomic_store_n(&a->got, a->got + (size_t)r, __ATOMIC_RELEASE);   /* raise_stop polls it */
    }
    return NULL;
}

/* Run one session for the local end sv[0] while the app plays on sv[1]. */
static int run_session(struct peer *p, uint16_t port, struct app *a, const atomic_int *stop,
                       struct kube_pf_result *r) {
    int sv[2];
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a->fd = sv[1];
    pthread_create(&a->wr, NULL, app_write, a);
    pthread_create(&a->rd, NULL, app_read, a);
    struct kube_client *c = pf_client(p);
    struct kube_pf_options o = {.namespace_ = "ns-1", .pod = "p", .port = port, .fd = sv[0], .stop = stop};
    int rc = kube_portforward(c, &o, r);
    close(sv[0]);                  /* as the CLI does: the app sees EOF */
    pthread_join(a->wr, NULL);
    pthread_join(a->rd, NULL);
    close(sv[1]);
    kube_client_free(c);
    return rc;
}

TEST(session_echoes_byte_exact_and_ends_with_the_pod) {
    struct peer p;
    struct app a = {.len = 3u << 20};
    struct kube_pf_result r;
    CHECK_INT(peer_start(&p, PEER_PF_ECHO), 0);
    p.echo_expect = a.len;
    int rc = run_session(&p, 8080, &a, NULL, &r);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_INT(r.http_status, 101);
    CHECK_INT(a.got, a.len);
    CHECK_INT(a.bad, 0);
    CHECK_INT(r.bytes_to_pod, a.len);
    CHECK_INT(r.bytes_from_pod, a.len);
    CHECK(p.stdin_max_message <= 32 * 1024);   /* sent in bounded chunks */
    CHECK_STR(p.request_line, "GET /api/v1/namespaces/ns-1/pods/p/portforward?ports=8080 HTTP/1.1");
    CHECK_STR(p.offered, "v4.channel.k8s.io");
    CHECK_STR(p.authorization, "Bearer t0ken");
    CHECK_INT(p.unmasked_frames, 0);
    peer_stop(&p);
}

TEST(session_reports_the_pods_error) {
    struct peer p;
    struct app a = {.len = 100};
    struct kube_pf_result r;
    CHECK_INT(peer_start(&p, PEER_PF_REFUSED), 0);
    CHECK_INT(run_session(&p, 9, &a, NULL, &r), -1);
    CHECK_STR(r.err, "port-forward: error forwarding port 9 to pod p, uid : dial tcp4 127.0.0.1:9: connect: "
              "connection refused");
    CHECK_INT(a.got, 0);
    peer_stop(&p);
}

TEST(session_refuses_data_for_another_port) {
    struct peer p;
    struct app a = {.len = 0};
    struct kube_pf_result r;
    CHECK_INT(peer_start(&p, PEER_PF_WRONG_PORT), 0);
    CHECK_INT(run_session(&p, 80, &a, NULL, &r), -1);
    CHECK(strstr(r.err, "data channel names port 81, not 80") != NULL);
    peer_stop(&p);
}

TEST(session_refused_upgrade_says_why) {
    struct peer p;
    struct app a = {.len = 0};
    struct kube_pf_result r;
    CHECK_INT(peer_start(&p, PEER_FORBIDDEN), 0);
    CHECK_INT(run_session(&p, 80, &a, NULL, &r), -1);
    CHECK_INT(r.http_status, 403);
    CHECK(strstr(r.err, "port-forward: upgrade refused:") != NULL);
    CHECK(strstr(r.err, "pods/portforward") != NULL);
    if (!strstr(r.err, "pods/portforward")) fprintf(stderr, "    err: %s\n", r.err);
    peer_stop(&p);
}

TEST(session_after_local_eof_lingers_then_ends) {
    struct peer p;
    struct app a = {.len = 5000, .shut_after = 1};
    struct kube_pf_result r;
    CHECK_INT(peer_start(&p, PEER_PF_ECHO), 0);   /* the pod never closes */
    int64_t t0 = clock_mono_ms();
    CHECK_INT(run_session(&p, 80, &a, NULL, &r), 0);
    int64_t took = clock_mono_ms() - t0;
    CHECK_INT(a.got, 5000);                        /* the answer after the EOF still arrived */
    CHECK_INT(a.bad, 0);
    CHECK(took >= 900 && took < 5000);             /* about 1 s after the pod's last byte */
    peer_stop(&p);
}

static atomic_int stop_flag;
struct stopper {
    struct app *a;
    int64_t at_ms;   /* when the flag was raised */
};

/* Raise the stop flag once the echo came back (it may take seconds under valgrind on a
 * loaded machine: a fixed 300 ms raced it), and the session sat idle a moment. */
static void *raise_stop(void *arg) {
    struct stopper *s = arg;
    int64_t deadline = clock_mono_ms() + 20000;
    while (__atomic_load_n(&s->a->got, __ATOMIC_ACQUIRE) < s->a->len && clock_mono_ms() < deadline)
        usleep(10 * 1000);
    usleep(200 * 1000);
    s->at_ms = clock_mono_ms();
    atomic_store(&stop_flag, 1);
    return NULL;
}

TEST(session_ends_on_the_stop_flag) {
    struct peer p;
    struct app a = {.len = 10};
    struct stopper s = {.a = &a};
    struct kube_pf_result r;
    pthread_t t;
    CHECK_INT(peer_start(&p, PEER_PF_ECHO), 0);
    atomic_store(&stop_flag, 0);
    pthread_create(&t, NULL, raise_stop, &s);
    CHECK_INT(run_session(&p, 80, &a, &stop_flag, &r), 0);
    int64_t ended = clock_mono_ms();
    pthread_join(t, NULL);
    CHECK(s.at_ms > 0 && ended >= s.at_ms && ended - s.at_ms < 1500);   /* promptly after the flag */
    CHECK_INT(a.got, 10);
    peer_stop(&p);
}

/* The local application writes and goes away (closes its socket): the pod's answer
 * cannot be delivered, and the session ends there, quietly, without an error. */
TEST(session_ends_quietly_when_the_local_side_goes) {
    struct peer p;
    struct kube_pf_result r;
    int sv[2];
    CHECK_INT(peer_start(&p, PEER_PF_ECHO), 0);   /* the pod never closes */
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    static unsigned char big[200000];
    memset(big, 'z', sizeof big);
    struct kube_client *c = pf_client(&p);
    struct kube_pf_options o = {.namespace_ = "ns-1", .pod = "p", .port = 80, .fd = sv[0]};
    /* 100 000 bytes fit the socket pair's buffer: written before the session, then gone */
    ssize_t w = send(sv[1], big, 100000, MSG_NOSIGNAL);
    CHECK_INT(w, 100000);
    close(sv[1]);
    int64_t t0 = clock_mono_ms();
    int rc = kube_portforward(c, &o, &r);
    int64_t took = clock_mono_ms() - t0;
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK(r.bytes_to_pod > 0 && r.bytes_to_pod <= 100000);   /* it ends at the first answer */
    CHECK_INT(r.bytes_from_pod, 0);               /* which could not be delivered */
    CHECK(took < 5000);
    close(sv[0]);
    kube_client_free(c);
    peer_stop(&p);
}
