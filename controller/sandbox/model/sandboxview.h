/* sandbox/model/sandboxview.h — a Sandbox as the controller reads it, parsed once: its metadata,
 * the annotations and spec fields read outside spec.c, and its status (phase, times,
 * conditions, the run). A pass parses the Sandbox it took from the cache (or read fresh)
 * once, an informer handler the old and the new object once, and hands the view on; no
 * other code reads a Sandbox by path.
 *
 * Lifetime: the view holds no memory of its own. Its strings and JSON members point into
 * the cJSON object it was parsed from (obj), and are valid while that object lives and is
 * not changed: one pass, or one handler call. The caches keep packed JSON (objpack.c) and
 * nothing of the view, so it costs no memory per cached Sandbox. Pure: no I/O. */
#ifndef YAO_SANDBOX_SANDBOXVIEW_H
#define YAO_SANDBOX_SANDBOXVIEW_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/model/objects.h"
#include "sandbox/model/termination.h"

/* One condition of status.conditions (all NULL when absent). */
struct sbx_condition_view {
    int present;
    const char *status, *reason, *message, *last_transition;
};

struct sbx_sandbox_view {
    const cJSON *obj;                 /* what it was parsed from (spec.c parses its spec) */
    struct sbx_meta meta;
    /* metadata.annotations, as written (checked where they are used) */
    const char *last_used_at;         /* SBX_ANN_LAST_USED */
    const char *last_activity;        /* SBX_ANN_LAST_ACTIVITY */
    /* spec: the fields read outside spec.c */
    const char *user_id, *chat_id, *class_name, *lifecycle;   /* NULL when absent */
    int paused;                       /* spec.paused is true */
    /* status */
    const cJSON *status;              /* the status object or NULL: what a status write diffs and keeps */
    const char *phase, *pod_name, *workspace_claim, *status_lifecycle, *status_class_name;
    const char *ignored_last_used_at; /* status.ignoredLastUsedAt */
    const char *last_used_text, *started_text, *stopped_text;   /* the times as written */
    int64_t last_used_ms, started_ms, stopped_ms;   /* 0 when absent or unparseable */
    int64_t warm_idle_since_ms;       /* status.warmIdleSince (0: not warm-idle) */
    int64_t observed_generation;      /* 0 when absent */
    struct sbx_condition_view ready, workspace, accepted;
    const cJSON *conditions;          /* status.conditions (an array) or NULL: the other types are kept */
    struct sbx_termination last_termination;   /* status.lastTermination */
    struct {
        int present;                  /* status.run is there */
        int finished;                 /* it has finishedAt */
        int exit_code;                /* -1 when finished without one */
        int64_t started_ms, finished_ms;   /* 0 when absent or unparseable */
        const char *started_text, *finished_text;   /* as written */
    } run;
};

/* Parse sb into v (every field absent when sb is NULL or not an object). */
void sbx_sandbox_view_parse(const cJSON *sb, struct sbx_sandbox_view *v);

/* What only people are shown of a Sandbox (the CLI's get, list, describe, logs, the exec
 * session's working directory), as written: parsed on demand by sbx_sandbox_view_shown, never
 * by a controller pass. Same lifetime as the view: it points into the object. Numbers are
 * valid only where their has_ flag is set; arrays and objects are NULL when absent or of
 * another type (their members are read one level deep by the caller). */
struct sbx_sandbox_shown {
    const char *api_version, *kind;
    /* spec */
    const char *image, *idle_timeout, *memory, *cpu;          /* spec.image, idleTimeout, resources */
    const char *workspace_size, *mount_path, *workspace_storage_class;   /* spec.workspace */
    const cJSON *ports, *env;         /* spec.ports, spec.env (arrays) */
    const cJSON *run;                 /* spec.run (an object: command, workingDir, timeout) */
    int has_ttl_after_finished;
    int64_t ttl_after_finished_s;     /* spec.ttlSecondsAfterFinished */
    /* status */
    const char *pod_ip, *node_name;   /* status.podIP, status.nodeName */
    const char *status_idle_timeout, *reclaim_after, *idle_at;   /* status.idleTimeout, reclaimAfter, idleAt */
    int has_queue_position, has_restart_count, has_observed_generation;
    int64_t queue_position, restart_count, observed_generation;
    int has_run_exit_code, run_truncated;
    int64_t run_exit_code;            /* status.run.exitCode */
    const char *run_stdout, *run_stderr;   /* status.run's kept tails */
};
void sbx_sandbox_view_shown(const cJSON *sb, struct sbx_sandbox_shown *out);
/* The lifecycle in force: spec.lifecycle, else the default the status recorded; NULL if neither. */
const char *sbx_sandbox_lifecycle(const struct sbx_sandbox_view *v);
/* Is the phase exactly want? */
int sbx_sandbox_phase_is(const struct sbx_sandbox_view *v, const char *want);

#endif
