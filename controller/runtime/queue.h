/* runtime/queue.h — the work queue of object keys ("namespace/name"), after client-go's
 * rate-limited delaying queue: a key is queued at most once (dedup); a key being processed
 * is never handed to a second worker, and if it is added meanwhile it is queued again when
 * the first worker is done; delayed adds keep only the earliest due time per key;
 * per-key exponential backoff for failures (5 ms × 2^n, capped). Thread-safe; any number
 * of workers block in queue_get.
 *
 * Fairness between namespaces (not in client-go): with a namespace limit N, at most N keys
 * of one namespace (the part of the key before '/') are handed to workers at once. A ready
 * key whose namespace is at its limit is parked — still queued, still deduplicated — and
 * the next ready key of another namespace goes first; a parked key is ready again (ahead
 * of the others) as soon as one of its namespace's keys is done. With N = workers - 1,
 * reconciles stuck in one slow namespace never hold every worker.
 * Spare slots keep that from idling workers when one namespace has all the work (the
 * common single-namespace install): a namespace may have up to N + spare keys in flight
 * while every key of it in flight was handed out less than a second ago. Reconciles that
 * stall (a webhook timing out) make it fall back to N, so the reserved slot is free again
 * once one of them ends; a key of another namespace waits at most for one quick one. */
#ifndef YAO_RUNTIME_QUEUE_H
#define YAO_RUNTIME_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct workqueue;

/* base_ms/cap_ms: failure backoff (client-go: 5 ms, 1000 s). NULL on ENOMEM. */
struct workqueue *queue_new(int64_t base_ms, int64_t cap_ms);
void queue_free(struct workqueue *q);

/* At most limit keys of one namespace processed at once (0 = no limit, the default), and
 * up to spare more while that namespace's keys in flight are all quick (see above). */
void queue_set_namespace_limit(struct workqueue *q, int limit, int spare);

/* Queue key now. */
void queue_add(struct workqueue *q, const char *key);
/* Queue key after delay_ms (<= 0: now). If key is already waiting with an earlier due
 * time, that one stands. */
void queue_add_after(struct workqueue *q, const char *key, int64_t delay_ms);
/* Queue key after its failure backoff, and count one more failure. */
void queue_add_rate_limited(struct workqueue *q, const char *key);
/* Forget key's failures (after a successful sync). */
void queue_forget(struct workqueue *q, const char *key);
/* Failures counted for key. */
unsigned queue_failures(struct workqueue *q, const char *key);

/* Block until a key is ready; returns a malloc'd copy the caller frees after calling
 * queue_done, or NULL once the queue is shut down. */
char *queue_get(struct workqueue *q);
/* Mark key processed; re-queues it if it was added while being processed. */
void queue_done(struct workqueue *q, const char *key);
/* Wake every waiter; queue_get returns NULL from now on. */
void queue_shutdown(struct workqueue *q);

/* Keys ready now (the queue depth metric; parked keys included), and keys waiting for a
 * due time. */
size_t queue_len(struct workqueue *q);
size_t queue_waiting(struct workqueue *q);

#endif
