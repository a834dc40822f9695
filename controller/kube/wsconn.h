/* kube/wsconn.h — what every WebSocket session with the API server shares (exec.c,
 * portforward.c): the server URL split for libwebsockets, the session's own client
 * SSL_CTX built from the kubeconfig in memory, the Authorization header, subprotocol
 * checks, a per-session lws context with that TLS, the client connection itself, and the
 * Status message of a refused upgrade. No state of its own: every session owns its
 * context, SSL_CTX and connection (see exec.c, "TLS and libwebsockets 4.1", for why no
 * context may use lws' global SSL init). */
#ifndef YAO_KUBE_WSCONN_H
#define YAO_KUBE_WSCONN_H

#include <libwebsockets.h>
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
 * system store when it names none), client certificate chain and key, all from memory.
 * NULL with err "WHAT: ..." on failure. The caller frees it after the context that used it. */
SSL_CTX *kube_ws_tls_new(const struct kube_config *k, const char *what, char *err, size_t errlen);

/* The Authorization header value (bearer token, else basic auth), or NULL; free with
 * kube_ws_free_secret. */
char *kube_ws_auth_value(struct kube_config *k);
/* Wipe and free a secret string (NULL is fine). */
void kube_ws_free_secret(char *p);

/* True when proto is one of the comma-separated names in list. */
int kube_ws_protocol_offered(const char *list, const char *proto);

/* Add the Authorization (auth may be NULL) and User-Agent headers to a handshake
 * (LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER). 0, or -1 when they do not fit. */
int kube_ws_append_headers(struct lws *wsi, const char *auth, unsigned char **p, unsigned char *end);

/* A libwebsockets context for one session: no listener, protocols with user as the
 * context's user pointer, lws' logging as YAO_LWS_LOG asks, the header and service
 * buffers sized for the API server's handshakes, and with ssl (non-NULL for https) as the
 * client TLS of its vhost. NULL with err "WHAT: ..." on failure. */
struct lws_context *kube_ws_context_new(const struct lws_protocols *protocols, void *user, SSL_CTX *ssl,
                                        const char *what, char *err, size_t errlen);

/* Connect to path (below the endpoint's prefix, query included) offering the
 * comma-separated subprotocols; the connection is bound to local_protocol of the
 * context; *pwsi follows the connection (NULL once it is gone). Pings an idle connection
 * every 20 s and hangs up after 120 s without an answer. NULL when it cannot even start. */
struct lws *kube_ws_connect(struct lws_context *ctx, const struct kube_ws_endpoint *ep, const struct kube_config *cfg,
                            const char *full_path, const char *protocols, const char *local_protocol,
                            struct lws **pwsi);

/* After a refused upgrade (HTTP status, 4xx but 429): the Status message of the same
 * request asked as a plain GET (the API server refuses it before any proxying: a GET
 * without upgrade never reaches the kubelet) into err as "WHAT: upgrade refused: MSG",
 * plus hint403 on a 403. Nothing when the status differs or cannot be read. */
void kube_ws_refusal_message(struct kube_client *c, long status, const char *path, const char *what,
                             const char *hint403, char *err, size_t errlen);

#endif
