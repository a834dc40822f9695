/* kube/ndjson.h — splits a newline-delimited JSON stream (a watch response body) that
 * arrives in arbitrary chunks into complete lines. Linear: each byte is scanned once;
 * only an unfinished tail is kept between chunks, bounded by max_line. Knows nothing
 * about JSON itself — the caller parses each line. */
#ifndef YAO_KUBE_NDJSON_H
#define YAO_KUBE_NDJSON_H

#include <stddef.h>
#include "base/dynbuf.h"

/* Called once per complete line, without the '\n' (a trailing '\r' is stripped too;
 * empty lines are skipped). line is NUL-terminated. Return 0 to go on, non-zero to stop:
 * ndjson_feed then returns that value. */
typedef int (*ndjson_line_fn)(void *ud, char *line, size_t len);

struct ndjson {
    struct dynbuf pending; /* the unfinished last line */
};

/* max_line bounds the bytes of one line before its '\n' (a trailing '\r' counts);
 * 0 is raised to 1. Allocates nothing. */
void ndjson_init(struct ndjson *s, size_t max_line);
/* Feed one chunk. Returns 0, the callback's non-zero value (the rest of that chunk is
 * dropped: stopping means the caller abandons the stream), or -1 when a line exceeds
 * max_line or on ENOMEM (the stream is then unusable: every later feed returns -1 until
 * ndjson_free + ndjson_init; the caller reconnects). */
int ndjson_feed(struct ndjson *s, const char *chunk, size_t n, ndjson_line_fn fn, void *ud);
/* Bytes of an unfinished line currently held. */
size_t ndjson_pending(const struct ndjson *s);
/* Release the pending buffer. */
void ndjson_free(struct ndjson *s);

#endif
