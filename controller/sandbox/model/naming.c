/* sandbox/model/naming.c — pure naming rules: the pod name for a (user, chat) pair, sanitised
 * label values, the DNS-1123 label check and the short SHA-256 hash behind both.
 * Bytes are treated as ASCII; anything else (UTF-8 included) is just "not allowed" —
 * no locale, no ctype. It does not know about the API server: a 32-bit hash collision
 * between two hashed names is detected and reported by the caller (NameConflict). */
#include "sandbox/model/naming.h"

#include <string.h>
#include <openssl/evp.h>

#define SBX_PREFIX "yao-sb-"
#define SBX_PREFIX_LEN (sizeof(SBX_PREFIX) - 1)
#define SBX_HASH_LEN 8
/* Room left for <u> and <c> in "yao-sb-<u>-<c>-<hash>". */
#define SBX_HASHED_ROOM (SBX_NAME_MAX - SBX_PREFIX_LEN - 1 - 1 - SBX_HASH_LEN)

/* ASCII lower-case letter or digit. */
static int sbx_is_lower_alnum(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ASCII letter or digit, either case. */
static int sbx_is_alnum(unsigned char c) {
    return sbx_is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* True if s is a non-empty run of [a-z0-9]; its length goes to *len. */
static int sbx_is_plain_id(const char *s, size_t *len) {
    size_t i;

    for (i = 0; s[i]; i++)
        if (!sbx_is_lower_alnum((unsigned char)s[i])) return 0;
    *len = i;
    return i > 0;
}

/* Lower-case in, map everything outside [a-z0-9] to '-', collapse '-' runs, trim '-'
 * at both ends, keep at most max bytes (no trailing '-' after the cut); "x" if nothing
 * is left. out has room for max + 1 bytes (max >= 1). Returns the length written. */
static size_t sbx_sanitise_id(const char *in, char *out, size_t max) {
    size_t n = 0;
    const unsigned char *p;

    for (p = (const unsigned char *)in; *p && n < max; p++) {
        unsigned char c = *p;
        if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
        if (!sbx_is_lower_alnum(c)) {
            if (n == 0 || out[n - 1] == '-') continue; /* leading '-' or a run */
            c = '-';
        }
        out[n++] = (char)c;
    }
    while (n && out[n - 1] == '-') n--;
    if (n == 0) out[n++] = 'x';
    out[n] = '\0';
    return n;
}

/* Write the first 8 hex chars of SHA-256(a || b) to out; 0 on success, -1 (out = "")
 * if OpenSSL fails, which only happens on ENOMEM. */
static int sbx_hash_hex(const void *a, size_t alen, const void *b, size_t blen, char *out) {
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int i, rc = -1;

    out[0] = '\0';
    if (!ctx) goto done;
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) goto done;
    if (EVP_DigestUpdate(ctx, a, alen) != 1) goto done;
    if (blen && EVP_DigestUpdate(ctx, b, blen) != 1) goto done;
    if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen < SBX_HASH_LEN / 2) goto done;
    for (i = 0; i < SBX_HASH_LEN / 2; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 0x0f];
    }
    out[SBX_HASH_LEN] = '\0';
    rc = 0;
done:
    EVP_MD_CTX_free(ctx);
    return rc;
}

/* 8 lowercase hex chars of SHA-256(data). out >= 9 bytes ("" only on ENOMEM). */
void sbx_short_hash(const void *data, size_t len, char *out) {
    (void)sbx_hash_hex(data, len, NULL, 0, out);
}

/* Pod name for (user, chat): plain "yao-sb-<user>-<chat>" when both IDs are plain and it
 * fits, else "yao-sb-<u>-<c>-<hash>" (see naming.h). */
int sbx_name_pod(const char *user, const char *chat, char *out, size_t outlen) {
    char u[SBX_NAME_MAX + 1], c[SBX_NAME_MAX + 1], hash[SBX_HASH_LEN + 1];
    size_t ulen, clen, umax, cmax, half = SBX_HASHED_ROOM / 2;

    if (out && outlen) out[0] = '\0';
    if (!user || !chat || !*user || !*chat || !out || outlen < SBX_NAME_MAX + 1) return -1;

    if (sbx_is_plain_id(user, &ulen) && sbx_is_plain_id(chat, &clen) &&
        SBX_PREFIX_LEN + ulen + 1 + clen <= SBX_NAME_MAX) {
        memcpy(out, SBX_PREFIX, SBX_PREFIX_LEN);
        memcpy(out + SBX_PREFIX_LEN, user, ulen);
        out[SBX_PREFIX_LEN + ulen] = '-';
        memcpy(out + SBX_PREFIX_LEN + ulen + 1, chat, clen + 1);
        return 0;
    }

    /* Sanitise both at full room first, then share the room: a short side leaves what
     * it does not need to the other, two long sides get half each. */
    ulen = sbx_sanitise_id(user, u, SBX_HASHED_ROOM);
    clen = sbx_sanitise_id(chat, c, SBX_HASHED_ROOM);
    umax = ulen;
    cmax = clen;
    if (ulen + clen > SBX_HASHED_ROOM) {
        if (ulen <= half) cmax = SBX_HASHED_ROOM - ulen;
        else if (clen <= SBX_HASHED_ROOM - half) umax = SBX_HASHED_ROOM - clen;
        else { umax = half; cmax = SBX_HASHED_ROOM - half; }
    }
    /* Re-run the sanitiser with the final bound so a cut never leaves a trailing '-'. */
    if (umax < ulen) ulen = sbx_sanitise_id(user, u, umax);
    if (cmax < clen) clen = sbx_sanitise_id(chat, c, cmax);

    /* user + '\0' + chat: IDs cannot contain NUL, so the encoding is injective. */
    if (sbx_hash_hex(user, strlen(user) + 1, chat, strlen(chat), hash) != 0) return -1;
    memcpy(out, SBX_PREFIX, SBX_PREFIX_LEN);
    memcpy(out + SBX_PREFIX_LEN, u, ulen);
    out[SBX_PREFIX_LEN + ulen] = '-';
    memcpy(out + SBX_PREFIX_LEN + ulen + 1, c, clen);
    out[SBX_PREFIX_LEN + ulen + 1 + clen] = '-';
    memcpy(out + SBX_PREFIX_LEN + ulen + 1 + clen + 1, hash, SBX_HASH_LEN + 1);
    return 0;
}

/* True if s is already a valid label value: <= 63 chars of [A-Za-z0-9._-], alnum ends. */
static int sbx_is_label_value(const char *s) {
    size_t i;

    for (i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (i >= SBX_LABEL_VALUE_MAX) return 0;
        if (!sbx_is_alnum(ch) && ch != '-' && ch != '_' && ch != '.') return 0;
    }
    return i == 0 || (sbx_is_alnum((unsigned char)s[0]) && sbx_is_alnum((unsigned char)s[i - 1]));
}

/* Sanitised label value: unchanged when already valid; otherwise disallowed bytes become
 * '-' (a run of them one '-'), non-alnum ends are trimmed, the body is cut to leave room
 * and "-" + sbx_short_hash(in) is appended (just the hash when no body is left). */
void sbx_label_value(const char *in, char *out, size_t outlen) {
    /* body + '-' + hash must fit in 63 */
    enum { BODY_MAX = SBX_LABEL_VALUE_MAX - 1 - SBX_HASH_LEN };
    const unsigned char *p;
    size_t n = 0;
    int replaced = 0;

    if (!out || outlen == 0) return;
    out[0] = '\0';
    if (!in || outlen < SBX_LABEL_VALUE_MAX + 1) return;
    if (sbx_is_label_value(in)) {
        memcpy(out, in, strlen(in) + 1);
        return;
    }
    for (p = (const unsigned char *)in; *p && n < BODY_MAX; p++) {
        unsigned char ch = *p;
        if (!sbx_is_alnum(ch) && ch != '-' && ch != '_' && ch != '.') {
            if (replaced) continue; /* one '-' per run of disallowed bytes */
            ch = '-';
            replaced = 1;
        } else {
            replaced = 0;
        }
        if (n == 0 && !sbx_is_alnum(ch)) continue; /* must start alnum */
        out[n++] = (char)ch;
    }
    while (n && !sbx_is_alnum((unsigned char)out[n - 1])) n--;
    if (n) out[n++] = '-';
    if (sbx_hash_hex(in, strlen(in), NULL, 0, out + n) != 0) out[0] = '\0';
}

int sbx_is_dns_subdomain(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 253) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int alnum = sbx_is_lower_alnum(c);
        if (!alnum && c != '-' && c != '.') return 0;
        /* every dot-separated label starts and ends with an alphanumeric */
        int first = i == 0 || s[i - 1] == '.', last = i + 1 == n || s[i + 1] == '.';
        if ((first || last) && !alnum) return 0;
    }
    return 1;
}

int sbx_is_dns_label(const char *s) {
    size_t i;

    if (!s || !*s) return 0;
    for (i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i >= SBX_NAME_MAX) return 0;
        if (!sbx_is_lower_alnum(c) && c != '-') return 0;
    }
    return sbx_is_lower_alnum((unsigned char)s[0]) && sbx_is_lower_alnum((unsigned char)s[i - 1]);
}
