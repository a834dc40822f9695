/* runtime/objpack.h — how an informer cache keeps its objects small: each object's compact
 * JSON text is deflated against a preset dictionary, the text of the first object the
 * cache stored. Objects of one kind made by one controller differ in a few names, uids and
 * timestamps, so a cached Sandbox, pod or claim of ~1–1.5 KB of text packs to ~100–200
 * bytes (zlib, raw deflate, 4 KiB window). A text that would not shrink is kept as is.
 *
 * One packer per cache. objpack_pack is called by one thread at a time (the informer's,
 * under its write lock); objpack_unpack from any thread (it keeps no state), for blobs it
 * can see, which were all packed after the dictionary was fixed. */
#ifndef YAO_RUNTIME_OBJPACK_H
#define YAO_RUNTIME_OBJPACK_H

#include <stddef.h>

struct objpack;

struct objpack *objpack_new(void);
void objpack_free(struct objpack *p);

/* A new blob (caller frees with free()) holding text[0..len); the first call fixes the
 * dictionary. NULL when out of memory. */
void *objpack_pack(struct objpack *p, const char *text, size_t len);
/* The text of a blob this packer made, NUL-terminated (caller frees), its length in *len
 * when len is not NULL. NULL when out of memory (or the blob is not a blob: its header is
 * checked; its payload is trusted, it never left this process). */
char *objpack_unpack(const struct objpack *p, const void *blob, size_t *len);
/* Bytes a blob occupies (its header included). */
size_t objpack_size(const void *blob);

#endif
