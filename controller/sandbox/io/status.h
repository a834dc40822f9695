/* sandbox/io/status.h — what the controller tells about a Sandbox (status.c): its status
 * (written only when it changed, or conditionally as the fence before anything is
 * destroyed), the Sandbox DELETE with its preconditions, Events, and the checks of the
 * last-used-at annotation. */
#ifndef YAO_SANDBOX_STATUS_H
#define YAO_SANDBOX_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/io/deps.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/sandboxview.h"

/* Each function takes the Sandbox as its view (sandboxview.h), parsed once by the caller;
 * the JSON it builds keeps from the old status what the view's status member holds. */

/* One Event on the Sandbox sb: queued for the recorder's thread, never waits. */
void sbx_event_record(const struct sbx_deps *deps, const struct sbx_sandbox_view *sb, const char *type, const char *reason,
                      const char *msg);
/* An Event when the Sandbox's state changed in a way a user cares about (o → d). */
void sbx_event_transition(const struct sbx_deps *deps, const struct sbx_sandbox_view *sb, const struct sbx_observed *o,
                          const struct sbx_decision *d, const char *pod_name);
/* last-used-at in the future: rewritten to now (conditional on sb's version), with a
 * Warning Event. 0, SBX_STALE or -1. */
int sbx_last_used_rewrite(const struct sbx_deps *deps, const char *ns, const char *name, const struct sbx_sandbox_view *sb,
                          const char *value, int64_t now, struct kube_error *err);
/* last-used-at unparseable: a Warning Event (once per value); the annotation is ignored. */
void sbx_last_used_warn_invalid(const struct sbx_deps *deps, const struct sbx_sandbox_view *sb, const char *value);
/* The status the decision d describes (pod, pod_name, claim as observed). NULL: out of memory. */
cJSON *sbx_status_desired(const struct sbx_sandbox_view *sb, const struct sbx_decision *d, const cJSON *pod,
                          const char *pod_name, const char *claim, int64_t now);
/* Write st as sb's status when it differs (always with fence_rv: the fence before a
 * destructive act), conditional on the resourceVersion decided on; new_rv (may be NULL)
 * receives the version after a fenced write. 0, SBX_STALE (409, or a fenced write found
 * the Sandbox gone), or -1. */
int sbx_status_write(const struct sbx_deps *deps, const char *ns, const char *name, const struct sbx_sandbox_view *sb, cJSON *st,
                     const char *fence_rv, char *new_rv, size_t new_rv_len, struct kube_error *err);
/* DELETE the Sandbox ns/name if it still has uid and resourceVersion rv. The HTTP status
 * (200/202 deleted, 404 already gone, 409 changed), or -1. */
long sbx_sandbox_delete(const struct sbx_deps *deps, const char *ns, const char *name, const char *uid,
                        const char *rv, struct kube_error *err);
/* Status Pending, Ready=False/InvalidSpec, Accepted=False/reason (NULL: InvalidSpec) with
 * the message why; a Warning Event when that is new. */
int sbx_status_report_invalid(const struct sbx_deps *deps, const char *ns, const char *name, const struct sbx_sandbox_view *sb,
                              const char *reason, const char *why, struct kube_error *err);
/* A Warning Event of d->invalid_reason when the Accepted condition says something new. */
void sbx_event_invalid(const struct sbx_deps *deps, const struct sbx_sandbox_view *sb, const struct sbx_decision *d);

#endif
