/* base/strmap.h — a string-keyed hash map (separate chaining, power-of-two buckets,
 * grows at load 1). Keys are copied; values are opaque pointers the caller owns.
 * Not thread-safe: the owner (queue, informer cache) holds its own lock. */
#ifndef YAO_BASE_STRMAP_H
#define YAO_BASE_STRMAP_H

#include <stddef.h>

struct strmap_entry {
    struct strmap_entry *next;
    void *value;
    size_t hash;
    char key[];
};

struct strmap {
    struct strmap_entry **buckets;
    size_t nbuckets, count;
};

void strmap_init(struct strmap *m);
/* Value for key, or NULL. */
void *strmap_get(const struct strmap *m, const char *key);
/* The stored copy of key (stable while the entry exists), or NULL. */
const char *strmap_key(const struct strmap *m, const char *key);
/* Insert or replace; *old receives the replaced value (NULL if new). 0, or -1 on ENOMEM. */
int strmap_put(struct strmap *m, const char *key, void *value, void **old);
/* Remove key; returns its value (NULL if absent). */
void *strmap_remove(struct strmap *m, const char *key);
/* Call fn for every entry (no insertions/removals during the walk). Stops early when fn
 * returns non-zero. */
void strmap_foreach(const struct strmap *m, int (*fn)(void *ud, const char *key, void *value), void *ud);
/* Free all entries; free_value (may be NULL) is called on each value. */
void strmap_clear(struct strmap *m, void (*free_value)(void *));

#endif
