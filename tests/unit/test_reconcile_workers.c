/* Several workers beside the informer handlers, over the books they share (the running
 * cap's slots and line, the warm index, the records of what each pass expects), on the
 * in-process fake API server, under churn: Sandboxes created, touched, paused, resumed and
 * deleted while the pods they get are played to Running and the warm pool is drawn on and
 * refilled. The other pass suites run one pass at a time; here the controller runs as in
 * production (sbx_controller_run: four workers, a resync), so every book is written by a
 * handler thread while workers read it. Its point is ThreadSanitizer (label unit-tsan:
 * any race or lock-order inversion fails it), and it asserts what the churn must leave:
 * - never more pods holding a slot than the running cap, at any sample;
 * - never two live pods of one Sandbox;
 * - once the churn stops, every Sandbox that wants a pod has one or waits for capacity
 *   with a reason that says so, a paused one has none, and the pool is full again. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "reconcile_env.h"
#include "sandbox/decide/warm_decide.h"

#define SANDBOXES 24
#define USERS 4
#define MAX_RUNNING 6
#define POOL 2

static void churn_options(struct sbx_controller_options *o) {
    o->workers = 4;
    o->limits.max_running = MAX_RUNNING;
    o->warm_workspaces = POOL;
    o->defaults.storage_class = SC_IMMEDIATE;
    o->resync_ms = 500;
}

/* The environment of reconcile_env.h, with the workers running. */
static struct env *env_with_workers(void) {
    static struct env e;
    static int state;   /* 0 not tried, 1 up, -1 failed */
    char err[512];
    if (state) return state == 1 ? &e : NULL;
    state = -1;
    memset(&e, 0, sizeof(e));
    if (fakeapi_start(&e.fa) < 0) return NULL;
    e.up = 1;
    if (fakeapi_seed(&e.fa, SC_COLL,
                     "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"" SC_IMMEDIATE
                     "\"},\"provisioner\":\"fake\",\"volumeBindingMode\":\"Immediate\"}") < 0 ||
        !(e.client = fakeapi_client(&e.fa))) {
        env_stop(&e);
        return NULL;
    }
    kube_client_set_timeout(e.client, 5000);
    struct sbx_controller_options o;
    memset(&o, 0, sizeof(o));
    sbx_defaults_init(&o.defaults);
    o.namespace_ = NS;
    churn_options(&o);
    if (!(e.ctl = sbx_controller_new(e.client, &o, err, sizeof err))) {
        fprintf(stderr, "controller: %s\n", err);
        env_stop(&e);
        return NULL;
    }
    if (sbx_controller_run(e.ctl, NULL) < 0) {
        fprintf(stderr, "controller: caches did not sync\n");
        env_stop(&e);
        return NULL;
    }
    state = 1;
    return &e;
}

/* ---- the other parties: kubelet and provisioner ------------------------------------------ */

struct players {
    struct env *e;
    atomic_int stop;
    atomic_int max_slots;     /* most live sandbox pods seen at once */
    atomic_int doubled;       /* samples with two live pods of one Sandbox */
};

static int has_status(const cJSON *o) { return kj_str(o, "status.phase") != NULL; }

/* The controller uid of a pod (NULL when none). */
static const char *owner_uid(const cJSON *pod) {
    const cJSON *r;
    cJSON_ArrayForEach(r, kj_path(pod, "metadata.ownerReferences"))
        if (kj_bool(r, "controller", 0)) return kj_str(r, "uid");
    return NULL;
}

/* Every 10 ms: claims Bound, new pods Running; count live sandbox pods and their owners. */
static void *play(void *arg) {
    struct players *p = arg;
    char path[512];
    while (!atomic_load(&p->stop)) {
        cJSON *claims = fakeapi_list(&p->e->fa, PVC_COLL, NULL), *c;
        cJSON_ArrayForEach(c, claims) {
            if (has_status(c)) continue;
            snprintf(path, sizeof path, PVC_COLL "/%s", kj_str(c, "metadata.name"));
            claim_bound(p->e, path);
        }
        cJSON_Delete(claims);
        /* A pod holds a slot while its Sandbox exists (the store has no garbage collector:
         * a deleted Sandbox's pod waits for the orphan sweep, holding nothing). The pods
         * are listed first: those of them whose Sandbox still exists a moment later are at
         * most the slots held when they were listed (a Sandbox made in between owns none
         * of them), so a count above the cap is never the sampling's. */
        cJSON *pods = fakeapi_list(&p->e->fa, POD_COLL, NULL), *q;
        cJSON *sbs = fakeapi_list(&p->e->fa, SBX_COLL, NULL), *s;
        int live = 0, doubled = 0;
        const char *owners[256];
        cJSON_ArrayForEach(q, pods) {
            if (kj_str(q, "metadata.deletionTimestamp")) continue;
            const char *u = owner_uid(q);
            int alive = 0;
            cJSON_ArrayForEach(s, sbs) {
                const char *su = kj_str(s, "metadata.uid");
                if (u && su && !strcmp(u, su)) alive = 1;
            }
            if (!alive) continue;
            for (int i = 0; i < live; i++)
                if (!strcmp(owners[i], u)) doubled = 1;
            if (live < 256) owners[live++] = u;
            if (!has_status(q)) {
                snprintf(path, sizeof path, POD_COLL "/%s", kj_str(q, "metadata.name"));
                pod_running(p->e, path, 0);
            }
        }
        if (live > atomic_load(&p->max_slots)) atomic_store(&p->max_slots, live);
        if (doubled) atomic_fetch_add(&p->doubled, 1);
        cJSON_Delete(pods);
        cJSON_Delete(sbs);
        env_sleep_ms(10);
    }
    return NULL;
}

/* ---- the churn ------------------------------------------------------------------------------ */

static unsigned next_rand(unsigned *s) { return *s = *s * 1103515245u + 12345u, (*s >> 16) & 0x7fff; }

static void sandbox_path(int i, char *out, size_t n) { snprintf(out, n, SBX_COLL "/w%02d", i); }

static void create(struct env *e, int i) {
    char name[16], user[16], chat[16];
    snprintf(name, sizeof name, "w%02d", i);
    snprintf(user, sizeof user, "u%d", i % USERS);
    snprintf(chat, sizeof chat, "c%02d", i);
    seed_sandbox(e, name, user, chat, ",\"lifecycle\":\"session\"", NULL);
}

/* The pods of the store that are live (not deleting) and controlled by uid. */
static int live_pods_of(struct env *e, const char *uid) {
    cJSON *pods = fakeapi_list(&e->fa, POD_COLL, NULL), *q;
    int n = 0;
    cJSON_ArrayForEach(q, pods) {
        const char *u = owner_uid(q);
        if (!kj_str(q, "metadata.deletionTimestamp") && u && !strcmp(u, uid)) n++;
    }
    cJSON_Delete(pods);
    return n;
}

/* Has every Sandbox its due: a pod when it wants one and may have one, none when paused,
 * else a Ready reason saying it waits for capacity? And is the pool full? */
static int settled(struct env *e, int verbose) {
    cJSON *sbs = fakeapi_list(&e->fa, SBX_COLL, NULL), *s;
    int ok = 1;
    cJSON_ArrayForEach(s, sbs) {
        const char *uid = kj_str(s, "metadata.uid"), *name = kj_str(s, "metadata.name");
        int paused = kj_bool(kj_path(s, "spec"), "paused", 0), pods = live_pods_of(e, uid);
        char path[512], reason[64];
        snprintf(path, sizeof path, SBX_COLL "/%s", name);
        ready_reason(e, path, reason, sizeof reason);
        int waits = !strcmp(reason, "CapacityExceeded") || !strcmp(reason, "UserCapacityExceeded");
        int good = paused ? pods == 0 : pods == 1 || (pods == 0 && waits);
        if (!good) {
            if (verbose) fprintf(stderr, "  %s: paused %d, %d live pods, reason %s\n", name, paused, pods, reason);
            ok = 0;
        }
    }
    cJSON_Delete(sbs);
    cJSON *pool = fakeapi_list(&e->fa, PVC_COLL, WARM_SEL);
    int pooled = cJSON_GetArraySize(pool);
    cJSON_Delete(pool);
    if (pooled != POOL) {
        if (verbose) fprintf(stderr, "  warm pool: %d claims, not %d\n", pooled, POOL);
        ok = 0;
    }
    return ok;
}

TEST(workers_and_handlers_share_the_books_under_churn) {
    struct env *e = env_with_workers();
    CHECK(e != NULL);
    if (!e) return;
    struct players p = {.e = e};
    pthread_t kubelet;
    CHECK_INT(pthread_create(&kubelet, NULL, play, &p), 0);

    unsigned seed = 20261205u;
    char path[512], patch[256], t[40];
    int exists[SANDBOXES] = {0};
    for (int i = 0; i < SANDBOXES; i++) {
        create(e, i);
        exists[i] = 1;
    }
    /* 3 s of churn: each 20 ms, one of touch, pause, resume, delete, create again */
    for (int64_t end = clock_mono_ms() + 3000; clock_mono_ms() < end; env_sleep_ms(20)) {
        int i = (int)(next_rand(&seed) % SANDBOXES);
        sandbox_path(i, path, sizeof path);
        switch (next_rand(&seed) % 5) {
        case 0:
            kj_time_format(kj_now_ms(), t, sizeof t);
            snprintf(patch, sizeof patch, "{\"metadata\":{\"annotations\":{\"" SBX_ANN_LAST_USED "\":\"%s\"}}}", t);
            if (exists[i]) fakeapi_patch(&e->fa, path, patch);
            break;
        case 1:
            if (exists[i]) fakeapi_patch(&e->fa, path, "{\"spec\":{\"paused\":true}}");
            break;
        case 2:
            if (exists[i]) fakeapi_patch(&e->fa, path, "{\"spec\":{\"paused\":false}}");
            break;
        case 3:
            if (exists[i] && fakeapi_remove(&e->fa, path) == 0) exists[i] = 0;
            break;
        default:
            if (!exists[i]) {
                create(e, i);
                exists[i] = 1;
            }
        }
    }
    /* Converged within the longest a pool pass may wait by design (its refill yields to starts
     * in flight for at most SBX_WARM_REFILL_YIELD_MAX_MS) and 15 s more: under valgrind on a
     * loaded machine 20 s was once not enough. */
    int converged = 0;
    for (int64_t end = clock_mono_ms() + SBX_WARM_REFILL_YIELD_MAX_MS + 15000; clock_mono_ms() < end && !converged;
         env_sleep_ms(50))
        converged = settled(e, 0);
    if (!converged) settled(e, 1);
    CHECK(converged);
    atomic_store(&p.stop, 1);
    pthread_join(kubelet, NULL);
    fprintf(stderr, "  most live sandbox pods at once: %d (cap %d); samples with a doubled pod: %d\n",
            atomic_load(&p.max_slots), MAX_RUNNING, atomic_load(&p.doubled));
    CHECK(atomic_load(&p.max_slots) >= 1);
    CHECK(atomic_load(&p.max_slots) <= MAX_RUNNING);
    CHECK_INT(atomic_load(&p.doubled), 0);
    env_stop(e);   /* the workers stop before the process exits */
}

