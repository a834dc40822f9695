/* sandbox/model/records.h — what the controller remembers about each Sandbox between passes, in
 * one record per Sandbox keyed by its UID (after sample-controller's "expectations"): the
 * pod and claim it just created and the caches have not shown yet (so the echo of its own
 * status write does not create them a second time) and, once the Sandbox is deleted, the
 * names of the pod and claim it owned and when its orphans were first seen. (Capacity
 * slots are kept by sandbox/decide/capacity_decide.c.) A record is created with the Sandbox and destroyed
 * with it: a new Sandbox of the same name is another UID and starts from nothing.
 * Thread-safe (one lock). Pure bookkeeping: no I/O, the clock is passed in. */
#ifndef YAO_SANDBOX_RECORDS_H
#define YAO_SANDBOX_RECORDS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "base/strmap.h"

#define SBX_RECORD_NAME_MAX 128

/* What a deleted Sandbox owned: found by name, no walk over the caches. */
struct sbx_gone {
    char pod[SBX_RECORD_NAME_MAX], claim[SBX_RECORD_NAME_MAX];
    int64_t orphans_seen_ms;   /* when its objects were first seen after the deletion (0 = not yet) */
    int64_t swept_ms;          /* when all of it was found gone (0 = not yet): a tombstone */
};

/* How long a swept Sandbox's record stays as a tombstone: events about its objects still
 * queue its key for a while (the deletions the sweep waited for), and without the
 * tombstone each such pass walked every cache (O(N) per deleted Sandbox). */
#define SBX_RECORD_TOMBSTONE_MS 60000

struct sbx_tomb { char *uid; int64_t at_ms; };

struct sbx_records {
    pthread_mutex_t lock;
    struct strmap by_uid;      /* uid -> struct sbx_record */
    struct strmap by_key;      /* "ns/name" -> the uid of its newest record (a copy) */
    struct sbx_tomb *tombs;    /* swept records, oldest first, from tombs_head */
    size_t ntombs, tombs_head, tombs_cap;
};

void sbx_records_init(struct sbx_records *r);
void sbx_records_free(struct sbx_records *r);
/* Number of records, tombstones included (for tests and metrics). */
size_t sbx_records_count(struct sbx_records *r);

/* The Sandbox key has uid now: make sure it has a record, and make it the key's current
 * one. A record of an earlier Sandbox of that name stays under its own UID until its
 * orphans are swept. 0 or -1 (ENOMEM). */
int sbx_records_seen(struct sbx_records *r, const char *key, const char *uid);

/* Create expectations: the kinds of object a Sandbox creates. */
enum sbx_expect_kind {
    SBX_EXPECT_POD = 0, SBX_EXPECT_CLAIM = 1, SBX_EXPECT_SERVICE = 2, SBX_EXPECT_NETPOL = 3,
    SBX_EXPECT_COPIER = 4,   /* a fork's copier pod (sandbox/model/workspacecopy.h) */
    SBX_EXPECT_KINDS
};
/* The Sandbox uid created an object of kind with obj_uid: until the cache shows it (or
 * until until_ms), its absence from the cache means "not seen yet", not "missing". 0 or
 * -1 (the record is unknown, or out of memory). */
int sbx_records_expect(struct sbx_records *r, const char *uid, enum sbx_expect_kind kind, const char *obj_uid,
                       int64_t until_ms);
/* The cache showed (added, changed or deleted) an object of kind with obj_uid controlled
 * by the Sandbox uid: an expectation for it is met. */
void sbx_records_observed(struct sbx_records *r, const char *uid, enum sbx_expect_kind kind, const char *obj_uid);
/* How long yet the Sandbox uid expects an object of kind its cache does not show (ms; 0
 * when it expects none, or the expectation expired at now_ms and is dropped). */
int64_t sbx_records_expecting(struct sbx_records *r, const char *uid, enum sbx_expect_kind kind, int64_t now_ms);

/* The Sandbox uid was deleted: keep the names of what it owned for the orphan sweep. */
void sbx_records_deleted(struct sbx_records *r, const char *key, const char *uid, const char *pod,
                         const char *claim);
/* The deleted Sandbox that was last known under key: its uid (out >= 64 bytes) and names.
 * 1 when there is one, 0 when the key has no record or its record is not deleted. */
int sbx_records_gone(struct sbx_records *r, const char *key, char *uid, size_t uidlen, struct sbx_gone *out);
/* Note the orphans of deleted uid were seen at now_ms (kept if already set); returns the
 * first time they were seen. */
int64_t sbx_records_orphans_seen(struct sbx_records *r, const char *uid, int64_t now_ms);
/* The sweep deleted the orphans of uid at now_ms: the grace starts again from there, so a
 * pass its own deletions queue (before the caches show them terminating) does not delete
 * them a second time. */
void sbx_records_orphans_deleted(struct sbx_records *r, const char *uid, int64_t now_ms);
/* The API server refused to resize the Sandbox uid's pod pod_uid in place (pods/resize: a
 * node without in-place resize, a cluster without the subresource, no RBAC for it): the
 * warm-idle tier is not tried again on that pod (a new pod is tried afresh; so is this one
 * after a restart of the controller, once). */
void sbx_records_resize_refused(struct sbx_records *r, const char *uid, const char *pod_uid);
/* 1 when the Sandbox uid's pod pod_uid had its resize refused (above). */
int sbx_records_resize_was_refused(struct sbx_records *r, const char *uid, const char *pod_uid);
/* The deleted Sandbox uid's objects are all gone (now_ms): its record becomes a tombstone
 * (sbx_records_gone reports swept_ms), dropped SBX_RECORD_TOMBSTONE_MS later — tombstones
 * past that age are dropped by this call (its key leaves the index if it pointed to it). */
void sbx_records_swept(struct sbx_records *r, const char *uid, int64_t now_ms);

#endif
