/* kube/portforward.c — one local TCP connection forwarded into a pod over the API
 * server's portforward WebSocket (see portforward.h).
 *
 * Owns: the request path, the channel demultiplexer with the port prefix check, the
 * error channel's text, and the pump between the local socket and the stream.
 * Does not own: the transport — connect, proxy tunnel, TLS, the upgrade, framing, pings,
 * the thread that reads the local socket: the WebSocket stream of kube/wsstream.c, as
 * for exec; listening and accepting (the caller, one thread per connection), retries,
 * marking the sandbox used.
 *
 * The protocol (the kubelet's streaming server, pkg/kubelet/cri/streaming/portforward,
 * reached through the API server's upgrade-aware proxy; subprotocol v4.channel.k8s.io):
 * one port per request here (ports=P), so channel 0 carries the connection's bytes both
 * ways and channel 1 the server's error text. Every message starts with its channel byte.
 * The server begins each of its channels with P as 2 bytes little-endian (checked: data
 * for another port would be a protocol error); what the client sends has no prefix. The
 * server closes the WebSocket when the connection in the pod ends, after writing on the
 * error channel why, if it failed (e.g. nobody listens on the port).
 *
 * Flow and memory: bytes from the pod are written to the local socket as lws hands them
 * over (a blocking write: a slow local reader stalls the reads, TCP pushes back on the
 * server); bytes from the local socket are read by the stream's input thread into at
 * most KUBE_WSS_INPUT_SLOTS chunks of 32 KiB (kube/wsstream.h) and sent one per writable
 * event, each as a message of channel 0.
 *
 * The end: v4 cannot half-close, so a local EOF cannot be passed on. The session then
 * lingers while the pod still sends, and ends PF_LINGER_MS after the last byte from it
 * (looked at every PF_STOP_CHECK_MS) —
 * as containerd's forwarder itself ends a connection a second after one direction ended.
 * A failed write to the local socket (the client went away) ends it at once. */
#include "base/errfmt.h"
#include "kube/portforward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "kube/wsstream.h"

#define PF_LINGER_MS 1000          /* after a local EOF: end once the pod is quiet this long */
#define PF_STOP_CHECK_MS 100       /* how often *stop is looked at */
#define PF_MAX_PATH 1024

/* ---- the pure part ------------------------------------------------------------------ */

void kube_pf_demux_init(struct kube_pf_demux *d, uint16_t port, kube_pf_data_fn on_data, void *ud) {
    memset(d, 0, sizeof(*d));
    d->port = port;
    d->on_data = on_data;
    d->ud = ud;
}

int kube_pf_demux_feed(struct kube_pf_demux *d, const unsigned char *p, size_t n, int first, int final,
                       char *err, size_t errlen) {
    if (first || !d->in_message) {
        d->in_message = 1;
        if (n == 0) {   /* an empty message: nothing, not even a channel */
            d->in_message = !final;
            d->channel = -1;
            return 0;
        }
        d->channel = p[0];
        p++;
        n--;
        if (d->channel != KUBE_PF_DATA && d->channel != KUBE_PF_ERROR) {
            errfmt(err, errlen, "message on unknown channel %d", d->channel);
            return -1;
        }
    }
    if (final) d->in_message = 0;
    if (d->channel < 0) return 0;
    /* The port first, 2 bytes little-endian, possibly split across messages. */
    size_t *have = &d->prefix_len[d->channel];
    while (*have < 2 && n) {
        d->prefix[d->channel][(*have)++] = *p++;
        n--;
        if (*have == 2) {
            unsigned got = (unsigned)d->prefix[d->channel][0] | ((unsigned)d->prefix[d->channel][1] << 8);
            if (got != d->port) {
                errfmt(err, errlen, "the server's %s channel names port %u, not %u",
                       d->channel == KUBE_PF_DATA ? "data" : "error", got, (unsigned)d->port);
                return -1;
            }
        }
    }
    if (!n) return 0;
    if (d->channel == KUBE_PF_DATA) return d->on_data ? d->on_data(d->ud, p, n) : 0;
    size_t room = sizeof(d->error) - 1 - d->error_len;
    if (n > room) {
        d->error_truncated = 1;
        n = room;
    }
    memcpy(d->error + d->error_len, p, n);
    d->error_len += n;
    d->error[d->error_len] = 0;
    return 0;
}

size_t kube_pf_data_message(const unsigned char *data, size_t len, unsigned char *out, size_t cap) {
    if (cap < 1 || len > cap - 1) return 0;
    out[0] = KUBE_PF_DATA;
    if (len) memmove(out + 1, data, len);
    return len + 1;
}

int kube_pf_path(const char *ns, const char *pod, uint16_t port, char *out, size_t cap) {
    char ens[3 * 253 + 1], epod[3 * 253 + 1];
    if (!ns || !pod || strlen(ns) > 253 || strlen(pod) > 253 || !port ||
        kube_url_encode(ns, ens, sizeof(ens)) < 0 || kube_url_encode(pod, epod, sizeof(epod)) < 0)
        return -1;
    int n = snprintf(out, cap, "/api/v1/namespaces/%s/pods/%s/portforward?ports=%u", ens, epod, (unsigned)port);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* A decimal port in [min, 65535] spanning all of s[0..n); -1 otherwise. */
static long pf_port(const char *s, size_t n, long min) {
    long v = 0;
    if (n == 0 || n > 5) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < min || v > 65535 ? -1 : v;
}

int kube_pf_parse_mapping(const char *s, uint16_t *local, uint16_t *remote) {
    const char *colon = s ? strchr(s, ':') : NULL;
    long l, r;
    if (!s) return -1;
    if (!colon) {
        l = r = pf_port(s, strlen(s), 1);
    } else {
        l = colon == s ? 0 : pf_port(s, (size_t)(colon - s), 0);
        r = pf_port(colon + 1, strlen(colon + 1), 1);
    }
    if (l < 0 || r < 0) return -1;
    *local = (uint16_t)l;
    *remote = (uint16_t)r;
    return 0;
}

/* ---- the session ------------------------------------------------------------------- */

struct pf_session {
    const struct kube_pf_options *o;
    struct kube_pf_result *r;
    struct kube_pf_demux demux;
    int local_eof;                 /* the local side sent EOF: lingering */
    int64_t linger_until;          /* then: end when the pod is quiet until this (clock_mono_ms) */
    int local_gone;                /* a write to the local socket failed: end quietly */
};

/* Bytes from the pod: all of them to the local socket (blocking). */
static int to_local(void *ud, const unsigned char *p, size_t n) {
    struct pf_session *s = ud;
    while (n) {
        ssize_t w = send(s->o->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {              /* the local side went away: end quietly */
            s->local_gone = 1;
            return 1;
        }
        p += w;
        n -= (size_t)w;
        s->r->bytes_from_pod += (uint64_t)w;
    }
    return 0;
}

/* A piece of the server's message: through the demultiplexer. */
static int on_message(void *ud, struct kube_wss *st, const unsigned char *p, size_t n, int first, int final) {
    struct pf_session *s = ud;
    char why[160];
    int rc = kube_pf_demux_feed(&s->demux, p, n, first, final, why, sizeof(why));
    if (rc < 0) {
        kube_wss_fail(st, "port-forward: %s", why);
        return 1;
    }
    if (rc) return 1;              /* the local side went away */
    if (s->local_eof) s->linger_until = clock_mono_ms() + PF_LINGER_MS;   /* still talking: linger on */
    return 0;
}

/* The local side ended: at EOF linger (v4 cannot pass it on), after a failed read end. */
static void on_input_end(void *ud, struct kube_wss *st, int err) {
    struct pf_session *s = ud;
    if (err) {
        s->local_gone = 1;
        kube_wss_stop(st);
        return;
    }
    s->local_eof = 1;
    s->linger_until = clock_mono_ms() + PF_LINGER_MS;
}

/* Every PF_STOP_CHECK_MS: the caller's stop flag, the end of the linger. */
static void on_poll(void *ud, struct kube_wss *st) {
    struct pf_session *s = ud;
    if (atomic_load(s->o->stop) || (s->local_eof && clock_mono_ms() >= s->linger_until)) kube_wss_stop(st);
}

/* One attempt of kube_portforward. */
static int pf_once(struct kube_client *c, const struct kube_pf_options *o, struct kube_pf_result *r, int may_retry) {
    static const atomic_int never = 0;
    struct pf_session s;
    struct kube_pf_options opt;
    struct kube_wss_result res;
    char path[PF_MAX_PATH];

    memset(r, 0, sizeof(*r));
    if (!c || !o || !o->namespace_ || !o->namespace_[0] || !o->pod || !o->pod[0] || !o->port || o->fd < 0) {
        errfmt(r->err, sizeof(r->err), "port-forward: namespace, pod, port and a local connection are required");
        return -1;
    }
    opt = *o;
    if (!opt.stop) opt.stop = &never;
    struct kube_config *cfg = kube_client_config(c);
    if (kube_pf_path(o->namespace_, o->pod, o->port, path, sizeof(path)) < 0) {
        errfmt(r->err, sizeof(r->err), "port-forward: namespace or pod name too long");
        return -1;
    }
    memset(&s, 0, sizeof(s));
    s.o = &opt;
    s.r = r;
    kube_pf_demux_init(&s.demux, o->port, to_local, &s);
    struct kube_wss_options so = {
        .what = "port-forward",
        .path = path,
        .protocols = KUBE_PF_PROTOCOL,
        .hint403 = "port-forward needs get and create on pods/portforward",
        .retried_on_401 = may_retry && (cfg->exec_plugin || cfg->token_file),
        .input_fd = o->fd,
        .input_channel = KUBE_PF_DATA,
        .poll_ms = PF_STOP_CHECK_MS,
        .ud = &s,
        .on_message = on_message,
        .on_input_end = on_input_end,
        .on_poll = on_poll,
    };
    int rc = kube_wss_run(c, &so, &res, r->err, sizeof(r->err));
    r->http_status = res.http_status;
    r->bytes_to_pod = res.input_bytes;
    if (s.demux.error_len) {
        /* The pod's side failed: its words outrank transport noise. */
        errfmt(r->err, sizeof(r->err), "port-forward: %s%s", s.demux.error, s.demux.error_truncated ? " (cut)" : "");
        return -1;
    }
    if (rc == 0 && res.send_failed && !s.local_gone) {
        errfmt(r->err, sizeof(r->err), "port-forward: the connection to the API server broke while sending%s",
                 res.close_reason);
        return -1;
    }
    return rc;
}

int kube_portforward(struct kube_client *c, const struct kube_pf_options *o, struct kube_pf_result *r) {
    int rc = pf_once(c, o, r, 1);
    /* Refused with 401 before any byte moved: fresh credentials may cure it (see kube_exec). */
    if (rc < 0 && r->http_status == 401 && c && kube_client_refresh_credentials(c, 401, 0)) rc = pf_once(c, o, r, 0);
    return rc;
}
