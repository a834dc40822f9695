/* tests/unit/test_reconcile_expose.c — what a Sandbox shows of itself on the network
 * (sandbox/io/expose.c) in single passes on the fake API server (reconcile_env.h): its Service
 * follows spec.service (made, its ports patched when they change, deleted with a uid
 * precondition when turned off), and a Service of its name that is someone else's is left
 * alone (the sandbox runs without one, a Warning says why). An isolated class's
 * NetworkPolicy is made before the pod and the pod never starts without it: a refused
 * create or a policy of the name that is not the Sandbox's keeps the pod from being made. */
#include <stdio.h>
#include <string.h>

#include "reconcile_env.h"

#define SVC_COLL "/api/v1/namespaces/" NS "/services"
#define NP_COLL "/apis/networking.k8s.io/v1/namespaces/" NS "/networkpolicies"
#define EVENT_COLL "/api/v1/namespaces/" NS "/events"

/* The controller records Events (to the fake, through a client of its own). */
static void with_events(struct sbx_controller_options *o) { o->events_client = fakeapi_client(&shared_env.fa); }
#define env() env_tweaked(with_events)

/* Is there (within 10 s: the recorder writes on its own thread) an Event with this reason
 * about the Sandbox name? */
static int event_seen(struct env *e, const char *name, const char *reason) {
    for (int64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; env_sleep_ms(10)) {
        cJSON *l = fakeapi_list(&e->fa, EVENT_COLL, NULL);
        const cJSON *ev;
        int found = 0;
        cJSON_ArrayForEach(ev, l) {
            const char *r = kj_str(ev, "reason"), *about = kj_str(ev, "involvedObject.name");
            found |= r && about && !strcmp(r, reason) && !strcmp(about, name);
        }
        cJSON_Delete(l);
        if (found) return 1;
    }
    return 0;
}

/* The first port of the stored Service at path (0 when none). */
static int service_port(struct env *e, const char *path) {
    cJSON *s = fakeapi_get(&e->fa, path);
    const cJSON *p = cJSON_GetArrayItem(kj_path(s, "spec.ports"), 0);
    int port = (int)kj_int(p, "port", 0);
    cJSON_Delete(s);
    return port;
}

TEST(the_service_follows_spec_service) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    struct names n;
    names_of(&n, "ex1", "eve", "s1");
    char svc[512], uid[128];
    snprintf(svc, sizeof svc, SVC_COLL "/%s", n.pod_name);
    CHECK_INT(seed_sandbox(e, "ex1", "eve", "s1",
                           ",\"lifecycle\":\"persistent\",\"ports\":[{\"name\":\"http\",\"port\":8080}],"
                           "\"service\":{\"enabled\":true}", NULL), 0);
    CHECK_INT(pass(e, &n, NULL), 0);
    cJSON *s = fakeapi_get(&e->fa, svc);
    stored_str(e, n.sb, "metadata.uid", uid, sizeof uid);
    CHECK(s != NULL && controlled_by(s, uid));
    const cJSON *sel = kj_path(s, "spec.selector");
    CHECK(sel && sel->child);   /* selects the sandbox's pod, not every pod */
    cJSON_Delete(s);
    CHECK_INT(service_port(e, svc), 8080);
    /* the ports change: patched, not made again */
    CHECK_INT(fakeapi_patch(&e->fa, n.sb, "{\"spec\":{\"ports\":[{\"name\":\"http\",\"port\":9090}]}}"), 0);
    size_t mark = fakeapi_mark(&e->fa);
    for (int i = 0; i < 3 && service_port(e, svc) != 9090; i++) {
        env_sleep_ms(50);   /* the Service's cache */
        CHECK_INT(pass(e, &n, NULL), 0);
    }
    CHECK_INT(service_port(e, svc), 9090);
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", SVC_COLL), 0);
    /* turned off: deleted, with its uid as the precondition */
    CHECK_INT(fakeapi_patch(&e->fa, n.sb, "{\"spec\":{\"service\":{\"enabled\":false}}}"), 0);
    mark = fakeapi_mark(&e->fa);
    for (int i = 0; i < 3 && stored_exists(e, svc); i++) {
        env_sleep_ms(50);
        CHECK_INT(pass(e, &n, NULL), 0);
    }
    CHECK(!stored_exists(e, svc));
    cJSON *del = fakeapi_last_body(&e->fa, mark, "DELETE", svc);
    CHECK(del && precondition(del, "uid") != NULL);
    cJSON_Delete(del);
}

TEST(someone_elses_service_of_the_name_is_left_alone) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    struct names n;
    names_of(&n, "ex2", "eve", "s2");
    char svc[512], doc[1024];
    snprintf(svc, sizeof svc, SVC_COLL "/%s", n.pod_name);
    snprintf(doc, sizeof doc,
             "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{\"selector\":{\"app\":\"theirs\"},\"ports\":[{\"port\":1234}]}}", n.pod_name);
    CHECK_INT(fakeapi_seed(&e->fa, SVC_COLL, doc), 0);
    env_sleep_ms(100);   /* the Service cache */
    CHECK_INT(seed_sandbox(e, "ex2", "eve", "s2",
                           ",\"lifecycle\":\"persistent\",\"ports\":[{\"name\":\"http\",\"port\":8080}],"
                           "\"service\":{\"enabled\":true}", NULL), 0);
    size_t mark = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK_INT(pass(e, &n, NULL), 0);
    CHECK(stored_exists(e, n.pod));   /* the sandbox runs without its Service */
    CHECK_INT(service_port(e, svc), 1234);
    CHECK_INT(fakeapi_count(&e->fa, mark, "PATCH", svc), 0);
    CHECK_INT(fakeapi_count(&e->fa, mark, "DELETE", svc), 0);
    CHECK(event_seen(e, "ex2", "ServiceNameConflict"));
}

#define ISOLATED "\"network\":{\"mode\":\"isolated\",\"egressCIDRs\":[\"10.0.0.0/8\"]}"

TEST(an_isolated_sandboxs_pod_never_starts_without_its_policy) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    CHECK_INT(seed_class(e, "iso", ISOLATED, 1), 0);
    struct names n;
    names_of(&n, "ex3", "eve", "s3");
    char np[512], uid[128];
    snprintf(np, sizeof np, NP_COLL "/%s", n.pod_name);
    CHECK_INT(seed_sandbox(e, "ex3", "eve", "s3", ",\"lifecycle\":\"persistent\",\"className\":\"iso\"", NULL), 0);
    /* the policy's create refused: the pass fails and makes no pod */
    fakeapi_fault(&e->fa, "POST", NP_COLL, 500, 0, 1);
    size_t mark = fakeapi_mark(&e->fa);
    CHECK(pass(e, &n, NULL) < 0);
    fakeapi_clear_faults(&e->fa);
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", NP_COLL), 1);
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", POD_COLL), 0);
    CHECK(!stored_exists(e, n.pod));
    /* then accepted: the policy, owned by the Sandbox, selecting its pod; then the pod */
    CHECK_INT(pass(e, &n, NULL), 0);
    cJSON *p = fakeapi_get(&e->fa, np);
    stored_str(e, n.sb, "metadata.uid", uid, sizeof uid);
    CHECK(p != NULL && controlled_by(p, uid));
    const cJSON *ml = kj_path(p, "spec.podSelector.matchLabels");
    CHECK(ml && ml->child);
    cJSON_Delete(p);
    for (int i = 0; i < 3 && !stored_exists(e, n.pod); i++) CHECK_INT(pass(e, &n, NULL), 0);
    CHECK(stored_exists(e, n.pod));
}

TEST(a_policy_of_the_name_that_is_not_ours_blocks_the_pod) {
    struct env *e = env();
    CHECK(e != NULL);
    if (!e) return;
    CHECK_INT(seed_class(e, "iso", ISOLATED, 1), 0);
    struct names n;
    names_of(&n, "ex4", "eve", "s4");
    char np[512], doc[1024];
    snprintf(np, sizeof np, NP_COLL "/%s", n.pod_name);
    snprintf(doc, sizeof doc,
             "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Ingress\"],\"ingress\":[{}]}}", n.pod_name);
    CHECK_INT(fakeapi_seed(&e->fa, NP_COLL, doc), 0);
    env_sleep_ms(100);   /* the NetworkPolicy cache */
    CHECK_INT(seed_sandbox(e, "ex4", "eve", "s4", ",\"lifecycle\":\"persistent\",\"className\":\"iso\"", NULL), 0);
    size_t mark = fakeapi_mark(&e->fa);
    CHECK(pass(e, &n, NULL) < 0);
    CHECK(pass(e, &n, NULL) < 0);
    CHECK(!stored_exists(e, n.pod));
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", POD_COLL), 0);
    CHECK_INT(fakeapi_count(&e->fa, mark, "PATCH", np), 0);   /* theirs, untouched */
    CHECK_INT(fakeapi_count(&e->fa, mark, "DELETE", np), 0);
    CHECK(event_seen(e, "ex4", "NetworkPolicyNameConflict"));
}
