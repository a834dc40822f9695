/* tests/unit/test_wsstream.c — kube/wsstream on its own, against a scripted WebSocket
 * server here on 127.0.0.1 (plain TCP or TLS with a self-signed certificate made in the
 * test; a hand-written upgrade and RFC 6455 frames, one script per test, one connection
 * at a time on a thread of its own) and the CONNECT proxy of connect_proxy.h: a message
 * split across reads and fragments, pieces of a big message handed on in place and
 * bounded, a ping
 * answered with its payload, a refused upgrade's Status message (and its HTTP status when
 * the plain GET says otherwise), the proxy tunnel (plain and TLS), a peer that resets
 * right after its last message while we still send, input from an fd in channel-tagged
 * chunks with its end, TLS name checks (IP, tls-server-name with SNI, a wrong name), the
 * deadline and kube_wss_stop from on_poll. */
#include "check.h"
#include "connect_proxy.h"
#include "loopback.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "kube/config.h"
#include "kube/rest.h"
#include "kube/wsstream.h"

#define IO_TIMEOUT_MS 10000

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- a self-signed certificate for 127.0.0.1 and wss.test ------------------------------ */

struct cert {
    EVP_PKEY *key;
    X509 *x;
    char *pem;   /* the certificate, PEM (the client's certificate-authority-data) */
};

static int cert_make(struct cert *c) {
    memset(c, 0, sizeof(*c));
    if (!(c->key = EVP_EC_gen("P-256")) || !(c->x = X509_new())) return -1;
    X509_set_version(c->x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c->x), 1);
    X509_gmtime_adj(X509_getm_notBefore(c->x), -60);
    X509_gmtime_adj(X509_getm_notAfter(c->x), 3600);
    X509_NAME *n = X509_get_subject_name(c->x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"wss-test", -1, -1, 0);
    X509_set_issuer_name(c->x, n);
    X509_set_pubkey(c->x, c->key);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, c->x, c->x, NULL, NULL, 0);
    X509_EXTENSION *san = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1,DNS:wss.test");
    X509_EXTENSION *bc = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
    if (!san || !bc || !X509_add_ext(c->x, san, -1) || !X509_add_ext(c->x, bc, -1)) return -1;
    X509_EXTENSION_free(san);
    X509_EXTENSION_free(bc);
    if (!X509_sign(c->x, c->key, EVP_sha256())) return -1;
    BIO *b = BIO_new(BIO_s_mem());
    char *p;
    PEM_write_bio_X509(b, c->x);
    long len = BIO_get_mem_data(b, &p);
    c->pem = strndup(p, (size_t)len);
    BIO_free(b);
    return c->pem ? 0 : -1;
}

static void cert_free(struct cert *c) {
    EVP_PKEY_free(c->key);
    X509_free(c->x);
    free(c->pem);
}

/* ---- the scripted server -------------------------------------------------------------- */

struct conn {
    int fd;
    SSL *ssl;
};

struct srv;
typedef void (*script_fn)(struct srv *s, struct conn *c);

struct srv {
    int fd, port;
    SSL_CTX *tls;              /* NULL: plain TCP */
    script_fn script;          /* after the 101 */
    int refuse;                /* answer the upgrade with this status (and a Status body) */
    int get_status;            /* the plain GET's status (its body a Status with get_message) */
    const char *get_message;
    _Atomic int stop;
    pthread_t thread;
    pthread_mutex_t mu;
    /* observations, under mu */
    char request_line[512];
    char authorization[128];
    char offered[128];
    char sni[64];
    int upgrades, plain_gets;
    int pong_ok;               /* a pong came back with the ping's payload */
    int unmasked;
    struct dynbuf got;         /* payloads of the client's binary messages, concatenated */
    int messages;
    size_t max_message;
    int channel_bad;           /* a message did not start with the expected channel */
};

static int conn_wait(struct srv *s, struct conn *c, short ev) {
    if (c->ssl && ev == POLLIN && SSL_pending(c->ssl)) return 0;
    for (int waited = 0; waited < IO_TIMEOUT_MS && !s->stop; waited += 50) {
        struct pollfd pf = {c->fd, ev, 0};
        int n = poll(&pf, 1, 50);
        if (n > 0) return 0;
        if (n < 0 && errno != EINTR) return -1;
    }
    return -1;
}

static ssize_t conn_read(struct srv *s, struct conn *c, void *buf, size_t n) {
    for (;;) {
        if (conn_wait(s, c, POLLIN) < 0) return -1;
        if (!c->ssl) {
            ssize_t r = recv(c->fd, buf, n, MSG_DONTWAIT);
            if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            return r;
        }
        int r = SSL_read(c->ssl, buf, (int)n);
        if (r > 0) return r;
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) continue;
        return -1;
    }
}

static int conn_read_full(struct srv *s, struct conn *c, void *buf, size_t n) {
    unsigned char *b = buf;
    while (n) {
        ssize_t r = conn_read(s, c, b, n);
        if (r <= 0) return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static int conn_write(struct srv *s, struct conn *c, const void *buf, size_t n) {
    const unsigned char *b = buf;
    while (n) {
        if (conn_wait(s, c, POLLOUT) < 0) return -1;
        ssize_t w;
        if (c->ssl) {
            int r = SSL_write(c->ssl, b, (int)n);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) continue;
                return -1;
            }
            w = r;
        } else {
            w = send(c->fd, b, n, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The header of an unmasked server frame into h: its length. */
static size_t frame_header(unsigned char *h, int opcode, int fin, size_t n) {
    h[0] = (unsigned char)((fin ? 0x80 : 0) | opcode);
    if (n < 126) {
        h[1] = (unsigned char)n;
        return 2;
    }
    if (n < 65536) {
        h[1] = 126;
        h[2] = (unsigned char)(n >> 8);
        h[3] = (unsigned char)n;
        return 4;
    }
    h[1] = 127;
    for (int i = 0; i < 8; i++) h[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    return 10;
}

static int frame(struct srv *s, struct conn *c, int opcode, int fin, const void *p, size_t n) {
    unsigned char h[10];
    size_t hl = frame_header(h, opcode, fin, n);
    if (conn_write(s, c, h, hl) < 0) return -1;
    return n ? conn_write(s, c, p, n) : 0;
}

/* Read one client frame (payload malloc'd, unmasked). 0 or -1. */
static int read_frame(struct srv *s, struct conn *c, int *opcode, unsigned char **pl, size_t *len) {
    unsigned char h[2], ext[8], mask[4];
    uint64_t n;
    *pl = NULL;
    if (conn_read_full(s, c, h, 2) < 0) return -1;
    *opcode = h[0] & 15;
    n = h[1] & 127;
    if (n == 126) {
        if (conn_read_full(s, c, ext, 2) < 0) return -1;
        n = ((uint64_t)ext[0] << 8) | ext[1];
    } else if (n == 127) {
        if (conn_read_full(s, c, ext, 8) < 0) return -1;
        n = 0;
        for (int i = 0; i < 8; i++) n = (n << 8) | ext[i];
    }
    if (n > (16u << 20)) return -1;
    int masked = h[1] >> 7;
    if (!masked) {
        pthread_mutex_lock(&s->mu);
        s->unmasked++;
        pthread_mutex_unlock(&s->mu);
    } else if (conn_read_full(s, c, mask, 4) < 0) {
        return -1;
    }
    if (!(*pl = malloc(n + 1))) return -1;
    if (n && conn_read_full(s, c, *pl, n) < 0) {
        free(*pl);
        *pl = NULL;
        return -1;
    }
    if (masked)
        for (uint64_t i = 0; i < n; i++) (*pl)[i] ^= mask[i & 3];
    *len = n;
    return 0;
}

/* Record a client binary message: channel byte expected first, the rest appended. */
static void note_message(struct srv *s, const unsigned char *pl, size_t n, int channel) {
    pthread_mutex_lock(&s->mu);
    s->messages++;
    if (n > s->max_message) s->max_message = n;
    if (!n || pl[0] != channel) s->channel_bad++;
    if (n > 1) dynbuf_append(&s->got, pl + 1, n - 1);
    pthread_mutex_unlock(&s->mu);
}

static void header(const char *head, const char *name, char *out, size_t outlen) {
    size_t nl = strlen(name);
    out[0] = 0;
    for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, name, nl)) continue;
        const char *h = l + 2 + nl;
        while (*h == ' ') h++;
        const char *e = strstr(h, "\r\n");
        size_t m = (size_t)(e - h) < outlen - 1 ? (size_t)(e - h) : outlen - 1;
        memcpy(out, h, m);
        out[m] = 0;
        return;
    }
}

static void status_answer(struct srv *s, struct conn *c, int code, const char *message) {
    char body[512], resp[1024];
    snprintf(body, sizeof body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"%s\",\"code\":%d}", message, code);
    snprintf(resp, sizeof resp, "HTTP/1.1 %d Refused\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n%s", code, strlen(body), body);
    conn_write(s, c, resp, strlen(resp));
}

static void serve(struct srv *s, struct conn *c) {
    char head[8192];
    size_t len = 0;
    while (len < sizeof head - 1) {
        ssize_t r = conn_read(s, c, head + len, sizeof head - 1 - len);
        if (r <= 0) return;
        len += (size_t)r;
        head[len] = 0;
        if (strstr(head, "\r\n\r\n")) break;
    }
    char upgrade[32], key[64], proto[128];
    header(head, "Upgrade:", upgrade, sizeof upgrade);
    pthread_mutex_lock(&s->mu);
    if (strcasecmp(upgrade, "websocket")) {
        s->plain_gets++;
        pthread_mutex_unlock(&s->mu);
        status_answer(s, c, s->get_status ? s->get_status : 400, s->get_message ? s->get_message : "no upgrade");
        return;
    }
    s->upgrades++;
    snprintf(s->request_line, sizeof s->request_line, "%.*s", (int)(strstr(head, "\r\n") - head), head);
    header(head, "Authorization:", s->authorization, sizeof s->authorization);
    header(head, "Sec-WebSocket-Protocol:", s->offered, sizeof s->offered);
    pthread_mutex_unlock(&s->mu);
    if (s->refuse) {
        status_answer(s, c, s->refuse, s->get_message ? s->get_message : "refused");
        return;
    }
    header(head, "Sec-WebSocket-Key:", key, sizeof key);
    snprintf(proto, sizeof proto, "%s", s->offered);
    char *comma = strchr(proto, ',');
    if (comma) *comma = 0;   /* the first offered */
    char kg[160];
    unsigned char sha[SHA_DIGEST_LENGTH], accept[64];
    snprintf(kg, sizeof kg, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
    SHA1((const unsigned char *)kg, strlen(kg), sha);
    EVP_EncodeBlock(accept, sha, SHA_DIGEST_LENGTH);
    char resp[512];
    snprintf(resp, sizeof resp, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: %s\r\n\r\n", (const char *)accept, proto);
    if (conn_write(s, c, resp, strlen(resp)) == 0 && s->script) s->script(s, c);
}

static void *srv_main(void *arg) {
    struct srv *s = arg;
    while (!s->stop) {
        struct pollfd pf = {s->fd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0) continue;
        struct conn c = {accept(s->fd, NULL, NULL), NULL};
        if (c.fd < 0) continue;
        int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (s->tls) {
            c.ssl = SSL_new(s->tls);
            SSL_set_fd(c.ssl, c.fd);
            if (SSL_accept(c.ssl) == 1) {
                const char *sni = SSL_get_servername(c.ssl, TLSEXT_NAMETYPE_host_name);
                pthread_mutex_lock(&s->mu);
                snprintf(s->sni, sizeof s->sni, "%s", sni ? sni : "");
                pthread_mutex_unlock(&s->mu);
                serve(s, &c);
                SSL_shutdown(c.ssl);
            }
            SSL_free(c.ssl);
        } else {
            serve(s, &c);
        }
        if (c.fd >= 0) close(c.fd);
    }
    return NULL;
}

static int srv_start(struct srv *s, script_fn script, const struct cert *tls) {
    memset(s, 0, sizeof(*s));
    s->script = script;
    pthread_mutex_init(&s->mu, NULL);
    dynbuf_init(&s->got, 64u << 20);
    if (tls) {
        s->tls = SSL_CTX_new(TLS_server_method());
        if (!s->tls || SSL_CTX_use_certificate(s->tls, tls->x) != 1 || SSL_CTX_use_PrivateKey(s->tls, tls->key) != 1)
            return -1;
    }
    if ((s->fd = loopback_listen(16, &s->port)) < 0) return -1;
    return pthread_create(&s->thread, NULL, srv_main, s) == 0 ? 0 : -1;
}

static void srv_stop(struct srv *s) {
    s->stop = 1;
    pthread_join(s->thread, NULL);
    close(s->fd);
    SSL_CTX_free(s->tls);
    dynbuf_free(&s->got);
    pthread_mutex_destroy(&s->mu);
}

/* ---- the client side ------------------------------------------------------------------ */

struct client_opts {
    const struct cert *ca;      /* https with this CA, else http */
    const char *tls_server_name;
    const struct proxy *proxy;
};

static struct kube_client *client_for(const struct srv *s, const struct client_opts *co) {
    struct kube_config cfg;
    char url[64], err[256];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d", co && co->ca ? "https" : "http", s->port);
    memset(&cfg, 0, sizeof cfg);
    cfg.server = strdup(url);
    cfg.token = strdup("t0ken");
    if (co && co->ca) {
        cfg.ca_pem = strdup(co->ca->pem);
        cfg.ca_len = strlen(co->ca->pem);
    }
    if (co && co->tls_server_name) cfg.tls_server_name = strdup(co->tls_server_name);
    if (co && co->proxy) {
        char purl[64];
        snprintf(purl, sizeof purl, "http://127.0.0.1:%d", co->proxy->port);
        cfg.proxy_url = strdup(purl);
    }
    pthread_mutex_init(&cfg.lock, NULL);
    cfg.lock_ready = 1;
    struct kube_client *c = kube_client_new(&cfg, "test", err, sizeof err);
    if (!c) fprintf(stderr, "    kube_client_new: %s\n", err);
    if (c) kube_client_set_retries(c, 1);
    return c;
}

/* What the user's callbacks saw. */
struct user {
    struct dynbuf data;         /* every piece, concatenated */
    int pieces, firsts, finals;
    size_t max_piece;
    char protocol[64];
    int opened;
    const char *end_at;         /* end the stream once data ends with this */
    int input_ends, input_err;
    const char *after_input;    /* sent as a message once the input ended */
    int polls, stop_after_polls;
};

static int u_open(void *ud, struct kube_wss *st, const char *protocol) {
    struct user *u = ud;
    (void)st;
    u->opened++;
    snprintf(u->protocol, sizeof u->protocol, "%s", protocol);
    return 0;
}

static int u_message(void *ud, struct kube_wss *st, const unsigned char *p, size_t n, int first, int final) {
    struct user *u = ud;
    (void)st;
    u->pieces++;
    u->firsts += first;
    u->finals += final;
    if (n > u->max_piece) u->max_piece = n;
    if (dynbuf_append(&u->data, p, n) < 0) return 1;
    size_t el = u->end_at ? strlen(u->end_at) : 0;
    return el && u->data.len >= el && !memcmp(u->data.data + u->data.len - el, u->end_at, el);
}

static void u_input_end(void *ud, struct kube_wss *st, int err) {
    struct user *u = ud;
    u->input_ends++;
    u->input_err = err;
    if (u->after_input) {
        unsigned char buf[KUBE_WSS_HEADROOM + 64];
        size_t n = strlen(u->after_input);
        memcpy(buf + KUBE_WSS_HEADROOM, u->after_input, n);
        kube_wss_send(st, buf + KUBE_WSS_HEADROOM, n);
    }
}

static void u_poll(void *ud, struct kube_wss *st) {
    struct user *u = ud;
    if (u->opened && ++u->polls == u->stop_after_polls) kube_wss_stop(st);   /* (counted once open) */
}

static struct kube_wss_options base_options(struct user *u) {
    memset(u, 0, sizeof(*u));
    dynbuf_init(&u->data, 64u << 20);
    struct kube_wss_options o = {
        .what = "t",
        .path = "/api/v1/namespaces/ns/pods/p/thing?x=1",
        .protocols = "p1.test, p2.test",
        .hint403 = "t needs a grant",
        .input_fd = -1,
        .ud = u,
        .on_open = u_open,
        .on_message = u_message,
        .on_input_end = u_input_end,
        .on_poll = u_poll,
        .timeout_ms = 20000,
    };
    return o;
}

static int run(struct srv *s, const struct client_opts *co, const struct kube_wss_options *o,
               struct kube_wss_result *res, char *err, size_t errlen) {
    struct kube_client *c = client_for(s, co);
    if (!c) return -2;
    int rc = kube_wss_run(c, o, res, err, errlen);
    kube_client_free(c);
    return rc;
}

/* ---- scripts ------------------------------------------------------------------------- */

/* A 3-byte message written a byte at a time, a message in three fragments with a ping
 * between them and headers split from payloads, one of 200 000 bytes, then a close. */
static void script_split(struct srv *s, struct conn *c) {
    static const unsigned char one[] = {0x82, 3, 'a', 'b', 'c'};
    for (size_t i = 0; i < sizeof one; i++) {
        if (conn_write(s, c, one + i, 1) < 0) return;
        sleep_ms(20);
    }
    unsigned char h[10];
    size_t hl = frame_header(h, 2, 0, 4);
    conn_write(s, c, h, 1);
    sleep_ms(20);
    conn_write(s, c, h + 1, hl - 1);
    sleep_ms(20);
    conn_write(s, c, "defg", 4);
    frame(s, c, 9, 1, "mid", 3);                    /* a ping inside the message */
    frame(s, c, 0, 0, "hij", 3);
    sleep_ms(20);
    frame(s, c, 0, 1, "k", 1);
    size_t big = 200000;
    unsigned char *b = malloc(big);
    for (size_t i = 0; i < big; i++) b[i] = (unsigned char)(i % 251);
    frame(s, c, 2, 1, b, big);
    free(b);
    int op;
    unsigned char *pl;
    size_t n;
    if (read_frame(s, c, &op, &pl, &n) == 0) {     /* the pong */
        pthread_mutex_lock(&s->mu);
        s->pong_ok = op == 10 && n == 3 && !memcmp(pl, "mid", 3);
        pthread_mutex_unlock(&s->mu);
        free(pl);
    }
    frame(s, c, 8, 1, "\x03\xe8" "bye", 5);
}

TEST(message_split_across_reads_and_fragments_arrives_whole) {
    struct srv s;
    struct user u;
    struct kube_wss_result res;
    char err[512];
    CHECK_INT(srv_start(&s, script_split, NULL), 0);
    struct kube_wss_options o = base_options(&u);
    int rc = run(&s, NULL, &o, &res, err, sizeof err);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", err);
    CHECK_INT(res.established, 1);
    CHECK_INT(res.http_status, 101);
    CHECK_INT(res.closed, 1);
    CHECK_STR(res.close_reason, " (close 1000: bye)");
    CHECK_STR(u.protocol, "p1.test");
    CHECK_INT(u.firsts, 3);
    CHECK_INT(u.finals, 3);
    CHECK(u.pieces > 4);                            /* pieces as they were read, not reassembled */
    CHECK(u.max_piece <= 64 * 1024);                /* bounded: one read at a time */
    CHECK_INT(u.data.len, 3 + 8 + 200000);
    CHECK(u.data.len >= 11 && !memcmp(u.data.data, "abcdefghijk", 11));
    int bad = 0;
    for (size_t i = 11; i < u.data.len; i++) bad += (unsigned char)u.data.data[i] != (unsigned char)((i - 11) % 251);
    CHECK_INT(bad, 0);
    CHECK_INT(s.pong_ok, 1);
    CHECK_STR(s.request_line, "GET /api/v1/namespaces/ns/pods/p/thing?x=1 HTTP/1.1");
    CHECK_STR(s.authorization, "Bearer t0ken");
    CHECK_STR(s.offered, "p1.test, p2.test");
    CHECK_INT(s.unmasked, 0);
    dynbuf_free(&u.data);
    srv_stop(&s);
}

/* A ping right after the upgrade; the answer is checked, then "done" ends it. */
static void script_ping(struct srv *s, struct conn *c) {
    frame(s, c, 9, 1, "are you there", 13);
    int op;
    unsigned char *pl;
    size_t n;
    if (read_frame(s, c, &op, &pl, &n) == 0) {
        pthread_mutex_lock(&s->mu);
        s->pong_ok = op == 10 && n == 13 && !memcmp(pl, "are you there", 13);
        pthread_mutex_unlock(&s->mu);
        free(pl);
    }
    frame(s, c, 2, 1, "done", 4);
    sleep_ms(300);
}

TEST(ping_is_answered_with_its_payload) {
    struct srv s;
    struct user u;
    struct kube_wss_result res;
    char err[512];
    CHECK_INT(srv_start(&s, script_ping, NULL), 0);
    struct kube_wss_options o = base_options(&u);
    u.end_at = "done";
    CHECK_INT(run(&s, NULL, &o, &res, err, sizeof err), 0);
    CHECK_INT(s.pong_ok, 1);
    CHECK_INT(s.unmasked, 0);
    CHECK_INT(u.data.len, 4);
    CHECK_INT(res.closed, 0);                       /* ended by the user, not the server */
    dynbuf_free(&u.data);
    srv_stop(&s);
}

TEST(refused_upgrade_reports_the_status_message) {
    struct srv s;
    struct user u;
    struct kube_wss_result res;
    char err[512];
    CHECK_INT(srv_start(&s, NULL, NULL), 0);
    s.refuse = 403;
    s.get_status = 403;
    s.get_message = "pods \\\"p\\\" is forbidden: User \\\"bob\\\" cannot create pods/thing";
    struct kube_wss_options o = base_options(&u);
    CHECK_INT(run(&s, NULL, &o, &res, err, sizeof err), -1);
    CHECK_INT(res.http_status, 403);
    CHECK_INT(res.established, 0);
    CHECK_STR(err, "t: upgrade refused: HTTP 403: pods \"p\" is forbidden: User \"bob\" cannot create pods/thing "
              "(t needs a grant)");
    CHECK_INT(s.plain_gets, 1);
    CHECK_INT(u.opened, 0);
    /* the plain GET answers otherwise: the HTTP status alone */
    s.refuse = 404;
    s.get_status = 400;
    CHECK_INT(run(&s, NULL, &o, &res, err, sizeof err), -1);
    CHECK_INT(res.http_status, 404);
    CHECK_STR(err, "t: upgrade refused: HTTP 404");
    /* a 401 the caller retries itself: no lookup */
    s.refuse = 401;
    s.get_status = 401;
    o.retried_on_401 = 1;
    CHECK_INT(run(&s, NULL, &o, &res, err, sizeof err), -1);
    CHECK_STR(err, "t: upgrade refused: HTTP 401");
    CHECK_INT(s.plain_gets, 2);
    dynbuf_free(&u.data);
    srv_stop(&s);
}

/* Echo every client message back (payload after the channel byte), until "quit". */
static void script_echo(struct srv *s, struct conn *c) {
    int op;
    unsigned char *pl;
    size_t n;
    while (read_frame(s, c, &op, &pl, &n) == 0) {
        if (op == 8) {
            free(pl);
            return;
        }
        if (op == 2) {
            int quit = n == 4 && !memcmp(pl, "quit", 4);
            if (!quit) note_message(s, pl, n, 7);
            frame(s, c, 2, 1, quit ? (const void *)"bye" : (const void *)(pl + 1), quit ? 3 : n - 1);
            free(pl);
            if (quit) {
                frame(s, c, 8, 1, "\x03\xe8", 2);
                return;
            }
            continue;
        }
        free(pl);
    }
}

struct feeder {
    int fd;
    const unsigned char *data;
    size_t len;
};

static void *feed_main(void *arg) {
    struct feeder *f = arg;
    for (size_t off = 0; off < f->len;) {
        ssize_t w = write(f->fd, f->data + off, f->len - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    close(f->fd);             /* EOF for the stream's reader */
    return NULL;
}

TEST(input_fd_goes_out_in_tagged_chunks_then_its_end) {
    struct srv s;
    struct user u;
    struct kube_wss_result res;
    char err[512];
    int pv[2];
    CHECK_INT(srv_start(&s, script_echo, NULL), 0);
    CHECK_INT(pipe(pv), 0);
    size_t total = 100000;
    unsigned char *data = malloc(total);
    for (size_t i = 0; i < total; i++) data[i] = (unsigned char)(i * 7);
    /* a pipe holds 64 KiB: the rest is written by a thread while the stream runs */
    struct feeder f = {pv[1], data, total};
    pthread_t ft;
    CHECK_INT(pthread_create(&ft, NULL, feed_main, &f), 0);
    struct kube_wss_options o = base_options(&u);
    o.input_fd = pv[0];
    o.input_channel = 7;
    u.after_input = "quit";
    u.end_at = NULL;
    int rc = run(&s, NULL, &o, &res, err, sizeof err);
    pthread_join(ft, NULL);   /* it closed its end after the last byte */
    close(pv[0]);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", err);
    CHECK_INT(res.input_bytes, total);
    CHECK_INT(u.input_ends, 1);
    CHECK_INT(u.input_err, 0);
    CHECK_INT(s.got.len, total);
    CHECK(s.got.len == total && !memcmp(s.got.data, data, total));
    CHECK_INT(s.channel_bad, 0);
    CHECK(s.max_message <= KUBE_WSS_CHUNK + 1);
    CHECK(s.messages >= 4);                        /* 100 000 bytes: at least four chunks */
    CHECK_INT(res.closed, 1);
    CHECK_INT(u.data.len, total + 3);              /* the echo, then "bye" */
    CHECK(u.data.len == total + 3 && !memcmp(u.data.data, data, total) && !memcmp(u.data.data + total, "bye", 3));
    free(data);
    dynbuf_free(&u.data);
    srv_stop(&s);
}

TEST(proxy_tunnel_plain) {
    struct srv s;
    struct proxy px;
    struct user u;
    struct kube_wss_result res;
    char err[512], want[64];
    CHECK_INT(srv_start(&s, script_ping, NULL), 0);
    CHECK_INT(proxy_start(&px, NULL), 0);
    struct client_opts co = {.proxy = &px};
    struct kube_wss_options o = base_options(&u);
    u.end_at = "done";
    int rc = run(&s, &co, &o, &res, err, sizeof err);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", err);
    snprintf(want, sizeof want, "CONNECT 127.0.0.1:%d HTTP/1.1", s.port);
    CHECK_STR(px.last_connect, want);
    CHECK_INT(px.connects, 1);
    CHECK_INT(s.pong_ok, 1);
    CHECK_STR(u.data.data ? u.data.data : "", "done");
    dynbuf_free(&u.data);
    proxy_stop(&px);
    srv_stop(&s);
}

/* Read one client message, send the last word and close with a reset at once, while the
 * client is still sending (its input is endless). */
static void script_reset(struct srv *s, struct conn *c) {
    int op;
    unsigned char *pl;
    size_t n;
    if (read_frame(s, c, &op, &pl, &n) < 0) return;
    free(pl);
    sleep_ms(100);                                 /* the client's writes pile up unread */
    frame(s, c, 2, 1, "output", 6);
    frame(s, c, 2, 1, "last word", 9);
    struct linger lg = {1, 0};                     /* close = RST */
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(c->fd);
    c->fd = -1;
}

TEST(peer_that_resets_after_its_last_message) {
    struct srv s;
    CHECK_INT(srv_start(&s, script_reset, NULL), 0);
    int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    CHECK(zero >= 0);
    for (int round = 0; round < 5; round++) {
        struct user u;
        struct kube_wss_result res;
        char err[512];
        struct kube_wss_options o = base_options(&u);
        o.input_fd = zero;
        u.end_at = "last word";
        int rc = run(&s, NULL, &o, &res, err, sizeof err);
        CHECK_INT(rc, 0);
        if (rc) fprintf(stderr, "    round %d err: %s\n", round, err);
        CHECK_STR(u.data.data ? u.data.data : "", "outputlast word");
        CHECK(res.input_bytes > 0);
        dynbuf_free(&u.data);
    }
    close(zero);
    srv_stop(&s);
}

TEST(tls_checks_the_name_and_sends_sni) {
    struct cert ct;
    CHECK_INT(cert_make(&ct), 0);
    struct srv s;
    struct proxy px;
    struct user u;
    struct kube_wss_result res;
    char err[512];
    CHECK_INT(srv_start(&s, script_ping, &ct), 0);
    CHECK_INT(proxy_start(&px, NULL), 0);
    struct kube_wss_options o = base_options(&u);
    /* the IP address of the URL against the certificate's IP SAN; no SNI for an IP */
    struct client_opts co = {.ca = &ct};
    u.end_at = "done";
    int rc = run(&s, &co, &o, &res, err, sizeof err);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", err);
    CHECK_INT(s.pong_ok, 1);
    CHECK_STR(s.sni, "");
    CHECK_STR(s.authorization, "Bearer t0ken");
    /* tls-server-name: the name checked and sent as SNI; through the proxy too */
    dynbuf_free(&u.data);
    o = base_options(&u);
    u.end_at = "done";
    co.tls_server_name = "wss.test";
    co.proxy = &px;
    rc = run(&s, &co, &o, &res, err, sizeof err);
    CHECK_INT(rc, 0);
    if (rc) fprintf(stderr, "    err: %s\n", err);
    CHECK_STR(s.sni, "wss.test");
    CHECK_INT(px.connects, 1);
    CHECK_STR(u.data.data ? u.data.data : "", "done");
    /* a name the certificate does not have */
    dynbuf_free(&u.data);
    o = base_options(&u);
    co.tls_server_name = "other.test";
    co.proxy = NULL;
    CHECK_INT(run(&s, &co, &o, &res, err, sizeof err), -1);
    CHECK(strstr(err, "t: TLS: the server certificate of https://127.0.0.1:") != NULL);
    CHECK(strstr(err, "is not trusted") != NULL);
    if (!strstr(err, "is not trusted")) fprintf(stderr, "    err: %s\n", err);
    CHECK_INT(u.opened, 0);
    dynbuf_free(&u.data);
    proxy_stop(&px);
    srv_stop(&s);
    cert_free(&ct);
}

/* Upgrade, then silence (reading what comes, answering nothing). */
static void script_silent(struct srv *s, struct conn *c) {
    int op;
    unsigned char *pl;
    size_t n;
    while (read_frame(s, c, &op, &pl, &n) == 0) free(pl);
}

TEST(deadline_and_stop_from_poll) {
    struct srv s;
    struct user u;
    struct kube_wss_result res;
    char err[512];
    CHECK_INT(srv_start(&s, script_silent, NULL), 0);
    struct kube_wss_options o = base_options(&u);
    o.timeout_ms = 300;
    CHECK_INT(run(&s, NULL, &o, &res, err, sizeof err), -1);
    CHECK_STR(err, "t: timed out after 300 ms");
    CHECK_INT(res.established, 1);
    dynbuf_free(&u.data);
    o = base_options(&u);
    o.poll_ms = 20;
    u.stop_after_polls = 5;
    CHECK_INT(run(&s, NULL, &o, &res, err, sizeof err), 0);
    CHECK_INT(u.polls, 5);
    CHECK_STR(err, "");
    dynbuf_free(&u.data);
    srv_stop(&s);
}
