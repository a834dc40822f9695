/* base/strmap.c — string-keyed hash map (see strmap.h). FNV-1a hashing. */
#include "base/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a over the key's bytes. */
static size_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

void strmap_init(struct strmap *m) { memset(m, 0, sizeof(*m)); }

/* Locate the link that points at key's entry (or at the NULL ending its chain). */
static struct strmap_entry **find(const struct strmap *m, const char *key, size_t h) {
    if (!m->nbuckets) return NULL;
    struct strmap_entry **pp = &m->buckets[h & (m->nbuckets - 1)];
    while (*pp && ((*pp)->hash != h || strcmp((*pp)->key, key) != 0)) pp = &(*pp)->next;
    return pp;
}

void *strmap_get(const struct strmap *m, const char *key) {
    struct strmap_entry **pp = find(m, key, hash_str(key));
    return pp && *pp ? (*pp)->value : NULL;
}

const char *strmap_key(const struct strmap *m, const char *key) {
    struct strmap_entry **pp = find(m, key, hash_str(key));
    return pp && *pp ? (*pp)->key : NULL;
}

/* Double the bucket array and rehash. */
static int grow(struct strmap *m) {
    size_t n = m->nbuckets ? m->nbuckets * 2 : 16;
    struct strmap_entry **b = calloc(n, sizeof(*b));
    if (!b) return -1;
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct strmap_entry *e = m->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
    return 0;
}

int strmap_put(struct strmap *m, const char *key, void *value, void **old) {
    size_t h = hash_str(key);
    if (old) *old = NULL;
    struct strmap_entry **pp = find(m, key, h);
    if (pp && *pp) {
        if (old) *old = (*pp)->value;
        (*pp)->value = value;
        return 0;
    }
    if (m->count >= m->nbuckets && grow(m) < 0) return -1;
    size_t klen = strlen(key) + 1;
    struct strmap_entry *e = malloc(sizeof(*e) + klen);
    if (!e) return -1;
    memcpy(e->key, key, klen);
    e->hash = h;
    e->value = value;
    e->next = m->buckets[h & (m->nbuckets - 1)];
    m->buckets[h & (m->nbuckets - 1)] = e;
    m->count++;
    return 0;
}

void *strmap_remove(struct strmap *m, const char *key) {
    struct strmap_entry **pp = find(m, key, hash_str(key));
    if (!pp || !*pp) return NULL;
    struct strmap_entry *e = *pp;
    void *v = e->value;
    *pp = e->next;
    free(e);
    m->count--;
    return v;
}

void strmap_foreach(const struct strmap *m, int (*fn)(void *ud, const char *key, void *value), void *ud) {
    for (size_t i = 0; i < m->nbuckets; i++)
        for (struct strmap_entry *e = m->buckets[i]; e; e = e->next)
            if (fn(ud, e->key, e->value)) return;
}

void strmap_clear(struct strmap *m, void (*free_value)(void *)) {
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct strmap_entry *e = m->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            if (free_value) free_value(e->value);
            free(e);
        }
    }
    free(m->buckets);
    memset(m, 0, sizeof(*m));
}
