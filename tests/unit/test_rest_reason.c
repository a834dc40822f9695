/* tests/unit/test_rest_reason.c — the typed reason of a failed request (kube/rest.c's
 * kube_reason_of): a Status object's reason wins over its HTTP status, the namespace
 * lifecycle admission's cause makes a 403 NamespaceTerminating (and only a 403, and only
 * the cause, never the message's words), an answer with no Status falls back on its
 * status's usual reason, no answer is a transport failure, success is none. */
#include "check.h"

#include <stdio.h>
#include <string.h>

#include "kube/rest.h"

static enum kube_reason of(long status, const char *body) {
    return kube_reason_of(status, body, body ? strlen(body) : 0);
}

#define STATUS(code, reason) "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"" reason \
                             "\",\"code\":" #code "}"

TEST(a_status_reason_is_typed) {
    CHECK_INT(of(404, STATUS(404, "NotFound")), KUBE_REASON_NOT_FOUND);
    CHECK_INT(of(409, STATUS(409, "AlreadyExists")), KUBE_REASON_ALREADY_EXISTS);
    CHECK_INT(of(409, STATUS(409, "Conflict")), KUBE_REASON_CONFLICT);
    CHECK_INT(of(422, STATUS(422, "Invalid")), KUBE_REASON_INVALID);
    CHECK_INT(of(410, STATUS(410, "Expired")), KUBE_REASON_EXPIRED);
    CHECK_INT(of(410, STATUS(410, "Gone")), KUBE_REASON_GONE);
    CHECK_INT(of(429, STATUS(429, "TooManyRequests")), KUBE_REASON_TOO_MANY_REQUESTS);
    CHECK_INT(of(504, STATUS(504, "Timeout")), KUBE_REASON_TIMEOUT);
    CHECK_INT(of(500, STATUS(500, "ServerTimeout")), KUBE_REASON_SERVER_TIMEOUT);
    CHECK_INT(of(403, STATUS(403, "Forbidden")), KUBE_REASON_FORBIDDEN);
    CHECK_INT(of(401, STATUS(401, "Unauthorized")), KUBE_REASON_UNAUTHORIZED);
}

TEST(a_namespace_being_deleted_is_told_by_the_admissions_cause) {
    const char *terminating =
        "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"code\":403,"
        "\"message\":\"pods \\\"p\\\" is forbidden: unable to create new content in namespace t because it is being "
        "terminated\",\"details\":{\"name\":\"p\",\"kind\":\"pods\",\"causes\":[{\"reason\":\"NamespaceTerminating\","
        "\"message\":\"namespace t is being terminated\",\"field\":\"metadata.namespace\"}]}}";
    CHECK_INT(of(403, terminating), KUBE_REASON_NAMESPACE_TERMINATING);
    /* The same words without the cause (RBAC, a webhook quoting them): Forbidden. */
    CHECK_INT(of(403, "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"code\":403,\"message\":\"unable to create new "
                      "content in namespace t because it is being terminated\"}"),
              KUBE_REASON_FORBIDDEN);
    /* The cause on another status is not the admission's refusal. */
    CHECK_INT(of(422, "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"code\":422,\"details\":{\"causes\":"
                      "[{\"reason\":\"NamespaceTerminating\"}]}}"),
              KUBE_REASON_INVALID);
    /* NamespaceTerminating as a Status's own reason (a webhook's words, any status): not
     * the admission's refusal. */
    CHECK_INT(of(403, "{\"kind\":\"Status\",\"reason\":\"NamespaceTerminating\",\"code\":403}"),
              KUBE_REASON_FORBIDDEN);
    CHECK_INT(of(400, "{\"kind\":\"Status\",\"reason\":\"NamespaceTerminating\",\"code\":400}"),
              KUBE_REASON_BAD_REQUEST);
    /* A cause list that is no list, or causes with no reason: Forbidden. */
    CHECK_INT(of(403, "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"details\":{\"causes\":{\"reason\":"
                      "\"NamespaceTerminating\"}}}"),
              KUBE_REASON_FORBIDDEN);
    CHECK_INT(of(403, "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"details\":{\"causes\":[{},1,null]}}"),
              KUBE_REASON_FORBIDDEN);
}

TEST(without_a_status_the_http_status_says) {
    CHECK_INT(of(404, NULL), KUBE_REASON_NOT_FOUND);
    CHECK_INT(of(403, "<html>forbidden by the proxy</html>"), KUBE_REASON_FORBIDDEN);
    CHECK_INT(of(409, "{\"kind\":\"Pod\"}"), KUBE_REASON_CONFLICT);   /* not a Status: its reason is not read */
    CHECK_INT(of(429, ""), KUBE_REASON_TOO_MANY_REQUESTS);
    CHECK_INT(of(500, "{"), KUBE_REASON_INTERNAL_ERROR);
    CHECK_INT(of(502, NULL), KUBE_REASON_INTERNAL_ERROR);
    CHECK_INT(of(406, NULL), KUBE_REASON_NOT_ACCEPTABLE);
    CHECK_INT(of(503, NULL), KUBE_REASON_SERVICE_UNAVAILABLE);
    CHECK_INT(of(504, NULL), KUBE_REASON_TIMEOUT);
    CHECK_INT(of(418, NULL), KUBE_REASON_UNKNOWN);
    /* A Status with a reason of no known name: the status's. */
    CHECK_INT(of(404, STATUS(404, "SomethingNew")), KUBE_REASON_NOT_FOUND);
    CHECK_INT(of(418, STATUS(418, "SomethingNew")), KUBE_REASON_UNKNOWN);
}

TEST(no_answer_is_transport_and_success_is_none) {
    CHECK_INT(of(0, NULL), KUBE_REASON_TRANSPORT);
    CHECK_INT(of(-1, NULL), KUBE_REASON_TRANSPORT);
    CHECK_INT(of(200, STATUS(200, "NotFound")), KUBE_REASON_NONE);
    CHECK_INT(of(201, NULL), KUBE_REASON_NONE);
}

TEST(every_reason_has_its_kubernetes_spelling) {
    CHECK_STR(kube_reason_name(KUBE_REASON_NOT_FOUND), "NotFound");
    CHECK_STR(kube_reason_name(KUBE_REASON_NAMESPACE_TERMINATING), "NamespaceTerminating");
    CHECK_STR(kube_reason_name(KUBE_REASON_TRANSPORT), "Transport");
    CHECK_STR(kube_reason_name(KUBE_REASON_NONE), "");
    /* Each named reason read back from a Status gives itself (the table has no holes). */
    for (int r = KUBE_REASON_BAD_REQUEST; r < KUBE_REASON_NAMESPACE_TERMINATING; r++) {
        char body[160];
        snprintf(body, sizeof body, "{\"kind\":\"Status\",\"reason\":\"%s\"}", kube_reason_name((enum kube_reason)r));
        CHECK_INT(of(400, body), r);
    }
}

TEST(a_local_failure_has_no_status_and_no_reason) {
    struct kube_error e = {.status = 403, .reason = KUBE_REASON_FORBIDDEN};
    CHECK_INT(kube_error_set(&e, "bad %s", "thing"), -1);
    CHECK_INT(e.status, 0);
    CHECK_INT(e.reason, KUBE_REASON_NONE);
    CHECK_STR(e.message, "bad thing");
    CHECK_INT(kube_error_oom(&e), -1);
    CHECK_STR(e.message, "out of memory");
    kube_error_clear(&e);
    CHECK_STR(e.message, "");
    CHECK_INT(kube_error_set(NULL, "ignored"), -1);   /* no error wanted: nothing written */
}
