/* cli/keepalive.h — how often the CLI marks a sandbox used while a command, a copy or a
 * port-forward runs in it (pure: no I/O). The controller publishes the policy in force in
 * the Sandbox's status: status.idleTimeout (from spec, class or its flag) and
 * status.reclaimAfter (the class's reclaim window; absent when never reclaimed). The
 * sandbox is touched at a third of the smaller of them, so neither runs out under a
 * session. From an older controller (neither in status) spec.idleTimeout is all there is,
 * and when that is unset too the interval is the ceiling. */
#ifndef YAO_CLI_KEEPALIVE_H
#define YAO_CLI_KEEPALIVE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#define CLI_TOUCH_MIN_MS 1000
#define CLI_TOUCH_MAX_MS 60000

/* A third of window_ms, at least CLI_TOUCH_MIN_MS and at most CLI_TOUCH_MAX_MS (the
 * most, too, when the window is not known: window_ms <= 0). */
int64_t cli_touch_interval_ms(int64_t window_ms);

/* The shortest window after which the sandbox sb (a Sandbox object) stops counting as
 * used: the smaller of status.idleTimeout and status.reclaimAfter; status.idleTimeout
 * missing or unparsable → spec.idleTimeout in its place. 0 when none is known. */
int64_t cli_keepalive_window_ms(const cJSON *sb);

/* How often a session marks sb used: cli_touch_interval_ms of its window. */
int64_t cli_touch_interval_of(const cJSON *sb);

#endif
