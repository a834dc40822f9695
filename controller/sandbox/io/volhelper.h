/* sandbox/io/volhelper.h — the I/O half of the volume helper guard: one GET of the pod
 * yao-vol-<uid> (volhelper_decide.h has the rule). */
#ifndef YAO_SANDBOX_VOLHELPER_H
#define YAO_SANDBOX_VOLHELPER_H

#include <stddef.h>

#include "sandbox/io/deps.h"

/* 1 when a volume helper holds the workspace of Sandbox uid in namespace ns, 0 when none
 * does (no such pod, or one that ended or is not a helper of it), -1 with err when the
 * API server could not be asked. Read from the API server, not a cache: the controller's
 * pod informer sees only its own pods, and a helper made a moment ago must count. */
int sbx_volume_helper_busy(const struct sbx_deps *deps, const char *ns, const char *uid, struct kube_error *err);

#endif
