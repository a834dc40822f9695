/* sandbox/model/terminating.c — namespaces being deleted (see terminating.h). */
#include "sandbox/model/terminating.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

struct sbx_terminating {
    pthread_mutex_t lock;
    struct strmap until;   /* namespace -> int64_t * (the ms until which its passes are skipped) */
};

struct sbx_terminating *sbx_terminating_new(void) {
    struct sbx_terminating *t = calloc(1, sizeof(*t));
    if (!t) return NULL;
    pthread_mutex_init(&t->lock, NULL);
    strmap_init(&t->until);
    return t;
}

void sbx_terminating_free(struct sbx_terminating *t) {
    if (!t) return;
    strmap_clear(&t->until, free);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void sbx_terminating_note(struct sbx_terminating *t, const char *ns, int64_t now_ms) {
    pthread_mutex_lock(&t->lock);
    int64_t *until = strmap_get(&t->until, ns);
    if (!until && (until = malloc(sizeof(*until))) && strmap_put(&t->until, ns, until, NULL) < 0) {
        free(until);
        until = NULL;
    }
    if (until) *until = now_ms + SBX_TERMINATING_HOLD_MS;
    pthread_mutex_unlock(&t->lock);
}

int64_t sbx_terminating_left(struct sbx_terminating *t, const char *ns, int64_t now_ms) {
    int64_t left = 0;
    pthread_mutex_lock(&t->lock);
    int64_t *until = t->until.count ? strmap_get(&t->until, ns) : NULL;
    if (until) {
        left = *until - now_ms;
        if (left <= 0) {
            free(strmap_remove(&t->until, ns));
            left = 0;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return left;
}
