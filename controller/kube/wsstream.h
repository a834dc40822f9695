/* kube/wsstream.h — one WebSocket stream to the API server, as exec and port-forward use
 * it: connect (through the HTTP CONNECT proxy kube/proxy.h chose, if any), TLS, the
 * upgrade with the kubeconfig's credentials, RFC 6455 framing, keepalive, the deadline,
 * input read from an fd by a thread of the stream, and the end (salvage of what the
 * server sent before a reset). Its user (kube/exec.c, kube/portforward.c) keeps only its
 * channel protocol: it is handed every received data message in pieces, in place, and
 * sends its own messages through kube_wss_send.
 *
 * One stream per kube_wss_run call, run to its end on the calling thread; streams in
 * different threads share nothing (each has its own lws context and SSL_CTX). */
#ifndef YAO_KUBE_WSSTREAM_H
#define YAO_KUBE_WSSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "kube/rest.h"
#include "kube/wsframe.h"

#define KUBE_WSS_HEADROOM KUBE_WS_MAX_HEADER  /* writable bytes kube_wss_send needs before a payload */
#define KUBE_WSS_CHUNK (32u * 1024)           /* payload of one message read from input_fd */
#define KUBE_WSS_INPUT_SLOTS 4                /* chunks of input_fd read ahead at most */
#define KUBE_WSS_PING_SECS 20                 /* ping a connection quiet for this long, like client-go */
#define KUBE_WSS_HANGUP_SECS 120              /* and give up when nothing came for this long */
#define KUBE_WSS_UPGRADE_SECS 30              /* the answer to the upgrade request, at most */

struct kube_wss;

struct kube_wss_options {
    const char *what;          /* "exec", "port-forward": the first word of every error */
    const char *path;          /* below the server URL's path prefix, query included */
    const char *protocols;     /* the subprotocols offered, comma-separated */
    const char *hint403;       /* added to the message of a 403 (may be NULL) */
    int retried_on_401;        /* the caller retries a 401 itself: no refusal lookup for it */
    long timeout_ms;           /* the whole stream at most; 0: no deadline */
    /* Input from an fd (-1: none), read by a thread of the stream from the upgrade on,
     * KUBE_WSS_CHUNK at a time into KUBE_WSS_INPUT_SLOTS slots: each chunk goes out as one
     * binary message of input_channel and the chunk, once the socket took the previous. */
    int input_fd;
    unsigned char input_channel;
    unsigned poll_ms;          /* on_poll every poll_ms while the stream lasts; 0: never */
    void *ud;
    /* The upgrade succeeded with protocol (one of the offered). 0, or -1 to end it (say
     * why with kube_wss_fail). */
    int (*on_open)(void *ud, struct kube_wss *st, const char *protocol);
    /* A piece of a received data message: first on its first piece, final on its last (n
     * may be 0); p is valid during the call only. 0 goes on; anything else ends the
     * stream at once (nothing after it is read; the connection is dropped). */
    int (*on_message)(void *ud, struct kube_wss *st, const unsigned char *p, size_t n, int first, int final);
    /* The socket takes more (asked for with kube_wss_want_write, or after the upgrade):
     * send the user's own messages, one per call. May be NULL. 0, or -1 to end it. */
    int (*on_writable)(void *ud, struct kube_wss *st);
    /* input_fd ended and every chunk of it went out: err is 0 at EOF, else the errno of
     * the failed read. Once. May be NULL. */
    void (*on_input_end)(void *ud, struct kube_wss *st, int err);
    /* Every poll_ms, on the stream's thread. May be NULL. */
    void (*on_poll)(void *ud, struct kube_wss *st);
};

struct kube_wss_result {
    long http_status;          /* 101 once upgraded, or the status of a refused upgrade */
    int established;           /* the upgrade succeeded */
    int closed;                /* the server sent its close frame */
    int send_failed;           /* a write failed (the server had closed): nothing was sent after it */
    char close_reason[128];    /* " (close CODE: REASON)" from the server's close frame, or "" */
    uint64_t input_bytes;      /* payload sent from input_fd */
};

/* Run one stream with the client's server, credentials and proxy, to its end: the server
 * closes, a callback or kube_wss_stop ends it, or it fails. 0, or -1 with the reason in
 * err as "WHAT: ..." — for a refused upgrade (4xx but 429) the Status message of the same
 * path asked as a plain GET when its status matches (plus hint403 on a 403), else
 * "WHAT: upgrade refused: HTTP N". The input thread is joined before it returns. */
int kube_wss_run(struct kube_client *c, const struct kube_wss_options *o, struct kube_wss_result *res, char *err,
                 size_t errlen);

/* Send one binary message: p holds n bytes with KUBE_WSS_HEADROOM writable bytes before
 * it (the frame is built and masked in place, so p is changed). It is queued for the
 * socket (bounded: see kube_wss_run). 0, or -1 when the connection is gone or the write
 * failed — the server has closed it; the stream then sends nothing more and reads what
 * the server sent before (res->send_failed). */
int kube_wss_send(struct kube_wss *st, unsigned char *p, size_t n);
/* Ask for an on_writable call once the socket takes more. */
void kube_wss_want_write(struct kube_wss *st);
/* End the stream now: the connection is dropped at the next round of the loop. */
void kube_wss_stop(struct kube_wss *st);
/* Record why the stream failed (the whole message, prefix included; the first failure
 * wins) and end it. */
void kube_wss_fail(struct kube_wss *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
