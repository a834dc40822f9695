/* runtime/objpack.c — cached objects deflated against a preset dictionary (see objpack.h).
 *
 * A blob is a 9-byte header — the text's length (4 bytes), the payload's length (4
 * bytes), the mode (1 byte: stored or deflated) — and the payload. Raw deflate (no zlib
 * header or checksum: the lengths are checked instead) with a 4 KiB window: the
 * dictionary and the object must fit in it for the object to refer back to all of the
 * dictionary, and the compressor's state stays ~30 KB per cache. */
#include "runtime/objpack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define WINDOW_BITS 12              /* 4 KiB: negative below, for raw deflate */
#define DICT_MAX (1u << WINDOW_BITS)
#define MEM_LEVEL 5                 /* hash tables of 2^(5+7) entries: small state, small texts */
#define HEADER 9
#define TEXT_MAX 0x7fffffffu

enum { MODE_STORED = 0, MODE_DEFLATED = 1 };

struct objpack {
    z_stream z;                     /* the compressor, reset for each object */
    int z_ready;
    unsigned char *dict;            /* NULL until the first object */
    size_t dict_len;
    unsigned char *scratch;         /* deflate's output before it is copied to its blob */
    size_t scratch_len;
};

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

struct objpack *objpack_new(void) {
    struct objpack *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    if (deflateInit2(&p->z, Z_BEST_SPEED, Z_DEFLATED, -WINDOW_BITS, MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(p);
        return NULL;
    }
    p->z_ready = 1;
    return p;
}

void objpack_free(struct objpack *p) {
    if (!p) return;
    if (p->z_ready) deflateEnd(&p->z);
    free(p->dict);
    free(p->scratch);
    free(p);
}

size_t objpack_size(const void *blob) {
    return HEADER + get32((const unsigned char *)blob + 4);
}

/* A blob of payload[0..plen) for a text of len bytes. */
static void *blob_new(uint32_t len, int mode, const void *payload, size_t plen) {
    unsigned char *b = malloc(HEADER + plen);
    if (!b) return NULL;
    put32(b, len);
    put32(b + 4, (uint32_t)plen);
    b[8] = (unsigned char)mode;
    memcpy(b + HEADER, payload, plen);
    return b;
}

/* Deflate text against the dictionary into scratch: its length, or 0 when it did not
 * work out (out of memory, or no smaller than the text). */
static size_t deflate_text(struct objpack *p, const char *text, size_t len) {
    uLong bound = deflateBound(&p->z, (uLong)len);
    if (bound > p->scratch_len) {
        unsigned char *s = realloc(p->scratch, bound);
        if (!s) return 0;
        p->scratch = s;
        p->scratch_len = bound;
    }
    if (deflateReset(&p->z) != Z_OK ||
        deflateSetDictionary(&p->z, p->dict, (uInt)p->dict_len) != Z_OK)
        return 0;
    p->z.next_in = (Bytef *)(uintptr_t)text;
    p->z.avail_in = (uInt)len;
    p->z.next_out = p->scratch;
    p->z.avail_out = (uInt)p->scratch_len;
    if (deflate(&p->z, Z_FINISH) != Z_STREAM_END) return 0;
    size_t out = p->scratch_len - p->z.avail_out;
    return out < len ? out : 0;
}

void *objpack_pack(struct objpack *p, const char *text, size_t len) {
    if (len > TEXT_MAX) return NULL;
    if (!p->dict) {
        /* The first object is the dictionary: a later one of its kind is mostly the same
         * keys and values. Its tail, when longer than the window (zlib uses the tail). */
        size_t n = len < DICT_MAX ? len : DICT_MAX;
        if (n) {
            if (!(p->dict = malloc(n))) return NULL;
            memcpy(p->dict, text + len - n, n);
            p->dict_len = n;
        }
    }
    size_t zlen = p->dict ? deflate_text(p, text, len) : 0;
    return zlen ? blob_new((uint32_t)len, MODE_DEFLATED, p->scratch, zlen)
                : blob_new((uint32_t)len, MODE_STORED, text, len);
}

char *objpack_unpack(const struct objpack *p, const void *blob, size_t *len) {
    const unsigned char *b = blob;
    uint32_t tlen = get32(b), plen = get32(b + 4);
    char *text = malloc((size_t)tlen + 1);
    if (!text) return NULL;
    if (b[8] == MODE_STORED && plen == tlen) {
        memcpy(text, b + HEADER, tlen);
    } else if (b[8] == MODE_DEFLATED && p->dict) {
        z_stream z;
        memset(&z, 0, sizeof(z));
        if (inflateInit2(&z, -WINDOW_BITS) != Z_OK) { free(text); return NULL; }
        int ok = inflateSetDictionary(&z, p->dict, (uInt)p->dict_len) == Z_OK;
        if (ok) {
            z.next_in = (Bytef *)(uintptr_t)(b + HEADER);
            z.avail_in = plen;
            z.next_out = (Bytef *)text;
            z.avail_out = tlen;
            ok = inflate(&z, Z_FINISH) == Z_STREAM_END && z.total_out == tlen;
        }
        inflateEnd(&z);
        if (!ok) { free(text); return NULL; }
    } else {
        free(text);
        return NULL;
    }
    text[tlen] = 0;
    if (len) *len = tlen;
    return text;
}
