/* sandbox/model/claimview.c — the one place a claim is read by path (see claimview.h). */
#include "sandbox/model/claimview.h"

#include <string.h>

#include "kube/kjson.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/spec.h"
#include "sandbox/model/warmbinder.h"
#include "sandbox/model/workspacecopy.h"

/* A storage quantity in bytes; 0 when absent or unparseable. */
static int64_t bytes_of(const char *q) {
    int64_t b;
    return q && qty_parse_memory(q, &b) == 0 ? b : 0;
}

void sbx_claim_view_parse(const cJSON *pvc, struct sbx_claim_view *v) {
    memset(v, 0, sizeof(*v));
    if (!cJSON_IsObject(pvc)) return;
    v->obj = pvc;
    sbx_meta_read(pvc, &v->meta);
    v->storage_class = kj_str(pvc, "spec.storageClassName");
    v->request = kj_str(pvc, "spec.resources.requests.storage");
    v->capacity = kj_str(pvc, "status.capacity.storage");
    v->request_bytes = bytes_of(v->request);
    v->capacity_bytes = bytes_of(v->capacity);
    v->phase = kj_str(pvc, "status.phase");
    v->bound = v->phase && !strcmp(v->phase, "Bound");
    v->adopted_at = sbx_meta_annotation(&v->meta, SBX_ANN_WARM_ADOPTED);
    if (!v->adopted_at || kj_time_parse(v->adopted_at, &v->adopted_ms) != 0) v->adopted_ms = 0;
    v->fork_from = sbx_meta_annotation(&v->meta, SBX_ANN_FORK_FROM);
    v->fork_copied = sbx_meta_annotation(&v->meta, SBX_ANN_FORK_COPIED);
    v->cloned_size = sbx_meta_annotation(&v->meta, SBX_ANN_CLONED_SIZE);
    v->selected_node = sbx_meta_annotation(&v->meta, SBX_ANN_SELECTED_NODE);
    v->warm_pool = sbx_meta_label(&v->meta, SBX_LABEL_WARM_POOL);
}
