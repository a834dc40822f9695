/* kube/wsconn.c — what a WebSocket stream takes from the kubeconfig and the server URL
 * (see wsconn.h): the URL split, the client SSL_CTX from memory, the Authorization and
 * Host headers, subprotocol and close-frame helpers, the Status of a refused upgrade.
 * Why each stream builds its own SSL_CTX: kube/wsstream.c. */
#include "base/errfmt.h"
#include "kube/wsconn.h"

#include <libwebsockets.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


int kube_ws_parse_server(const char *url, struct kube_ws_endpoint *e, const char *what, char *err, size_t errlen) {
    const char *p;
    memset(e, 0, sizeof(*e));
    if (!strncasecmp(url, "https://", 8)) {
        e->tls = 1;
        p = url + 8;
    } else if (!strncasecmp(url, "http://", 7)) {
        p = url + 7;
    } else {
        errfmt(err, errlen, "%s: server URL \"%s\" is not http(s)://", what, url);
        return -1;
    }
    e->port = e->tls ? 443 : 80;
    const char *host = p, *hend;
    if (*p == '[') {
        host = p + 1;
        if (!(hend = strchr(host, ']'))) goto bad;
        p = hend + 1;
    } else {
        while (*p && *p != ':' && *p != '/') p++;
        hend = p;
    }
    if (hend == host || (size_t)(hend - host) >= sizeof(e->host)) goto bad;
    memcpy(e->host, host, (size_t)(hend - host));
    if (*p == ':') {
        char *end;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port < 1 || port > 65535 || (*end && *end != '/')) goto bad;
        e->port = (int)port;
        p = end;
    }
    if (*p && *p != '/') goto bad;
    e->prefix = p;
    e->prefix_len = strlen(p);
    while (e->prefix_len && p[e->prefix_len - 1] == '/') e->prefix_len--;
    return 0;
bad:
    errfmt(err, errlen, "%s: cannot parse server URL \"%s\"", what, url);
    return -1;
}

SSL_CTX *kube_ws_tls_new(const struct kube_config *k, const struct kube_auth *a, const char *what, char *err,
                         size_t errlen) {
    SSL_CTX *ssl = SSL_CTX_new(TLS_client_method());
    BIO *b = NULL;
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    int rc = -1, said = 0;

    if (!ssl || SSL_CTX_set_min_proto_version(ssl, TLS1_2_VERSION) != 1) goto out;
    if (!(k->ca_pem && k->ca_len) && !k->insecure_skip_tls_verify && SSL_CTX_set_default_verify_paths(ssl) != 1)
        goto out;
    if (k->ca_pem && k->ca_len && !k->insecure_skip_tls_verify) {
        X509_STORE *store = SSL_CTX_get_cert_store(ssl);
        int n = 0;
        if (!(b = BIO_new_mem_buf(k->ca_pem, (int)k->ca_len))) goto out;
        while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
            if (X509_STORE_add_cert(store, x) == 1) n++;
            X509_free(x);
            x = NULL;
        }
        BIO_free(b);
        b = NULL;
        if (!n) {
            errfmt(err, errlen, "%s: certificate-authority holds no PEM certificate", what);
            said = 1;
            goto out;
        }
    }
    if (a->cert_pem && a->cert_len && a->key_pem && a->key_len) {
        if (!(b = BIO_new_mem_buf(a->cert_pem, (int)a->cert_len))) goto out;
        if (!(x = PEM_read_bio_X509(b, NULL, NULL, NULL)) || SSL_CTX_use_certificate(ssl, x) != 1) {
            errfmt(err, errlen, "%s: client-certificate is not a usable PEM certificate", what);
            said = 1;
            goto out;
        }
        X509_free(x);
        /* Intermediates after the leaf go out with it. */
        while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
            if (SSL_CTX_add_extra_chain_cert(ssl, x) != 1) goto out;
            x = NULL;   /* owned by the SSL_CTX now */
        }
        BIO_free(b);
        if (!(b = BIO_new_mem_buf(a->key_pem, (int)a->key_len))) goto out;
        if (!(key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) || SSL_CTX_use_PrivateKey(ssl, key) != 1 ||
            SSL_CTX_check_private_key(ssl) != 1) {
            errfmt(err, errlen, "%s: client-key is unreadable or does not match client-certificate", what);
            said = 1;
            goto out;
        }
    }
    rc = 0;
out:
    if (rc < 0) {
        if (!said) errfmt(err, errlen, "%s: cannot set up TLS", what);
        SSL_CTX_free(ssl);
        ssl = NULL;
    }
    ERR_clear_error();
    EVP_PKEY_free(key);
    X509_free(x);
    BIO_free(b);
    return ssl;
}

void kube_ws_free_secret(char *p) {
    if (!p) return;
    OPENSSL_cleanse(p, strlen(p));
    free(p);
}

char *kube_ws_auth_value(const struct kube_config *k, const struct kube_auth *a) {
    if (a->token) {
        size_t n = strlen(a->token) + sizeof("Bearer ");
        char *v = malloc(n);
        if (v) snprintf(v, n, "Bearer %s", a->token);
        return v;
    }
    if (k->username && k->password) {
        size_t n = (strlen(k->username) + strlen(k->password)) * 2 + 16;
        char *v = malloc(n);
        if (v && lws_http_basic_auth_gen(k->username, k->password, v, n)) {
            free(v);
            v = NULL;
        }
        return v;
    }
    return NULL;
}

int kube_ws_protocol_offered(const char *list, const char *proto) {
    size_t n = strlen(proto);
    if (!n) return 0;
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        if ((size_t)(t - p) == n && !strncmp(p, proto, n)) return 1;
        p = e;
    }
    return 0;
}

void kube_ws_note_cert_error(X509_STORE_CTX *x, char *out, size_t outlen) {
    if (!x || !outlen || out[0]) return;
    snprintf(out, outlen, "%s (depth %d)", X509_verify_cert_error_string(X509_STORE_CTX_get_error(x)),
             X509_STORE_CTX_get_error_depth(x));
}

void kube_ws_note_close(const void *in, size_t len, char *out, size_t outlen) {
    if (len < 2 || !in) return;
    const unsigned char *c = in;
    int n = len - 2 > 100 ? 100 : (int)(len - 2);
    snprintf(out, outlen, " (close %d%s%.*s)", (c[0] << 8) | c[1], n ? ": " : "", n, (const char *)c + 2);
}

void kube_ws_host_header(const struct kube_ws_endpoint *ep, const struct kube_config *cfg, char *out, size_t outlen) {
    const char *h = cfg->tls_server_name && cfg->tls_server_name[0] ? cfg->tls_server_name : ep->host;
    int v6 = strchr(h, ':') != NULL;
    if (ep->port == (ep->tls ? 443 : 80))
        snprintf(out, outlen, "%s%s%s", v6 ? "[" : "", h, v6 ? "]" : "");
    else
        snprintf(out, outlen, "%s%s%s:%d", v6 ? "[" : "", h, v6 ? "]" : "", ep->port);
}

void kube_ws_refusal_message(struct kube_client *c, long status, const char *path, const char *what,
                             const char *hint403, char *err, size_t errlen) {
    struct kube_response resp;
    if (status < 400 || status >= 500 || status == 429) return;
    if (kube_request(c, "GET", path, NULL, NULL, 0, &resp) == 0 && resp.status == status) {
        char msg[KUBE_ERR_MAX];
        kube_response_message(&resp, msg, sizeof(msg));
        errfmt(err, errlen, "%s: upgrade refused: %s", what, msg);
    }
    kube_response_free(&resp);
    if (status == 403 && hint403) {
        size_t n = strlen(err);
        errfmt(err + n, errlen - n, " (%s)", hint403);
    }
}
