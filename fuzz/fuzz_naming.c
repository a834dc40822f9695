/* fuzz/fuzz_naming.c — sbx_name_pod for two arbitrary (user, chat) pairs, plus
 * sbx_label_value and sbx_is_dns_label.
 *
 * Input: four strings separated by NUL bytes: user1, chat1, user2, chat2 (missing ones
 * are empty). Properties, from naming.h:
 *   - a name exists iff both IDs are non-empty, and it is always a DNS-1123 label
 *     (checked against an independent implementation of the rule);
 *   - the plain form "yao-sb-<user>-<chat>" is used exactly when both IDs are [a-z0-9]+
 *     and it fits; otherwise the name ends in "-" + sbx_short_hash(user '\0' chat);
 *   - naming is a function (same pair, same name);
 *   - two different pairs share a name only when both names are hashed (equal hashes):
 *     a plain name never collides with anything;
 *   - sbx_label_value gives a valid label value, the input itself when already valid. */
#include "fuzz.h"

#include "sandbox/model/naming.h"

/* Reference DNS-1123 label check. */
static int ref_dns_label(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int an = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!an && c != '-') return 0;
        if ((i == 0 || i == n - 1) && !an) return 0;
    }
    return 1;
}

static int ref_label_value(const char *s) {
    size_t n = strlen(s);
    if (n == 0) return 1;
    if (n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!an && c != '-' && c != '_' && c != '.') return 0;
        if ((i == 0 || i == n - 1) && !an) return 0;
    }
    return 1;
}

/* Non-empty run of [a-z0-9]. */
static int plain_id(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))) return 0;
    return 1;
}

/* Name the pair and check everything that holds for one pair; returns 1 when the name is
 * the plain form, 0 when hashed, -1 when there is no name. */
static int name_one(const char *user, const char *chat, char *out) {
    char again[64], tiny[16];
    int rc = sbx_name_pod(user, chat, out, 64);

    FUZZ_ASSERT(sbx_name_pod(user, chat, tiny, sizeof tiny) == -1 && tiny[0] == '\0');
    if (!*user || !*chat) {
        FUZZ_ASSERT(rc == -1 && out[0] == '\0');
        return -1;
    }
    FUZZ_ASSERT(rc == 0);
    FUZZ_ASSERT(ref_dns_label(out));
    FUZZ_ASSERT(sbx_is_dns_label(out));
    FUZZ_ASSERT(!strncmp(out, "yao-sb-", 7));
    FUZZ_ASSERT(sbx_name_pod(user, chat, again, sizeof again) == 0 && !strcmp(out, again));

    if (plain_id(user) && plain_id(chat) && 7 + strlen(user) + 1 + strlen(chat) <= 63) {
        char want[64];
        snprintf(want, sizeof want, "yao-sb-%s-%s", user, chat);
        FUZZ_ASSERT(!strcmp(out, want));
        return 1;
    }
    /* Hashed: "-" + hash of user '\0' chat at the end, at least three segments. */
    size_t ul = strlen(user), cl = strlen(chat), n = strlen(out);
    char *buf = malloc(ul + 1 + cl), hash[9];
    FUZZ_ASSERT(buf);
    memcpy(buf, user, ul + 1);
    memcpy(buf + ul + 1, chat, cl);
    sbx_short_hash(buf, ul + 1 + cl, hash);
    free(buf);
    FUZZ_ASSERT(strlen(hash) == 8);
    FUZZ_ASSERT(n > 9 && out[n - 9] == '-' && !strcmp(out + n - 8, hash));
    int dashes = 0;
    for (const char *p = out + 7; *p; p++) dashes += *p == '-';
    FUZZ_ASSERT(dashes >= 2);
    return 0;
}

static void check_label(const char *in) {
    char out[64];
    sbx_label_value(in, out, sizeof out);
    FUZZ_ASSERT(ref_label_value(out));
    if (ref_label_value(in)) FUZZ_ASSERT(!strcmp(in, out));
    else FUZZ_ASSERT(strlen(out) >= 8);   /* ends with the hash */
    FUZZ_ASSERT(sbx_is_dns_label(in) == ref_dns_label(in));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *all = fuzz_strndup(data, size), *part[4];
    size_t off = 0;
    char n1[64], n2[64];

    for (int i = 0; i < 4; i++) {
        part[i] = all + off;
        off += strlen(all + off);
        if (off < size) off++;   /* skip the separator */
    }
    int k1 = name_one(part[0], part[1], n1);
    int k2 = name_one(part[2], part[3], n2);
    int same_pair = !strcmp(part[0], part[2]) && !strcmp(part[1], part[3]);
    if (k1 >= 0 && k2 >= 0 && !same_pair && !strcmp(n1, n2))
        FUZZ_ASSERT(k1 == 0 && k2 == 0);   /* only two hashed names can meet */
    if (same_pair && k1 >= 0) FUZZ_ASSERT(!strcmp(n1, n2));
    for (int i = 0; i < 4; i++) check_label(part[i]);
    free(all);
    return 0;
}
