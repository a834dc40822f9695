/* fuzz/fuzz_cidr.c — sbx_cidr_parse, sbx_cidr_format and sbx_cidr_contains
 * (controller/sandbox/model/netpol.c) on two arbitrary strings.
 *
 * Input: two strings separated by a NUL byte (a missing one is empty). Properties:
 *   - an accepted CIDR is in canonical form: never an IPv6 range inside ::ffff:0:0/96 or
 *     ::/96 with a prefix of 96 or more (IPv4-mapped ranges come back as IPv4, IPv4-compatible
 *     ones are refused), host bits zero, prefix within the family;
 *   - format then parse gives the same CIDR, and formatting is a fixed point;
 *   - an IPv4-mapped spelling of an accepted IPv4 range is accepted as that same range;
 *   - containment equals a bit-by-bit reference (same family, outer prefix not longer, the
 *     outer prefix's bits equal), is reflexive, and holds between a CIDR and itself widened.
 * (tests/cidrref/cidrref.go compares the same functions with Go's net/netip.) */
#include "fuzz.h"

#include "sandbox/model/netpol.h"

static int ref_bit(const unsigned char *a, int i) { return (a[i / 8] >> (7 - i % 8)) & 1; }

static int ref_contains(const struct sbx_cidr *o, const struct sbx_cidr *i) {
    if (o->family != i->family || o->prefix > i->prefix) return 0;
    for (int b = 0; b < o->prefix; b++)
        if (ref_bit(o->addr, b) != ref_bit(i->addr, b)) return 0;
    return 1;
}

static void check_canonical(const struct sbx_cidr *c) {
    int bits = c->family == 4 ? 32 : 128;
    FUZZ_ASSERT(c->family == 4 || c->family == 6);
    FUZZ_ASSERT(c->prefix >= 0 && c->prefix <= bits);
    for (int b = c->prefix; b < bits; b++) FUZZ_ASSERT(!ref_bit(c->addr, b));
    if (c->family == 6 && c->prefix >= 96) {
        int zero10 = 1;
        for (int k = 0; k < 10; k++) zero10 &= c->addr[k] == 0;
        FUZZ_ASSERT(!(zero10 && ((c->addr[10] == 0xff && c->addr[11] == 0xff) || (!c->addr[10] && !c->addr[11]))));
    }
    char t[SBX_CIDR_TEXT_MAX], t2[SBX_CIDR_TEXT_MAX];
    struct sbx_cidr again;
    sbx_cidr_format(c, t, sizeof t);
    FUZZ_ASSERT(sbx_cidr_parse(t, &again, NULL, 0) == 0);
    FUZZ_ASSERT(again.family == c->family && again.prefix == c->prefix && !memcmp(again.addr, c->addr, 16));
    sbx_cidr_format(&again, t2, sizeof t2);
    FUZZ_ASSERT(!strcmp(t, t2));
    if (c->family == 4) {
        /* its IPv4-mapped spelling is the same range */
        char m[80];
        struct sbx_cidr mc;
        snprintf(m, sizeof m, "::ffff:%u.%u.%u.%u/%d", c->addr[0], c->addr[1], c->addr[2], c->addr[3], c->prefix + 96);
        FUZZ_ASSERT(sbx_cidr_parse(m, &mc, NULL, 0) == 0);
        FUZZ_ASSERT(mc.family == 4 && mc.prefix == c->prefix && !memcmp(mc.addr, c->addr, 16));
    }
    FUZZ_ASSERT(sbx_cidr_contains(c, c));
    if (c->prefix > 0) {
        struct sbx_cidr wide = *c;
        wide.prefix--;
        int b = wide.prefix;
        wide.addr[b / 8] &= (unsigned char)~(0x80u >> (b % 8));
        FUZZ_ASSERT(sbx_cidr_contains(&wide, c));
        FUZZ_ASSERT(!sbx_cidr_contains(c, &wide));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char a[128], b[128];
    size_t i = 0, n;
    struct sbx_cidr ca, cb;
    char err[256];

    for (n = 0; i < size && data[i] && n < sizeof a - 1; i++) a[n++] = (char)data[i];
    a[n] = '\0';
    while (i < size && data[i]) i++;
    if (i < size) i++;
    for (n = 0; i < size && data[i] && n < sizeof b - 1; i++) b[n++] = (char)data[i];
    b[n] = '\0';

    int oka = sbx_cidr_parse(a, &ca, err, sizeof err) == 0;
    FUZZ_ASSERT(oka || err[0]);
    int okb = sbx_cidr_parse(b, &cb, NULL, 0) == 0;
    if (oka) check_canonical(&ca);
    if (okb) check_canonical(&cb);
    if (oka && okb) FUZZ_ASSERT(sbx_cidr_contains(&ca, &cb) == ref_contains(&ca, &cb));
    return 0;
}
