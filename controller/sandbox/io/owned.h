/* sandbox/io/owned.h — writes to the objects a Sandbox owns (and to Sandboxes), each made
 * with a precondition so that it never touches an object created in between under the
 * same name: deletes with uid (and resourceVersion), merge patches of labels,
 * annotations or a spec with uid. Counted in deps->counters. */
#ifndef YAO_SANDBOX_OWNED_H
#define YAO_SANDBOX_OWNED_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sandbox/io/deps.h"

/* DELETE path with the preconditions uid and resourceVersion (rv NULL: uid alone),
 * background propagation. The HTTP status (err set unless 2xx, 404 or 409), or -1. */
long sbx_delete_preconditioned(const struct sbx_deps *deps, const char *path, const char *uid, const char *rv,
                               struct kube_error *err);
/* Delete ns/resource/name if it still has uid. 0 (deleted, gone or replaced) or -1. */
int sbx_delete_owned(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                     const char *uid, struct kube_error *err);
/* Merge-patch n entries keys[i] = values[i] into metadata.<map> ("labels", "annotations")
 * of ns/resource/name if it still has uid. 0 patched, 1 gone or replaced (404, 409), -1. */
int sbx_patch_owned_map(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                        const char *uid, const char *map, size_t n, const char *const *keys,
                        const char *const *values, struct kube_error *err);
/* Merge-patch spec (consumed, also on failure) as the whole of the patch's "spec" into
 * ns/resource/name if it still has uid (a merge patch replaces each list in it whole).
 * 0 patched, 1 gone or replaced (404, 409), -1 (err). */
int sbx_patch_owned_spec(const struct sbx_deps *deps, const char *ns, const char *resource, const char *name,
                         const char *uid, cJSON *spec, struct kube_error *err);

#endif
