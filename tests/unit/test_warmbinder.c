/* tests/unit/test_warmbinder.c — the binder pod of a pending pool claim of a
 * WaitForFirstConsumer class (sandbox/model/warmbinder.c): it asks for what a sandbox of the class
 * asks for and may run where it may run, is admissible under the restricted Pod Security
 * Standard, uses the claim as a volume (that is what binds it), goes with its claim (owner
 * reference, not a controller one), never preempts, and prefers nodes that hold fewer of the
 * pool's volumes. */
#include "check.h"

#include "kube/kjson.h"
#include "sandbox/model/builders.h"
#include "sandbox/decide/warm_decide.h"
#include "sandbox/model/warmbinder.h"

static struct sbx_spec pool_spec(void) {
    struct sbx_spec s;
    memset(&s, 0, sizeof s);
    s.user_id = "warm";
    s.chat_id = "warm";
    s.image = "10.201.0.1:5000/yao-sandbox/sandbox:0.1.0";
    s.lifecycle = SBX_SESSION;
    s.run_as_user = SBX_RUN_AS_DEFAULT;
    s.memory_bytes = INT64_C(512) << 20;
    s.cpu_millis = 500;
    s.memory_request_bytes = INT64_C(128) << 20;
    s.cpu_request_millis = 50;
    s.workspace_bytes = INT64_C(1) << 30;
    s.pull_policy = SBX_PULL_IF_NOT_PRESENT;
    return s;
}

TEST(binder_asks_what_a_sandbox_asks_and_binds_its_claim) {
    struct sbx_spec s = pool_spec();
    char name[256];
    sbx_binder_name("yao-warm-x7k2p", name, sizeof name);
    CHECK_STR(name, "yao-warm-x7k2p-binder");
    cJSON *p = sbx_build_binder("team-a", "k1", "yao-warm-x7k2p", "claim-uid", &s, NULL, 0);
    CHECK(p != NULL);
    CHECK_STR(kj_str(p, "metadata.name"), "yao-warm-x7k2p-binder");
    CHECK_STR(kj_str(p, "metadata.namespace"), "team-a");
    CHECK_STR(kj_map_get(p, "metadata.annotations", SBX_ANN_BINDS_CLAIM), "yao-warm-x7k2p");
    /* in the controller's pod cache (it selects on SBX_LABEL_NAME), as no Sandbox's pod */
    CHECK_STR(kj_map_get(p, "metadata.labels", SBX_LABEL_NAME), "");
    CHECK_STR(kj_map_get(p, "metadata.labels", SBX_LABEL_WARM_POOL), "k1");
    CHECK_STR(kj_map_get(p, "metadata.labels", SBX_LABEL_MANAGED_BY), SBX_MANAGED_BY);
    const cJSON *ref = cJSON_GetArrayItem(kj_path(p, "metadata.ownerReferences"), 0);
    CHECK_STR(kj_str(ref, "kind"), "PersistentVolumeClaim");
    CHECK_STR(kj_str(ref, "name"), "yao-warm-x7k2p");
    CHECK_STR(kj_str(ref, "uid"), "claim-uid");
    CHECK(!kj_bool(ref, "controller", 0));
    CHECK(sbx_sandbox_controller_ref(p) == NULL);
    /* the claim is a volume of the pod: the scheduler binds it when it places the pod */
    const cJSON *vol = cJSON_GetArrayItem(kj_path(p, "spec.volumes"), 0);
    CHECK_STR(kj_str(vol, "persistentVolumeClaim.claimName"), "yao-warm-x7k2p");
    CHECK(!kj_bool(vol, "persistentVolumeClaim.readOnly", 0));
    const cJSON *c = cJSON_GetArrayItem(kj_path(p, "spec.containers"), 0);
    CHECK_STR(kj_str(c, "image"), s.image);          /* the node pulls the sandbox's image now */
    CHECK_STR(kj_str(c, "imagePullPolicy"), "IfNotPresent");
    CHECK(kj_path(c, "volumeMounts") == NULL);       /* nothing reads or writes the workspace */
    CHECK_STR(kj_str(c, "resources.requests.cpu"), "50m");
    CHECK_STR(kj_str(c, "resources.requests.memory"), "128Mi");
    CHECK_STR(kj_str(c, "resources.limits.cpu"), "500m");
    CHECK_STR(kj_str(c, "resources.limits.memory"), "512Mi");
    CHECK(kj_path(c, "resources.limits.ephemeral-storage") == NULL);
    CHECK_STR(kj_str(p, "spec.restartPolicy"), "Never");
    CHECK(kj_str(p, "spec.priorityClassName") == NULL);   /* a binder never preempts */
    CHECK(kj_path(p, "spec.affinity") == NULL);
    CHECK(kj_path(p, "spec.imagePullSecrets") == NULL);
    cJSON_Delete(p);
}

/* The restricted profile's rules, as the API server's PodSecurity admission checks them. */
TEST(binder_is_restricted) {
    struct sbx_spec s = pool_spec();
    cJSON *p = sbx_build_binder("ns", "k1", "c", "u", &s, NULL, 0);
    CHECK(p != NULL);
    CHECK(kj_bool(p, "spec.securityContext.runAsNonRoot", 0));
    CHECK_INT(kj_int(p, "spec.securityContext.runAsUser", 0), 65534);
    CHECK(kj_path(p, "spec.securityContext.fsGroup") == NULL);   /* leaves the volume's owner alone */
    CHECK_STR(kj_str(p, "spec.securityContext.seccompProfile.type"), "RuntimeDefault");
    CHECK(!kj_bool(p, "spec.automountServiceAccountToken", 1));
    CHECK(!kj_bool(p, "spec.hostNetwork", 0));
    const cJSON *c = cJSON_GetArrayItem(kj_path(p, "spec.containers"), 0);
    CHECK(!kj_bool(c, "securityContext.allowPrivilegeEscalation", 1));
    CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(kj_path(c, "securityContext.capabilities.drop"), 0)), "ALL");
    cJSON_Delete(p);
}

TEST(binder_runs_where_the_class_runs_and_avoids_crowded_nodes) {
    struct sbx_spec s = pool_spec();
    static const char *secrets[] = {"regcred"};
    s.node_selector = cJSON_Parse("{\"pool\":\"sandboxes\"}");
    s.tolerations = cJSON_Parse("[{\"key\":\"sandbox\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]");
    s.affinity = cJSON_Parse("{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
                             "[{\"weight\":5,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":"
                             "\"In\",\"values\":[\"a\"]}]}}]}}");
    s.runtime_class = "gvisor";
    s.priority_class = "high";
    s.ephemeral_bytes = INT64_C(2) << 30;
    s.pull_secrets = secrets;
    s.npull_secrets = 1;
    const char *avoid[] = {"node-1", "node-3"};
    cJSON *p = sbx_build_binder("ns", "k1", "c", "u", &s, avoid, 2);
    CHECK(p != NULL);
    CHECK_STR(kj_map_get(p, "spec.nodeSelector", "pool"), "sandboxes");
    CHECK_STR(kj_str(cJSON_GetArrayItem(kj_path(p, "spec.tolerations"), 0), "key"), "sandbox");
    CHECK_STR(kj_str(p, "spec.runtimeClassName"), "gvisor");
    CHECK(kj_str(p, "spec.priorityClassName") == NULL);
    CHECK_STR(kj_str(cJSON_GetArrayItem(kj_path(p, "spec.imagePullSecrets"), 0), "name"), "regcred");
    const cJSON *c = cJSON_GetArrayItem(kj_path(p, "spec.containers"), 0);
    CHECK_STR(kj_str(c, "resources.limits.ephemeral-storage"), "2Gi");
    CHECK_STR(kj_str(c, "resources.requests.ephemeral-storage"), "2Gi");
    /* the class's own preference kept, ours added after it */
    const cJSON *pref = kj_path(p, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution");
    CHECK_INT(cJSON_GetArraySize(pref), 2);
    CHECK_INT(kj_int(cJSON_GetArrayItem(pref, 0), "weight", 0), 5);
    const cJSON *ours = cJSON_GetArrayItem(pref, 1);
    CHECK_INT(kj_int(ours, "weight", 0), 100);
    const cJSON *f = cJSON_GetArrayItem(kj_path(ours, "preference.matchFields"), 0);
    CHECK_STR(kj_str(f, "key"), "metadata.name");
    CHECK_STR(kj_str(f, "operator"), "NotIn");
    CHECK_INT(cJSON_GetArraySize(kj_path(f, "values")), 2);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(kj_path(f, "values"), 1)), "node-3");
    /* the spec's own affinity is not changed */
    CHECK_INT(cJSON_GetArraySize(kj_path(s.affinity, "nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution")), 1);
    cJSON_Delete(p);
    /* a class without affinity: ours alone */
    cJSON_Delete(s.affinity);
    s.affinity = NULL;
    p = sbx_build_binder("ns", "k1", "c", "u", &s, avoid, 1);
    pref = kj_path(p, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution");
    CHECK_INT(cJSON_GetArraySize(pref), 1);
    CHECK(kj_path(p, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution") == NULL);
    cJSON_Delete(p);
    cJSON_Delete(s.node_selector);
    cJSON_Delete(s.tolerations);
}

TEST(binder_refuses_missing_arguments) {
    struct sbx_spec s = pool_spec();
    CHECK(sbx_build_binder(NULL, "k", "c", "u", &s, NULL, 0) == NULL);
    CHECK(sbx_build_binder("ns", "k", NULL, "u", &s, NULL, 0) == NULL);
    CHECK(sbx_build_binder("ns", "k", "c", NULL, &s, NULL, 0) == NULL);
    s.image = NULL;
    CHECK(sbx_build_binder("ns", "k", "c", "u", &s, NULL, 0) == NULL);
}

TEST(crowded_nodes_are_those_holding_the_most_volumes) {
    const char *out[SBX_BINDER_AVOID_MAX];
    const char *none[] = {NULL, "", NULL};
    CHECK_INT((long)sbx_binder_crowded_nodes(none, 3, out, SBX_BINDER_AVOID_MAX), 0);   /* nothing placed yet */
    const char *one[] = {"n1", NULL};
    CHECK_INT((long)sbx_binder_crowded_nodes(one, 2, out, SBX_BINDER_AVOID_MAX), 1);
    CHECK_STR(out[0], "n1");   /* any other node (one holding none) is better */
    const char *mixed[] = {"n1", "n2", "n1", NULL, "n3", "n2"};
    size_t k = sbx_binder_crowded_nodes(mixed, 6, out, SBX_BINDER_AVOID_MAX);
    CHECK_INT((long)k, 2);     /* n1 and n2 hold two each, n3 one: each named once */
    CHECK_STR(out[0], "n1");
    CHECK_STR(out[1], "n2");
    CHECK_INT((long)sbx_binder_crowded_nodes(mixed, 6, out, 1), 1);   /* bounded */
    const char *even[] = {"n1", "n2", "n3"};
    CHECK_INT((long)sbx_binder_crowded_nodes(even, 3, out, SBX_BINDER_AVOID_MAX), 3);
}

