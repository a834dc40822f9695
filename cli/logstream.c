/* cli/logstream.c — a streamed GET to a file descriptor (see logstream.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "base/errfmt.h"
#include "cli/fdio.h"
#include "cli/logstream.h"
#include "kube/rest.h"

struct stream {
    int fd;
    long status;
    struct dynbuf error_body;
    int write_failed, write_errno;
};

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
    struct stream *s = ud;
    long code;
    size_t len = size * n;
    if (len > 9 && !strncmp(p, "HTTP/", 5) && sscanf(p, "HTTP/%*s %ld", &code) == 1) s->status = code;
    return len;
}

static size_t on_data(char *p, size_t size, size_t n, void *ud) {
    struct stream *s = ud;
    size_t len = size * n;
    if (s->status >= 300) {
        dynbuf_append(&s->error_body, p, len);   /* bounded: past the cap it is dropped */
        return len;
    }
    if (cli_write_all(s->fd, p, len) < 0) {
        s->write_failed = 1;
        s->write_errno = errno;
        return 0;
    }
    return len;
}

/* One attempt. */
static long attempt(struct kube_client *kc, const char *path, struct stream *s, int *cc_out, char *err, size_t errlen) {
    struct curl_slist *hdrs = NULL;
    char *url = kube_client_url(kc, path);
    CURL *h = curl_easy_init();
    long status = 0;
    *cc_out = CURLE_OK;
    if (!h || !url) { errfmt_oom(err, errlen); goto out; }
    if (kube_client_setup_handle(kc, h, &hdrs, err, errlen) < 0) goto out;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, s);
    int cc = kube_client_perform(kc, h, NULL);
    *cc_out = cc;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    kube_client_count(kc, "GET", status);
    if (s->write_failed) {
        errfmt(err, errlen, "writing output: %s", strerror(s->write_errno));
        status = s->write_errno == EPIPE ? CLI_STREAM_CLOSED : 0;
    } else if (cc != CURLE_OK) {
        errfmt(err, errlen, "GET %s: %s", path, curl_easy_strerror((CURLcode)cc));
        status = 0;
    } else if (status >= 300) {
        cJSON *st = cJSON_ParseWithLength(s->error_body.data ? s->error_body.data : "", s->error_body.len);
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(st, "message");
        errfmt(err, errlen, "%s", cJSON_IsString(msg) ? msg->valuestring : "");
        if (!err[0]) errfmt(err, errlen, "HTTP %ld", status);
        cJSON_Delete(st);
    }
out:
    if (h) curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    free(url);
    return status;
}

long cli_stream_get(struct kube_client *kc, const char *path, int fd, char *err, size_t errlen) {
    for (int tries = 0;; tries++) {
        struct stream s = {.fd = fd};
        dynbuf_init(&s.error_body, 64 * 1024);
        int cc;
        err[0] = 0;
        long status = attempt(kc, path, &s, &cc, err, errlen);
        dynbuf_free(&s.error_body);
        /* rotated credentials (a token file, an exec plugin's credential): once more */
        if (tries == 0 && (status == 401 || cc == CURLE_PEER_FAILED_VERIFICATION) &&
            kube_client_refresh_credentials(kc, status, cc == CURLE_PEER_FAILED_VERIFICATION))
            continue;
        return status;
    }
}
