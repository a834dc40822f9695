/* tests/unit/test_activity_decide.c — activity-aware idle, the pure half (sandbox/decide/activity_decide.c):
 * metrics.k8s.io CPU quantities in every unit metrics-server writes, a PodMetrics summed over
 * its containers, the threshold (strictly above), an old sample saying nothing, bad input
 * refused with a reason; and a SandboxClass's spec.activity.cpu (sandbox/decide/class_decide.c). */
#include "check.h"

#include <string.h>

#include "sandbox/decide/activity_decide.h"
#include "sandbox/decide/class_decide.h"

TEST(cpu_quantities_in_every_unit_metrics_server_writes) {
    int64_t nc;
    CHECK_INT(sbx_activity_parse_cpu("2540114n", &nc), 0);
    CHECK(nc == 2540114);
    CHECK_INT(sbx_activity_parse_cpu("250u", &nc), 0);
    CHECK(nc == 250000);
    CHECK_INT(sbx_activity_parse_cpu("5m", &nc), 0);
    CHECK(nc == 5000000);
    CHECK_INT(sbx_activity_parse_cpu("2", &nc), 0);
    CHECK(nc == 2000000000);
    CHECK_INT(sbx_activity_parse_cpu("0.5", &nc), 0);
    CHECK(nc == 500000000);
    CHECK_INT(sbx_activity_parse_cpu("0", &nc), 0);
    CHECK(nc == 0);
    const char *bad[] = {"", "n", "m", "-5m", "5k", "1.2.3", "abc", "1e3", ".", "99999999999999999999n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_INT(sbx_activity_parse_cpu(bad[i], &nc), -1);
    CHECK_INT(sbx_activity_parse_cpu(NULL, &nc), -1);
}

static cJSON *pm(const char *containers, const char *ts) {
    char js[1024];
    snprintf(js, sizeof js,
             "{\"kind\":\"PodMetrics\",\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"metadata\":{\"name\":\"p\"},"
             "\"timestamp\":\"%s\",\"window\":\"15.123s\",\"containers\":[%s]}",
             ts, containers);
    return cJSON_Parse(js);
}

TEST(a_pod_s_cpu_is_its_containers_together_against_the_threshold) {
    char err[256];
    struct sbx_activity a;
    cJSON *m = pm("{\"name\":\"sandbox\",\"usage\":{\"cpu\":\"180000000n\",\"memory\":\"10Mi\"}},"
                  "{\"name\":\"side\",\"usage\":{\"cpu\":\"70500u\",\"memory\":\"1Mi\"}}",
                  "2026-05-28T20:26:40Z");
    CHECK_INT(sbx_activity_read(m, &a, err, sizeof err), 0);
    CHECK(a.cpu_millis == 251);   /* 180m + 70.5m, to the nearest 1m */
    CHECK(a.timestamp_ms == 1780000000000LL);
    CHECK(a.window_ms == 15123);
    int64_t now = 1780000000000LL + 20000;
    CHECK_INT(sbx_activity_busy(&a, 100, now, 120000), 1);
    CHECK_INT(sbx_activity_busy(&a, 251, now, 120000), 0);   /* strictly above */
    CHECK_INT(sbx_activity_busy(&a, 0, now, 120000), 0);     /* activity does not count */
    CHECK_INT(sbx_activity_busy(&a, 100, now + 200000, 120000), 0);   /* an old sample */
    char desc[160];
    sbx_activity_describe(&a, 100, desc, sizeof desc);
    CHECK_STR(desc, "cpu=251m threshold=100m window=15s");   /* to the second */
    a.window_ms = 0;
    a.cpu_millis = 2000;
    sbx_activity_describe(&a, 1500, desc, sizeof desc);
    CHECK_STR(desc, "cpu=2 threshold=1500m");
    cJSON_Delete(m);
}

TEST(a_metrics_object_without_usage_is_refused_with_a_reason) {
    char err[256];
    struct sbx_activity a;
    cJSON *m = pm("", "2026-05-28T20:26:40Z");
    CHECK_INT(sbx_activity_read(m, &a, err, sizeof err), -1);
    CHECK(strstr(err, "no containers") != NULL);
    cJSON_Delete(m);
    m = pm("{\"name\":\"sandbox\",\"usage\":{\"cpu\":\"lots\"}}", "2026-05-28T20:26:40Z");
    CHECK_INT(sbx_activity_read(m, &a, err, sizeof err), -1);
    CHECK(strstr(err, "container sandbox: usage.cpu \"lots\"") != NULL);
    cJSON_Delete(m);
    m = pm("{\"name\":\"sandbox\",\"usage\":{}}", "not-a-time");
    CHECK_INT(sbx_activity_read(m, &a, err, sizeof err), -1);
    cJSON_Delete(m);
    CHECK_INT(sbx_activity_read(NULL, &a, err, sizeof err), -1);
}

static int parse_class(const char *spec, struct sbx_class *c, char *err, size_t errlen) {
    char js[512];
    snprintf(js, sizeof js, "{\"metadata\":{\"name\":\"k\"},\"spec\":%s}", spec);
    cJSON *o = cJSON_Parse(js);
    int rc = sbx_class_parse(o, c, err, errlen);
    cJSON_Delete(o);
    return rc;
}

TEST(a_class_s_activity_cpu) {
    struct sbx_class c;
    char err[512];
    CHECK_INT(parse_class("{\"activity\":{\"cpu\":\"50m\"}}", &c, err, sizeof err), 0);
    CHECK(c.activity_cpu_millis == 50);
    sbx_class_free(&c);
    CHECK_INT(parse_class("{\"activity\":{\"cpu\":2}}", &c, err, sizeof err), 0);
    CHECK(c.activity_cpu_millis == 2000);
    sbx_class_free(&c);
    CHECK_INT(parse_class("{}", &c, err, sizeof err), 0);
    CHECK(c.activity_cpu_millis == 0);   /* unset: only touches count */
    sbx_class_free(&c);
    const char *bad[] = {"{\"activity\":{\"cpu\":\"0\"}}", "{\"activity\":{\"cpu\":\"-1\"}}",
                         "{\"activity\":{\"cpu\":\"fast\"}}", "{\"activity\":{\"cpu\":\"257\"}}",
                         "{\"activity\":{\"cpu\":true}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(parse_class(bad[i], &c, err, sizeof err), -1);
        CHECK(strstr(err, "spec.activity.cpu") != NULL);
    }
    CHECK_INT(parse_class("{\"activity\":\"on\"}", &c, err, sizeof err), -1);
    CHECK(strstr(err, "spec.activity") != NULL);
}
