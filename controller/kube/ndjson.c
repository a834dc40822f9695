/* kube/ndjson.c — splits a chunked newline-delimited stream into lines. Owns the
 * unfinished-line buffer and the line-length ceiling. Each fed byte is looked at once
 * (memchr over the new chunk only) and copied once (into the pending buffer, so the
 * callback gets a writable, NUL-terminated line); the pending tail is never rescanned.
 * It does not parse JSON and does not know about watch events. */
#include "kube/ndjson.h"

#include <string.h>

/* After a line overflow the pending buffer's ceiling is set to 0: every later feed
 * then fails at once, until ndjson_free + ndjson_init. */
#define NDJSON_BROKEN(s) ((s)->pending.max == 0)

/* Start a splitter whose lines (bytes before '\n', '\r' included) may be at most
 * max_line bytes long; 0 is raised to 1. Allocates nothing. */
void ndjson_init(struct ndjson *s, size_t max_line) {
    dynbuf_init(&s->pending, max_line ? max_line : 1);
}

/* Hand the completed line in s->pending to fn (unless empty) and empty the buffer. */
static int ndjson_emit(struct ndjson *s, ndjson_line_fn fn, void *ud) {
    size_t len = s->pending.len;
    int rc = 0;

    if (len && s->pending.data[len - 1] == '\r') s->pending.data[--len] = '\0';
    if (len) rc = fn(ud, s->pending.data, len);
    dynbuf_reset(&s->pending);
    return rc;
}

/* Mark the stream unusable and drop what it held. */
static int ndjson_break(struct ndjson *s) {
    dynbuf_free(&s->pending);
    s->pending.max = 0;
    return -1;
}

/* Feed one chunk: emit every line it completes, keep the unfinished tail. Returns 0,
 * the callback's non-zero value (the rest of the chunk is then dropped), or -1 when a
 * line exceeds max_line (then and for every later feed). */
int ndjson_feed(struct ndjson *s, const char *chunk, size_t n, ndjson_line_fn fn, void *ud) {
    const char *p = chunk, *end = chunk + n, *nl;
    int rc;

    if (NDJSON_BROKEN(s)) return -1;
    if (n == 0) return 0;
    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        if (dynbuf_append(&s->pending, p, (size_t)(nl - p)) != 0) return ndjson_break(s);
        p = nl + 1;
        rc = ndjson_emit(s, fn, ud);
        if (rc) return rc;
    }
    if (p < end && dynbuf_append(&s->pending, p, (size_t)(end - p)) != 0)
        return ndjson_break(s);
    return 0;
}

/* Bytes of an unfinished line currently held. */
size_t ndjson_pending(const struct ndjson *s) {
    return s->pending.len;
}

/* Release the pending buffer; ndjson_init must be called before the next feed. */
void ndjson_free(struct ndjson *s) {
    dynbuf_free(&s->pending);
}
