/* sandbox/io/children.h — the objects a Sandbox owns (its claim, pod, Service,
 * NetworkPolicy, copier): whose an object of the expected name is, where to find one
 * (the cache, or the API server when another shard's), and how one is created (expected
 * until the cache shows it, a 409 read to tell ours from a stranger's). */
#ifndef YAO_SANDBOX_CHILDREN_H
#define YAO_SANDBOX_CHILDREN_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "runtime/informer.h"
#include "sandbox/io/deps.h"
#include "sandbox/model/objects.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/records.h"
#include "sandbox/model/sandboxview.h"

/* Ours (controlled by the Sandbox of uid), someone else's, or being deleted? obj is there
 * or not (NULL), m its metadata. */
enum sbx_object_state sbx_child_state(const cJSON *obj, const struct sbx_meta *m, const char *uid);
/* sbx_child_state for an object whose metadata is not read yet. */
enum sbx_object_state sbx_child_state_of(const cJSON *obj, const char *uid);
/* ns/resource/name: from the cache inf, or (sharded: another shard's objects are not in
 * this replica's caches) read from the API server under api ("/api/v1", "/apis/G/V"): a
 * list by name (the controller lists Sandboxes, it is not granted get on them). A new
 * object (the caller deletes it) or NULL. */
cJSON *sbx_cached_or_read(const struct sbx_deps *deps, struct informer *inf, const char *ns, const char *api,
                          const char *resource, const char *name);
/* Create obj (not consumed) as ns/resource/name for the Sandbox of uid. 0 if created or
 * already there and ours; 1 if the name belongs to someone else; -1 on error (err). What
 * is created is expected (kind, records.h) until the cache shows it, so that an echo of
 * the Sandbox's own status write does not POST it again. */
int sbx_child_create(const struct sbx_deps *deps, const char *ns, const char *resource, enum sbx_expect_kind kind,
                     cJSON *obj, const char *name, const char *uid, struct kube_error *err);
/* The SandboxClass a pod of Sandbox sb was built under ("" = none): its SBX_ANN_CLASS; a
 * pod made by an earlier controller has none: the class the Sandbox's status last
 * recorded. NULL when neither tells (taken as the current class); pod NULL: no pod. */
const char *sbx_pod_built_class(const struct sbx_meta *pod, const struct sbx_sandbox_view *sb);

#endif
