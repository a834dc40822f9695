/* sandbox/model/claimview.h — a PersistentVolumeClaim as the controller reads it (a Sandbox's
 * workspace claim, a fork's source, a warm pool's claim), parsed once where it is taken
 * from the cache, read from the API server or handed to an informer handler.
 *
 * Lifetime: as a Sandbox view (sandboxview.h) — no memory of its own; its strings point
 * into the cJSON object it was parsed from (obj) and are valid while that lives. Nothing
 * of it is cached. Pure: no I/O. */
#ifndef YAO_SANDBOX_CLAIMVIEW_H
#define YAO_SANDBOX_CLAIMVIEW_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "sandbox/model/objects.h"

struct sbx_claim_view {
    const cJSON *obj;                 /* what it was parsed from; NULL: no claim */
    struct sbx_meta meta;
    const char *storage_class;        /* spec.storageClassName, NULL when absent */
    const char *request;              /* spec.resources.requests.storage, as written */
    const char *capacity;             /* status.capacity.storage, as written */
    int64_t request_bytes, capacity_bytes;   /* parsed; 0 when absent or not a quantity */
    const char *phase;                /* status.phase */
    int bound;                        /* phase is Bound */
    /* metadata.annotations */
    const char *adopted_at;           /* SBX_ANN_WARM_ADOPTED, as written */
    int64_t adopted_ms;               /* parsed; 0 when absent or not a time */
    const char *fork_from;            /* SBX_ANN_FORK_FROM: the claim a copy fills */
    const char *fork_copied;          /* SBX_ANN_FORK_COPIED: set once the copy is done */
    const char *cloned_size;          /* SBX_ANN_CLONED_SIZE, as written */
    const char *selected_node;        /* SBX_ANN_SELECTED_NODE */
    const char *warm_pool;            /* the label SBX_LABEL_WARM_POOL: the pool's key */
};

/* Parse pvc into v (every field absent when pvc is NULL or not an object). */
void sbx_claim_view_parse(const cJSON *pvc, struct sbx_claim_view *v);

#endif
