/* cli/waitcond.c — judging a Sandbox against what the CLI waits for (see waitcond.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli/waitcond.h"
#include "base/errfmt.h"
#include "kube/kjson.h"
#include "sandbox/model/sandboxview.h"

static const char *const phases[] = {"Pending", "Creating", "Running", "Stopping", "Stopped", "Succeeded", "Failed"};

int wait_for_parse(const char *s, struct wait_for *w, char *err, size_t errlen) {
    memset(w, 0, sizeof(*w));
    if (!s || !*s) {
        errfmt(err, errlen, "--for is required: condition=Ready, condition=TYPE=STATUS, phase=PHASE or delete");
        return -1;
    }
    if (!strcmp(s, "delete")) { w->kind = WAIT_DELETE; return 0; }
    if (!strncmp(s, "condition=", 10)) {
        const char *t = s + 10, *eq = strchr(t, '=');
        size_t tl = eq ? (size_t)(eq - t) : strlen(t);
        if (tl == 0 || tl >= sizeof(w->type)) {
            errfmt(err, errlen, "--for=%s: a condition type such as Ready", s);
            return -1;
        }
        memcpy(w->type, t, tl);
        const char *st = eq ? eq + 1 : "True";
        if (strcasecmp(st, "True") && strcasecmp(st, "False") && strcasecmp(st, "Unknown")) {
            errfmt(err, errlen, "--for=%s: the status is True, False or Unknown", s);
            return -1;
        }
        snprintf(w->status, sizeof(w->status), "%s", !strcasecmp(st, "True") ? "True" : !strcasecmp(st, "False") ? "False" : "Unknown");
        w->kind = WAIT_CONDITION;
        return 0;
    }
    if (!strncmp(s, "phase=", 6)) {
        for (size_t i = 0; i < sizeof(phases) / sizeof(*phases); i++)
            if (!strcasecmp(s + 6, phases[i])) {
                w->kind = WAIT_PHASE;
                snprintf(w->phase, sizeof(w->phase), "%s", phases[i]);
                return 0;
            }
        errfmt(err, errlen, "--for=%s: unknown phase (Pending, Creating, Running, Stopping, Stopped, Succeeded, Failed)", s);
        return -1;
    }
    errfmt(err, errlen, "--for=%s: expected condition=TYPE[=STATUS], phase=PHASE or delete", s);
    return -1;
}

void wait_for_describe(const struct wait_for *w, char *out, size_t n) {
    switch (w->kind) {
    case WAIT_CONDITION: snprintf(out, n, "condition %s=%s", w->type, w->status); break;
    case WAIT_PHASE: snprintf(out, n, "phase %s", w->phase); break;
    case WAIT_DELETE: snprintf(out, n, "deletion"); break;
    case WAIT_RUNNING: snprintf(out, n, "phase Running"); break;
    case WAIT_STOPPED: snprintf(out, n, "phase Stopped"); break;
    case WAIT_STARTED: snprintf(out, n, "its container to start"); break;
    }
}

int wait_reason_is_permanent(const char *reason) {
    static const char *const permanent[] = {
        "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
        "InvalidSpec", "NameConflict", "WorkspaceSourceForbidden", "WorkspaceSourceIncompatible",
        "WorkspaceCopyFailed",
    };
    if (!reason) return 0;
    if (!strcmp(reason, "Unschedulable")) return 2;
    for (size_t i = 0; i < sizeof(permanent) / sizeof(*permanent); i++)
        if (!strcmp(reason, permanent[i])) return 1;
    return 0;
}

/* Does the target need the sandbox to run? */
static int wants_run(const struct wait_for *w) {
    return w->kind == WAIT_RUNNING || w->kind == WAIT_STARTED ||
           (w->kind == WAIT_CONDITION && !strcmp(w->type, "Ready") && !strcmp(w->status, "True")) ||
           (w->kind == WAIT_PHASE && (!strcmp(w->phase, "Running") || !strcmp(w->phase, "Creating") ||
                                      !strcmp(w->phase, "Succeeded") || !strcmp(w->phase, "Failed")));   /* a run */
}

static const char *str_or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

enum wait_verdict wait_judge(const struct wait_for *w, const cJSON *sb, const char *uid, char *why, size_t whylen,
                             char *progress, size_t proglen) {
    char dummy_why[8], dummy_prog[8];
    if (!why) { why = dummy_why; whylen = sizeof(dummy_why); }
    if (!progress) { progress = dummy_prog; proglen = sizeof(dummy_prog); }
    why[0] = progress[0] = 0;
    struct sbx_sandbox_view v;
    sbx_sandbox_view_parse(sb, &v);
    const char *their_uid = v.meta.uid;
    int gone = !sb || (uid && *uid && their_uid && strcmp(uid, their_uid));
    if (gone) {
        if (w->kind == WAIT_DELETE) return WAIT_MET;
        snprintf(why, whylen, "was deleted");
        return WAIT_FAILED;
    }
    const char *phase = str_or(v.phase, "");
    const char *rs = v.ready.status, *reason = v.ready.reason, *msg = v.ready.message;
    int paused = v.paused;
    int deleting = v.meta.deleting;
    const char *pod = v.pod_name;

    /* the progress line: "Creating, Ready=False (ContainerCreating: pulling ...)" */
    char shortmsg[96] = "";
    if (reason && msg && *msg) snprintf(shortmsg, sizeof(shortmsg), ": %.80s%s", msg, strlen(msg) > 80 ? "..." : "");
    snprintf(progress, proglen, "%s%s%s%s%s%s%s%s", *phase ? phase : "no phase yet", deleting ? " (being deleted)" : "",
             rs ? ", Ready=" : "", rs ? rs : "", reason ? " (" : "", reason ? reason : "", shortmsg, reason ? ")" : "");

    if (w->kind == WAIT_DELETE) return WAIT_PENDING;
    if (deleting) {
        snprintf(why, whylen, "is being deleted");
        return WAIT_FAILED;
    }
    switch (w->kind) {
    case WAIT_CONDITION: {
        const char *st = kj_str(kj_condition(sb, w->type), "status");
        if (st && !strcmp(st, w->status)) return WAIT_MET;
        break;
    }
    case WAIT_PHASE:
        if (!strcmp(phase, w->phase)) return WAIT_MET;
        break;
    case WAIT_RUNNING:
        if (!strcmp(phase, "Running") && pod && *pod && !paused) return WAIT_MET;
        break;
    case WAIT_STOPPED:
        if (!strcmp(phase, "Stopped")) return WAIT_MET;
        break;
    case WAIT_STARTED:
        if (!strcmp(phase, "Running") || !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")) return WAIT_MET;
        break;
    case WAIT_DELETE:
        break;
    }
    /* Not there: will it get there by itself? */
    int finished = !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
    if (finished) {
        snprintf(why, whylen, "has finished (phase %s)%s%s", phase, msg && *msg ? ": " : "", msg ? msg : "");
        return WAIT_FAILED;
    }
    if (!wants_run(w)) return WAIT_PENDING;
    int permanent = wait_reason_is_permanent(reason);
    if (permanent) {
        snprintf(why, whylen, "cannot start: %s%s%s", reason, msg && *msg ? ": " : "", msg ? msg : "");
        return permanent == 2 ? WAIT_FAILING : WAIT_FAILED;
    }
    if (paused && !w->starting) {
        snprintf(why, whylen, "is paused (spec.paused); start it with '" "yao-sandbox start %s'", str_or(v.meta.name, "NAME"));
        return WAIT_FAILED;
    }
    if (!strcmp(phase, "Stopped") && !w->starting) {
        snprintf(why, whylen, "is stopped%s%s%s%s%s; start it with 'yao-sandbox start %s'", reason ? " (" : "",
                 reason ? reason : "", reason && msg && *msg ? ": " : "", reason && msg ? msg : "", reason ? ")" : "",
                 str_or(v.meta.name, "NAME"));
        return WAIT_FAILED;
    }
    return WAIT_PENDING;
}
