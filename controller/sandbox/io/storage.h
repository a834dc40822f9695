/* sandbox/io/storage.h — what the StorageClass cache (deps->storage_classes) answers about a
 * workspace claim's class: the cluster's default class, its binding mode, whether it
 * expands volumes, whether the operator marked its driver as one that clones. The cache
 * keeps only what these read (sbx_storage_class_shrink). */
#ifndef YAO_SANDBOX_STORAGE_H
#define YAO_SANDBOX_STORAGE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sandbox/io/deps.h"
#include "sandbox/decide/reconcile_decide.h"

/* The informer transform of the StorageClass cache: keep only name, resourceVersion, uid,
 * annotations (the default-class and clones marks), volumeBindingMode and
 * allowVolumeExpansion. */
void sbx_storage_class_shrink(cJSON *sc);
/* How claims of StorageClass name (NULL: the cluster's default class, its name then copied
 * to resolved when given) bind. An unknown class (not cached, the cache not readable, no
 * default class) is SBX_BINDING_UNKNOWN; a cached one without volumeBindingMode binds at
 * once (the API server's default). */
enum sbx_binding sbx_storage_class_binding(const struct sbx_deps *deps, const char *name, char *resolved, size_t len);
/* Does it bind volumes only for a consumer (WaitForFirstConsumer)? Unknown: no. */
int sbx_storage_class_binds_late(const struct sbx_deps *deps, const char *name, char *resolved, size_t len);
/* Does StorageClass name allow volume expansion? NULL or unknown: no. */
int sbx_storage_class_expands(const struct sbx_deps *deps, const char *name);
/* Does StorageClass name (NULL: the cluster's default) say its driver clones
 * (SBX_ANN_STORAGE_CLONES)? Unknown or unreadable: no. */
int sbx_storage_class_clones_by_name(const struct sbx_deps *deps, const char *name);

#endif
