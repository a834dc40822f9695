/* bridge/bridge_stats.c — what the sandbox uses, for the heartbeat: CPU and memory from
 * the container's cgroup, the number of live processes from /proc.
 *
 *   cgroup v2 (cgroup.controllers at the root): cpu.stat usage_usec, cpu.max, memory.current
 *   cgroup v1: cpuacct.usage (ns), cpu.cfs_quota_us / cpu.cfs_period_us, memory.usage_in_bytes
 *
 * The directory is the root joined with this process's path in /proc/self/cgroup; inside a
 * container with its own cgroup namespace that path is "/" and the root is the container's
 * cgroup, and a runtime that bind-mounts only the container's directory (v1 without a
 * namespace) shows a path that does not exist under the mount, so the mount root is used.
 * CPU percent is the CPU time used since the previous sample over the wall time, as a
 * share of the limit (cpu.max / cfs quota, capped at the CPUs this process may run on; no
 * limit: all of those CPUs) — so 100 means the sandbox runs at its limit. Memory is the
 * cgroup's own figure (page cache included, as memory.current reports it).
 *
 * The parsers are pure (unit-tested on text); bstats_init/bstats_sample do the reading,
 * from roots passed in, so a test can point them at a fixture tree. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "bridge.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL_FILE_MAX 4096

/* ---- pure parsers ----------------------------------------------------------------- */

/* Parse an unsigned decimal at *p (advancing it): 0, or -1 without digits or on overflow. */
static int parse_u64(const char **p, uint64_t *v) {
    const char *s = *p;
    uint64_t r = 0;

    if (*s < '0' || *s > '9') return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (r > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return -1;
        r = r * 10 + (uint64_t)(*s - '0');
    }
    *v = r;
    *p = s;
    return 0;
}

/* "key N" lines: the N of key. */
int bstats_keyed_u64(const char *text, const char *key, uint64_t *v) {
    size_t klen = strlen(key);
    const char *p = text;

    while (p && *p) {
        if (!strncmp(p, key, klen) && p[klen] == ' ') {
            const char *q = p + klen + 1;
            return parse_u64(&q, v) == 0 && (*q == '\n' || *q == '\0') ? 0 : -1;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}

/* cpu.max: "max 100000" (no limit) or "50000 100000" (half a CPU). */
int64_t bstats_cpu_max_millis(const char *text) {
    const char *p = text;
    uint64_t quota, period;

    if (!strncmp(p, "max", 3)) {
        p += 3;
        return *p == ' ' ? 0 : -1;
    }
    if (parse_u64(&p, &quota) < 0 || *p++ != ' ' || parse_u64(&p, &period) < 0 || period == 0 ||
        quota > UINT64_MAX / 1000)
        return -1;
    return (int64_t)(quota * 1000 / period);
}

/* v1: quota -1 is no limit. */
int64_t bstats_cfs_millis(const char *quota, const char *period) {
    const char *q = quota, *pp = period;
    uint64_t qv, pv;

    if (!strncmp(q, "-1", 2)) return 0;
    if (parse_u64(&q, &qv) < 0 || parse_u64(&pp, &pv) < 0 || pv == 0 || qv > UINT64_MAX / 1000) return -1;
    return (int64_t)(qv * 1000 / pv);
}

/* Percent of the usable CPU, rounded, 0-100. */
int32_t bstats_cpu_percent(uint64_t used_us, int64_t wall_us, int64_t limit_millis, int ncpus) {
    int64_t cap = (int64_t)(ncpus > 0 ? ncpus : 1) * 1000;
    double pct;

    if (wall_us <= 0) return 0;
    if (limit_millis <= 0 || limit_millis > cap) limit_millis = cap;
    pct = (double)used_us * 1000.0 * 100.0 / ((double)wall_us * (double)limit_millis);
    if (pct >= 100) return 100;
    return (int32_t)(pct + 0.5);
}

/* /proc/self/cgroup: "ID:CONTROLLERS:PATH" lines; v2 is "0::PATH". */
int bstats_cgroup_path(const char *text, const char *controller, char *out, size_t cap) {
    const char *p = text;
    size_t clen = controller ? strlen(controller) : 0;

    while (p && *p) {
        const char *c1 = strchr(p, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        const char *eol = strchr(p, '\n');
        int match = 0;

        if (!eol) eol = p + strlen(p);
        if (c1 && c2 && c2 < eol) {
            if (!controller) {
                match = c2 == c1 + 1 && c1 == p + 1 && *p == '0';
            } else {
                const char *q = c1 + 1;
                while (q < c2) { /* the comma-separated list between the colons */
                    const char *e = memchr(q, ',', (size_t)(c2 - q));
                    if (!e) e = c2;
                    if ((size_t)(e - q) == clen && !strncmp(q, controller, clen)) match = 1;
                    q = e + 1;
                }
            }
            if (match) {
                size_t n = (size_t)(eol - (c2 + 1));
                if (n == 0 || n >= cap || c2[1] != '/') return -1;
                memcpy(out, c2 + 1, n);
                out[n] = '\0';
                return 0;
            }
        }
        p = *eol ? eol + 1 : NULL;
    }
    return -1;
}

/* /proc/PID/stat: "PID (COMM) STATE ..." — COMM may hold spaces and parentheses, so the
 * state follows the last ')'. */
int bstats_proc_live(const char *stat) {
    const char *rp = strrchr(stat, ')');

    if (!rp || rp[1] != ' ' || !rp[2]) return -1;
    return rp[2] == 'Z' || rp[2] == 'X' ? 0 : 1;
}

/* ---- reading ------------------------------------------------------------------------ */

/* Read a small file into buf (NUL-terminated): 0 or -1. */
static int read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;

    if (fd < 0) return -1;
    while (got < cap - 1) {
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return got ? 0 : -1;
}

static int exists(const char *path) {
    return access(path, R_OK) == 0;
}

/* dir/name into out, if it fits and exists: 0 or -1. */
static int join(char *out, const char *dir, const char *sub, const char *name) {
    int n = snprintf(out, BSTATS_PATH_MAX, "%s%s/%s", dir, strcmp(sub, "/") ? sub : "", name);

    if (n < 0 || n >= BSTATS_PATH_MAX || !exists(out)) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

/* Find name for this process: mount/PATH/name, else mount/name. */
static int find_file(char *out, const char *mount, const char *path, const char *name) {
    if (path && join(out, mount, path, name) == 0) return 0;
    return join(out, mount, "/", name);
}

/* v1: the first of the mount directories (named after their controllers) that exists. */
static const char *v1_mount(const char *root, const char *const *names, char *buf) {
    for (; *names; names++) {
        int n = snprintf(buf, BSTATS_PATH_MAX, "%s/%s", root, *names);
        if (n > 0 && n < BSTATS_PATH_MAX && exists(buf)) return buf;
    }
    return NULL;
}

static int usable_cpus(void) {
    cpu_set_t set;
    long n;

    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* CPU time used so far, in microseconds: 0 or -1. */
static int read_usage(const struct bstats *s, uint64_t *us) {
    char buf[SMALL_FILE_MAX];
    const char *p = buf;
    uint64_t v;

    if (!s->cpu_usage[0] || read_small(s->cpu_usage, buf, sizeof buf) < 0) return -1;
    if (s->cgroup_version == 2) return bstats_keyed_u64(buf, "usage_usec", us);
    if (parse_u64(&p, &v) < 0) return -1;
    *us = v / 1000; /* cpuacct.usage is in nanoseconds */
    return 0;
}

void bstats_init(struct bstats *s, const char *cgroup_root, const char *proc_root, int64_t now_us) {
    char self[BSTATS_PATH_MAX], text[SMALL_FILE_MAX], path[BSTATS_PATH_MAX], mount[BSTATS_PATH_MAX];
    int have_text;

    memset(s, 0, sizeof *s);
    snprintf(s->proc, sizeof s->proc, "%s", proc_root);
    s->ncpus = usable_cpus();
    snprintf(self, sizeof self, "%s/self/cgroup", proc_root);
    have_text = read_small(self, text, sizeof text) == 0;
    snprintf(mount, sizeof mount, "%s/cgroup.controllers", cgroup_root);
    if (exists(mount)) {
        const char *p = have_text && bstats_cgroup_path(text, NULL, path, sizeof path) == 0 ? path : NULL;
        s->cgroup_version = 2;
        find_file(s->cpu_usage, cgroup_root, p, "cpu.stat");
        find_file(s->cpu_limit, cgroup_root, p, "cpu.max");
        find_file(s->mem, cgroup_root, p, "memory.current");
    } else {
        static const char *const acct[] = { "cpuacct", "cpu,cpuacct", "cpuacct,cpu", NULL };
        static const char *const cpu[] = { "cpu", "cpu,cpuacct", "cpuacct,cpu", NULL };
        static const char *const mem[] = { "memory", NULL };
        const char *m;

        if ((m = v1_mount(cgroup_root, acct, mount)))
            find_file(s->cpu_usage, m, have_text && bstats_cgroup_path(text, "cpuacct", path, sizeof path) == 0
                                           ? path : NULL, "cpuacct.usage");
        if ((m = v1_mount(cgroup_root, cpu, mount))) {
            const char *p = have_text && bstats_cgroup_path(text, "cpu", path, sizeof path) == 0 ? path : NULL;
            if (find_file(s->cpu_limit, m, p, "cpu.cfs_quota_us") == 0 &&
                find_file(s->cpu_period, m, p, "cpu.cfs_period_us") < 0)
                s->cpu_limit[0] = '\0';
        }
        if ((m = v1_mount(cgroup_root, mem, mount)))
            find_file(s->mem, m, have_text && bstats_cgroup_path(text, "memory", path, sizeof path) == 0
                                     ? path : NULL, "memory.usage_in_bytes");
        if (s->cpu_usage[0] || s->mem[0]) s->cgroup_version = 1;
    }
    if (read_usage(s, &s->last_usage_us) == 0) {
        s->have_last = 1;
        s->last_us = now_us;
    }
}

/* The CPU limit in millicpus now (0: none or unknown). Read each time: a resize (in-place
 * pod resize changes cpu.max) is seen at the next sample. */
static int64_t read_limit(const struct bstats *s) {
    char q[SMALL_FILE_MAX], p[SMALL_FILE_MAX];
    int64_t m;

    if (!s->cpu_limit[0] || read_small(s->cpu_limit, q, sizeof q) < 0) return 0;
    if (s->cgroup_version == 2) m = bstats_cpu_max_millis(q);
    else m = read_small(s->cpu_period, p, sizeof p) < 0 ? 0 : bstats_cfs_millis(q, p);
    return m > 0 ? m : 0;
}

/* Live processes in the /proc given at init. */
static int32_t count_procs(const struct bstats *s) {
    DIR *d = opendir(s->proc);
    struct dirent *e;
    int32_t n = 0;

    if (!d) return 0;
    while ((e = readdir(d))) {
        char path[BSTATS_PATH_MAX + 300], stat[SMALL_FILE_MAX];
        const char *c = e->d_name;
        while (*c >= '0' && *c <= '9') c++;
        if (*c || c == e->d_name) continue;
        snprintf(path, sizeof path, "%s/%s/stat", s->proc, e->d_name);
        /* a process that exited since readdir simply is not counted */
        if (read_small(path, stat, sizeof stat) == 0 && bstats_proc_live(stat) == 1) n++;
    }
    closedir(d);
    return n;
}

void bstats_sample(struct bstats *s, int64_t now_us, struct bstats_sample *out) {
    char buf[SMALL_FILE_MAX];
    const char *p = buf;
    uint64_t usage, mem;

    memset(out, 0, sizeof *out);
    if (read_usage(s, &usage) == 0) {
        if (s->have_last && usage >= s->last_usage_us && now_us > s->last_us)
            out->cpu_percent = bstats_cpu_percent(usage - s->last_usage_us, now_us - s->last_us,
                                                  read_limit(s), s->ncpus);
        s->last_usage_us = usage;
        s->last_us = now_us;
        s->have_last = 1;
    }
    if (s->mem[0] && read_small(s->mem, buf, sizeof buf) == 0 && parse_u64(&p, &mem) == 0)
        out->mem_bytes = mem > INT64_MAX ? INT64_MAX : (int64_t)mem;
    out->procs = count_procs(s);
}
