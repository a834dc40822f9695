/* cli/waiter.c — waiting for a Sandbox by watching it (see cluster.h, cluster_wait): a
 * LIST of the one name (metadata.name field selector) for the current state and a
 * resourceVersion, then a WATCH from there; every version seen is judged by
 * cli/waitcond.c. On a terminal the progress line on stderr is rewritten as the phase and
 * reason change. The deadline is exact: a timer thread stops the watch at it. A watch the
 * server ends is resumed from the last resourceVersion; an expired one relists. The
 * scheduler's refusal (WAIT_FAILING) ends the wait only once it has held for the grace:
 * the timer also wakes the watch then, to look at it again. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "cli/cluster.h"
#include "cli/output.h"
#include "cli/waitcond.h"
#include "cli/watchloop.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "kube/watch.h"
#include "sandbox/model/objects.h"
#include "sandbox/model/spec.h"

/* Sets *stop and wakes the client's transfers at the deadline, and once at wake_ms. */
struct deadline_timer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct kube_client *kc;
    int64_t deadline_ms;
    atomic_int stop;            /* set by the timer thread, read by the watch (seq_cst) */
    int quit;                   /* under mu */
    int64_t wake_ms;            /* under mu; 0: none */
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
        if (t->wake_ms && now >= t->wake_ms) {
            t->wake_ms = 0;
            atomic_store(&t->stop, 1);
            kube_client_wake(t->kc);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t until = t->wake_ms && t->wake_ms < t->deadline_ms ? t->wake_ms : t->deadline_ms;
        int64_t left = until - now;
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

/* Stop the watch once more at wake_ms (before the deadline), replacing an earlier one. */
static void timer_wake_at(struct deadline_timer *t, int64_t wake_ms) {
    pthread_mutex_lock(&t->mu);
    t->wake_ms = wake_ms;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Clear the stop a wake set, unless the deadline has come (checked under the timer's lock,
 * so a deadline that falls just now still stops the next watch). 1 when cleared. */
static int timer_rearm(struct deadline_timer *t) {
    pthread_mutex_lock(&t->mu);
    int before = clock_mono_ms() < t->deadline_ms;
    if (before) atomic_store(&t->stop, 0);
    pthread_mutex_unlock(&t->mu);
    return before;
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
    struct deadline_timer *timer;
    int grace_ms;               /* WAIT_FAILING becomes WAIT_FAILED when held this long */
    int failing;                /* the last verdict was WAIT_FAILING, since failing_since */
    int64_t failing_since;
};

/* WAIT_FAILING held for the grace is WAIT_FAILED; until then the timer is set to look again. */
static void hold_refusal(struct waiter *x) {
    if (x->verdict != WAIT_FAILING) {
        x->failing = 0;
        return;
    }
    int64_t now = clock_mono_ms();
    if (!x->failing) {
        x->failing = 1;
        x->failing_since = now;
        timer_wake_at(x->timer, now + x->grace_ms);
    }
    if (now - x->failing_since >= x->grace_ms) x->verdict = WAIT_FAILED;
}

static int decided(const struct waiter *x) { return x->verdict == WAIT_MET || x->verdict == WAIT_FAILED; }

/* Judge one version (NULL: gone) and show the progress line when it changed. */
static void judge(struct waiter *x, const cJSON *sb) {
    struct sbx_meta m;
    sbx_meta_read(sb, &m);
    const char *uid = m.uid;
    if (sb && !x->uid[0] && uid) snprintf(x->uid, sizeof(x->uid), "%s", uid);
    x->verdict = wait_judge(x->w, sb, x->uid, x->why, sizeof(x->why), x->progress, sizeof(x->progress));
    hold_refusal(x);
    cJSON_Delete(x->last);
    x->last = sb && (!uid || !x->uid[0] || !strcmp(uid, x->uid)) ? cJSON_Duplicate(sb, 1) : NULL;
    if (x->tty && !decided(x) && strcmp(x->progress, x->shown)) {
        fprintf(stderr, "\r\033[K" PROG ": waiting for sandbox \"%s\" (%s): %s", x->name, x->what, x->progress);
        fflush(stderr);
        snprintf(x->shown, sizeof(x->shown), "%s", x->progress);
    }
}

static int on_event(void *ud, const char *type, const cJSON *obj) {
    struct waiter *x = ud;
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    const char *name = m.name;
    if (!name || strcmp(name, x->name)) return 0;
    if (!strcmp(type, "DELETED")) {
        const char *uid = m.uid;
        if (!x->uid[0] || !uid || !strcmp(uid, x->uid)) judge(x, NULL);
    } else {
        judge(x, obj);
    }
    return decided(x);
}

/* LIST the one name (the watch's own path): judge what is there (or that nothing is).
 * 0 (watch on), 1 (a verdict), or -1 with err. */
static int relist(void *ud, struct cli_watch *cw, char *err, size_t errlen) {
    struct waiter *x = ud;
    cJSON *list = NULL;
    struct kube_error ke;
    long st = kube_get(x->kc, cw->base, &list, &ke);
    x->list_failed = st != 200 || !list;
    if (x->list_failed) {
        cJSON_Delete(list);
        errfmt(err, errlen, "%s", st == 200 ? "listing sandboxes: empty answer" : ke.message);
        return -1;
    }
    struct kube_list_meta lm;
    kube_list_meta_read(list, &lm);
    cli_watch_set_rv(cw, lm.resource_version);
    const cJSON *items = kj_path(list, "items");
    judge(x, items && items->child ? items->child : NULL);
    cJSON_Delete(list);
    return decided(x);
}

int cluster_wait(struct cli *c, const char *name, const struct wait_for *w, const char *uid, int64_t timeout_ms,
                 cJSON **out) {
    struct waiter x = {.name = name, .w = w, .kc = c->kc, .tty = isatty(2),
                       .grace_ms = w->refusal_grace_ms > 0 ? w->refusal_grace_ms : WAIT_REFUSAL_GRACE_MS};
    if (out) *out = NULL;
    if (uid) snprintf(x.uid, sizeof(x.uid), "%s", uid);
    wait_for_describe(w, x.what, sizeof(x.what));
    int64_t deadline = clock_mono_ms() + timeout_ms;
    struct deadline_timer t;
    if (timer_start(&t, c->kc, deadline)) return cli_fail("starting the wait's timer: %s", strerror(errno));
    x.timer = &t;
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
    for (;;) {
        if (cli_watch_run(c->kc, &cw, err, sizeof(err)) == CLI_WATCH_FAILED) {
            rc = cli_fail("%s sandbox \"%s\": %s", x.list_failed ? "waiting for" : "watching", name, err);
            goto out;
        }
        hold_refusal(&x);
        /* else woken to look at a refusal again: list and watch on, unless time is up */
        if (decided(&x) || !timer_rearm(&t)) break;
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
