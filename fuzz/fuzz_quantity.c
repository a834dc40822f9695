/* fuzz/fuzz_quantity.c — the unit parsers and formatters of sandbox/model/quantity.c.
 *
 * The input, as a C string, goes through qty_parse_memory/cpu/duration and, as a
 * differential oracle, through independent reference parsers written from quantity.h with
 * 128-bit arithmetic: both must accept the same strings with the same values. Accepted
 * values must survive the format round trip: parse(format(x)) == x (durations are
 * formatted as "<ms>ms"). The first 8 bytes, read as an int64, also go through the
 * formatters directly: negative → -1, otherwise the round trip holds (memory up to 2^62,
 * the parser's ceiling), and a buffer one byte short fails cleanly with "". */
#include "fuzz.h"

#include <inttypes.h>

#include "sandbox/model/quantity.h"

typedef unsigned __int128 u128;

#define MEM_MAX ((u128)1 << 62)

/* digits ['.' digits], at least one digit; fraction with trailing zeros dropped must
 * have at most 18 digits. Integer part kept exactly up to 2^100 (beyond: too big
 * anyway, flagged by *huge). */
struct ref_num { u128 ip, frac, fden; int huge; };

static int ref_number(const char **sp, struct ref_num *n) {
    const char *p = *sp, *fs, *fe;
    size_t digits = 0;

    n->ip = 0;
    n->frac = 0;
    n->fden = 1;
    n->huge = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (n->ip > ((u128)1 << 100)) n->huge = 1;
        else n->ip = n->ip * 10 + (unsigned)(*p - '0');
    }
    if (*p == '.') {
        fs = ++p;
        for (; *p >= '0' && *p <= '9'; p++) digits++;
        fe = p;
        while (fe > fs && fe[-1] == '0') fe--;
        if (fe - fs > 18) return -1;
        for (const char *q = fs; q < fe; q++) {
            n->frac = n->frac * 10 + (unsigned)(*q - '0');
            n->fden *= 10;
        }
    }
    if (digits == 0) return -1;
    /* the implementation scans into uint64: a larger integer part is an overflow */
    if (n->huge || n->ip > UINT64_MAX) return -1;
    *sp = p;
    return 0;
}

/* "e"/"E", optional '+', digits: the exponent value (leading zeros fine), -1 otherwise. */
static int ref_exponent(const char *s) {
    int v = 0;
    if (*s != 'e' && *s != 'E') return -1;
    s++;
    if (*s == '+') s++;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        if (v < 1000) v = v * 10 + (*s - '0');
    }
    return v;
}

static u128 pow10_128(int e) {
    u128 v = 1;
    while (e-- > 0) v *= 10;
    return v;
}

static int ref_memory(const char *s, int64_t *out) {
    static const struct { const char *sfx; u128 mult; } units[] = {
        {"", 1}, {"Ki", (u128)1 << 10}, {"Mi", (u128)1 << 20}, {"Gi", (u128)1 << 30},
        {"Ti", (u128)1 << 40}, {"Pi", (u128)1 << 50}, {"Ei", (u128)1 << 60},
        {"k", 1000}, {"M", 1000000}, {"G", 1000000000}, {"T", 1000000000000ULL},
        {"P", 1000000000000000ULL}, {"E", 1000000000000000000ULL},
        {"b", 1}, {"m", (u128)1 << 20}, {"g", (u128)1 << 30}, {"t", (u128)1 << 40},
    };
    struct ref_num n;
    u128 mult = 0, v, part;
    size_t i;

    if (ref_number(&s, &n)) return -1;
    for (i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(s, units[i].sfx)) { mult = units[i].mult; break; }
    if (!mult) {
        int e = ref_exponent(s);
        if (e < 0 || e > 19) return -1;   /* 10^20 does not fit the parser's uint64 */
        mult = pow10_128(e);
    }
    part = (n.frac * mult + n.fden - 1) / n.fden;   /* a fractional byte rounds up */
    v = n.ip * mult + part;
    if (v > MEM_MAX) return -1;
    *out = (int64_t)v;
    return 0;
}

static int ref_cpu(const char *s, int64_t *out) {
    struct ref_num n;
    u128 mult, v;

    if (ref_number(&s, &n)) return -1;
    if (!*s) {
        mult = 1000;
    } else if (!strcmp(s, "m")) {
        mult = 1;
    } else {
        int e = ref_exponent(s);
        if (e < 0 || e > 16) return -1;   /* 10^e * 1000 must fit in uint64 */
        mult = pow10_128(e) * 1000;
    }
    if ((n.frac * mult) % n.fden) return -1;      /* finer than 1m */
    v = n.ip * mult + n.frac * mult / n.fden;
    if (v > INT64_MAX) return -1;
    *out = (int64_t)v;
    return 0;
}

static int ref_duration(const char *s, int64_t *out) {
    u128 total = 0;

    if (!strcmp(s, "0")) { *out = 0; return 0; }
    if (!*s) return -1;
    while (*s) {
        struct ref_num n;
        const char *u;
        u128 mult = 0, v;

        if (ref_number(&s, &n)) return -1;
        for (u = s; *s && *s != '.' && (*s < '0' || *s > '9'); s++) continue;
        size_t ul = (size_t)(s - u);
        if (ul == 2 && !memcmp(u, "ms", 2)) mult = 1;
        else if (ul == 1 && *u == 's') mult = 1000;
        else if (ul == 1 && *u == 'm') mult = 60000;
        else if (ul == 1 && *u == 'h') mult = 3600000;
        else return -1;
        v = n.ip * mult + n.frac * mult / n.fden;
        if (v > INT64_MAX) return -1;
        total += v;
        if (total > INT64_MAX) return -1;
    }
    *out = (int64_t)total;
    return 0;
}

/* format → parse must give x back; a buffer one byte short must fail with "". */
static void roundtrip_memory(int64_t x) {
    char buf[64], small[64];
    int64_t back;
    int rc = qty_format_memory(x, buf, sizeof buf);
    if (x < 0) { FUZZ_ASSERT(rc == -1 && buf[0] == '\0'); return; }
    FUZZ_ASSERT(rc == 0);
    size_t len = strlen(buf);
    FUZZ_ASSERT(qty_format_memory(x, small, len) == -1 && small[0] == '\0');
    FUZZ_ASSERT(qty_format_memory(x, small, len + 1) == 0 && !strcmp(small, buf));
    if ((uint64_t)x <= (uint64_t)MEM_MAX) {
        FUZZ_ASSERT(qty_parse_memory(buf, &back) == 0);
        FUZZ_ASSERT(back == x);
    } else {
        FUZZ_ASSERT(qty_parse_memory(buf, &back) == -1);
    }
}

static void roundtrip_cpu(int64_t x) {
    char buf[64], small[64];
    int64_t back;
    int rc = qty_format_cpu(x, buf, sizeof buf);
    if (x < 0) { FUZZ_ASSERT(rc == -1 && buf[0] == '\0'); return; }
    FUZZ_ASSERT(rc == 0);
    size_t len = strlen(buf);
    FUZZ_ASSERT(qty_format_cpu(x, small, len) == -1 && small[0] == '\0');
    FUZZ_ASSERT(qty_parse_cpu(buf, &back) == 0);
    FUZZ_ASSERT(back == x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fuzz_strndup(data, size);
    int64_t got = -7, want = -7;
    int rc, rrc;

    rc = qty_parse_memory(s, &got);
    rrc = ref_memory(s, &want);
    FUZZ_ASSERT(rc == rrc);
    if (rc == 0) {
        FUZZ_ASSERT(got == want);
        roundtrip_memory(got);
    }

    got = want = -7;
    rc = qty_parse_cpu(s, &got);
    rrc = ref_cpu(s, &want);
    FUZZ_ASSERT(rc == rrc);
    if (rc == 0) {
        FUZZ_ASSERT(got == want);
        roundtrip_cpu(got);
    }

    got = want = -7;
    rc = qty_parse_duration(s, &got);
    rrc = ref_duration(s, &want);
    FUZZ_ASSERT(rc == rrc);
    if (rc == 0) {
        char buf[32];
        int64_t back;
        FUZZ_ASSERT(got == want && got >= 0);
        snprintf(buf, sizeof buf, "%" PRId64 "ms", got);
        FUZZ_ASSERT(qty_parse_duration(buf, &back) == 0 && back == got);
    }

    if (size >= 8) {
        int64_t x;
        memcpy(&x, data, sizeof x);
        roundtrip_memory(x);
        roundtrip_cpu(x);
        roundtrip_memory(x & ((INT64_C(1) << 62) - 1));   /* mostly in range */
        roundtrip_memory((x & 0xffff) << (data[0] % 48)); /* round numbers: suffixes */
    }
    free(s);
    return 0;
}
