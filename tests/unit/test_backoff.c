/* tests/unit/test_backoff.c — exponential backoff (5ms * 2^n capped at 1000s, as the work
 * queue uses it), saturation for huge failure counts and huge bases, and jitter bounds. */
#include "check.h"
#include "base/backoff.h"

#include <math.h>
#include <stdint.h>

#define BASE 5
#define CAP 1000000 /* 1000 s */

TEST(doubles_from_base) {
    CHECK_INT(backoff_exponential_ms(0, BASE, CAP), 5);
    CHECK_INT(backoff_exponential_ms(1, BASE, CAP), 10);
    CHECK_INT(backoff_exponential_ms(2, BASE, CAP), 20);
    CHECK_INT(backoff_exponential_ms(10, BASE, CAP), 5120);
    CHECK_INT(backoff_exponential_ms(17, BASE, CAP), 655360);
}

TEST(every_step_until_cap) {
    unsigned n;
    int bad = 0;
    for (n = 0; n < 200; n++) {
        int64_t want = n <= 17 ? (int64_t)BASE << n : CAP; /* 5 * 2^18 = 1310720 > cap */
        if (backoff_exponential_ms(n, BASE, CAP) != want) bad++;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(backoff_exponential_ms(18, BASE, CAP), CAP);
}

TEST(huge_failure_counts_do_not_overflow) {
    CHECK_INT(backoff_exponential_ms(62, BASE, CAP), CAP);
    CHECK_INT(backoff_exponential_ms(63, BASE, CAP), CAP);
    CHECK_INT(backoff_exponential_ms(64, BASE, CAP), CAP);
    CHECK_INT(backoff_exponential_ms(65, BASE, CAP), CAP);
    CHECK_INT(backoff_exponential_ms(1000, BASE, CAP), CAP);
    CHECK_INT(backoff_exponential_ms(UINT32_MAX, BASE, CAP), CAP);
    /* with no practical cap: saturates at the cap, never wraps negative */
    CHECK_INT(backoff_exponential_ms(61, 1, INT64_MAX), (int64_t)1 << 61);
    CHECK_INT(backoff_exponential_ms(62, 1, INT64_MAX), (int64_t)1 << 62);
    CHECK_INT(backoff_exponential_ms(63, 1, INT64_MAX), INT64_MAX);
    CHECK_INT(backoff_exponential_ms(UINT32_MAX, 1, INT64_MAX), INT64_MAX);
    CHECK_INT(backoff_exponential_ms(1, INT64_MAX / 2 + 1, INT64_MAX), INT64_MAX);
    CHECK_INT(backoff_exponential_ms(1, INT64_MAX / 2, INT64_MAX), INT64_MAX - 1);
    CHECK_INT(backoff_exponential_ms(5, INT64_MAX, INT64_MAX), INT64_MAX);
}

TEST(cap_and_degenerate_inputs) {
    CHECK_INT(backoff_exponential_ms(0, 2000, 1000), 1000); /* base above the cap */
    CHECK_INT(backoff_exponential_ms(3, 1000, 1000), 1000);
    CHECK_INT(backoff_exponential_ms(1, 500, 1000), 1000);  /* exactly the cap */
    CHECK_INT(backoff_exponential_ms(1, 501, 1000), 1000);
    CHECK_INT(backoff_exponential_ms(0, 0, 1000), 0);
    CHECK_INT(backoff_exponential_ms(9, 0, 1000), 0);
    CHECK_INT(backoff_exponential_ms(3, -5, 1000), 0);
    CHECK_INT(backoff_exponential_ms(3, 5, 0), 0);
    CHECK_INT(backoff_exponential_ms(3, 5, -1), 0);
}

TEST(jitter_exact_values) {
    CHECK_INT(backoff_jitter_ms(1000, 0.2, 0.0), 1000);
    CHECK_INT(backoff_jitter_ms(1000, 0.2, 0.5), 1100);
    CHECK_INT(backoff_jitter_ms(1000, 0.2, 0.999), 1199); /* 199.8 truncated */
    CHECK_INT(backoff_jitter_ms(1000, 1.0, 0.5), 1500);
    CHECK_INT(backoff_jitter_ms(1000, 0.0, 0.9), 1000);
    CHECK_INT(backoff_jitter_ms(1000, 5.0, 0.5), 1500);   /* jitter clamped to 1 */
    CHECK_INT(backoff_jitter_ms(1000, -1.0, 0.5), 1000);  /* clamped to 0 */
    CHECK_INT(backoff_jitter_ms(1000, 0.5, -3.0), 1000);  /* r clamped to 0 */
    CHECK_INT(backoff_jitter_ms(1000, 0.5, 7.0), 1500);   /* r clamped to 1 */
    CHECK_INT(backoff_jitter_ms(1000, NAN, 0.5), 1000);
    CHECK_INT(backoff_jitter_ms(1000, 0.5, NAN), 1000);
    CHECK_INT(backoff_jitter_ms(1000, INFINITY, 0.5), 1500);
    CHECK_INT(backoff_jitter_ms(0, 1.0, 0.9), 0);
    CHECK_INT(backoff_jitter_ms(-7, 1.0, 0.9), -7);
}

TEST(jitter_saturates) {
    CHECK_INT(backoff_jitter_ms(INT64_MAX, 1.0, 0.9), INT64_MAX);
    CHECK_INT(backoff_jitter_ms(INT64_MAX, 1.0, 0.999999), INT64_MAX);
    CHECK_INT(backoff_jitter_ms(INT64_MAX - 1, 0.1, 0.5), INT64_MAX);
    CHECK_INT(backoff_jitter_ms((int64_t)6e18, 1.0, 0.99), INT64_MAX);
    /* 2^62 + 2^62 * 0.5 fits */
    CHECK_INT(backoff_jitter_ms((int64_t)1 << 62, 1.0, 0.5), ((int64_t)1 << 62) + ((int64_t)1 << 61));
    CHECK_INT(backoff_jitter_ms(INT64_MAX, 0.0, 0.9), INT64_MAX);
}

/* xorshift64 → [0, 1): a fixed, libc-independent sequence. */
static double rand01(uint64_t *st) {
    uint64_t x = *st;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *st = x;
    return (double)(x >> 11) / 9007199254740992.0; /* 53 bits / 2^53 */
}

TEST(jitter_bounds_over_many_samples) {
    uint64_t seed = 42;
    int i, out_of_bounds = 0, low = 0, high = 0;
    for (i = 0; i < 100000; i++) {
        unsigned n = (unsigned)(i % 40);
        int64_t d = backoff_exponential_ms(n, BASE, CAP);
        int64_t j = backoff_jitter_ms(d, 0.1, rand01(&seed));
        /* d <= j <= d + d/10, and strictly below d * 1.1 when d * 0.1 is whole */
        if (j < d || j > d + d / 10) out_of_bounds++;
        if (d == CAP && j < CAP + 10000) low++;
        if (d == CAP && j >= CAP + 90000) high++;
    }
    CHECK_INT(out_of_bounds, 0);
    CHECK(low > 0);   /* the samples spread over the whole range */
    CHECK(high > 0);
}
