/* cli/watchloop.h — the CLI's one watch-and-relist loop over a Sandbox collection (a
 * collection path with its selectors): WATCH from a resourceVersion, resumed from the last
 * one seen when the server ends the stream, a LIST again (the caller's relist) when the
 * watch expired, failed watches retried after a pause up to a count. Used by `wait` (and
 * every --wait, cli/waiter.c) and by `get -w` / `list -w` (cli/cmd_sandbox.c). */
#ifndef YAO_CLI_WATCHLOOP_H
#define YAO_CLI_WATCHLOOP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "kube/rest.h"

struct cli_watch {
    const char *base;        /* the collection's path with its selectors (no watch query) */
    char rv[128];            /* watched from; updated by every event, and by relist */
    /* Each event but bookmarks, with event_ud: nonzero ends the loop (CLI_WATCH_DONE). */
    int (*on_event)(void *event_ud, const char *type, const cJSON *obj);
    void *event_ud;
    /* List again, with list_ud, and set rv (cli_watch_set_rv): 0 watch on, 1 done
     * (CLI_WATCH_DONE), -1 failed (CLI_WATCH_FAILED, with err, or err "" when the callback
     * told the user). */
    int (*relist)(void *list_ud, struct cli_watch *w, char *err, size_t errlen);
    void *list_ud;
    int list_first;          /* relist before the first watch */
    const atomic_int *stop;  /* set from another thread: end (CLI_WATCH_STOPPED); may be NULL */
    int64_t deadline_ms;     /* monotonic; each watch's timeoutSeconds ends by it (0: 300 s) */
    int max_failures;        /* failed watches in a row with no event before giving up */
    long pause_ms;           /* after a failed watch */
    int relist_on_failure;   /* a failed watch may have missed events: list again first */
};

enum cli_watch_end {
    CLI_WATCH_DONE,          /* on_event or relist said so */
    CLI_WATCH_STOPPED,       /* *stop was set */
    CLI_WATCH_FAILED,        /* the watch kept failing, or relist failed: err says why */
};

enum cli_watch_end cli_watch_run(struct kube_client *kc, struct cli_watch *w, char *err, size_t errlen);

/* Set the resourceVersion to watch from (NULL: ""). */
void cli_watch_set_rv(struct cli_watch *w, const char *rv);

#endif
