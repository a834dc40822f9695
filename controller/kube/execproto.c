/* kube/execproto.c — the remotecommand channel protocol, pure (see execproto.h): the
 * demultiplexer, the tail replay (a strict walk of whole server frames), the resize
 * message and the error channel's Status. */
#include "kube/execproto.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"

void kube_exec_demux_init(struct kube_exec_demux *d, kube_exec_output_fn out, kube_exec_output_fn err, void *ud) {
    d->in_message = 0;
    d->channel = -1;
    d->status[0] = 0;
    d->status_len = 0;
    d->status_overflow = 0;
    d->on_stdout = out;
    d->on_stderr = err;
    d->ud = ud;
}

/* Channels a server may send on: the three outputs, plus ids that carry nothing for a
 * client (stdin, resize, v5 close) and are ignored. */
static int channel_known(int ch) {
    return (ch >= KUBE_EXEC_STDIN && ch <= KUBE_EXEC_RESIZE) || ch == KUBE_EXEC_CLOSE;
}

int kube_exec_demux_feed(struct kube_exec_demux *d, const unsigned char *p, size_t n, int first, int final) {
    int rc = 0;

    if (first) {
        d->in_message = 1;
        d->channel = -1;            /* the id byte is the message's first byte */
    } else if (!d->in_message) {
        return -1;                  /* a continuation with no message started */
    }
    if (d->channel < 0 && n > 0) {
        d->channel = p[0];
        p++;
        n--;
        if (!channel_known(d->channel)) {
            d->in_message = 0;
            return -1;
        }
    }
    if (n > 0) {
        switch (d->channel) {
        case KUBE_EXEC_STDOUT:
            if (d->on_stdout) rc = d->on_stdout(d->ud, (const char *)p, n);
            break;
        case KUBE_EXEC_STDERR:
            if (d->on_stderr) rc = d->on_stderr(d->ud, (const char *)p, n);
            break;
        case KUBE_EXEC_ERROR: {
            /* Keep one byte for the NUL; past the cap the Status cannot be trusted. */
            size_t room = sizeof(d->status) - 1 - d->status_len;
            size_t take = n < room ? n : room;
            memcpy(d->status + d->status_len, p, take);
            d->status_len += take;
            d->status[d->status_len] = 0;
            if (take < n) d->status_overflow = 1;
            break;
        }
        default:
            break;
        }
    }
    if (final) d->in_message = 0;
    return rc;
}

/* One server frame at p (n bytes left): 0 with its header length, payload length, FIN
 * and opcode; -1 when it is not a valid server frame or not all there. */
static int tail_frame(const unsigned char *p, size_t n, size_t *hdr, uint64_t *len, int *fin, int *op) {
    if (n < 2 || (p[0] & 0x70) || (p[1] & 0x80)) return -1;   /* reserved bits; servers never mask */
    *fin = p[0] >> 7;
    *op = p[0] & 15;
    if (!(*op <= 2 || (*op >= 8 && *op <= 10))) return -1;
    uint64_t l = p[1] & 127;
    *hdr = 2;
    if (l == 126) {
        if (n < 4) return -1;
        l = ((uint64_t)p[2] << 8) | p[3];
        *hdr = 4;
    } else if (l == 127) {
        if (n < 10 || (p[2] & 0x80)) return -1;
        l = 0;
        for (int i = 2; i < 10; i++) l = (l << 8) | p[i];
        *hdr = 10;
    }
    if (*op >= 8 && (!*fin || l > 125)) return -1;   /* control frames are whole and short */
    if (l > n - *hdr) return -1;
    *len = l;
    return 0;
}

/* Walk a tail: first the rest of the payload of the frame lws was in (start bytes: part
 * of the message d is in, or, when d is not in one, a frame that starts a message), then
 * whole frames. With feed 0 only check it (1: it holds a complete status message, 0: it
 * does not, -1: these are not frames); with feed 1 give the data messages to d until the
 * status is complete. */
static int tail_walk(struct kube_exec_demux *d, int feed, const unsigned char *t, size_t n, size_t start) {
    size_t pos = start, hdr;
    uint64_t len;
    int fin, op, in_msg = d->in_message, channel = d->in_message ? d->channel : -1;
    if (start) {
        /* Was that frame its message's last? Yes, unless the next data frame continues it. */
        int lead_final = 1;
        for (size_t q = start; q < n; q += hdr + (size_t)len) {
            if (tail_frame(t + q, n - q, &hdr, &len, &fin, &op) < 0) return -1;
            if (op == 9 || op == 10) continue;      /* a ping or pong does not tell */
            lead_final = op != 0;
            break;
        }
        if (channel < 0) {
            channel = t[0];
            if (!((channel >= KUBE_EXEC_STDIN && channel <= KUBE_EXEC_RESIZE) || channel == KUBE_EXEC_CLOSE))
                return -1;
        }
        if (feed && kube_exec_demux_feed(d, t, start, !in_msg, lead_final) != 0) return -1;
        in_msg = !lead_final;
        if (lead_final && channel == KUBE_EXEC_ERROR) return 1;
    }
    while (pos < n) {
        if (tail_frame(t + pos, n - pos, &hdr, &len, &fin, &op) < 0) return -1;
        const unsigned char *pl = t + pos + hdr;
        pos += hdr + (size_t)len;
        if (op == 8) return 0;                      /* close: nothing after it */
        if (op >= 9) continue;                      /* ping, pong */
        if ((op == 0) != in_msg) return -1;         /* a continuation only inside a message */
        if (op != 0) channel = -1;
        if (channel < 0 && len > 0) {
            channel = pl[0];
            if (!((channel >= KUBE_EXEC_STDIN && channel <= KUBE_EXEC_RESIZE) || channel == KUBE_EXEC_CLOSE))
                return -1;
        }
        if (feed && kube_exec_demux_feed(d, pl, (size_t)len, op != 0, fin) != 0) return -1;
        in_msg = !fin;
        if (fin && channel == KUBE_EXEC_ERROR) return 1;
    }
    return 0;
}

int kube_exec_tail_replay(struct kube_exec_demux *d, const unsigned char *tail, size_t n, size_t start) {
    if (start > n || tail_walk(d, 0, tail, n, start) != 1) return -1;
    return tail_walk(d, 1, tail, n, start) == 1 ? 0 : -1;
}

size_t kube_exec_resize_message(unsigned width, unsigned height, unsigned char *out, size_t cap) {
    if (cap < 2) return 0;
    out[0] = KUBE_EXEC_RESIZE;
    int n = snprintf((char *)out + 1, cap - 1, "{\"Width\":%u,\"Height\":%u}", width, height);
    if (n < 0 || (size_t)n >= cap - 1) return 0;
    return (size_t)n + 1;
}

int kube_exec_parse_status(const char *json, size_t len, int *exit_code, char *msg, size_t msglen) {
    cJSON *st = json && len ? cJSON_ParseWithLength(json, len) : NULL;
    int rc = -1;

    if (msg && msglen) msg[0] = 0;
    if (!cJSON_IsObject(st)) {
        errfmt(msg, msglen, "malformed status from the server");
        goto out;
    }
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(st, "status");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(st, "reason");
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(st, "message");
    const char *m = cJSON_IsString(message) && message->valuestring[0] ? message->valuestring : NULL;

    if (cJSON_IsString(status) && !strcmp(status->valuestring, "Success")) {
        *exit_code = 0;
        rc = 0;
        goto out;
    }
    if (cJSON_IsString(reason) && !strcmp(reason->valuestring, "NonZeroExitCode")) {
        const cJSON *causes = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "details"), "causes");
        const cJSON *cause;
        cJSON_ArrayForEach(cause, causes) {
            const cJSON *cr = cJSON_GetObjectItemCaseSensitive(cause, "reason");
            const cJSON *cm = cJSON_GetObjectItemCaseSensitive(cause, "message");
            if (!cJSON_IsString(cr) || strcmp(cr->valuestring, "ExitCode") || !cJSON_IsString(cm)) continue;
            char *end;
            long v = strtol(cm->valuestring, &end, 10);
            if (end == cm->valuestring || *end || v < 0 || v > 1000000) break;
            *exit_code = (int)v;
            rc = 0;
            goto out;
        }
        errfmt(msg, msglen, "%s", m ? m : "non-zero exit code without a code");
        goto out;
    }
    if (m)
        errfmt(msg, msglen, "%s", m);
    else if (cJSON_IsString(reason) && reason->valuestring[0])
        errfmt(msg, msglen, "%s", reason->valuestring);
    else
        errfmt(msg, msglen, "the server reported a failure without a message");
out:
    cJSON_Delete(st);
    return rc;
}
