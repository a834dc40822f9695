/* sandbox/io/resize.h — warm-idle's I/O: a sandbox pod's CPU resized in place (resize.c).
 * The decisions (when, to what) are sandbox/decide/reconcile_decide.c's. */
#ifndef YAO_SANDBOX_RESIZE_H
#define YAO_SANDBOX_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#include "sandbox/io/deps.h"

/* Set the sandbox container's CPU request and limit (millicores) of pod ns/name through
 * its resize subresource (Kubernetes >= 1.33), a strategic merge patch that carries the
 * pod's uid and resourceVersion as preconditions: the pod the decision saw, unchanged.
 * 0 done; SBX_STALE the pod changed or went (409, or 404 with the pod gone: decide again
 * on what the cache shows next); SBX_RESIZE_REFUSED with err when the API server will not
 * resize this pod whatever the retries (422: a node without in-place resize, or a change
 * its validation forbids; 404 with the pod there: no resize subresource, Kubernetes < 1.33;
 * 403: no RBAC for pods/resize; 400, 405); -1 with err otherwise (5xx, 429, the network:
 * retried with backoff). */
#define SBX_RESIZE_REFUSED 2
int sbx_pod_resize_cpu(const struct sbx_deps *deps, const char *ns, const char *name, const char *uid,
                       const char *resource_version, int64_t request_millis, int64_t limit_millis, struct kube_error *err);

#endif
