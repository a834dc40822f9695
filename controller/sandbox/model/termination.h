/* sandbox/model/termination.h — one termination of the sandbox container, as the model reads it:
 * a container status's state.terminated or lastState.terminated, or a Sandbox's
 * status.lastTermination as the controller last wrote it; and that status field built from
 * one. Pure: cJSON in, a struct out (its strings point into the object read). */
#ifndef YAO_SANDBOX_TERMINATION_H
#define YAO_SANDBOX_TERMINATION_H

#include <stdint.h>

#include <cjson/cJSON.h>

struct sbx_termination {
    int present;
    const char *reason;              /* OOMKilled, Error, Completed, ... (NULL if none) */
    int exit_code;
    int64_t finished_ms;             /* 0 = unknown */
    int64_t started_ms;              /* state.terminated.startedAt (0 = unknown) */
    const char *message;             /* state.terminated.message (the run's framed tails), or NULL */
    const char *finished_text;       /* finishedAt as written (read, never written), or NULL */
};

/* A termination from {reason, exitCode, startedAt, finishedAt, message} (a containerStatus's
 * state.terminated, or a Sandbox's status.lastTermination); NULL → not present. Strings
 * point into obj. */
void sbx_termination_read(const cJSON *obj, struct sbx_termination *t);
/* status.lastTermination as a new object {reason, exitCode, finishedAt}; NULL when t is
 * not present or on ENOMEM. */
cJSON *sbx_termination_json(const struct sbx_termination *t);

#endif
