/* bridge/bridge_pb.c — proto3 wire format for the few messages of yao.Yao, and gRPC's
 * small print: status code names, the HTTP-status mapping, percent-decoding grpc-message,
 * the grpc-timeout header. Pure functions, no I/O.
 *
 * Every message the bridge sends or reads has string/bytes fields (length-delimited, wire
 * type 2) and, in HeartbeatRequest, integers (varints, wire type 0), so a hand encoder of a
 * few lines replaces protoc + protobuf-c; the decoder skips every other wire type, so a
 * server that adds fields stays readable. */
#include "bridge.h"

#include <stdio.h>
#include <string.h>

/* Append a base-128 varint. */
static int put_varint(struct bridge_dyn *d, uint64_t v) {
    unsigned char b[10];
    size_t n = 0;

    do {
        b[n] = (unsigned char)(v & 0x7F);
        v >>= 7;
        if (v) b[n] |= 0x80;
        n++;
    } while (v);
    return bridge_dyn_add(d, b, n);
}

/* Read a varint at *p: 0 or -1 (truncated or longer than 10 bytes). */
static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
    unsigned shift = 0;

    *v = 0;
    while (*p < end && shift < 70) {
        unsigned char b = *(*p)++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return 0;
        shift += 7;
    }
    return -1;
}

/* Append a length-delimited field; proto3 leaves out empty values. */
int bpb_add_bytes(struct bridge_dyn *d, unsigned field, const void *p, size_t n) {
    if (n == 0) return 0;
    if (put_varint(d, (uint64_t)field << 3 | 2) < 0 || put_varint(d, n) < 0) return -1;
    return bridge_dyn_add(d, p, n);
}

/* Append a varint field; proto3 leaves out zero. */
int bpb_add_varint(struct bridge_dyn *d, unsigned field, uint64_t v) {
    if (v == 0) return 0;
    if (put_varint(d, (uint64_t)field << 3 | 0) < 0) return -1;
    return put_varint(d, v);
}

/* Find a length-delimited field, skipping all others. */
int bpb_get_bytes(const unsigned char *msg, size_t n, unsigned field, const unsigned char **vp,
                  size_t *vn) {
    const unsigned char *p = msg, *end = msg + n;
    int found = 0;

    *vp = NULL;
    *vn = 0;
    while (p < end) {
        uint64_t key, v;
        if (get_varint(&p, end, &key) < 0 || key >> 3 == 0) return -1;
        switch (key & 7) {
        case 0: /* varint */
            if (get_varint(&p, end, &v) < 0) return -1;
            break;
        case 1: /* 64-bit */
            if (end - p < 8) return -1;
            p += 8;
            break;
        case 2: /* length-delimited */
            if (get_varint(&p, end, &v) < 0 || v > (uint64_t)(end - p)) return -1;
            if (key >> 3 == field) {
                *vp = p;
                *vn = (size_t)v;
                found = 1;
            }
            p += v;
            break;
        case 5: /* 32-bit */
            if (end - p < 4) return -1;
            p += 4;
            break;
        default: /* groups (3, 4) are not proto3 */
            return -1;
        }
    }
    return found;
}

static const char *const code_names[] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
};

/* The name of a status code. */
const char *bgrpc_code_name(int code, char *buf, size_t cap) {
    if (code >= 0 && (size_t)code < sizeof code_names / sizeof code_names[0]) return code_names[code];
    snprintf(buf, cap, "CODE_%d", code);
    return buf;
}

/* gRPC's mapping of HTTP statuses, for a reply that carries no grpc-status
 * (a proxy's error page, a server that is not gRPC). */
int bgrpc_code_from_http(int http_status) {
    switch (http_status) {
    case 400: return 13;  /* INTERNAL */
    case 401: return 16;  /* UNAUTHENTICATED */
    case 403: return 7;   /* PERMISSION_DENIED */
    case 404: return 12;  /* UNIMPLEMENTED */
    case 429: case 502: case 503: case 504: return 14; /* UNAVAILABLE */
    default: return 2;    /* UNKNOWN */
    }
}

static int hexdig(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* grpc-message is percent-encoded UTF-8; a malformed escape is kept as it is. */
size_t bgrpc_percent_decode(char *s, size_t n) {
    size_t i, o = 0;

    for (i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexdig(s[i + 1])) >= 0 &&
            (lo = hexdig(s[i + 2])) >= 0) {
            s[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            s[o++] = s[i];
        }
    }
    s[o] = '\0';
    return o;
}

/* grpc-timeout: at most 8 digits, so large values move to coarser units. */
void bgrpc_timeout_header(char *buf, size_t cap, int64_t ms) {
    if (ms < 1) ms = 1;
    if (ms <= 99999999) snprintf(buf, cap, "%lldm", (long long)ms);
    else if (ms / 1000 <= 99999999) snprintf(buf, cap, "%lldS", (long long)(ms / 1000));
    else snprintf(buf, cap, "%lldM", (long long)(ms / 60000));
}
