/* sandbox/capacity.c — the running cap (YAO_SANDBOX_MAX): pods in the cache that hold a
 * slot, reservations in the Sandbox records for pods just created, and oldest-first
 * admission of the Sandboxes that wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kjson.h"
#include "runtime/log.h"
#include "sandbox/reconcile_int.h"

struct capacity_ctx {
    struct sbx_controller *ctl;
    const char *self_key;
    int64_t self_created;
    int running;          /* pods of ours that are not terminating */
    int older_waiting;    /* sandboxes created before us, waiting for capacity */
};

/* Count pods that hold a slot. */
static int count_running(void *ud, const char *key, const cJSON *pod) {
    struct capacity_ctx *c = ud;
    if (!kj_str(pod, "metadata.deletionTimestamp")) c->running++;
    return 0;
}

/* Count sandboxes older than us that wait for capacity (oldest-first admission). */
static int count_older_waiting(void *ud, const char *key, const cJSON *sb) {
    struct capacity_ctx *c = ud;
    const cJSON *ready = sbx_ready_condition(sb);
    const char *reason = kj_str(ready, "reason");
    if (!reason || strcmp(reason, SBX_REASON_CAPACITY) != 0 || !strcmp(key, c->self_key)) return 0;
    int64_t created = sbx_time_at(sb, "metadata.creationTimestamp");
    if (created < c->self_created || (created == c->self_created && strcmp(key, c->self_key) < 0))
        c->older_waiting++;
    return 0;
}

/* May this sandbox start a pod? Reserves a slot in its record when it may. Counting and
 * reserving happen under one lock, so several workers cannot overshoot the cap. */
int sbx_capacity_admit(struct sbx_controller *ctl, const char *key, const char *uid, int64_t created, int64_t now) {
    if (ctl->opt.max_running <= 0) return 1;
    struct capacity_ctx c = {.ctl = ctl, .self_key = key, .self_created = created};
    informer_foreach(ctl->pods, count_running, &c);
    informer_foreach(ctl->sandboxes, count_older_waiting, &c);
    pthread_mutex_lock(&ctl->lock);
    int admitted = sbx_records_reserved(&ctl->records, uid, now);
    if (!admitted) {
        int reserved = sbx_records_live_reservations(&ctl->records, now, NULL);
        admitted = c.running + reserved + c.older_waiting < ctl->opt.max_running;
        if (admitted) sbx_records_reserve(&ctl->records, uid, now + RESERVATION_MS);
    }
    pthread_mutex_unlock(&ctl->lock);
    return admitted;
}

/* Release uid's reservation (its pod is in the cache now, or it no longer wants one). */
void sbx_capacity_release(struct sbx_controller *ctl, const char *uid) {
    sbx_records_release(&ctl->records, uid);
}
