/* tests/unit/test_quantity.c — memory, cpu and duration parsing (Kubernetes, Docker and
 * Go spellings; exact fractions; overflow edges; junk) and canonical formatting, with a
 * format → parse round trip. */
#include "check.h"
#include "sandbox/model/quantity.h"

#include <stdint.h>

struct qcase { const char *in; int rc; int64_t want; };

#define GI ((int64_t)1 << 30)

/* Run every case through parse; print and count the ones that disagree. */
static int run_cases(const char *what, int (*parse)(const char *, int64_t *),
                     const struct qcase *c, size_t n) {
    size_t i;
    int bad = 0;
    for (i = 0; i < n; i++) {
        int64_t v = -12345;
        int rc = parse(c[i].in, &v);
        if (rc != c[i].rc || (rc == 0 && v != c[i].want)) {
            fprintf(stderr, "  %s(\"%s\") = %d, %" PRId64 "; expected %d, %" PRId64 "\n",
                    what, c[i].in, rc, v, c[i].rc, c[i].want);
            bad++;
        }
    }
    return bad;
}

#define RUN(parse, cases) run_cases(#parse, parse, cases, sizeof(cases) / sizeof(cases[0]))

TEST(memory_valid) {
    static const struct qcase cases[] = {
        {"0", 0, 0},
        {"1", 0, 1},
        {"1073741824", 0, 1073741824},
        {"2g", 0, 2 * GI},
        {"2Gi", 0, 2 * GI},
        {"512Mi", 0, 536870912},
        {"512m", 0, 536870912},        /* Docker: m = MiB, never milli-bytes */
        {"1.5G", 0, 1500000000},
        {"1.5Gi", 0, 1610612736},
        {"2G", 0, 2000000000},
        {"1k", 0, 1000},               /* Kubernetes kilo */
        {"1Ki", 0, 1024},
        {"100b", 0, 100},
        {"1t", 0, (int64_t)1 << 40},
        {"1Ti", 0, (int64_t)1 << 40},
        {"1T", 0, 1000000000000},
        {"2Pi", 0, (int64_t)1 << 51},
        {"3P", 0, 3000000000000000},
        {"1Ei", 0, (int64_t)1 << 60},
        {"1E", 0, 1000000000000000000},
        {"4Ei", 0, (int64_t)1 << 62},
        {"4611686018427387904", 0, (int64_t)1 << 62},
        {"4194304Ti", 0, (int64_t)1 << 62},
        {"1e3", 0, 1000},
        {"1E3", 0, 1000},
        {"1.5e3", 0, 1500},
        {"2e+2", 0, 200},
        {"1e0", 0, 1},
        {"1e18", 0, 1000000000000000000},
        {"007", 0, 7},
        {"1.", 0, 1},
        {".5Ki", 0, 512},
        {"0.5", 0, 1},                  /* fractions of a byte round up, as Kubernetes */
        {"1.1", 0, 2},
        {"0.1Ki", 0, 103},              /* 102.4 */
        {"1.3Gi", 0, 1395864372},       /* 1395864371.2 */
        {"1.000000000000000000", 0, 1}, /* trailing zeros do not count as digits */
        {"0.000000000000000001Ei", 0, 2}, /* 1.15... */
        {"0.25Ei", 0, (int64_t)1 << 58},
        {"3.999999999999999999Ei", 0, 4611686018427387903}, /* 2^62 - 1.15 */
    };
    CHECK_INT(RUN(qty_parse_memory, cases), 0);
}

TEST(memory_invalid) {
    static const struct qcase cases[] = {
        {"", -1, 0}, {" 1", -1, 0}, {"1 ", -1, 0}, {"-1", -1, 0}, {"+1", -1, 0},
        {"1.2.3", -1, 0}, {"10Qi", -1, 0}, {"1K", -1, 0}, {"1KB", -1, 0}, {"1gb", -1, 0},
        {"1ki", -1, 0}, {"1p", -1, 0}, {"1e", -1, 0}, {"1e-3", -1, 0}, {"1e3Ki", -1, 0},
        {".", -1, 0}, {"Gi", -1, 0}, {"1.5 Gi", -1, 0}, {"1,5G", -1, 0}, {"0x10", -1, 0},
        {"1Gi ", -1, 0}, {"1\n", -1, 0}, {"1B", -1, 0}, {"1Gib", -1, 0}, {"inf", -1, 0},
        {"NaN", -1, 0}, {"1e20", -1, 0}, {"1E19", -1, 0}, {"1e", -1, 0}, {"1e+", -1, 0},
        /* > 2^62 */
        {"5Ei", -1, 0}, {"4611686018427387905", -1, 0}, {"4.000000000000000001Ei", -1, 0},
        {"4194305Ti", -1, 0}, {"5E", -1, 0},
        /* integer overflow while scanning */
        {"18446744073709551616", -1, 0}, {"99999999999999999999999", -1, 0},
        /* more than 18 significant fraction digits */
        {"0.0000000000000000001", -1, 0},
    };
    int64_t v = 99;
    CHECK_INT(RUN(qty_parse_memory, cases), 0);
    CHECK_INT(qty_parse_memory(NULL, &v), -1);
    CHECK_INT(v, 99);
    CHECK_INT(qty_parse_memory("1", NULL), -1);
}

TEST(cpu) {
    static const struct qcase cases[] = {
        {"1", 0, 1000}, {"1.0", 0, 1000}, {"0.5", 0, 500}, {"500m", 0, 500},
        {"2.25", 0, 2250}, {"0", 0, 0}, {"0m", 0, 0}, {"0.001", 0, 1}, {"1.0m", 0, 1},
        {"100", 0, 100000}, {"1e3", 0, 1000000}, {"2e0", 0, 2000}, {".5", 0, 500},
        {"0.100", 0, 100}, {"9223372036854775807m", 0, INT64_MAX},
        {"9223372036854775.807", 0, INT64_MAX},
        /* finer than 1m */
        {"0.0005", -1, 0}, {"1.5m", -1, 0}, {"0.1m", -1, 0}, {"1.0001", -1, 0},
        /* junk, negatives, overflow */
        {"-1", -1, 0}, {"", -1, 0}, {"1.2.3", -1, 0}, {"1c", -1, 0}, {"m", -1, 0},
        {"1 ", -1, 0}, {" 1", -1, 0}, {"1Mi", -1, 0}, {"1k", -1, 0}, {"1M", -1, 0},
        {"1e-3", -1, 0}, {"500 m", -1, 0}, {"1e", -1, 0},
        {"9223372036854775808m", -1, 0}, {"9223372036854776", -1, 0}, {"1e17", -1, 0},
    };
    CHECK_INT(RUN(qty_parse_cpu, cases), 0);
    CHECK_INT(qty_parse_cpu(NULL, NULL), -1);
}

TEST(duration) {
    static const struct qcase cases[] = {
        {"90s", 0, 90000}, {"30m", 0, 1800000}, {"2h", 0, 7200000}, {"1h30m", 0, 5400000},
        {"500ms", 0, 500}, {"1.5h", 0, 5400000}, {"0", 0, 0}, {"0s", 0, 0},
        {"1h0m0s", 0, 3600000}, {"0.5s", 0, 500}, {"1m30s500ms", 0, 90500},
        {".5s", 0, 500}, {"5.s", 0, 5000}, {"1s1s", 0, 2000}, {"1ms1h", 0, 3600001},
        {"1.5ms", 0, 1},               /* sub-millisecond remainders are truncated */
        {"0.9ms", 0, 0},
        {"1.0005s", 0, 1000},
        {"0.3333h", 0, 1199880},
        {"2562047788015h", 0, 9223372036854000000},
        {"9223372036854775807ms", 0, INT64_MAX},
        /* overflow */
        {"2562047788016h", -1, 0}, {"9223372036854775808ms", -1, 0},
        {"9223372036854775807ms1ms", -1, 0}, {"99999999999999999999s", -1, 0},
        /* junk */
        {"", -1, 0}, {"1", -1, 0}, {"10", -1, 0}, {"00", -1, 0}, {"s", -1, 0},
        {"-1s", -1, 0}, {"+1s", -1, 0}, {" 1s", -1, 0}, {"1s ", -1, 0}, {"1x", -1, 0},
        {"1ns", -1, 0}, {"1us", -1, 0}, {"1d", -1, 0}, {"1h30", -1, 0}, {"1..5s", -1, 0},
        {"1.5.5s", -1, 0}, {"1S", -1, 0}, {"1H", -1, 0}, {".s", -1, 0}, {"1 s", -1, 0},
        {"1hh", -1, 0}, {"1sm", -1, 0}, {"1mss", -1, 0},
    };
    CHECK_INT(RUN(qty_parse_duration, cases), 0);
    CHECK_INT(qty_parse_duration(NULL, NULL), -1);
}

TEST(format_memory) {
    char out[32];
    CHECK_INT(qty_format_memory(0, out, sizeof(out)), 0);
    CHECK_STR(out, "0");
    CHECK_INT(qty_format_memory(1, out, sizeof(out)), 0);
    CHECK_STR(out, "1");
    CHECK_INT(qty_format_memory(1024, out, sizeof(out)), 0);
    CHECK_STR(out, "1Ki");
    CHECK_INT(qty_format_memory(2 * GI, out, sizeof(out)), 0);
    CHECK_STR(out, "2Gi");
    CHECK_INT(qty_format_memory(1536, out, sizeof(out)), 0);
    CHECK_STR(out, "1536");
    CHECK_INT(qty_format_memory(1610612736, out, sizeof(out)), 0);
    CHECK_STR(out, "1536Mi");
    CHECK_INT(qty_format_memory(1500, out, sizeof(out)), 0);
    CHECK_STR(out, "1500");
    CHECK_INT(qty_format_memory(2000000000, out, sizeof(out)), 0);
    CHECK_STR(out, "1953125Ki"); /* exact in Ki, so binary */
    CHECK_INT(qty_format_memory((int64_t)1 << 62, out, sizeof(out)), 0);
    CHECK_STR(out, "4Ei");
    CHECK_INT(qty_format_memory(INT64_MAX, out, sizeof(out)), 0);
    CHECK_STR(out, "9223372036854775807");
    CHECK_INT(qty_format_memory(-1, out, sizeof(out)), -1);
    CHECK_STR(out, "");
    CHECK_INT(qty_format_memory(2 * GI, out, 3), -1); /* "2Gi" needs 4 */
    CHECK_STR(out, "");
    CHECK_INT(qty_format_memory(2 * GI, out, 4), 0);
    CHECK_STR(out, "2Gi");
    CHECK_INT(qty_format_memory(1, out, 0), -1);
}

TEST(format_cpu) {
    char out[32];
    CHECK_INT(qty_format_cpu(1000, out, sizeof(out)), 0);
    CHECK_STR(out, "1");
    CHECK_INT(qty_format_cpu(500, out, sizeof(out)), 0);
    CHECK_STR(out, "500m");
    CHECK_INT(qty_format_cpu(0, out, sizeof(out)), 0);
    CHECK_STR(out, "0");
    CHECK_INT(qty_format_cpu(2250, out, sizeof(out)), 0);
    CHECK_STR(out, "2250m");
    CHECK_INT(qty_format_cpu(2000, out, sizeof(out)), 0);
    CHECK_STR(out, "2");
    CHECK_INT(qty_format_cpu(1, out, sizeof(out)), 0);
    CHECK_STR(out, "1m");
    CHECK_INT(qty_format_cpu(-5, out, sizeof(out)), -1);
    CHECK_INT(qty_format_cpu(500, out, 4), -1); /* "500m" needs 5 */
    CHECK_STR(out, "");
    CHECK_INT(qty_format_cpu(500, out, 5), 0);
    CHECK_STR(out, "500m");
}

TEST(format_duration) {
    static const struct { int64_t ms; const char *want; } cases[] = {
        {0, "0"}, {1, "1ms"}, {999, "999ms"}, {1000, "1s"}, {1500, "1s500ms"}, {5000, "5s"},
        {90000, "1m30s"}, {1800000, "30m"}, {5400000, "1h30m"}, {7200000, "2h"},
        {86400000, "24h"}, {3723004, "1h2m3s4ms"},
    };
    char out[48];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_INT(qty_format_duration(cases[i].ms, out, sizeof out), 0);
        CHECK_STR(out, cases[i].want);
        int64_t back = -1;
        CHECK_INT(qty_parse_duration(out, &back), 0);
        CHECK_INT(back, cases[i].ms);
    }
    CHECK_INT(qty_format_duration(-1, out, sizeof out), -1);
    CHECK_STR(out, "");
    CHECK_INT(qty_format_duration(90000, out, 5), -1);   /* "1m30s" needs 6 */
    CHECK_STR(out, "");
    CHECK_INT(qty_format_duration(90000, out, 6), 0);
    CHECK_STR(out, "1m30s");
    CHECK_INT(qty_format_duration(INT64_MAX, out, sizeof out), 0);
    int64_t back = 0;
    CHECK_INT(qty_parse_duration(out, &back), 0);
    CHECK_INT(back, INT64_MAX);
}

TEST(round_trip) {
    static const int64_t mem[] = {0, 1, 1023, 1024, 1500, 536870912, 1610612736,
                                  2147483648, 10737418240, (int64_t)1 << 62, 123456789};
    static const int64_t cpu[] = {0, 1, 250, 500, 999, 1000, 1001, 2250, 64000, 1234567};
    char out[32];
    size_t i;
    int bad = 0;
    for (i = 0; i < sizeof(mem) / sizeof(mem[0]); i++) {
        int64_t v = -1;
        if (qty_format_memory(mem[i], out, sizeof(out)) != 0 ||
            qty_parse_memory(out, &v) != 0 || v != mem[i]) bad++;
    }
    for (i = 0; i < sizeof(cpu) / sizeof(cpu[0]); i++) {
        int64_t v = -1;
        if (qty_format_cpu(cpu[i], out, sizeof(out)) != 0 ||
            qty_parse_cpu(out, &v) != 0 || v != cpu[i]) bad++;
    }
    CHECK_INT(bad, 0);
}

/* xorshift64: a fixed, libc-independent sequence. */
static uint64_t rng_next(uint64_t *st) {
    uint64_t x = *st;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *st = x;
}

/* Random "<int>.<frac><suffix>" strings checked against a 128-bit reference computation
 * of ceil((int + frac / 10^d) * mult), a different algorithm from the parser's. */
TEST(memory_matches_128bit_reference) {
    static const struct { const char *sfx; uint64_t mult; } units[] = {
        {"", 1}, {"Ki", 1ULL << 10}, {"Mi", 1ULL << 20}, {"Gi", 1ULL << 30},
        {"Ti", 1ULL << 40}, {"Pi", 1ULL << 50}, {"Ei", 1ULL << 60}, {"k", 1000ULL},
        {"M", 1000000ULL}, {"G", 1000000000ULL}, {"T", 1000000000000ULL},
        {"P", 1000000000000000ULL}, {"E", 1000000000000000000ULL}, {"m", 1ULL << 20},
        {"g", 1ULL << 30}, {"t", 1ULL << 40}, {"b", 1},
    };
    uint64_t seed = 0x0123456789abcdefULL;
    int i, bad = 0;
    for (i = 0; i < 20000; i++) {
        size_t u = rng_next(&seed) % (sizeof(units) / sizeof(units[0]));
        unsigned d = (unsigned)(rng_next(&seed) % 19), k;
        uint64_t ip = rng_next(&seed) % ((i & 1) ? 5 : 100000), pow10 = 1, frac;
        unsigned __int128 num, den, ref;
        char s[64];
        int64_t v = -1;
        int rc;
        for (k = 0; k < d; k++) pow10 *= 10;
        frac = d ? rng_next(&seed) % pow10 : 0;
        if (d)
            snprintf(s, sizeof(s), "%" PRIu64 ".%0*" PRIu64 "%s", ip, (int)d, frac, units[u].sfx);
        else
            snprintf(s, sizeof(s), "%" PRIu64 "%s", ip, units[u].sfx);
        num = (unsigned __int128)ip * pow10 + frac; /* < 2^77 */
        den = pow10;
        rc = qty_parse_memory(s, &v);
        if (num > ~(unsigned __int128)0 / units[u].mult) {
            /* too big even for 128 bits (only when ip >= 1), so far above 2^62 */
            if (rc != -1) bad++;
            continue;
        }
        num *= units[u].mult;
        ref = (num + den - 1) / den;
        if (ref > ((unsigned __int128)1 << 62)) {
            if (rc != -1) bad++;
        } else if (rc != 0 || (unsigned __int128)v != ref) {
            if (bad++ < 5) fprintf(stderr, "  %s -> %d %" PRId64 "\n", s, rc, v);
        }
    }
    CHECK_INT(bad, 0);
}
