/* sandbox/decide/orphans_decide.h — which objects carrying the controller's labels have no living
 * owner (pure; orphans.c deletes them). */
#ifndef YAO_SANDBOX_ORPHANS_DECIDE_H
#define YAO_SANDBOX_ORPHANS_DECIDE_H

#include <cjson/cJSON.h>

/* Is obj (a pod, claim, Service or NetworkPolicy) one the controller made for a Sandbox,
 * left with no owner at all? Labelled app.kubernetes.io/managed-by=yao-sandbox with a
 * non-empty sandbox.yaoapps.com/name, not in a warm pool (sandbox.yaoapps.com/warm-pool:
 * pool claims of no class and binder pods are the pool's), not being deleted, and with no
 * ownerReferences. The controller makes every such object with a reference to its Sandbox
 * (the sandbox pod, claim, Service and NetworkPolicy as controller, a fork's copier pod as
 * a plain owner) in the same request that creates it, and moves a warm claim's labels and
 * reference in one patch; so an object in this state lost its owner afterwards:
 * `kubectl delete sandbox --cascade=orphan` (the garbage collector strips the references
 * of the dependents, then deletes the Sandbox) or a hand edit. Its Sandbox is gone, or is
 * not its owner any longer (owners are by uid): the object is deleted, with its uid as a
 * precondition. 1 yes, 0 no (also for NULL). */
int sbx_orphan_ownerless(const cJSON *obj);

#endif
