/* kube/wsconn.h — what a WebSocket stream to the API server (kube/wsstream.c) takes from
 * the kubeconfig and the server URL: the URL split, the stream's own client SSL_CTX built
 * from the kubeconfig in memory, the Authorization and Host header values, the
 * subprotocol check, readable texts for a refused certificate and a close frame, and the
 * Status message of a refused upgrade. No state of its own, no I/O but the refusal's GET. */
#ifndef YAO_KUBE_WSCONN_H
#define YAO_KUBE_WSCONN_H

#include <openssl/ssl.h>
#include <stddef.h>
#include "kube/config.h"
#include "kube/rest.h"

/* The server URL, split. */
struct kube_ws_endpoint {
    int tls;
    char host[256];      /* as in the URL, IPv6 without brackets */
    int port;
    const char *prefix;  /* path below the host ("" or "/k8s/clusters/x"), no trailing '/' */
    size_t prefix_len;
};

/* Split the kubeconfig's server URL (http or https). 0, or -1 with err "WHAT: ...". */
int kube_ws_parse_server(const char *url, struct kube_ws_endpoint *e, const char *what, char *err, size_t errlen);

/* A client SSL_CTX from the kubeconfig: its CA bundle (every certificate in it, or the
 * system store when it names none), and the client certificate chain and key of a (the
 * request's credentials: kube_config_auth), all from memory. NULL with err "WHAT: ..." on
 * failure. The caller frees it after the context that used it. */
SSL_CTX *kube_ws_tls_new(const struct kube_config *k, const struct kube_auth *a, const char *what, char *err,
                         size_t errlen);

/* The Authorization header value (a's bearer token, else the kubeconfig's basic auth), or
 * NULL; free with kube_ws_free_secret. */
char *kube_ws_auth_value(const struct kube_config *k, const struct kube_auth *a);
/* Wipe and free a secret string (NULL is fine). */
void kube_ws_free_secret(char *p);

/* True when proto is one of the comma-separated names in list. */
int kube_ws_protocol_offered(const char *list, const char *proto);

/* OpenSSL's complaint about the server's certificate chain (x: the store context of a
 * failed verification) in out, once, for a readable error; the verdict stays OpenSSL's. */
void kube_ws_note_cert_error(X509_STORE_CTX *x, char *out, size_t outlen);
/* A close frame's payload: the peer's close code and (up to 100 bytes of) reason as
 * " (close CODE: REASON)" in out, for the stream's error message; nothing when the frame
 * carries no code. */
void kube_ws_note_close(const void *in, size_t len, char *out, size_t outlen);

/* The Host header value for the endpoint: tls-server-name or the host (IPv6 in brackets),
 * with the port unless it is the scheme's default. */
void kube_ws_host_header(const struct kube_ws_endpoint *ep, const struct kube_config *cfg, char *out, size_t outlen);

/* After a refused upgrade (HTTP status, 4xx but 429): the Status message of the same
 * request asked as a plain GET (the API server refuses it before any proxying: a GET
 * without upgrade never reaches the kubelet) into err as "WHAT: upgrade refused: MSG",
 * plus hint403 on a 403. Nothing when the status differs or cannot be read. */
void kube_ws_refusal_message(struct kube_client *c, long status, const char *path, const char *what,
                             const char *hint403, char *err, size_t errlen);

#endif
