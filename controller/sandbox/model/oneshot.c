/* sandbox/model/oneshot.c — reading a one-shot run's termination message (see oneshot.h). */
#include "sandbox/model/oneshot.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbx_run_text(const char *p, size_t n, int cut_at_start, char *out) {
    size_t o = 0, i = 0;
    if (cut_at_start)
        while (i < n && ((unsigned char)p[i] & 0xC0) == 0x80) i++;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        out[o++] = (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f ? '?' : (char)c;
    }
    out[o] = 0;
}

/* The value of a base64 character, -1 for any other. */
static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decode base64 from p[0..n) (line breaks skipped, '=' ends it) into out (>= n bytes);
 * the decoded length, or -1 on any other character. */
static long b64_decode(const char *p, size_t n, char *out) {
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n' || c == '\r') continue;
        if (c == '=') break;
        int v = b64_value(c);
        if (v < 0) return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xFF);
        }
    }
    return (long)o;
}

/* Decode one framed tail of total stream length total into a new JSON-safe string. */
static char *framed_tail(const char *p, size_t n, unsigned long long total) {
    char *raw = malloc(n + 1), *text;
    long len;
    if (!raw) return NULL;
    if ((len = b64_decode(p, n, raw)) < 0 || (unsigned long long)len > total) { free(raw); return NULL; }
    if (!(text = malloc((size_t)len + 1))) { free(raw); return NULL; }
    sbx_run_text(raw, (size_t)len, total > (unsigned long long)len, text);
    free(raw);
    return text;
}

/* Text plus an optional note on a line of its own, as a new string. */
static char *with_note(const char *text, const char *note) {
    size_t tl = strlen(text), nl = note ? strlen(note) : 0;
    char *s = malloc(tl + nl + 3);
    if (!s) return NULL;
    memcpy(s, text, tl);
    if (nl) {
        if (tl && text[tl - 1] != '\n') s[tl++] = '\n';
        memcpy(s + tl, note, nl);
        tl += nl;
        s[tl++] = '\n';
    }
    s[tl] = 0;
    return s;
}

/* The wrapper's framing: 0 with out->out/err set (stderr without the note yet), 1 when the
 * message is not framed (or damaged), -1 on ENOMEM. */
static int parse_framed(const char *m, struct sbx_run_output *out) {
    unsigned long long nout, nerr;
    int used = 0;
    size_t fl = strlen(SBX_RUN_FRAME);
    if (strncmp(m, SBX_RUN_FRAME " ", fl + 1) != 0) return 1;
    if (sscanf(m + fl, " %llu %llu%n", &nout, &nerr, &used) != 2) return 1;
    const char *body = m + fl + used;
    if (*body != '\n') return 1;
    body++;
    /* The separator: a line holding only ".". */
    const char *sep = body[0] == '.' && body[1] == '\n' ? body : strstr(body, "\n.\n");
    if (!sep) return 1;
    size_t out_len = (size_t)(sep - body);
    const char *err_at = sep == body ? body + 2 : sep + 3;
    if (!(out->out = framed_tail(body, out_len, nout))) return 1;
    if (!(out->err = framed_tail(err_at, strlen(err_at), nerr))) {
        free(out->out);
        out->out = NULL;
        return 1;
    }
    out->truncated = nout > SBX_RUN_TAIL || nerr > SBX_RUN_TAIL;
    return 0;
}

int sbx_run_output_parse(const char *message, const char *note, struct sbx_run_output *out) {
    memset(out, 0, sizeof(*out));
    const char *m = message ? message : "";
    if (parse_framed(m, out) != 0) {
        /* Unframed: the whole text, as stderr. (framed_tail's NULL for ENOMEM and for a
         * damaged frame look alike; either way the raw text is the honest answer.) */
        size_t n = strlen(m);
        char *text = malloc(n + 1);
        if (!text) return -1;
        sbx_run_text(m, n, 0, text);
        out->err = text;
        if (!(out->out = strdup(""))) { sbx_run_output_free(out); return -1; }
    }
    if (note && *note) {
        char *e = with_note(out->err, note);
        if (!e) { sbx_run_output_free(out); return -1; }
        free(out->err);
        out->err = e;
    }
    return 0;
}

void sbx_run_output_free(struct sbx_run_output *out) {
    free(out->out);
    free(out->err);
    out->out = out->err = NULL;
}
