/* sandbox/objects.h — small pure helpers on the Kubernetes objects the controller reads and
 * writes, shared by every part of sandbox/: API paths of the kinds it owns, RFC 3339
 * timestamps in and out of objects, the Ready condition. No controller state, no I/O: they
 * sit below reconcile.c and every subsystem it makes. */
#ifndef YAO_SANDBOX_OBJECTS_H
#define YAO_SANDBOX_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Collection path of a resource the controller owns in ns (NULL: all namespaces): a core
 * one ("pods", "persistentvolumeclaims", "services"), or "networkpolicies"
 * (networking.k8s.io/v1). */
void sbx_core_path(char *out, size_t n, const char *ns, const char *resource);
/* The timestamp at path of obj in ms since the epoch, or 0 (absent or unparseable). */
int64_t sbx_time_at(const cJSON *obj, const char *path);
/* Add an RFC 3339 timestamp member k to o (nothing when ms is 0 or less). */
void sbx_add_time_ms(cJSON *o, const char *k, int64_t ms);
/* The Ready condition of an object's status (a Sandbox or a pod), or NULL. */
const cJSON *sbx_ready_condition(const cJSON *obj);

#endif
