/* kube/wsframe.c — RFC 6455 client framing and handshake, pure (see wsframe.h). */
#include "kube/wsframe.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/errfmt.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

void kube_ws_accept_for(const char *key, char out[KUBE_WS_ACCEPT_LEN + 1]) {
    unsigned char md[SHA_DIGEST_LENGTH];
    char in[128];
    int n = snprintf(in, sizeof(in), "%s%s", key, ws_guid);
    if (n < 0 || (size_t)n >= sizeof(in) || !EVP_Digest(in, (size_t)n, md, NULL, EVP_sha1(), NULL))
        memset(md, 0, sizeof(md));   /* a key nobody sends: no answer will match */
    EVP_EncodeBlock((unsigned char *)out, md, SHA_DIGEST_LENGTH);
    out[KUBE_WS_ACCEPT_LEN] = 0;
}

size_t kube_ws_upgrade_request(char *out, size_t cap, const char *host, const char *path, const char *key,
                               const char *protocols, const char *auth, const char *const *extra, const char *ua) {
    int n = snprintf(out, cap,
                     "GET %s HTTP/1.1\r\n"
                     "Host: %s\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Protocol: %s\r\n"
                     "%s%s%s",
                     path, host, key, protocols, auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "");
    if (n < 0 || (size_t)n >= cap) return 0;
    size_t used = (size_t)n;
    for (size_t i = 0; extra && extra[i]; i++) {
        n = snprintf(out + used, cap - used, "%s\r\n", extra[i]);
        if (n < 0 || (size_t)n >= cap - used) return 0;
        used += (size_t)n;
    }
    n = snprintf(out + used, cap - used, "User-Agent: %s\r\n\r\n", ua);
    if (n < 0 || (size_t)n >= cap - used) return 0;
    return used + (size_t)n;
}

/* Copy a header value (spaces around it trimmed) into out. */
static void header_value(const char *v, const char *end, char *out, size_t outlen) {
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t n = (size_t)(end - v) < outlen - 1 ? (size_t)(end - v) : outlen - 1;
    memcpy(out, v, n);
    out[n] = 0;
}

/* Whether the comma-separated list value names token (case-insensitive). */
static int list_has(const char *v, const char *end, const char *token) {
    size_t tl = strlen(token);
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ',')) v++;
        const char *e = v;
        while (e < end && *e != ',') e++;
        const char *t = e;
        while (t > v && (t[-1] == ' ' || t[-1] == '\t')) t--;
        if ((size_t)(t - v) == tl && !strncasecmp(v, token, tl)) return 1;
        v = e;
    }
    return 0;
}

int kube_ws_parse_answer(const char *buf, size_t len, struct kube_ws_answer *a) {
    const char *end = NULL;
    for (size_t i = 3; i < len && i < KUBE_WS_HS_MAX; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
            end = buf + i + 1;
            break;
        }
    if (!end) {
        if (len >= 5 && strncmp(buf, "HTTP/", 5)) return -1;
        return len >= KUBE_WS_HS_MAX ? -1 : 0;
    }
    memset(a, 0, sizeof(*a));
    a->header_len = (size_t)(end - buf);
    if (a->header_len < 12 || strncmp(buf, "HTTP/1.", 7) || buf[8] != ' ') return -1;
    int st = 0;
    for (int i = 9; i < 12; i++) {
        if (buf[i] < '0' || buf[i] > '9') return -1;
        st = st * 10 + (buf[i] - '0');
    }
    a->status = st;
    const char *line = memchr(buf, '\n', a->header_len) + 1;
    while (line < end - 2) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        const char *le = eol > line && eol[-1] == '\r' ? eol - 1 : eol;
        const char *colon = memchr(line, ':', (size_t)(le - line));
        if (colon) {
            size_t kl = (size_t)(colon - line);
#define KEY_IS(k) (kl == sizeof(k) - 1 && !strncasecmp(line, k, kl))
            if (KEY_IS("Sec-WebSocket-Protocol"))
                header_value(colon + 1, le, a->protocol, sizeof(a->protocol));
            else if (KEY_IS("Sec-WebSocket-Accept"))
                header_value(colon + 1, le, a->accept, sizeof(a->accept));
            else if (KEY_IS("Upgrade"))
                a->upgrade_websocket = list_has(colon + 1, le, "websocket");
            else if (KEY_IS("Connection"))
                a->connection_upgrade = list_has(colon + 1, le, "upgrade");
#undef KEY_IS
        }
        line = eol + 1;
    }
    return 1;
}

const char *kube_ws_check_answer(const struct kube_ws_answer *a, const char *key) {
    char want[KUBE_WS_ACCEPT_LEN + 1];
    if (a->status != 101) return "not 101 Switching Protocols";
    if (!a->upgrade_websocket) return "no \"Upgrade: websocket\" in the answer";
    if (!a->connection_upgrade) return "no \"Connection: upgrade\" in the answer";
    kube_ws_accept_for(key, want);
    if (strcmp(a->accept, want)) return "wrong Sec-WebSocket-Accept in the answer";
    return NULL;
}

/* ---- server frames in ------------------------------------------------------------------ */

void kube_ws_parser_init(struct kube_ws_parser *ps, kube_ws_data_fn on_data, kube_ws_control_fn on_control,
                         void *ud) {
    memset(ps, 0, sizeof(*ps));
    ps->on_data = on_data;
    ps->on_control = on_control;
    ps->ud = ud;
}

/* How long the header in ps->hdr is, once its first two bytes are there. */
static size_t header_len(const struct kube_ws_parser *ps) {
    unsigned l = ps->hdr[1] & 127;
    return 2 + (l == 126 ? 2 : l == 127 ? 8 : 0);   /* server frames carry no mask */
}

#define PROTO_ERR(...)                    \
    do {                                  \
        errfmt(err, errlen, __VA_ARGS__); \
        ps->stopped = 1;                  \
        return -1;                        \
    } while (0)

/* The header is complete: check it and set up the frame. 0 or -1. */
static int begin_frame(struct kube_ws_parser *ps, char *err, size_t errlen) {
    const unsigned char *h = ps->hdr;
    int op = h[0] & 15;
    ps->fin = h[0] >> 7;
    ps->opcode = op;
    if (h[0] & 0x70) PROTO_ERR("WebSocket frame with reserved bits set (0x%02x)", h[0]);
    if (h[1] & 0x80) PROTO_ERR("masked WebSocket frame from the server");
    uint64_t l = h[1] & 127;
    if (l == 126) {
        l = ((uint64_t)h[2] << 8) | h[3];
    } else if (l == 127) {
        if (h[2] & 0x80) PROTO_ERR("WebSocket frame length with the top bit set");
        l = 0;
        for (int i = 2; i < 10; i++) l = (l << 8) | h[i];
    }
    ps->left = l;
    if (op >= 8) {
        if (op > KUBE_WS_PONG) PROTO_ERR("unknown WebSocket opcode %d", op);
        if (!ps->fin) PROTO_ERR("fragmented WebSocket control frame");
        if (l > 125) PROTO_ERR("WebSocket control frame of %llu bytes", (unsigned long long)l);
        ps->ctl_len = 0;
    } else if (op == KUBE_WS_CONT) {
        if (!ps->in_message) PROTO_ERR("WebSocket continuation frame outside a message");
    } else if (op == KUBE_WS_TEXT || op == KUBE_WS_BINARY) {
        if (ps->in_message) PROTO_ERR("new WebSocket message inside a fragmented one");
        ps->in_message = 1;
        ps->msg_opcode = op;
        ps->piece_first = 1;
    } else {
        PROTO_ERR("unknown WebSocket opcode %d", op);
    }
    ps->in_frame = 1;
    return 0;
}

/* The frame's payload is all there (data) or collected (control): finish it. 0 or > 0. */
static int end_frame(struct kube_ws_parser *ps) {
    ps->in_frame = 0;
    ps->hdr_have = 0;
    if (ps->opcode >= 8) {
        if (ps->opcode == KUBE_WS_CLOSE) ps->closed = 1;
        return ps->on_control ? ps->on_control(ps->ud, ps->opcode, ps->ctl, ps->ctl_len) : 0;
    }
    if (ps->fin) ps->in_message = 0;
    return 0;
}

int kube_ws_parser_feed(struct kube_ws_parser *ps, const unsigned char *p, size_t n, char *err, size_t errlen) {
    int rc;
    while (n > 0 && !ps->closed && !ps->stopped) {
        if (!ps->in_frame) {
            /* Collect the header: two bytes, then the length's extension. */
            size_t need = ps->hdr_have < 2 ? 2 : header_len(ps);
            while (ps->hdr_have < need && n > 0) {
                ps->hdr[ps->hdr_have++] = *p++;
                n--;
                if (ps->hdr_have == 2) need = header_len(ps);
            }
            if (ps->hdr_have < need) break;
            if (begin_frame(ps, err, errlen) < 0) return -1;
            if (ps->left > 0) continue;
            /* An empty frame: a data frame still ends (or is) a piece of its message. */
            if (ps->opcode < 8 && ps->on_data &&
                (ps->fin || ps->piece_first) &&
                (rc = ps->on_data(ps->ud, ps->msg_opcode, p, 0, ps->piece_first, ps->fin)) > 0) {
                ps->stopped = 1;
                return rc;
            }
            if (ps->opcode < 8) ps->piece_first = 0;
            if ((rc = end_frame(ps)) > 0) {
                ps->stopped = 1;
                return rc;
            }
            continue;
        }
        size_t take = ps->left < n ? (size_t)ps->left : n;
        ps->left -= take;
        if (ps->opcode >= 8) {
            memcpy(ps->ctl + ps->ctl_len, p, take);
            ps->ctl_len += take;
        } else {
            int first = ps->piece_first, final = ps->fin && ps->left == 0;
            ps->piece_first = 0;
            if (ps->on_data && (rc = ps->on_data(ps->ud, ps->msg_opcode, p, take, first, final)) > 0) {
                ps->stopped = 1;
                return rc;
            }
        }
        p += take;
        n -= take;
        if (ps->left == 0 && (rc = end_frame(ps)) > 0) {
            ps->stopped = 1;
            return rc;
        }
    }
    return 0;
}

/* ---- client frames out ------------------------------------------------------------------ */

size_t kube_ws_frame_header(unsigned char *out, int opcode, uint64_t len, const unsigned char key[4]) {
    size_t n = 2;
    out[0] = (unsigned char)(0x80 | (opcode & 15));
    if (len < 126) {
        out[1] = (unsigned char)(0x80 | len);
    } else if (len <= 0xffff) {
        out[1] = 0x80 | 126;
        out[2] = (unsigned char)(len >> 8);
        out[3] = (unsigned char)len;
        n = 4;
    } else {
        out[1] = 0x80 | 127;
        for (int i = 0; i < 8; i++) out[2 + i] = (unsigned char)(len >> (56 - 8 * i));
        n = 10;
    }
    memcpy(out + n, key, 4);
    return n + 4;
}

void kube_ws_mask(unsigned char *p, size_t n, const unsigned char key[4]) {
    uint64_t k8;
    unsigned char kk[8] = {key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3]};
    memcpy(&k8, kk, 8);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        w ^= k8;
        memcpy(p + i, &w, 8);
    }
    for (; i < n; i++) p[i] ^= key[i & 3];
}
