/* fuzz/fuzz.h — shared by the libFuzzer targets in fuzz/: the entry point's prototype,
 * an assertion that survives NDEBUG (a failed property is a crash the fuzzer saves), and
 * helpers to consume the input. Each target is also linked into fuzz/replay.c (plain gcc
 * + ASan/UBSan) to replay fuzz/regressions/<target>/ and fuzz/corpus/<target>/. */
#ifndef YAO_FUZZ_H
#define YAO_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond) do {                                                    \
    if (!(cond)) {                                                                \
        fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
        abort();                                                                  \
    }                                                                             \
} while (0)

/* Reads the input front to back. */
struct fuzz_in {
    const uint8_t *p;
    size_t n;
};

/* Next byte, or 0 once the input is used up. */
static inline uint8_t fuzz_byte(struct fuzz_in *in) {
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

/* Up to want bytes (fewer at the end); *got receives the count. */
static inline const uint8_t *fuzz_bytes(struct fuzz_in *in, size_t want, size_t *got) {
    const uint8_t *p = in->p;
    if (want > in->n) want = in->n;
    in->p += want;
    in->n -= want;
    *got = want;
    return p;
}

/* A NUL-terminated heap copy of n bytes (embedded NULs make the C string shorter). */
static inline char *fuzz_strndup(const uint8_t *p, size_t n) {
    char *s = malloc(n + 1);
    if (!s) abort();
    if (n) memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

#endif
