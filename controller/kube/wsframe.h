/* kube/wsframe.h — the client side of RFC 6455, without I/O: the HTTP/1.1 upgrade request,
 * the check of the server's 101 answer (Sec-WebSocket-Accept, subprotocol), a parser of
 * server frames that takes whatever a read returned (a whole buffer at a time, payload
 * handed on in place, not byte by byte) and the header and mask of client frames.
 *
 * Why it exists: libwebsockets 4.1 parses every received WebSocket byte through a state
 * machine, which costs twice kubectl's CPU per byte of exec output (docs/benchmarks.md,
 * "Exec throughput"). kube/wsstream.c opens its connection as a raw lws client (lws keeps
 * TCP and the loop) and speaks WebSocket through this module. Pure: unit-tested in
 * tests/unit/test_wsframe.c. */
#ifndef YAO_KUBE_WSFRAME_H
#define YAO_KUBE_WSFRAME_H

#include <stddef.h>
#include <stdint.h>

enum kube_ws_opcode {
    KUBE_WS_CONT = 0,
    KUBE_WS_TEXT = 1,
    KUBE_WS_BINARY = 2,
    KUBE_WS_CLOSE = 8,
    KUBE_WS_PING = 9,
    KUBE_WS_PONG = 10,
};

#define KUBE_WS_KEY_LEN 24        /* base64 of 16 random bytes */
#define KUBE_WS_ACCEPT_LEN 28     /* base64 of a SHA-1 */
#define KUBE_WS_MAX_HEADER 14     /* 2 + 8 (length) + 4 (mask) */
#define KUBE_WS_HS_MAX (16u * 1024) /* the 101 answer's headers at most */

/* Sec-WebSocket-Accept for key (RFC 6455 4.2.2): base64(SHA-1(key + GUID)) into out
 * (KUBE_WS_ACCEPT_LEN + 1 bytes). */
void kube_ws_accept_for(const char *key, char out[KUBE_WS_ACCEPT_LEN + 1]);

/* The upgrade request into out (cap bytes): GET path, Host, the WebSocket headers with
 * key, Sec-WebSocket-Protocol (protocols, comma-separated), Authorization (auth, may be
 * NULL), the whole header lines of extra ("Impersonate-User: alice"; NULL-terminated,
 * may be NULL) and User-Agent (ua). Its length, or 0 when it does not fit. */
size_t kube_ws_upgrade_request(char *out, size_t cap, const char *host, const char *path, const char *key,
                               const char *protocols, const char *auth, const char *const *extra, const char *ua);

/* The server's answer to the upgrade, once its header is complete. */
struct kube_ws_answer {
    int status;                 /* HTTP status code */
    size_t header_len;          /* bytes up to and including the blank line */
    char protocol[64];          /* Sec-WebSocket-Protocol ("" when absent) */
    char accept[64];            /* Sec-WebSocket-Accept ("" when absent) */
    int upgrade_websocket;      /* Upgrade: websocket */
    int connection_upgrade;     /* Connection: names upgrade */
};

/* Parse the answer in buf (len bytes so far): 1 when its header is complete (a filled),
 * 0 when more is needed, -1 when it is not HTTP/1.x or its header exceeds KUBE_WS_HS_MAX. */
int kube_ws_parse_answer(const char *buf, size_t len, struct kube_ws_answer *a);

/* Whether a 101 answer completes the handshake for key and the offered subprotocols:
 * NULL when it does, else why not (a static string). */
const char *kube_ws_check_answer(const struct kube_ws_answer *a, const char *key);

/* ---- server frames in ------------------------------------------------------------------ */

/* Data of a message as it arrives: first is set on the message's first piece, final on
 * its last (both on a message that fits one piece; n may be 0). Return 0 to go on,
 * > 0 to stop the parser (kube_ws_parser_feed returns that value). */
typedef int (*kube_ws_data_fn)(void *ud, int opcode, const unsigned char *p, size_t n, int first, int final);
/* A whole control frame (close, ping, pong), payload up to 125 bytes. Return as above. */
typedef int (*kube_ws_control_fn)(void *ud, int opcode, const unsigned char *p, size_t n);

struct kube_ws_parser {
    kube_ws_data_fn on_data;
    kube_ws_control_fn on_control;
    void *ud;
    /* state */
    unsigned char hdr[KUBE_WS_MAX_HEADER];
    size_t hdr_have;            /* header bytes collected */
    int in_frame;               /* header complete, payload left */
    uint64_t left;              /* payload bytes left of the frame */
    int opcode, fin;            /* of the frame */
    int in_message;             /* a fragmented data message is open */
    int msg_opcode;             /* its opcode */
    int piece_first;            /* the next data piece is its message's first */
    unsigned char ctl[125];     /* a control frame's payload */
    size_t ctl_len;
    int closed;                 /* a close frame was seen: nothing more is parsed */
    int stopped;                /* a callback stopped it, or a protocol error: nothing more */
};

void kube_ws_parser_init(struct kube_ws_parser *ps, kube_ws_data_fn on_data, kube_ws_control_fn on_control,
                         void *ud);
/* Feed what a read returned. 0 when all of it was taken (or ignored after a close),
 * > 0 when a callback stopped the parser (that value; the rest of p is not parsed, and
 * the parser takes nothing more), -1 on a frame no server may send (reserved bits,
 * a mask, an unknown opcode, a long or fragmented control frame, a continuation
 * outside a message or a new message inside one, a length with the top bit set), with
 * the reason in err. */
int kube_ws_parser_feed(struct kube_ws_parser *ps, const unsigned char *p, size_t n, char *err, size_t errlen);

/* ---- client frames out ------------------------------------------------------------------ */

/* The header of a final client frame of opcode with a payload of len bytes, masked with
 * key, into out (KUBE_WS_MAX_HEADER bytes): its length. */
size_t kube_ws_frame_header(unsigned char *out, int opcode, uint64_t len, const unsigned char key[4]);
/* Mask (or unmask) n bytes in place with key, the first byte being payload byte 0. */
void kube_ws_mask(unsigned char *p, size_t n, const unsigned char key[4]);

#endif
