/* tests/unit/test_exec.c — kube/exec: the pure demultiplexer (fragments split at every
 * position, id-only and empty first fragments, unknown channels, the bounded status),
 * the status verdicts, and whole sessions against the scripted peer of exec_peer.h:
 * negotiation (v4-only server, a protocol nobody offered, none at all), output routing,
 * reassembly of a 3-frame message, exit codes, argv reaching the server byte for byte,
 * refused upgrades with their Status message, stdin in bounded chunks with the v5 close
 * signal, stdin from a file descriptor (output delivered while the fd has nothing to read,
 * EOF closing stdin, sessions that end with stdin idle returning at once, read errors),
 * timeouts, aborts, large output and concurrent sessions in threads. */
#include "check.h"
#include "exec_peer.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "base/clock.h"
#include "base/dynbuf.h"
#include "kube/exec.h"

/* ---- helpers ------------------------------------------------------------------------ */

struct sink {
    struct dynbuf out, err;
    int out_calls, err_calls;
    int abort_with;      /* non-zero: the stdout callback returns it */
};

static int sink_out(void *ud, const char *p, size_t n) {
    struct sink *s = ud;
    s->out_calls++;
    if (s->abort_with) return s->abort_with;
    return dynbuf_append(&s->out, p, n) == 0 ? 0 : 1;
}

static int sink_err(void *ud, const char *p, size_t n) {
    struct sink *s = ud;
    s->err_calls++;
    return dynbuf_append(&s->err, p, n) == 0 ? 0 : 1;
}

static void sink_init(struct sink *s) {
    memset(s, 0, sizeof(*s));
    dynbuf_init(&s->out, 64u << 20);
    dynbuf_init(&s->err, 1u << 20);
}

static void sink_free(struct sink *s) {
    dynbuf_free(&s->out);
    dynbuf_free(&s->err);
}

static const char *sink_text(struct dynbuf *b) { return b->data ? b->data : ""; }

/* A client for a server URL, with a bearer token. */
static struct kube_client *url_client(const char *url) {
    struct kube_config cfg;
    char err[256];
    memset(&cfg, 0, sizeof(cfg));
    cfg.server = strdup(url);
    cfg.token = strdup("t0ken");
    pthread_mutex_init(&cfg.lock, NULL);
    cfg.lock_ready = 1;
    struct kube_client *c = kube_client_new(&cfg, "test", err, sizeof(err));
    if (c) kube_client_set_retries(c, 1);
    return c;
}

/* A client for the peer: plain http:// (so ws://). */
static struct kube_client *peer_client(const struct peer *p) {
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", p->port);
    return url_client(url);
}

static int hexval(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode like Go's url.ParseQuery ('+' is a space). Caller frees. */
static char *url_decode(const char *s, size_t n) {
    char *o = malloc(n + 1), *w = o;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n + 0 + 1 && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            *w++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            *w++ = s[i] == '+' ? ' ' : s[i];
        }
    }
    *w = 0;
    return o;
}

/* The decoded values of key in the request line's query, in order (at most max). */
static int query_values(const char *request_line, const char *key, char **vals, int max) {
    const char *q = strchr(request_line, '?');
    const char *end = strrchr(request_line, ' ');
    int n = 0;
    size_t kl = strlen(key);
    if (!q || !end) return 0;
    for (const char *p = q + 1; p < end;) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        if ((size_t)(e - p) > kl && !strncmp(p, key, kl) && p[kl] == '=' && n < max)
            vals[n++] = url_decode(p + kl + 1, (size_t)(e - p) - kl - 1);
        p = e + 1;
    }
    return n;
}

/* ---- the demultiplexer ------------------------------------------------------------- */

TEST(demux_reassembles_two_fragments_split_anywhere) {
    static const unsigned char msg[] = "\x01hello, fragmented world";
    size_t len = sizeof(msg) - 1;
    for (size_t k = 0; k <= len; k++) {
        struct sink s;
        struct kube_exec_demux *d = malloc(sizeof(*d));
        sink_init(&s);
        kube_exec_demux_init(d, sink_out, sink_err, &s);
        CHECK_INT(kube_exec_demux_feed(d, msg, k, 1, 0), 0);
        CHECK_INT(kube_exec_demux_feed(d, msg + k, len - k, 0, 1), 0);
        CHECK_STR(sink_text(&s.out), "hello, fragmented world");
        CHECK_INT(s.err.len, 0);
        CHECK_INT(d->in_message, 0);
        free(d);
        sink_free(&s);
    }
}

TEST(demux_reassembles_three_fragments_split_anywhere) {
    static const unsigned char msg[] = "\x02" "abcdefghij";
    size_t len = sizeof(msg) - 1;
    struct kube_exec_demux *d = malloc(sizeof(*d));
    for (size_t i = 0; i <= len; i++)
        for (size_t j = i; j <= len; j++) {
            struct sink s;
            sink_init(&s);
            kube_exec_demux_init(d, sink_out, sink_err, &s);
            CHECK_INT(kube_exec_demux_feed(d, msg, i, 1, 0), 0);
            CHECK_INT(kube_exec_demux_feed(d, msg + i, j - i, 0, 0), 0);
            CHECK_INT(kube_exec_demux_feed(d, msg + j, len - j, 0, 1), 0);
            CHECK_STR(sink_text(&s.err), "abcdefghij");
            CHECK_INT(s.out.len, 0);
            sink_free(&s);
        }
    free(d);
}

TEST(demux_status_split_anywhere) {
    static const unsigned char msg[] = "\x03{\"status\":\"Success\"}";
    size_t len = sizeof(msg) - 1;
    struct kube_exec_demux *d = malloc(sizeof(*d));
    for (size_t k = 0; k <= len; k++) {
        kube_exec_demux_init(d, NULL, NULL, NULL);
        CHECK_INT(kube_exec_demux_feed(d, msg, k, 1, 0), 0);
        CHECK_INT(kube_exec_demux_feed(d, msg + k, len - k, 0, 1), 0);
        CHECK_STR(d->status, "{\"status\":\"Success\"}");
        CHECK_INT(d->channel, KUBE_EXEC_ERROR);
        CHECK_INT(d->status_overflow, 0);
    }
    free(d);
}

TEST(demux_channel_byte_only_in_first_fragment) {
    /* The continuation starts with 0x02: payload, not a channel switch. */
    struct sink s;
    struct kube_exec_demux *d = malloc(sizeof(*d));
    sink_init(&s);
    kube_exec_demux_init(d, sink_out, sink_err, &s);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x01" "ab", 3, 1, 0), 0);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x02" "cd", 3, 0, 1), 0);
    CHECK_INT(s.out.len, 5);
    CHECK(s.out.len == 5 && !memcmp(s.out.data, "ab\x02" "cd", 5));
    CHECK_INT(s.err.len, 0);
    sink_free(&s);
    free(d);
}

TEST(demux_id_only_message_delivers_nothing) {
    struct sink s;
    struct kube_exec_demux *d = malloc(sizeof(*d));
    sink_init(&s);
    kube_exec_demux_init(d, sink_out, sink_err, &s);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x01", 1, 1, 1), 0);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x03", 1, 1, 1), 0);
    CHECK_INT(s.out_calls, 0);
    CHECK_INT(d->status_len, 0);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x01x", 2, 1, 1), 0);
    CHECK_STR(sink_text(&s.out), "x");
    sink_free(&s);
    free(d);
}

TEST(demux_empty_first_fragment_defers_the_channel_byte) {
    struct sink s;
    struct kube_exec_demux *d = malloc(sizeof(*d));
    sink_init(&s);
    kube_exec_demux_init(d, sink_out, sink_err, &s);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"", 0, 1, 0), 0);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x02" "late", 5, 0, 1), 0);
    CHECK_STR(sink_text(&s.err), "late");
    /* An entirely empty message is ignored. */
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"", 0, 1, 1), 0);
    CHECK_INT(s.out_calls + s.err_calls, 1);
    sink_free(&s);
    free(d);
}

TEST(demux_unknown_channel_is_an_error) {
    struct kube_exec_demux *d = malloc(sizeof(*d));
    kube_exec_demux_init(d, NULL, NULL, NULL);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x09x", 2, 1, 1), -1);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x05", 1, 1, 1), -1);
    /* a continuation without a first fragment */
    kube_exec_demux_init(d, NULL, NULL, NULL);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x01x", 2, 0, 1), -1);
    free(d);
}

TEST(demux_ignores_stdin_resize_and_close_channels) {
    struct sink s;
    struct kube_exec_demux *d = malloc(sizeof(*d));
    sink_init(&s);
    kube_exec_demux_init(d, sink_out, sink_err, &s);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x00x", 2, 1, 1), 0);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x04{}", 3, 1, 1), 0);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\xff\x00", 2, 1, 1), 0);
    CHECK_INT(s.out_calls + s.err_calls, 0);
    CHECK_INT(d->status_len, 0);
    sink_free(&s);
    free(d);
}

TEST(demux_status_is_bounded) {
    struct kube_exec_demux *d = malloc(sizeof(*d));
    unsigned char chunk[4096];
    memset(chunk, 'a', sizeof(chunk));
    kube_exec_demux_init(d, NULL, NULL, NULL);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x03", 1, 1, 0), 0);
    for (int i = 0; i < 40; i++) CHECK_INT(kube_exec_demux_feed(d, chunk, sizeof(chunk), 0, i == 39), 0);
    CHECK_INT(d->status_len, sizeof(d->status) - 1);
    CHECK_INT(d->status_overflow, 1);
    CHECK_INT(d->status[sizeof(d->status) - 1], 0);
    free(d);
}

TEST(demux_callback_abort_value_is_returned) {
    struct sink s;
    struct kube_exec_demux *d = malloc(sizeof(*d));
    sink_init(&s);
    s.abort_with = 7;
    kube_exec_demux_init(d, sink_out, sink_err, &s);
    CHECK_INT(kube_exec_demux_feed(d, (const unsigned char *)"\x01x", 2, 1, 1), 7);
    sink_free(&s);
    free(d);
}

/* ---- status verdicts ------------------------------------------------------------------ */

TEST(status_success_is_exit_0) {
    const char *j = "{\"metadata\":{},\"status\":\"Success\"}";
    int code = -1;
    char msg[128];
    CHECK_INT(kube_exec_parse_status(j, strlen(j), &code, msg, sizeof(msg)), 0);
    CHECK_INT(code, 0);
}

TEST(status_nonzero_exit_code) {
    const char *j = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero exit code\","
                    "\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"3\"}]}}";
    int code = -1;
    char msg[128];
    CHECK_INT(kube_exec_parse_status(j, strlen(j), &code, msg, sizeof(msg)), 0);
    CHECK_INT(code, 3);
    const char *j255 = "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":"
                       "[{\"reason\":\"Other\",\"message\":\"x\"},{\"reason\":\"ExitCode\",\"message\":\"255\"}]}}";
    CHECK_INT(kube_exec_parse_status(j255, strlen(j255), &code, msg, sizeof(msg)), 0);
    CHECK_INT(code, 255);
}

TEST(status_failure_reports_its_message) {
    const char *j = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"container \\\"nope\\\" not found in pod \\\"p\\\"\","
                    "\"reason\":\"NotFound\",\"code\":404}";
    int code = -1;
    char msg[128];
    CHECK_INT(kube_exec_parse_status(j, strlen(j), &code, msg, sizeof(msg)), -1);
    CHECK_STR(msg, "container \"nope\" not found in pod \"p\"");
    CHECK_INT(code, -1);
    const char *r = "{\"status\":\"Failure\",\"reason\":\"InternalError\"}";
    CHECK_INT(kube_exec_parse_status(r, strlen(r), &code, msg, sizeof(msg)), -1);
    CHECK_STR(msg, "InternalError");
}

TEST(status_malformed_or_incomplete) {
    int code = -1;
    char msg[128];
    CHECK_INT(kube_exec_parse_status("{\"status\":", 10, &code, msg, sizeof(msg)), -1);
    CHECK(strstr(msg, "malformed") != NULL);
    CHECK_INT(kube_exec_parse_status("", 0, &code, msg, sizeof(msg)), -1);
    CHECK_INT(kube_exec_parse_status("[1]", 3, &code, msg, sizeof(msg)), -1);
    const char *nocode = "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"message\":\"exit?\"}";
    CHECK_INT(kube_exec_parse_status(nocode, strlen(nocode), &code, msg, sizeof(msg)), -1);
    CHECK_STR(msg, "exit?");
    const char *bad = "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":"
                      "[{\"reason\":\"ExitCode\",\"message\":\"3x\"}]}}";
    CHECK_INT(kube_exec_parse_status(bad, strlen(bad), &code, msg, sizeof(msg)), -1);
    CHECK_INT(code, -1);
    CHECK_INT(kube_exec_parse_status("{}", 2, &code, NULL, 0), -1);
}

/* ---- sessions against the scripted peer ------------------------------------------------ */

static const char *const SH_ARGV[] = {"sh", "-c", "echo hi"};

TEST(session_v4_output_fragments_exit_code_and_argv) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BASIC), 0);
    struct kube_client *c = peer_client(&p);
    static const char *const argv[] = {
        "printf", "%s\\n", "two words", "quote\"s 'single'", "a&b=c?d#e", "100% + plus", "", "ünï€ode ✓", "semi;colon/slash",
    };
    struct sink s;
    sink_init(&s);
    struct kube_exec_options o = {
        .namespace_ = "ns-1", .pod = "p", .container = "main", .argv = argv, .argc = sizeof(argv) / sizeof(argv[0]),
        .on_stdout = sink_out, .on_stderr = sink_err, .ud = &s, .timeout_ms = 10000,
    };
    struct kube_exec_result r;
    int rc = kube_exec(c, &o, &r);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_INT(r.exit_code, 3);
    CHECK_INT(r.http_status, 101);
    CHECK_STR(r.protocol, "v4.channel.k8s.io");
    CHECK_STR(sink_text(&s.out), "hello\nfragmented\n");
    CHECK_STR(sink_text(&s.err), "oops\n");
    CHECK_STR(p.offered, "v5.channel.k8s.io, v4.channel.k8s.io");
    CHECK_STR(p.authorization, "Bearer t0ken");
    CHECK_INT(p.upgrades, 1);
    CHECK_INT(p.plain_gets, 0);
    CHECK(p.request_line && !strncmp(p.request_line, "GET /api/v1/namespaces/ns-1/pods/p/exec?", 40));
    char *vals[16];
    int n = p.request_line ? query_values(p.request_line, "command", vals, 16) : 0;
    CHECK_INT(n, (int)o.argc);
    for (int i = 0; i < n; i++) {
        if (i < (int)o.argc) CHECK_STR(vals[i], argv[i]);
        free(vals[i]);
    }
    const char *keys[] = {"container", "stdin", "stdout", "stderr", "tty"};
    const char *want[] = {"main", "false", "true", "true", "false"};
    for (int k = 0; k < 5; k++) {
        n = p.request_line ? query_values(p.request_line, keys[k], vals, 16) : 0;
        CHECK_INT(n, 1);
        if (n == 1) CHECK_STR(vals[0], want[k]);
        for (int i = 0; i < n; i++) free(vals[i]);
    }
    sink_free(&s);
    kube_client_free(c);
    peer_stop(&p);
}

/* Length of the URL in a recorded request line "GET <url> HTTP/1.1". */
static size_t url_len(const char *request_line) { return request_line ? strlen(request_line) - 4 - 9 : 0; }

TEST(session_long_argv_up_to_the_limit_arrives_exactly) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BASIC), 0);
    struct kube_client *c = peer_client(&p);
    const char *argv[] = {"sh", "-c", "x"};
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = argv, .argc = 3, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), 0);
    size_t base = url_len(p.request_line);   /* with a 1-byte script */
    /* A script of reserved characters (3 bytes each) and spaces ('+'), sized so the URL is
     * exactly 2032 bytes, the most a libwebsockets 4.1 request line holds; then one more. */
    for (int extra = 0; extra <= 1; extra++) {
        size_t want = 2032 + (size_t)extra - base + 1, n = 0;   /* encoded bytes of the script */
        char *arg = malloc(want + 1);
        size_t enc = 0;
        while (enc < want) {
            if (want - enc >= 3 && n % 2 == 0) {
                arg[n] = "&%\"#;=+<"[n % 8];
                enc += 3;
            } else {
                arg[n] = ' ';
                enc += 1;
            }
            n++;
        }
        arg[n] = 0;
        argv[2] = arg;
        int before = p.upgrades;
        int rc = kube_exec(c, &o, &r);
        if (!extra) {
            CHECK_INT(rc, 0);
            if (rc) fprintf(stderr, "    err: %s\n", r.err);
            CHECK_INT(url_len(p.request_line), 2032);
            char *vals[4];
            int k = p.request_line ? query_values(p.request_line, "command", vals, 4) : 0;
            CHECK_INT(k, 3);
            if (k == 3) CHECK(strcmp(vals[2], arg) == 0);
            for (int i = 0; i < k; i++) free(vals[i]);
        } else {
            CHECK_INT(rc, -1);
            CHECK(strstr(r.err, "too long") != NULL);
            CHECK_INT(p.upgrades, before);   /* refused before connecting */
        }
        free(arg);
    }
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_refused_upgrade_reports_status_and_message) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_FORBIDDEN), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK_INT(r.http_status, 403);
    CHECK_INT(r.exit_code, -1);
    CHECK(strstr(r.err, "403") != NULL);
    CHECK(strstr(r.err, "cannot create resource \"pods/exec\"") != NULL);
    if (!strstr(r.err, "pods/exec")) fprintf(stderr, "    err: %s\n", r.err);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_rejects_a_protocol_that_was_not_offered) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BAD_PROTOCOL), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "not offered") != NULL);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_rejects_an_upgrade_without_protocol) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_NO_PROTOCOL), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "not offered") != NULL);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_only_the_offered_protocols_are_sent) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BASIC), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 10000,
                                  .protocols = "v4.channel.k8s.io"};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), 0);
    CHECK_STR(p.offered, "v4.channel.k8s.io");
    CHECK_STR(r.protocol, "v4.channel.k8s.io");
    /* no output callbacks at all: stdout is still requested (one stream is required) */
    char *vals[2];
    int n = p.request_line ? query_values(p.request_line, "stdout", vals, 2) : 0;
    CHECK_INT(n, 1);
    if (n) CHECK_STR(vals[0], "true");
    for (int i = 0; i < n; i++) free(vals[i]);
    kube_client_free(c);
    peer_stop(&p);
}

static ssize_t empty_stdin(void *ud, char *buf, size_t cap) { return 0; }

TEST(session_tty_only_with_stdin_and_merges_stderr) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BASIC), 0);
    struct kube_client *c = peer_client(&p);
    struct sink s;
    sink_init(&s);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .on_stdout = sink_out,
                                  .on_stderr = sink_err, .ud = &s, .tty = 1, .timeout_ms = 10000};
    struct kube_exec_result r;
    const char *keys[] = {"tty", "stderr", "stdin"};
    const char *without_stdin[] = {"false", "true", "false"};
    const char *with_stdin[] = {"true", "false", "true"};
    for (int round = 0; round < 2; round++) {
        o.read_stdin = round ? empty_stdin : NULL;
        CHECK_INT(kube_exec(c, &o, &r), 0);
        for (int k = 0; k < 3; k++) {
            char *vals[2];
            int n = p.request_line ? query_values(p.request_line, keys[k], vals, 2) : 0;
            CHECK_INT(n, 1);
            if (n) CHECK_STR(vals[0], round ? with_stdin[k] : without_stdin[k]);
            for (int i = 0; i < n; i++) free(vals[i]);
        }
    }
    sink_free(&s);
    kube_client_free(c);
    peer_stop(&p);
}

struct source {
    const unsigned char *data;
    size_t len, pos, max_cap;
};

static ssize_t source_read(void *ud, char *buf, size_t cap) {
    struct source *s = ud;
    if (cap > s->max_cap) s->max_cap = cap;
    size_t n = s->len - s->pos < cap ? s->len - s->pos : cap;
    memcpy(buf, s->data + s->pos, n);
    s->pos += n;
    return (ssize_t)n;
}

struct echo_ud {
    struct sink sink;
    struct source src;
};

static int echo_out(void *ud, const char *p, size_t n) { return sink_out(&((struct echo_ud *)ud)->sink, p, n); }
static ssize_t echo_in(void *ud, char *buf, size_t cap) { return source_read(&((struct echo_ud *)ud)->src, buf, cap); }

static unsigned char *pattern(size_t n) {
    unsigned char *b = malloc(n);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (unsigned char)(x >> 16);
    }
    return b;
}

TEST(session_v5_stdin_round_trip_chunks_and_close_signal) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_ECHO), 0);
    p.support_v5 = 1;
    struct kube_client *c = peer_client(&p);
    size_t n = 300000;
    unsigned char *data = pattern(n);
    struct echo_ud u;
    sink_init(&u.sink);
    u.src = (struct source){data, n, 0, 0};
    static const char *const cat[] = {"cat"};
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = cat, .argc = 1, .on_stdout = echo_out,
                                  .read_stdin = echo_in, .ud = &u, .timeout_ms = 10000};
    struct kube_exec_result r;
    int rc = kube_exec(c, &o, &r);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", r.err);
    CHECK_STR(r.protocol, "v5.channel.k8s.io");
    CHECK_INT(r.exit_code, 0);
    CHECK_INT(u.sink.out.len, n);
    CHECK(u.sink.out.len == n && !memcmp(u.sink.out.data, data, n));
    CHECK_INT(peer_seen_size(&p, &p.stdin_bytes), n);
    CHECK(p.stdin_max_message <= 32 * 1024);
    CHECK(u.src.max_cap <= 32 * 1024);
    CHECK_INT(p.stdin_closed, 1);
    CHECK_INT(p.unmasked_frames, 0);
    char *vals[2];
    int k = p.request_line ? query_values(p.request_line, "stdin", vals, 2) : 0;
    CHECK_INT(k, 1);
    if (k) CHECK_STR(vals[0], "true");
    for (int i = 0; i < k; i++) free(vals[i]);
    sink_free(&u.sink);
    free(data);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_v4_stdin_streams_without_close_signal) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_ECHO), 0);
    size_t n = 100000;
    p.echo_expect = n;
    struct kube_client *c = peer_client(&p);
    unsigned char *data = pattern(n);
    struct echo_ud u;
    sink_init(&u.sink);
    u.src = (struct source){data, n, 0, 0};
    static const char *const cat[] = {"cat"};
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = cat, .argc = 1, .on_stdout = echo_out,
                                  .read_stdin = echo_in, .ud = &u, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), 0);
    CHECK_STR(r.protocol, "v4.channel.k8s.io");
    CHECK(u.sink.out.len == n && !memcmp(u.sink.out.data, data, n));
    CHECK_INT(p.stdin_closed, 0);
    sink_free(&u.sink);
    free(data);
    kube_client_free(c);
    peer_stop(&p);
}

/* ---- stdin from a file descriptor (use_stdin_fd) ---------------------------------------- */

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A session run in a thread, its stdout watched from the test's thread. */
struct fd_session {
    struct kube_client *c;
    const char *const *argv;
    size_t argc;
    int fd, tty;
    long timeout_ms;
    pthread_mutex_t mu;
    struct dynbuf out;               /* under mu */
    _Atomic int saw_hello;           /* stdout so far contains "hello" */
    _Atomic int done;
    int rc;
    int64_t took_ms;
    struct kube_exec_result r;
};

static int fd_session_out(void *ud, const char *p, size_t n) {
    struct fd_session *f = ud;
    pthread_mutex_lock(&f->mu);
    int rc = dynbuf_append(&f->out, p, n) == 0 ? 0 : 1;
    if (f->out.len >= 5 && memmem(f->out.data, f->out.len, "hello", 5)) f->saw_hello = 1;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static void fd_session_init(struct fd_session *f, struct kube_client *c, int fd) {
    static const char *const cat[] = {"cat"};
    memset(f, 0, sizeof(*f));
    f->c = c;
    f->argv = cat;
    f->argc = 1;
    f->fd = fd;
    f->timeout_ms = 10000;
    pthread_mutex_init(&f->mu, NULL);
    dynbuf_init(&f->out, 64u << 20);
}

static void fd_session_free(struct fd_session *f) {
    dynbuf_free(&f->out);
    pthread_mutex_destroy(&f->mu);
}

static void *fd_session_run(void *arg) {
    struct fd_session *f = arg;
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = f->argv, .argc = f->argc,
                                  .on_stdout = fd_session_out, .ud = f, .use_stdin_fd = 1, .stdin_fd = f->fd,
                                  .tty = f->tty, .timeout_ms = f->timeout_ms};
    int64_t t0 = clock_mono_ms();
    f->rc = kube_exec(f->c, &o, &f->r);
    f->took_ms = clock_mono_ms() - t0;
    f->done = 1;
    return NULL;
}

/* Wait (at most ms) until *flag is set. */
static int wait_flag(_Atomic int *flag, int ms) {
    for (int waited = 0; !*flag && waited < ms; waited += 5) sleep_ms(5);
    return *flag ? 0 : -1;
}

/* The bug this mode fixes: with a blocking read of stdin on the event loop, "hello" would
 * only come out once the test wrote something. Here nothing is written until "hello" has
 * reached on_stdout; then "x" and EOF, echoed back, and (v5) the close signal. The same
 * with a non-blocking fd, and under v4 (no close signal: the peer ends after 1 byte). */
TEST(session_fd_stdin_output_flows_while_stdin_is_idle) {
    for (int round = 0; round < 3; round++) {
        int v5 = round != 2, nonblock = round == 1;
        struct peer p;
        CHECK_INT(peer_start(&p, PEER_ECHO), 0);
        p.support_v5 = v5;
        p.greeting = "hello";
        p.echo_expect = 1;
        struct kube_client *c = peer_client(&p);
        int pfd[2];
        CHECK_INT(pipe(pfd), 0);
        if (nonblock) fcntl(pfd[0], F_SETFL, fcntl(pfd[0], F_GETFL) | O_NONBLOCK);
        struct fd_session f;
        fd_session_init(&f, c, pfd[0]);
        pthread_t t;
        CHECK_INT(pthread_create(&t, NULL, fd_session_run, &f), 0);
        int saw = wait_flag(&f.saw_hello, 5000);
        CHECK_INT(saw, 0);                   /* before anything was written to the pipe */
        if (saw) fprintf(stderr, "    round %d: no \"hello\" while stdin was idle (done=%d)\n", round, (int)f.done);
        CHECK_INT(f.done, 0);                /* the session waits for its stdin */
        CHECK_INT(write(pfd[1], "x", 1), 1);
        close(pfd[1]);
        pthread_join(t, NULL);
        CHECK_INT(f.rc, 0);
        if (f.rc) fprintf(stderr, "    round %d err: %s\n", round, f.r.err);
        CHECK_INT(f.r.exit_code, 0);
        CHECK_STR(f.r.protocol, v5 ? "v5.channel.k8s.io" : "v4.channel.k8s.io");
        CHECK_STR(sink_text(&f.out), "hellox");
        CHECK_INT(peer_seen_size(&p, &p.stdin_bytes), 1);
        CHECK_INT(p.stdin_closed, v5);
        char *vals[2];
        int k = p.request_line ? query_values(p.request_line, "stdin", vals, 2) : 0;
        CHECK_INT(k, 1);
        if (k) CHECK_STR(vals[0], "true");
        for (int i = 0; i < k; i++) free(vals[i]);
        close(pfd[0]);
        fd_session_free(&f);
        kube_client_free(c);
        peer_stop(&p);
    }
}

struct pipe_writer {
    int fd;
    const unsigned char *data;
    size_t len;
};

/* Write it all in uneven pieces, then close: EOF for the session. */
static void *pipe_writer_run(void *arg) {
    struct pipe_writer *w = arg;
    size_t off = 0, piece = 1;
    while (off < w->len) {
        size_t n = piece < w->len - off ? piece : w->len - off;
        ssize_t k = write(w->fd, w->data + off, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        off += (size_t)k;
        piece = piece * 7 % 100003 + 1;
    }
    close(w->fd);
    return NULL;
}

/* Stdin through a pipe (written by a thread, so the reader fills and waits on its slots)
 * and from a regular file: byte for byte, in messages of at most 32 KiB, closed at EOF. */
TEST(session_fd_stdin_round_trip_and_eof_closes_v5) {
    size_t n = 500000;
    unsigned char *data = pattern(n);
    for (int round = 0; round < 2; round++) {
        struct peer p;
        CHECK_INT(peer_start(&p, PEER_ECHO), 0);
        p.support_v5 = 1;
        struct kube_client *c = peer_client(&p);
        int fd = -1, pfd[2] = {-1, -1};
        pthread_t wt;
        struct pipe_writer w;
        if (round == 0) {
            CHECK_INT(pipe(pfd), 0);
            fd = pfd[0];
            w = (struct pipe_writer){pfd[1], data, n};
            CHECK_INT(pthread_create(&wt, NULL, pipe_writer_run, &w), 0);
        } else {
            FILE *tf = tmpfile();
            CHECK(tf != NULL);
            fd = dup(fileno(tf));
            fclose(tf);
            CHECK_INT(write(fd, data, n), (long long)n);
            lseek(fd, 0, SEEK_SET);
        }
        struct fd_session f;
        fd_session_init(&f, c, fd);
        fd_session_run(&f);
        if (round == 0) pthread_join(wt, NULL);
        CHECK_INT(f.rc, 0);
        if (f.rc) fprintf(stderr, "    round %d err: %s\n", round, f.r.err);
        CHECK_INT(f.r.exit_code, 0);
        CHECK_INT(f.out.len, n);
        CHECK(f.out.len == n && !memcmp(f.out.data, data, n));
        CHECK_INT(peer_seen_size(&p, &p.stdin_bytes), n);
        CHECK(p.stdin_max_message <= 32 * 1024);
        CHECK_INT(p.stdin_closed, 1);
        CHECK_INT(p.unmasked_frames, 0);
        close(fd);
        fd_session_free(&f);
        kube_client_free(c);
        peer_stop(&p);
    }
    /* an empty stdin: the close signal at once */
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_ECHO), 0);
    p.support_v5 = 1;
    struct kube_client *c = peer_client(&p);
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct fd_session f;
    fd_session_init(&f, c, fd);
    fd_session_run(&f);
    CHECK_INT(f.rc, 0);
    CHECK_INT(peer_seen_size(&p, &p.stdin_bytes), 0);
    CHECK_INT(p.stdin_closed, 1);
    close(fd);
    fd_session_free(&f);
    kube_client_free(c);
    peer_stop(&p);
    free(data);
}

/* The command ends (or the session times out) while stdin is open and has nothing to
 * read: kube_exec returns at once, the reader thread stopped without needing input. */
TEST(session_fd_stdin_idle_does_not_hold_up_the_end) {
    for (int round = 0; round < 2; round++) {
        struct peer p;
        CHECK_INT(peer_start(&p, round ? PEER_SILENT : PEER_BASIC), 0);
        struct kube_client *c = peer_client(&p);
        int pfd[2];
        CHECK_INT(pipe(pfd), 0);
        struct fd_session f;
        fd_session_init(&f, c, pfd[0]);
        f.argv = SH_ARGV;
        f.argc = 3;
        if (round) f.timeout_ms = 300;
        fd_session_run(&f);
        if (round == 0) {
            CHECK_INT(f.rc, 0);
            CHECK_INT(f.r.exit_code, 3);
            CHECK_STR(sink_text(&f.out), "hello\nfragmented\n");
            CHECK(f.took_ms < 1000);
        } else {
            CHECK_INT(f.rc, -1);
            CHECK(strstr(f.r.err, "timed out") != NULL);
            CHECK(f.took_ms >= 250 && f.took_ms < 1300);
        }
        if (f.took_ms >= 1000 + 300 * round)
            fprintf(stderr, "    round %d took %lld ms\n", round, (long long)f.took_ms);
        /* the pipe was not read from: what comes later is still there for its owner */
        CHECK_INT(write(pfd[1], "y", 1), 1);
        char b = 0;
        CHECK_INT(read(pfd[0], &b, 1), 1);
        CHECK_INT(b, 'y');
        close(pfd[0]);
        close(pfd[1]);
        fd_session_free(&f);
        kube_client_free(c);
        peer_stop(&p);
    }
}

/* A read error on the fd (a directory) fails the session with the reason. */
TEST(session_fd_stdin_read_error_fails_the_session) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_ECHO), 0);
    p.support_v5 = 1;
    struct kube_client *c = peer_client(&p);
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(fd >= 0);
    struct fd_session f;
    fd_session_init(&f, c, fd);
    fd_session_run(&f);
    CHECK_INT(f.rc, -1);
    CHECK(strstr(f.r.err, "reading stdin") != NULL);
    if (!strstr(f.r.err, "reading stdin")) fprintf(stderr, "    err: %s\n", f.r.err);
    CHECK(f.took_ms < 5000);
    close(fd);
    fd_session_free(&f);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_fd_stdin_argument_checks_and_tty) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BASIC), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_result r;
    int pfd[2];
    CHECK_INT(pipe(pfd), 0);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 10000,
                                  .use_stdin_fd = 1, .stdin_fd = -1};
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "stdin_fd -1") != NULL);
    int closed = dup(pfd[0]);
    close(closed);
    o.stdin_fd = closed;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "not an open file descriptor") != NULL);
    o.stdin_fd = pfd[0];
    o.read_stdin = empty_stdin;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "both") != NULL);
    CHECK_INT(p.upgrades, 0);
    /* stdin_fd alone (as a zero-initialised struct has fd 0) is not stdin */
    o.read_stdin = NULL;
    o.use_stdin_fd = 0;
    o.stdin_fd = 0;
    o.tty = 1;
    CHECK_INT(kube_exec(c, &o, &r), 0);
    const char *keys[] = {"stdin", "tty"};
    const char *without[] = {"false", "false"}, *with[] = {"true", "true"};
    for (int round = 0; round < 2; round++) {
        if (round) {
            o.use_stdin_fd = 1;
            o.stdin_fd = pfd[0];
            CHECK_INT(kube_exec(c, &o, &r), 0);   /* ends with stdin idle */
        }
        for (int k = 0; k < 2; k++) {
            char *vals[2];
            int n = p.request_line ? query_values(p.request_line, keys[k], vals, 2) : 0;
            CHECK_INT(n, 1);
            if (n) CHECK_STR(vals[0], round ? with[k] : without[k]);
            for (int i = 0; i < n; i++) free(vals[i]);
        }
    }
    close(pfd[0]);
    close(pfd[1]);
    kube_client_free(c);
    peer_stop(&p);
}

struct fd_par {
    struct kube_client *c;
    unsigned char *data;
    size_t len;
    int fd;
    struct fd_session f;
    pthread_t t;
};

/* Several sessions at once, each with its own stdin file and reader thread. */
TEST(session_fd_stdin_concurrent_sessions) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_ECHO), 0);
    p.support_v5 = 1;
    struct kube_client *c = peer_client(&p);
    enum { N = 4 };
    struct fd_par a[N];
    for (int i = 0; i < N; i++) {
        a[i].len = 40000 + 30000 * (size_t)i;
        a[i].data = pattern(a[i].len);
        for (size_t k = 0; k < a[i].len; k++) a[i].data[k] ^= (unsigned char)i;
        FILE *tf = tmpfile();
        a[i].fd = tf ? dup(fileno(tf)) : -1;
        if (tf) fclose(tf);
        CHECK_INT(write(a[i].fd, a[i].data, a[i].len), (long long)a[i].len);
        lseek(a[i].fd, 0, SEEK_SET);
        fd_session_init(&a[i].f, c, a[i].fd);
        CHECK_INT(pthread_create(&a[i].t, NULL, fd_session_run, &a[i].f), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(a[i].t, NULL);
        CHECK_INT(a[i].f.rc, 0);
        CHECK(a[i].f.out.len == a[i].len && !memcmp(a[i].f.out.data, a[i].data, a[i].len));
        close(a[i].fd);
        free(a[i].data);
        fd_session_free(&a[i].f);
    }
    CHECK_INT(p.upgrades, N);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_timeout) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_SILENT), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 300};
    struct kube_exec_result r;
    int64_t t0 = clock_mono_ms();
    CHECK_INT(kube_exec(c, &o, &r), -1);
    int64_t took = clock_mono_ms() - t0;
    CHECK(strstr(r.err, "timed out") != NULL);
    CHECK(took >= 250 && took < 3000);
    if (took < 250 || took >= 3000) fprintf(stderr, "    took %lld ms: %s\n", (long long)took, r.err);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_failure_status_is_an_error_with_message) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_FAILURE), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .container = "nope", .argv = SH_ARGV, .argc = 3,
                                  .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "container \"nope\" not found") != NULL);
    CHECK_INT(r.exit_code, -1);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_unknown_channel_fails) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_UNKNOWN_CHANNEL), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "unknown channel 7") != NULL);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_close_without_status_fails) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_NO_STATUS), 0);
    struct kube_client *c = peer_client(&p);
    struct sink s;
    sink_init(&s);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .on_stdout = sink_out,
                                  .ud = &s, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "before the command's status") != NULL);
    CHECK(strstr(r.err, "bye") != NULL);
    CHECK_STR(sink_text(&s.out), "partial");
    sink_free(&s);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_callback_abort) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BASIC), 0);
    struct kube_client *c = peer_client(&p);
    struct sink s;
    sink_init(&s);
    s.abort_with = 1;
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .on_stdout = sink_out,
                                  .ud = &s, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(strstr(r.err, "aborted") != NULL);
    CHECK_INT(s.out_calls, 1);
    sink_free(&s);
    kube_client_free(c);
    peer_stop(&p);
}

struct counter {
    size_t bytes;
    int bad;
    size_t biggest;
};

static int count_out(void *ud, const char *p, size_t n) {
    struct counter *k = ud;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] != (unsigned char)((k->bytes + i) % 251)) k->bad = 1;
    k->bytes += n;
    if (n > k->biggest) k->biggest = n;
    return 0;
}

TEST(session_large_output_streams_in_bounded_pieces) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BIG), 0);
    p.big_bytes = 20u << 20;
    struct kube_client *c = peer_client(&p);
    struct counter k = {0, 0, 0};
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .on_stdout = count_out,
                                  .ud = &k, .timeout_ms = 30000};
    struct kube_exec_result r;
    if (kube_exec(c, &o, &r) != 0) {
        CHECK(0);
        fprintf(stderr, "  exec failed: %s\n", r.err);
    }
    CHECK_INT(k.bytes, p.big_bytes);
    CHECK_INT(k.bad, 0);
    CHECK(k.biggest <= 64 * 1024);   /* never more than one receive buffer at once */
    CHECK_INT(r.exit_code, 0);
    kube_client_free(c);
    peer_stop(&p);
    /* Pings between fragments were answered with their payload, in masked frames. */
    CHECK_INT(p.pings_sent, 3);
    CHECK_INT(p.pongs, 3);
    CHECK_INT(p.unmasked_frames, 0);
}

struct par {
    struct kube_client *c;
    int idx, rc, code;
    char out[64], err[64];
    struct sink s;
};

static void *par_run(void *arg) {
    struct par *a = arg;
    char ns[32];
    snprintf(ns, sizeof(ns), "ns-%d", a->idx);
    sink_init(&a->s);
    struct kube_exec_options o = {.namespace_ = ns, .pod = "p", .argv = SH_ARGV, .argc = 3, .on_stdout = sink_out,
                                  .on_stderr = sink_err, .ud = &a->s, .timeout_ms = 20000};
    struct kube_exec_result r;
    a->rc = kube_exec(a->c, &o, &r);
    a->code = r.exit_code;
    snprintf(a->out, sizeof(a->out), "%s", sink_text(&a->s.out));
    snprintf(a->err, sizeof(a->err), "%s", sink_text(&a->s.err));
    sink_free(&a->s);
    return NULL;
}

TEST(session_concurrent_sessions_in_threads) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BASIC), 0);
    struct kube_client *c = peer_client(&p);
    enum { N = 8 };
    struct par a[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        memset(&a[i], 0, sizeof(a[i]));
        a[i].c = c;
        a[i].idx = i;
        CHECK_INT(pthread_create(&t[i], NULL, par_run, &a[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(a[i].rc, 0);
        CHECK_INT(a[i].code, 3);
        CHECK_STR(a[i].out, "hello\nfragmented\n");
        CHECK_STR(a[i].err, "oops\n");
    }
    CHECK_INT(p.upgrades, N);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_connection_refused) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_SILENT), 0);
    struct kube_client *c = peer_client(&p);
    peer_stop(&p);   /* nobody listens there any more */
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 5000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(r.err[0] != 0);
    CHECK(r.http_status == 0);
    kube_client_free(c);
}

TEST(session_argument_checks) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_SILENT), 0);
    struct kube_client *c = peer_client(&p);
    struct kube_exec_result r;
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 0};
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK(r.err[0] != 0);
    const char *withnull[] = {"a", NULL};
    o.argv = withnull;
    o.argc = 2;
    CHECK_INT(kube_exec(c, &o, &r), -1);
    o.argv = SH_ARGV;
    o.argc = 3;
    o.pod = "";
    CHECK_INT(kube_exec(c, &o, &r), -1);
    CHECK_INT(p.upgrades, 0);
    kube_client_free(c);
    peer_stop(&p);
}

TEST(session_server_url_prefix_and_unusable_urls) {
    struct peer p;
    CHECK_INT(peer_start(&p, PEER_BASIC), 0);
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/k8s/clusters/c-1/", p.port);
    struct kube_client *c = url_client(url);
    struct kube_exec_options o = {.namespace_ = "ns", .pod = "p", .argv = SH_ARGV, .argc = 3, .timeout_ms = 10000};
    struct kube_exec_result r;
    CHECK_INT(kube_exec(c, &o, &r), 0);
    static const char want[] = "GET /k8s/clusters/c-1/api/v1/namespaces/ns/pods/p/exec?";
    CHECK(p.request_line && !strncmp(p.request_line, want, sizeof(want) - 1));
    kube_client_free(c);
    peer_stop(&p);
    static const char *const bad[] = {"ftp://127.0.0.1", "http://127.0.0.1:99999", "https://", "http://[::1", "127.0.0.1:6443"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = url_client(bad[i]);
        CHECK_INT(kube_exec(c, &o, &r), -1);
        CHECK(strstr(r.err, "server URL") != NULL);
        kube_client_free(c);
    }
}
