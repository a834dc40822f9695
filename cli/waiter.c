/* cli/waiter.c — waiting for a Sandbox by watching it (see cluster.h, cluster_wait): a
 * LIST of the one name (metadata.name field selector) for the current state and a
 * resourceVersion, then a WATCH from there; every version seen is judged by
 * cli/waitcond.c. On a terminal the progress line on stderr is rewritten as the phase and
 * reason change. The deadline is exact: a timer thread stops the watch at it. A watch the
 * server ends is resumed from the last resourceVersion; an expired one relists. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/cluster.h"
#include "cli/output.h"
#include "cli/waitcond.h"
#include "cli/watchloop.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "kube/watch.h"
#include "sandbox/spec.h"

/* Sets *stop and wakes the client's transfers at the deadline. */
struct deadline_timer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct kube_client *kc;
    int64_t deadline_ms;
    atomic_int stop;            /* set by the timer thread, read by the watch (seq_cst) */
    int quit;                   /* under mu */
};

static void *timer_main(void *ud) {
    struct deadline_timer *t = ud;
    pthread_mutex_lock(&t->mu);
    while (!t->quit) {
        int64_t now = clock_mono_ms();
        if (now >= t->deadline_ms) {
            atomic_store(&t->stop, 1);
            kube_client_wake(t->kc);
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t left = t->deadline_ms - now;
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static int timer_start(struct deadline_timer *t, struct kube_client *kc, int64_t deadline_ms) {
    memset(t, 0, sizeof(*t));
    t->kc = kc;
    t->deadline_ms = deadline_ms;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    return pthread_create(&t->thread, NULL, timer_main, t) ? -1 : 0;
}

static void timer_stop(struct deadline_timer *t) {
    pthread_mutex_lock(&t->mu);
    t->quit = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}

struct waiter {
    const char *name;
    const struct wait_for *w;
    char uid[128];              /* the Sandbox waited for (first seen, unless given) */
    enum wait_verdict verdict;
    char why[1200];
    char progress[600], shown[600];
    char what[96];              /* wait_for_describe */
    cJSON *last;                /* the newest version seen (NULL: none, or gone) */
    struct kube_client *kc;
    int tty, list_failed;       /* list_failed: the last LIST failed (else the watch did) */
};

/* Judge one version (NULL: gone) and show the progress line when it changed. */
static void judge(struct waiter *x, const cJSON *sb) {
    const char *uid = kj_str(sb, "metadata.uid");
    if (sb && !x->uid[0] && uid) snprintf(x->uid, sizeof(x->uid), "%s", uid);
    x->verdict = wait_judge(x->w, sb, x->uid, x->why, sizeof(x->why), x->progress, sizeof(x->progress));
    cJSON_Delete(x->last);
    x->last = sb && (!uid || !x->uid[0] || !strcmp(uid, x->uid)) ? cJSON_Duplicate(sb, 1) : NULL;
    if (x->tty && x->verdict == WAIT_PENDING && strcmp(x->progress, x->shown)) {
        fprintf(stderr, "\r\033[K" PROG ": waiting for sandbox \"%s\" (%s): %s", x->name, x->what, x->progress);
        fflush(stderr);
        snprintf(x->shown, sizeof(x->shown), "%s", x->progress);
    }
}

static int on_event(void *ud, const char *type, const cJSON *obj) {
    struct waiter *x = ud;
    const char *name = kj_str(obj, "metadata.name");
    if (!name || strcmp(name, x->name)) return 0;
    if (!strcmp(type, "DELETED")) {
        const char *uid = kj_str(obj, "metadata.uid");
        if (!x->uid[0] || !uid || !strcmp(uid, x->uid)) judge(x, NULL);
    } else {
        judge(x, obj);
    }
    return x->verdict != WAIT_PENDING;
}

/* LIST the one name (the watch's own path): judge what is there (or that nothing is).
 * 0 (watch on), 1 (a verdict), or -1 with err. */
static int relist(void *ud, struct cli_watch *cw, char *err, size_t errlen) {
    struct waiter *x = ud;
    cJSON *list = NULL;
    long st = kube_get(x->kc, cw->base, &list, err, errlen);
    x->list_failed = st != 200 || !list;
    if (x->list_failed) {
        cJSON_Delete(list);
        if (st == 200) snprintf(err, errlen, "listing sandboxes: empty answer");
        return -1;
    }
    cli_watch_set_rv(cw, kj_str(list, "metadata.resourceVersion"));
    const cJSON *items = kj_path(list, "items");
    judge(x, items && items->child ? items->child : NULL);
    cJSON_Delete(list);
    return x->verdict != WAIT_PENDING;
}

int cluster_wait(struct cli *c, const char *name, const struct wait_for *w, const char *uid, int64_t timeout_ms,
                 cJSON **out) {
    struct waiter x = {.name = name, .w = w, .kc = c->kc, .tty = isatty(2)};
    if (out) *out = NULL;
    if (uid) snprintf(x.uid, sizeof(x.uid), "%s", uid);
    wait_for_describe(w, x.what, sizeof(x.what));
    int64_t deadline = clock_mono_ms() + timeout_ms;
    struct deadline_timer t;
    if (timer_start(&t, c->kc, deadline)) return cli_fail("starting the wait's timer: %s", strerror(errno));
    char err[KUBE_ERR_MAX] = "", base[1024], sel[400];
    int rc = 0;
    snprintf(base, sizeof(base), "/apis/" SBX_API_VERSION "/namespaces/%s/" SBX_PLURAL, c->ns);
    snprintf(sel, sizeof(sel), "metadata.name=%s", name);
    kube_path_add_query(base, sizeof(base), "fieldSelector", sel);
    /* One failed watch may be a dropped connection: list again and watch on; two in a row
     * without an event is the server refusing the watch. */
    struct cli_watch cw = {.base = base, .on_event = on_event, .event_ud = &x, .relist = relist, .list_ud = &x,
                           .list_first = 1, .stop = &t.stop, .deadline_ms = deadline, .max_failures = 2,
                           .pause_ms = 300, .relist_on_failure = 1};
    if (cli_watch_run(c->kc, &cw, err, sizeof(err)) == CLI_WATCH_FAILED) {
        rc = cli_fail("%s sandbox \"%s\": %s", x.list_failed ? "waiting for" : "watching", name, err);
        goto out;
    }
    if (x.verdict == WAIT_MET) {
        if (out) { *out = x.last; x.last = NULL; }
    } else if (x.verdict == WAIT_FAILED) {
        rc = cli_fail("sandbox \"%s\" %s", name, x.why);
    } else {
        char d[32];
        out_duration(timeout_ms, d, sizeof(d));
        rc = cli_fail("timed out after %s waiting for sandbox \"%s\" (%s); last seen: %s", d, name, x.what,
                      x.progress[0] ? x.progress : "nothing");
    }
out:
    timer_stop(&t);
    if (x.tty && x.shown[0]) fprintf(stderr, "\r\033[K");
    cJSON_Delete(x.last);
    return rc;
}
