/* fuzz/fuzz_exec_demux.c — the exec frame demultiplexer (kube_exec_demux_feed) with
 * fuzzer-chosen WebSocket fragmentation, and kube_exec_parse_status on what the error
 * channel collected (and on the raw input).
 *
 * Input: byte 0 = mode (bit 0: the stdout callback aborts with 9). Then fragments, each
 * [flags][len] + len payload bytes: flags bit 0 = first, bit 1 = final, bits 2-7 = the
 * payload is fed 1..64 times in a row (first only on the first copy, final only on the
 * last), so a small input can push the error channel past its 64 KiB cap.
 *
 * Oracle: a reference model of the contract in exec.h that keeps every byte (no cap):
 * the demux must hand the same stdout/stderr bytes to the callbacks, keep the first
 * 64 KiB - 1 of the error channel NUL-terminated and flag the overflow, and return the
 * same codes (-1 for a continuation outside a message or an unknown channel).
 *
 * The same input (after byte 0) is also a stream tail for kube_exec_tail_replay, with
 * start = byte 0 >> 1: refused, it must leave a fresh demux untouched and call no
 * callback; accepted, the status message must be complete (the demux in no message). */
#include "fuzz.h"

#include "base/dynbuf.h"
#include "kube/exec.h"

#define ABORT_VALUE 9
#define STATUS_CAP (sizeof(((struct kube_exec_demux *)0)->status) - 1)

struct sink {
    struct dynbuf out, err;
    int abort_stdout;
    int calls;
};

static int on_stdout(void *ud, const char *p, size_t n) {
    struct sink *k = ud;
    FUZZ_ASSERT(p && n > 0);
    k->calls++;
    FUZZ_ASSERT(dynbuf_append(&k->out, p, n) == 0);
    return k->abort_stdout ? ABORT_VALUE : 0;
}

static int on_stderr(void *ud, const char *p, size_t n) {
    struct sink *k = ud;
    FUZZ_ASSERT(p && n > 0);
    k->calls++;
    FUZZ_ASSERT(dynbuf_append(&k->err, p, n) == 0);
    return 0;
}

/* Message-level model: fragments are buffered until the message's channel is known. */
struct model {
    int in_msg, channel;
    struct dynbuf out, err, status;
    int overflow;
};

/* Same contract as kube_exec_demux_feed; payload after the id byte goes to the model's
 * buffers (all of it: the cap is applied when comparing). */
static int model_feed(struct model *m, const uint8_t *p, size_t n, int first, int final) {
    if (first) {
        m->in_msg = 1;
        m->channel = -1;
    } else if (!m->in_msg) {
        return -1;
    }
    if (m->channel < 0 && n > 0) {
        m->channel = p[0];
        p++;
        n--;
        if (!(m->channel <= KUBE_EXEC_RESIZE || m->channel == KUBE_EXEC_CLOSE)) {
            m->in_msg = 0;
            return -1;
        }
    }
    if (n > 0) {
        if (m->channel == KUBE_EXEC_STDOUT) FUZZ_ASSERT(dynbuf_append(&m->out, p, n) == 0);
        if (m->channel == KUBE_EXEC_STDERR) FUZZ_ASSERT(dynbuf_append(&m->err, p, n) == 0);
        if (m->channel == KUBE_EXEC_ERROR) FUZZ_ASSERT(dynbuf_append(&m->status, p, n) == 0);
    }
    if (final) m->in_msg = 0;
    return 0;
}

static void check_status(const char *json, size_t len) {
    int code = -12345;
    char msg[256];
    int rc = kube_exec_parse_status(json, len, &code, msg, sizeof msg);
    if (rc == 0) {
        FUZZ_ASSERT(code >= 0 && code <= 1000000);
    } else {
        FUZZ_ASSERT(rc == -1);
        FUZZ_ASSERT(msg[0] != '\0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct fuzz_in in = {data, size};
    struct sink k = {0};
    struct model m = {0};
    struct kube_exec_demux *d = malloc(sizeof(*d));
    int rc = 0, mrc = 0;

    if (!d) return 0;
    k.abort_stdout = fuzz_byte(&in) & 1;
    dynbuf_init(&k.out, 64u << 20);
    dynbuf_init(&k.err, 64u << 20);
    dynbuf_init(&m.out, 64u << 20);
    dynbuf_init(&m.err, 64u << 20);
    dynbuf_init(&m.status, 64u << 20);
    m.channel = -1;
    kube_exec_demux_init(d, on_stdout, on_stderr, &k);

    while (in.n > 0 && rc == 0) {
        uint8_t flags = fuzz_byte(&in);
        size_t len = fuzz_byte(&in), got;
        const uint8_t *payload = fuzz_bytes(&in, len, &got);
        unsigned copies = (flags >> 2) + 1u;
        for (unsigned c = 0; c < copies && rc == 0; c++) {
            int first = (flags & 1) && c == 0, final = (flags & 2) && c + 1 == copies;
            int calls = k.calls;
            rc = kube_exec_demux_feed(d, payload, got, first, final);
            mrc = model_feed(&m, payload, got, first, final);
            if (rc == ABORT_VALUE) {
                /* Only the aborting callback returns this, and it ran just now. */
                FUZZ_ASSERT(k.abort_stdout && k.calls == calls + 1);
                FUZZ_ASSERT(mrc == 0);
            } else {
                FUZZ_ASSERT(rc == mrc);
            }
        }
    }

    FUZZ_ASSERT(k.out.len == m.out.len && (!k.out.len || !memcmp(k.out.data, m.out.data, k.out.len)));
    FUZZ_ASSERT(k.err.len == m.err.len && (!k.err.len || !memcmp(k.err.data, m.err.data, k.err.len)));
    size_t keep = m.status.len < STATUS_CAP ? m.status.len : STATUS_CAP;
    FUZZ_ASSERT(d->status_len == keep);
    FUZZ_ASSERT(d->status[d->status_len] == '\0');
    FUZZ_ASSERT(!keep || !memcmp(d->status, m.status.data, keep));
    FUZZ_ASSERT(d->status_overflow == (m.status.len > STATUS_CAP));

    check_status(d->status, d->status_len);
    check_status((const char *)data, size);

    if (size > 0) {
        struct sink t = {0};
        dynbuf_init(&t.out, 64u << 20);
        dynbuf_init(&t.err, 64u << 20);
        kube_exec_demux_init(d, on_stdout, on_stderr, &t);
        int trc = kube_exec_tail_replay(d, data + 1, size - 1, data[0] >> 1);
        FUZZ_ASSERT(trc == 0 || trc == -1);
        if (trc < 0) FUZZ_ASSERT(t.calls == 0 && d->status_len == 0 && !d->in_message);
        else FUZZ_ASSERT(!d->in_message);
        dynbuf_free(&t.out);
        dynbuf_free(&t.err);
    }

    dynbuf_free(&k.out);
    dynbuf_free(&k.err);
    dynbuf_free(&m.out);
    dynbuf_free(&m.err);
    dynbuf_free(&m.status);
    free(d);
    return 0;
}
