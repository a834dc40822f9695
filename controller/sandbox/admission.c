/* sandbox/admission.c — the running cap's bookkeeping (see admission.h).
 *
 * One entry per Sandbox uid (also for a uid that only pods name so far: a pod may reach
 * the cache before its Sandbox), one per user with the slots it holds and its line of
 * waiting Sandboxes, sorted by (creationTimestamp, key). Users with someone waiting sit
 * in an array, so a position is found by looking at each such user once (O(U)) and a
 * binary search in its line. Reservations are few (at most the cap, for a few seconds
 * each) and sit in a list that is purged of expired ones before each decision. */
#include "sandbox/admission.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/strmap.h"

struct user;

struct entry {
    char *key;                   /* "ns/name" (NULL until the Sandbox is known) */
    struct user *user;           /* while known */
    int64_t created_ms;
    int known;                   /* the Sandbox is in the cache */
    int pods;                    /* pods controlled by it that hold a slot */
    int in_line;
    int64_t reserved_until_ms;   /* 0 = no reservation */
    struct entry *rprev, *rnext; /* the reservation list */
};

struct user {
    char *name;
    int held;                    /* slots its Sandboxes hold */
    int refs;                    /* known entries of this user */
    uint64_t last_admitted;      /* sequence number of its last admission (0 = none yet) */
    struct entry **line;         /* waiting, by (created, key) */
    size_t n, cap;
    size_t widx;                 /* its index in waiting_users while n > 0 */
    size_t cursor;               /* scratch for sbx_admission_wake */
};

struct sbx_admission {
    pthread_mutex_t lock;
    struct sbx_admission_limits limits;
    struct strmap entries;       /* uid -> struct entry */
    struct strmap users;         /* userID -> struct user */
    struct user **waiting_users; /* users with n > 0 */
    size_t nwaiting_users, waiting_users_cap;
    struct entry *reserved;      /* head of the reservation list */
    int held;                    /* slots held in all */
    int waiting;                 /* Sandboxes in line in all */
    uint64_t admissions;         /* sequence of admissions, for users' turns */
};

/* ---- entries and users ----------------------------------------------------------------- */

static int holds(const struct entry *e) {
    return e->known && e->user && (e->pods > 0 || e->reserved_until_ms > 0);
}

/* Take e's slot out of the counters (before a change) ... */
static void unhold(struct sbx_admission *a, struct entry *e) {
    if (!holds(e)) return;
    a->held--;
    e->user->held--;
}

/* ... and put it back (after). */
static void rehold(struct sbx_admission *a, struct entry *e) {
    if (!holds(e)) return;
    a->held++;
    e->user->held++;
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

static int line_insert(struct sbx_admission *a, struct entry *e) {
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
    a->waiting++;
    return 0;
}

static void line_remove(struct sbx_admission *a, struct entry *e) {
    struct user *u = e->user;
    if (!e->in_line) return;
    size_t i = line_lower(u, e);
    if (i < u->n && u->line[i] == e) {
        memmove(u->line + i, u->line + i + 1, (u->n - i - 1) * sizeof(*u->line));
        u->n--;
    }
    e->in_line = 0;
    a->waiting--;
    if (u->n == 0) {
        struct user *last = a->waiting_users[--a->nwaiting_users];
        a->waiting_users[u->widx] = last;
        last->widx = u->widx;
    }
}

static void reservation_drop(struct entry *e, struct sbx_admission *a) {
    if (!e->reserved_until_ms) return;
    if (e->rprev) e->rprev->rnext = e->rnext;
    else a->reserved = e->rnext;
    if (e->rnext) e->rnext->rprev = e->rprev;
    e->rprev = e->rnext = NULL;
    e->reserved_until_ms = 0;
}

static void reservation_add(struct entry *e, struct sbx_admission *a, int64_t until_ms) {
    if (e->reserved_until_ms) { e->reserved_until_ms = until_ms; return; }
    e->reserved_until_ms = until_ms;
    e->rprev = NULL;
    e->rnext = a->reserved;
    if (a->reserved) a->reserved->rprev = e;
    a->reserved = e;
}

static void user_free(void *p) {
    struct user *u = p;
    free(u->line);
    free(u->name);
    free(u);
}

/* Forget u once nothing refers to it. */
static void user_maybe_drop(struct sbx_admission *a, struct user *u) {
    if (!u || u->refs > 0) return;
    user_free(strmap_remove(&a->users, u->name));
}

static struct user *user_get(struct sbx_admission *a, const char *name) {
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
    free(e);
}

/* Forget the entry of uid once it is neither known, nor named by a pod, nor reserved. */
static void entry_maybe_drop(struct sbx_admission *a, const char *uid, struct entry *e) {
    if (e->known || e->pods > 0 || e->reserved_until_ms || e->in_line) return;
    entry_free(strmap_remove(&a->entries, uid));
}

static struct entry *entry_get(struct sbx_admission *a, const char *uid) {
    struct entry *e = strmap_get(&a->entries, uid);
    if (e) return e;
    e = calloc(1, sizeof(*e));
    if (!e || strmap_put(&a->entries, uid, e, NULL) < 0) {
        free(e);
        return NULL;
    }
    return e;
}

/* Expire reservations whose pod never reached the cache. */
static void purge(struct sbx_admission *a, int64_t now_ms) {
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

/* How many of u's line are within its user's cap. */
static size_t eligible(const struct sbx_admission *a, const struct user *u) {
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
static int position(const struct sbx_admission *a, const struct entry *e) {
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

struct sbx_admission *sbx_admission_new(const struct sbx_admission_limits *l) {
    struct sbx_admission *a = calloc(1, sizeof(*a));
    if (!a) return NULL;
    pthread_mutex_init(&a->lock, NULL);
    a->limits = *l;
    strmap_init(&a->entries);
    strmap_init(&a->users);
    return a;
}

void sbx_admission_free(struct sbx_admission *a) {
    if (!a) return;
    strmap_clear(&a->entries, entry_free);
    strmap_clear(&a->users, user_free);
    free(a->waiting_users);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int sbx_admission_sandbox(struct sbx_admission *a, const char *uid, const char *key, const char *user,
                          int64_t created_ms, int waiting) {
    int rc = -1;
    pthread_mutex_lock(&a->lock);
    struct entry *e = entry_get(a, uid);
    struct user *u = e ? user_get(a, user) : NULL;
    if (!u) {
        if (e) entry_maybe_drop(a, uid, e);
        goto out;
    }
    if (!e->key || strcmp(e->key, key) != 0) {
        char *k = strdup(key);
        if (!k) goto out;
        int was = e->in_line;
        line_remove(a, e);             /* the key orders the line: leave it while it changes */
        free(e->key);
        e->key = k;
        if (was && line_insert(a, e) < 0) goto out;
    }
    int was_in_line = e->in_line;
    struct user *old = e->user;
    unhold(a, e);
    line_remove(a, e);
    if (old != u) {
        if (old) old->refs--;
        u->refs++;
    }
    e->user = u;
    e->known = 1;
    e->created_ms = created_ms;
    rehold(a, e);
    if (old != u) user_maybe_drop(a, old);
    rc = 0;
    if ((was_in_line || waiting) && !holds(e)) rc = line_insert(a, e);
out:
    pthread_mutex_unlock(&a->lock);
    return rc;
}

void sbx_admission_sandbox_gone(struct sbx_admission *a, const char *uid) {
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (e && e->known) {
        struct user *u = e->user;
        unhold(a, e);
        line_remove(a, e);
        reservation_drop(e, a);
        e->known = 0;
        e->user = NULL;
        u->refs--;
        user_maybe_drop(a, u);
        entry_maybe_drop(a, uid, e);
    }
    pthread_mutex_unlock(&a->lock);
}

int sbx_admission_pod(struct sbx_admission *a, const char *owner_uid, int delta) {
    int rc = 0;
    pthread_mutex_lock(&a->lock);
    struct entry *e = delta > 0 ? entry_get(a, owner_uid) : strmap_get(&a->entries, owner_uid);
    if (!e) { rc = delta > 0 ? -1 : 0; goto out; }
    unhold(a, e);
    e->pods += delta;
    if (e->pods < 0) e->pods = 0;
    rehold(a, e);
    if (holds(e)) line_remove(a, e);   /* it runs: it waits no more */
    entry_maybe_drop(a, owner_uid, e);
out:
    pthread_mutex_unlock(&a->lock);
    return rc;
}

enum sbx_admit sbx_admission_try(struct sbx_admission *a, const char *uid, int64_t now_ms,
                                 int64_t reserve_until_ms, int *position_out) {
    enum sbx_admit r;
    *position_out = 0;
    pthread_mutex_lock(&a->lock);
    purge(a, now_ms);
    struct entry *e = strmap_get(&a->entries, uid);
    if (!e || !e->known) { r = SBX_ADMIT_UNKNOWN; goto out; }
    if (holds(e)) { r = SBX_ADMIT_YES; goto out; }
    if (line_insert(a, e) < 0) { r = SBX_ADMIT_WAIT; goto out; }   /* ENOMEM: wait, look again later */
    int pos = position(a, e);
    long free_slots = a->limits.max_running > 0 ? a->limits.max_running - a->held : 1000000000L;
    if (pos > 0 && pos <= free_slots) {
        line_remove(a, e);
        unhold(a, e);
        reservation_add(e, a, reserve_until_ms);
        rehold(a, e);
        e->user->last_admitted = ++a->admissions;
        r = SBX_ADMIT_YES;
    } else {
        *position_out = pos;
        r = pos > 0 ? SBX_ADMIT_WAIT : SBX_ADMIT_WAIT_USER;
    }
out:
    pthread_mutex_unlock(&a->lock);
    return r;
}

void sbx_admission_release(struct sbx_admission *a, const char *uid, int leave_line) {
    pthread_mutex_lock(&a->lock);
    struct entry *e = strmap_get(&a->entries, uid);
    if (e) {
        unhold(a, e);
        reservation_drop(e, a);
        rehold(a, e);
        if (leave_line) line_remove(a, e);
        entry_maybe_drop(a, uid, e);
    }
    pthread_mutex_unlock(&a->lock);
}

size_t sbx_admission_wake(struct sbx_admission *a, int64_t now_ms, void (*fn)(void *ud, const char *key),
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

int sbx_admission_held(struct sbx_admission *a, int64_t now_ms) {
    pthread_mutex_lock(&a->lock);
    purge(a, now_ms);
    int n = a->held;
    pthread_mutex_unlock(&a->lock);
    return n;
}

int sbx_admission_waiting(struct sbx_admission *a) {
    pthread_mutex_lock(&a->lock);
    int n = a->waiting;
    pthread_mutex_unlock(&a->lock);
    return n;
}

int sbx_admission_user_held(struct sbx_admission *a, const char *user, int64_t now_ms) {
    pthread_mutex_lock(&a->lock);
    purge(a, now_ms);
    struct user *u = strmap_get(&a->users, user);
    int n = u ? u->held : 0;
    pthread_mutex_unlock(&a->lock);
    return n;
}
