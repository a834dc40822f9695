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
#include <pthread.h>
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

/* Add the Authorization (auth may be NULL), the whole header lines of extra
 * ("Impersonate-User: alice"; NULL-terminated, may be NULL) and User-Agent headers to a
 * handshake (LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER). 0, or -1 when they do not fit. */
int kube_ws_append_headers(struct lws *wsi, const char *auth, char *const *extra, unsigned char **p,
                           unsigned char *end);
/* LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION: note OpenSSL's complaint about
 * the server's certificate chain (user: the X509_STORE_CTX, len 0 on a failure) in out,
 * once, for a readable error; the verdict stays OpenSSL's. */
void kube_ws_note_cert_error(void *user, size_t len, char *out, size_t outlen);
/* LWS_CALLBACK_WS_PEER_INITIATED_CLOSE: the peer's close code and (up to 100 bytes of)
 * reason as " (close CODE: REASON)" in out, for the session's error message; nothing when
 * the frame carries no code. */
void kube_ws_note_close(const void *in, size_t len, char *out, size_t outlen);

/* LWS_CALLBACK_CLIENT_CONNECTION_ERROR: why the connection failed, as "WHAT: ..." in err
 * — the HTTP status of a refused upgrade (also put in *http_status), OpenSSL's complaint
 * about the server's certificate (tls_verify, from kube_ws_note_cert_error; not when
 * insecure-skip-tls-verify is set), a subprotocol nobody offered (offered non-NULL: the
 * list, named when lws' reason mentions the protocol), else lws' reason (in, len). */
void kube_ws_connection_error(struct lws *wsi, const void *in, size_t len, const char *what, const char *tls_verify,
                              const struct kube_config *cfg, const char *offered, long *http_status, char *err,
                              size_t errlen);
/* LWS_CALLBACK_CLIENT_CONNECTION_ERROR, CLIENT_CLOSED and WSI_DESTROY: the session's
 * connection (*pwsi) is gone: *finished set, *pwsi forgotten, the loop woken to end now
 * rather than at lws' next timer. For WSI_DESTROY only when wsi is *pwsi (lws destroys
 * other wsis of the context too). Returns 0 for the callback. */
int kube_ws_note_gone(struct lws *wsi, enum lws_callback_reasons reason, struct lws **pwsi, int *finished);

/* A libwebsockets context for one session: no listener, protocols with user as the
 * context's user pointer, lws' logging as YAO_LWS_LOG asks, the header and service
 * buffers sized for the API server's handshakes, with ssl (non-NULL for https) as the
 * client TLS of its vhost, and proxy (NULL or set 0: none) as the HTTP proxy lws' own
 * client connections tunnel through with CONNECT (lws' reading of $http_proxy is
 * overridden either way: kube/proxy.h decides). NULL with err "WHAT: ..." on failure. */
struct kube_proxy;
struct lws_context *kube_ws_context_new(const struct lws_protocols *protocols, void *user, SSL_CTX *ssl,
                                        const struct kube_proxy *proxy, const char *what, char *err,
                                        size_t errlen);

/* Connect to path (below the endpoint's prefix, query included) offering the
 * comma-separated subprotocols; the connection is bound to local_protocol of the
 * context; *pwsi follows the connection (NULL once it is gone). Pings an idle connection
 * every 20 s and hangs up after 120 s without an answer. NULL when it cannot even start. */
struct lws *kube_ws_connect(struct lws_context *ctx, const struct kube_ws_endpoint *ep, const struct kube_config *cfg,
                            const char *full_path, const char *protocols, const char *local_protocol,
                            struct lws **pwsi);

/* Connect to the endpoint as a raw TCP client connection (method "RAW"): lws resolves,
 * connects (with the context's connect timeout) and runs the loop; the session does TLS,
 * HTTP and WebSocket itself (exec.c, kube/wsframe.h). Always plain TCP for lws: 4.1.6
 * starts the TLS of a raw client before its socket exists (core-net/connect.c), so that
 * fails at once. Bound to local_protocol of the context, whose callback gets
 * LWS_CALLBACK_RAW_CONNECTED, then RAW_RX / RAW_WRITEABLE / RAW_CLOSE. *pwsi as above; no
 * keepalive of lws' (the session pings). NULL when it cannot even start. */
struct lws *kube_ws_connect_raw(struct lws_context *ctx, const struct kube_ws_endpoint *ep,
                                const char *local_protocol, struct lws **pwsi);
/* The Host header value for the endpoint: tls-server-name or the host (IPv6 in brackets),
 * with the port unless it is the scheme's default. */
void kube_ws_host_header(const struct kube_ws_endpoint *ep, const struct kube_config *cfg, char *out, size_t outlen);

/* After a refused upgrade (HTTP status, 4xx but 429): the Status message of the same
 * request asked as a plain GET (the API server refuses it before any proxying: a GET
 * without upgrade never reaches the kubelet) into err as "WHAT: upgrade refused: MSG",
 * plus hint403 on a 403. Nothing when the status differs or cannot be read. */
void kube_ws_refusal_message(struct kube_client *c, long status, const char *path, const char *what,
                             const char *hint403, char *err, size_t errlen);

/* ---- input from an fd, read by a thread of the session -------------------------------- */

#define KUBE_WS_CHUNK (32u * 1024)      /* payload of one message read from the fd */
#define KUBE_WS_READER_SLOTS 4          /* chunks read ahead at most */

/* Input from an fd (exec's stdin, a port-forward's local connection): a thread reads the fd into a ring of chunk slots and
 * wakes the event loop (lws_cancel_service, which lws turns into EVENT_WAIT_CANCELLED on
 * the loop's thread); the loop sends the oldest full slot per writable event and frees
 * it. Slots [head, head + count) are full and belong to the loop; the next one is the
 * reader's to fill. When all are full the reader waits (backpressure: it reads no more
 * than the socket takes). It waits for input in poll() on the fd and a pipe of its own,
 * so stopping it needs no input: the loop writes to the pipe and joins it. */
struct kube_ws_slot {
    size_t len;
    unsigned char buf[LWS_PRE + 1 + KUBE_WS_CHUNK];   /* lws' headroom, channel id, data */
};

struct kube_ws_reader {
    int fd;
    int wake[2];                 /* the stop pipe: read end polled by the reader */
    struct lws_context *ctx;     /* to wake the loop */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* a slot was freed, or stop */
    /* under mu */
    unsigned head, count;
    int eof;                     /* read() returned 0: no more after the full slots */
    int err;                     /* errno of a failed read or poll */
    int stop;
    struct kube_ws_slot slot[KUBE_WS_READER_SLOTS];
};

/* A reader for fd, not started yet; NULL (with errno) when out of memory or pipes. */
struct kube_ws_reader *kube_ws_reader_new(int fd);
/* Start reading; the loop of ctx is woken (lws_cancel_service) for every chunk, EOF or
 * error. 0 or -1. */
int kube_ws_reader_start(struct kube_ws_reader *rd, struct lws_context *ctx);
/* Stop the thread (wherever it waits: for a slot, for input) and join it. */
void kube_ws_reader_stop(struct kube_ws_reader *rd);
/* Stop, join and free (NULL is fine). Before the context it wakes is destroyed. */
void kube_ws_reader_free(struct kube_ws_reader *rd);
/* Something for the loop: a full slot, EOF or an error. */
int kube_ws_reader_pending(struct kube_ws_reader *rd);

#endif
