/* cli/cluster.h — the CLI's view of a Sandbox through the API server: connecting with a
 * kubeconfig, reading and patching the Sandbox, waiting for it to run or stop, and making
 * sure it runs before a command (unpausing it and marking it used). */
#ifndef YAO_CLI_CLUSTER_H
#define YAO_CLI_CLUSTER_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"

/* Sandbox names are DNS subdomains: checked before they go into a URL. 1 if valid. */
int cluster_valid_name(const char *s);
/* API path of a Sandbox in the current namespace. */
void cluster_sandbox_path(const struct cli *c, const char *name, char *out, size_t n);
/* Load the kubeconfig and make the client (c->kc, c->ns). 0, or 1/2 (error printed). */
int cluster_connect(struct cli *c);
/* GET the Sandbox. 0 with *out (caller deletes), or 1 (error printed). */
int cluster_get(struct cli *c, const char *name, cJSON **out);
/* Merge-patch the Sandbox: last-used-at = now (touch), and spec.paused when paused >= 0.
 * 0 with the Sandbox as patched in *answer when answer is not NULL (caller deletes; may
 * be NULL if the answer was not an object), or 1 (error printed unless quiet). */
int cluster_patch(struct cli *c, const char *name, int touch, int paused, int quiet, cJSON **answer);
/* status.phase, "" when not set yet. */
const char *cluster_phase(const cJSON *sb);
/* The Ready condition's status, reason and message (each may be NULL). */
void cluster_ready(const cJSON *sb, const char **status, const char **reason, const char **message);

/* How often the CLI polls a Sandbox it waits for. */
#define CLUSTER_POLL_MS 200

enum cluster_want { CLUSTER_RUNNING, CLUSTER_STOPPED };
/* Poll the Sandbox until it is Running with a pod (or Stopped), at most
 * c->start_timeout_ms. 0 with *out (caller deletes), or 1 (error printed). */
int cluster_wait_for(struct cli *c, const char *name, enum cluster_want want, cJSON **out);
/* The sandbox, running: unpause it if paused, mark it used (which also wakes an idle
 * long-running sandbox), and wait until it runs; notes c->touch_interval_ms, c->pod and
 * c->pod_started. 0 with *out (caller deletes), or 1 (error printed). */
int cluster_ensure_running(struct cli *c, const char *name, cJSON **out);

#endif
