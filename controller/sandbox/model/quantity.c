/* sandbox/model/quantity.c — parsers and formatters for the user-facing units of a Sandbox spec:
 * memory (bytes), cpu (millicores), durations (milliseconds). Owns the number grammar
 * and all the overflow arithmetic: every value is computed exactly in 64-bit integers
 * (no floating point), so "1.1Gi" or "0.3h" give the same result on every machine.
 * It does not know spec field names or defaults; sandbox/model/spec.c does. */
#include "sandbox/model/quantity.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define QTY_MEMORY_MAX ((uint64_t)1 << 62)
#define QTY_FRAC_DIGITS_MAX 18 /* 10^18 fits, and 3 * 10^18 still fits in uint64 */

/* A scanned decimal number ip + frac / fden, with fden = 10^digits (trailing zeros
 * of the fraction dropped). */
struct qty_num {
    uint64_t ip;
    uint64_t frac;
    uint64_t fden;
};

/* What to do with a result that is not a whole number of units. */
enum qty_round { QTY_CEIL, QTY_FLOOR, QTY_EXACT };

/* Scan digits* ['.' digits*] with at least one digit at *sp; advance *sp past it.
 * No sign, no spaces. 0 or -1 (no digits, integer overflow, > 18 fraction digits). */
static int qty_scan_number(const char **sp, struct qty_num *n) {
    const char *p = *sp;
    unsigned digits = 0, fd = 0, zeros = 0;

    n->ip = 0;
    n->frac = 0;
    n->fden = 1;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        unsigned d = (unsigned)(*p - '0');
        if (n->ip > (UINT64_MAX - d) / 10) return -1;
        n->ip = n->ip * 10 + d;
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
            unsigned d = (unsigned)(*p - '0');
            if (d == 0) { zeros++; continue; }
            if (fd + zeros + 1 > QTY_FRAC_DIGITS_MAX) return -1;
            for (; zeros; zeros--) { n->frac *= 10; n->fden *= 10; fd++; }
            n->frac = n->frac * 10 + d;
            n->fden *= 10;
            fd++;
        }
    }
    if (digits == 0) return -1;
    *sp = p;
    return 0;
}

/* floor(f * m / d) for f < d <= 10^18, by binary long division over m's bits (the
 * result is < m, so it fits); *inexact is set when the division leaves a remainder. */
static uint64_t qty_muldiv(uint64_t f, uint64_t m, uint64_t d, int *inexact) {
    uint64_t q = 0, r = 0;
    int bit;

    *inexact = 0;
    if (f == 0 || m == 0) return 0;
    /* invariant: f * (bits of m seen so far) == q * d + r, 0 <= r < d */
    for (bit = 63; bit >= 0; bit--) {
        r = 2 * r + (((m >> bit) & 1) ? f : 0); /* < 3d, fits */
        q = 2 * q;
        while (r >= d) { r -= d; q++; }
    }
    *inexact = r != 0;
    return q;
}

/* n * mult, rounded as asked, into *out if it is <= limit; 0 or -1. */
static int qty_scale(const struct qty_num *n, uint64_t mult, uint64_t limit,
                     enum qty_round round, uint64_t *out) {
    uint64_t whole, part;
    int inexact;

    if (mult && n->ip > limit / mult) return -1;
    whole = n->ip * mult;
    part = qty_muldiv(n->frac, mult, n->fden, &inexact);
    if (inexact) {
        if (round == QTY_EXACT) return -1;
        if (round == QTY_CEIL) part++;
    }
    if (part > limit - whole) return -1;
    *out = whole + part;
    return 0;
}

/* 10^e into *out; -1 if it does not fit in uint64. */
static int qty_pow10(unsigned e, uint64_t *out) {
    uint64_t v = 1;

    while (e--) {
        if (v > UINT64_MAX / 10) return -1;
        v *= 10;
    }
    *out = v;
    return 0;
}

/* A Kubernetes decimal exponent "e3" / "E+3" filling the whole of s: 0 with *e set, or -1
 * (negative exponents are not accepted: see quantity.h). */
static int qty_exponent(const char *s, unsigned *e) {
    unsigned v = 0;

    if (*s != 'e' && *s != 'E') return -1;
    s++;
    if (*s == '+') s++;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (unsigned)(*s - '0');
        if (v > 99) return -1; /* 10^20 overflows anyway */
    }
    *e = v;
    return 0;
}

/* Memory in bytes; the unit table and the rounding are documented in quantity.h. */
int qty_parse_memory(const char *s, int64_t *bytes) {
    static const struct { const char *sfx; uint64_t mult; } units[] = {
        {"", 1},
        {"Ki", (uint64_t)1 << 10}, {"Mi", (uint64_t)1 << 20}, {"Gi", (uint64_t)1 << 30},
        {"Ti", (uint64_t)1 << 40}, {"Pi", (uint64_t)1 << 50}, {"Ei", (uint64_t)1 << 60},
        {"k", 1000ULL}, {"M", 1000000ULL}, {"G", 1000000000ULL},
        {"T", 1000000000000ULL}, {"P", 1000000000000000ULL},
        {"E", 1000000000000000000ULL},
        /* Docker-style lower-case units, binary as Docker means them */
        {"b", 1}, {"m", (uint64_t)1 << 20}, {"g", (uint64_t)1 << 30},
        {"t", (uint64_t)1 << 40},
    };
    struct qty_num n;
    uint64_t mult = 0, v;
    unsigned e;
    size_t i;
    int found = 0;

    if (!s || !bytes) return -1;
    if (qty_scan_number(&s, &n) != 0) return -1;
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(s, units[i].sfx) == 0) { mult = units[i].mult; found = 1; break; }
    }
    if (!found) {
        if (qty_exponent(s, &e) != 0 || qty_pow10(e, &mult) != 0) return -1;
    }
    if (qty_scale(&n, mult, QTY_MEMORY_MAX, QTY_CEIL, &v) != 0) return -1;
    *bytes = (int64_t)v;
    return 0;
}

/* CPU in millicores: cores, "<n>m", or cores with a decimal exponent; must be whole m. */
int qty_parse_cpu(const char *s, int64_t *millicores) {
    struct qty_num n;
    uint64_t mult, v;
    unsigned e;

    if (!s || !millicores) return -1;
    if (qty_scan_number(&s, &n) != 0) return -1;
    if (*s == '\0') {
        mult = 1000;
    } else if (strcmp(s, "m") == 0) {
        mult = 1;
    } else {
        if (qty_exponent(s, &e) != 0 || qty_pow10(e, &mult) != 0) return -1;
        if (mult > UINT64_MAX / 1000) return -1;
        mult *= 1000;
    }
    if (qty_scale(&n, mult, INT64_MAX, QTY_EXACT, &v) != 0) return -1;
    *millicores = (int64_t)v;
    return 0;
}

/* Go-style duration in ms: one or more <number><unit>, unit one of ms s m h. */
int qty_parse_duration(const char *s, int64_t *ms) {
    static const struct { const char *unit; uint64_t mult; } units[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
    };
    uint64_t total = 0;

    if (!s || !ms) return -1;
    if (strcmp(s, "0") == 0) { *ms = 0; return 0; }
    if (!*s) return -1;
    while (*s) {
        struct qty_num n;
        const char *u;
        uint64_t mult = 0, v;
        size_t ulen, i;

        if (qty_scan_number(&s, &n) != 0) return -1;
        for (u = s; *s && *s != '.' && (*s < '0' || *s > '9'); s++) continue;
        ulen = (size_t)(s - u);
        for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            if (strlen(units[i].unit) == ulen && memcmp(u, units[i].unit, ulen) == 0) {
                mult = units[i].mult;
                break;
            }
        }
        if (mult == 0) return -1; /* missing or unknown unit */
        if (qty_scale(&n, mult, INT64_MAX, QTY_FLOOR, &v) != 0) return -1;
        if (v > (uint64_t)INT64_MAX - total) return -1;
        total += v;
    }
    *ms = (int64_t)total;
    return 0;
}

/* Canonical memory quantity: the largest exact binary suffix, else plain bytes. */
int qty_format_memory(int64_t bytes, char *out, size_t outlen) {
    static const char *const sfx[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
    int i, n, shift = 60;

    if (!out || outlen == 0) return -1;
    out[0] = '\0';
    if (bytes < 0) return -1;
    for (i = 0; bytes != 0 && i < 6; i++, shift -= 10)
        if (bytes % ((int64_t)1 << shift) == 0) break;
    if (bytes != 0 && i < 6)
        n = snprintf(out, outlen, "%" PRId64 "%s", bytes >> shift, sfx[i]);
    else
        n = snprintf(out, outlen, "%" PRId64, bytes);
    if (n < 0 || (size_t)n >= outlen) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

/* Canonical cpu quantity: whole cores as "2", else millicores as "500m". */
int qty_format_cpu(int64_t millicores, char *out, size_t outlen) {
    int n;

    if (!out || outlen == 0) return -1;
    out[0] = '\0';
    if (millicores < 0) return -1;
    if (millicores % 1000 == 0)
        n = snprintf(out, outlen, "%" PRId64, millicores / 1000);
    else
        n = snprintf(out, outlen, "%" PRId64 "m", millicores);
    if (n < 0 || (size_t)n >= outlen) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int qty_format_duration(int64_t ms, char *out, size_t outlen) {
    static const struct { int64_t ms; const char *unit; } parts[] = {
        {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"},
    };
    size_t o = 0;

    if (!out || outlen == 0) return -1;
    out[0] = '\0';
    if (ms < 0) return -1;
    if (ms == 0) {
        if (outlen < 2) return -1;
        memcpy(out, "0", 2);
        return 0;
    }
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        int64_t n = ms / parts[i].ms;
        if (!n) continue;
        ms -= n * parts[i].ms;
        int w = snprintf(out + o, outlen - o, "%" PRId64 "%s", n, parts[i].unit);
        if (w < 0 || (size_t)w >= outlen - o) {
            out[0] = '\0';
            return -1;
        }
        o += (size_t)w;
    }
    return 0;
}
