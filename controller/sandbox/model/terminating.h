/* sandbox/model/terminating.h — the namespaces being deleted, as the controller learnt them:
 * one that refused a create as being deleted (a pass's error of reason
 * KUBE_REASON_NAMESPACE_TERMINATING, kube/rest.h) has its passes skipped for
 * SBX_TERMINATING_HOLD_MS (each refusal starts the hold again). The API server refuses
 * every create there until the namespace is gone, and the deletion of its Sandboxes queues
 * them anyway: retrying only loads the deletion (a namespace of 10,000 Sandboxes whose
 * pods went first drew 45,000 refused pod creates). Pure bookkeeping with its own lock;
 * the clock is passed in. */
#ifndef YAO_SANDBOX_TERMINATING_H
#define YAO_SANDBOX_TERMINATING_H

#include <stdint.h>

/* A namespace made again under the same name after the old one is gone waits at most this
 * long. */
#define SBX_TERMINATING_HOLD_MS 30000

struct sbx_terminating;
struct sbx_terminating *sbx_terminating_new(void);
void sbx_terminating_free(struct sbx_terminating *t);
/* Namespace ns refused a create as being deleted, at now_ms. (Out of memory: not noted;
 * its passes go on as before.) */
void sbx_terminating_note(struct sbx_terminating *t, const char *ns, int64_t now_ms);
/* Milliseconds the passes of namespace ns are still skipped at now_ms (0: not, or no
 * longer; an expired hold is forgotten). */
int64_t sbx_terminating_left(struct sbx_terminating *t, const char *ns, int64_t now_ms);

#endif
