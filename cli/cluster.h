/* cli/cluster.h — the CLI's view of a Sandbox through the API server: connecting with a
 * kubeconfig, reading and patching the Sandbox, waiting for it by watch (cli/waiter.c), and
 * making sure it runs before a command (unpausing it and marking it used). */
#ifndef YAO_CLI_CLUSTER_H
#define YAO_CLI_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

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

struct wait_for;
/* Wait for the Sandbox by watching it (cli/waiter.c) until w is met, at most timeout_ms;
 * uid (may be NULL: the first one seen) is the Sandbox meant, so a successor of the same
 * name counts as the deletion of ours. Ends early, with the reason, when the Sandbox will
 * not get there by itself (cli/waitcond.h). On a terminal a progress line on stderr
 * follows phase and reason. 0 with *out (when out is not NULL: the Sandbox as last seen,
 * NULL for a deletion; caller deletes), or 1 (error printed). */
int cluster_wait(struct cli *c, const char *name, const struct wait_for *w, const char *uid, int64_t timeout_ms,
                 cJSON **out);
/* The sandbox, running: unpause it if paused, mark it used (which also wakes an idle
 * long-running sandbox), and wait until it runs; notes c->touch_interval_ms, c->pod and
 * c->pod_started. 0 with *out (caller deletes), or 1 (error printed). */
int cluster_ensure_running(struct cli *c, const char *name, cJSON **out);

#endif
