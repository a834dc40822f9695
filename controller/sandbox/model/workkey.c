/* sandbox/model/workkey.c — the work queue's keys, typed: see workkey.h. */
#include "sandbox/model/workkey.h"

#include <stdio.h>
#include <string.h>

#define WARM_POOL_NAME "#warm"
#define OWNERLESS_NAME "#ownerless"

int sbx_work_key_parse(const char *key, struct sbx_work_key *k) {
    const char *slash = key ? strchr(key, '/') : NULL;
    if (!slash) return -1;
    size_t nslen = (size_t)(slash - key), namelen = strlen(slash + 1);
    if (!nslen || nslen >= sizeof(k->ns) || !namelen || namelen >= sizeof(k->name)) return -1;
    memcpy(k->ns, key, nslen);
    k->ns[nslen] = 0;
    const char *name = slash + 1;
    k->name[0] = 0;
    if (!strcmp(name, WARM_POOL_NAME)) {
        k->kind = SBX_WORK_WARM_POOL;
    } else if (!strcmp(name, OWNERLESS_NAME)) {
        k->kind = SBX_WORK_OWNERLESS;
    } else if (name[0] == '#') {
        return -1;
    } else {
        k->kind = SBX_WORK_SANDBOX;
        memcpy(k->name, name, namelen + 1);
    }
    return 0;
}

int sbx_work_key_format(enum sbx_work_kind kind, const char *ns, const char *name, char *out, size_t n) {
    const char *tail = kind == SBX_WORK_WARM_POOL ? WARM_POOL_NAME : kind == SBX_WORK_OWNERLESS ? OWNERLESS_NAME : name;
    int w = ns && tail && *ns && *tail ? snprintf(out, n, "%s/%s", ns, tail) : -1;
    if (w < 0 || (size_t)w >= n) {
        if (n) out[0] = 0;
        return -1;
    }
    return 0;
}
