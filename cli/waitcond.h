/* cli/waitcond.h — what the CLI waits for on a Sandbox and how it judges each version of
 * it seen on the watch: met, keep waiting (with the progress line a terminal shows), or
 * give up now because the Sandbox is stuck in a way that will not heal by itself (an image
 * that cannot be pulled, no node for it, an invalid spec, a one-shot that failed...).
 * Pure: cJSON in, a verdict and text out; the watching is cluster.c's. */
#ifndef YAO_CLI_WAITCOND_H
#define YAO_CLI_WAITCOND_H

#include <stddef.h>

#include <cjson/cJSON.h>

enum wait_kind {
    WAIT_CONDITION,   /* condition=TYPE[=STATUS] (STATUS default True) */
    WAIT_PHASE,       /* phase=P */
    WAIT_DELETE,      /* gone (or replaced by a Sandbox with another uid) */
    WAIT_RUNNING,     /* phase Running with a pod, not paused: what exec and --wait need */
    WAIT_STOPPED,     /* phase Stopped */
    WAIT_STARTED,     /* its container has started: Running, Succeeded or Failed (logs -f) */
};

struct wait_for {
    enum wait_kind kind;
    char type[64];    /* WAIT_CONDITION: the condition type */
    char status[16];  /* WAIT_CONDITION: True, False or Unknown */
    char phase[32];   /* WAIT_PHASE */
    int starting;     /* we just asked it to start (unpaused, touched): Stopped is on its way out */
    int refusal_grace_ms;   /* how long the scheduler's refusal must hold before the wait gives
                             * up on it (WAIT_FAILING); 0: WAIT_REFUSAL_GRACE_MS */
};

/* The scheduler's "no node can take it" (Unschedulable) is a verdict on the cluster as its
 * caches saw it a moment ago: a PVC created just before the pod may not be in them yet
 * ("persistentvolumeclaim ... not found"), a node may be freed or added. A wait gives up
 * on it only once it has held this long; an image that cannot be pulled or an invalid spec
 * end it at once. */
#define WAIT_REFUSAL_GRACE_MS 10000

/* Parse --for: condition=Ready, condition=Ready=False, phase=Running, delete (kubectl's
 * spelling; the phase is matched without regard to case and stored as the API spells
 * it). 0, or -1 with err. */
int wait_for_parse(const char *s, struct wait_for *w, char *err, size_t errlen);

/* What the wait is for, in words: "condition Ready=True", "phase Succeeded", "deletion". */
void wait_for_describe(const struct wait_for *w, char *out, size_t n);

enum wait_verdict {
    WAIT_PENDING = 0,
    WAIT_MET = 1,
    WAIT_FAILED = -1,    /* will not get there by itself */
    WAIT_FAILING = -2,   /* will not unless the cluster changes (the scheduler's refusal): a
                          * failure once it has held for the grace (cli/waiter.c keeps time) */
};

/* Judge one version of the Sandbox (NULL: it is gone; uid, may be NULL or "": the one
 * waited for — a Sandbox of the same name with another uid is a successor, so ours is
 * gone). WAIT_FAILED with why ("cannot start: ImagePullBackOff: ...") when it will not get
 * there by itself; WAIT_FAILING with why ("cannot start: Unschedulable: ...") when it will
 * not unless the cluster changes; WAIT_PENDING with progress, one line such as "Creating, Ready=False
 * (ContainerCreating: ...)". why and progress may be NULL. */
enum wait_verdict wait_judge(const struct wait_for *w, const cJSON *sb, const char *uid, char *why, size_t whylen,
                             char *progress, size_t proglen);

/* 1 when a Ready reason means the Sandbox cannot get Ready without someone changing
 * something (the image, the spec, the cluster); 2 when it is the scheduler's refusal,
 * which a change in the cluster may lift by itself (WAIT_FAILING). */
int wait_reason_is_permanent(const char *reason);

#endif
