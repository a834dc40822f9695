/* tests/unit/test_shapes.c — what the PVC and Service caches keep (sandbox/decide/shapes.c):
 * metadata without managedFields and the last-applied annotation, and only the fields the
 * controller reads; an object without them stays valid; nothing else survives. */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kjson.h"
#include "sandbox/decide/shapes.h"

static cJSON *parse(const char *js) {
    cJSON *o = cJSON_Parse(js);
    if (!o) { fprintf(stderr, "bad fixture %s\n", js); abort(); }
    return o;
}

TEST(a_claim_keeps_class_request_phase_and_capacity) {
    cJSON *pvc = parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"w\",\"namespace\":\"t\","
        "\"uid\":\"u1\",\"resourceVersion\":\"7\",\"managedFields\":[{\"manager\":\"x\"}],\"annotations\":{"
        "\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\",\"sandbox.yaoapps.com/fork-from\":\"s\"},"
        "\"ownerReferences\":[{\"uid\":\"o1\",\"controller\":true}]},"
        "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"storageClassName\":\"local-path\",\"volumeName\":\"pv-1\","
        "\"resources\":{\"requests\":{\"storage\":\"1Gi\"},\"limits\":{\"storage\":\"2Gi\"}},"
        "\"dataSource\":{\"kind\":\"PersistentVolumeClaim\",\"name\":\"src\"}},"
        "\"status\":{\"phase\":\"Bound\",\"accessModes\":[\"ReadWriteOnce\"],\"capacity\":{\"storage\":\"1Gi\"}}}");
    sbx_pvc_shrink(pvc);
    CHECK_STR(kj_str(pvc, "metadata.name"), "w");
    CHECK_STR(kj_str(pvc, "metadata.uid"), "u1");
    CHECK_STR(kj_str(pvc, "metadata.resourceVersion"), "7");
    CHECK(kj_path(pvc, "metadata.managedFields") == NULL);
    CHECK(kj_map_get(pvc, "metadata.annotations", "kubectl.kubernetes.io/last-applied-configuration") == NULL);
    CHECK_STR(kj_map_get(pvc, "metadata.annotations", "sandbox.yaoapps.com/fork-from"), "s");
    CHECK_STR(kj_str(cJSON_GetArrayItem(kj_path(pvc, "metadata.ownerReferences"), 0), "uid"), "o1");
    CHECK_STR(kj_str(pvc, "spec.storageClassName"), "local-path");
    CHECK_STR(kj_str(pvc, "spec.resources.requests.storage"), "1Gi");
    CHECK_STR(kj_str(pvc, "status.phase"), "Bound");
    CHECK_STR(kj_str(pvc, "status.capacity.storage"), "1Gi");
    CHECK(kj_path(pvc, "spec.accessModes") == NULL);
    CHECK(kj_path(pvc, "spec.volumeName") == NULL);
    CHECK(kj_path(pvc, "spec.resources.limits") == NULL);
    CHECK(kj_path(pvc, "spec.dataSource") == NULL);
    CHECK(kj_path(pvc, "status.accessModes") == NULL);
    CHECK(kj_path(pvc, "apiVersion") != NULL);   /* top-level scalars stay */
    cJSON_Delete(pvc);
}

TEST(a_claim_without_the_fields_stays_valid) {
    cJSON *pvc = parse("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"]}}");
    sbx_pvc_shrink(pvc);
    CHECK_STR(kj_str(pvc, "metadata.name"), "w");
    CHECK(kj_path(pvc, "spec") == NULL);
    CHECK(kj_path(pvc, "status") == NULL);
    char *text = cJSON_PrintUnformatted(pvc);
    CHECK(text != NULL);
    free(text);
    cJSON_Delete(pvc);
}

TEST(a_service_keeps_ports_selector_and_cluster_ip) {
    cJSON *svc = parse(
        "{\"metadata\":{\"name\":\"yao-sb-a-b\",\"managedFields\":[{}]},"
        "\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":\"10.0.0.7\",\"clusterIPs\":[\"10.0.0.7\"],"
        "\"ports\":[{\"name\":\"http\",\"port\":80,\"targetPort\":8080}],\"selector\":{\"app\":\"x\"},"
        "\"sessionAffinity\":\"None\"},\"status\":{\"loadBalancer\":{}}}");
    sbx_service_shrink(svc);
    CHECK_STR(kj_str(svc, "spec.clusterIP"), "10.0.0.7");
    CHECK_INT(cJSON_GetArraySize(kj_path(svc, "spec.ports")), 1);
    CHECK_INT(kj_int(cJSON_GetArrayItem(kj_path(svc, "spec.ports"), 0), "targetPort", 0), 8080);
    CHECK_STR(kj_map_get(svc, "spec.selector", "app"), "x");
    CHECK(kj_path(svc, "spec.clusterIPs") == NULL);
    CHECK(kj_path(svc, "spec.type") == NULL);
    CHECK(kj_path(svc, "spec.sessionAffinity") == NULL);
    CHECK(kj_path(svc, "status") == NULL);
    CHECK(kj_path(svc, "metadata.managedFields") == NULL);
    cJSON_Delete(svc);
}
