/* sandbox/resize.h — warm-idle's I/O: a sandbox pod's CPU resized in place (resize.c).
 * The decisions (when, to what) are sandbox/reconcile_decide.c's. */
#ifndef YAO_SANDBOX_RESIZE_H
#define YAO_SANDBOX_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#include "sandbox/deps.h"

/* Set the sandbox container's CPU request and limit (millicores) of pod ns/name through
 * its resize subresource (Kubernetes >= 1.33), a strategic merge patch that carries the
 * pod's uid and resourceVersion as preconditions: the pod the decision saw, unchanged.
 * 0 done; SBX_STALE the pod changed or went (409, 404: decide again on what the cache
 * shows next); -1 with err (the API server refused it, e.g. no resize subresource). */
int sbx_pod_resize_cpu(const struct sbx_deps *deps, const char *ns, const char *name, const char *uid,
                       const char *resource_version, int64_t request_millis, int64_t limit_millis, char *err,
                       size_t errlen);

#endif
