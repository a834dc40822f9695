/* sandbox/model/outcome.h — what a pass over one work key tells the manager, as one typed
 * value: done (look again at the resync), after N ms, forget the key for good, stale
 * (decide again on the newer version), or failed (the pass's struct kube_error says why,
 * and its reason tells a namespace being deleted from a failure worth a backoff). */
#ifndef YAO_SANDBOX_OUTCOME_H
#define YAO_SANDBOX_OUTCOME_H

#include <stdint.h>

enum sbx_outcome_kind {
    SBX_OUTCOME_DONE = 0,   /* nothing pending: the resync (if any) looks again */
    SBX_OUTCOME_AFTER,      /* look again after after_ms */
    SBX_OUTCOME_FORGET,     /* the key's object and all it owned are gone: never queued again */
    SBX_OUTCOME_STALE,      /* changed since the decision: nothing was destroyed, decide again
                             * (after SBX_STALE_AGAIN_MS, by when the watch has the newer version) */
    SBX_OUTCOME_FAILED,     /* the error says why */
};

#define SBX_STALE_AGAIN_MS 50

struct sbx_outcome {
    enum sbx_outcome_kind kind;
    int64_t after_ms;       /* SBX_OUTCOME_AFTER only */
};

static inline struct sbx_outcome sbx_done(void) { return (struct sbx_outcome){SBX_OUTCOME_DONE, 0}; }
/* after_ms <= 0 is done. */
static inline struct sbx_outcome sbx_after(int64_t after_ms) {
    return after_ms > 0 ? (struct sbx_outcome){SBX_OUTCOME_AFTER, after_ms} : sbx_done();
}
static inline struct sbx_outcome sbx_forget(void) { return (struct sbx_outcome){SBX_OUTCOME_FORGET, 0}; }
static inline struct sbx_outcome sbx_stale(void) { return (struct sbx_outcome){SBX_OUTCOME_STALE, 0}; }
static inline struct sbx_outcome sbx_failed(void) { return (struct sbx_outcome){SBX_OUTCOME_FAILED, 0}; }
/* The name of a kind, for logs ("done", "after", ...). */
static inline const char *sbx_outcome_name(enum sbx_outcome_kind k) {
    static const char *const names[] = {"done", "after", "forget", "stale", "failed"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

#endif
