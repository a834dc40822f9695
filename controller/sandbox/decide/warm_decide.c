/* sandbox/decide/warm_decide.c — warm workspaces, the pure decisions and object shapes (see
 * warm_decide.h). */
#include "sandbox/decide/warm_decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kjson.h"
#include "sandbox/model/objects.h"
#include "sandbox/model/quantity.h"

/* FNV-1a, 64 bits, over n bytes, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

void sbx_warm_key(const char *storage_class, int64_t bytes, char out[SBX_WARM_KEY_LEN]) {
    char size[32];
    uint64_t h = UINT64_C(14695981039346656037);
    const char *sc = storage_class ? storage_class : "";
    snprintf(size, sizeof(size), "%lld", (long long)bytes);
    /* Each part with its terminating NUL: "a" + "bc" differs from "ab" + "c". */
    h = fnv1a(h, sc, strlen(sc) + 1);
    h = fnv1a(h, size, strlen(size) + 1);
    h = fnv1a(h, SBX_WARM_ACCESS_MODE, sizeof(SBX_WARM_ACCESS_MODE));
    snprintf(out, SBX_WARM_KEY_LEN, "ws-%016llx", (unsigned long long)h);
}

/* strdup of s, NULL for NULL; *failed set when the copy could not be made. */
static char *dup_or_null(const char *s, int *failed) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *failed = 1;
    return d;
}

int sbx_warm_wants_add(struct sbx_warm_wants *w, const char *storage_class, int64_t bytes, int size,
                       const char *owner_class, const char *owner_uid) {
    char key[SBX_WARM_KEY_LEN];
    int failed = 0;
    sbx_warm_key(storage_class, bytes, key);
    if (size > SBX_WARM_SIZE_MAX) size = SBX_WARM_SIZE_MAX;
    struct sbx_warm_want *have = (struct sbx_warm_want *)sbx_warm_wants_find(w, key);
    if (have) {
        if (size > have->size) have->size = size;
        /* The owner: the class that sorts first; the flag pool (no class) never wins over one. */
        if (owner_class && (!have->owner_class || strcmp(owner_class, have->owner_class) < 0)) {
            char *c = dup_or_null(owner_class, &failed), *u = dup_or_null(owner_uid, &failed);
            if (failed) { free(c); free(u); return -1; }
            free(have->owner_class);
            free(have->owner_uid);
            have->owner_class = c;
            have->owner_uid = u;
        }
        return 0;
    }
    if (w->n >= SBX_WARM_WANTS_MAX) return 1;
    struct sbx_warm_want *n = &w->v[w->n];
    memset(n, 0, sizeof(*n));
    memcpy(n->key, key, sizeof(key));
    n->bytes = bytes;
    n->size = size;
    n->storage_class = dup_or_null(storage_class, &failed);
    n->owner_class = dup_or_null(owner_class, &failed);
    n->owner_uid = dup_or_null(owner_uid, &failed);
    if (failed || (owner_class && !owner_uid)) {
        free(n->storage_class);
        free(n->owner_class);
        free(n->owner_uid);
        memset(n, 0, sizeof(*n));
        return -1;
    }
    w->n++;
    return 0;
}

const struct sbx_warm_want *sbx_warm_wants_find(const struct sbx_warm_wants *w, const char *key) {
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->v[i].key, key)) return &w->v[i];
    return NULL;
}

void sbx_warm_wants_free(struct sbx_warm_wants *w) {
    for (size_t i = 0; i < w->n; i++) {
        free(w->v[i].storage_class);
        free(w->v[i].owner_class);
        free(w->v[i].owner_uid);
    }
    w->n = 0;
}

/* The claim to give up first: a pending one before a bound one, then the newer, then the
 * larger name (a fixed order). */
static int excess_before(const struct sbx_warm_claim *a, const struct sbx_warm_claim *b) {
    if (a->bound != b->bound) return !a->bound;
    if (a->created_ms != b->created_ms) return a->created_ms > b->created_ms;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "") > 0;
}

int sbx_warm_plan(int want, const struct sbx_warm_claim *c, size_t n, size_t *del, size_t *ndel) {
    size_t live = 0;
    *ndel = 0;
    if (want < 0) want = 0;
    for (size_t i = 0; i < n; i++)
        if (!c[i].terminating) del[live++] = i;
    if ((size_t)want >= live) return want - (int)live;
    /* Order the live ones so that those to give up come first (insertion sort: pools are small). */
    for (size_t i = 1; i < live; i++) {
        size_t x = del[i], j = i;
        while (j > 0 && excess_before(&c[x], &c[del[j - 1]])) { del[j] = del[j - 1]; j--; }
        del[j] = x;
    }
    *ndel = live - (size_t)want;
    return 0;
}

size_t sbx_warm_candidates(const struct sbx_warm_claim *c, size_t n, const char *sandbox_uid, size_t *order) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].bound && !c[i].terminating && c[i].name && c[i].rv) order[k++] = i;
    for (size_t i = 1; i < k; i++) {
        size_t x = order[i], j = i;
        while (j > 0 && strcmp(c[x].name, c[order[j - 1]].name) < 0) { order[j] = order[j - 1]; j--; }
        order[j] = x;
    }
    if (k < 2 || !sandbox_uid) return k;
    /* Rotate by the uid's hash. */
    size_t start = (size_t)(fnv1a(UINT64_C(14695981039346656037), sandbox_uid, strlen(sandbox_uid)) % k);
    for (size_t r = 0; r < start; r++) {
        size_t first = order[0];
        memmove(order, order + 1, (k - 1) * sizeof(*order));
        order[k - 1] = first;
    }
    return k;
}

int sbx_warm_sandbox_key(const struct sbx_spec *s, char key[SBX_WARM_KEY_LEN]) {
    if (!s || s->workspace_from) return 0;
    sbx_warm_key(s->storage_class, s->workspace_bytes, key);
    return 1;
}

int sbx_warm_claim_fits(const struct sbx_spec *s, const char *claim_class, const char *claim_request,
                        const cJSON *access_modes) {
    int64_t req;
    if (!claim_request || qty_parse_memory(claim_request, &req) < 0 || req != s->workspace_bytes) return 0;
    if (s->storage_class && (!claim_class || strcmp(s->storage_class, claim_class) != 0)) return 0;
    /* The informer keeps no access modes (NULL): they are the pool's own, ReadWriteOnce. */
    if (access_modes) {
        const cJSON *m = cJSON_GetArrayItem(access_modes, 0);
        if (cJSON_GetArraySize(access_modes) != 1 || !cJSON_IsString(m) ||
            strcmp(m->valuestring, SBX_WARM_ACCESS_MODE) != 0)
            return 0;
    }
    return 1;
}

cJSON *sbx_warm_build_claim(const char *ns, const struct sbx_warm_want *want) {
    char size[32];
    cJSON *pvc = cJSON_CreateObject(), *md, *labels, *spec, *modes, *refs, *ref;
    if (!pvc || !ns || qty_format_memory(want->bytes, size, sizeof(size)) != 0) goto err;
    if (!cJSON_AddStringToObject(pvc, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(pvc, "kind", "PersistentVolumeClaim") ||
        !(md = cJSON_AddObjectToObject(pvc, "metadata")) ||
        !cJSON_AddStringToObject(md, "generateName", SBX_WARM_NAME_PREFIX) ||
        !cJSON_AddStringToObject(md, "namespace", ns) ||
        !(labels = cJSON_AddObjectToObject(md, "labels")) ||
        !cJSON_AddStringToObject(labels, SBX_LABEL_MANAGED_BY, SBX_MANAGED_BY) ||
        !cJSON_AddStringToObject(labels, SBX_LABEL_NAME, "") ||
        !cJSON_AddStringToObject(labels, SBX_LABEL_WARM_POOL, want->key))
        goto err;
    if (want->owner_class) {
        if (!(refs = cJSON_AddArrayToObject(md, "ownerReferences")) || !(ref = cJSON_CreateObject())) goto err;
        cJSON_AddItemToArray(refs, ref);
        /* Not a controller reference, no blockOwnerDeletion: the class does not manage the
         * claim, it only takes it along when it goes. */
        if (!cJSON_AddStringToObject(ref, "apiVersion", SBX_API_VERSION) ||
            !cJSON_AddStringToObject(ref, "kind", "SandboxClass") ||
            !cJSON_AddStringToObject(ref, "name", want->owner_class) ||
            !cJSON_AddStringToObject(ref, "uid", want->owner_uid ? want->owner_uid : ""))
            goto err;
    }
    if (!(spec = cJSON_AddObjectToObject(pvc, "spec")) || !(modes = cJSON_AddArrayToObject(spec, "accessModes")) ||
        !cJSON_AddItemToArray(modes, cJSON_CreateString(SBX_WARM_ACCESS_MODE)) ||
        (want->storage_class && !cJSON_AddStringToObject(spec, "storageClassName", want->storage_class)) ||
        !cJSON_AddStringToObject(spec, "volumeMode", "Filesystem") ||
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "resources"), "requests"),
                                 "storage", size))
        goto err;
    return pvc;
err:
    cJSON_Delete(pvc);
    return NULL;
}

cJSON *sbx_warm_adopt_patch(const struct sbx_owner *o, const struct sbx_spec *s, const char *claim,
                            const char *rv, int64_t now_ms) {
    cJSON *patch = cJSON_CreateObject(), *md = NULL, *pm;
    char when[40];
    if (!patch || !rv || !(md = sbx_build_owned_meta(o, s, claim))) goto err;
    kj_time_format(now_ms, when, sizeof(when));
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    if (!labels || !cJSON_AddNullToObject(labels, SBX_LABEL_WARM_POOL) || !ann ||
        !cJSON_AddStringToObject(ann, SBX_ANN_WARM_ADOPTED, when))
        goto err;
    if (!(pm = cJSON_AddObjectToObject(patch, "metadata")) || !cJSON_AddStringToObject(pm, "resourceVersion", rv))
        goto err;
    static const char *const moved[] = {"labels", "annotations", "ownerReferences"};
    for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
        cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(md, moved[i]);
        if (!v) goto err;
        cJSON_AddItemToObject(pm, moved[i], v);
    }
    cJSON_Delete(md);
    return patch;
err:
    cJSON_Delete(md);
    cJSON_Delete(patch);
    return NULL;
}

int sbx_warm_pod_starting(const cJSON *pod) {
    struct sbx_meta m;
    sbx_meta_read(pod, &m);
    const char *by = sbx_meta_label(&m, SBX_LABEL_MANAGED_BY), *name = sbx_meta_label(&m, SBX_LABEL_NAME);
    if (!by || strcmp(by, SBX_MANAGED_BY) != 0 || !name || !*name || sbx_meta_label(&m, SBX_LABEL_WARM_POOL) ||
        m.deleting)
        return 0;
    const char *ready = kj_str(kj_condition(pod, "Ready"), "status");
    return !ready || strcmp(ready, "True") != 0;
}

int64_t sbx_warm_refill_wait(int starting, int64_t *since_ms, int64_t now_ms) {
    if (!starting) {
        *since_ms = 0;
        return 0;
    }
    if (*since_ms <= 0) *since_ms = now_ms;
    int64_t left = *since_ms + SBX_WARM_REFILL_YIELD_MAX_MS - now_ms;
    if (left <= 0) return 0;   /* waited long enough: the pool refills beside the starts */
    return left < SBX_WARM_REFILL_RECHECK_MS ? left : SBX_WARM_REFILL_RECHECK_MS;
}
