/* cli/describe.h — `yao-sandbox describe`: a Sandbox as kubectl describe shows an object
 * (metadata, spec, status with the one-shot run, conditions) with the Events recorded for
 * it, oldest first. Pure: the Sandbox and its Events in, text out; fetching them is
 * cmd_observe.c's. */
#ifndef YAO_CLI_DESCRIBE_H
#define YAO_CLI_DESCRIBE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"

/* Append the description of sb to out; events is the items array of an EventList for it
 * (NULL: they could not be read, said so under Events). Ages are relative to now_ms.
 * 0, or -1 when out of memory. */
int describe_render(const cJSON *sb, const cJSON *events, int64_t now_ms, struct dynbuf *out);

#endif
