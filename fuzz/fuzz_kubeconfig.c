/* fuzz/fuzz_kubeconfig.c — kube_config_parse on arbitrary bytes (YAML, JSON, anything).
 * Relative file references resolve against tests/unit/data/kubeconfig, so the seed
 * corpus can reach the real CA/cert/key/token fixtures.
 *
 * Properties: -1 leaves the struct zeroed with a one-line message; 0 gives a config the
 * REST client can use as is: an http(s) server URL without a trailing '/', a bearer
 * token that is safe in a header, certificate and key together, username and password
 * together, PEM buffers of the stated length. kube_config_free is idempotent. */
#include "fuzz.h"

#include "kube/config.h"

/* Where the kubeconfig fixtures are: $YAO_SOURCE_DIR, else relative to this file. */
static const char *fixture_dir(void) {
    static char dir[4096];
    const char *src = getenv("YAO_SOURCE_DIR"), *slash;

    if (dir[0]) return dir;
    if (src && *src) {
        snprintf(dir, sizeof dir, "%s/tests/unit/data/kubeconfig", src);
    } else if ((slash = strrchr(__FILE__, '/'))) {
        snprintf(dir, sizeof dir, "%.*s/../tests/unit/data/kubeconfig", (int)(slash - __FILE__),
                 __FILE__);
    } else {
        snprintf(dir, sizeof dir, "../tests/unit/data/kubeconfig");
    }
    return dir;
}

/* Visible ASCII only (what an Authorization header may carry). */
static int header_safe(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e) return 0;
    return 1;
}

/* All bytes of a struct are zero. */
static int all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct kube_config c;
    char err[512];
    const char *context = NULL;

    /* A leading "#ctx:NAME\n" line picks the context explicitly (it is a YAML comment,
     * so the rest still parses the same). */
    if (size > 5 && !memcmp(data, "#ctx:", 5)) {
        static char name[64];
        size_t i;
        for (i = 5; i < size && i - 5 < sizeof name - 1 && data[i] != '\n'; i++)
            name[i - 5] = (char)data[i];
        name[i - 5] = '\0';
        context = name;
    }

    err[0] = '\0';
    int rc = kube_config_parse((const char *)data, size, fixture_dir(), context, &c, err,
                               sizeof err);
    if (rc != 0) {
        FUZZ_ASSERT(rc == -1);
        FUZZ_ASSERT(all_zero(&c, sizeof c));
        FUZZ_ASSERT(err[0] != '\0');
        for (const char *p = err; *p; p++)   /* one line: no control characters */
            FUZZ_ASSERT((unsigned char)*p >= 0x20 && *p != 0x7f);
        kube_config_free(&c);
        return 0;
    }
    FUZZ_ASSERT(c.lock_ready);
    FUZZ_ASSERT(c.server);
    FUZZ_ASSERT(!strncmp(c.server, "https://", 8) || !strncmp(c.server, "http://", 7));
    size_t sl = strlen(c.server);
    FUZZ_ASSERT(c.server[sl - 1] != '/');
    FUZZ_ASSERT(sl > (size_t)(strstr(c.server, "://") - c.server) + 3);  /* has a host */
    for (const char *p = c.server; *p; p++)
        FUZZ_ASSERT((unsigned char)*p > 0x20 && (unsigned char)*p != 0x7f);
    FUZZ_ASSERT(c.context && *c.context);
    if (c.token) FUZZ_ASSERT(header_safe(c.token));
    FUZZ_ASSERT(!c.username == !c.password);
    FUZZ_ASSERT(!c.cert_pem == !c.key_pem);
    if (c.ca_pem) FUZZ_ASSERT(c.ca_len > 0 && c.ca_pem[c.ca_len] == '\0');
    if (c.cert_pem) FUZZ_ASSERT(c.cert_len > 0 && c.cert_pem[c.cert_len] == '\0');
    if (c.key_pem) FUZZ_ASSERT(c.key_len > 0 && c.key_pem[c.key_len] == '\0');
    if (c.namespace_) FUZZ_ASSERT(*c.namespace_);

    char *tok = kube_config_token(&c, 0);
    FUZZ_ASSERT(!tok == !c.token);
    if (tok) FUZZ_ASSERT(!strcmp(tok, c.token));
    free(tok);

    kube_config_free(&c);
    FUZZ_ASSERT(all_zero(&c, sizeof c));
    kube_config_free(&c);
    return 0;
}
