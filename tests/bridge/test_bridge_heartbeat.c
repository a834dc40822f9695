/* tests/bridge/test_bridge_heartbeat.c — yao-bridge's Heartbeat without a network: the
 * interval parser (Go durations), the schedule, the HeartbeatRequest bytes, what each answer
 * leads to (bridge_heartbeat.c); the cgroup and /proc parsers, and the sampler reading a
 * fixture tree laid out as cgroup v2 and as cgroup v1 (bridge_stats.c). The real thing
 * against grpc-go, in a real cgroup, is in bridge_tests.py. */
#include "bridge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(what, cond) do { \
        if (cond) { passed++; printf("ok   %s\n", what); } \
        else { failed++; printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__); } \
    } while (0)

static int64_t iv(const char *s) {
    int64_t ms = -2;
    return bhb_parse_interval(s, &ms) == 0 ? ms : -1;
}

static void test_interval(void) {
    CHECK("interval: Go durations", iv("10s") == 10000 && iv("500ms") == 500 && iv("1m30s") == 90000 &&
          iv("1.5s") == 1500 && iv("0.1s") == 100 && iv("300000us") == 300 && iv("300000\xc2\xb5s") == 300 &&
          iv("1h") == 3600000 && iv("24h") == 86400000 && iv("2m0.5s") == 120500);
    CHECK("interval: out of range (below 100ms, above 24h) refused",
          iv("99ms") == -1 && iv("24h1s") == -1 && iv("0s") == -1 && iv("99999999999h") == -1);
    CHECK("interval: not a duration refused", iv("") == -1 && iv("10") == -1 && iv("s") == -1 && iv("1x") == -1 &&
          iv("-1s") == -1 && iv("1s ") == -1 && iv(".s") == -1 && iv("1.s5") == -1);
}

static void test_schedule(void) {
    struct bhb h;
    int first;

    bhb_init(&h, 100, 1000);
    first = !bhb_due(&h, 1000) && !bhb_due(&h, 1099) && bhb_wait_ms(&h, 1050) == 50;
    CHECK("schedule: the first one is due one interval after the start, not at once", first);
    CHECK("schedule: due at the tick", bhb_due(&h, 1100) && bhb_wait_ms(&h, 1100) == 100);
    bhb_started(&h, 1100);
    CHECK("schedule: a tick while one is in flight is skipped, and counted",
          !bhb_due(&h, 1203) && h.skipped == 1 && h.in_flight);
    bhb_finished(&h, 0, NULL, 0, "UNAVAILABLE", NULL, 0);
    CHECK("schedule: fixed rate: the next tick stays on the grid (1300, not 1303+100)",
          !bhb_due(&h, 1299) && bhb_due(&h, 1300) && h.next_ms == 1400);
    CHECK("schedule: ticks missed while the loop was busy collapse into one",
          bhb_due(&h, 2050) && h.next_ms == 2150 && !bhb_due(&h, 2100));
}

static void test_encode(void) {
    static const unsigned char want[] = { 0x0a, 5, 's', 'b', 'x', '-', '1', 0x10, 37, 0x18, 0x80, 0x80, 0x80,
                                          0x96, 0x01, 0x20, 3 };
    struct bstats_sample s = { 37, 300LL << 20, 3 };
    struct bridge_dyn d;
    const unsigned char *v;
    size_t vn;

    bridge_dyn_init(&d, 1024);
    CHECK("heartbeat: HeartbeatRequest{sandbox_id=1, cpu_percent=2, mem_bytes=3, running_procs=4} bytes",
          bhb_encode(&d, "sbx-1", &s) == 0 && BRIDGE_DYN_LEN(&d) == sizeof want &&
          !memcmp(BRIDGE_DYN_PTR(&d), want, sizeof want));
    bridge_dyn_free(&d);
    s.cpu_percent = 0;
    s.mem_bytes = 0;
    bridge_dyn_init(&d, 1024);
    CHECK("heartbeat: zero fields are left out (proto3), the message stays decodable",
          bhb_encode(&d, "sbx-1", &s) == 0 && BRIDGE_DYN_LEN(&d) == 9 &&
          bpb_get_bytes(BRIDGE_DYN_PTR(&d), BRIDGE_DYN_LEN(&d), 1, &v, &vn) == 1 && vn == 5);
    bridge_dyn_free(&d);
    bridge_dyn_init(&d, 1024);
    CHECK("pb: a negative int32 is ten bytes of two's complement",
          bpb_add_varint(&d, 2, (uint64_t)(int64_t)-1) == 0 && BRIDGE_DYN_LEN(&d) == 11 &&
          BRIDGE_DYN_PTR(&d)[10] == 0x01);
    bridge_dyn_free(&d);
}

/* Finish one in-flight heartbeat with an answer action (NULL: the call failed with why). */
static enum bhb_event answer(struct bhb *h, const char *action, const char *why, char *out) {
    struct bridge_dyn d;
    enum bhb_event ev;

    h->in_flight = 1;
    if (!action) return bhb_finished(h, 0, NULL, 0, why, out, 80);
    bridge_dyn_init(&d, 1024);
    bpb_add_bytes(&d, 1, action, strlen(action));
    ev = bhb_finished(h, 1, BRIDGE_DYN_PTR(&d), BRIDGE_DYN_LEN(&d), NULL, out, 80);
    bridge_dyn_free(&d);
    return ev;
}

static void test_answers(void) {
    struct bhb h;
    char act[80] = "";
    static const unsigned char bad[] = { 0x0a, 9, 'x' };

    bhb_init(&h, 10000, 0);
    CHECK("answer: ok is quiet", answer(&h, "ok", NULL, act) == BHB_QUIET && !h.in_flight);
    CHECK("answer: an empty action (proto3 default) is ok", answer(&h, "", NULL, act) == BHB_QUIET);
    CHECK("answer: the first failure is said", answer(&h, NULL, "UNIMPLEMENTED: unknown method Heartbeat", act) ==
          BHB_LOG_FAILURE && h.failing && h.failures == 1);
    CHECK("answer: the same failure again is quiet (said once)",
          answer(&h, NULL, "UNIMPLEMENTED: unknown method Heartbeat", act) == BHB_QUIET &&
          answer(&h, NULL, "UNIMPLEMENTED: unknown method Heartbeat", act) == BHB_QUIET && h.failures == 3);
    CHECK("answer: a different failure is said", answer(&h, NULL, "connect tcp:x: Connection refused", act) ==
          BHB_LOG_FAILURE);
    CHECK("answer: ok after failures says it works again, once",
          answer(&h, "ok", NULL, act) == BHB_LOG_RECOVERY && !h.failing && answer(&h, "ok", NULL, act) == BHB_QUIET);
    CHECK("answer: an unknown action is said once, then taken as ok",
          answer(&h, "pause", NULL, act) == BHB_LOG_ACTION && !strcmp(act, "pause") &&
          answer(&h, "pause", NULL, act) == BHB_QUIET);
    CHECK("answer: a response that is not protobuf is a failure",
          (h.in_flight = 1, bhb_finished(&h, 1, bad, sizeof bad, NULL, act, sizeof act)) == BHB_LOG_FAILURE);
    CHECK("answer: shutdown", answer(&h, "shutdown", NULL, act) == BHB_SHUTDOWN && !h.in_flight);
    CHECK("answer: 'shutdownx' is not shutdown", answer(&h, "shutdownx", NULL, act) != BHB_SHUTDOWN);
}

static void test_parsers(void) {
    uint64_t v = 0;
    char p[64];
    static const char v1[] = "9:name=systemd:/\n4:memory:/process_api/243dd1\n3:cpu,cpuacct:/kubepods/pod1/c\n"
                             "1:cpuset:/\n0::/\n";

    CHECK("cpu.stat: usage_usec", bstats_keyed_u64("usage_usec 1234567\nuser_usec 1000\nsystem_usec 234567\n",
                                                   "usage_usec", &v) == 0 && v == 1234567);
    CHECK("cpu.stat: a key is whole (usage_usecs is not usage_usec), absent is -1",
          bstats_keyed_u64("usage_usecs 5\n", "usage_usec", &v) == -1 &&
          bstats_keyed_u64("user_usec 5", "usage_usec", &v) == -1 &&
          bstats_keyed_u64("user_usec 5\nusage_usec 7", "usage_usec", &v) == 0 && v == 7 &&
          bstats_keyed_u64("usage_usec x\n", "usage_usec", &v) == -1);
    CHECK("cpu.max: max is no limit, QUOTA PERIOD in millicpus",
          bstats_cpu_max_millis("max 100000\n") == 0 && bstats_cpu_max_millis("50000 100000\n") == 500 &&
          bstats_cpu_max_millis("250000 100000") == 2500 && bstats_cpu_max_millis("junk") == -1 &&
          bstats_cpu_max_millis("5 0") == -1 && bstats_cpu_max_millis("maxi 1") == -1);
    CHECK("v1 cfs: -1 is no limit, quota/period in millicpus",
          bstats_cfs_millis("-1\n", "100000\n") == 0 && bstats_cfs_millis("20000\n", "100000\n") == 200 &&
          bstats_cfs_millis("x", "100000") == -1 && bstats_cfs_millis("1", "0") == -1);
    CHECK("cpu%: against the limit", bstats_cpu_percent(500000, 1000000, 1000, 2) == 50 &&
          bstats_cpu_percent(100000, 1000000, 200, 2) == 50);
    CHECK("cpu%: no limit is all usable CPUs; a limit above them is capped",
          bstats_cpu_percent(500000, 1000000, 0, 2) == 25 && bstats_cpu_percent(500000, 1000000, 4000, 2) == 25);
    CHECK("cpu%: rounded, clamped to 0-100, no wall time is 0",
          bstats_cpu_percent(6000, 1000000, 1000, 1) == 1 && bstats_cpu_percent(4000, 1000000, 1000, 1) == 0 &&
          bstats_cpu_percent(3000000, 1000000, 1000, 1) == 100 && bstats_cpu_percent(5, 0, 1000, 1) == 0);
    CHECK("/proc/self/cgroup: v2 line", bstats_cgroup_path("0::/kubepods.slice/pod1/cri-abc\n", NULL, p,
                                                           sizeof p) == 0 && !strcmp(p, "/kubepods.slice/pod1/cri-abc"));
    CHECK("/proc/self/cgroup: v1 lines by controller, in a comma list too",
          bstats_cgroup_path(v1, "memory", p, sizeof p) == 0 && !strcmp(p, "/process_api/243dd1") &&
          bstats_cgroup_path(v1, "cpuacct", p, sizeof p) == 0 && !strcmp(p, "/kubepods/pod1/c") &&
          bstats_cgroup_path(v1, "cpu", p, sizeof p) == 0 && !strcmp(p, "/kubepods/pod1/c") &&
          bstats_cgroup_path(v1, NULL, p, sizeof p) == 0 && !strcmp(p, "/"));
    CHECK("/proc/self/cgroup: an absent controller, a path that does not fit",
          bstats_cgroup_path(v1, "pids", p, sizeof p) == -1 && bstats_cgroup_path(v1, "memory", p, 8) == -1 &&
          bstats_cgroup_path("4:memory:/a\n", NULL, p, sizeof p) == -1);
    CHECK("/proc/PID/stat: state after the last ')' (names may hold both)",
          bstats_proc_live("1 (sh) S 0 0") == 1 && bstats_proc_live("7 (a) b) R 1") == 1 &&
          bstats_proc_live("5 (x) Z 1 0") == 0 && bstats_proc_live("6 (y) X 1") == 0 &&
          bstats_proc_live("garbage") == -1 && bstats_proc_live("8 (z)") == -1);
}

/* ---- fixture trees ---- */

static char root[256];

static void put(const char *rel, const char *text) {
    char path[512], *slash;
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (slash = path + strlen(root) + 1; (slash = strchr(slash, '/')); slash++) {
        *slash = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST) perror(path);
        *slash = '/';
    }
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        return;
    }
    fputs(text, f);
    fclose(f);
}

static void put_procs(void) {
    put("proc/1/stat", "1 (yao-bridge) S 0 1 1 0 -1\n");
    put("proc/27/stat", "27 (sh -c (x)) R 1 27 1 0 -1\n");
    put("proc/31/stat", "31 (defunct) Z 1 27 1 0 -1\n");
    put("proc/40/status", "Name: gone\n"); /* exited between readdir and open: no stat */
    put("proc/sys/stat", "not a process\n");
}

static void test_sample_v2(void) {
    struct bstats s;
    struct bstats_sample out;
    char sys[300], proc[300];

    put("sys/cgroup.controllers", "cpu io memory pids\n");
    put("sys/kubepods/pod1/c1/cpu.stat", "usage_usec 1000000\nuser_usec 800000\nsystem_usec 200000\n");
    put("sys/kubepods/pod1/c1/cpu.max", "50000 100000\n");
    put("sys/kubepods/pod1/c1/memory.current", "123456789\n");
    put("sys/memory.current", "999\n"); /* the root's: must not be used when the path exists */
    put("proc/self/cgroup", "0::/kubepods/pod1/c1\n");
    put_procs();
    snprintf(sys, sizeof sys, "%s/sys", root);
    snprintf(proc, sizeof proc, "%s/proc", root);
    bstats_init(&s, sys, proc, 10000000);
    CHECK("v2: found the container's files", s.cgroup_version == 2 && strstr(s.cpu_usage, "/kubepods/pod1/c1/cpu.stat") &&
          strstr(s.mem, "/kubepods/pod1/c1/memory.current") && s.have_last && s.last_usage_us == 1000000);
    put("sys/kubepods/pod1/c1/cpu.stat", "usage_usec 1250000\n");
    bstats_sample(&s, 11000000, &out);
    CHECK("v2: 0.25 s of CPU in 1 s under a 0.5-CPU cpu.max is 50%", out.cpu_percent == 50);
    CHECK("v2: memory.current", out.mem_bytes == 123456789);
    CHECK("v2: live processes (zombie, vanished and non-numeric entries not counted)", out.procs == 2);
    put("sys/kubepods/pod1/c1/cpu.max", "max 100000\n");
    put("sys/kubepods/pod1/c1/cpu.stat", "usage_usec 1250000\n");
    bstats_sample(&s, 12000000, &out);
    CHECK("v2: the window is since the previous sample (idle second: 0%); cpu.max re-read", out.cpu_percent == 0);
    /* no cgroup namespace, path not under the mount: the mount root's files */
    put("proc/self/cgroup", "0::/elsewhere/not/mounted\n");
    put("sys/cpu.stat", "usage_usec 5\n");
    bstats_init(&s, sys, proc, 0);
    bstats_sample(&s, 1000000, &out);
    CHECK("v2: a path not under the mount falls back to the mount root", out.mem_bytes == 999 &&
          !strstr(s.cpu_usage, "elsewhere"));
}

static void test_sample_v1(void) {
    struct bstats s;
    struct bstats_sample out;
    char sys[300], proc[300];

    put("v1/cpuacct/sbx/cpuacct.usage", "2000000000\n"); /* nanoseconds */
    put("v1/cpu/sbx/cpu.cfs_quota_us", "20000\n");
    put("v1/cpu/sbx/cpu.cfs_period_us", "100000\n");
    put("v1/memory/memory.usage_in_bytes", "4096000\n"); /* bind-mounted own dir: at the mount root */
    put("proc/self/cgroup", "4:memory:/docker/abc\n2:cpuacct:/sbx\n1:cpu:/sbx\n0::/\n");
    put_procs();
    snprintf(sys, sizeof sys, "%s/v1", root);
    snprintf(proc, sizeof proc, "%s/proc", root);
    bstats_init(&s, sys, proc, 0);
    CHECK("v1: found cpuacct, cfs quota and memory files", s.cgroup_version == 1 && s.cpu_usage[0] &&
          s.cpu_limit[0] && s.cpu_period[0] && s.mem[0]);
    put("v1/cpuacct/sbx/cpuacct.usage", "2150000000\n");
    bstats_sample(&s, 1000000, &out);
    CHECK("v1: 0.15 s of CPU in 1 s under a 0.2-CPU quota is 75%", out.cpu_percent == 75);
    CHECK("v1: memory.usage_in_bytes from the mount root when the path is not there", out.mem_bytes == 4096000);
    CHECK("v1: processes", out.procs == 2);
    snprintf(sys, sizeof sys, "%s/nothing-here", root);
    bstats_init(&s, sys, proc, 0);
    bstats_sample(&s, 1000000, &out);
    CHECK("no cgroup at all: version 0, zeros, processes still counted",
          s.cgroup_version == 0 && out.cpu_percent == 0 && out.mem_bytes == 0 && out.procs == 2);
}

int main(void) {
    char cmd[300];

    test_interval();
    test_schedule();
    test_encode();
    test_answers();
    test_parsers();
    snprintf(root, sizeof root, "%s/test_bridge_heartbeat.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_sample_v2();
    test_sample_v1();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
