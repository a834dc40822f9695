/* kube/watch.c — one watch stream over libcurl (see watch.h). The body is fed to the
 * NDJSON splitter as it arrives, so memory is bounded by one event, whatever the stream's
 * length. */
#include "kube/watch.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "kube/ndjson.h"

struct watch_ctx {
    struct ndjson split;
    kube_watch_fn fn;
    void *ud;
    const atomic_int *stop;
    enum kube_watch_end end;  /* set when a line decides the outcome */
    int decided;
    long status;              /* HTTP status, known once headers are in */
    struct dynbuf error_body; /* body of a non-2xx response, for its message */
    long stall_ms;            /* 0 = no stall limit */
    int64_t last_byte_ms;     /* monotonic time of the last byte (or of the start) */
    int stalled;
    char *err;
    size_t errlen;
};

cJSON *kube_watch_parse_event(const char *line, size_t len) {
    cJSON *ev = cJSON_ParseWithLength(line, len);
    if (!ev) return NULL;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    if (!cJSON_IsObject(ev) || !cJSON_IsString(type) || !cJSON_IsObject(obj)) {
        cJSON_Delete(ev);
        return NULL;
    }
    return ev;
}

int kube_watch_status_is_expired(const cJSON *status) {
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(status, "code");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(status, "reason");
    if (cJSON_IsNumber(code) && code->valueint == 410) return 1;
    return cJSON_IsString(reason) &&
           (!strcmp(reason->valuestring, "Expired") || !strcmp(reason->valuestring, "Gone"));
}

/* One complete line of the stream: parse and dispatch. Non-zero stops the feed. */
static int on_line(void *ud, char *line, size_t len) {
    struct watch_ctx *w = ud;
    cJSON *ev = kube_watch_parse_event(line, len);
    if (!ev) {
        errfmt(w->err, w->errlen, "watch: malformed event (%zu bytes)", len);
        w->end = KUBE_WATCH_FAILED;
        w->decided = 1;
        return 1;
    }
    const char *type = cJSON_GetObjectItemCaseSensitive(ev, "type")->valuestring;
    cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    int rc = 0;
    if (!strcmp(type, "ERROR")) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(obj, "message");
        errfmt(w->err, w->errlen, "watch: %s", cJSON_IsString(msg) ? msg->valuestring : "error event");
        w->end = kube_watch_status_is_expired(obj) ? KUBE_WATCH_EXPIRED : KUBE_WATCH_FAILED;
        w->decided = 1;
        rc = 1;
    } else if (w->fn(w->ud, type, obj, ev) != 0) {
        w->end = KUBE_WATCH_STOPPED;
        w->decided = 1;
        rc = 1;
    }
    cJSON_Delete(ev);
    return rc;
}

/* curl write callback: feed the splitter (or keep an error body). 0 aborts the transfer. */
static size_t on_data(char *p, size_t size, size_t n, void *ud) {
    struct watch_ctx *w = ud;
    size_t len = size * n;
    w->last_byte_ms = clock_mono_ms();
    if (w->status >= 300) {
        dynbuf_append(&w->error_body, p, len); /* bounded: a chunk past the cap is dropped */
        return len;
    }
    int rc = ndjson_feed(&w->split, p, len, on_line, w);
    if (rc < 0) {
        errfmt(w->err, w->errlen, "watch: event larger than %u bytes", KUBE_WATCH_MAX_LINE);
        w->end = KUBE_WATCH_FAILED;
        w->decided = 1;
        return 0;
    }
    return rc ? 0 : len;
}

/* curl header callback: learn the HTTP status before the body arrives. */
static size_t on_header(char *p, size_t size, size_t n, void *ud) {
    struct watch_ctx *w = ud;
    size_t len = size * n;
    w->last_byte_ms = clock_mono_ms();
    long code;
    if (len > 9 && !strncmp(p, "HTTP/", 5) && sscanf(p, "HTTP/%*s %ld", &code) == 1) w->status = code;
    return len;
}

/* curl progress callback (called on every pass of the transfer loop): abort when asked to
 * stop, or when no byte came for the stall limit. (curl's own low-speed limit
 * averages over the last 5 s, so a burst followed by silence is caught late.) */
static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    struct watch_ctx *w = ud;
    if (w->stop && atomic_load(w->stop)) {
        w->end = KUBE_WATCH_STOPPED;
        w->decided = 1;
        return 1;
    }
    if (w->stall_ms && clock_mono_ms() - w->last_byte_ms >= w->stall_ms) {
        w->stalled = 1;
        return 1;
    }
    return 0;
}

enum kube_watch_end kube_watch(struct kube_client *c, const char *path, kube_watch_fn fn,
                               void *ud, const atomic_int *stop, long stall_s,
                               char *err, size_t errlen) {
    struct watch_ctx w = {.fn = fn, .ud = ud, .stop = stop, .err = err, .errlen = errlen,
                          .stall_ms = stall_s > 0 ? stall_s * 1000 : 0, .last_byte_ms = clock_mono_ms()};
    struct curl_slist *hdrs = NULL;
    enum kube_watch_end end = KUBE_WATCH_FAILED;
    char *url = NULL;
    CURL *h = curl_easy_init();

    err[0] = 0;
    ndjson_init(&w.split, KUBE_WATCH_MAX_LINE);
    dynbuf_init(&w.error_body, 64 * 1024);
    if (!h) { errfmt(err, errlen, "watch: out of memory"); goto out; }
    if (!(url = kube_client_url(c, path))) { errfmt(err, errlen, "watch: out of memory"); goto out; }
    if (kube_client_setup_handle(c, h, &hdrs, err, errlen) < 0) goto out;
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
    /* Not curl_easy_perform: its loop looks at the progress callback about once a second
     * whatever happens; this one sees stop (with kube_client_wake) and the client's cancel
     * at once. */
    CURLcode cc = (CURLcode)kube_client_perform(c, h, stop);
    if (cc == CURLE_ABORTED_BY_CALLBACK && !w.decided && !w.stalled && ((stop && atomic_load(stop)) || kube_client_cancelled(c))) {
        w.end = KUBE_WATCH_STOPPED;
        w.decided = 1;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    kube_client_count(c, "WATCH", status);
    /* Rotated credentials: re-read now, so the next attempt carries the new ones. */
    if (status == 401 || cc == CURLE_PEER_FAILED_VERIFICATION)
        kube_client_refresh_credentials(c, status, cc == CURLE_PEER_FAILED_VERIFICATION);
    if (w.decided) {
        end = w.end;
    } else if (w.stalled && status == 200) {
        errfmt(err, errlen, "watch %s: quiet (no byte for %ld s)", path, stall_s);
        end = KUBE_WATCH_QUIET;
    } else if (w.stalled) {
        errfmt(err, errlen, "watch %s: stalled (no answer for %ld s)", path, stall_s);
        end = KUBE_WATCH_UNANSWERED;
    } else if (cc != CURLE_OK) {
        errfmt(err, errlen, "watch %s: %s", path, curl_easy_strerror(cc));
    } else if (status == 410) {
        errfmt(err, errlen, "watch: 410 Gone");
        end = KUBE_WATCH_EXPIRED;
    } else if (status >= 300) {
        cJSON *st = cJSON_ParseWithLength(w.error_body.data ? w.error_body.data : "", w.error_body.len);
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(st, "message");
        errfmt(err, errlen, "watch %s: HTTP %ld%s%s", path, status, cJSON_IsString(msg) ? ": " : "",
                 cJSON_IsString(msg) ? msg->valuestring : "");
        if (st && kube_watch_status_is_expired(st)) end = KUBE_WATCH_EXPIRED;
        cJSON_Delete(st);
    } else {
        end = KUBE_WATCH_CLOSED;
    }
out:
    if (h) curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    free(url);
    ndjson_free(&w.split);
    dynbuf_free(&w.error_body);
    return end;
}
