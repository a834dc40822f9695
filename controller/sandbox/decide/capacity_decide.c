/* sandbox/decide/capacity_decide.c — the running cap's bookkeeping (see capacity_decide.h).
 *
 * One entry per Sandbox uid (also for a uid that only pods name so far: a pod may reach
 * the cache before its Sandbox), one per user (a userID within one namespace, kept as
 * "<namespace>/<userID>": the namespace is the tenant boundary, so no tenant can fill or
 * wait on another tenant's user by naming them) with the slots it holds and its line of
 * Sandboxes in line, sorted by (creationTimestamp, key). Users with someone in line sit
 * in an array, so a position is found by looking at each such user once (O(U)) and a
 * binary search in its line.
 *
 * The class's per-user cap: one bucket per (user, class) with the slots that user's
 * Sandboxes of that class hold, the class's cap and its own waiting list (same order).
 * Every waiting Sandbox is in its bucket's list; the first (cap - held) of that list, all
 * when the class has no cap, are also in the user's line (promoted), the rest are out of
 * every line. bucket_fix keeps this prefix after each change of the bucket (a slot taken
 * or freed, a Sandbox joining or leaving, the cap changed): it moves only the boundary, so
 * a freed slot promotes exactly the oldest one held back and nothing is walked.
 *
 * Reservations are few (at most the cap, for a few seconds each) and sit in a list that is
 * purged of expired ones before each decision. */
#include "sandbox/decide/capacity_decide.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

struct user;
struct bucket;

struct entry {
    const char *uid;             /* its key in entries (owned by the map) */
    char *key;                   /* "ns/name" (NULL until the Sandbox is known) */
    struct user *user;           /* while known */
    int64_t created_ms;
    int known;                   /* the Sandbox is in the cache */
    int pods;                    /* pods controlled by it that hold a slot */
    int in_line;                 /* in its user's line (promoted by its bucket) */
    int waiting;                 /* in its bucket's list */
    char *cls;                   /* its SandboxClass (NULL = none) */
    int cls_across;              /* that class counts its users across namespaces */
    int resolved;                /* a pass has told its class (not only the Sandbox's className) */
    struct bucket *b;            /* (user, class) while known */
    int64_t reserved_until_ms;   /* 0 = no reservation */
    struct entry *rprev, *rnext; /* the reservation list */
    /* Reclaim: reclaimable once idle for reclaim_after_ms (0 = not; then not in the list
     * of candidates), last used at reclaim_used_ms; chosen, under way until
     * reclaiming_until_ms. */
    int64_t reclaim_after_ms, reclaim_used_ms, reclaiming_until_ms;
    int reclaim_first;           /* warm-idle: chosen before any that is not */
    struct entry *cprev, *cnext; /* the candidates' list */
};

struct user {
    char *name;                  /* "<namespace>/<userID>" */
    int held;                    /* slots its Sandboxes hold */
    int refs;                    /* known entries of this user */
    int unresolved;              /* slots held by its Sandboxes whose class no pass told yet */
    uint64_t last_admitted;      /* sequence number of its last admission (0 = none yet) */
    struct entry **line;         /* waiting, by (created, key) */
    size_t n, cap;
    size_t widx;                 /* its index in waiting_users while n > 0 */
    size_t cursor;               /* scratch for sbx_slots_wake */
};

/* The Sandboxes of one user in one class (or in none). A user is one userID of one
 * namespace, except in a class that counts its users across namespaces
 * (maxRunningPerUserScope: Cluster): there one bucket holds that userID's Sandboxes of
 * every namespace, each still in the line of its own namespace's user. */
struct bucket {
    char *key;                   /* "<class>/<namespace>/<userID>"; across namespaces the
                                    namespace is "*", which no namespace is named (a
                                    class name has no '/') */
    int cap;                     /* the class's maxRunningPerUser (0 = none) */
    int held;                    /* slots its Sandboxes hold */
    int refs;                    /* known entries in it */
    struct entry **list;         /* waiting, by (created, key) */
    size_t n, size;
    size_t promoted;             /* list[0 .. promoted) are in the user's line */
};

struct sbx_slots {
    pthread_mutex_t lock;
    struct sbx_cap_limits limits;
    struct strmap entries;       /* uid -> struct entry */
    struct strmap users;         /* "<namespace>/<userID>" -> struct user */
    struct strmap buckets;       /* bucket key (see struct bucket) -> struct bucket */
    struct user **waiting_users; /* users with n > 0 */
    size_t nwaiting_users, waiting_users_cap;
    struct entry *reserved;      /* head of the reservation list */
    struct entry *candidates;    /* head of the reclaimable ones' list */
    int held;                    /* slots held in all */
    int unresolved;              /* slots held in all by Sandboxes whose class no pass told yet */
    int waiting;                 /* Sandboxes waiting in all (in a bucket's list) */
    uint64_t admissions;         /* sequence of admissions, for users' turns */
};

/* ---- entries and users ----------------------------------------------------------------- */

static int holds(const struct entry *e) {
    return e->known && e->user && (e->pods > 0 || e->reserved_until_ms > 0);
}

/* Take e's slot out of the counters (before a change) ... */
static void unhold(struct sbx_slots *a, struct entry *e) {
    if (!holds(e)) return;
    a->held--;
    e->user->held--;
    e->b->held--;
    if (!e->resolved) { e->user->unresolved--; a->unresolved--; }
}

static void bucket_fix(struct sbx_slots *a, struct bucket *b);

/* ... and put it back (after); the bucket's line follows its slots. */
static void rehold(struct sbx_slots *a, struct entry *e) {
    if (!holds(e)) { if (e->known) bucket_fix(a, e->b); return; }
    a->held++;
    e->user->held++;
    e->b->held++;
    if (!e->resolved) { e->user->unresolved++; a->unresolved++; }
    bucket_fix(a, e->b);
}

/* Order in a user's line: oldest first, then by key. */
static int line_cmp(const struct entry *x, const struct entry *y) {
    if (x->created_ms != y->created_ms) return x->created_ms < y->created_ms ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Index of the first entry of u's line not before e. */
static size_t line_lower(const struct user *u, const struct entry *e) {
    size_t lo = 0, hi = u->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (line_cmp(u->line[mid], e) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int line_insert(struct sbx_slots *a, struct entry *e) {
    struct user *u = e->user;
    if (e->in_line) return 0;
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 4;
        struct entry **line = realloc(u->line, cap * sizeof(*line));
        if (!line) return -1;
        u->line = line;
        u->cap = cap;
    }
    if (u->n == 0) {
        if (a->nwaiting_users == a->waiting_users_cap) {
            size_t cap = a->waiting_users_cap ? a->waiting_users_cap * 2 : 8;
            struct user **w = realloc(a->waiting_users, cap * sizeof(*w));
            if (!w) return -1;
            a->waiting_users = w;
            a->waiting_users_cap = cap;
        }
        u->widx = a->nwaiting_users;
        a->waiting_users[a->nwaiting_users++] = u;
    }
    size_t i = line_lower(u, e);
    memmove(u->line + i + 1, u->line + i, (u->n - i) * sizeof(*u->line));
    u->line[i] = e;
    u->n++;
    e->in_line = 1;
    return 0;
}

static void line_remove(struct sbx_slots *a, struct entry *e) {
    struct user *u = e->user;
    if (!e->in_line) return;
    size_t i = line_lower(u, e);
    if (i < u->n && u->line[i] == e) {
        memmove(u->line + i, u->line + i + 1, (u->n - i - 1) * sizeof(*u->line));
        u->n--;
    }
    e->in_line = 0;
    if (u->n == 0) {
        struct user *last = a->waiting_users[--a->nwaiting_users];
        a->waiting_users[u->widx] = last;
        last->widx = u->widx;
    }
}

/* ---- buckets: (user, class) ------------------------------------------------------------ */

/* Index of the first entry of b's list not before e. */
static size_t list_lower(const struct bucket *b, const struct entry *e) {
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (line_cmp(b->list[mid], e) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* How many of b's list may be in the user's line: all without a class cap, else as many
 * as the class leaves the user room for. */
static size_t bucket_room(const struct bucket *b) {
    if (b->cap <= 0) return b->n;
    int room = b->cap - b->held;
    return room <= 0 ? 0 : (size_t)room < b->n ? (size_t)room : b->n;
}

/* Move the boundary of b's promoted prefix to its room: demote from the end of the
 * prefix, promote the oldest held back. (On ENOMEM fewer stay promoted: they wait.) */
static void bucket_fix(struct sbx_slots *a, struct bucket *b) {
    size_t k = bucket_room(b);
    while (b->promoted > k) line_remove(a, b->list[--b->promoted]);
    while (b->promoted < k && line_insert(a, b->list[b->promoted]) == 0) b->promoted++;
}

/* e starts waiting: into its bucket's list, and into its user's line when the class
 * leaves room for it. 0 or -1 (ENOMEM: nothing changed). */
static int wait_insert(struct sbx_slots *a, struct entry *e) {
    struct bucket *b = e->b;
    if (e->waiting) return 0;
    if (b->n == b->size) {
        size_t size = b->size ? b->size * 2 : 4;
        struct entry **list = realloc(b->list, size * sizeof(*list));
        if (!list) return -1;
        b->list = list;
        b->size = size;
    }
    size_t i = list_lower(b, e);
    if (i < b->promoted && line_insert(a, e) < 0) return -1;   /* it goes before a promoted one */
    memmove(b->list + i + 1, b->list + i, (b->n - i) * sizeof(*b->list));
    b->list[i] = e;
    b->n++;
    if (i < b->promoted) b->promoted++;
    e->waiting = 1;
    a->waiting++;
    bucket_fix(a, b);
    return 0;
}

/* e waits no more: out of its bucket's list and its user's line; the next held back in
 * its bucket may be promoted. */
static void wait_remove(struct sbx_slots *a, struct entry *e) {
    struct bucket *b = e->b;
    if (!e->waiting) return;
    size_t i = list_lower(b, e);
    if (i < b->n && b->list[i] == e) {
        memmove(b->list + i, b->list + i + 1, (b->n - i - 1) * sizeof(*b->list));
        b->n--;
        if (i < b->promoted) b->promoted--;
    }
    line_remove(a, e);
    e->waiting = 0;
    a->waiting--;
    bucket_fix(a, b);
}

static void bucket_free(void *p) {
    struct bucket *b = p;
    free(b->list);
    free(b->key);
    free(b);
}

/* Forget b once no known Sandbox is in it (then nothing waits in it and it holds none). */
static void bucket_maybe_drop(struct sbx_slots *a, struct bucket *b) {
    if (!b || b->refs > 0) return;
    bucket_free(strmap_remove(&a->buckets, b->key));
}

static struct bucket *bucket_get(struct sbx_slots *a, struct user *u, const char *cls, int across) {
    /* u->name is "<namespace>/<userID>"; across namespaces only the userID names it */
    const char *who = u->name, *scope = "";
    if (across) { who = strchr(u->name, '/'); who = who ? who + 1 : u->name; scope = "*/"; }
    size_t lc = strlen(cls), ls = strlen(scope), lu = strlen(who);
    char *key = malloc(lc + ls + lu + 2);
    if (!key) return NULL;
    memcpy(key, cls, lc);
    key[lc] = '/';
    memcpy(key + lc + 1, scope, ls);
    memcpy(key + lc + 1 + ls, who, lu + 1);
    struct bucket *b = strmap_get(&a->buckets, key);
    if (b) { free(key); return b; }
    b = calloc(1, sizeof(*b));
    if (!b || strmap_put(&a->buckets, key, b, NULL) < 0) {
        free(b);
        free(key);
        return NULL;
    }
    b->key = key;
    return b;
}

static void reservation_drop(struct entry *e, struct sbx_slots *a) {
    if (!e->reserved_until_ms) return;
    if (e->rprev) e->rprev->rnext = e->rnext;
    else a->reserved = e->rnext;
    if (e->rnext) e->rnext->rprev = e->rprev;
    e->rprev = e->rnext = NULL;
    e->reserved_until_ms = 0;
}

static void reservation_add(struct entry *e, struct sbx_slots *a, int64_t until_ms) {
    if (e->reserved_until_ms) { e->reserved_until_ms = until_ms; return; }
    e->reserved_until_ms = until_ms;
    e->rprev = NULL;
    e->rnext = a->reserved;
    if (a->reserved) a->reserved->rprev = e;
    a->reserved = e;
}

static void candidate_drop(struct entry *e, struct sbx_slots *a) {
    if (!e->reclaim_after_ms) return;
    if (e->cprev) e->cprev->cnext = e->cnext;
    else a->candidates = e->cnext;
    if (e->cnext) e->cnext->cprev = e->cprev;
    e->cprev = e->cnext = NULL;
    e->reclaim_after_ms = e->reclaiming_until_ms = 0;
}

static void candidate_add(struct entry *e, struct sbx_slots *a, int64_t after_ms) {
    if (e->reclaim_after_ms) { e->reclaim_after_ms = after_ms; return; }
    e->reclaim_after_ms = after_ms;
    e->cprev = NULL;
    e->cnext = a->candidates;
    if (a->candidates) a->candidates->cprev = e;
    a->candidates = e;
}

static void user_free(void *p) {
    struct user *u = p;
    free(u->line);
    free(u->name);
    free(u);
}

/* Forget u once nothing refers to it. */
static void user_maybe_drop(struct sbx_slots *a, struct user *u) {
    if (!u || u->refs > 0) return;
    user_free(strmap_remove(&a->users, u->name));
}

static struct user *user_get(struct sbx_slots *a, const char *name) {
    struct user *u = strmap_get(&a->users, name);
    if (u) return u;
    u = calloc(1, sizeof(*u));
    if (!u || !(u->name = strdup(name)) || strmap_put(&a->users, name, u, NULL) < 0) {
        if (u) free(u->name);
        free(u);
        return NULL;
    }
    return u;
}

static void entry_free(void *p) {
    struct entry *e = p;
    free(e->key);
    free(e->cls);
    free(e);
}

/* Put the known-to-be Sandbox e (not waiting) in the bucket (user, cls, counted across
 * namespaces or not): its slot moves with it, both buckets' lines follow; cap >= 0 sets
 * the class's cap on the bucket. 0 or -1 (ENOMEM: nothing changed). */
static int place(struct sbx_slots *a, struct entry *e, const char *user, const char *cls, int across,
                 int cap) {
    struct user *u = user_get(a, user);
    struct bucket *b = u ? bucket_get(a, u, cls, across) : NULL;
    char *c = NULL;
    int new_cls = *cls && !(e->cls && !strcmp(e->cls, cls));
    if (!b || (new_cls && !(c = strdup(cls)))) {
        if (b && b->refs == 0) bucket_maybe_drop(a, b);   /* just made: nothing in it */
        if (u && u->refs == 0) user_free(strmap_remove(&a->users, u->name));
        return -1;
    }
    struct bucket *ob = e->known ? e->b : NULL;
    struct user *ou = e->known ? e->user : NULL;
    unhold(a, e);
    if (ob != b) { if (ob) ob->refs--; b->refs++; }
    if (ou != u) { if (ou) ou->refs--; u->refs++; }
    if (c || !*cls) { free(e->cls); e->cls = c; }
    e->cls_across = *cls && across;
    e->user = u;
    e->b = b;
    e->known = 1;
    if (cap >= 0) b->cap = cap;
    rehold(a, e);
    if (ob && ob != b) { bucket_fix(a, ob); bucket_maybe_drop(a, ob); }
    if (ou != u) user_maybe_drop(a, ou);
    return 0;
}

/* Forget the entry of uid once it is neither known, nor named by a pod, nor reserved. */
static void entry_maybe_drop(struct sbx_slots *a, const char *uid, struct entry *e) {
    if (e->known || e->pods > 0 || e->reserved_until_ms || e->waiting) return;
    entry_free(strmap_remove(&a->entries, uid));
}

static struct entry *entry_get(struct sbx_slots *a, const char *uid) {
    struct entry *e = strmap_get(&a->entries, uid);
    if (e) return e;
    e = calloc(1, sizeof(*e));
    if (!e || strmap_put(&a->entries, uid, e, NULL) < 0) {
        free(e);
        return NULL;
    }
    e->uid = strmap_key(&a->entries, uid);
    return e;
}

/* Expire reservations whose pod never reached the cache. */
static void purge(struct sbx_slots *a, int64_t now_ms) {
    struct entry *e = a->reserved, *next;
    for (; e; e = next) {
        next = e->rnext;
        if (e->reserved_until_ms > now_ms) continue;
        unhold(a, e);
        reservation_drop(e, a);
        rehold(a, e);
        /* a known Sandbox keeps its entry; an unknown one had no reservation */
    }
}

/* ---- order ------------------------------------------------------------------------------ */

/* Is e, in a class with a per-user cap, held back because a slot its class may count is
 * of a class no pass has resolved yet (after a restart)? One of its user's, or, in a class
 * counting users across namespaces, any at all (its userID may be in any namespace). */
static int class_unsettled(const struct sbx_slots *a, const struct entry *e) {
    if (e->b->cap <= 0) return 0;
    return e->cls_across ? a->unresolved > 0 : e->user->unresolved > 0;
}

/* How many of u's line are within its user's cap. */
static size_t eligible(const struct sbx_slots *a, const struct user *u) {
    int cap = a->limits.max_running_per_user;
    if (cap <= 0) return u->n;
    int room = cap - u->held;
    return room <= 0 ? 0 : (size_t)room < u->n ? (size_t)room : u->n;
}

/* Is (rank r1, e1) ahead of (r2, e2)? Between equal ranks the user whose turn came
 * longest ago (or never) goes first, then the older Sandbox. */
static int ahead(long r1, const struct entry *e1, long r2, const struct entry *e2) {
    if (r1 != r2) return r1 < r2;
    if (e1->user->last_admitted != e2->user->last_admitted)
        return e1->user->last_admitted < e2->user->last_admitted;
    return line_cmp(e1, e2) < 0;
}

/* e's place in the line (1 = next), or 0 when its user's cap keeps it out. */
static int position(const struct sbx_slots *a, const struct entry *e) {
    const struct user *u = e->user;
    size_t k = line_lower(u, e);
    if (k >= eligible(a, u)) return 0;
    long r = u->held + (long)k;
    long pos = 1 + (long)k;
    for (size_t i = 0; i < a->nwaiting_users; i++) {
        const struct user *v = a->waiting_users[i];
        if (v == u) continue;
        long n = (long)eligible(a, v);
        long before = r - v->held;   /* v's entries j with held + j < r are ahead */
        if (before < 0) continue;
        pos += before < n ? before : n;
        if (before < n && ahead(r, v->line[before], r, e)) pos++;
    }
    return pos > 1000000000 ? 1000000000 : (int)pos;
}

/* ---- API -------------------------------------------------------------------------------- */

struct sbx_slots *sbx_slots_new(const struct sbx_cap_limits *l) {
    struct sbx_slots *a = calloc(1, sizeof(*a));
    if (!a) return NULL;
    pthread_mutex_init(&a->lock, NULL);
    a->limits = *l;
    strmap_init(&a->entries);
    strmap_init(&a->users);
    strmap_init(&a->buckets);
    return a;
}

void sbx_slots_free(struct sbx_slots *a) {
    if (!a) return;
    strmap_clear(&a->entries, entry_free);
    strmap_clear(&a->buckets, bucket_free);
    strmap_clear(&a->users, user_free);
    free(a->waiting_users);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* The name a user is counted under: "<namespace>/<userID>", the namespace from key
 * ("ns/name"): a userID names a person only within its tenant. NULL: out of memory. */
static char *scoped_user(const char *key, const char *user) {
    const char *slash = strchr(key, '/');
    size_t ln = slash ? (size_t)(slash - key) : 0, lu = strlen(user);
    char *s = malloc(ln + lu + 2);
    if (!s) return NULL;
    memcpy(s, key, ln);
    s[ln] = '/';
    memcpy(s + ln + 1, user, lu + 1);
    return s;
}

int sbx_slots_sandbox(struct sbx_slots *a, const char *uid, const char *key, const char *user_id,
                          int64_t created_ms, int waiting) {
    int rc = -1;
    char *user = scoped_user(key, user_id);
    if (!user) return -1;
    pthread_mutex_lock(&a->lock);
    struct entry *e = entry_get(a, uid);
    if (!e) goto out;
    char *k = NULL;
    if ((!e->key || strcmp(e->key, key) != 0) && !(k = strdup(key))) { entry_maybe_drop(a, uid, e); goto out; }
    /* key and creation time order the lists: leave them while they change */
    int was_waiting = e->waiting;
    if (e->known) wait_remove(a, e);
    if (k) { free(e->key); e->key = k; }
    e->created_ms = created_ms;
    if (place(a, e, user, e->known && e->cls ? e->cls : "", e->known && e->cls_across, -1) < 0) {
        if (!e->known) entry_maybe_drop(a, uid, e);
        else if (was_waiting) wait_insert(a, e);
        goto out;
    }
    rc = 0;
    if ((was_waiting || waiting) && !holds(e)) rc = wait_insert(a, e);
out:
    pthread_mutex_unlock(&a->lock);
    free(user);
    return rc;
}

int sbx_slots_class(struct sbx_slots *a, const char *uid, const char *cls, int cap, int across) {
    int rc = 0;
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (!e || !e->known) goto out;
    if (!cls) cls = "";
    if (cap < 0) across = e->cls_across;   /* a hint says nothing of the class's scope */
    across = *cls && across;
    if (cap >= 0 && !e->resolved) {
        /* its slot now counts in a class a pass resolved: capped ones of its user may go */
        unhold(a, e);
        e->resolved = 1;
        rehold(a, e);
        rc = 1;
    }
    if (!strcmp(e->cls ? e->cls : "", cls) && e->cls_across == across) {
        if (cap >= 0 && e->b->cap != cap) {
            e->b->cap = cap;
            bucket_fix(a, e->b);
            rc = 1;
        }
        goto out;
    }
    int was_waiting = e->waiting;
    wait_remove(a, e);
    rc = place(a, e, e->user->name, cls, across, cap) < 0 ? -1 : 1;
    if (was_waiting && !holds(e) && wait_insert(a, e) < 0) rc = -1;
out:
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int sbx_slots_orphan(struct sbx_slots *a, const char *pod_uid, const char *key, const char *user_id,
                     const char *cls, int64_t created_ms, int running) {
    char id[192];
    if ((size_t)snprintf(id, sizeof(id), "%s%s", SBX_SLOTS_ORPHAN_PREFIX, pod_uid) >= sizeof(id)) return -1;
    if (!running) {
        sbx_slots_pod(a, id, -1);
        sbx_slots_sandbox_gone(a, id);
        return 0;
    }
    int rc = -1;
    char *user = scoped_user(key, user_id ? user_id : ""), *k = NULL;
    if (!user) return -1;
    pthread_mutex_lock(&a->lock);
    struct entry *e = entry_get(a, id);
    if (!e) goto out;
    if (e->known && e->pods > 0) { rc = 0; goto out; }   /* counted already */
    if (!e->key && !(k = strdup(key))) { entry_maybe_drop(a, id, e); goto out; }
    if (k) { e->key = k; e->created_ms = created_ms; }
    /* of its class as the pod says (resolved: nothing more will tell), by the bucket's cap */
    if (place(a, e, user, cls ? cls : "", 0, -1) < 0) { entry_maybe_drop(a, id, e); goto out; }
    unhold(a, e);
    e->resolved = 1;
    e->pods = 1;
    rehold(a, e);
    rc = 0;
out:
    pthread_mutex_unlock(&a->lock);
    free(user);
    return rc;
}

void sbx_slots_sandbox_gone(struct sbx_slots *a, const char *uid) {
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (e && e->known) {
        struct user *u = e->user;
        struct bucket *b = e->b;
        unhold(a, e);
        wait_remove(a, e);
        reservation_drop(e, a);
        candidate_drop(e, a);
        e->known = 0;
        e->user = NULL;
        e->b = NULL;
        b->refs--;
        bucket_fix(a, b);   /* its slot is free: the next held back in its class may go */
        bucket_maybe_drop(a, b);
        u->refs--;
        user_maybe_drop(a, u);
        entry_maybe_drop(a, uid, e);
    }
    pthread_mutex_unlock(&a->lock);
}

int sbx_slots_pod(struct sbx_slots *a, const char *owner_uid, int delta) {
    int rc = 0;
    pthread_mutex_lock(&a->lock);
    struct entry *e = delta > 0 ? entry_get(a, owner_uid) : strmap_get(&a->entries, owner_uid);
    if (!e) { rc = delta > 0 ? -1 : 0; goto out; }
    unhold(a, e);
    e->pods += delta;
    if (e->pods < 0) e->pods = 0;
    if (delta > 0) reservation_drop(e, a);   /* the pod holds the slot the reservation kept */
    rehold(a, e);
    if (holds(e)) wait_remove(a, e);   /* it runs: it waits no more */
    entry_maybe_drop(a, owner_uid, e);
out:
    pthread_mutex_unlock(&a->lock);
    return rc;
}

enum sbx_admit sbx_slots_try(struct sbx_slots *a, const char *uid, int64_t now_ms,
                                 int64_t reserve_until_ms, int *position_out) {
    enum sbx_admit r;
    *position_out = 0;
    pthread_mutex_lock(&a->lock);
    purge(a, now_ms);
    struct entry *e = strmap_get(&a->entries, uid);
    if (!e || !e->known) { r = SBX_ADMIT_UNKNOWN; goto out; }
    if (holds(e)) { r = SBX_ADMIT_YES; goto out; }
    if (wait_insert(a, e) < 0) { r = SBX_ADMIT_WAIT; goto out; }   /* ENOMEM: wait, look again later */
    /* Not in line: its class's cap for its user. Nor while a slot of its user is of a class
     * no pass has resolved yet (after a restart: its class may be this one). */
    int class_held = !e->in_line || class_unsettled(a, e);
    int pos = !class_held ? position(a, e) : 0;
    long free_slots = a->limits.max_running > 0 ? a->limits.max_running - a->held : 1000000000L;
    if (pos > 0 && pos <= free_slots) {
        wait_remove(a, e);
        unhold(a, e);
        reservation_add(e, a, reserve_until_ms);
        rehold(a, e);
        e->user->last_admitted = ++a->admissions;
        r = SBX_ADMIT_YES;
    } else {
        *position_out = pos;
        r = pos > 0 ? SBX_ADMIT_WAIT : class_held && e->b->cap > 0 ? SBX_ADMIT_WAIT_CLASS : SBX_ADMIT_WAIT_USER;
    }
out:
    pthread_mutex_unlock(&a->lock);
    return r;
}

int sbx_slots_keep(struct sbx_slots *a, const char *uid, int64_t now_ms, int64_t reserve_until_ms) {
    pthread_mutex_lock(&a->lock);
    purge(a, now_ms);
    struct entry *e = strmap_get(&a->entries, uid);
    int kept = e && holds(e);
    if (kept) {
        unhold(a, e);
        reservation_add(e, a, reserve_until_ms);
        rehold(a, e);
    }
    pthread_mutex_unlock(&a->lock);
    return kept;
}

void sbx_slots_pod_seen(struct sbx_slots *a, const char *uid) {
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (e) {
        if (e->pods > 0) {
            unhold(a, e);
            reservation_drop(e, a);
            rehold(a, e);
        }
        if (e->known) wait_remove(a, e);
    }
    pthread_mutex_unlock(&a->lock);
}

void sbx_slots_release(struct sbx_slots *a, const char *uid, int leave_line) {
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (e) {
        unhold(a, e);
        reservation_drop(e, a);
        rehold(a, e);
        if (leave_line && e->known) wait_remove(a, e);
        entry_maybe_drop(a, uid, e);
    }
    pthread_mutex_unlock(&a->lock);
}

size_t sbx_slots_wake(struct sbx_slots *a, int64_t now_ms, void (*fn)(void *ud, const char *key),
                          void *ud) {
    size_t woken = 0;
    pthread_mutex_lock(&a->lock);
    purge(a, now_ms);
    if (a->limits.max_running <= 0) {
        /* only a per-user cap (or none): everyone within their user's cap may go */
        for (size_t i = 0; i < a->nwaiting_users; i++) {
            struct user *v = a->waiting_users[i];
            size_t n = eligible(a, v);
            for (size_t j = 0; j < n; j++, woken++) fn(ud, v->line[j]->key);
        }
        goto out;
    }
    long free_slots = a->limits.max_running - a->held;
    for (size_t i = 0; i < a->nwaiting_users; i++) a->waiting_users[i]->cursor = 0;
    /* a merge of the users' lines by rank, as far as there are free slots */
    while ((long)woken < free_slots) {
        struct user *best = NULL;
        long best_rank = 0;
        for (size_t i = 0; i < a->nwaiting_users; i++) {
            struct user *v = a->waiting_users[i];
            if (v->cursor >= eligible(a, v)) continue;
            long r = v->held + (long)v->cursor;
            if (!best || ahead(r, v->line[v->cursor], best_rank, best->line[best->cursor])) {
                best = v;
                best_rank = r;
            }
        }
        if (!best) break;
        fn(ud, best->line[best->cursor++]->key);
        woken++;
    }
out:
    pthread_mutex_unlock(&a->lock);
    return woken;
}

/* ---- reclaim ---------------------------------------------------------------------------- */

void sbx_slots_reclaimable(struct sbx_slots *a, const char *uid, int64_t after_ms, int64_t last_used_ms) {
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (e && e->known) {
        if (after_ms > 0) {
            candidate_add(e, a, after_ms);
            e->reclaim_used_ms = last_used_ms;
        } else if (!(e->reclaiming_until_ms && holds(e))) {
            candidate_drop(e, a);
        }
        /* Otherwise it is being reclaimed (its pass reports the stop) and its pod still
         * holds a slot: it stays counted as under way, or the same waiter would have a
         * second Sandbox reclaimed for it before the first one's pod is gone. Its pass
         * after the pod went drops it. */
    }
    pthread_mutex_unlock(&a->lock);
}

void sbx_slots_reclaim_first(struct sbx_slots *a, const char *uid, int first) {
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (e) e->reclaim_first = first;
    pthread_mutex_unlock(&a->lock);
}

/* How many in line a freed slot would admit, counted up to limit. */
static long admissible(const struct sbx_slots *a, long limit) {
    long n = 0;
    for (size_t i = 0; i < a->nwaiting_users && n < limit; i++) {
        const struct user *v = a->waiting_users[i];
        size_t k = eligible(a, v);
        for (size_t j = 0; j < k && n < limit; j++)
            if (!class_unsettled(a, v->line[j])) n++;
    }
    return n;
}

/* Is x idle longer than y (the longer first, then by key)? */
static int longer_idle(const struct entry *x, const struct entry *y) {
    if (x->reclaim_first != y->reclaim_first) return x->reclaim_first;
    if (x->reclaim_used_ms != y->reclaim_used_ms) return x->reclaim_used_ms < y->reclaim_used_ms;
    return strcmp(x->key, y->key) < 0;
}

size_t sbx_slots_reclaim_pick(struct sbx_slots *a, int64_t now_ms, int64_t until_ms,
                                  struct sbx_reclaim_victim *out, size_t max, int64_t *next_ms) {
    struct entry *chosen[16], *e;
    size_t n = 0;
    if (next_ms) *next_ms = 0;
    if (max > sizeof(chosen) / sizeof(chosen[0])) max = sizeof(chosen) / sizeof(chosen[0]);
    pthread_mutex_lock(&a->lock);
    if (a->limits.max_running <= 0 || !a->candidates || max == 0) goto out;
    purge(a, now_ms);
    long free_slots = a->limits.max_running - a->held, under_way = 0;
    for (e = a->candidates; e; e = e->cnext)
        if (e->reclaiming_until_ms > now_ms && holds(e)) under_way++;
    if (free_slots < 0) free_slots = 0;
    long need = admissible(a, free_slots + under_way + (long)max) - free_slots - under_way;
    if (need <= 0) goto out;
    if ((size_t)need < max) max = (size_t)need;
    for (e = a->candidates; e; e = e->cnext) {
        if (!e->known || e->pods <= 0 || e->reclaim_used_ms <= 0 || e->reclaiming_until_ms > now_ms) continue;
        if (now_ms - e->reclaim_used_ms < e->reclaim_after_ms) {
            int64_t at = e->reclaim_used_ms + e->reclaim_after_ms;
            if (next_ms && (!*next_ms || at < *next_ms)) *next_ms = at;
            continue;
        }
        /* insert into chosen, longest idle first, keeping at most max */
        size_t i = n;
        while (i > 0 && longer_idle(e, chosen[i - 1])) i--;
        if (i >= max) continue;
        if (n == max) n--;
        memmove(chosen + i + 1, chosen + i, (n - i) * sizeof(*chosen));
        chosen[i] = e;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        struct sbx_reclaim_victim *v = &out[i];
        e = chosen[i];
        e->reclaiming_until_ms = until_ms;
        snprintf(v->uid, sizeof(v->uid), "%s", e->uid);
        v->last_used_ms = e->reclaim_used_ms;
        v->after_ms = e->reclaim_after_ms;
        snprintf(v->key, sizeof(v->key), "%s", e->key);
        snprintf(v->cls, sizeof(v->cls), "%s", e->cls ? e->cls : "");
    }
out:
    pthread_mutex_unlock(&a->lock);
    return n;
}

void sbx_slots_reclaim_cancel(struct sbx_slots *a, const char *uid) {
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (e) e->reclaiming_until_ms = 0;
    pthread_mutex_unlock(&a->lock);
}

int sbx_slots_held(struct sbx_slots *a, int64_t now_ms) {
    pthread_mutex_lock(&a->lock);
    purge(a, now_ms);
    int n = a->held;
    pthread_mutex_unlock(&a->lock);
    return n;
}

int sbx_slots_waiting(struct sbx_slots *a) {
    pthread_mutex_lock(&a->lock);
    int n = a->waiting;
    pthread_mutex_unlock(&a->lock);
    return n;
}

int sbx_slots_user_held(struct sbx_slots *a, const char *ns, const char *user_id, int64_t now_ms) {
    size_t ln = strlen(ns);
    char *user = malloc(ln + strlen(user_id) + 2);
    if (!user) return 0;
    memcpy(user, ns, ln);
    user[ln] = '/';
    strcpy(user + ln + 1, user_id);
    pthread_mutex_lock(&a->lock);
    purge(a, now_ms);
    struct user *u = strmap_get(&a->users, user);
    int n = u ? u->held : 0;
    pthread_mutex_unlock(&a->lock);
    free(user);
    return n;
}
