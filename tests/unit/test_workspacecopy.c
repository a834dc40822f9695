/* tests/unit/test_workspacecopy.c — a fork filled by a copy (sandbox/model/workspacecopy.c and
 * the decisions in sandbox/decide/reconcile_decide.c): the copier pod is admissible under the restricted
 * Pod Security Standard, mounts the source read-only and the new claim, keeps modes, times
 * and links (cp -a), is bounded in time, is no sandbox pod (no controller reference), lands
 * on the source pod's node when one runs; which StorageClasses clone; the fork's claim
 * without a dataSource; no sandbox pod while the copy runs or after it failed. */
#include "check.h"

#include "kube/kjson.h"
#include "sandbox/model/builders.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/workspacecopy.h"

static struct sbx_spec fork_spec(void) {
    struct sbx_spec s;
    memset(&s, 0, sizeof s);
    s.user_id = "alice";
    s.chat_id = "c2";
    s.lifecycle = SBX_SESSION;
    s.idle_timeout_ms = 60000;
    s.run_as_user = SBX_RUN_AS_DEFAULT;
    s.workspace_bytes = INT64_C(1) << 30;
    s.workspace_from = "src";
    return s;
}

TEST(copier_pod_is_restricted_and_copies_with_cp_a) {
    struct sbx_spec s = fork_spec();
    struct sbx_owner o = {.name = "fork", .namespace_ = "ns", .uid = "0b1c-uid"};
    char name[96];
    sbx_copier_name(o.uid, name, sizeof name);
    CHECK_STR(name, "yao-copy-0b1c-uid");
    cJSON *p = sbx_build_copier(&o, &s, name, "yao-sandbox/sandbox:1", "yao-sb-alice-c1-workspace",
                                "yao-sb-alice-c2-workspace", NULL);
    CHECK(p != NULL);
    CHECK_STR(kj_str(p, "metadata.name"), "yao-copy-0b1c-uid");
    CHECK_STR(kj_map_get(p, "metadata.annotations", SBX_ANN_COPY_FOR), "fork");
    const cJSON *ref = cJSON_GetArrayItem(kj_path(p, "metadata.ownerReferences"), 0);
    CHECK_STR(kj_str(ref, "kind"), "Sandbox");
    CHECK_STR(kj_str(ref, "uid"), "0b1c-uid");
    CHECK(!kj_bool(ref, "controller", 1));              /* no sandbox pod: holds no running slot */
    CHECK(sbx_sandbox_controller_ref(p) == NULL);
    CHECK_STR(kj_str(p, "spec.restartPolicy"), "Never");
    CHECK_INT(kj_int(p, "spec.activeDeadlineSeconds", 0), SBX_COPY_DEADLINE_S);
    CHECK(!kj_bool(p, "spec.automountServiceAccountToken", 1));
    CHECK(kj_bool(p, "spec.securityContext.runAsNonRoot", 0));
    CHECK_INT(kj_int(p, "spec.securityContext.runAsUser", 0), 1000);
    CHECK_STR(kj_str(p, "spec.securityContext.seccompProfile.type"), "RuntimeDefault");
    const cJSON *c = cJSON_GetArrayItem(kj_path(p, "spec.containers"), 0);
    CHECK_STR(kj_str(c, "name"), SBX_CONTAINER_NAME);
    CHECK(!kj_bool(c, "securityContext.allowPrivilegeEscalation", 1));
    CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(kj_path(c, "securityContext.capabilities.drop"), 0)), "ALL");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(kj_path(c, "command"), 2)), SBX_COPY_SCRIPT);
    CHECK(strstr(SBX_COPY_SCRIPT, "cp -a \"$f\" /yao/workspace/") != NULL);
    CHECK_STR(kj_str(c, "terminationMessagePolicy"), "FallbackToLogsOnError");
    CHECK_STR(kj_str(c, "resources.limits.memory"), "256Mi");
    const cJSON *m0 = cJSON_GetArrayItem(kj_path(c, "volumeMounts"), 0), *m1 = cJSON_GetArrayItem(kj_path(c, "volumeMounts"), 1);
    CHECK_STR(kj_str(m0, "mountPath"), "/yao/source");
    CHECK(kj_bool(m0, "readOnly", 0));
    CHECK_STR(kj_str(m1, "mountPath"), "/yao/workspace");
    CHECK(!kj_bool(m1, "readOnly", 0));
    const cJSON *v0 = cJSON_GetArrayItem(kj_path(p, "spec.volumes"), 0), *v1 = cJSON_GetArrayItem(kj_path(p, "spec.volumes"), 1);
    CHECK_STR(kj_str(v0, "persistentVolumeClaim.claimName"), "yao-sb-alice-c1-workspace");
    CHECK(kj_bool(v0, "persistentVolumeClaim.readOnly", 0));
    CHECK_STR(kj_str(v1, "persistentVolumeClaim.claimName"), "yao-sb-alice-c2-workspace");
    CHECK(kj_path(p, "spec.affinity") == NULL);           /* the scheduler follows the volumes */
    cJSON_Delete(p);
    /* A source pod running on a node: the copy goes there (ReadWriteOnce). */
    p = sbx_build_copier(&o, &s, name, "img", "a", "b", "node-7");
    const cJSON *term = cJSON_GetArrayItem(
        kj_path(p, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"), 0);
    const cJSON *f = cJSON_GetArrayItem(kj_path(term, "matchFields"), 0);
    CHECK_STR(kj_str(f, "key"), "metadata.name");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(kj_path(f, "values"), 0)), "node-7");
    cJSON_Delete(p);
    /* The platform's uid (OpenShift): none named. */
    s.run_as_user = SBX_RUN_AS_AUTO;
    p = sbx_build_copier(&o, &s, name, "img", "a", "b", NULL);
    CHECK(kj_path(p, "spec.securityContext.runAsUser") == NULL);
    CHECK(kj_bool(p, "spec.securityContext.runAsNonRoot", 0));
    cJSON_Delete(p);
    CHECK(sbx_build_copier(&o, &s, name, NULL, "a", "b", NULL) == NULL);
}

TEST(which_storage_classes_clone) {
    cJSON *yes = cJSON_Parse("{\"metadata\":{\"annotations\":{\"sandbox.yaoapps.com/clones\":\"true\"}}}");
    cJSON *no = cJSON_Parse("{\"metadata\":{\"annotations\":{\"sandbox.yaoapps.com/clones\":\"yes\"}}}");
    cJSON *none = cJSON_Parse("{\"metadata\":{}}");
    CHECK(sbx_storage_class_clones(yes));
    CHECK(!sbx_storage_class_clones(no));
    CHECK(!sbx_storage_class_clones(none));
    CHECK(!sbx_storage_class_clones(NULL));              /* unknown: copied, never an empty clone */
    cJSON_Delete(yes);
    cJSON_Delete(no);
    cJSON_Delete(none);
}

TEST(a_copied_forks_claim_has_no_data_source) {
    struct sbx_spec s = fork_spec();
    struct sbx_owner o = {.name = "fork", .namespace_ = "ns", .uid = "u"};
    struct sbx_ws_source src = {.claim = "src-ws", .storage_class = "local-path", .bytes = INT64_C(2) << 30, .copy = 1};
    cJSON *pvc = sbx_build_pvc_from(&o, &s, "pod", "claim", &src);
    CHECK(kj_path(pvc, "spec.dataSource") == NULL);
    CHECK_STR(kj_map_get(pvc, "metadata.annotations", SBX_ANN_FORK_FROM), "src-ws");
    CHECK_STR(kj_str(pvc, "spec.resources.requests.storage"), "2Gi");
    CHECK_STR(kj_str(pvc, "spec.storageClassName"), "local-path");
    cJSON_Delete(pvc);
    src.copy = 0;
    pvc = sbx_build_pvc_from(&o, &s, "pod", "claim", &src);
    CHECK_STR(kj_str(pvc, "spec.dataSource.name"), "src-ws");
    CHECK(kj_map_get(pvc, "metadata.annotations", SBX_ANN_FORK_FROM) == NULL);
    cJSON_Delete(pvc);
}

TEST(no_sandbox_pod_while_the_copy_runs_or_failed) {
    struct sbx_spec s = fork_spec();
    struct sbx_observed o;
    memset(&o, 0, sizeof o);
    o.now_ms = INT64_C(1795946400000);
    o.created_ms = o.now_ms;
    o.generation = 1;
    o.admitted = 1;
    o.pvc = SBX_OBJ_PRESENT;
    o.pvc_bound = 1;
    o.claim_binding = SBX_BINDING_LATE;
    o.workspace_copy = SBX_COPY_RUNNING;
    o.workspace_copy_message = "copying the workspace of Sandbox src";
    struct sbx_decision d;
    lifecycle_decide(&s, &o, &d);
    CHECK_INT(d.actions & (SBX_ACT_CREATE_POD | SBX_ACT_CREATE_PVC), 0);
    CHECK_STR(d.phase, "Creating");
    CHECK_STR(d.reason, SBX_REASON_WS_COPYING);
    CHECK_STR(d.message, "copying the workspace of Sandbox src");
    CHECK_INT(d.wants_pod, 0);                              /* no running slot held meanwhile */
    CHECK_INT(d.requeue_after_ms, SBX_WS_COPY_RETRY_MS);
    o.workspace_copy = SBX_COPY_FAILED;
    o.workspace_copy_message = "copying the workspace of Sandbox src failed (Error, exit code 1): cp: can't open";
    lifecycle_decide(&s, &o, &d);
    CHECK_STR(d.phase, "Pending");
    CHECK_STR(d.reason, SBX_REASON_WS_COPY_FAILED);
    CHECK(strstr(d.message, "cp: can't open") != NULL);
    CHECK_INT(d.actions & SBX_ACT_CREATE_POD, 0);
    /* Filled: the pod comes. */
    o.workspace_copy = SBX_COPY_NONE;
    lifecycle_decide(&s, &o, &d);
    CHECK(d.actions & SBX_ACT_CREATE_POD);
    /* Paused while copying: the user's word first (no pod either way). */
    o.workspace_copy = SBX_COPY_RUNNING;
    s.paused = 1;
    lifecycle_decide(&s, &o, &d);
    CHECK_STR(d.reason, SBX_REASON_PAUSED);
    CHECK_INT(d.actions & SBX_ACT_CREATE_POD, 0);
}
