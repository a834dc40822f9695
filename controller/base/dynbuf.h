/* base/dynbuf.h — growable byte buffer with a hard ceiling (after curl's dynbuf).
 * Every buffer that holds data from the network or a file is created with a maximum size;
 * growth past it fails with -1 instead of eating memory. The contents are always
 * NUL-terminated (not counted in len) so text can be used in place. */
#ifndef YAO_BASE_DYNBUF_H
#define YAO_BASE_DYNBUF_H

#include <stddef.h>

struct dynbuf {
    char *data;   /* NULL until the first append */
    size_t len;   /* bytes in use, excluding the terminating NUL */
    size_t cap;   /* bytes allocated */
    size_t max;   /* hard ceiling for len */
};

/* Initialise an empty buffer that may hold at most max bytes (SIZE_MAX is lowered by one
 * so the NUL always fits). Allocates nothing. */
void dynbuf_init(struct dynbuf *b, size_t max);
/* Append n bytes; 0 on success, -1 (buffer unchanged) if max would be exceeded or on ENOMEM. */
int dynbuf_append(struct dynbuf *b, const void *p, size_t n);
/* Append a NUL-terminated string; -1 for NULL, like dynbuf_append otherwise. */
int dynbuf_append_str(struct dynbuf *b, const char *s);
/* printf-style append; -1 on overflow of max (buffer unchanged). */
int dynbuf_printf(struct dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes (n <= len; a larger n empties the buffer), keeping the rest. */
void dynbuf_consume(struct dynbuf *b, size_t n);
/* Empty the buffer but keep its memory. */
void dynbuf_reset(struct dynbuf *b);
/* Hand the bytes to the caller (NUL-terminated, never NULL: "" when empty; caller frees)
 * and leave the buffer empty. Returns NULL only on ENOMEM. */
char *dynbuf_take(struct dynbuf *b);
/* Release the memory; the buffer is empty and reusable afterwards (same max). */
void dynbuf_free(struct dynbuf *b);

#endif
