/* bridge/bridge_auth.c — the TCP-mode token handshake, as pure functions: where the
 * token comes from, the one hello line the bridge sends, and the parse of the one reply
 * line the peer sends back. Sending and receiving those lines is bridge_conn.c's job.
 *
 * The reply parser is a deliberately small JSON reader: one flat-or-nested object, of
 * which only "yao-bridge" (must be 1), "ok" (boolean) and "error" (string) are read; any
 * other member is skipped, so a server may add fields (or emit keys in any order, as
 * Go's encoding/json does for maps). It never allocates. */
#include "bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#define JP_MAX_DEPTH 16

/* Copy a token out of the environment; the variable itself stays (we cannot wipe it
 * from our parent's memory, and /proc/self/environ is ours alone to read). */
static int token_from_env(const char *env, char **out, size_t *out_len, struct bridge_err *err) {
    size_t len = strlen(env);

    if (len > BRIDGE_TOKEN_MAX) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "YAO_TOKEN is longer than %d bytes", BRIDGE_TOKEN_MAX);
        return -1;
    }
    *out = malloc(len + 1);
    if (!*out) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "out of memory");
        return -1;
    }
    memcpy(*out, env, len + 1);
    *out_len = len;
    return 1;
}

/* Read the token file: at most BRIDGE_TOKEN_MAX bytes after trailing whitespace (a
 * newline written by `echo` or a Kubernetes Secret editor) is stripped. */
static int token_from_file(const char *path, char **out, size_t *out_len, struct bridge_err *err) {
    size_t cap = BRIDGE_TOKEN_MAX + 64, len = 0;
    char *buf = NULL;
    int fd = -1;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "read token file %s: %s", path, strerror(errno));
        goto err;
    }
    buf = malloc(cap + 1);
    if (!buf) {
        bridge_err_set(err, BRIDGE_EXIT_IO, "out of memory");
        goto err;
    }
    for (;;) {
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            bridge_err_set(err, BRIDGE_EXIT_USAGE, "read token file %s: %s", path, strerror(errno));
            goto err;
        }
        if (r == 0) break;
        len += (size_t)r;
        if (len == cap) break; /* too long even before stripping; judged below */
    }
    while (len > 0 && strchr(" \t\r\n", buf[len - 1])) len--;
    if (len == 0) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "token file %s is empty", path);
        goto err;
    }
    if (len > BRIDGE_TOKEN_MAX) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "token file %s holds more than %d bytes", path,
                       BRIDGE_TOKEN_MAX);
        goto err;
    }
    if (memchr(buf, '\0', len)) {
        bridge_err_set(err, BRIDGE_EXIT_USAGE, "token file %s contains a NUL byte", path);
        goto err;
    }
    buf[len] = '\0';
    close(fd);
    *out = buf;
    *out_len = len;
    return 1;
err:
    if (buf) bridge_auth_token_free(buf, cap + 1);
    if (fd >= 0) close(fd);
    return -1;
}

/* Load the token: $YAO_TOKEN wins over $YAO_TOKEN_FILE. 1 loaded, 0 none set, -1 error. */
int bridge_auth_token_load(char **out, size_t *out_len, struct bridge_err *err) {
    const char *env = getenv("YAO_TOKEN");
    const char *file = getenv("YAO_TOKEN_FILE");

    *out = NULL;
    *out_len = 0;
    if (env && *env) return token_from_env(env, out, out_len, err);
    if (file && *file) return token_from_file(file, out, out_len, err);
    return 0;
}

/* Wipe and free a token (len bytes of it are overwritten). */
void bridge_auth_token_free(char *token, size_t len) {
    if (!token) return;
    OPENSSL_cleanse(token, len);
    free(token);
}

/* Build {"yao-bridge":1,"token":"..."}\n; the token is JSON-escaped so any byte string
 * survives the framing. The caller wipes and frees the result. */
char *bridge_auth_hello(const char *token, size_t token_len, size_t *len) {
    static const char head[] = "{\"yao-bridge\":1,\"token\":\"";
    static const char tail[] = "\"}\n";
    static const char hex[] = "0123456789abcdef";
    size_t cap = sizeof head + 6 * token_len + sizeof tail, n = 0, i;
    char *out = malloc(cap);

    if (!out) return NULL;
    memcpy(out, head, sizeof head - 1);
    n = sizeof head - 1;
    for (i = 0; i < token_len; i++) {
        unsigned char ch = (unsigned char)token[i];
        if (ch == '"' || ch == '\\') {
            out[n++] = '\\';
            out[n++] = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            memcpy(out + n, "\\u00", 4);
            out[n + 4] = hex[ch >> 4];
            out[n + 5] = hex[ch & 15];
            n += 6;
        } else {
            out[n++] = (char)ch;
        }
    }
    memcpy(out + n, tail, sizeof tail - 1);
    n += sizeof tail - 1;
    *len = n;
    return out;
}

/* ---- the reply parser ----------------------------------------------------------- */

struct jp {
    const char *p, *end;
};

/* Skip JSON whitespace. */
static void jp_ws(struct jp *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
        j->p++;
}

/* Append one code point as UTF-8 if it fits (surrogates become '?'). */
static void jp_put_utf8(char *out, size_t cap, size_t *n, unsigned cp) {
    char tmp[3];
    size_t k, len;

    if (cp >= 0xd800 && cp <= 0xdfff) cp = '?';
    if (cp < 0x80) { tmp[0] = (char)cp; len = 1; }
    else if (cp < 0x800) { tmp[0] = (char)(0xc0 | (cp >> 6)); tmp[1] = (char)(0x80 | (cp & 0x3f)); len = 2; }
    else {
        tmp[0] = (char)(0xe0 | (cp >> 12));
        tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        tmp[2] = (char)(0x80 | (cp & 0x3f));
        len = 3;
    }
    if (!out || *n + len >= cap) return;
    for (k = 0; k < len; k++) out[(*n)++] = tmp[k];
}

/* Read a string at j->p into out (NUL-terminated, silently truncated; out may be NULL).
 * *truncated (if given) tells whether it was. 0 on success, -1 if malformed. */
static int jp_string(struct jp *j, char *out, size_t cap, int *truncated) {
    size_t n = 0;

    if (truncated) *truncated = 0;
    if (j->p >= j->end || *j->p != '"') return -1;
    j->p++;
    while (j->p < j->end) {
        unsigned char ch = (unsigned char)*j->p++;
        if (ch == '"') {
            if (out && cap) out[n] = '\0';
            return 0;
        }
        if (ch < 0x20) return -1;
        if (ch == '\\') {
            unsigned cp = 0;
            int k;
            if (j->p >= j->end) return -1;
            ch = (unsigned char)*j->p++;
            switch (ch) {
            case '"': case '\\': case '/': cp = ch; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (j->end - j->p < 4) return -1;
                for (k = 0; k < 4; k++) {
                    char h = *j->p++;
                    cp <<= 4;
                    if (h >= '0' && h <= '9') cp |= (unsigned)(h - '0');
                    else if (h >= 'a' && h <= 'f') cp |= (unsigned)(h - 'a' + 10);
                    else if (h >= 'A' && h <= 'F') cp |= (unsigned)(h - 'A' + 10);
                    else return -1;
                }
                break;
            default: return -1;
            }
            if (out && n + 1 >= cap && truncated) *truncated = 1;
            jp_put_utf8(out, cap, &n, cp);
            continue;
        }
        if (out && n + 1 < cap) out[n++] = (char)ch;
        else if (truncated) *truncated = 1;
    }
    return -1;
}

/* Match a literal (true, false, null) at j->p. */
static int jp_literal(struct jp *j, const char *lit) {
    size_t n = strlen(lit);

    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) return -1;
    j->p += n;
    return 0;
}

/* Read a number; *value gets it if it is a plain non-negative integer, else -1. */
static int jp_number(struct jp *j, long *value) {
    const char *start = j->p;
    int plain = 1;
    long v = 0;

    while (j->p < j->end && strchr("+-0123456789.eE", *j->p)) {
        if (*j->p < '0' || *j->p > '9') plain = 0;
        else if (v < 100000000) v = v * 10 + (*j->p - '0');
        j->p++;
    }
    if (j->p == start) return -1;
    *value = plain ? v : -1;
    return 0;
}

/* Skip any JSON value (objects and arrays up to JP_MAX_DEPTH deep). */
static int jp_skip(struct jp *j, int depth) {
    long ignored;

    jp_ws(j);
    if (j->p >= j->end) return -1;
    switch (*j->p) {
    case '"': return jp_string(j, NULL, 0, NULL);
    case 't': return jp_literal(j, "true");
    case 'f': return jp_literal(j, "false");
    case 'n': return jp_literal(j, "null");
    case '{': case '[': {
        char close = *j->p == '{' ? '}' : ']';
        int object = close == '}';
        if (depth >= JP_MAX_DEPTH) return -1;
        j->p++;
        jp_ws(j);
        if (j->p < j->end && *j->p == close) { j->p++; return 0; }
        for (;;) {
            if (object) {
                jp_ws(j);
                if (jp_string(j, NULL, 0, NULL) < 0) return -1;
                jp_ws(j);
                if (j->p >= j->end || *j->p != ':') return -1;
                j->p++;
            }
            if (jp_skip(j, depth + 1) < 0) return -1;
            jp_ws(j);
            if (j->p >= j->end) return -1;
            if (*j->p == ',') { j->p++; continue; }
            if (*j->p == close) { j->p++; return 0; }
            return -1;
        }
    }
    default: return jp_number(j, &ignored);
    }
}

/* Copy a description of why the reply is not valid. */
static int reply_invalid(char *reason, size_t cap, const char *why) {
    if (cap) snprintf(reason, cap, "%s", why);
    return -1;
}

/* Parse the peer's reply line: 1 accepted, 0 refused (reason = its "error"), -1 invalid. */
int bridge_auth_parse_reply(const char *line, size_t len, char *reason, size_t reason_cap) {
    struct jp j = { line, line + len };
    int have_version = 0, have_ok = 0, ok = 0;

    if (reason_cap) reason[0] = '\0';
    if (len > 0 && line[len - 1] == '\r') j.end--;
    jp_ws(&j);
    if (j.p >= j.end || *j.p != '{') return reply_invalid(reason, reason_cap, "not a JSON object");
    j.p++;
    jp_ws(&j);
    if (j.p < j.end && *j.p == '}') j.p++;
    else for (;;) {
        char key[16];
        int truncated;

        jp_ws(&j);
        if (jp_string(&j, key, sizeof key, &truncated) < 0) goto bad_json;
        if (truncated) key[0] = '\0'; /* longer than any key we read: skip its value */
        jp_ws(&j);
        if (j.p >= j.end || *j.p != ':') goto bad_json;
        j.p++;
        jp_ws(&j);
        if (strcmp(key, "yao-bridge") == 0) {
            long v;
            if (jp_number(&j, &v) < 0 || v != BRIDGE_PROTO_VERSION)
                return reply_invalid(reason, reason_cap, "unsupported \"yao-bridge\" protocol version");
            have_version = 1;
        } else if (strcmp(key, "ok") == 0) {
            if (jp_literal(&j, "true") == 0) ok = 1;
            else if (jp_literal(&j, "false") == 0) ok = 0;
            else return reply_invalid(reason, reason_cap, "\"ok\" is not a boolean");
            have_ok = 1;
        } else if (strcmp(key, "error") == 0 && j.p < j.end && *j.p == '"') {
            if (jp_string(&j, reason, reason_cap, NULL) < 0) goto bad_json;
        } else if (jp_skip(&j, 1) < 0) {
            goto bad_json;
        }
        jp_ws(&j);
        if (j.p < j.end && *j.p == ',') { j.p++; continue; }
        if (j.p < j.end && *j.p == '}') { j.p++; break; }
        goto bad_json;
    }
    jp_ws(&j);
    if (j.p != j.end) goto bad_json;
    if (!have_version) return reply_invalid(reason, reason_cap, "not a yao-bridge handshake reply");
    if (!have_ok) return reply_invalid(reason, reason_cap, "handshake reply has no \"ok\" member");
    if (ok && reason_cap) reason[0] = '\0';
    return ok;
bad_json:
    return reply_invalid(reason, reason_cap, "malformed JSON");
}
