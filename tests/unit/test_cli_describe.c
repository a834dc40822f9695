/* tests/unit/test_cli_describe.c — `describe` rendered (cli/describe.c): the metadata,
 * spec and status sections with their values in one column, a one-shot's run with its
 * output tails, conditions and Events as aligned tables (Events oldest first, repeats as
 * "(xN over AGE)", the source component), and <none> / an unreadable-Events note. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cli/describe.h"

/* 2026-12-02T01:00:00Z */
#define NOW INT64_C(1796173200000)

static const char *SB =
    "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\",\"kind\":\"Sandbox\","
    "\"metadata\":{\"name\":\"job\",\"namespace\":\"ns1\",\"uid\":\"u1\",\"generation\":2,"
    " \"creationTimestamp\":\"2026-12-02T00:50:00Z\",\"labels\":{\"team\":\"a\",\"tier\":\"web\"}},"
    "\"spec\":{\"userID\":\"ann\",\"chatID\":\"c1\",\"lifecycle\":\"one-shot\",\"image\":\"busybox:1.36\","
    " \"resources\":{\"memory\":\"256Mi\",\"cpu\":\"250m\"},\"workspace\":{\"size\":\"2Gi\"},"
    " \"ports\":[{\"name\":\"web\",\"port\":8080}],\"env\":[{\"name\":\"X\",\"value\":\"1\"}],"
    " \"run\":{\"command\":[\"sh\",\"-c\",\"echo hi; exit 3\"],\"timeout\":\"5m\"},\"ttlSecondsAfterFinished\":300},"
    "\"status\":{\"phase\":\"Failed\",\"lifecycle\":\"one-shot\",\"podName\":\"job\",\"podIP\":\"10.85.0.9\",\"nodeName\":\"n1\","
    " \"observedGeneration\":2,\"run\":{\"exitCode\":3,\"startedAt\":\"2026-12-02T00:58:00Z\",\"finishedAt\":\"2026-12-02T00:59:00Z\","
    "  \"stdout\":\"hi\\nthere\",\"stderr\":\"\",\"truncated\":true},"
    " \"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Failed\",\"lastTransitionTime\":\"2026-12-02T00:59:00Z\","
    "  \"message\":\"the command exited with code 3\"}]}}";

static const char *EVENTS =
    "[{\"type\":\"Normal\",\"reason\":\"RunFinished\",\"message\":\"exit code 3\",\"count\":1,"
    "  \"lastTimestamp\":\"2026-12-02T00:59:00Z\",\"source\":{\"component\":\"yao-sandbox-controller\"}},"
    " {\"type\":\"Warning\",\"reason\":\"BackOff\",\"message\":\"retrying\",\"count\":3,"
    "  \"firstTimestamp\":\"2026-12-02T00:51:00Z\",\"lastTimestamp\":\"2026-12-02T00:55:00Z\",\"reportingComponent\":\"kubelet\"},"
    " {\"type\":\"Normal\",\"reason\":\"Created\",\"message\":\"pod job created\","
    "  \"eventTime\":\"2026-12-02T00:50:01.000000Z\",\"source\":{\"component\":\"yao-sandbox-controller\"}}]";

static char *render(const char *sbtext, const char *evtext) {
    cJSON *sb = cJSON_Parse(sbtext), *ev = evtext ? cJSON_Parse(evtext) : NULL;
    struct dynbuf b;
    dynbuf_init(&b, 1 << 20);
    CHECK_INT(describe_render(sb, ev, NOW, &b), 0);
    char *out = dynbuf_take(&b);
    cJSON_Delete(sb);
    cJSON_Delete(ev);
    return out;
}

TEST(sections_and_values) {
    char *out = render(SB, EVENTS);
    static const char *const want[] = {
        "Name:                 job\n",
        "Namespace:            ns1\n",
        "Labels:               team=a\n                      tier=web\n",
        "Annotations:          <none>\n",
        "Kind:                 Sandbox\n",
        "Created:              2026-12-02T00:50:00Z (10m ago)\n",
        "Spec:\n  User ID:            ann\n  Chat ID:            c1\n  Lifecycle:          one-shot\n",
        "  Class:              <default>\n",
        "  Image:              busybox:1.36\n",
        "  Resources:          memory 256Mi, cpu 250m\n",
        "  Workspace:          size 2Gi\n",
        "  Ports:              8080/TCP web\n",
        "  Env:                X=1\n",
        "  Run:\n    Command:          sh -c \"echo hi; exit 3\"\n    Timeout:          5m\n    TTL After Finished: 300s\n",
        "Status:\n  Phase:              Failed\n",
        "  Pod:                job (10.85.0.9, node n1)\n",
        "  Observed Generation: 2 (generation 2)\n",
        "    Exit Code:        3\n",
        "    Finished:         2026-12-02T00:59:00Z (60s ago)\n",
        "    Output:           the last 1400 bytes of each stream (the whole output: yao-sandbox logs)\n",
        "    Stdout:\n      hi\n      there\n",
        "    Stderr:           <empty>\n",
        "Conditions:\n  Type   Status  Reason  Last Transition       Message\n"
        "  ----   ------  ------  ---------------       -------\n"
        "  Ready  False   Failed  2026-12-02T00:59:00Z  the command exited with code 3\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        if (!strstr(out, want[i])) fprintf(stderr, "  missing:\n%s\n  in:\n%s\n", want[i], out);
        CHECK(strstr(out, want[i]) != NULL);
    }
    free(out);
}

TEST(events_oldest_first_with_repeats_and_source) {
    char *out = render(SB, EVENTS);
    const char *ev = strstr(out, "Events:\n");
    CHECK(ev != NULL);
    if (!ev) { free(out); return; }
    const char *want =
        "Events:\n"
        "  Type     Reason       Age              From                    Message\n"
        "  ----     ------       ----             ----                    -------\n"
        "  Normal   Created      9m59s            yao-sandbox-controller  pod job created\n"
        "  Warning  BackOff      5m (x3 over 9m)  kubelet                 retrying\n"
        "  Normal   RunFinished  60s              yao-sandbox-controller  exit code 3\n";
    CHECK_STR(ev, want);
    free(out);
}

TEST(nothing_to_show_says_none) {
    char *out = render("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"userID\":\"u\",\"chatID\":\"c\"}}", "[]");
    CHECK(strstr(out, "Phase:              <none>\n") != NULL);
    CHECK(strstr(out, "Conditions:            <none>\n") != NULL);
    CHECK(strstr(out, "Events:                <none>\n") != NULL);
    CHECK(strstr(out, "  Lifecycle:          <default>\n") != NULL);
    CHECK(strstr(out, "Run:") == NULL);
    free(out);
    out = render("{\"metadata\":{\"name\":\"x\"}}", NULL);
    CHECK(strstr(out, "Events:                <unable to read them>\n") != NULL);
    free(out);
}
