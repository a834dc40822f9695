/* runtime/leader.h — leader election with a coordination.k8s.io/v1 Lease, after client-go's
 * leaderelection: acquire (create, or take over a lease whose record has not changed for
 * leaseDuration by our own clock), renew every retry period, and give up leadership when
 * a renewal has not succeeded within the renew deadline. Optimistic concurrency
 * (resourceVersion on update) makes two candidates never both win. One thread.
 *
 * Fenced: leadership is valid until (send time of the last successful lease write) +
 * renew deadline, by the monotonic clock. Every Lease call is one attempt on a client of
 * the elector's own, whose timeout is the time left before that instant, so a throttled
 * (429 + Retry-After) or stalled API server cannot keep a stale leader alive. The fence
 * (leader_fence_remaining_ms, installed on the workers' client with kube_client_set_fence)
 * refuses writes from that instant on, whatever the election thread is doing; a standby
 * cannot take over before leaseDuration (> renew deadline) has passed on its own clock. */
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

/* c is the elector's own client: nothing else may use it (its retries are set to one
 * attempt and its timeout is changed before every call). Not owned. */
struct leader_elector *leader_new(struct kube_client *c, const struct leader_options *o);
int leader_start(struct leader_elector *le);
/* Stop the loop; a leader closes the fence, then releases the lease (clears
 * holderIdentity) so a standby can take over at once. On shutdown, close the fence and
 * drain the workers' writes (kube_client_drain_writes) before calling this. */
void leader_stop(struct leader_elector *le);
void leader_free(struct leader_elector *le);
/* Leading, and leadership confirmed within the renew deadline. */
int leader_is_leader(struct leader_elector *le);
/* The write fence: milliseconds during which writes are still allowed (<= 0: refuse).
 * A kube_fence_fn (ud = the elector); one atomic load and a clock read. */
int64_t leader_fence_remaining_ms(void *le);
/* leader_fence_remaining_ms(le) > 0. */
int leader_fence_ok(struct leader_elector *le);
/* Close the fence now (shutdown): writes are refused from here on; the lease is kept
 * until leader_stop releases it. */
void leader_fence_close(struct leader_elector *le);
uint64_t leader_transitions_seen(struct leader_elector *le);

/* Labels on the Lease: key = value on every write of ours from the next one on (value
 * NULL removes the label). At most LEADER_LABELS_MAX keys of < 64 bytes, values < 64.
 * The generation of the labels now (> 0), or -1. Thread-safe. */
#define LEADER_LABELS_MAX 4
int64_t leader_set_label(struct leader_elector *le, const char *key, const char *value);
/* The label generation our last successful Lease write carried: the labels of
 * generation g are on the Lease once this is >= g. */
uint64_t leader_labels_written(struct leader_elector *le);

/* Pure: may a candidate take a lease held by someone else? observed_ms is when we first
 * saw the current record (holder + renewTime) unchanged; true when that is at least
 * lease_duration ago, or the holder is empty. */
int leader_can_take(const char *holder, int64_t observed_ms, int64_t now_ms, int64_t lease_duration_ms);

#endif
