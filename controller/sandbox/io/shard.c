/* sandbox/io/shard.c — the I/O side of sharding (decisions in shard_decide.c): at the start of a
 * sharded replica, and on a create that finds its object already there, the objects this
 * shard owns but that do not carry its label yet — made before sharding was turned on, or
 * under another --shards — are labelled, so its label-selected informers see them. Until
 * then no shard sees them, and none deletes them (orphans.c never touches an object of
 * another shard's user). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/kjson.h"
#include "base/log.h"
#include "sandbox/model/objects.h"
#include "sandbox/io/owned.h"
#include "sandbox/io/shard.h"
#include "sandbox/decide/shard_decide.h"
#include "sandbox/model/spec.h"

/* Put this shard's label on obj (in ns/resource), with its uid as a precondition (a
 * successor of the same name is left alone). 0 (labelled, gone, or replaced) or -1. */
static int label_one(const struct sbx_deps *deps, const char *resource, const cJSON *obj, struct kube_error *err) {
    struct sbx_meta m;
    sbx_meta_read(obj, &m);
    const char *ns = m.namespace_, *name = m.name, *uid = m.uid;
    if (!ns || !name || !uid) return 0;
    static const char *const keys[] = {SBX_LABEL_SHARD, SBX_LABEL_SHARDS};
    const char *const values[] = {deps->shard_label->shard, deps->shard_label->shards};
    int rc = sbx_patch_owned_map(deps, ns, resource, name, uid, "labels", 2, keys, values, err);
    if (rc == 0)
        LOGI("msg=\"shard: labelled as this shard's\" shard=%s shards=%s %s=%s/%s", deps->shard_label->shard,
             deps->shard_label->shards, resource, ns, name);
    return rc < 0 ? -1 : 0;
}

int sbx_shard_adopt_existing(const struct sbx_deps *deps, const char *resource, const cJSON *obj, struct kube_error *err) {
    if (!deps->shard_label || !sbx_shard_should_adopt(obj, deps->shard_key[0], deps->shard_key[1])) return 0;
    return label_one(deps, resource, obj, err);
}

int sbx_shard_migrate(const struct sbx_deps *deps, const atomic_int *stop, struct kube_error *err) {
    static const char *const resources[] = {"pods", "persistentvolumeclaims", "services", "networkpolicies"};
    if (!deps->shard_label) return 0;
    char selector[160];
    /* Objects made before sharding or under another S: "!=" also matches objects without
     * the label. In steady state none, so the list sends nothing (the API server still
     * reads the kind through, a page of 500 at a time). */
    snprintf(selector, sizeof(selector), "%s,%s!=%d", SBX_LABEL_NAME, SBX_LABEL_SHARDS, deps->shard_key[0]);
    int labelled = 0, seen = 0;
    for (size_t r = 0; r < sizeof(resources) / sizeof(resources[0]); r++) {
        if (r == 3 && !deps->netpols_on) continue;
        char *cont = NULL;
        for (;;) {
            char path[2048];
            sbx_core_path(path, sizeof(path), deps->namespace_, resources[r]);
            /* no resourceVersion: a consistent read, paginated by limit */
            if (kube_path_add_query(path, sizeof(path), "labelSelector", selector) < 0 ||
                kube_path_add_query(path, sizeof(path), "limit", "500") < 0 ||
                (cont && kube_path_add_query(path, sizeof(path), "continue", cont) < 0)) {
                free(cont);
                kube_error_set(err, "shard migration: path too long");
                return -1;
            }
            free(cont);
            cont = NULL;
            cJSON *list = NULL;
            long st = kube_get(deps->client, path, &list, err);
            if (st != 200) { cJSON_Delete(list); return -1; }
            const cJSON *it;
            cJSON_ArrayForEach(it, kj_path(list, "items")) {
                if (stop && atomic_load(stop)) {
                    cJSON_Delete(list);
                    kube_error_set(err, "stopped");
                    return -1;
                }
                seen++;
                if (!sbx_shard_should_adopt(it, deps->shard_key[0], deps->shard_key[1])) continue;
                if (label_one(deps, resources[r], it, err) < 0) { cJSON_Delete(list); return -1; }
                labelled++;
            }
            struct kube_list_meta lm;
            kube_list_meta_read(list, &lm);
            if (lm.continue_ && !(cont = strdup(lm.continue_))) {
                cJSON_Delete(list);
                kube_error_oom(err);
                return -1;
            }
            cJSON_Delete(list);
            if (!cont) break;
        }
    }
    LOGI("msg=\"shard: start\" shards=%d shard=%d other_or_no_shards_label=%d labelled=%d", deps->shard_key[0],
         deps->shard_key[1], seen, labelled);
    return 0;
}
