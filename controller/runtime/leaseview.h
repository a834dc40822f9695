/* runtime/leaseview.h — a coordination.k8s.io/v1 Lease read once into a typed view: who
 * holds it, when it was renewed, for how long it holds. Read by the leader election
 * (leader.c) and by the shard barrier (sandbox/decide/shard_decide.c). The strings point into the
 * Lease object and live as long as it does. No I/O. */
#ifndef YAO_RUNTIME_LEASEVIEW_H
#define YAO_RUNTIME_LEASEVIEW_H

#include <stdint.h>
#include <cjson/cJSON.h>

struct kube_lease_view {
    const char *name;           /* metadata.name */
    const char *holder;         /* spec.holderIdentity ("" or NULL: nobody) */
    const char *renew_time;     /* spec.renewTime as written */
    const char *acquire_time;   /* spec.acquireTime as written */
    int64_t renewed_ms;         /* renew_time parsed; 0 when absent or not a time */
    int64_t duration_ms;        /* spec.leaseDurationSeconds x 1000; 0 when absent */
    int64_t transitions;        /* spec.leaseTransitions; 0 when absent */
};

/* Read lease (NULL: every field empty) into v. */
void kube_lease_view_read(const cJSON *lease, struct kube_lease_view *v);

/* Is the Lease held at now_ms by the clock of its renewTime: a holder, and renewed within
 * its duration? (The leader election itself does not trust another machine's clock: it
 * times a holder's record by its own, leader.c.) */
int kube_lease_held_at(const struct kube_lease_view *v, int64_t now_ms);

#endif
