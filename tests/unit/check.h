/* tests/unit/check.h — the unit-test harness: CHECK macros that record failures without
 * stopping, TEST() registration, and a main() that runs every test and prints the closing
 * line "N passed, N failed". Header-only; each tests/unit/test_*.c is one binary. */
#ifndef YAO_TEST_CHECK_H
#define YAO_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RUNNING_ON_VALGRIND: non-zero under valgrind, where everything runs 20-50x slower (time
 * bounds loosen by it); 0 where valgrind's header is absent. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* check_heap_inuse(): bytes of heap in use in every arena (glibc's mallinfo2), or -1 where
 * malloc is not glibc's (ASan, TSan, valgrind): memory bounds are checked in the plain build. */
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include <malloc.h>
static inline long long check_heap_inuse(void) {
    return RUNNING_ON_VALGRIND ? -1 : (long long)mallinfo2().uordblks;
}
#else
static inline long long check_heap_inuse(void) { return -1; }
#endif

typedef void (*check_test_fn)(void);
struct check_test { const char *name; check_test_fn fn; };

static int check_failures_in_test;
static struct check_test check_tests[256];
static int check_ntests;

#define TEST(fn)                                                              \
    static void fn(void);                                                     \
    __attribute__((constructor)) static void check_register_##fn(void) {      \
        if (check_ntests < 256) check_tests[check_ntests++] =                 \
            (struct check_test){#fn, fn};                                     \
    }                                                                         \
    static void fn(void)

#define CHECK(cond) do {                                                      \
    if (!(cond)) { check_failures_in_test++;                                  \
        fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define CHECK_INT(a, b) do {                                                  \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);           \
    if (check_a_ != check_b_) { check_failures_in_test++;                     \
        fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n",         \
                __FILE__, __LINE__, #a, check_a_, #b, check_b_); }            \
} while (0)

#define CHECK_STR(a, b) do {                                                  \
    const char *check_a_ = (a), *check_b_ = (b);                              \
    if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) {          \
        check_failures_in_test++;                                             \
        fprintf(stderr, "  %s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, \
                __LINE__, #a, check_a_ ? check_a_ : "(null)",                 \
                check_b_ ? check_b_ : "(null)"); }                            \
} while (0)

int main(void) {
    int passed = 0, failed = 0;
    for (int i = 0; i < check_ntests; i++) {
        check_failures_in_test = 0;
        check_tests[i].fn();
        if (check_failures_in_test) { failed++; fprintf(stderr, "FAIL %s\n", check_tests[i].name); }
        else { passed++; printf("ok   %s\n", check_tests[i].name); }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#endif
