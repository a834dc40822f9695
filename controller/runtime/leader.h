/* runtime/leader.h — leader election with a coordination.k8s.io/v1 Lease, after client-go's
 * leaderelection: acquire (create, or take over a lease whose record has not changed for
 * leaseDuration by our own clock), renew every retry period, and give up leadership when
 * a renewal has not succeeded within the renew deadline. Optimistic concurrency
 * (resourceVersion on update) makes two candidates never both win. One thread. */
#ifndef YAO_RUNTIME_LEADER_H
#define YAO_RUNTIME_LEADER_H

#include <stdint.h>
#include "kube/rest.h"

struct leader_options {
    const char *namespace_, *name;   /* the Lease */
    const char *identity;            /* this candidate (hostname_random) */
    int64_t lease_duration_ms, renew_deadline_ms, retry_period_ms;
    void (*on_started)(void *ud);    /* became leader (called on the election thread) */
    void (*on_stopped)(void *ud);    /* lost leadership (called on the election thread) */
    void *ud;
};

struct leader_elector;

struct leader_elector *leader_new(struct kube_client *c, const struct leader_options *o);
int leader_start(struct leader_elector *le);
/* Stop the loop; a leader releases the lease (clears holderIdentity) so a standby can
 * take over at once. */
void leader_stop(struct leader_elector *le);
void leader_free(struct leader_elector *le);
int leader_is_leader(struct leader_elector *le);
uint64_t leader_transitions_seen(struct leader_elector *le);

/* Pure: may a candidate take a lease held by someone else? observed_ms is when we first
 * saw the current record (holder + renewTime) unchanged; true when that is at least
 * lease_duration ago, or the holder is empty. */
int leader_can_take(const char *holder, int64_t observed_ms, int64_t now_ms, int64_t lease_duration_ms);

#endif
