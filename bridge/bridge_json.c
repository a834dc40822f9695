/* bridge/bridge_json.c — the little JSON the grpc mode needs, as pure functions over byte
 * spans: validate a value, compact it onto one line, find an object's member, decode a
 * string, write a string literal.
 *
 * Why not a JSON library: the bridge must pass tool arguments and results through
 * unchanged — a DOM parser turns 12345678901234567890 into a double and reorders nothing
 * but loses that — and results can be many megabytes, so it scans spans instead of
 * building trees. Nothing here allocates except bjson_string and the output buffers. */
#include "bridge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Skip JSON whitespace. */
const char *bjson_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The end of the string starting at p ('"'), or NULL. */
static const char *string_end(const char *p, const char *end) {
    p++;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            if (++p >= end) return NULL;
            switch (*p) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p++;
                break;
            case 'u':
                if (end - p < 5) return NULL;
                for (int i = 1; i <= 4; i++)
                    if (hexval(p[i]) < 0) return NULL;
                p += 5;
                break;
            default:
                return NULL;
            }
            continue;
        }
        p++;
    }
    return NULL;
}

/* The end of the number at p, or NULL (RFC 8259 grammar). */
static const char *number_end(const char *p, const char *end) {
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (p < end && *p >= '0' && *p <= '9') p++;
    else return NULL;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    return p;
}

static const char *literal_end(const char *p, const char *end, const char *word) {
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && !memcmp(p, word, n) ? p + n : NULL;
}

/* The value at p, iteratively over a stack of open containers (no recursion: a hostile
 * "[[[[..." costs a bounded array, not the C stack). */
const char *bjson_value_end(const char *p, const char *end) {
    char stack[BJSON_MAX_DEPTH];
    int depth = 0;

    for (;;) {
        /* p is at the start of a value */
        if (p >= end) return NULL;
        switch (*p) {
        case '{':
        case '[':
            if (depth == BJSON_MAX_DEPTH) return NULL;
            stack[depth++] = *p;
            p = bjson_ws(p + 1, end);
            if (p < end && *p == (stack[depth - 1] == '{' ? '}' : ']')) {
                p++;
                depth--;
                break;
            }
            if (stack[depth - 1] == '{') {
                if (p >= end || *p != '"' || !(p = string_end(p, end))) return NULL;
                p = bjson_ws(p, end);
                if (p >= end || *p != ':') return NULL;
                p = bjson_ws(p + 1, end);
            }
            continue; /* parse the first element */
        case '"': p = string_end(p, end); break;
        case 't': p = literal_end(p, end, "true"); break;
        case 'f': p = literal_end(p, end, "false"); break;
        case 'n': p = literal_end(p, end, "null"); break;
        default: p = number_end(p, end); break;
        }
        /* a value ended at p: close containers, or go on to the next element */
        for (;;) {
            if (!p) return NULL;
            if (depth == 0) return p;
            p = bjson_ws(p, end);
            if (p >= end) return NULL;
            if (*p == ',') {
                p = bjson_ws(p + 1, end);
                if (stack[depth - 1] == '{') {
                    if (p >= end || *p != '"' || !(p = string_end(p, end))) return NULL;
                    p = bjson_ws(p, end);
                    if (p >= end || *p != ':') return NULL;
                    p = bjson_ws(p + 1, end);
                }
                break; /* parse the next element */
            }
            if (*p != (stack[depth - 1] == '{' ? '}' : ']')) return NULL;
            p++;
            depth--;
        }
    }
}

/* One value with optional surrounding whitespace, nothing else. */
int bjson_valid(const char *p, size_t n) {
    const char *end = p + n, *v = bjson_ws(p, end);

    v = bjson_value_end(v, end);
    return v && bjson_ws(v, end) == end;
}

/* Copy the value without insignificant whitespace: runs of non-whitespace are copied in
 * one piece, strings are skipped over whole (they may contain spaces). */
int bjson_compact(struct bridge_dyn *d, const char *p, size_t n) {
    const char *end = p + n, *run;

    p = bjson_ws(p, end);
    while (p < end) {
        run = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            if (*p == '"') {
                const char *e = string_end(p, end);
                if (!e) return -1;
                p = e;
            } else {
                p++;
            }
        }
        if (bridge_dyn_add(d, run, (size_t)(p - run)) < 0) return -1;
        p = bjson_ws(p, end);
    }
    return 0;
}

/* Append the UTF-8 encoding of code point cp. */
static size_t utf8_put(unsigned char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0], cp, need, i;

    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; }
    else return 0;
    if (n < need + 1) return 0;
    for (i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return need + 1;
}

static unsigned hex4(const char *p) {
    return (unsigned)(hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]));
}

/* Decode a string value; see bridge.h. */
char *bjson_string(const char *p, const char *e, size_t *len) {
    unsigned char *out, *o;
    size_t i;

    if (e - p < 2 || *p != '"' || string_end(p, e) != e) return NULL;
    out = malloc((size_t)(e - p)); /* escapes only ever shrink */
    if (!out) return NULL;
    o = out;
    for (p++, e--; p < e;) {
        if (*p != '\\') {
            *o++ = (unsigned char)*p++;
            continue;
        }
        p++;
        switch (*p) {
        case 'b': *o++ = '\b'; p++; break;
        case 'f': *o++ = '\f'; p++; break;
        case 'n': *o++ = '\n'; p++; break;
        case 'r': *o++ = '\r'; p++; break;
        case 't': *o++ = '\t'; p++; break;
        case 'u': {
            unsigned cp = hex4(p + 1);
            p += 5;
            if (cp >= 0xD800 && cp <= 0xDBFF && e - p >= 6 && p[0] == '\\' && p[1] == 'u') {
                unsigned lo = hex4(p + 2);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
            }
            if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) goto bad; /* NUL, lone surrogate */
            o += utf8_put(o, cp);
            break;
        }
        default: *o++ = (unsigned char)*p++; break; /* " \ / */
        }
    }
    *len = (size_t)(o - out);
    for (i = 0; i < *len;) {
        size_t l = out[i] ? utf8_len(out + i, *len - i) : 0;
        if (!l) goto bad;
        i += l;
    }
    *o = '\0';
    return (char *)out;
bad:
    free(out);
    return NULL;
}

/* Compare a raw key span (with quotes) with key after decoding escapes. */
static int key_equals(const char *p, const char *e, const char *key) {
    size_t n = strlen(key), dn;
    char *dec;
    int eq;

    if (!memchr(p, '\\', (size_t)(e - p)))
        return (size_t)(e - p) == n + 2 && !memcmp(p + 1, key, n);
    dec = bjson_string(p, e, &dn);
    eq = dec && dn == n && !memcmp(dec, key, n);
    free(dec);
    return eq;
}

/* Find a member of an object; see bridge.h. The object must already be valid JSON. */
int bjson_member(const char *p, const char *end, const char *key, const char **vp,
                 const char **ve) {
    int found = 0;

    p = bjson_ws(p, end);
    if (p >= end || *p != '{') return -1;
    p = bjson_ws(p + 1, end);
    while (p < end && *p == '"') {
        const char *k = p, *kend = string_end(p, end), *v, *vend;
        if (!kend) return -1;
        p = bjson_ws(kend, end);
        if (p >= end || *p != ':') return -1;
        v = bjson_ws(p + 1, end);
        vend = bjson_value_end(v, end);
        if (!vend) return -1;
        if (key_equals(k, kend, key)) { /* a repeated key: the last one wins, as in Go */
            *vp = v;
            *ve = vend;
            found = 1;
        }
        p = bjson_ws(vend, end);
        if (p < end && *p == ',') p = bjson_ws(p + 1, end);
    }
    return found;
}

/* Write s as a JSON string literal. */
int bjson_add_string(struct bridge_dyn *d, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;

    if (bridge_dyn_add(d, "\"", 1) < 0) return -1;
    while (i < n) {
        const char *esc = NULL;
        char ubuf[8];
        size_t l = 1;

        switch (u[i]) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (u[i] < 0x20 || u[i] == 0x7f) {
                snprintf(ubuf, sizeof ubuf, "\\u%04x", u[i]);
                esc = ubuf;
            } else if (u[i] >= 0x80 && !(l = utf8_len(u + i, n - i))) {
                esc = "\xEF\xBF\xBD"; /* U+FFFD */
                l = 1;
            }
        }
        if (esc) {
            if (bridge_dyn_add(d, s + run, i - run) < 0 || bridge_dyn_adds(d, esc) < 0) return -1;
            run = i + l;
        }
        i += l;
    }
    if (bridge_dyn_add(d, s + run, n - run) < 0) return -1;
    return bridge_dyn_add(d, "\"", 1);
}
