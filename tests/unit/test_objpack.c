/* tests/unit/test_objpack.c — the informer cache's packer (runtime/objpack.c): texts come
 * back byte for byte whatever they are (empty, the dictionary itself, objects like it,
 * texts that do not compress, texts far longer than the window, NUL and high bytes);
 * objects like the first pack to a fraction of their text; the header is checked. */
#include "check.h"

#include <stdint.h>

#include "runtime/objpack.h"

/* A pod-like object's text, numbered (what differs between siblings). */
static size_t pod_text(char *out, size_t cap, int i) {
    int n = snprintf(out, cap,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"yao-sb-user-%04d-chat-%04d\","
        "\"namespace\":\"team-a\",\"uid\":\"6f1c2a7e-%04x-4000-8000-%012d\",\"resourceVersion\":\"%d\","
        "\"labels\":{\"app.kubernetes.io/managed-by\":\"yao-sandbox\",\"sandbox.yaoapps.com/name\":\"s-%04d\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\",\"name\":\"s-%04d\","
        "\"uid\":\"0b9d7c2e-1111-4000-8000-%012d\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
        "\"spec\":{\"nodeName\":\"kwok-node-%d\"},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.244.%d.%d\","
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-11-30T12:%02d:%02dZ\"}]}}",
        i, i, i * 7919 % 65536, i, 1000 + i, i, i, i, i % 3, i / 250, i % 250, i / 60 % 60, i % 60);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* Pack and unpack: 1 when the text came back exactly. *packed gets the blob's size. */
static int round_trip(struct objpack *p, const char *text, size_t len, size_t *packed) {
    void *blob = objpack_pack(p, text, len);
    if (!blob) return 0;
    if (packed) *packed = objpack_size(blob);
    size_t got_len = (size_t)-1;
    char *got = objpack_unpack(p, blob, &got_len);
    int same = got && got_len == len && memcmp(got, text, len) == 0 && got[len] == 0;
    free(got);
    free(blob);
    return same;
}

TEST(siblings_pack_small_and_come_back_exactly) {
    struct objpack *p = objpack_new();
    char text[2048];
    size_t total_text = 0, total_packed = 0, packed, len;
    CHECK(p != NULL);
    if (!p) return;
    len = pod_text(text, sizeof text, 0);
    CHECK(round_trip(p, text, len, &packed));   /* the first: the dictionary */
    for (int i = 1; i <= 200; i++) {
        len = pod_text(text, sizeof text, i);
        CHECK(len > 600);
        CHECK(round_trip(p, text, len, &packed));
        total_text += len;
        total_packed += packed;
    }
    printf("  200 siblings: %zu bytes of text packed to %zu\n", total_text, total_packed);
    CHECK(total_packed * 4 < total_text);   /* a quarter at most (about a tenth here) */
    objpack_free(p);
}

TEST(any_bytes_come_back_exactly) {
    struct objpack *p = objpack_new();
    char text[2048];
    CHECK(p != NULL);
    if (!p) return;
    size_t len = pod_text(text, sizeof text, 1);
    CHECK(round_trip(p, text, len, NULL));
    CHECK(round_trip(p, "", 0, NULL));
    CHECK(round_trip(p, text, len, NULL));   /* the dictionary's own text */
    /* incompressible: stored, one header more than the text */
    enum { RANDOM = 3000 };
    unsigned char *noise = malloc(RANDOM);
    uint32_t x = 2463534242u;
    for (size_t i = 0; noise && i < RANDOM; i++) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; noise[i] = (unsigned char)x; }
    size_t packed = 0;
    CHECK(noise && round_trip(p, (const char *)noise, RANDOM, &packed));
    CHECK(packed <= RANDOM + 16);
    free(noise);
    /* NUL and high bytes inside, and a text 100 times the window */
    const char odd[] = "{\"a\":\"\0\xff\xfe\xc3\xa9\"}";
    CHECK(round_trip(p, odd, sizeof odd - 1, NULL));
    size_t big = 100 * 4096;
    char *huge = malloc(big);
    for (size_t i = 0; huge && i < big; i++) huge[i] = text[i % len] ^ (char)(i / len);
    CHECK(huge && round_trip(p, huge, big, &packed));
    free(huge);
    objpack_free(p);
}

TEST(a_first_object_longer_than_the_window) {
    struct objpack *p = objpack_new();
    size_t len = 10000;
    char *text = malloc(len);
    CHECK(p && text);
    if (!p || !text) { objpack_free(p); free(text); return; }
    for (size_t i = 0; i < len; i++) text[i] = "{\"k\":\"value\",}"[i % 14];
    CHECK(round_trip(p, text, len, NULL));
    text[5000] = 'X';
    CHECK(round_trip(p, text, len, NULL));
    free(text);
    objpack_free(p);
}

TEST(a_blob_with_a_bad_header_is_refused) {
    struct objpack *p = objpack_new();
    char text[2048];
    size_t len = pod_text(text, sizeof text, 3);
    unsigned char *blob = p ? objpack_pack(p, text, len) : NULL;
    CHECK(blob != NULL);
    if (blob) {
        unsigned char mode = blob[8];
        blob[8] = 7;                      /* no such mode */
        CHECK(objpack_unpack(p, blob, NULL) == NULL);
        blob[8] = mode;
        blob[3] ^= 1;                     /* the text's length no longer matches */
        CHECK(objpack_unpack(p, blob, NULL) == NULL);
    }
    free(blob);
    objpack_free(p);
}
