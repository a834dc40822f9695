/* runtime/leader.c — Lease-based leader election with a write fence (see leader.h). */
#include "runtime/leader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "kube/kjson.h"
#include "base/log.h"
#include "runtime/leaseview.h"

struct leader_elector {
    struct kube_client *client;
    struct leader_options o;
    char *ns, *name, *identity;
    pthread_t thread;
    int started;
    /* Flags between the election thread and its callers, all seq_cst: closing and
     * valid_until_ms form a store-then-load pair on each side (leader_fence_close stores
     * closing then valid_until_ms; the loop stores valid_until_ms then loads closing), and
     * only a single total order guarantees that one of the two sees the other, so a fence
     * once closed is never re-opened. Acquire/release would not. */
    atomic_int stop;
    atomic_int leading;          /* election thread's view: on_started called, on_stopped not */
    atomic_int closing;          /* leader_fence_close: shutting down, the fence stays shut */
    /* Monotonic ms until which leadership is confirmed (0 = not leading): the send time of
     * the last successful lease write + renew deadline. Read by every fenced write. */
    _Atomic int64_t valid_until_ms;
    /* what we last saw of someone else's record */
    char observed_record[512];
    int64_t observed_ms;
    uint64_t transitions;
    /* Labels every write of ours puts on the Lease (leader_set_label), under labels_lock;
     * writes counts our successful writes. */
    pthread_mutex_t labels_lock;
    struct { char key[64], value[64]; int set; } labels[LEADER_LABELS_MAX];
    uint64_t labels_gen;             /* raised by every leader_set_label */
    _Atomic uint64_t labels_written; /* the labels_gen of our last successful write */
};

int leader_can_take(const char *holder, int64_t observed_ms, int64_t now_ms, int64_t lease_duration_ms) {
    if (!holder || !*holder) return 1;
    return now_ms - observed_ms >= lease_duration_ms;
}

struct leader_elector *leader_new(struct kube_client *c, const struct leader_options *o) {
    struct leader_elector *le = calloc(1, sizeof(*le));
    if (!le) return NULL;
    le->client = c;
    atomic_init(&le->valid_until_ms, 0);
    atomic_init(&le->labels_written, 0);
    pthread_mutex_init(&le->labels_lock, NULL);
    /* One attempt per call: no retry loop, no Retry-After sleep can outlast the deadline. */
    kube_client_set_retries(c, 1);
    le->o = *o;
    le->ns = strdup(o->namespace_);
    le->name = strdup(o->name);
    le->identity = strdup(o->identity);
    if (!le->ns || !le->name || !le->identity) { leader_free(le); return NULL; }
    return le;
}

int64_t leader_set_label(struct leader_elector *le, const char *key, const char *value) {
    int free_slot = -1;
    int64_t rc = -1;
    if (!le || !key || strlen(key) >= sizeof(le->labels[0].key) || (value && strlen(value) >= sizeof(le->labels[0].value)))
        return -1;
    pthread_mutex_lock(&le->labels_lock);
    for (int i = 0; i < LEADER_LABELS_MAX; i++) {
        if (le->labels[i].key[0] && !strcmp(le->labels[i].key, key)) { free_slot = i; break; }
        if (!le->labels[i].key[0] && free_slot < 0) free_slot = i;
    }
    if (free_slot >= 0) {
        snprintf(le->labels[free_slot].key, sizeof(le->labels[0].key), "%s", key);
        snprintf(le->labels[free_slot].value, sizeof(le->labels[0].value), "%s", value ? value : "");
        le->labels[free_slot].set = value != NULL;
        rc = (int64_t)++le->labels_gen;
    }
    pthread_mutex_unlock(&le->labels_lock);
    return rc;
}

uint64_t leader_labels_written(struct leader_elector *le) { return le ? atomic_load(&le->labels_written) : 0; }

/* Put the labels of leader_set_label on the lease object about to be written; the
 * generation of labels it carries. */
static uint64_t apply_labels(struct leader_elector *le, cJSON *lease) {
    cJSON *md = cJSON_GetObjectItemCaseSensitive(lease, "metadata");
    if (!md) return 0;
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
    pthread_mutex_lock(&le->labels_lock);
    uint64_t gen = le->labels_gen;
    for (int i = 0; i < LEADER_LABELS_MAX; i++) {
        if (!le->labels[i].key[0]) continue;
        if (!labels && le->labels[i].set) labels = cJSON_AddObjectToObject(md, "labels");
        if (!labels) continue;
        cJSON_DeleteItemFromObjectCaseSensitive(labels, le->labels[i].key);
        if (le->labels[i].set) cJSON_AddStringToObject(labels, le->labels[i].key, le->labels[i].value);
    }
    pthread_mutex_unlock(&le->labels_lock);
    return gen;
}

/* Lease object path. */
static void lease_path(struct leader_elector *le, char *out, size_t n, int item) {
    snprintf(out, n, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s", le->ns, item ? "/" : "", item ? le->name : "");
}

/* Fill spec for us as holder. */
static void set_spec(struct leader_elector *le, cJSON *lease, int new_term, int64_t transitions) {
    char now[48];
    kj_time_format_micro(kj_now_ms(), now, sizeof(now));
    cJSON_DeleteItemFromObjectCaseSensitive(lease, "spec");
    cJSON *spec = cJSON_AddObjectToObject(lease, "spec");
    cJSON_AddStringToObject(spec, "holderIdentity", le->identity);
    cJSON_AddNumberToObject(spec, "leaseDurationSeconds", (double)((le->o.lease_duration_ms + 999) / 1000));
    cJSON_AddStringToObject(spec, "renewTime", now);
    cJSON_AddNumberToObject(spec, "leaseTransitions", (double)transitions);
    if (new_term) cJSON_AddStringToObject(spec, "acquireTime", now);
}

/* Give the next Lease call the time left before deadline_ms (monotonic) as its timeout.
 * 0, or -1 when none is left. */
static int arm(struct leader_elector *le, int64_t deadline_ms) {
    int64_t left = deadline_ms - clock_mono_ms();
    if (left <= 0) return -1;
    kube_client_set_timeout(le->client, (long)left);
    return 0;
}

/* One attempt to acquire or renew, every call ending by deadline_ms. 1 = we hold the lease
 * now (*sent_ms = when the successful write was sent), 0 = someone else does, -1 = could
 * not tell in time (API error, throttled, stalled). */
static int try_acquire_or_renew(struct leader_elector *le, int64_t deadline_ms, int64_t *sent_ms) {
    char path[512];
    struct kube_error err;
    cJSON *lease = NULL;
    lease_path(le, path, sizeof(path), 1);
    if (arm(le, deadline_ms) < 0) return -1;
    long st = kube_get(le->client, path, &lease, &err);
    if (st == 404) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddStringToObject(obj, "apiVersion", "coordination.k8s.io/v1");
        cJSON_AddStringToObject(obj, "kind", "Lease");
        cJSON *md = cJSON_AddObjectToObject(obj, "metadata");
        cJSON_AddStringToObject(md, "name", le->name);
        cJSON_AddStringToObject(md, "namespace", le->ns);
        set_spec(le, obj, 1, 0);
        uint64_t gen = apply_labels(le, obj);
        lease_path(le, path, sizeof(path), 0);
        st = -1;
        if (arm(le, deadline_ms) == 0) {
            *sent_ms = clock_mono_ms();
            st = kube_create(le->client, path, obj, NULL, &err);
        } else {
            kube_error_set(&err, "renew deadline passed");
        }
        cJSON_Delete(obj);
        if (st == 201) { atomic_store(&le->labels_written, gen); return 1; }
        if (st == 409) return 0;
        LOGW("msg=\"lease create failed\" err=\"%s\"", err.message);
        return -1;
    }
    if (st != 200) {
        LOGW("msg=\"lease get failed\" err=\"%s\"", err.message);
        cJSON_Delete(lease);
        return -1;
    }
    struct kube_lease_view v;
    kube_lease_view_read(lease, &v);
    const char *holder = v.holder, *renew = v.renew_time;
    int64_t transitions = v.transitions;
    int ours = holder && !strcmp(holder, le->identity);
    if (!ours) {
        char record[512];
        snprintf(record, sizeof(record), "%s|%s", holder ? holder : "", renew ? renew : "");
        int64_t now = clock_mono_ms();
        if (strcmp(record, le->observed_record) != 0) {
            snprintf(le->observed_record, sizeof(le->observed_record), "%s", record);
            le->observed_ms = now;
        }
        if (!leader_can_take(holder, le->observed_ms, now, le->o.lease_duration_ms)) {
            cJSON_Delete(lease);
            return 0;
        }
        transitions++;
    }
    /* A renewal keeps the term's acquireTime; a takeover starts a new term. */
    char acquired[64] = "";
    if (ours && v.acquire_time) snprintf(acquired, sizeof(acquired), "%s", v.acquire_time);
    set_spec(le, lease, !ours, transitions);
    if (acquired[0]) cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(lease, "spec"), "acquireTime", acquired);
    uint64_t gen = apply_labels(le, lease);
    st = -1;
    if (arm(le, deadline_ms) == 0) {
        *sent_ms = clock_mono_ms();
        st = kube_replace(le->client, path, lease, NULL, &err);
    } else {
        kube_error_set(&err, "renew deadline passed");
    }
    cJSON_Delete(lease);
    if (st == 200) {
        if (!ours) le->transitions++;
        atomic_store(&le->labels_written, gen);
        return 1;
    }
    if (st == 409) return 0; /* someone else updated it first */
    LOGW("msg=\"lease update failed\" err=\"%s\"", err.message);
    return -1;
}

int64_t leader_fence_remaining_ms(void *ud) {
    struct leader_elector *le = ud;
    int64_t until = atomic_load(&le->valid_until_ms);
    return until ? until - clock_mono_ms() : 0;
}

int leader_fence_ok(struct leader_elector *le) { return le && leader_fence_remaining_ms(le) > 0; }

void leader_fence_close(struct leader_elector *le) {
    if (!le) return;
    atomic_store(&le->closing, 1);   /* before the store: the loop must not re-open it */
    atomic_store(&le->valid_until_ms, 0);
}

/* Sleep until the monotonic instant until_ms, in small steps, waking early on stop. */
static void nap_until(struct leader_elector *le, int64_t until_ms) {
    for (int64_t left; !atomic_load(&le->stop) && (left = until_ms - clock_mono_ms()) > 0;)
        usleep((useconds_t)(left > 50 ? 50 : left) * 1000);
}

/* Leadership ends: close the fence first (writes stop at once), then tell the owner. */
static void lose(struct leader_elector *le, const char *why) {
    atomic_store(&le->valid_until_ms, 0);
    atomic_store(&le->leading, 0);
    LOGW("msg=\"lost leadership\" lease=%s/%s identity=%s reason=\"%s\"", le->ns, le->name, le->identity, why);
    if (le->o.on_stopped) le->o.on_stopped(le->o.ud);
}

/* The election loop: one attempt per retry period. While leading, every call is bounded by
 * the end of the current term (valid_until); a standby's calls by one renew deadline. */
static void *run(void *arg) {
    struct leader_elector *le = arg;
    while (!atomic_load(&le->stop)) {
        if (atomic_load(&le->closing)) {       /* shutting down: keep the lease for the release, no renewals */
            nap_until(le, clock_mono_ms() + 50);
            continue;
        }
        int64_t start = clock_mono_ms(), sent = 0;
        int64_t deadline = atomic_load(&le->leading) ? atomic_load(&le->valid_until_ms) : start + le->o.renew_deadline_ms;
        int r = try_acquire_or_renew(le, deadline, &sent);
        int64_t now = clock_mono_ms();
        if (atomic_load(&le->closing)) continue;
        if (r == 1 && sent + le->o.renew_deadline_ms > now) {
            atomic_store(&le->valid_until_ms, sent + le->o.renew_deadline_ms);
            if (atomic_load(&le->closing)) atomic_store(&le->valid_until_ms, 0);   /* closed meanwhile */
            if (!atomic_load(&le->leading)) {
                atomic_store(&le->leading, 1);
                LOGI("msg=\"became leader\" lease=%s/%s identity=%s", le->ns, le->name, le->identity);
                if (le->o.on_started) le->o.on_started(le->o.ud);
            }
        } else if (atomic_load(&le->leading) && r == 0) {
            lose(le, "the lease is held by someone else");
        } else if (atomic_load(&le->leading) && now >= atomic_load(&le->valid_until_ms)) {
            lose(le, "not renewed within the renew deadline");
        }
        /* Next attempt one retry period after this one started; a leader also wakes at the
         * end of its term, so the loss is reported on time. */
        int64_t next = start + le->o.retry_period_ms;
        if (atomic_load(&le->leading) && atomic_load(&le->valid_until_ms) < next) next = atomic_load(&le->valid_until_ms);
        nap_until(le, next);
        if (atomic_load(&le->leading) && !atomic_load(&le->stop) && !atomic_load(&le->closing) && clock_mono_ms() >= atomic_load(&le->valid_until_ms))
            lose(le, "not renewed within the renew deadline");
    }
    return NULL;
}

int leader_start(struct leader_elector *le) {
    if (pthread_create(&le->thread, NULL, run, le) != 0) return -1;
    le->started = 1;
    return 0;
}

/* Give the lease up: clear the holder so a standby takes over without waiting. The writes
 * carry the fetched resourceVersion, so a lease someone else took meanwhile is left alone. */
static void release(struct leader_elector *le) {
    char path[512];
    struct kube_error err;
    cJSON *lease = NULL;
    int64_t deadline = clock_mono_ms() + (le->o.renew_deadline_ms < 5000 ? le->o.renew_deadline_ms : 5000);
    lease_path(le, path, sizeof(path), 1);
    if (arm(le, deadline) == 0 && kube_get(le->client, path, &lease, &err) == 200) {
        struct kube_lease_view v;
        kube_lease_view_read(lease, &v);
        if (v.holder && !strcmp(v.holder, le->identity) && arm(le, deadline) == 0) {
            cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
            cJSON_ReplaceItemInObjectCaseSensitive(spec, "holderIdentity", cJSON_CreateString(""));
            cJSON_ReplaceItemInObjectCaseSensitive(spec, "leaseDurationSeconds", cJSON_CreateNumber(1));
            if (kube_replace(le->client, path, lease, NULL, &err) == 200)
                LOGI("msg=\"released the lease\" lease=%s/%s", le->ns, le->name);
            else
                LOGW("msg=\"could not release the lease\" err=\"%s\"", err.message);
        }
    }
    cJSON_Delete(lease);
}

void leader_stop(struct leader_elector *le) {
    if (!le || !le->started) return;
    leader_fence_close(le);      /* no write after this, whatever follows */
    atomic_store(&le->stop, 1);
    pthread_join(le->thread, NULL);
    le->started = 0;
    if (atomic_load(&le->leading)) release(le);
    atomic_store(&le->leading, 0);
}

void leader_free(struct leader_elector *le) {
    if (!le) return;
    leader_stop(le);
    pthread_mutex_destroy(&le->labels_lock);
    free(le->ns);
    free(le->name);
    free(le->identity);
    free(le);
}

int leader_is_leader(struct leader_elector *le) { return le && atomic_load(&le->leading) && leader_fence_ok(le); }
uint64_t leader_transitions_seen(struct leader_elector *le) { return le ? le->transitions : 0; }
