/* bridge/bridge_util.c — the first-error-wins error record, notices on stderr, the
 * monotonic clock and the bounded growable buffer (bridge_dyn: a hard ceiling on every
 * buffer, curl-dynbuf style). Only bridge_log touches a file descriptor (2). */
#include "bridge.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Record an error unless one is already recorded; control characters (a peer-supplied
 * reason, a path with a newline) become '?' so the message stays on one line. */
void bridge_err_set(struct bridge_err *e, int code, const char *fmt, ...) {
    va_list ap;
    char *p;

    if (e->code != 0) return;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    for (p = e->msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
}

/* A notice on stderr: one line, one write(2), so it never interleaves with another. */
void bridge_log(const char *fmt, ...) {
    char line[600];
    va_list ap;
    size_t n = strlen("yao-bridge: "), i;
    ssize_t w;

    memcpy(line, "yao-bridge: ", n);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    for (i = n; line[i]; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f) line[i] = '?';
    line[i++] = '\n';
    do w = write(2, line, i);
    while (w < 0 && errno == EINTR);
}

/* Milliseconds on the monotonic clock (deadlines must not move with wall-clock jumps). */
int64_t bridge_now_ms(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- bounded growable buffer ---------------------------------------------------- */

/* Start an empty buffer that refuses to grow past max bytes. */
void bridge_dyn_init(struct bridge_dyn *d, size_t max) {
    d->data = NULL;
    d->off = d->len = d->cap = 0;
    d->max = max;
}

/* Make room for n more bytes: 0, or -1 when that would pass the ceiling or malloc fails.
 * Consumed bytes at the front are reclaimed first, so a queue never grows without bound. */
static int dyn_reserve(struct bridge_dyn *d, size_t n) {
    size_t want, cap;
    unsigned char *p;

    if (d->off && d->len + n > d->cap) {
        memmove(d->data, d->data + d->off, d->len - d->off);
        d->len -= d->off;
        d->off = 0;
    }
    if (n > d->max || d->len > d->max - n) return -1;
    want = d->len + n;
    if (want <= d->cap) return 0;
    cap = d->cap ? d->cap : 256;
    while (cap < want) cap = cap > d->max / 2 ? d->max : cap * 2;
    p = realloc(d->data, cap + 1); /* +1: room for a NUL that bridge_dyn_str adds */
    if (!p) return -1;
    d->data = p;
    d->cap = cap;
    return 0;
}

/* Append n bytes: 0 or -1 (too big / out of memory; the buffer is unchanged). */
int bridge_dyn_add(struct bridge_dyn *d, const void *p, size_t n) {
    if (n == 0) return 0;
    if (dyn_reserve(d, n) < 0) return -1;
    memcpy(d->data + d->len, p, n);
    d->len += n;
    return 0;
}

/* Append a NUL-terminated string. */
int bridge_dyn_adds(struct bridge_dyn *d, const char *s) {
    return bridge_dyn_add(d, s, strlen(s));
}

/* Append printf-style text. */
int bridge_dyn_addf(struct bridge_dyn *d, const char *fmt, ...) {
    char small[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n < sizeof small) return bridge_dyn_add(d, small, (size_t)n);
    if (dyn_reserve(d, (size_t)n + 1) < 0) return -1;
    va_start(ap, fmt);
    vsnprintf((char *)d->data + d->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    d->len += (size_t)n;
    return 0;
}

/* Drop n bytes from the front (they have been written out). */
void bridge_dyn_consume(struct bridge_dyn *d, size_t n) {
    d->off += n;
    if (d->off >= d->len) d->off = d->len = 0;
}

/* The bytes as a NUL-terminated string (the NUL is not counted in the length). */
const char *bridge_dyn_str(struct bridge_dyn *d) {
    if (!d->data) {
        d->data = malloc(1);
        if (!d->data) return NULL;
    }
    d->data[d->len] = '\0';
    return (const char *)d->data + d->off;
}

/* Hand the bytes to the caller (malloc'd, NUL-terminated) and empty the buffer. */
char *bridge_dyn_take(struct bridge_dyn *d, size_t *len) {
    char *p;

    if (!bridge_dyn_str(d)) return NULL;
    if (d->off) memmove(d->data, d->data + d->off, d->len - d->off + 1);
    p = (char *)d->data;
    if (len) *len = d->len - d->off;
    bridge_dyn_init(d, d->max);
    return p;
}

/* Release the memory; the buffer is empty and usable again. */
void bridge_dyn_free(struct bridge_dyn *d) {
    free(d->data);
    bridge_dyn_init(d, d->max);
}
