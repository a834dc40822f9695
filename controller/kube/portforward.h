/* kube/portforward.h — one forwarded TCP connection into a pod through the API server:
 * GET /api/v1/namespaces/NS/pods/POD/portforward?ports=PORT upgraded to a WebSocket
 * (subprotocol v4.channel.k8s.io, served by the kubelet's streaming server behind the API
 * server). One WebSocket carries one connection, as kubectl's WebSocket mode does: channel
 * 0 is its data, channel 1 its error text; the server starts each channel with the port,
 * 2 bytes little-endian. The caller accepts local connections and runs one session per
 * connection (a thread each); a session shares nothing with another. The transport is the
 * WebSocket stream exec uses too (kube/wsstream.h): TLS, credentials and proxy are the
 * kubeconfig's. The frame demultiplexer is pure, for
 * tests. */
#ifndef YAO_KUBE_PORTFORWARD_H
#define YAO_KUBE_PORTFORWARD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "kube/rest.h"

enum kube_pf_channel {
    KUBE_PF_DATA = 0,
    KUBE_PF_ERROR = 1,
};

#define KUBE_PF_PROTOCOL "v4.channel.k8s.io"
/* The error channel's text kept at most (the kubelet's message is one line). */
#define KUBE_PF_ERROR_MAX 2048

struct kube_pf_options {
    const char *namespace_;
    const char *pod;
    uint16_t port;                 /* in the pod, 1-65535 */
    int fd;                        /* the local connection: read until EOF, written to; not closed */
    /* non-NULL: the session ends soon after *stop turns non-zero. Read on the session's
     * thread; an atomic (lock-free, so a signal handler may set it, as the CLI's does). */
    const atomic_int *stop;
};

struct kube_pf_result {
    long http_status;              /* 101 once upgraded, else the refusal's status */
    uint64_t bytes_to_pod, bytes_from_pod;
    char err[KUBE_PF_ERROR_MAX + 128]; /* why it failed (kube_portforward returned -1) */
};

/* Forward the connection o->fd to o->port of the pod until either side ends it. 0 when it
 * ended normally (the pod's side closed, the local side went away, or *stop), -1 on
 * failure: the upgrade was refused (pod not found, not running, forbidden: the API
 * server's message), the pod reported an error on the error channel (nobody listens on
 * the port: the kubelet's text, verbatim), the data did not start with the expected port,
 * or a transport error. r->err says why in one line.
 * Limit: the v4 protocol cannot half-close. When the local side stops sending (EOF) the
 * pod is not told; the session goes on until the pod's side closes or a write to the
 * local side fails. */
int kube_portforward(struct kube_client *c, const struct kube_pf_options *o, struct kube_pf_result *r);

/* ---- the pure part: frames in, data and error text out ----------------------------------- */

/* Data callback: return 0 to go on, non-zero to end the session. */
typedef int (*kube_pf_data_fn)(void *ud, const unsigned char *data, size_t len);

struct kube_pf_demux {
    uint16_t port;                 /* the port the server must name first on each channel */
    int in_message, channel;       /* of the current message (the id is in its first fragment) */
    unsigned char prefix[2][2];    /* per channel: the port bytes seen so far */
    size_t prefix_len[2];
    char error[KUBE_PF_ERROR_MAX + 1];  /* the error channel's text, NUL-terminated */
    size_t error_len;
    int error_truncated;
    kube_pf_data_fn on_data;
    void *ud;
};

void kube_pf_demux_init(struct kube_pf_demux *d, uint16_t port, kube_pf_data_fn on_data, void *ud);
/* Feed one WebSocket fragment (first/final: its flags). Returns 0; -1 for a message on a
 * channel other than 0 and 1 or a port prefix that is not d->port (err says which); or
 * the data callback's non-zero value. Empty messages are allowed. */
int kube_pf_demux_feed(struct kube_pf_demux *d, const unsigned char *p, size_t n, int first, int final,
                       char *err, size_t errlen);
/* A data message for the server: the channel byte (0) then len bytes of data, at out
 * (cap bytes). Returns the message length, or 0 when it does not fit. */
size_t kube_pf_data_message(const unsigned char *data, size_t len, unsigned char *out, size_t cap);
/* The request path (below the server's prefix): /api/v1/namespaces/NS/pods/POD/portforward?ports=PORT
 * with NS and POD URL-encoded. 0, or -1 when it does not fit in out. */
int kube_pf_path(const char *ns, const char *pod, uint16_t port, char *out, size_t cap);

/* kubectl's port mapping: "PORT" (the same local port), "LOCAL:PORT", ":PORT" or
 * "0:PORT" (*local = 0: any free port). Ports are decimal 1-65535 (LOCAL also 0). 0, or
 * -1 for anything else. */
int kube_pf_parse_mapping(const char *s, uint16_t *local, uint16_t *remote);

#endif
