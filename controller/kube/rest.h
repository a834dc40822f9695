/* kube/rest.h — the REST client: HTTPS requests to the Kubernetes API server with libcurl.
 * Owns connection reuse (a pool of curl handles shared by all threads), authentication
 * (bearer token and CA bundle re-read on rotation and after a 401 / failed certificate
 * check, an exec credential plugin run again after a 401, client certificates from
 * memory, tls-server-name, Impersonate-* headers), the HTTP proxy (CONNECT), timeouts,
 * bounded response bodies, and retries that honour Retry-After on 429 and 5xx.
 * Also the JSON conveniences the controller uses: get, create, merge patch, server-side
 * apply, delete. Long-lived watch streams live in kube/watch.h. Thread-safe. */
#ifndef YAO_KUBE_REST_H
#define YAO_KUBE_REST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "kube/config.h"

/* Response bodies above this are refused (the largest object we read is a list page;
 * kube_client_set_max_body lowers it for one client). */
#define KUBE_MAX_BODY (64u << 20)
#define KUBE_ERR_MAX 512

struct kube_client;

/* Per-request outcome. status is the HTTP code, or 0 when no response arrived (transport
 * error: err says why). body is NUL-terminated (may be empty), owned by the response. */
struct kube_response {
    long status;
    char *body;
    size_t len;
    char err[KUBE_ERR_MAX];
    int too_large;   /* no response: its body was over the client's limit (a list asks again in
                      * smaller pages) */
};

/* Counters exported as metrics: requests by verb and status class. */
struct kube_request_counts {
    uint64_t by_verb[6][6]; /* [GET,POST,PUT,PATCH,DELETE,other][0:transport,1xx..5xx] */
};
enum { KUBE_VERB_GET, KUBE_VERB_POST, KUBE_VERB_PUT, KUBE_VERB_PATCH, KUBE_VERB_DELETE, KUBE_VERB_OTHER };

/* Create a client over cfg (the client takes ownership of cfg's contents; the struct
 * itself is copied). user_agent may be NULL. Returns NULL with err set on failure. */
struct kube_client *kube_client_new(struct kube_config *cfg, const char *user_agent,
                                    char *err, size_t errlen);
void kube_client_free(struct kube_client *c);
/* The configuration in use (server, namespace, credentials). */
struct kube_config *kube_client_config(struct kube_client *c);
/* The HTTP proxy every connection of c goes through (chosen once, at kube_client_new, from
 * the cluster's proxy-url or HTTPS_PROXY/HTTP_PROXY/NO_PROXY: kube/proxy.h); set 0 = none. */
struct kube_proxy;
const struct kube_proxy *kube_client_proxy(struct kube_client *c);
/* Snapshot of the request counters. */
void kube_client_counts(struct kube_client *c, struct kube_request_counts *out);
/* Request timeout in milliseconds for ordinary calls (default 30 s). */
void kube_client_set_timeout(struct kube_client *c, long ms);
/* Maximum attempts for a retriable failure (default 5). */
void kube_client_set_retries(struct kube_client *c, int attempts);
/* Refuse response bodies above bytes (default and ceiling KUBE_MAX_BODY): the answer is
 * status 0 with too_large set. */
void kube_client_set_max_body(struct kube_client *c, size_t bytes);
/* Deadline of one kube_request, every attempt and back-off or Retry-After wait included
 * (default KUBE_DEFAULT_DEADLINE_MS; <= 0 restores it). An attempt's timeout is cut to
 * the time left; a wait that would end past it is not begun (the last answer is
 * returned). */
#define KUBE_DEFAULT_DEADLINE_MS 60000
void kube_client_set_deadline(struct kube_client *c, long ms);
/* The stop flag: from now on every request of c — those in flight (at once, also in a
 * back-off or Retry-After wait) and every later one — returns at once: status
 * 0 with err ending in KUBE_CANCELLED_MSG, or the last answer when cancelled during a
 * wait. Irreversible; for shutdown. Thread-safe, cheap. */
#define KUBE_CANCELLED_MSG "cancelled: the controller is stopping"
void kube_client_cancel(struct kube_client *c);
int kube_client_cancelled(struct kube_client *c);
/* Wake every transfer of c in progress, so each looks at its stop flag now (a flag set
 * without a wake is seen within about a second). Thread-safe. */
void kube_client_wake(struct kube_client *c);

/* Write fence, for leader election: fn(ud) returns how many milliseconds mutating requests
 * (every verb but GET) stay allowed; <= 0 refuses them at once, without a request (status 0,
 * err ends with KUBE_FENCED_MSG). An allowed write's timeout is capped at that time, so no
 * write outlives the fence. Reads are never fenced. fn must be cheap and thread-safe; NULL
 * removes the fence. */
typedef int64_t (*kube_fence_fn)(void *ud);
#define KUBE_FENCED_MSG "refused: leadership not confirmed (write fence closed)"
void kube_client_set_fence(struct kube_client *c, kube_fence_fn fn, void *ud);
/* Wait until no fenced write is in flight (close the fence first), at most max_ms.
 * 0, or -1 when some are still running. */
int kube_client_drain_writes(struct kube_client *c, long max_ms);

/* One request with retries: 429 and 503 are retried for every verb (the server did not
 * act), other 5xx and transport errors only for idempotent verbs (GET, PUT, DELETE and
 * PATCH). Waits for Retry-After when given (capped at 30 s), else exponential backoff.
 * Bounded: the whole call ends by the client's deadline, and promptly once the client is
 * cancelled (kube_client_cancel).
 * path starts with '/', and may carry a query. Returns 0 when an HTTP response arrived
 * (whatever its status), -1 on a transport error after all attempts. Free with
 * kube_response_free in both cases. */
int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, size_t body_len,
                 struct kube_response *resp);
void kube_response_free(struct kube_response *r);

/* The message of a failed response: the Status object's "message" if the body is one,
 * else the HTTP status line or the transport error. Writes into out. */
void kube_response_message(const struct kube_response *r, char *out, size_t outlen);

/* The Kubernetes reason of a failed request (metav1.StatusReason, and the one cause the
 * controller acts on), for callers to test by kind, never by message text. */
enum kube_reason {
    KUBE_REASON_NONE = 0,              /* no failure, or one of the caller's own (no request) */
    KUBE_REASON_TRANSPORT,             /* no answer: connection, timeout, too large, cancelled, fenced */
    KUBE_REASON_UNKNOWN,               /* an answer >= 300 whose reason is none of these */
    KUBE_REASON_BAD_REQUEST,
    KUBE_REASON_UNAUTHORIZED,
    KUBE_REASON_FORBIDDEN,
    KUBE_REASON_NOT_FOUND,
    KUBE_REASON_METHOD_NOT_ALLOWED,
    KUBE_REASON_NOT_ACCEPTABLE,
    KUBE_REASON_ALREADY_EXISTS,
    KUBE_REASON_CONFLICT,
    KUBE_REASON_GONE,
    KUBE_REASON_EXPIRED,
    KUBE_REASON_REQUEST_ENTITY_TOO_LARGE,
    KUBE_REASON_UNSUPPORTED_MEDIA_TYPE,
    KUBE_REASON_INVALID,
    KUBE_REASON_TOO_MANY_REQUESTS,
    KUBE_REASON_INTERNAL_ERROR,
    KUBE_REASON_SERVICE_UNAVAILABLE,
    KUBE_REASON_SERVER_TIMEOUT,
    KUBE_REASON_TIMEOUT,
    /* Forbidden because the namespace is being deleted: the namespace lifecycle admission's
     * cause (details.causes[].reason "NamespaceTerminating"), not RBAC. */
    KUBE_REASON_NAMESPACE_TERMINATING,
};

/* A failed request, typed: the HTTP status (0: no answer, or the caller's own failure),
 * the reason, and a one-line message for people ("METHOD path: HTTP 403: ..."). */
struct kube_error {
    long status;
    enum kube_reason reason;
    char message[KUBE_ERR_MAX];
};

/* The reason of an answer: the Status object's reason (and its NamespaceTerminating
 * cause) when body is one, else the HTTP status's usual reason. Pure; body may be NULL. */
enum kube_reason kube_reason_of(long status, const char *body, size_t len);
/* The metav1.StatusReason spelling of r ("NotFound"), for logs and metrics. */
const char *kube_reason_name(enum kube_reason r);
/* The typed error of a failed response (status >= 300, or no answer), its message
 * prefixed with "METHOD path: ". */
void kube_error_from_response(const struct kube_response *r, const char *method, const char *path,
                              struct kube_error *e);
/* A failure of the caller's own (no request, or one it judges itself): status 0, reason
 * NONE, the formatted message. e may be NULL. Returns -1. */
int kube_error_set(struct kube_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* kube_error_set(e, ERR_OOM). Returns -1. */
int kube_error_oom(struct kube_error *e);
/* Clear e (no failure). */
void kube_error_clear(struct kube_error *e);

/* JSON conveniences. Each returns the HTTP status (200, 201, 404, 409, ...) or -1 on a
 * transport error; on any status >= 300 or -1, *e (may be NULL) holds the typed error.
 * When out is non-NULL and the call succeeded, *out receives the parsed response object
 * (caller deletes). */
long kube_get(struct kube_client *c, const char *path, cJSON **out, struct kube_error *e);
long kube_create(struct kube_client *c, const char *path, const cJSON *obj, cJSON **out,
                 struct kube_error *e);
long kube_merge_patch(struct kube_client *c, const char *path, const cJSON *patch,
                      cJSON **out, struct kube_error *e);
/* Strategic merge patch (built-in kinds only: lists such as a pod's containers merge by
 * their key, e.g. the container name). */
long kube_strategic_patch(struct kube_client *c, const char *path, const cJSON *patch,
                          cJSON **out, struct kube_error *e);
long kube_replace(struct kube_client *c, const char *path, const cJSON *obj, cJSON **out,
                  struct kube_error *e);
/* Server-side apply (application/apply-patch+yaml; JSON is valid YAML) with force. */
long kube_apply(struct kube_client *c, const char *path, const cJSON *obj,
                const char *field_manager, cJSON **out, struct kube_error *e);
/* DELETE with propagationPolicy=Background; uid (may be NULL) becomes a precondition so
 * a same-named successor is never deleted by mistake. 404 counts as success (returns 404). */
long kube_delete(struct kube_client *c, const char *path, const char *uid, struct kube_error *e);

/* Append "?"/"&" + key=url-encoded(value) to a path buffer. Returns 0 or -1 on overflow. */
int kube_path_add_query(char *path, size_t pathlen, const char *key, const char *value);
/* URL-encode s into out (RFC 3986 unreserved kept). Returns 0 or -1 if out is too small. */
int kube_url_encode(const char *s, char *out, size_t outlen);

/* The URL for path (which starts with '/'): the server's, or with tls-server-name that
 * name in place of the host, curl connecting to the real host (see
 * kube_client_setup_handle). malloc'd; NULL when out of memory. */
char *kube_client_url(struct kube_client *c, const char *path);
/* After a failure fresh credentials may cure: status 401 re-reads the token file, a TLS
 * verification failure the CA bundle (both only when they come from files). 1 when it
 * was re-read, so one retry is worth it; else 0. */
int kube_client_refresh_credentials(struct kube_client *c, long status, int tls_verify_failed);

/* Apply the client's TLS and auth settings to a curl easy handle (used by kube/watch.c):
 * the current CA bundle and token, client certificates, tls-server-name routing (the URL
 * must come from kube_client_url). headers receives the Authorization and Host headers
 * (caller frees with curl_slist_free_all). */
struct curl_slist;
int kube_client_setup_handle(struct kube_client *c, void *curl_easy, struct curl_slist **headers,
                             char *err, size_t errlen);
/* Run the transfer set up on a curl easy handle (a watch: kube/watch.c) to its end, like
 * curl_easy_perform, but abandoned at once when the client is cancelled, or when *stop
 * (may be NULL) is set and kube_client_wake called (within about a second without the
 * wake): then CURLE_ABORTED_BY_CALLBACK. Returns the CURLcode. */
int kube_client_perform(struct kube_client *c, void *curl_easy, const atomic_int *stop);
/* Count one request outcome for the metrics. */
void kube_client_count(struct kube_client *c, const char *method, long status);

#endif
