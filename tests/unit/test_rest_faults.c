/* tests/unit/test_rest_faults.c — the REST client (kube/rest.c) against a scripted fake
 * API server (tests/fake/fake_apiserver.py, scenario tests/fake/scenarios/rest_faults.json,
 * one route per fault): Retry-After on 429, retries of 503 and of 5xx for idempotent verbs
 * only, malformed and truncated bodies, connection resets, stalls past the timeout, a body
 * over KUBE_MAX_BODY, and Status messages in errors. The fake's request log tells how
 * many attempts were made and when. One fake serves the whole file; it is killed at exit. */
#include "check.h"
#include "../fake/fake.h"

#define PODS "/api/v1/namespaces/t/pods"

FAKE_SHARED("rest_faults.json")

/* A fresh client (fresh connections) with the given attempts and timeout (0 = default). */
static struct kube_client *client(int attempts, long timeout_ms) {
    struct kube_client *c = up() ? fake_client(&fake) : NULL;
    if (c) {
        kube_client_set_retries(c, attempts);
        if (timeout_ms) kube_client_set_timeout(c, timeout_ms);
    }
    return c;
}

/* Requests the fake saw for path (method NULL = any), copying up to 8 log entries. */
static int seen(const char *method, const char *path, double *t, int max) {
    const cJSON *e[8];
    cJSON *log = fake_log(&fake);
    int n = fake_requests(log, method, path, e, 8);
    for (int i = 0; i < n && i < max && i < 8; i++) t[i] = fake_time(e[i], "t");
    cJSON_Delete(log);
    return n;
}

TEST(fake_server_answers) {
    struct kube_client *c = client(1, 0);
    struct kube_error err = {0};
    cJSON *out = NULL;
    CHECK(c != NULL);
    if (!c) return;
    /* No route: the fake's own 404 Status, message surfaced. */
    CHECK_INT(kube_get(c, PODS "/nothing-here", &out, &err), 404);
    CHECK(out == NULL);
    CHECK(strstr(err.message, "HTTP 404: no fake route for GET") != NULL);
    kube_client_free(c);
}

TEST(retry_after_429_waits_then_succeeds) {
    struct kube_client *c = client(5, 0);
    struct kube_error err = {0};
    cJSON *out = NULL;
    double t[8];
    if (!c) { CHECK(c != NULL); return; }
    long long t0 = clock_mono_ms();
    CHECK_INT(kube_get(c, PODS "/retry-after", &out, &err), 200);
    long long took = clock_mono_ms() - t0;
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "metadata"), "name")),
              "retry-after");
    CHECK(took >= 950);            /* Retry-After: 1 honoured ... */
    CHECK(took < 5000);            /* ... and not much more */
    CHECK_INT(seen("GET", PODS "/retry-after", t, 8), 2);
    CHECK(t[1] - t[0] >= 0.95);
    cJSON_Delete(out);
    kube_client_free(c);
}

TEST(status_503_then_200_is_retried) {
    struct kube_client *c = client(5, 0);
    struct kube_error err = {0};
    cJSON *out = NULL;
    double t[8];
    if (!c) { CHECK(c != NULL); return; }
    CHECK_INT(kube_get(c, PODS "/unavailable", &out, &err), 200);
    CHECK(out != NULL);
    CHECK_INT(seen("GET", PODS "/unavailable", t, 8), 2);
    CHECK(t[1] - t[0] >= 0.15);    /* exponential backoff starts at 200 ms */
    cJSON_Delete(out);
    kube_client_free(c);
}

TEST(status_500_retried_for_get_not_for_post) {
    struct kube_client *c = client(5, 0);
    struct kube_error err = {0};
    cJSON *out = NULL, *pod = cJSON_Parse("{\"metadata\":{\"name\":\"flaky-post\"}}");
    double t[8];
    if (!c) { CHECK(c != NULL); cJSON_Delete(pod); return; }
    CHECK_INT(kube_get(c, PODS "/flaky", &out, &err), 200);
    CHECK_INT(seen("GET", PODS "/flaky", t, 8), 2);
    cJSON_Delete(out);
    out = NULL;

    CHECK_INT(kube_create(c, PODS "/flaky-post", pod, &out, &err), 500);
    CHECK(out == NULL);
    CHECK(strstr(err.message, "HTTP 500: boom on create") != NULL);
    CHECK_INT(seen("POST", PODS "/flaky-post", t, 8), 1);
    cJSON_Delete(pod);
    kube_client_free(c);
}

TEST(status_503_on_post_is_retried) {
    struct kube_client *c = client(5, 0);
    struct kube_error err = {0};
    cJSON *out = NULL, *pod = cJSON_Parse("{\"metadata\":{\"name\":\"busy-post\"}}");
    double t[8];
    if (!c) { CHECK(c != NULL); cJSON_Delete(pod); return; }
    CHECK_INT(kube_create(c, PODS "/busy-post", pod, &out, &err), 201);
    CHECK(out != NULL);
    CHECK_INT(seen("POST", PODS "/busy-post", t, 8), 2);
    cJSON_Delete(out);
    cJSON_Delete(pod);
    kube_client_free(c);
}

TEST(status_429_forever_returns_after_the_attempts) {
    struct kube_client *c = client(3, 0);
    struct kube_error err = {0};
    cJSON *out = NULL;
    double t[8];
    if (!c) { CHECK(c != NULL); return; }
    CHECK_INT(kube_get(c, PODS "/always-429", &out, &err), 429);
    CHECK(out == NULL);
    CHECK(strstr(err.message, "HTTP 429: still too many") != NULL);
    CHECK_INT(err.reason, KUBE_REASON_TOO_MANY_REQUESTS);
    CHECK_INT(seen("GET", PODS "/always-429", t, 8), 3);
    kube_client_free(c);
}

TEST(truncated_json_body_is_malformed) {
    struct kube_client *c = client(5, 0);
    struct kube_error err = {0};
    cJSON *out = (cJSON *)1;
    double t[8];
    if (!c) { CHECK(c != NULL); return; }
    CHECK_INT(kube_get(c, PODS "/truncated", &out, &err), -1);
    CHECK(out == NULL);
    CHECK(strstr(err.message, "malformed JSON") != NULL);
    CHECK_INT(seen("GET", PODS "/truncated", t, 8), 1);   /* a 200 is never retried */
    kube_client_free(c);
}

TEST(connection_reset_mid_body_is_a_transport_error) {
    struct kube_client *c = client(3, 0);
    struct kube_response r;
    char msg[KUBE_ERR_MAX];
    struct kube_error err = {0};
    cJSON *out = NULL;
    double t[8];
    if (!c) { CHECK(c != NULL); return; }
    CHECK_INT(kube_request(c, "GET", PODS "/reset", NULL, NULL, 0, &r), -1);
    CHECK_INT(r.status, 0);
    CHECK(r.err[0] != '\0');
    kube_response_message(&r, msg, sizeof msg);
    CHECK_STR(msg, r.err);
    kube_response_free(&r);
    CHECK_INT(seen("GET", PODS "/reset", t, 8), 3);        /* every attempt used */

    CHECK_INT(kube_get(c, PODS "/reset", &out, &err), -1);
    CHECK(out == NULL);
    CHECK(strstr(err.message, PODS "/reset") != NULL);
    CHECK_INT(err.status, 0);
    CHECK_INT(err.reason, KUBE_REASON_TRANSPORT);
    kube_client_free(c);
}

TEST(stall_past_the_timeout_fails_in_bounds) {
    struct kube_client *c = client(2, 300);
    struct kube_error err = {0};
    cJSON *out = NULL;
    double t[8];
    if (!c) { CHECK(c != NULL); return; }
    long long t0 = clock_mono_ms();
    CHECK_INT(kube_get(c, PODS "/stall", &out, &err), -1);
    long long took = clock_mono_ms() - t0;
    CHECK(out == NULL);
    CHECK(strstr(err.message, "imeout") != NULL);                   /* curl: "Timeout was reached" */
    /* two attempts of 300 ms and a 200 ms backoff, far below the 3 s stall */
    CHECK(took >= 600);
    CHECK(took < 2900);            /* below even one 3 s stall: both attempts timed out */
    CHECK_INT(seen("GET", PODS "/stall", t, 8), 2);
    kube_client_free(c);
}

TEST(body_over_the_limit_is_refused) {
    struct kube_client *c = client(3, 0);
    struct kube_response r;
    struct kube_error err = {0};
    cJSON *out = NULL;
    double t[8];
    if (!c) { CHECK(c != NULL); return; }
    CHECK_INT(kube_request(c, "GET", PODS "/huge", NULL, NULL, 0, &r), -1);
    CHECK_INT(r.status, 0);
    CHECK(r.body == NULL);
    CHECK(strstr(r.err, "larger than") != NULL);
    kube_response_free(&r);
    /* Refusing is final: the same body would come again. */
    CHECK_INT(seen("GET", PODS "/huge", t, 8), 1);

    CHECK_INT(kube_get(c, PODS "/huge", &out, &err), -1);
    CHECK(out == NULL);
    CHECK(strstr(err.message, "larger than 67108864 bytes") != NULL);

    /* No Content-Length: refused while reading, at the limit. */
    CHECK_INT(kube_request(c, "GET", PODS "/huge-chunked", NULL, NULL, 0, &r), -1);
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "larger than 67108864 bytes") != NULL);
    kube_response_free(&r);
    CHECK_INT(seen("GET", PODS "/huge-chunked", t, 8), 1);
    kube_client_free(c);
}

TEST(status_message_is_surfaced) {
    struct kube_client *c = client(5, 0);
    struct kube_error err = {0};
    cJSON *out = NULL, *pod = cJSON_Parse("{\"metadata\":{\"name\":\"dup\"}}");
    if (!c) { CHECK(c != NULL); cJSON_Delete(pod); return; }
    CHECK_INT(kube_get(c, PODS "/missing", &out, &err), 404);
    CHECK(out == NULL);
    CHECK_STR(err.message, "GET " PODS "/missing: HTTP 404: pods \"missing\" not found");
    CHECK_INT(err.status, 404);
    CHECK_INT(err.reason, KUBE_REASON_NOT_FOUND);

    CHECK_INT(kube_create(c, PODS, pod, &out, &err), 409);
    CHECK_STR(err.message, "POST " PODS ": HTTP 409: pods \"dup\" already exists");
    CHECK_INT(err.reason, KUBE_REASON_ALREADY_EXISTS);   /* a 409 that is no Conflict */

    /* An attempt that gets no answer after one that did: a transport error, not the 503. */
    CHECK_INT(kube_get(c, PODS "/unavailable-then-reset", &out, &err), -1);
    CHECK_INT(err.status, 0);
    CHECK_INT(err.reason, KUBE_REASON_TRANSPORT);
    CHECK(strstr(err.message, "HTTP 503") == NULL);

    /* A namespace being deleted is told by the admission's cause, never by the words. */
    CHECK_INT(kube_create(c, "/api/v1/namespaces/gone/pods", pod, &out, &err), 403);
    CHECK_INT(err.reason, KUBE_REASON_NAMESPACE_TERMINATING);
    CHECK(strstr(err.message, "because it is being terminated") != NULL);
    CHECK_INT(kube_create(c, "/api/v1/namespaces/rbac/pods", pod, &out, &err), 403);
    CHECK_INT(err.reason, KUBE_REASON_FORBIDDEN);

    CHECK_INT(kube_get(c, PODS "/plain-403", &out, &err), 403);
    CHECK_STR(err.message, "GET " PODS "/plain-403: HTTP 403");
    CHECK_INT(err.reason, KUBE_REASON_FORBIDDEN);   /* no Status: the status's usual reason */
    cJSON_Delete(pod);
    kube_client_free(c);
}

TEST(counts_by_verb_and_class) {
    struct kube_client *c = client(2, 0);
    struct kube_request_counts n;
    struct kube_error err;
    cJSON *out = NULL;
    if (!c) { CHECK(c != NULL); return; }
    kube_get(c, PODS "/always-429", &out, &err);   /* 2 × 4xx */
    kube_get(c, PODS "/missing", &out, &err);      /* 1 × 4xx */
    kube_get(c, PODS "/reset", &out, &err);        /* 2 × transport */
    kube_client_counts(c, &n);
    CHECK_INT(n.by_verb[KUBE_VERB_GET][4], 3);
    CHECK_INT(n.by_verb[KUBE_VERB_GET][0], 2);
    CHECK_INT(n.by_verb[KUBE_VERB_GET][2], 0);
    kube_client_free(c);
}
