/* sandbox/io/class.h — the SandboxClass and Namespace caches and the choice of a Sandbox's
 * class (class.c; what a class means is class_decide.h). */
#ifndef YAO_SANDBOX_CLASS_H
#define YAO_SANDBOX_CLASS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sandbox/model/sandboxview.h"

#include "sandbox/decide/class_decide.h"
#include "sandbox/io/deps.h"

struct sbx_classes;
/* Told of every SandboxClass change (old, cur: either may be NULL), after the Sandboxes
 * of that class were queued: the warm pools follow their classes. */
typedef void (*sbx_class_change_fn)(void *ud, const cJSON *old, const cJSON *cur);

/* The two informers (not started). NULL: out of memory. */
struct sbx_classes *sbx_classes_new(const struct sbx_deps *deps, sbx_class_change_fn on_change, void *ud);
/* Probe the reads and start the informers that are allowed. 0 or -1. */
int sbx_classes_start(struct sbx_classes *c);
void sbx_classes_stop(struct sbx_classes *c);
void sbx_classes_free(struct sbx_classes *c);
/* True once the class cache is loaded (or classes are off). */
int sbx_classes_synced(struct sbx_classes *c);
/* Were SandboxClasses readable at start? Otherwise every Sandbox has the flag defaults. */
int sbx_classes_readable(struct sbx_classes *c);
/* The class of sb (spec.className, else its namespace's default class, else the cluster's
 * default): 0 with *found = 1 and out filled (sbx_class_free it), 0 with *found = 0 (no
 * class: the flag defaults), -1 with the InvalidSpec message in why and its reason in
 * *reason (SBX_REASON_INVALID: a named class missing or invalid; SBX_REASON_CLASS_NOT_ALLOWED:
 * the class does not serve sb's namespace). */
int sbx_class_for(struct sbx_classes *c, const struct sbx_sandbox_view *sb, struct sbx_class *out, int *found,
                  const char **reason, char *why, size_t whylen);
/* The cached SandboxClass name (a copy: cJSON_Delete it), or NULL (none, or classes off). */
cJSON *sbx_classes_get(struct sbx_classes *c, const char *name);
/* Visit every cached SandboxClass (none when classes are off); visit returns non-zero to stop. */
void sbx_classes_foreach(struct sbx_classes *c, int (*visit)(void *ud, const char *key, const cJSON *obj), void *ud);
/* May cls serve namespace ns (its spec.allowedNamespaces, against the Namespace cache)?
 * 1, or 0 with the reason in why. */
int sbx_classes_allow_namespace(struct sbx_classes *c, const struct sbx_class *cls, const char *ns, char *why,
                                size_t whylen);
/* The SandboxClass informer itself, for its list/watch counters in /metrics. */
struct informer *sbx_classes_cache(struct sbx_classes *c);

#endif
