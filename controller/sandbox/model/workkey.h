/* sandbox/model/workkey.h — the work queue's keys, typed (pure). A key names one of three passes:
 * a Sandbox's ("<ns>/<name>"), a namespace's warm pool ("<ns>/#warm") or a namespace's sweep
 * of ownerless objects ("<ns>/#ownerless"). '#' is not allowed in an object's name, so a
 * Sandbox can never be taken for the other two. The queue holds the text form (it dedups
 * on it); the controller reads it back with sbx_work_key_parse and dispatches on the kind. */
#ifndef YAO_SANDBOX_WORKKEY_H
#define YAO_SANDBOX_WORKKEY_H

#include <stddef.h>

enum sbx_work_kind {
    SBX_WORK_SANDBOX,     /* one Sandbox's pass (reconcile.c) */
    SBX_WORK_WARM_POOL,   /* the warm workspaces of a namespace (warm.c) */
    SBX_WORK_OWNERLESS    /* the ownerless objects of a namespace (orphans.c) */
};

/* Longest namespace and name kept (both at most 253 in Kubernetes). */
#define SBX_WORK_PART_MAX 256
#define SBX_WORK_KEY_MAX (2 * SBX_WORK_PART_MAX)

struct sbx_work_key {
    enum sbx_work_kind kind;
    char ns[SBX_WORK_PART_MAX];
    char name[SBX_WORK_PART_MAX];   /* the Sandbox's name; "" for the namespace passes */
};

/* Read "<ns>/<rest>": 0, or -1 when it is no key (no '/', an empty or too long part, or a
 * '#' name that is neither namespace pass). */
int sbx_work_key_parse(const char *key, struct sbx_work_key *k);
/* The text of a key: name is the Sandbox's for SBX_WORK_SANDBOX, ignored otherwise. 0, or
 * -1 when it does not fit (out is then ""). */
int sbx_work_key_format(enum sbx_work_kind kind, const char *ns, const char *name, char *out, size_t n);

#endif
