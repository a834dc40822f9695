/* sandbox/model/starts.c — the create → Ready and wake → Running histograms (see starts.h). */
#include "sandbox/model/starts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kjson.h"
#include "base/strmap.h"
#include "sandbox/model/objects.h"
#include "sandbox/model/spec.h"

enum start_kind {
    START_CREATE, START_WAKE, START_KINDS,
    START_POKE = START_KINDS   /* a mark only: a stopped Sandbox was touched or its spec changed */
};

/* Upper bounds of the buckets, in seconds (+Inf follows). A warm start is well under a
 * second, a cold one on a real node seconds, an image pull or a slow provisioner minutes. */
static const double bounds[] = {0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300};
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))

static const char *const lifecycles[] = {"one-shot", "session", "long-running", "persistent"};
#define NLIFECYCLES (sizeof(lifecycles) / sizeof(lifecycles[0]))

static const struct {
    const char *name, *help;
} kinds[START_KINDS] = {
    {"yao_sandbox_create_ready_duration_seconds",
     "From a Sandbox's creation to its first Running with Ready=True, by lifecycle and class."},
    {"yao_sandbox_wake_duration_seconds",
     "From a Sandbox leaving Stopped (a wake by touch, a resume) to Running with Ready=True, by lifecycle and class."},
};

struct series {
    int kind, lifecycle;
    char class_name[64];
    uint64_t buckets[NBOUNDS + 1];   /* not cumulative; the last is above every bound */
    uint64_t count;
    double sum_s;
};

struct mark {
    int kind;
    int64_t t0_mono_ms;
};

struct sbx_starts {
    pthread_mutex_t lock;
    struct strmap marks;     /* Sandbox UID -> struct mark */
    struct series *series;
    size_t nseries, cap;
    unsigned nclasses[START_KINDS];   /* distinct class labels per kind */
};

struct sbx_starts *sbx_starts_new(void) {
    struct sbx_starts *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    pthread_mutex_init(&s->lock, NULL);
    strmap_init(&s->marks);
    return s;
}

void sbx_starts_free(struct sbx_starts *s) {
    if (!s) return;
    strmap_clear(&s->marks, free);
    free(s->series);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static int lifecycle_of(const struct sbx_sandbox_view *sb) {
    const char *lc = sbx_sandbox_lifecycle(sb);   /* the spec's, else the default in force */
    for (size_t i = 0; lc && i < NLIFECYCLES; i++)
        if (!strcmp(lc, lifecycles[i])) return (int)i;
    return 1;
}

/* The class the Sandbox runs under: the resolved one in status, else the one it names. */
static const char *class_of(const struct sbx_sandbox_view *sb) {
    const char *c = sb->status_class_name;
    if (!c || !*c) c = sb->class_name;
    return c ? c : "";
}

static int is_ready(const struct sbx_sandbox_view *sb) {
    return sbx_sandbox_phase_is(sb, "Running") && sb->ready.status && !strcmp(sb->ready.status, "True");
}

static int phase_is(const struct sbx_sandbox_view *sb, const char *want) {
    return sb && sbx_sandbox_phase_is(sb, want);
}

static int phase_empty(const struct sbx_sandbox_view *sb) {
    return !sb->phase || !*sb->phase;
}

/* Did the user ask something of it between old and cur (a spec change: generation; a
 * touch: last-used-at)? The controller's own status writes are not requests. */
static int requested(const struct sbx_sandbox_view *old, const struct sbx_sandbox_view *cur) {
    if (old->meta.generation != cur->meta.generation) return 1;
    const char *a = old->last_used_at, *b = cur->last_used_at;
    return (a || b) && (!a || !b || strcmp(a, b) != 0);
}

static int finished(const struct sbx_sandbox_view *sb) { return phase_is(sb, "Succeeded") || phase_is(sb, "Failed"); }

static int stopped(const struct sbx_sandbox_view *sb) { return phase_is(sb, "Stopped") || phase_is(sb, "Stopping"); }

/* The series of (kind, lifecycle, class), made on first use; NULL on ENOMEM. Under lock. */
static struct series *series_for(struct sbx_starts *s, int kind, int lifecycle, const char *class_name) {
    int known = 0;
    for (size_t i = 0; i < s->nseries; i++) {
        struct series *x = &s->series[i];
        if (x->kind != kind || strcmp(x->class_name, class_name) != 0) continue;
        known = 1;
        if (x->lifecycle == lifecycle) return x;
    }
    if (!known && strcmp(class_name, "_other") != 0) {
        if (s->nclasses[kind] >= SBX_STARTS_MAX_CLASSES) return series_for(s, kind, lifecycle, "_other");
        s->nclasses[kind]++;
    }
    if (s->nseries == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        struct series *n = realloc(s->series, cap * sizeof(*n));
        if (!n) return NULL;
        s->series = n;
        s->cap = cap;
    }
    struct series *x = &s->series[s->nseries++];
    memset(x, 0, sizeof(*x));
    x->kind = kind;
    x->lifecycle = lifecycle;
    /* Class names are DNS subdomains (up to 253): a longer one is cut, still a valid label. */
    snprintf(x->class_name, sizeof(x->class_name), "%s", class_name);
    return x;
}

static void record(struct sbx_starts *s, int kind, const struct sbx_sandbox_view *sb, int64_t ms) {
    struct series *x = series_for(s, kind, lifecycle_of(sb), class_of(sb));
    if (!x) return;
    double secs = (double)(ms < 0 ? 0 : ms) / 1000.0;
    size_t b = 0;
    while (b < NBOUNDS && secs > bounds[b]) b++;
    x->buckets[b]++;
    x->count++;
    x->sum_s += secs;
}

static void set_mark(struct sbx_starts *s, const char *uid, int kind, int64_t t0) {
    struct mark *m = malloc(sizeof(*m));
    if (!m) return;
    m->kind = kind;
    m->t0_mono_ms = t0;
    void *old = NULL;
    if (strmap_put(&s->marks, uid, m, &old) != 0) {
        free(m);
        return;
    }
    free(old);
}

void sbx_starts_observe(struct sbx_starts *s, const struct sbx_sandbox_view *old, const struct sbx_sandbox_view *cur,
                        int64_t mono_ms, int64_t wall_ms) {
    const char *uid = (cur ? cur : old)->meta.uid;
    if (!uid) return;
    pthread_mutex_lock(&s->lock);
    if (!cur || finished(cur)) {
        free(strmap_remove(&s->marks, uid));
    } else if (is_ready(cur)) {
        if (!old || !is_ready(old)) {
            struct mark *m = strmap_remove(&s->marks, uid);
            /* (a poke seen Running at once, its wake missed between two events, is a wake) */
            if (m) record(s, m->kind == START_POKE ? START_WAKE : m->kind, cur, mono_ms - m->t0_mono_ms);
            free(m);
        }
    } else if (!old) {
        /* First seen. Without a phase it was never reconciled: a create, timed from now when
         * just made (its creationTimestamp, whole seconds, is a second or two old at most),
         * else from its creationTimestamp (made while no controller ran). Seen in another
         * phase (this controller started mid-start, or it is stopped): nothing to time. */
        if (phase_empty(cur)) {
            int64_t created_ms = cur->meta.created_ms, t0 = mono_ms;
            if (created_ms && wall_ms - created_ms > 2000)
                t0 = mono_ms - (wall_ms - created_ms);
            set_mark(s, uid, START_CREATE, t0);
        }
    } else if (stopped(old) && !stopped(cur)) {
        /* Leaving Stopped: timed from the user's request that woke it (the last touch or
         * spec change seen while stopped), else from now. */
        struct mark *m = strmap_get(&s->marks, uid);
        if (m && m->kind == START_POKE) m->kind = START_WAKE;
        else if (!m) set_mark(s, uid, START_WAKE, mono_ms);
    } else if (stopped(cur) && stopped(old) && requested(old, cur)) {
        set_mark(s, uid, START_POKE, mono_ms);
    } else if (stopped(cur) && !stopped(old)) {
        /* stopped again before Ready (a pause during a wake): that start did not finish */
        free(strmap_remove(&s->marks, uid));
    }
    pthread_mutex_unlock(&s->lock);
}

unsigned sbx_starts_pending(struct sbx_starts *s) {
    pthread_mutex_lock(&s->lock);
    unsigned n = (unsigned)s->marks.count;
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* A label value with ", \ and newlines escaped (class names cannot have them; the
 * exposition stays valid whatever the API server returns). */
static int label_value(struct dynbuf *out, const char *v) {
    int rc = 0;
    for (; *v; v++) {
        if (*v == '"' || *v == '\\') rc |= dynbuf_printf(out, "\\%c", *v);
        else if (*v == '\n') rc |= dynbuf_printf(out, "\\n");
        else rc |= dynbuf_printf(out, "%c", *v);
    }
    return rc;
}

static int series_line(struct dynbuf *out, const char *name, const char *suffix, const struct series *x,
                       const char *le) {
    int rc = dynbuf_printf(out, "%s%s{lifecycle=\"%s\",class=\"", name, suffix, lifecycles[x->lifecycle]);
    rc |= label_value(out, x->class_name);
    rc |= le ? dynbuf_printf(out, "\",le=\"%s\"} ", le) : dynbuf_printf(out, "\"} ");
    return rc;
}

int sbx_starts_render(struct sbx_starts *s, struct dynbuf *out) {
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    for (int k = 0; k < START_KINDS; k++) {
        const char *name = kinds[k].name;
        rc |= dynbuf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, kinds[k].help, name);
        for (size_t i = 0; i < s->nseries; i++) {
            const struct series *x = &s->series[i];
            if (x->kind != k) continue;
            uint64_t cum = 0;
            for (size_t b = 0; b < NBOUNDS; b++) {
                char le[16];
                snprintf(le, sizeof(le), "%g", bounds[b]);
                cum += x->buckets[b];
                rc |= series_line(out, name, "_bucket", x, le);
                rc |= dynbuf_printf(out, "%llu\n", (unsigned long long)cum);
            }
            rc |= series_line(out, name, "_bucket", x, "+Inf");
            rc |= dynbuf_printf(out, "%llu\n", (unsigned long long)x->count);
            rc |= series_line(out, name, "_sum", x, NULL);
            rc |= dynbuf_printf(out, "%.3f\n", x->sum_s);
            rc |= series_line(out, name, "_count", x, NULL);
            rc |= dynbuf_printf(out, "%llu\n", (unsigned long long)x->count);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc ? -1 : 0;
}
