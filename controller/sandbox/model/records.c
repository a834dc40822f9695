/* sandbox/model/records.c — one record per Sandbox, keyed by UID (see records.h). */
#include "sandbox/model/records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An object created and not yet seen in the cache. */
struct sbx_expectation {
    char uid[64];                /* "" = none */
    int64_t until_ms;
};

/* Most records, most of the time, expect nothing and are not deleted: both parts are
 * allocated only while needed (a Sandbox's record is ~64 bytes at rest, not ~600). */
struct sbx_record {
    struct sbx_expectation *expect;   /* SBX_EXPECT_KINDS slots, by kind; NULL = none pending */
    struct sbx_gone *gone;            /* set once deleted */
    char resize_refused_pod[64];      /* the pod whose resize the API server refused ("" = none) */
    char key[];                       /* "ns/name" */
};

static void record_free(void *v) {
    struct sbx_record *rec = v;
    if (!rec) return;
    free(rec->expect);
    free(rec->gone);
    free(rec);
}

/* Clear the kind slot of rec; the slots go once all are empty. */
static void expect_clear(struct sbx_record *rec, enum sbx_expect_kind kind) {
    rec->expect[kind].uid[0] = 0;
    rec->expect[kind].until_ms = 0;
    for (int k = 0; k < SBX_EXPECT_KINDS; k++)
        if (rec->expect[k].uid[0]) return;
    free(rec->expect);
    rec->expect = NULL;
}

void sbx_records_init(struct sbx_records *r) {
    pthread_mutex_init(&r->lock, NULL);
    r->tombs = NULL;
    r->ntombs = r->tombs_head = r->tombs_cap = 0;
    strmap_init(&r->by_uid);
    strmap_init(&r->by_key);
}

void sbx_records_free(struct sbx_records *r) {
    for (size_t i = r->tombs_head; i < r->ntombs; i++) free(r->tombs[i].uid);
    free(r->tombs);
    strmap_clear(&r->by_uid, record_free);
    strmap_clear(&r->by_key, free);
    pthread_mutex_destroy(&r->lock);
}

size_t sbx_records_count(struct sbx_records *r) {
    pthread_mutex_lock(&r->lock);
    size_t n = r->by_uid.count;
    pthread_mutex_unlock(&r->lock);
    return n;
}

static void drop(struct sbx_records *r, const char *uid);

/* Point key's index entry at uid. -1 on ENOMEM. A deleted Sandbox's record the key named
 * goes: only the key reached it (a same-named successor's, or the deletion noted from an
 * owned object's echo before the Sandbox's own arrived). */
static int index_key(struct sbx_records *r, const char *key, const char *uid) {
    const char *cur = strmap_get(&r->by_key, key);
    if (cur && !strcmp(cur, uid)) return 0;
    struct sbx_record *prev = cur ? strmap_get(&r->by_uid, cur) : NULL;
    if (prev && prev->gone) drop(r, cur);   /* frees cur and key's entry */
    char *copy = strdup(uid);
    void *old = NULL;
    if (!copy || strmap_put(&r->by_key, key, copy, &old) < 0) {
        free(copy);
        return -1;
    }
    free(old);
    return 0;
}

/* The record of uid, created for key when missing (NULL on ENOMEM). Lock held. */
static struct sbx_record *get_or_add(struct sbx_records *r, const char *key, const char *uid) {
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    if (rec) return rec;
    size_t klen = strlen(key);
    rec = calloc(1, sizeof(*rec) + klen + 1);
    if (!rec) return NULL;
    memcpy(rec->key, key, klen + 1);
    if (strmap_put(&r->by_uid, uid, rec, NULL) < 0) {
        free(rec);
        return NULL;
    }
    return rec;
}

int sbx_records_seen(struct sbx_records *r, const char *key, const char *uid) {
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = get_or_add(r, key, uid);
    int rc = rec ? index_key(r, key, uid) : -1;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int sbx_records_expect(struct sbx_records *r, const char *uid, enum sbx_expect_kind kind, const char *obj_uid,
                       int64_t until_ms) {
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    int rc = rec ? 0 : -1;
    if (rec && !rec->gone && !rec->expect && !(rec->expect = calloc(SBX_EXPECT_KINDS, sizeof(*rec->expect))))
        rc = -1;   /* out of memory: no expectation, the next pass may create twice and get a 409 */
    if (rec && rec->expect) {
        snprintf(rec->expect[kind].uid, sizeof(rec->expect[kind].uid), "%s", obj_uid);
        rec->expect[kind].until_ms = until_ms;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void sbx_records_observed(struct sbx_records *r, const char *uid, enum sbx_expect_kind kind, const char *obj_uid) {
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    if (rec && rec->expect && rec->expect[kind].uid[0] && !strcmp(rec->expect[kind].uid, obj_uid))
        expect_clear(rec, kind);
    pthread_mutex_unlock(&r->lock);
}

int64_t sbx_records_expecting(struct sbx_records *r, const char *uid, enum sbx_expect_kind kind, int64_t now_ms) {
    int64_t left = 0;
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    if (rec && rec->expect && rec->expect[kind].uid[0]) {
        if (rec->expect[kind].until_ms > now_ms) left = rec->expect[kind].until_ms - now_ms;
        else expect_clear(rec, kind);
    }
    pthread_mutex_unlock(&r->lock);
    return left;
}

/* Remove uid's record (lock held), and key's index entry if it is this uid. */
static void drop(struct sbx_records *r, const char *uid) {
    struct sbx_record *rec = strmap_remove(&r->by_uid, uid);
    if (!rec) return;
    const char *cur = strmap_get(&r->by_key, rec->key);
    if (cur && !strcmp(cur, uid)) free(strmap_remove(&r->by_key, rec->key));
    record_free(rec);
}

void sbx_records_deleted(struct sbx_records *r, const char *key, const char *uid, const char *pod,
                         const char *claim) {
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = get_or_add(r, key, uid);
    /* Out of memory for the names: the record stays undeleted, and the orphan sweep walks
     * the caches instead of looking them up by name. */
    if (rec && (rec->gone || (rec->gone = calloc(1, sizeof(*rec->gone))))) {
        free(rec->expect);
        rec->expect = NULL;
        snprintf(rec->gone->pod, sizeof(rec->gone->pod), "%s", pod ? pod : "");
        snprintf(rec->gone->claim, sizeof(rec->gone->claim), "%s", claim ? claim : "");
        /* the key now names this deleted Sandbox until a successor appears */
        index_key(r, key, uid);
    }
    pthread_mutex_unlock(&r->lock);
}

int sbx_records_gone(struct sbx_records *r, const char *key, char *uid, size_t uidlen, struct sbx_gone *out) {
    pthread_mutex_lock(&r->lock);
    const char *u = strmap_get(&r->by_key, key);
    struct sbx_record *rec = u ? strmap_get(&r->by_uid, u) : NULL;
    int yes = rec && rec->gone;
    if (yes) {
        snprintf(uid, uidlen, "%s", u);
        *out = *rec->gone;
    }
    pthread_mutex_unlock(&r->lock);
    return yes;
}

int64_t sbx_records_orphans_seen(struct sbx_records *r, const char *uid, int64_t now_ms) {
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    int64_t first = now_ms;
    if (rec && rec->gone) {
        if (!rec->gone->orphans_seen_ms) rec->gone->orphans_seen_ms = now_ms;
        first = rec->gone->orphans_seen_ms;
    }
    pthread_mutex_unlock(&r->lock);
    return first;
}

void sbx_records_resize_refused(struct sbx_records *r, const char *uid, const char *pod_uid) {
    if (!uid || !pod_uid) return;
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    if (rec) snprintf(rec->resize_refused_pod, sizeof(rec->resize_refused_pod), "%s", pod_uid);
    pthread_mutex_unlock(&r->lock);
}

int sbx_records_resize_was_refused(struct sbx_records *r, const char *uid, const char *pod_uid) {
    if (!uid || !pod_uid || !*pod_uid) return 0;
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    int refused = rec && !strcmp(rec->resize_refused_pod, pod_uid);
    pthread_mutex_unlock(&r->lock);
    return refused;
}

void sbx_records_orphans_deleted(struct sbx_records *r, const char *uid, int64_t now_ms) {
    pthread_mutex_lock(&r->lock);
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    if (rec && rec->gone) rec->gone->orphans_seen_ms = now_ms;
    pthread_mutex_unlock(&r->lock);
}

/* Drop the tombstones older than now_ms - SBX_RECORD_TOMBSTONE_MS (lock held). */
static void purge_tombs(struct sbx_records *r, int64_t now_ms) {
    while (r->tombs_head < r->ntombs && now_ms - r->tombs[r->tombs_head].at_ms >= SBX_RECORD_TOMBSTONE_MS) {
        char *uid = r->tombs[r->tombs_head++].uid;
        struct sbx_record *rec = strmap_get(&r->by_uid, uid);
        if (rec && rec->gone && rec->gone->swept_ms) drop(r, uid);
        free(uid);
    }
    if (r->tombs_head == r->ntombs) {
        r->tombs_head = r->ntombs = 0;
    } else if (r->tombs_head > r->ntombs / 2) {   /* keep the live part at the front */
        memmove(r->tombs, r->tombs + r->tombs_head, (r->ntombs - r->tombs_head) * sizeof(*r->tombs));
        r->ntombs -= r->tombs_head;
        r->tombs_head = 0;
    }
}

void sbx_records_swept(struct sbx_records *r, const char *uid, int64_t now_ms) {
    pthread_mutex_lock(&r->lock);
    purge_tombs(r, now_ms);
    struct sbx_record *rec = strmap_get(&r->by_uid, uid);
    if (rec && rec->gone && !rec->gone->swept_ms) {
        char *copy = strdup(uid);
        if (copy && r->ntombs == r->tombs_cap) {
            size_t cap = r->tombs_cap ? r->tombs_cap * 2 : 64;
            struct sbx_tomb *t = realloc(r->tombs, cap * sizeof(*t));
            if (t) { r->tombs = t; r->tombs_cap = cap; }
        }
        if (copy && r->ntombs < r->tombs_cap) {
            rec->gone->swept_ms = now_ms;
            r->tombs[r->ntombs++] = (struct sbx_tomb){copy, now_ms};
        } else {
            free(copy);
            drop(r, uid);   /* out of memory: no tombstone, the record goes at once */
        }
    } else if (rec && !rec->gone) {
        drop(r, uid);
    }
    pthread_mutex_unlock(&r->lock);
}
