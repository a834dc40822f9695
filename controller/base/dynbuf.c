/* base/dynbuf.c — the growable byte buffer with a hard ceiling. Owns allocation, growth
 * (doubling, clamped to max + 1 for the NUL) and the ownership hand-off in dynbuf_take.
 * It does not know what the bytes mean; callers choose the ceiling. */
#include "base/dynbuf.h"

#include <assert.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DYNBUF_MIN_CAP 64

/* Debug-build invariant: data is set whenever something is held, and fits. */
#define DYNBUF_CHECK(b) \
    assert(((b)->len == 0 || (b)->data) && (b)->len <= (b)->max && \
           (!(b)->data || (b)->len < (b)->cap))

/* Initialise an empty buffer that may hold at most max bytes (SIZE_MAX is lowered by
 * one so max + 1, room for the NUL, never wraps). Allocates nothing. */
void dynbuf_init(struct dynbuf *b, size_t max) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max < SIZE_MAX ? max : SIZE_MAX - 1;
}

/* Make room for len + extra bytes plus the NUL; the caller checked max already.
 * 0 on success, -1 on ENOMEM (buffer unchanged). */
static int dynbuf_reserve(struct dynbuf *b, size_t extra) {
    size_t need = b->len + extra + 1; /* cannot overflow: len + extra <= max < SIZE_MAX */
    size_t ceiling = b->max + 1;
    size_t ncap;
    char *p;

    if (b->data && need <= b->cap) return 0;
    ncap = b->cap ? b->cap : DYNBUF_MIN_CAP;
    while (ncap < need) {
        if (ncap > ceiling / 2) { ncap = ceiling; break; }
        ncap *= 2;
    }
    if (ncap > ceiling) ncap = ceiling;
    if (ncap < need) ncap = need;
    p = realloc(b->data, ncap);
    if (!p) return -1;
    if (!b->data) p[0] = '\0';
    b->data = p;
    b->cap = ncap;
    return 0;
}

/* Append n bytes; 0 on success, -1 (buffer unchanged) if max would be exceeded or on ENOMEM. */
int dynbuf_append(struct dynbuf *b, const void *p, size_t n) {
    DYNBUF_CHECK(b);
    if (n > b->max - b->len) return -1;
    if (dynbuf_reserve(b, n) != 0) return -1;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* Append a NUL-terminated string; -1 for NULL, overflow of max or ENOMEM. */
int dynbuf_append_str(struct dynbuf *b, const char *s) {
    if (!s) return -1;
    return dynbuf_append(b, s, strlen(s));
}

/* printf-style append: measure first, check max, then format in place. */
int dynbuf_printf(struct dynbuf *b, const char *fmt, ...) {
    va_list ap;
    int n;

    DYNBUF_CHECK(b);
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n > b->max - b->len) return -1;
    if (dynbuf_reserve(b, (size_t)n) != 0) return -1;
    va_start(ap, fmt);
    n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->data[b->len] = '\0'; /* keep the buffer unchanged */
        return -1;
    }
    b->len += (size_t)n;
    return 0;
}

/* Drop the first n bytes (n <= len; more is clamped), keeping the rest. */
void dynbuf_consume(struct dynbuf *b, size_t n) {
    DYNBUF_CHECK(b);
    if (n >= b->len) {
        dynbuf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

/* Empty the buffer but keep its memory. */
void dynbuf_reset(struct dynbuf *b) {
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

/* Hand the bytes to the caller ("" when empty; caller frees) and leave the buffer empty. */
char *dynbuf_take(struct dynbuf *b) {
    char *p;

    DYNBUF_CHECK(b);
    p = b->data;
    if (!p) {
        p = malloc(1);
        if (!p) return NULL;
        p[0] = '\0';
    }
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}

/* Release the memory; the buffer keeps its ceiling and is reusable afterwards. */
void dynbuf_free(struct dynbuf *b) {
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
