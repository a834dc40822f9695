/* cli/watchloop.c — the CLI's one watch-and-relist loop (see watchloop.h). */
#include "cli/watchloop.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "kube/watch.h"
#include "sandbox/model/objects.h"

void cli_watch_set_rv(struct cli_watch *w, const char *rv) {
    snprintf(w->rv, sizeof(w->rv), "%s", rv ? rv : "");
}

struct one_watch {
    struct cli_watch *w;
    int events, done;
};

static int on_event(void *ud, const char *type, cJSON *obj, cJSON *event) {
    struct one_watch *o = ud;
    (void)event;
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    if (m.resource_version) cli_watch_set_rv(o->w, m.resource_version);
    if (!strcmp(type, "BOOKMARK")) return 0;
    o->events++;
    if (o->w->on_event(o->w->event_ud, type, obj)) o->done = 1;
    return o->done;
}

static int stopped(const struct cli_watch *w) { return w->stop && atomic_load(w->stop); }

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

enum cli_watch_end cli_watch_run(struct kube_client *kc, struct cli_watch *w, char *err, size_t errlen) {
    int failures = 0, need_list = w->list_first;
    err[0] = '\0';
    while (!stopped(w)) {
        if (need_list) {
            int r = w->relist(w->list_ud, w, err, errlen);
            if (r < 0) return stopped(w) ? CLI_WATCH_STOPPED : CLI_WATCH_FAILED;
            if (r > 0) return CLI_WATCH_DONE;
            need_list = 0;
        }
        char path[4600], tos[32];
        int64_t left_s = w->deadline_ms ? (w->deadline_ms - clock_mono_ms() + 999) / 1000 : 300;
        snprintf(tos, sizeof(tos), "%lld", (long long)(left_s < 1 ? 1 : left_s > 300 ? 300 : left_s));
        snprintf(path, sizeof(path), "%s", w->base);
        if (kube_path_add_query(path, sizeof(path), "watch", "true") < 0 ||
            kube_path_add_query(path, sizeof(path), "allowWatchBookmarks", "true") < 0 ||
            kube_path_add_query(path, sizeof(path), "timeoutSeconds", tos) < 0 ||
            (w->rv[0] && kube_path_add_query(path, sizeof(path), "resourceVersion", w->rv) < 0)) {
            errfmt(err, errlen, "the watch's path is too long");
            return CLI_WATCH_FAILED;
        }
        struct one_watch o = {.w = w};
        enum kube_watch_end end = kube_watch(kc, path, on_event, &o, w->stop, 0, err, errlen);
        if (o.done) return CLI_WATCH_DONE;
        if (stopped(w)) break;
        if (end == KUBE_WATCH_EXPIRED) {
            need_list = 1;
            continue;
        }
        if (end == KUBE_WATCH_FAILED || end == KUBE_WATCH_UNANSWERED) {
            if (++failures >= w->max_failures && !o.events) return CLI_WATCH_FAILED;
            need_list = w->relist_on_failure;
            pause_ms(w->pause_ms);
            continue;
        }
        failures = 0;
    }
    return CLI_WATCH_STOPPED;
}
