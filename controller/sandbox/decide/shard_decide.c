/* sandbox/decide/shard_decide.c — the shard of a Sandbox and of what it owns (see shard_decide.h). */
#include "sandbox/decide/shard_decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kjson.h"
#include "runtime/leaseview.h"
#include "sandbox/model/objects.h"
#include "sandbox/model/sandboxview.h"
#include "sandbox/model/spec.h"

uint64_t sbx_fnv1a64(const void *data, size_t n, uint64_t h) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

int sbx_shard_of(const char *ns, const char *user, int shards) {
    if (shards <= 1) return 0;
    uint64_t h = SBX_FNV1A64_INIT;
    if (ns) h = sbx_fnv1a64(ns, strlen(ns), h);
    h = sbx_fnv1a64("/", 1, h);
    if (user) h = sbx_fnv1a64(user, strlen(user), h);
    return (int)(h % (uint64_t)shards);
}

int sbx_shard_of_sandbox(const cJSON *sandbox, int shards) {
    struct sbx_sandbox_view v;   /* the filter's object, before it enters the cache */
    sbx_sandbox_view_parse(sandbox, &v);
    return sbx_shard_of(v.meta.namespace_, v.user_id, shards);
}

int sbx_shard_keep(void *ud, const cJSON *sandbox) {
    const int *s = ud;
    return s[0] <= 1 || sbx_shard_of_sandbox(sandbox, s[0]) == s[1];
}

void sbx_shard_labels_init(struct sbx_shard_labels *l, int shards, int shard) {
    snprintf(l->shard, sizeof(l->shard), "%d", shard);
    snprintf(l->shards, sizeof(l->shards), "%d", shards);
}

int sbx_shard_selector(const char *name_label, int shards, int shard, char *out, size_t outlen) {
    int n = shards <= 1 ? snprintf(out, outlen, "%s", name_label)
                        : snprintf(out, outlen, "%s,%s=%d,%s=%d", name_label, SBX_LABEL_SHARD, shard,
                                   SBX_LABEL_SHARDS, shards);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* The number of a label value, or -1 (missing, not a number, or not below limit). */
static int label_number(const char *v, int limit) {
    if (!v || !*v || strlen(v) > 5) return -1;
    int n = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        n = n * 10 + (*p - '0');
    }
    if (v[0] == '0' && v[1]) return -1;   /* "07" is not how the controller writes 7 */
    return n < limit ? n : -1;
}

int sbx_shard_should_adopt(const cJSON *obj, int shards, int me) {
    if (shards <= 1) return 0;
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    int of = label_number(sbx_meta_label(&m, SBX_LABEL_SHARDS), SBX_SHARDS_MAX + 1);
    int have = label_number(sbx_meta_label(&m, SBX_LABEL_SHARD), shards);
    if (of == shards && have >= 0) return 0;   /* current: that shard's */
    const char *user = sbx_meta_annotation(&m, SBX_ANN_USER_ID);
    if (user) return sbx_shard_of(m.namespace_, user, shards) == me;
    return me == 0;
}

/* Is name base itself or base-shard-<digits>? */
static int in_family(const char *name, const char *base) {
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0) return 0;
    if (!name[n]) return 1;
    if (strncmp(name + n, "-shard-", 7) != 0 || !name[n + 7]) return 0;
    for (const char *p = name + n + 7; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

int sbx_shard_lease_blocks(const cJSON *lease, const char *base, const char *own_name, int shards, int64_t now_ms,
                           char *why, size_t whylen) {
    struct kube_lease_view v;
    kube_lease_view_read(lease, &v);
    const char *name = v.name, *holder = v.holder;
    if (!name || !in_family(name, base) || !kube_lease_held_at(&v, now_ms)) return 0;   /* free, or expired */
    struct sbx_meta m;
    sbx_meta_read(lease, &m);
    const char *count = sbx_meta_label(&m, SBX_LABEL_SHARDS), *acting = sbx_meta_label(&m, SBX_LABEL_ACTING);
    char mine[16];
    snprintf(mine, sizeof(mine), "%d", shards > 1 ? shards : 1);
    if (count ? !strcmp(count, mine) || !acting || strcmp(acting, "true") != 0 : !strcmp(name, own_name)) return 0;
    snprintf(why, whylen, "Lease %s is held by %s of %s %s", name, holder,
             count ? "--shards" : "a controller that does not say its", count ? count : "--shards");
    return 1;
}
