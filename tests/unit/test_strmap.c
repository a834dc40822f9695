/* tests/unit/test_strmap.c — the string-keyed hash map (base/strmap.c): put, get,
 * replace with the old value handed back, remove, stored key copies, growth to 100k
 * keys with everything still reachable, foreach visiting each entry once (and stopping
 * early), and clear freeing values through the destructor (valgrind checks the rest). */
#include "check.h"

#include "base/strmap.h"

#define NBIG 100000

static void *iv(uintptr_t n) { return (void *)n; }

TEST(empty_map) {
    struct strmap m;
    strmap_init(&m);
    CHECK_INT(m.count, 0);
    CHECK(strmap_get(&m, "a") == NULL);
    CHECK(strmap_key(&m, "a") == NULL);
    CHECK(strmap_remove(&m, "a") == NULL);
    CHECK_INT(m.count, 0);
    strmap_clear(&m, NULL);
    strmap_clear(&m, free);
    CHECK_INT(m.count, 0);
    CHECK(m.buckets == NULL);
}

TEST(put_get_replace_remove) {
    struct strmap m;
    void *old = iv(99);
    strmap_init(&m);
    CHECK_INT(strmap_put(&m, "ns/a", iv(1), &old), 0);
    CHECK(old == NULL);
    CHECK_INT(strmap_put(&m, "ns/b", iv(2), NULL), 0);
    CHECK_INT(m.count, 2);
    CHECK(strmap_get(&m, "ns/a") == iv(1));
    CHECK(strmap_get(&m, "ns/b") == iv(2));
    CHECK(strmap_get(&m, "ns/c") == NULL);
    CHECK(strmap_get(&m, "ns/") == NULL);
    CHECK(strmap_get(&m, "ns/aa") == NULL);
    CHECK(strmap_get(&m, "NS/A") == NULL); /* case-sensitive */

    /* replace hands back the old value and keeps the count */
    CHECK_INT(strmap_put(&m, "ns/a", iv(10), &old), 0);
    CHECK(old == iv(1));
    CHECK_INT(m.count, 2);
    CHECK(strmap_get(&m, "ns/a") == iv(10));
    CHECK_INT(strmap_put(&m, "ns/a", iv(11), NULL), 0);
    CHECK(strmap_get(&m, "ns/a") == iv(11));

    /* a NULL value is stored, but reads like absent */
    CHECK_INT(strmap_put(&m, "ns/null", NULL, NULL), 0);
    CHECK_INT(m.count, 3);
    CHECK(strmap_get(&m, "ns/null") == NULL);
    CHECK_STR(strmap_key(&m, "ns/null"), "ns/null");

    CHECK(strmap_remove(&m, "ns/a") == iv(11));
    CHECK_INT(m.count, 2);
    CHECK(strmap_get(&m, "ns/a") == NULL);
    CHECK(strmap_remove(&m, "ns/a") == NULL);
    CHECK_INT(m.count, 2);
    CHECK(strmap_get(&m, "ns/b") == iv(2));
    CHECK(strmap_remove(&m, "ns/null") == NULL);
    CHECK_INT(m.count, 1);
    CHECK(strmap_key(&m, "ns/null") == NULL);

    /* re-insert after removal */
    CHECK_INT(strmap_put(&m, "ns/a", iv(3), &old), 0);
    CHECK(old == NULL);
    CHECK(strmap_get(&m, "ns/a") == iv(3));
    CHECK_INT(m.count, 2);
    strmap_clear(&m, NULL);
    CHECK_INT(m.count, 0);
}

TEST(keys_are_copied) {
    struct strmap m;
    char key[16] = "ns/x";
    strmap_init(&m);
    CHECK_INT(strmap_put(&m, key, iv(7), NULL), 0);
    const char *stored = strmap_key(&m, "ns/x");
    CHECK(stored != NULL && stored != key);
    CHECK_STR(stored, "ns/x");
    key[3] = 'y'; /* the caller's buffer changes; the map does not */
    CHECK(strmap_get(&m, "ns/x") == iv(7));
    CHECK(strmap_get(&m, "ns/y") == NULL);
    /* the stored copy stays put while the entry lives, across growth */
    for (int i = 0; i < 1000; i++) {
        char k[32];
        snprintf(k, sizeof(k), "grow-%d", i);
        strmap_put(&m, k, iv(1), NULL);
    }
    CHECK(strmap_key(&m, "ns/x") == stored);
    CHECK_STR(stored, "ns/x");
    strmap_clear(&m, NULL);
}

TEST(empty_and_odd_keys) {
    struct strmap m;
    strmap_init(&m);
    CHECK_INT(strmap_put(&m, "", iv(1), NULL), 0);
    CHECK_INT(strmap_put(&m, "\xe7\x94\xa8", iv(2), NULL), 0);
    CHECK_INT(strmap_put(&m, "a/b/c.d", iv(3), NULL), 0);
    char longkey[5000];
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    CHECK_INT(strmap_put(&m, longkey, iv(4), NULL), 0);
    CHECK(strmap_get(&m, "") == iv(1));
    CHECK(strmap_get(&m, "\xe7\x94\xa8") == iv(2));
    CHECK(strmap_get(&m, "a/b/c.d") == iv(3));
    CHECK(strmap_get(&m, longkey) == iv(4));
    longkey[4000] = '\0';
    CHECK(strmap_get(&m, longkey) == NULL);
    CHECK_INT(m.count, 4);
    strmap_clear(&m, NULL);
}

/* Keys whose FNV-1a hashes are equal modulo small bucket counts still stay apart. */
TEST(many_keys_per_bucket) {
    struct strmap m;
    strmap_init(&m);
    /* 16 buckets at first: 17 keys force a chain in some bucket before growth */
    for (uintptr_t i = 0; i < 17; i++) {
        char k[8];
        snprintf(k, sizeof(k), "%c", (char)('a' + i));
        CHECK_INT(strmap_put(&m, k, iv(i + 1), NULL), 0);
    }
    for (uintptr_t i = 0; i < 17; i++) {
        char k[8];
        snprintf(k, sizeof(k), "%c", (char)('a' + i));
        CHECK(strmap_get(&m, k) == iv(i + 1));
    }
    /* remove from the middle of chains */
    for (uintptr_t i = 0; i < 17; i += 2) {
        char k[8];
        snprintf(k, sizeof(k), "%c", (char)('a' + i));
        CHECK(strmap_remove(&m, k) == iv(i + 1));
    }
    for (uintptr_t i = 0; i < 17; i++) {
        char k[8];
        snprintf(k, sizeof(k), "%c", (char)('a' + i));
        CHECK(strmap_get(&m, k) == (i % 2 ? iv(i + 1) : NULL));
    }
    CHECK_INT(m.count, 8);
    strmap_clear(&m, NULL);
}

TEST(growth_to_100k_keys) {
    struct strmap m;
    char k[48];
    int wrong = 0;
    strmap_init(&m);
    for (uintptr_t i = 0; i < NBIG; i++) {
        snprintf(k, sizeof(k), "namespace-%lu/sandbox-%lu", (unsigned long)(i % 37),
                 (unsigned long)i);
        if (strmap_put(&m, k, iv(i + 1), NULL) != 0) wrong++;
    }
    CHECK_INT(wrong, 0);
    CHECK_INT(m.count, NBIG);
    /* load factor stays at most 1, with power-of-two buckets */
    CHECK(m.nbuckets >= NBIG);
    CHECK_INT(m.nbuckets & (m.nbuckets - 1), 0);
    for (uintptr_t i = 0; i < NBIG; i++) {
        snprintf(k, sizeof(k), "namespace-%lu/sandbox-%lu", (unsigned long)(i % 37),
                 (unsigned long)i);
        if (strmap_get(&m, k) != iv(i + 1)) wrong++;
    }
    CHECK_INT(wrong, 0);
    /* absent keys that look alike */
    for (uintptr_t i = 0; i < 1000; i++) {
        snprintf(k, sizeof(k), "namespace-%lu/sandbox-%lu", (unsigned long)((i + 1) % 37),
                 (unsigned long)i);
        if (strmap_get(&m, k) != NULL) wrong++;
    }
    CHECK_INT(wrong, 0);
    /* remove every other, then check both halves */
    for (uintptr_t i = 0; i < NBIG; i += 2) {
        snprintf(k, sizeof(k), "namespace-%lu/sandbox-%lu", (unsigned long)(i % 37),
                 (unsigned long)i);
        if (strmap_remove(&m, k) != iv(i + 1)) wrong++;
    }
    CHECK_INT(wrong, 0);
    CHECK_INT(m.count, NBIG / 2);
    for (uintptr_t i = 0; i < NBIG; i++) {
        snprintf(k, sizeof(k), "namespace-%lu/sandbox-%lu", (unsigned long)(i % 37),
                 (unsigned long)i);
        if (strmap_get(&m, k) != (i % 2 ? iv(i + 1) : NULL)) wrong++;
    }
    CHECK_INT(wrong, 0);
    strmap_clear(&m, NULL);
    CHECK_INT(m.count, 0);
    CHECK_INT(m.nbuckets, 0);
}

/* foreach: a per-index visit counter. */
struct visits {
    unsigned char *seen;
    size_t n, calls, bad, stop_after;
};

static int visit(void *ud, const char *key, void *value) {
    struct visits *v = ud;
    unsigned long i;
    v->calls++;
    if (sscanf(key, "k%lu", &i) != 1 || i >= v->n || (uintptr_t)value != i + 1) {
        v->bad++;
        return 0;
    }
    v->seen[i]++;
    return v->stop_after && v->calls >= v->stop_after;
}

TEST(foreach_visits_each_once) {
    struct strmap m;
    struct visits v = {0};
    char k[32];
    size_t once = 0;
    strmap_init(&m);
    v.n = 5000;
    v.seen = calloc(v.n, 1);
    CHECK(v.seen != NULL);
    if (!v.seen) return;
    /* foreach on an empty map calls nothing */
    strmap_foreach(&m, visit, &v);
    CHECK_INT(v.calls, 0);
    for (uintptr_t i = 0; i < v.n; i++) {
        snprintf(k, sizeof(k), "k%lu", (unsigned long)i);
        strmap_put(&m, k, iv(i + 1), NULL);
    }
    /* replacing does not add a second entry */
    strmap_put(&m, "k42", iv(43), NULL);
    strmap_foreach(&m, visit, &v);
    CHECK_INT(v.calls, v.n);
    CHECK_INT(v.bad, 0);
    for (size_t i = 0; i < v.n; i++)
        if (v.seen[i] == 1) once++;
    CHECK_INT(once, v.n);

    /* a non-zero return stops the walk */
    memset(v.seen, 0, v.n);
    v.calls = 0;
    v.stop_after = 10;
    strmap_foreach(&m, visit, &v);
    CHECK_INT(v.calls, 10);
    free(v.seen);
    strmap_clear(&m, NULL);
}

/* clear: a destructor that counts and frees. */
static int freed;
static void count_free(void *p) {
    if (p) freed++;
    free(p);
}

TEST(clear_frees_values) {
    struct strmap m;
    char k[32];
    strmap_init(&m);
    freed = 0;
    for (int i = 0; i < 300; i++) {
        char *val = malloc(64);
        CHECK(val != NULL);
        if (!val) break;
        snprintf(val, 64, "value %d", i);
        snprintf(k, sizeof(k), "k%d", i);
        CHECK_INT(strmap_put(&m, k, val, NULL), 0);
    }
    /* replacing: the caller gets the old value back and frees it */
    void *old = NULL;
    char *repl = strdup("replacement");
    CHECK_INT(strmap_put(&m, "k7", repl, &old), 0);
    CHECK_STR((char *)old, "value 7");
    free(old);
    CHECK_STR((char *)strmap_get(&m, "k7"), "replacement");
    /* removing hands the value back too */
    char *gone = strmap_remove(&m, "k8");
    CHECK_STR(gone, "value 8");
    free(gone);
    CHECK_INT(m.count, 299);
    strmap_clear(&m, count_free);
    CHECK_INT(freed, 299);
    CHECK_INT(m.count, 0);
    CHECK(m.buckets == NULL);
    /* usable again after clear */
    CHECK_INT(strmap_put(&m, "again", iv(1), NULL), 0);
    CHECK(strmap_get(&m, "again") == iv(1));
    strmap_clear(&m, NULL);
}
