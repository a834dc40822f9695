/* tests/unit/test_orphans_decide.c — which objects with the controller's labels have no
 * owner left (sandbox/decide/orphans_decide.c): the state `kubectl delete sandbox --cascade=orphan`
 * leaves a sandbox's pod, claim, Service, NetworkPolicy and a fork's copier in, and the
 * objects that look alike but are owned or the warm pool's. */
#include "check.h"

#include "sandbox/decide/orphans_decide.h"

/* An object: metadata members md inside {"metadata":{...}}. */
static int ownerless(const char *md) {
    char buf[2048];
    snprintf(buf, sizeof buf, "{\"metadata\":{%s}}", md);
    cJSON *o = cJSON_Parse(buf);
    CHECK(o != NULL);
    int r = sbx_orphan_ownerless(o);
    cJSON_Delete(o);
    return r;
}

#define ID "\"namespace\":\"team\",\"name\":\"yao-sb-alice-c1\",\"uid\":\"u-1\""
#define LABELS "\"labels\":{\"app.kubernetes.io/managed-by\":\"yao-sandbox\",\"sandbox.yaoapps.com/name\":\"s1\"}"
#define SBX_REF "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\",\"name\":\"s1\",\"uid\":\"sb-1\""

TEST(orphaned_by_cascade_orphan) {
    /* the garbage collector removed the references: no ownerReferences, or an empty list */
    CHECK_INT(ownerless(ID "," LABELS), 1);
    CHECK_INT(ownerless(ID "," LABELS ",\"ownerReferences\":[]"), 1);
    CHECK_INT(ownerless(ID "," LABELS ",\"ownerReferences\":null"), 1);
    /* a copier pod (its annotation does not matter) */
    CHECK_INT(ownerless(ID "," LABELS ",\"annotations\":{\"sandbox.yaoapps.com/copy-for\":\"s1\"}"), 1);
}

TEST(owned_objects_are_not_orphans) {
    /* the sandbox pod: controller reference */
    CHECK_INT(ownerless(ID "," LABELS ",\"ownerReferences\":[" SBX_REF ",\"controller\":true}]"), 0);
    /* a copier: a plain reference */
    CHECK_INT(ownerless(ID "," LABELS ",\"ownerReferences\":[" SBX_REF "}]"), 0);
    /* any other owner (a claim owning a binder, a class owning a pool claim) */
    CHECK_INT(ownerless(ID "," LABELS ",\"ownerReferences\":[{\"kind\":\"PersistentVolumeClaim\",\"name\":\"c\","
                        "\"uid\":\"c-1\"}]"), 0);
}

TEST(not_the_controllers_or_not_a_sandboxs) {
    /* not labelled by the controller */
    CHECK_INT(ownerless(ID ",\"labels\":{\"sandbox.yaoapps.com/name\":\"s1\"}"), 0);
    CHECK_INT(ownerless(ID ",\"labels\":{\"app.kubernetes.io/managed-by\":\"helm\",\"sandbox.yaoapps.com/name\":\"s1\"}"), 0);
    CHECK_INT(ownerless(ID), 0);
    /* a warm pool's claim of no class (no owner by design) and its binder pod */
    CHECK_INT(ownerless(ID ",\"labels\":{\"app.kubernetes.io/managed-by\":\"yao-sandbox\",\"sandbox.yaoapps.com/name\":\"\","
                        "\"sandbox.yaoapps.com/warm-pool\":\"k\"}"), 0);
    CHECK_INT(ownerless(ID ",\"labels\":{\"app.kubernetes.io/managed-by\":\"yao-sandbox\",\"sandbox.yaoapps.com/name\":\"s1\","
                        "\"sandbox.yaoapps.com/warm-pool\":\"k\"}"), 0);
    /* no Sandbox name */
    CHECK_INT(ownerless(ID ",\"labels\":{\"app.kubernetes.io/managed-by\":\"yao-sandbox\"}"), 0);
    /* going already */
    CHECK_INT(ownerless(ID "," LABELS ",\"deletionTimestamp\":\"2026-12-05T12:00:00Z\""), 0);
    /* no uid (a precondition needs one), no namespace or name */
    CHECK_INT(ownerless("\"namespace\":\"team\",\"name\":\"p\"," LABELS), 0);
    CHECK_INT(ownerless("\"name\":\"p\",\"uid\":\"u\"," LABELS), 0);
    CHECK_INT(sbx_orphan_ownerless(NULL), 0);
    cJSON *arr = cJSON_CreateArray();
    CHECK_INT(sbx_orphan_ownerless(arr), 0);
    cJSON_Delete(arr);
}

