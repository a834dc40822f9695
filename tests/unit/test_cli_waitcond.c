/* tests/unit/test_cli_waitcond.c — what the CLI waits for (cli/waitcond.c): --for parsed
 * as kubectl spells it (and refused clearly otherwise), each target met by the right
 * Sandbox, the progress line, and an early verdict on what will not heal by itself (a
 * pull that keeps failing, no node, an invalid spec, a finished one-shot, a paused or
 * stopped sandbox nobody starts, deletion), while transient states keep the wait going. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cli/waitcond.h"

/* A Sandbox: phase, Ready status/reason/message (NULL = no condition), paused, pod. */
static cJSON *sb(const char *phase, const char *rs, const char *reason, const char *msg, int paused, const char *pod) {
    cJSON *o = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", "s1");
    cJSON_AddStringToObject(md, "uid", "u-1");
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(o, "spec"), "paused", paused);
    cJSON *st = cJSON_AddObjectToObject(o, "status");
    if (phase) cJSON_AddStringToObject(st, "phase", phase);
    if (pod) cJSON_AddStringToObject(st, "podName", pod);
    if (rs) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", "Ready");
        cJSON_AddStringToObject(c, "status", rs);
        if (reason) cJSON_AddStringToObject(c, "reason", reason);
        if (msg) cJSON_AddStringToObject(c, "message", msg);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "conditions"), c);
    }
    return o;
}

/* The parsed --for, in one of a few slots (so a test can hold several). */
static struct wait_for *parsed(const char *s) {
    static struct wait_for slots[8];
    static unsigned next;
    struct wait_for *w = &slots[next++ % 8];
    char err[200];
    CHECK_INT(wait_for_parse(s, w, err, sizeof(err)), 0);
    return w;
}

TEST(for_is_parsed_as_kubectl_spells_it) {
    struct wait_for *w = parsed("condition=Ready");
    CHECK_INT(w->kind, WAIT_CONDITION);
    CHECK_STR(w->type, "Ready");
    CHECK_STR(w->status, "True");
    w = parsed("condition=Ready=false");
    CHECK_STR(w->status, "False");
    w = parsed("phase=succeeded");
    CHECK_INT(w->kind, WAIT_PHASE);
    CHECK_STR(w->phase, "Succeeded");
    w = parsed("delete");
    CHECK_INT(w->kind, WAIT_DELETE);
    char d[64];
    wait_for_describe(parsed("condition=Ready"), d, sizeof(d));
    CHECK_STR(d, "condition Ready=True");

    static const struct { const char *s, *err; } bad[] = {
        {"", "--for is required: condition=Ready, condition=TYPE=STATUS, phase=PHASE or delete"},
        {"ready", "--for=ready: expected condition=TYPE[=STATUS], phase=PHASE or delete"},
        {"condition=", "--for=condition=: a condition type such as Ready"},
        {"condition=Ready=maybe", "--for=condition=Ready=maybe: the status is True, False or Unknown"},
        {"phase=Done", "--for=phase=Done: unknown phase (Pending, Creating, Running, Stopping, Stopped, Succeeded, Failed)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        struct wait_for x;
        char err[200];
        CHECK_INT(wait_for_parse(bad[i].s, &x, err, sizeof(err)), -1);
        CHECK_STR(err, bad[i].err);
    }
}

TEST(targets_are_met) {
    char why[300], prog[300];
    cJSON *run = sb("Running", "True", "PodReady", "pod s1 is running", 0, "s1");
    CHECK_INT(wait_judge(parsed("condition=Ready"), run, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    CHECK_INT(wait_judge(parsed("phase=Running"), run, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    struct wait_for r = {.kind = WAIT_RUNNING};
    CHECK_INT(wait_judge(&r, run, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    r.kind = WAIT_STARTED;
    CHECK_INT(wait_judge(&r, run, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    CHECK_STR(prog, "Running, Ready=True (PodReady: pod s1 is running)");
    /* deletion: gone, or a successor with another uid */
    CHECK_INT(wait_judge(parsed("delete"), NULL, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    CHECK_INT(wait_judge(parsed("delete"), run, "u-2", why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    CHECK_INT(wait_judge(parsed("delete"), run, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_PENDING);
    cJSON_Delete(run);
    cJSON *stopped = sb("Stopped", "False", "Paused", "stopped", 1, NULL);
    struct wait_for s = {.kind = WAIT_STOPPED};
    CHECK_INT(wait_judge(&s, stopped, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    CHECK_INT(wait_judge(parsed("condition=Ready=False"), stopped, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    cJSON_Delete(stopped);
}

TEST(transient_states_keep_waiting_with_progress) {
    char why[300], prog[300];
    static const struct { const char *phase, *rs, *reason, *msg, *prog; } cases[] = {
        {NULL, NULL, NULL, NULL, "no phase yet"},
        {"Pending", "False", "CapacityExceeded", "waiting for a slot (position 2)", "Pending, Ready=False (CapacityExceeded: waiting for a slot (position 2))"},
        {"Creating", "False", "ContainerCreating", NULL, "Creating, Ready=False (ContainerCreating)"},
        {"Creating", "False", "Creating", "waiting for the pod", "Creating, Ready=False (Creating: waiting for the pod)"},
        {"Running", "False", "PodNotReady", "pod s1 is not ready", "Running, Ready=False (PodNotReady: pod s1 is not ready)"},
        {"Creating", "False", "CrashLoopBackOff", "back-off restarting", "Creating, Ready=False (CrashLoopBackOff: back-off restarting)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        cJSON *o = sb(cases[i].phase, cases[i].rs, cases[i].reason, cases[i].msg, 0, NULL);
        CHECK_INT(wait_judge(parsed("condition=Ready"), o, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_PENDING);
        CHECK_STR(prog, cases[i].prog);
        CHECK_STR(why, "");
        cJSON_Delete(o);
    }
    /* a long message is cut on the line */
    char longmsg[300];
    memset(longmsg, 'm', 200);
    longmsg[200] = 0;
    cJSON *o = sb("Creating", "False", "Creating", longmsg, 0, NULL);
    wait_judge(parsed("condition=Ready"), o, NULL, why, sizeof(why), prog, sizeof(prog));
    CHECK_INT(strlen(prog), strlen("Creating, Ready=False (Creating: ") + 80 + 3 + 1);
    CHECK(strstr(prog, "mmm...)") != NULL);
    cJSON_Delete(o);
    /* stopped or paused, but we just asked it to start: on its way */
    struct wait_for r = {.kind = WAIT_RUNNING, .starting = 1};
    o = sb("Stopped", "False", "Paused", "stopped by spec.paused", 0, NULL);
    CHECK_INT(wait_judge(&r, o, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_PENDING);
    cJSON_Delete(o);
    /* waiting for a stop: nothing about running is a failure */
    struct wait_for s = {.kind = WAIT_STOPPED};
    o = sb("Stopping", "False", "ImagePullBackOff", NULL, 1, NULL);
    CHECK_INT(wait_judge(&s, o, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_PENDING);
    cJSON_Delete(o);
}

TEST(what_will_not_heal_ends_the_wait_with_the_reason) {
    char why[300], prog[300];
    static const struct { const char *phase, *reason, *msg, *why; } cases[] = {
        {"Creating", "ImagePullBackOff", "Back-off pulling image \"nope:1\"", "cannot start: ImagePullBackOff: Back-off pulling image \"nope:1\""},
        {"Creating", "ErrImagePull", "pull access denied", "cannot start: ErrImagePull: pull access denied"},
        {"Creating", "InvalidImageName", "bad", "cannot start: InvalidImageName: bad"},
        {"Pending", "InvalidSpec", "spec.image: empty", "cannot start: InvalidSpec: spec.image: empty"},
        {"Pending", "NameConflict", NULL, "cannot start: NameConflict"},
        {"Failed", "Failed", "the command exited with code 7", "has finished (phase Failed): the command exited with code 7"},
        {"Succeeded", "Succeeded", "the command exited with code 0", "has finished (phase Succeeded): the command exited with code 0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        cJSON *o = sb(cases[i].phase, "False", cases[i].reason, cases[i].msg, 0, NULL);
        CHECK_INT(wait_judge(parsed("condition=Ready"), o, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
        CHECK_STR(why, cases[i].why);
        struct wait_for r = {.kind = WAIT_RUNNING, .starting = 1};
        CHECK_INT(wait_judge(&r, o, "u-1", why, sizeof(why), NULL, 0), WAIT_FAILED);
        cJSON_Delete(o);
    }
    /* a one-shot that cannot start never gets to Succeeded or Failed either */
    {
        cJSON *pull = sb("Creating", "False", "ImagePullBackOff", "Back-off pulling image", 0, NULL);
        CHECK_INT(wait_judge(parsed("phase=Succeeded"), pull, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
        CHECK_STR(why, "cannot start: ImagePullBackOff: Back-off pulling image");
        CHECK_INT(wait_judge(parsed("phase=Failed"), pull, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
        CHECK_INT(wait_judge(parsed("phase=Stopped"), pull, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_PENDING);
        cJSON_Delete(pull);
    }
    /* a finished one-shot is what logs -f and phase=Failed wait for */
    cJSON *o = sb("Failed", "False", "Failed", "the command exited with code 7", 0, NULL);
    struct wait_for st = {.kind = WAIT_STARTED};
    CHECK_INT(wait_judge(&st, o, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    CHECK_INT(wait_judge(parsed("phase=Failed"), o, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_MET);
    CHECK_INT(wait_judge(parsed("phase=Succeeded"), o, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
    cJSON_Delete(o);
    /* paused or stopped, and nobody starts it */
    o = sb("Stopped", "False", "Paused", "stopped by spec.paused", 1, NULL);
    CHECK_INT(wait_judge(parsed("condition=Ready"), o, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
    CHECK_STR(why, "is paused (spec.paused); start it with 'yao-sandbox start s1'");
    cJSON_Delete(o);
    o = sb("Stopped", "False", "Idle", "idle for 24h", 0, NULL);
    CHECK_INT(wait_judge(parsed("phase=Running"), o, NULL, why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
    CHECK_STR(why, "is stopped (Idle: idle for 24h); start it with 'yao-sandbox start s1'");
    cJSON_Delete(o);
    /* deleted or being deleted while waiting for anything but deletion */
    CHECK_INT(wait_judge(parsed("condition=Ready"), NULL, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
    CHECK_STR(why, "was deleted");
    o = sb("Running", "True", "PodReady", NULL, 0, "s1");
    CHECK_INT(wait_judge(parsed("phase=Stopped"), o, "u-2", why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
    CHECK_STR(why, "was deleted");
    cJSON_AddStringToObject(cJSON_GetObjectItem(o, "metadata"), "deletionTimestamp", "2026-12-02T00:00:00Z");
    CHECK_INT(wait_judge(parsed("phase=Stopped"), o, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_FAILED);
    CHECK_STR(why, "is being deleted");
    CHECK_INT(wait_judge(parsed("delete"), o, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_PENDING);
    CHECK_STR(prog, "Running (being deleted), Ready=True (PodReady)");
    cJSON_Delete(o);
    CHECK_INT(wait_reason_is_permanent("ContainerCreating"), 0);
    CHECK_INT(wait_reason_is_permanent(NULL), 0);
}

/* The scheduler's refusal is judged on caches that may be a moment behind (a PVC created
 * just before the pod: "persistentvolumeclaim ... not found"): WAIT_FAILING, which the
 * waiter turns into a failure only once it has held (test_cli_waiter.c). */
TEST(the_schedulers_refusal_is_failing_not_failed) {
    char why[300], prog[300];
    cJSON *o = sb("Creating", "False", "Unschedulable", "0/3 nodes are available: persistentvolumeclaim \"w\" not found.", 0, NULL);
    CHECK_INT(wait_judge(parsed("condition=Ready"), o, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_FAILING);
    CHECK_STR(why, "cannot start: Unschedulable: 0/3 nodes are available: persistentvolumeclaim \"w\" not found.");
    struct wait_for st = {.kind = WAIT_STARTED};
    CHECK_INT(wait_judge(&st, o, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_FAILING);
    CHECK_STR(prog, "Creating, Ready=False (Unschedulable: 0/3 nodes are available: persistentvolumeclaim \"w\" not found.)");
    /* a wait that does not need it to run is not concerned */
    CHECK_INT(wait_judge(parsed("phase=Stopped"), o, "u-1", why, sizeof(why), prog, sizeof(prog)), WAIT_PENDING);
    CHECK_INT(wait_reason_is_permanent("Unschedulable"), 2);
    CHECK_INT(wait_reason_is_permanent("ImagePullBackOff"), 1);
    cJSON_Delete(o);
}
