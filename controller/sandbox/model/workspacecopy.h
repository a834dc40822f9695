/* sandbox/model/workspacecopy.h — forks filled by a copy (spec.workspace.from on a StorageClass
 * whose driver does not clone: local-path, most hostPath and block provisioners; EBS-like
 * drivers that only snapshot). The names and annotations that carry the copy's state on
 * the objects (so a restarted controller picks it up where it was), and the pure builder
 * of the copier pod: restricted Pod Security (non-root, no capabilities, RuntimeDefault
 * seccomp, no token), the source claim read-only and the new one mounted, `cp -a` (modes,
 * times and symbolic links kept), bounded by activeDeadlineSeconds, on the source's node
 * when a pod of the source runs there (ReadWriteOnce). No I/O: fork.c creates it and
 * reads its result. */
#ifndef YAO_SANDBOX_WORKSPACECOPY_H
#define YAO_SANDBOX_WORKSPACECOPY_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "sandbox/model/builders.h"
#include "sandbox/model/spec.h"

/* On a StorageClass: "true" = its driver clones a claim from a dataSource (CSI volume
 * cloning); a fork is then a clone. Anything else (or a class the controller cannot read):
 * a fork is filled by a copy. The operator says so: no API tells whether a driver clones. */
#define SBX_ANN_STORAGE_CLONES "sandbox.yaoapps.com/clones"
/* (On a fork's claim that a copy fills, SBX_ANN_FORK_FROM (spec.h) names the source claim.) */
/* On that claim once the copy succeeded: when (RFC 3339). Until then no sandbox pod. */
#define SBX_ANN_FORK_COPIED "sandbox.yaoapps.com/fork-copied"
/* On a copier pod: the name of the Sandbox whose workspace it fills. */
#define SBX_ANN_COPY_FOR "sandbox.yaoapps.com/copy-for"
/* A copy runs at most this long (the pod's activeDeadlineSeconds). */
#define SBX_COPY_DEADLINE_S 1800
/* A failed copy is shown this long, then tried again by a new copier. */
#define SBX_COPY_RETRY_MS 30000
/* The copier pod's one container (named like the sandbox's: the pod cache keeps it). Each
 * entry of the source's top directory is copied with cp -a (hidden ones too); the
 * workspace's own top directory is left as the provisioner made it (the copier's uid may
 * not own it, e.g. local-path's 0777 root directory: preserving its times would fail). */
#define SBX_COPY_SCRIPT                                                                           \
    "set -e; cd /yao/source; for f in * .[!.]* ..?*; do [ -e \"$f\" ] || [ -L \"$f\" ] || continue; "       \
    "cp -a \"$f\" /yao/workspace/; done; sync; echo copied"

/* The copier pod's name for the Sandbox of this uid: "yao-copy-<uid>" (a valid DNS label). */
void sbx_copier_name(const char *sandbox_uid, char *out, size_t outlen);

/* The copier pod of owner o (its metadata as the owned objects', but the ownerReference is
 * not the controller one: the pod is no sandbox, holds no running slot, and goes with the
 * Sandbox through the garbage collector), named name, running image with s's uid, copying
 * src_claim (read-only) into dst_claim; node: the node to run on (a source pod's), or
 * NULL to let the scheduler follow the volumes. NULL on ENOMEM or a missing argument. */
cJSON *sbx_build_copier(const struct sbx_owner *o, const struct sbx_spec *s, const char *name, const char *image,
                        const char *src_claim, const char *dst_claim, const char *node);

/* Does the StorageClass object sc (NULL: unknown) say its driver clones? */
int sbx_storage_class_clones(const cJSON *sc);

#endif
