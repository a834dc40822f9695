/* kube/config.c — builds a struct kube_config from kubeconfig files or from the in-cluster
 * service account.
 *
 * Owns: bounded file reads (4 MiB per kubeconfig, 1 MiB per PEM, 64 KiB per token), YAML
 * parsing through libyaml's document loader (JSON parses too: it is YAML flow style),
 * kubectl's merge rule for $KUBECONFIG lists (first file to set current-context wins; for
 * each named cluster/context/user the first file that defines it wins; missing files in a
 * list are skipped), base64 of the *-data fields, relative paths (against the directory of
 * the file that defined the entry), and re-reading a rotating token file.
 *
 * Also reads a user's exec credential plugin (run later, by kube/credplugin.c, when a
 * request needs the credential), its impersonation (as, as-uid, as-groups, as-user-extra)
 * and the cluster's proxy-url (used by kube/proxy.c).
 *
 * Deliberately does not: contact the API server or build TLS contexts (kube/rest feeds the
 * PEM buffers to libcurl as blobs), run auth-providers (refused by name: client-go removed
 * them; an exec plugin replaces each), or write anything to disk. Buffers that held credentials are wiped before they are freed; that is
 * best effort (libyaml's short-lived scanner strings are freed without wiping).
 * Known limit: YAML merge keys ("<<: *anchor") are not expanded (libyaml does not resolve
 * them); plain anchors and aliases work. */

#include "kube/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <yaml.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "kube/credplugin.h"
#include "kube/kjson.h"

#include <cjson/cJSON.h>

#define KCFG_MAX_KUBECONFIG ((size_t)4 << 20)
#define KCFG_MAX_PEM        ((size_t)1 << 20)
#define KCFG_MAX_TOKEN      ((size_t)64 << 10)
#define KCFG_MAX_NAMESPACE  ((size_t)4 << 10)
#define KCFG_MAX_FILES      32      /* entries in a ':'-separated list */
#define KCFG_TOKEN_RECHECK  60      /* seconds between token_file checks */
#define KCFG_CA_RECHECK     60      /* seconds between ca_file checks */
#define KCFG_SA_DIR         "/var/run/secrets/kubernetes.io/serviceaccount"

/* One loaded kubeconfig document: its YAML tree, where its relative paths resolve, and the
 * prefix its error messages carry ("" in memory, "/path/config: " for a file). */
struct kcfg_src {
    yaml_document_t doc;
    int loaded;             /* doc must be deleted */
    yaml_node_t *root;      /* top-level mapping */
    char *path;             /* file it came from, NULL in memory */
    char *base_dir;         /* NULL: relative paths are used as given */
    char *where;
};

/* printf into a fresh heap string; NULL on ENOMEM. */
static char *kcfg_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *kcfg_fmt(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *s;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !(s = malloc((size_t)n + 1))) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* Wipe and free a buffer that may have held a credential. */
static void kcfg_free_secret(void *p, size_t len)
{
    if (!p) return;
    OPENSSL_cleanse(p, len);
    free(p);
}

/* Wipe and free a NUL-terminated secret string. */
static void kcfg_free_secret_str(char *s)
{
    if (s) kcfg_free_secret(s, strlen(s));
}

/* Read at most max bytes of path into a NUL-terminated heap buffer (*out, *outlen; *mtime if
 * non-NULL). -1 with errno set: EFBIG when the file is larger than max. Works on pipes too;
 * every intermediate buffer is wiped because the file may hold a key. */
static int kcfg_read_file(const char *path, size_t max, char **out, size_t *outlen,
                          time_t *mtime)
{
    struct stat st;
    char *buf = NULL, *nb;
    size_t len = 0, cap, ncap;
    ssize_t r;
    int fd, saved;

    *out = NULL;
    *outlen = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return -1;
    if (fstat(fd, &st) != 0) goto err;
    if (S_ISDIR(st.st_mode)) { errno = EISDIR; goto err; }
    if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > (uintmax_t)max) { errno = EFBIG; goto err; }
    /* A regular file is read in one buffer (+1 byte to see EOF); others grow in steps. */
    cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 4096;
    if (cap > max + 1) cap = max + 1;
    if (!(buf = malloc(cap + 1))) goto err;
    for (;;) {
        if (len == cap) {
            if (cap > max) { errno = EFBIG; goto err; }  /* max+1 bytes read: too big */
            ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
            if (!(nb = malloc(ncap + 1))) goto err;
            memcpy(nb, buf, len);
            kcfg_free_secret(buf, cap);
            buf = nb;
            cap = ncap;
        }
        r = read(fd, buf + len, cap - len);
        if (r < 0) {
            if (errno == EINTR) continue;
            goto err;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    if (mtime) *mtime = st.st_mtime;
    return 0;

err:
    saved = errno;
    if (buf) kcfg_free_secret(buf, cap);
    close(fd);
    errno = saved;
    return -1;
}

/* Describe a kcfg_read_file failure ("cannot read X: reason" / "X is larger than ..."). */
static void kcfg_read_err(char *err, size_t errlen, const char *prefix, const char *path,
                          size_t max, int e)
{
    if (e == EFBIG)
        errfmt_line(err, errlen, "%s%s is larger than the %zu KiB limit", prefix, path, max >> 10);
    else
        errfmt_line(err, errlen, "%scannot read %s: %s", prefix, path, strerror(e));
}

/* Copy buf without leading/trailing ASCII whitespace into a new string; NULL on ENOMEM. */
static char *kcfg_trim_dup(const char *buf, size_t len)
{
    const char *ws = " \t\r\n\f\v";
    char *s;

    while (len && strchr(ws, buf[0]) && buf[0]) { buf++; len--; }
    while (len && strchr(ws, buf[len - 1]) && buf[len - 1]) len--;
    if (!(s = malloc(len + 1))) return NULL;
    memcpy(s, buf, len);
    s[len] = '\0';
    return s;
}

/* 1 if s can go into an "Authorization: Bearer" header unchanged: visible ASCII only, so a
 * hostile token cannot inject header lines. */
static int kcfg_token_ok(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e) return 0;
    return 1;
}

/* Read a bearer-token file: trimmed, non-empty, header-safe. NULL with errno set (ENODATA
 * when blank, EINVAL when it contains spaces or control characters). */
static char *kcfg_read_token(const char *path, time_t *mtime)
{
    char *buf = NULL, *tok;
    size_t len;

    if (kcfg_read_file(path, KCFG_MAX_TOKEN, &buf, &len, mtime) != 0) return NULL;
    tok = kcfg_trim_dup(buf, len);
    kcfg_free_secret(buf, len);
    if (!tok) { errno = ENOMEM; return NULL; }
    if (!*tok || !kcfg_token_ok(tok)) {
        errno = *tok ? EINVAL : ENODATA;
        kcfg_free_secret_str(tok);
        return NULL;
    }
    return tok;
}

/* Describe a kcfg_read_token failure. */
static void kcfg_token_err(char *err, size_t errlen, const char *prefix, const char *path, int e)
{
    if (e == ENODATA)
        errfmt_line(err, errlen, "%stoken file %s is empty", prefix, path);
    else if (e == EINVAL)
        errfmt_line(err, errlen, "%stoken file %s contains spaces or control characters",
                 prefix, path);
    else
        kcfg_read_err(err, errlen, prefix, path, KCFG_MAX_TOKEN, e);
}

/* Value of one base64 character, -1 if it is not in the standard alphabet. */
static int kcfg_b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

/* Decode standard base64 (what Go's encoding/base64 writes into kubeconfigs), ignoring ASCII
 * whitespace (YAML folds and wraps long lines); padding may be omitted. Rejects any other
 * character, '=' anywhere but the end, and impossible lengths — EVP_DecodeBlock alone would
 * accept a mid-string '='. *out is NUL-terminated; empty input gives *out NULL, *outlen 0. */
static int kcfg_b64_decode(const char *in, size_t inlen, char **out, size_t *outlen)
{
    unsigned char *clean = NULL, *dec = NULL;
    size_t n = 0, pad = 0, i;
    int d, rc = -1;

    *out = NULL;
    *outlen = 0;
    if (inlen > (size_t)INT32_MAX / 2) return -1;
    if (!(clean = malloc(inlen + 3))) return -1;
    for (i = 0; i < inlen; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v')
            continue;
        if (ch == '=') {
            if (++pad > 2) goto done;
        } else if (pad || kcfg_b64_value(ch) < 0) {
            goto done;                      /* data after padding, or not base64 */
        }
        clean[n++] = ch;
    }
    if (n == 0) { rc = 0; goto done; }
    if (!pad && n % 4 == 2) { clean[n++] = '='; clean[n++] = '='; pad = 2; }
    else if (!pad && n % 4 == 3) { clean[n++] = '='; pad = 1; }
    if (n % 4 != 0) goto done;
    if (!(dec = malloc(n / 4 * 3 + 1))) goto done;
    d = EVP_DecodeBlock(dec, clean, (int)n);
    if (d < 0 || (size_t)d < pad) goto done;
    d -= (int)pad;
    dec[d] = '\0';
    *out = (char *)dec;
    *outlen = (size_t)d;
    dec = NULL;
    rc = 0;
done:
    kcfg_free_secret(clean, inlen + 3);
    if (dec) kcfg_free_secret(dec, n / 4 * 3 + 1);
    return rc;
}

/* 1 if buf looks like PEM (has a "-----BEGIN " line); catches a DER file or a mis-pasted
 * value here with a clear message instead of as a TLS handshake error later. */
static int kcfg_is_pem(const char *buf)
{
    return strstr(buf, "-----BEGIN ") != NULL;
}

/* Directory part of path ("." when there is none); NULL on ENOMEM. */
static char *kcfg_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Resolve a path from a kubeconfig against the directory of the file that named it. */
static char *kcfg_path(const struct kcfg_src *src, const char *p)
{
    if (p[0] == '/' || !src->base_dir) return strdup(p);
    return kcfg_fmt("%s/%s", src->base_dir, p);
}

/* ---- YAML tree access ------------------------------------------------------------------ */

/* 1 if n is a YAML null (absent value, "~" or "null" in plain style). */
static int kcfg_is_null(const yaml_node_t *n)
{
    const char *v;

    if (!n) return 1;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    v = (const char *)n->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
           !strcmp(v, "NULL");
}

/* Human name of a node's kind, for error messages. */
static const char *kcfg_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:   return "scalar";
    case YAML_SEQUENCE_NODE: return "list";
    case YAML_MAPPING_NODE:  return "mapping";
    default:                 return "empty node";
    }
}

/* Value node of key in mapping map (first occurrence); NULL if absent or map is not a
 * mapping. Only ever looks one level down, so alias cycles cannot make it loop. */
static yaml_node_t *kcfg_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    yaml_node_pair_t *p;
    yaml_node_t *k;
    size_t klen = strlen(key);

    if (!map || map->type != YAML_MAPPING_NODE) return NULL;
    for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == klen &&
            !memcmp(k->data.scalar.value, key, klen))
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

/* String at key in map: 1 found (*val), 0 absent or null (*val NULL), -1 when the value is a
 * list/mapping or holds a NUL byte (err names `what` and the key). */
static int kcfg_str(struct kcfg_src *src, yaml_node_t *map, const char *key, const char *what,
                    const char **val, char *err, size_t errlen)
{
    yaml_node_t *n = kcfg_get(&src->doc, map, key);

    *val = NULL;
    if (kcfg_is_null(n)) return 0;
    if (n->type != YAML_SCALAR_NODE ||
        strlen((const char *)n->data.scalar.value) != n->data.scalar.length) {
        errfmt_line(err, errlen, "kubeconfig: %s%s%s\"%s\" is not a string", src->where, what,
                 *what ? ": " : "", key);
        return -1;
    }
    *val = (const char *)n->data.scalar.value;
    return 1;
}

/* Boolean at key (YAML 1.1 spellings, as kubectl's YAML reader accepts): 0 absent or set
 * (*out), -1 when the value is not a boolean. */
static int kcfg_bool(struct kcfg_src *src, yaml_node_t *map, const char *key, const char *what,
                     int *out, char *err, size_t errlen)
{
    static const char *yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    const char *v;
    size_t i;
    int r = kcfg_str(src, map, key, what, &v, err, errlen);

    if (r <= 0) return r;
    for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (!strcmp(v, yes[i])) { *out = 1; return 0; }
        if (!strcmp(v, no[i])) { *out = 0; return 0; }
    }
    errfmt_line(err, errlen, "kubeconfig: %s%s: \"%s\" is not a boolean: \"%.64s\"", src->where,
             what, key, v);
    return -1;
}

/* Find the entry called name in list ("clusters") of the first source that defines it —
 * kubectl's merge rule. *node is the entry's inner mapping (key inner, e.g. "cluster"),
 * NULL when empty. 1 found, 0 nowhere, -1 malformed list (err set). */
static int kcfg_find(struct kcfg_src *srcs, size_t nsrc, const char *list, const char *inner,
                     const char *name, struct kcfg_src **found, yaml_node_t **node,
                     char *err, size_t errlen)
{
    size_t i;
    yaml_node_item_t *it;
    yaml_node_t *seq, *item, *in;
    const char *nm;

    for (i = 0; i < nsrc; i++) {
        struct kcfg_src *s = &srcs[i];
        seq = kcfg_get(&s->doc, s->root, list);
        if (kcfg_is_null(seq)) continue;
        if (seq->type != YAML_SEQUENCE_NODE) {
            errfmt_line(err, errlen, "kubeconfig: %s\"%s\" is a %s, not a list", s->where, list,
                     kcfg_kind(seq));
            return -1;
        }
        for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
            item = yaml_document_get_node(&s->doc, *it);
            if (!item || item->type != YAML_MAPPING_NODE) {
                errfmt_line(err, errlen, "kubeconfig: %san entry of \"%s\" is not a mapping",
                         s->where, list);
                return -1;
            }
            if (kcfg_str(s, item, "name", list, &nm, err, errlen) < 0) return -1;
            if (!nm || strcmp(nm, name) != 0) continue;
            in = kcfg_get(&s->doc, item, inner);
            if (!kcfg_is_null(in) && in->type != YAML_MAPPING_NODE) {
                errfmt_line(err, errlen, "kubeconfig: %s%s \"%.200s\": \"%s\" is a %s, not a mapping",
                         s->where, inner, name, inner, kcfg_kind(in));
                return -1;
            }
            *found = s;
            *node = kcfg_is_null(in) ? NULL : in;
            return 1;
        }
    }
    return 0;
}

/* Load one PEM blob for `what` (e.g. `user "admin"`): data_key (base64) wins over file_key (a
 * path), as in client-go. 0 with *pem set, or left NULL when neither is present; -1 with err. */
static int kcfg_pem(struct kcfg_src *src, yaml_node_t *m, const char *file_key,
                    const char *data_key, const char *what, char **pem, size_t *len,
                    char **path_out, char *err, size_t errlen)
{
    const char *data, *file;
    char *path = NULL, *buf = NULL;
    size_t blen = 0;
    int rc = -1;

    if (kcfg_str(src, m, data_key, what, &data, err, errlen) < 0) return -1;
    if (data) {
        if (kcfg_b64_decode(data, strlen(data), &buf, &blen) != 0) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: \"%s\" is not valid base64", src->where,
                     what, data_key);
            goto done;
        }
        if (blen && !kcfg_is_pem(buf)) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: \"%s\" does not decode to PEM data",
                     src->where, what, data_key);
            goto done;
        }
        if (blen) goto ok;
        free(buf);                       /* empty value: same as unset */
        buf = NULL;
    }
    if (kcfg_str(src, m, file_key, what, &file, err, errlen) < 0) goto done;
    if (!file || !*file) { rc = 0; goto done; }
    if (!(path = kcfg_path(src, file))) {
        errfmt_line(err, errlen, "kubeconfig: out of memory");
        goto done;
    }
    if (kcfg_read_file(path, KCFG_MAX_PEM, &buf, &blen, NULL) != 0) {
        char prefix[512];
        snprintf(prefix, sizeof prefix, "kubeconfig: %s%.200s: \"%s\": ", src->where, what,
                 file_key);
        kcfg_read_err(err, errlen, prefix, path, KCFG_MAX_PEM, errno);
        goto done;
    }
    if (!kcfg_is_pem(buf)) {
        errfmt_line(err, errlen, "kubeconfig: %s%s: \"%s\": %s does not contain PEM data",
                 src->where, what, file_key, path);
        goto done;
    }
ok:
    *pem = buf;
    *len = blen;
    buf = NULL;
    if (path_out && path) {          /* a file: remembered so a rotated one is re-read */
        *path_out = path;
        path = NULL;
    }
    rc = 0;
done:
    kcfg_free_secret(buf, blen);
    free(path);
    return rc;
}

/* Normalise a server URL: no trailing '/', "https://" added when there is no scheme (as
 * kubectl does); only http and https are accepted. NULL with err on a bad value. */
static char *kcfg_server(const char *s, const char *where, const char *what, char *err,
                         size_t errlen)
{
    const char *p;
    size_t n = strlen(s);
    char *out;

    for (p = s; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p == 0x7f) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: server \"%.200s\" contains spaces or "
                     "control characters", where, what, s);
            return NULL;
        }
    while (n && s[n - 1] == '/') n--;
    if ((p = strstr(s, "://"))) {
        if (strncmp(s, "https://", 8) != 0 && strncmp(s, "http://", 7) != 0) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: server \"%.200s\" is not an http(s) URL",
                     where, what, s);
            return NULL;
        }
        if (n <= (size_t)(p - s) + 3) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: server \"%.200s\" has no host", where,
                     what, s);
            return NULL;
        }
        out = strndup(s, n);
    } else {
        if (n == 0) {   /* "/" or "///": nothing left to be the host */
            errfmt_line(err, errlen, "kubeconfig: %s%s: server \"%.200s\" has no host", where,
                     what, s);
            return NULL;
        }
        out = kcfg_fmt("https://%.*s", (int)n, s);
    }
    if (!out) errfmt_line(err, errlen, "kubeconfig: out of memory");
    return out;
}

/* Fill the cluster part of c (server, CA, TLS options) from one cluster entry. */
static int kcfg_cluster(struct kcfg_src *src, yaml_node_t *m, const char *name,
                        struct kube_config *c, char *err, size_t errlen)
{
    char what[256];
    const char *v;

    snprintf(what, sizeof what, "cluster \"%.200s\"", name);
    if (kcfg_str(src, m, "server", what, &v, err, errlen) < 0) return -1;
    if (!v || !*v) {
        errfmt_line(err, errlen, "kubeconfig: %s%s has no server", src->where, what);
        return -1;
    }
    if (!(c->server = kcfg_server(v, src->where, what, err, errlen))) return -1;
    if (kcfg_str(src, m, "proxy-url", what, &v, err, errlen) < 0) return -1;
    if (v && *v) {
        /* the scheme is checked here so a bad value fails at load, not per request */
        if (strncmp(v, "http://", 7) != 0 && strstr(v, "://")) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: proxy-url \"%.200s\": only http:// proxies are "
                        "supported (HTTP CONNECT)", src->where, what, v);
            return -1;
        }
        if (!(c->proxy_url = strdup(v))) {
            errfmt_line(err, errlen, "kubeconfig: out of memory");
            return -1;
        }
    }
    if (kcfg_bool(src, m, "insecure-skip-tls-verify", what, &c->insecure_skip_tls_verify,
                  err, errlen) < 0)
        return -1;
    if (kcfg_str(src, m, "tls-server-name", what, &v, err, errlen) < 0) return -1;
    if (v && *v && !(c->tls_server_name = strdup(v))) {
        errfmt_line(err, errlen, "kubeconfig: out of memory");
        return -1;
    }
    return kcfg_pem(src, m, "certificate-authority", "certificate-authority-data", what,
                    &c->ca_pem, &c->ca_len, &c->ca_file, err, errlen);
}

/* The strings of the list at key (absent/null = none): 0 with *out (NULL-terminated
 * copies, *n of them), -1 with err when it is not a list of strings. */
static int kcfg_str_list(struct kcfg_src *src, yaml_node_t *map, const char *key, const char *what,
                         char ***out, size_t *n, char *err, size_t errlen)
{
    yaml_node_t *seq = kcfg_get(&src->doc, map, key), *it;
    yaml_node_item_t *item;
    size_t cap;

    *out = NULL;
    *n = 0;
    if (kcfg_is_null(seq)) return 0;
    if (seq->type != YAML_SEQUENCE_NODE) {
        errfmt_line(err, errlen, "kubeconfig: %s%s: \"%s\" is a %s, not a list", src->where, what, key,
                    kcfg_kind(seq));
        return -1;
    }
    cap = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    if (!(*out = calloc(cap + 1, sizeof(char *)))) goto oom;
    for (item = seq->data.sequence.items.start; item < seq->data.sequence.items.top; item++) {
        it = yaml_document_get_node(&src->doc, *item);
        if (!it || it->type != YAML_SCALAR_NODE ||
            strlen((const char *)it->data.scalar.value) != it->data.scalar.length) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: an entry of \"%s\" is not a string", src->where, what, key);
            goto fail;
        }
        if (!((*out)[(*n)++] = strdup((const char *)it->data.scalar.value))) goto oom;
    }
    return 0;
oom:
    errfmt_line(err, errlen, "kubeconfig: out of memory");
fail:
    for (size_t i = 0; *out && i < *n; i++) free((*out)[i]);
    free(*out);
    *out = NULL;
    *n = 0;
    return -1;
}

/* A YAML node as JSON (for the exec plugin's cluster config): mappings, lists, and plain
 * scalars that read as null, booleans or numbers; other scalars as strings. NULL when out
 * of memory, nested deeper than 32 or with a non-string key. */
static cJSON *kcfg_to_json(yaml_document_t *doc, yaml_node_t *n, int depth)
{
    if (!n || depth > 32) return NULL;
    if (n->type == YAML_SCALAR_NODE) {
        const char *v = (const char *)n->data.scalar.value;
        if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
            char *end;
            double d;
            if (kcfg_is_null(n)) return cJSON_CreateNull();
            if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) return cJSON_CreateTrue();
            if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) return cJSON_CreateFalse();
            d = strtod(v, &end);
            if (*v && !*end && strspn(v, "+-0123456789.eE") == strlen(v)) return cJSON_CreateNumber(d);
        }
        return cJSON_CreateString(v);
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        cJSON *a = cJSON_CreateArray();
        for (yaml_node_item_t *it = n->data.sequence.items.start; a && it < n->data.sequence.items.top; it++) {
            cJSON *e = kcfg_to_json(doc, yaml_document_get_node(doc, *it), depth + 1);
            if (!e) { cJSON_Delete(a); return NULL; }
            cJSON_AddItemToArray(a, e);
        }
        return a;
    }
    if (n->type == YAML_MAPPING_NODE) {
        cJSON *o = cJSON_CreateObject();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; o && p < n->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            cJSON *e;
            if (!k || k->type != YAML_SCALAR_NODE ||
                !(e = kcfg_to_json(doc, yaml_document_get_node(doc, p->value), depth + 1))) {
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_AddItemToObject(o, (const char *)k->data.scalar.value, e);
        }
        return o;
    }
    return cJSON_CreateNull();
}

/* The ExecCredential spec.cluster of provideClusterInfo: what c holds of the cluster, and
 * the cluster's extension named client.authentication.k8s.io/exec as config. */
static char *kcfg_cluster_info(struct kcfg_src *cls, yaml_node_t *cl, const struct kube_config *c)
{
    cJSON *o = cJSON_CreateObject();
    char *out = NULL;
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "server", c->server);
    if (c->tls_server_name) cJSON_AddStringToObject(o, "tls-server-name", c->tls_server_name);
    if (c->insecure_skip_tls_verify) cJSON_AddBoolToObject(o, "insecure-skip-tls-verify", 1);
    if (c->proxy_url) cJSON_AddStringToObject(o, "proxy-url", c->proxy_url);
    if (c->ca_pem && c->ca_len) {
        size_t n = 4 * ((c->ca_len + 2) / 3) + 1;
        unsigned char *b = malloc(n);
        if (!b) goto done;
        EVP_EncodeBlock(b, (const unsigned char *)c->ca_pem, (int)c->ca_len);
        cJSON_AddStringToObject(o, "certificate-authority-data", (const char *)b);
        free(b);
    }
    yaml_node_t *exts = cls ? kcfg_get(&cls->doc, cl, "extensions") : NULL;
    if (exts && exts->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = exts->data.sequence.items.start; it < exts->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(&cls->doc, *it), *nm = kcfg_get(&cls->doc, e, "name");
            if (nm && nm->type == YAML_SCALAR_NODE &&
                !strcmp((const char *)nm->data.scalar.value, "client.authentication.k8s.io/exec")) {
                cJSON *cfg = kcfg_to_json(&cls->doc, kcfg_get(&cls->doc, e, "extension"), 0);
                if (cfg) cJSON_AddItemToObject(o, "config", cfg);
            }
        }
    }
    out = cJSON_PrintUnformatted(o);
done:
    cJSON_Delete(o);
    return out;
}

/* The user's exec credential plugin (node n) into c->exec_plugin. */
static int kcfg_exec(struct kcfg_src *src, yaml_node_t *n, const char *name, const char *what,
                     struct kcfg_src *cls, yaml_node_t *cl, struct kube_config *c, char *err, size_t errlen)
{
    struct kube_credplugin *p;
    const char *v, *mode;
    int provide = 0;
    char ew[300];
    yaml_node_t *env;

    snprintf(ew, sizeof ew, "%s: exec", what);
    if (n->type != YAML_MAPPING_NODE) {
        errfmt_line(err, errlen, "kubeconfig: %s%s is a %s, not a mapping", src->where, ew, kcfg_kind(n));
        return -1;
    }
    if (!(p = calloc(1, sizeof *p))) goto oom;
    c->exec_plugin = p;
    p->timeout_ms = 60000;
    if (kcfg_str(src, n, "apiVersion", ew, &v, err, errlen) < 0) return -1;
    if (!v || (strcmp(v, "client.authentication.k8s.io/v1") != 0 &&
               strcmp(v, "client.authentication.k8s.io/v1beta1") != 0)) {
        errfmt_line(err, errlen, "kubeconfig: %s%s: apiVersion \"%.100s\" is not client.authentication.k8s.io/v1 "
                    "or /v1beta1", src->where, ew, v ? v : "");
        return -1;
    }
    if (!(p->api_version = strdup(v))) goto oom;
    if (kcfg_str(src, n, "command", ew, &v, err, errlen) < 0) return -1;
    if (!v || !*v) {
        errfmt_line(err, errlen, "kubeconfig: %s%s has no command", src->where, ew);
        return -1;
    }
    /* a relative path with a '/' is the kubeconfig's neighbour; a bare name is looked up in $PATH */
    if (!(p->command = strchr(v, '/') ? kcfg_path(src, v) : strdup(v))) goto oom;
    if (kcfg_str_list(src, n, "args", ew, &p->args, &p->nargs, err, errlen) < 0) return -1;
    env = kcfg_get(&src->doc, n, "env");
    if (!kcfg_is_null(env)) {
        if (env->type != YAML_SEQUENCE_NODE) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: \"env\" is a %s, not a list", src->where, ew, kcfg_kind(env));
            return -1;
        }
        size_t cap = (size_t)(env->data.sequence.items.top - env->data.sequence.items.start);
        if (!(p->env = calloc(cap + 1, sizeof(char *)))) goto oom;
        for (yaml_node_item_t *it = env->data.sequence.items.start; it < env->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(&src->doc, *it);
            const char *en, *ev;
            if (!e || e->type != YAML_MAPPING_NODE || kcfg_str(src, e, "name", ew, &en, err, errlen) < 0 ||
                kcfg_str(src, e, "value", ew, &ev, err, errlen) < 0 || !en || !*en || strchr(en, '=')) {
                errfmt_line(err, errlen, "kubeconfig: %s%s: an entry of \"env\" is not {name: NAME, value: VALUE}",
                            src->where, ew);
                return -1;
            }
            if (!(p->env[p->nenv++] = kcfg_fmt("%s=%s", en, ev ? ev : ""))) goto oom;
        }
    }
    if (kcfg_str(src, n, "interactiveMode", ew, &mode, err, errlen) < 0) return -1;
    if (!mode || !*mode) {
        if (!strcmp(p->api_version, "client.authentication.k8s.io/v1")) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: interactiveMode must be set (Never, IfAvailable or Always) "
                        "with client.authentication.k8s.io/v1", src->where, ew);
            return -1;
        }
        p->interactive = KUBE_INTERACTIVE_IF_AVAILABLE;
    } else if (!strcmp(mode, "Never")) {
        p->interactive = KUBE_INTERACTIVE_NEVER;
    } else if (!strcmp(mode, "IfAvailable")) {
        p->interactive = KUBE_INTERACTIVE_IF_AVAILABLE;
    } else if (!strcmp(mode, "Always")) {
        p->interactive = KUBE_INTERACTIVE_ALWAYS;
    } else {
        errfmt_line(err, errlen, "kubeconfig: %s%s: interactiveMode \"%.60s\" is not Never, IfAvailable or Always",
                    src->where, ew, mode);
        return -1;
    }
    if (kcfg_bool(src, n, "provideClusterInfo", ew, &provide, err, errlen) < 0) return -1;
    if (kcfg_str(src, n, "installHint", ew, &v, err, errlen) < 0) return -1;
    if (v && *v && !(p->install_hint = strdup(v))) goto oom;
    if (provide && !(p->cluster_json = kcfg_cluster_info(cls, cl, c))) goto oom;
    if (!(p->user = strdup(name))) goto oom;
    if (pthread_mutex_init(&p->mu, NULL) != 0) goto oom;
    p->mu_ready = 1;
    return 0;
oom:
    errfmt_line(err, errlen, "kubeconfig: out of memory");
    return -1;
}

/* The user's impersonation: as, as-uid, as-groups, as-user-extra (a map of lists). */
static int kcfg_impersonation(struct kcfg_src *src, yaml_node_t *m, const char *what, struct kube_config *c,
                              char *err, size_t errlen)
{
    const char *v;
    yaml_node_t *extra;

    if (kcfg_str(src, m, "as", what, &v, err, errlen) < 0) return -1;
    if (v && *v && !(c->impersonate_user = strdup(v))) goto oom;
    if (kcfg_str(src, m, "as-uid", what, &v, err, errlen) < 0) return -1;
    if (v && *v && !(c->impersonate_uid = strdup(v))) goto oom;
    if (kcfg_str_list(src, m, "as-groups", what, &c->impersonate_groups, &c->n_impersonate_groups, err, errlen) < 0)
        return -1;
    extra = kcfg_get(&src->doc, m, "as-user-extra");
    if (!kcfg_is_null(extra)) {
        if (extra->type != YAML_MAPPING_NODE) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: \"as-user-extra\" is not a mapping", src->where, what);
            return -1;
        }
        for (yaml_node_pair_t *p = extra->data.mapping.pairs.start; p < extra->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(&src->doc, p->key);
            char **vals;
            size_t nv;
            char **grown;
            if (!k || k->type != YAML_SCALAR_NODE || !k->data.scalar.length) {
                errfmt_line(err, errlen, "kubeconfig: %s%s: \"as-user-extra\" has a key that is not a string",
                            src->where, what);
                return -1;
            }
            const char *key = (const char *)k->data.scalar.value;
            if (kcfg_str_list(src, extra, key, what, &vals, &nv, err, errlen) < 0) return -1;
            if (!(grown = realloc(c->impersonate_extra, (c->n_impersonate_extra + nv + 1) * sizeof(char *)))) {
                for (size_t i = 0; i < nv; i++) free(vals[i]);
                free(vals);
                goto oom;
            }
            c->impersonate_extra = grown;
            for (size_t i = 0; i < nv; i++) {
                char *kv = kcfg_fmt("%s=%s", key, vals[i]);
                free(vals[i]);
                if (!kv) {
                    for (size_t j = i + 1; j < nv; j++) free(vals[j]);
                    free(vals);
                    goto oom;
                }
                c->impersonate_extra[c->n_impersonate_extra++] = kv;
                c->impersonate_extra[c->n_impersonate_extra] = NULL;
            }
            free(vals);
        }
    }
    if (c->n_impersonate_groups && !c->impersonate_user) {
        errfmt_line(err, errlen, "kubeconfig: %s%s has as-groups but no \"as\" (a user to impersonate)", src->where,
                    what);
        return -1;
    }
    return 0;
oom:
    errfmt_line(err, errlen, "kubeconfig: out of memory");
    return -1;
}

/* Fill the credential part of c from one user (AuthInfo) entry (cls/cl: the context's
 * cluster, for the exec plugin's cluster info); auth-provider is refused by name. */
static int kcfg_user(struct kcfg_src *src, yaml_node_t *m, const char *name, struct kcfg_src *cls,
                     yaml_node_t *cl, struct kube_config *c, char *err, size_t errlen)
{
    char what[256];
    const char *v;
    yaml_node_t *n;

    snprintf(what, sizeof what, "user \"%.200s\"", name);
    if (!kcfg_is_null(n = kcfg_get(&src->doc, m, "auth-provider"))) {
        const char *prov = NULL;
        if (n->type == YAML_MAPPING_NODE &&
            kcfg_str(src, n, "name", what, &prov, err, errlen) < 0)
            prov = NULL;
        errfmt_line(err, errlen, "kubeconfig: %s%s uses auth-provider \"%.200s\", which is not "
                 "supported (client-go removed auth-providers: use the provider's exec plugin, e.g. "
                 "kubelogin or gke-gcloud-auth-plugin)", src->where, what, prov ? prov : "?");
        return -1;
    }
    if (!kcfg_is_null(n = kcfg_get(&src->doc, m, "exec")) &&
        kcfg_exec(src, n, name, what, cls, cl, c, err, errlen) < 0)
        return -1;
    if (kcfg_impersonation(src, m, what, c, err, errlen) < 0) return -1;

    if (kcfg_str(src, m, "token", what, &v, err, errlen) < 0) return -1;
    if (v && *v) {
        if (!kcfg_token_ok(v)) {
            errfmt_line(err, errlen, "kubeconfig: %s%s: \"token\" contains spaces or control "
                     "characters", src->where, what);
            return -1;
        }
        if (!(c->token = strdup(v))) goto oom;
    }
    /* tokenFile wins over token, as in client-go, and is re-read when it rotates. */
    if (kcfg_str(src, m, "tokenFile", what, &v, err, errlen) < 0) return -1;
    if (v && *v) {
        char prefix[300];
        char *tok;
        if (!(c->token_file = kcfg_path(src, v))) goto oom;
        if (!(tok = kcfg_read_token(c->token_file, &c->token_mtime))) {
            snprintf(prefix, sizeof prefix, "kubeconfig: %s%s: \"tokenFile\": ", src->where,
                     what);
            kcfg_token_err(err, errlen, prefix, c->token_file, errno);
            return -1;
        }
        kcfg_free_secret_str(c->token);
        c->token = tok;
    }
    if (kcfg_str(src, m, "username", what, &v, err, errlen) < 0) return -1;
    if (v && *v && !(c->username = strdup(v))) goto oom;
    if (kcfg_str(src, m, "password", what, &v, err, errlen) < 0) return -1;
    if (v && *v && !(c->password = strdup(v))) goto oom;
    if (!c->username != !c->password) {
        errfmt_line(err, errlen, "kubeconfig: %s%s has a %s but no %s", src->where, what,
                 c->username ? "username" : "password", c->username ? "password" : "username");
        return -1;
    }
    if (kcfg_pem(src, m, "client-certificate", "client-certificate-data", what, &c->cert_pem,
                 &c->cert_len, NULL, err, errlen) < 0 ||
        kcfg_pem(src, m, "client-key", "client-key-data", what, &c->key_pem, &c->key_len,
                 NULL, err, errlen) < 0)
        return -1;
    if (!c->cert_pem != !c->key_pem) {
        errfmt_line(err, errlen, "kubeconfig: %s%s has a client %s but no client %s", src->where,
                 what, c->cert_pem ? "certificate" : "key", c->cert_pem ? "key" : "certificate");
        return -1;
    }
    return 0;
oom:
    errfmt_line(err, errlen, "kubeconfig: out of memory");
    return -1;
}

/* Pick the context (explicit, else the first current-context) across srcs and fill c from
 * its cluster and user. */
static int kcfg_resolve(struct kcfg_src *srcs, size_t nsrc, const char *context_name,
                        struct kube_config *c, char *err, size_t errlen)
{
    struct kcfg_src *cs = NULL, *cls = NULL, *us = NULL;
    yaml_node_t *ctx = NULL, *cl = NULL, *user = NULL;
    const char *name = context_name && *context_name ? context_name : NULL;
    const char *cluster, *uname, *ns;
    char what[256];
    size_t i;
    int r;

    for (i = 0; !name && i < nsrc; i++) {
        if (kcfg_str(&srcs[i], srcs[i].root, "current-context", "", &name, err, errlen) < 0)
            return -1;
        if (name && !*name) name = NULL;
    }
    if (!name) {
        errfmt_line(err, errlen, "kubeconfig: no current-context is set and no context was given");
        return -1;
    }
    snprintf(what, sizeof what, "context \"%.200s\"", name);
    if ((r = kcfg_find(srcs, nsrc, "contexts", "context", name, &cs, &ctx, err, errlen)) < 0)
        return -1;
    if (r == 0) {
        errfmt_line(err, errlen, "kubeconfig: %s not found", what);
        return -1;
    }
    if (kcfg_str(cs, ctx, "cluster", what, &cluster, err, errlen) < 0 ||
        kcfg_str(cs, ctx, "user", what, &uname, err, errlen) < 0 ||
        kcfg_str(cs, ctx, "namespace", what, &ns, err, errlen) < 0)
        return -1;
    if (!cluster || !*cluster) {
        errfmt_line(err, errlen, "kubeconfig: %s%s names no cluster", cs->where, what);
        return -1;
    }
    if ((r = kcfg_find(srcs, nsrc, "clusters", "cluster", cluster, &cls, &cl, err, errlen)) < 0)
        return -1;
    if (r == 0) {
        errfmt_line(err, errlen, "kubeconfig: %s refers to unknown cluster \"%.200s\"", what,
                 cluster);
        return -1;
    }
    if (uname && *uname) {
        if ((r = kcfg_find(srcs, nsrc, "users", "user", uname, &us, &user, err, errlen)) < 0)
            return -1;
        if (r == 0) {
            errfmt_line(err, errlen, "kubeconfig: %s refers to unknown user \"%.200s\"", what,
                     uname);
            return -1;
        }
    }
    if (kcfg_cluster(cls, cl, cluster, c, err, errlen) < 0) return -1;
    if (us && kcfg_user(us, user, uname, cls, cl, c, err, errlen) < 0) return -1;
    if (!(c->context = strdup(name)) || (ns && *ns && !(c->namespace_ = strdup(ns)))) {
        errfmt_line(err, errlen, "kubeconfig: out of memory");
        return -1;
    }
    return 0;
}

/* Parse text into src (whose path/base_dir/where are already set); the top level must be a
 * non-empty mapping. */
static int kcfg_src_parse(struct kcfg_src *src, const char *text, size_t len, char *err,
                          size_t errlen)
{
    yaml_parser_t parser;
    int rc = -1;

    if (!yaml_parser_initialize(&parser)) {
        errfmt_line(err, errlen, "kubeconfig: out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &src->doc)) {   /* libyaml deleted the document */
        if (parser.error == YAML_MEMORY_ERROR)
            errfmt_line(err, errlen, "kubeconfig: %sout of memory", src->where);
        else if (parser.error == YAML_READER_ERROR)
            errfmt_line(err, errlen, "kubeconfig: %sinvalid YAML at byte %zu: %s", src->where,
                     parser.problem_offset, parser.problem ? parser.problem : "unreadable");
        else
            errfmt_line(err, errlen, "kubeconfig: %sinvalid YAML at line %zu column %zu: %s",
                     src->where, parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                     parser.problem ? parser.problem : "syntax error");
        goto done;
    }
    src->loaded = 1;
    src->root = yaml_document_get_root_node(&src->doc);
    if (kcfg_is_null(src->root)) {
        errfmt_line(err, errlen, "kubeconfig: %sempty document", src->where);
        goto done;
    }
    if (src->root->type != YAML_MAPPING_NODE) {
        errfmt_line(err, errlen, "kubeconfig: %stop level is a %s, not a mapping", src->where,
                 kcfg_kind(src->root));
        goto done;
    }
    rc = 0;
done:
    /* The parser's decode buffers held the raw text, keys included. */
    if (parser.buffer.start)
        OPENSSL_cleanse(parser.buffer.start, (size_t)(parser.buffer.end - parser.buffer.start));
    if (parser.raw_buffer.start)
        OPENSSL_cleanse(parser.raw_buffer.start,
                        (size_t)(parser.raw_buffer.end - parser.raw_buffer.start));
    yaml_parser_delete(&parser);
    return rc;
}

/* Set up src's naming: path NULL for an in-memory document (base_dir as given). */
static int kcfg_src_init(struct kcfg_src *src, const char *path, const char *base_dir)
{
    memset(src, 0, sizeof *src);
    if (path) {
        if (!(src->path = strdup(path)) || !(src->base_dir = kcfg_dirname(path)) ||
            !(src->where = kcfg_fmt("%s: ", path)))
            return -1;
    } else {
        if ((base_dir && !(src->base_dir = strdup(base_dir))) || !(src->where = strdup("")))
            return -1;
    }
    return 0;
}

/* Free a source, wiping the scalars (they include base64 keys and tokens). */
static void kcfg_src_free(struct kcfg_src *src)
{
    yaml_node_t *n;

    if (src->loaded) {
        for (n = src->doc.nodes.start; n < src->doc.nodes.top; n++)
            if (n->type == YAML_SCALAR_NODE && n->data.scalar.value)
                OPENSSL_cleanse(n->data.scalar.value, n->data.scalar.length);
        yaml_document_delete(&src->doc);
    }
    free(src->path);
    free(src->base_dir);
    free(src->where);
    memset(src, 0, sizeof *src);
}

/* Move a fully built config into *out and initialise its token lock; on failure the
 * config is freed and *out stays zeroed. */
static int kcfg_publish(struct kube_config *c, struct kube_config *out, char *err, size_t errlen)
{
    *out = *c;
    memset(c, 0, sizeof *c);
    if (pthread_mutex_init(&out->lock, NULL) != 0) {
        kube_config_free(out);
        errfmt_line(err, errlen, "kube config: cannot initialise mutex");
        return -1;
    }
    out->lock_ready = 1;
    out->token_checked = (time_t)(clock_mono_ms() / 1000);
    out->ca_checked = out->token_checked;
    struct stat st;
    if (out->ca_file && stat(out->ca_file, &st) == 0) out->ca_mtime = st.st_mtime;
    return 0;
}

/* Parse one in-memory kubeconfig (see config.h). */
int kube_config_parse(const char *text, size_t len, const char *base_dir,
                      const char *context_name, struct kube_config *out,
                      char *err, size_t errlen)
{
    struct kcfg_src src;
    struct kube_config c = {0};
    int rc = -1;

    memset(out, 0, sizeof *out);
    memset(&src, 0, sizeof src);
    if (!text) {
        errfmt_line(err, errlen, "kubeconfig: no document");
        return -1;
    }
    if (len > KCFG_MAX_KUBECONFIG) {
        errfmt_line(err, errlen, "kubeconfig: document is larger than the %zu KiB limit",
                 KCFG_MAX_KUBECONFIG >> 10);
        return -1;
    }
    if (kcfg_src_init(&src, NULL, base_dir) != 0) {
        errfmt_line(err, errlen, "kubeconfig: out of memory");
        goto done;
    }
    if (kcfg_src_parse(&src, text, len, err, errlen) != 0 ||
        kcfg_resolve(&src, 1, context_name, &c, err, errlen) != 0)
        goto done;
    rc = kcfg_publish(&c, out, err, errlen);
done:
    kube_config_free(&c);
    kcfg_src_free(&src);
    return rc;
}

/* Load and merge a ':'-separated list of kubeconfig files (see config.h). */
int kube_config_load(const char *paths, const char *context_name, struct kube_config *out,
                     char *err, size_t errlen)
{
    struct kcfg_src *srcs = NULL;
    struct kube_config c = {0};
    char *list = NULL, *home_path = NULL, *missing = NULL, *save = NULL, *p, *text = NULL;
    size_t nsrc = 0, tlen = 0, i, nseen = 0;
    int rc = -1, dup;

    memset(out, 0, sizeof *out);
    if (!paths || !*paths) {
        const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
        if (env && *env) {
            paths = env;
        } else if (home && *home) {
            if (!(home_path = kcfg_fmt("%s/.kube/config", home))) goto oom;
            paths = home_path;
        } else {
            errfmt_line(err, errlen, "kubeconfig: no path given and neither $KUBECONFIG nor $HOME "
                     "is set");
            goto done;
        }
    }
    if (!(list = strdup(paths)) || !(srcs = calloc(KCFG_MAX_FILES, sizeof *srcs))) goto oom;
    for (p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        if (++nseen > KCFG_MAX_FILES) {
            errfmt_line(err, errlen, "kubeconfig: more than %d files in the path list",
                     KCFG_MAX_FILES);
            goto done;
        }
        for (dup = 0, i = 0; i < nsrc; i++)          /* kubectl ignores repeats */
            if (!strcmp(srcs[i].path, p)) dup = 1;
        if (dup) continue;
        if (kcfg_read_file(p, KCFG_MAX_KUBECONFIG, &text, &tlen, NULL) != 0) {
            if (errno == ENOENT) {                   /* missing list entries are skipped */
                if (!missing && !(missing = strdup(p))) goto oom;
                continue;
            }
            kcfg_read_err(err, errlen, "kubeconfig: ", p, KCFG_MAX_KUBECONFIG, errno);
            goto done;
        }
        if (kcfg_src_init(&srcs[nsrc], p, NULL) != 0) {
            kcfg_src_free(&srcs[nsrc]);
            goto oom;
        }
        nsrc++;
        if (kcfg_src_parse(&srcs[nsrc - 1], text, tlen, err, errlen) != 0) goto done;
        kcfg_free_secret(text, tlen);
        text = NULL;
    }
    if (!nsrc) {
        errfmt_line(err, errlen, "kubeconfig: cannot read %s: %s", missing ? missing : paths,
                 strerror(ENOENT));
        goto done;
    }
    if (kcfg_resolve(srcs, nsrc, context_name, &c, err, errlen) != 0) goto done;
    rc = kcfg_publish(&c, out, err, errlen);
    goto done;
oom:
    errfmt_line(err, errlen, "kubeconfig: out of memory");
done:
    kube_config_free(&c);
    kcfg_free_secret(text, tlen);
    for (i = 0; srcs && i < nsrc; i++) kcfg_src_free(&srcs[i]);
    free(srcs);
    free(list);
    free(home_path);
    free(missing);
    return rc;
}

/* Service-account config from sa_dir and $KUBERNETES_SERVICE_HOST/PORT (see config.h). */
int kube_config_in_cluster(const char *sa_dir, struct kube_config *out, char *err, size_t errlen)
{
    struct kube_config c = {0};
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    char *path = NULL, *buf = NULL, *end;
    size_t len = 0;
    long pn;
    int rc = -1, v6;

    memset(out, 0, sizeof *out);
    if (!sa_dir || !*sa_dir) sa_dir = KCFG_SA_DIR;
    if (!host || !*host || !port || !*port) {
        errfmt_line(err, errlen, "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                 "must be set");
        goto done;
    }
    errno = 0;
    pn = strtol(port, &end, 10);
    if (errno || *end || pn < 1 || pn > 65535 || port[0] == '+' || port[0] == '-') {
        errfmt_line(err, errlen, "in-cluster: KUBERNETES_SERVICE_PORT \"%.64s\" is not a port "
                 "number", port);
        goto done;
    }
    if (strpbrk(host, "/@[] \t\r\n")) {
        errfmt_line(err, errlen, "in-cluster: KUBERNETES_SERVICE_HOST \"%.200s\" is not a host",
                 host);
        goto done;
    }
    v6 = strchr(host, ':') != NULL;                  /* IPv6 literal: bracket it */
    if (!(c.server = kcfg_fmt("https://%s%s%s:%ld", v6 ? "[" : "", host, v6 ? "]" : "", pn)))
        goto oom;

    if (!(c.token_file = kcfg_fmt("%s/token", sa_dir))) goto oom;
    if (!(c.token = kcfg_read_token(c.token_file, &c.token_mtime))) {
        kcfg_token_err(err, errlen, "in-cluster: ", c.token_file, errno);
        goto done;
    }

    if (!(path = kcfg_fmt("%s/ca.crt", sa_dir))) goto oom;
    if (kcfg_read_file(path, KCFG_MAX_PEM, &c.ca_pem, &c.ca_len, NULL) != 0) {
        kcfg_read_err(err, errlen, "in-cluster: ", path, KCFG_MAX_PEM, errno);
        goto done;
    }
    if (!kcfg_is_pem(c.ca_pem)) {
        errfmt_line(err, errlen, "in-cluster: %s does not contain PEM data", path);
        goto done;
    }
    c.ca_file = path;                /* re-read when the bundle rotates */
    path = NULL;

    /* The namespace file is optional (client-go falls back to "default"). */
    free(path);
    if (!(path = kcfg_fmt("%s/namespace", sa_dir))) goto oom;
    if (kcfg_read_file(path, KCFG_MAX_NAMESPACE, &buf, &len, NULL) == 0) {
        if (!(c.namespace_ = kcfg_trim_dup(buf, len))) goto oom;
        if (!*c.namespace_) { free(c.namespace_); c.namespace_ = NULL; }
    } else if (errno != ENOENT) {
        kcfg_read_err(err, errlen, "in-cluster: ", path, KCFG_MAX_NAMESPACE, errno);
        goto done;
    }
    rc = kcfg_publish(&c, out, err, errlen);
    goto done;
oom:
    errfmt_line(err, errlen, "in-cluster: out of memory");
done:
    kube_config_free(&c);
    free(buf);
    free(path);
    return rc;
}

/* First configuration found: explicit path, $KUBECONFIG, in-cluster, ~/.kube/config. */
int kube_config_auto(const char *kubeconfig_path, struct kube_config *out, char *err,
                     size_t errlen)
{
    const char *env = getenv("KUBECONFIG"), *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *home = getenv("HOME");
    char *path;
    int rc;

    if (kubeconfig_path && *kubeconfig_path)
        return kube_config_load(kubeconfig_path, NULL, out, err, errlen);
    if (env && *env) return kube_config_load(env, NULL, out, err, errlen);
    if (host && *host && access(KCFG_SA_DIR "/token", R_OK) == 0)
        return kube_config_in_cluster(NULL, out, err, errlen);
    memset(out, 0, sizeof *out);
    if (!home || !*home) {
        errfmt_line(err, errlen, "kube: no configuration: no --kubeconfig, $KUBECONFIG unset, not "
                 "in a cluster, and $HOME unset");
        return -1;
    }
    if (!(path = kcfg_fmt("%s/.kube/config", home))) {
        errfmt_line(err, errlen, "kube: out of memory");
        return -1;
    }
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        errfmt_line(err, errlen, "kube: no configuration: no --kubeconfig, $KUBECONFIG unset, not "
                 "in a cluster, and no %s", path);
        free(path);
        return -1;
    }
    rc = kube_config_load(path, NULL, out, err, errlen);
    free(path);
    return rc;
}

/* Current bearer token, re-reading token_file when it may have rotated (see config.h). */
char *kube_config_token(struct kube_config *c, int force)
{
    struct stat st;
    char *tok, *copy = NULL;
    time_t now, mtime;

    if (!c) return NULL;
    if (c->lock_ready) pthread_mutex_lock(&c->lock);
    if (c->token_file) {
        now = (time_t)(clock_mono_ms() / 1000);
        if (force || now - c->token_checked >= KCFG_TOKEN_RECHECK) {
            c->token_checked = now;
            /* kubelet swaps projected tokens by symlink; stat follows it to the new file. */
            if (force || (stat(c->token_file, &st) == 0 && st.st_mtime != c->token_mtime)) {
                if ((tok = kcfg_read_token(c->token_file, &mtime))) {
                    kcfg_free_secret_str(c->token);
                    c->token = tok;
                    c->token_mtime = mtime;
                }
            }
        }
    }
    if (c->token) copy = strdup(c->token);
    if (c->lock_ready) pthread_mutex_unlock(&c->lock);
    return copy;
}

/* Current CA bundle (see config.h). */
int kube_config_ca(struct kube_config *c, int force, char **pem, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    size_t blen = 0;
    int rc = 0;

    *pem = NULL;
    *len = 0;
    if (!c) return 0;
    if (c->lock_ready) pthread_mutex_lock(&c->lock);
    if (c->ca_file) {
        time_t now = (time_t)(clock_mono_ms() / 1000);
        if (force || now - c->ca_checked >= KCFG_CA_RECHECK) {
            c->ca_checked = now;
            if (stat(c->ca_file, &st) == 0 && (force || st.st_mtime != c->ca_mtime) &&
                kcfg_read_file(c->ca_file, KCFG_MAX_PEM, &buf, &blen, NULL) == 0) {
                if (kcfg_is_pem(buf)) {   /* a half-written or garbage file keeps the old one */
                    free(c->ca_pem);
                    c->ca_pem = buf;
                    c->ca_len = blen;
                    c->ca_mtime = st.st_mtime;
                    buf = NULL;
                }
                free(buf);
            }
        }
    }
    if (c->ca_pem) {
        if ((*pem = malloc(c->ca_len + 1))) {
            memcpy(*pem, c->ca_pem, c->ca_len);
            (*pem)[c->ca_len] = 0;
            *len = c->ca_len;
        } else {
            rc = -1;
        }
    }
    if (c->lock_ready) pthread_mutex_unlock(&c->lock);
    return rc;
}

/* The generation of the plugin credential this thread last sent: a 401 this thread sees
 * is about that one (kube_config_auth_rejected). */
static _Thread_local unsigned kcfg_sent_generation;

/* The credentials of one request (see config.h). */
int kube_config_auth(struct kube_config *c, struct kube_auth *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (c->exec_plugin) {
        struct kube_exec_credential cred;
        if (kube_credplugin_get(c->exec_plugin, &cred, err, errlen) < 0) return -1;
        kcfg_sent_generation = cred.generation;
        a->token = cred.token;
        a->cert_pem = cred.cert_pem;
        a->cert_len = cred.cert_len;
        a->key_pem = cred.key_pem;
        a->key_len = cred.key_len;
        /* a plugin that gives only a token leaves the kubeconfig's certificate in force */
        if (a->cert_pem) return 0;
    } else {
        a->token = kube_config_token(c, 0);
    }
    if (c->cert_pem && c->key_pem) {
        if (!(a->cert_pem = malloc(c->cert_len + 1)) || !(a->key_pem = malloc(c->key_len + 1))) {
            kube_auth_free(a);
            return errfmt_oom(err, errlen);
        }
        memcpy(a->cert_pem, c->cert_pem, c->cert_len);
        a->cert_pem[c->cert_len] = 0;
        memcpy(a->key_pem, c->key_pem, c->key_len);
        a->key_pem[c->key_len] = 0;
        a->cert_len = c->cert_len;
        a->key_len = c->key_len;
    }
    return 0;
}

void kube_auth_free(struct kube_auth *a)
{
    if (!a) return;
    kcfg_free_secret_str(a->token);
    free(a->cert_pem);
    kcfg_free_secret(a->key_pem, a->key_len);
    memset(a, 0, sizeof *a);
}

int kube_config_auth_rejected(struct kube_config *c)
{
    return c->exec_plugin ? kube_credplugin_invalidate(c->exec_plugin, kcfg_sent_generation) : 0;
}

/* Free a NULL-terminated array of n strings. */
static void kcfg_free_list(char **l, size_t n)
{
    for (size_t i = 0; l && i < n; i++) free(l[i]);
    free(l);
}

int kube_config_set_impersonation(struct kube_config *c, const char *user, const char *const *groups, size_t ngroups,
                                  char *err, size_t errlen)
{
    if (user) {
        char *u;
        if (!*user) return errfmt(err, errlen, "--as: the user name is empty");
        if (!(u = strdup(user))) return errfmt_oom(err, errlen);
        free(c->impersonate_user);
        c->impersonate_user = u;
    }
    if (ngroups) {
        char **g = calloc(ngroups + 1, sizeof(char *));
        if (!g) return errfmt_oom(err, errlen);
        for (size_t i = 0; i < ngroups; i++)
            if (!groups[i] || !*groups[i] || !(g[i] = strdup(groups[i]))) {
                kcfg_free_list(g, ngroups);
                return errfmt(err, errlen, groups[i] && !*groups[i] ? "--as-group: the group name is empty"
                                                                   : ERR_OOM);
            }
        kcfg_free_list(c->impersonate_groups, c->n_impersonate_groups);
        c->impersonate_groups = g;
        c->n_impersonate_groups = ngroups;
    }
    if (c->n_impersonate_groups && !c->impersonate_user)
        return errfmt(err, errlen, "--as-group needs --as (a user to impersonate)");
    return 0;
}

/* A header value must stay one line. */
static int kcfg_header_value_ok(const char *v)
{
    for (; *v; v++)
        if ((unsigned char)*v < 0x20 || *v == 0x7f) return 0;
    return 1;
}

char **kube_config_impersonation_headers(const struct kube_config *c, int *oom)
{
    size_t n = (c->impersonate_user ? 1 : 0) + (c->impersonate_uid ? 1 : 0) + c->n_impersonate_groups +
               c->n_impersonate_extra, k = 0;
    char **l;

    *oom = 0;
    if (!n) return NULL;
    if (!(l = calloc(n + 1, sizeof(char *)))) goto oom;
#define KCFG_ADD(...) do { if (!(l[k++] = kcfg_fmt(__VA_ARGS__))) goto oom; } while (0)
    if (c->impersonate_user && kcfg_header_value_ok(c->impersonate_user))
        KCFG_ADD("Impersonate-User: %s", c->impersonate_user);
    if (c->impersonate_uid && kcfg_header_value_ok(c->impersonate_uid))
        KCFG_ADD("Impersonate-Uid: %s", c->impersonate_uid);
    for (size_t i = 0; i < c->n_impersonate_groups; i++)
        if (kcfg_header_value_ok(c->impersonate_groups[i])) KCFG_ADD("Impersonate-Group: %s", c->impersonate_groups[i]);
    for (size_t i = 0; i < c->n_impersonate_extra; i++) {
        /* the key goes into the header name: percent-encoded as the API server decodes it */
        const char *kv = c->impersonate_extra[i], *eq = strchr(kv, '=');
        char key[600];
        size_t o = 0;
        if (!eq || !kcfg_header_value_ok(eq + 1)) continue;
        for (const char *q = kv; q < eq && o + 4 < sizeof key; q++) {
            unsigned char ch = (unsigned char)*q;
            if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                strchr("-!#$&'*+.^_`|~", ch))
                key[o++] = (char)ch;
            else
                o += (size_t)snprintf(key + o, sizeof key - o, "%%%02X", ch);
        }
        key[o] = 0;
        KCFG_ADD("Impersonate-Extra-%s: %s", key, eq + 1);
    }
#undef KCFG_ADD
    return l;
oom:
    kube_config_free_lines(l);
    *oom = 1;
    return NULL;
}

void kube_config_free_lines(char **lines)
{
    for (size_t i = 0; lines && lines[i]; i++) free(lines[i]);
    free(lines);
}

/* Wipe secrets, free everything, zero *c. */
void kube_config_free(struct kube_config *c)
{
    if (!c) return;
    if (c->exec_plugin) {
        kube_credplugin_free(c->exec_plugin);
        free(c->exec_plugin);
    }
    free(c->proxy_url);
    free(c->impersonate_user);
    free(c->impersonate_uid);
    kcfg_free_list(c->impersonate_groups, c->n_impersonate_groups);
    kcfg_free_list(c->impersonate_extra, c->n_impersonate_extra);
    if (c->lock_ready) pthread_mutex_destroy(&c->lock);
    free(c->server);
    free(c->namespace_);
    free(c->context);
    kcfg_free_secret_str(c->token);
    free(c->token_file);
    free(c->username);
    kcfg_free_secret_str(c->password);
    free(c->ca_pem);
    free(c->ca_file);
    free(c->cert_pem);
    kcfg_free_secret(c->key_pem, c->key_len);
    free(c->tls_server_name);
    memset(c, 0, sizeof *c);
}
