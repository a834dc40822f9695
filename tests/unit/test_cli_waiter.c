/* tests/unit/test_cli_waiter.c — the CLI's wait for a Sandbox (cli/waiter.c, cluster_wait)
 * against the fake API server (scenario cli_waiter.json): a version on the watch that
 * meets the wait ends it at once with that version; a silent watch is ended by the timer
 * thread at the deadline, not by the server's timeoutSeconds; a Sandbox stuck in a way
 * that will not heal (an image that cannot be pulled) ends the wait early, whatever time
 * is left; the scheduler's refusal does so only once it has held for the grace. Runs under
 * ThreadSanitizer too (label unit-tsan): the deadline's stop flag and
 * kube_client_wake cross from the timer thread to the watch. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "../fake/fake.h"
#include "cli/cli.h"
#include "cli/cluster.h"
#include "cli/waitcond.h"
#include "kube/kjson.h"

#define K FAKE_K

FAKE_SHARED("cli_waiter.json")

/* cluster_wait for sandbox "sb" in namespace ns until --for=spec (at most timeout_ms);
 * its return code, *out, and how long it took in *took_ms. -1 when the fake is not up. */
static int wait_graced(const char *ns, const char *spec, int grace_ms, int64_t timeout_ms, cJSON **out,
                       long long *took_ms) {
    struct wait_for w;
    char err[256];
    *out = NULL;
    *took_ms = -1;
    if (wait_for_parse(spec, &w, err, sizeof(err)) != 0) { CHECK(!"wait_for_parse"); return -1; }
    w.refusal_grace_ms = grace_ms;
    struct cli c = {0};
    c.kc = up() ? fake_client(&fake) : NULL;
    if (!c.kc) { CHECK(!"the fake runs"); return -1; }
    snprintf(c.ns, sizeof(c.ns), "%s", ns);
    long long t0 = clock_mono_ms();
    int rc = cluster_wait(&c, "sb", &w, NULL, timeout_ms, out);
    *took_ms = clock_mono_ms() - t0;
    kube_client_free(c.kc);
    return rc;
}

static int wait_in(const char *ns, const char *spec, int64_t timeout_ms, cJSON **out, long long *took_ms) {
    return wait_graced(ns, spec, 0, timeout_ms, out, took_ms);
}

TEST(a_version_that_meets_the_wait_ends_it) {
    cJSON *sb;
    long long took;
    CHECK_INT(wait_in("met", "phase=Running", 20000, &sb, &took), 0);
    fprintf(stderr, "  met after %lld ms\n", took);
    CHECK(took >= 0 && took < 5000 * K);
    CHECK_STR(kj_str(sb, "status.phase"), "Running");
    CHECK_STR(kj_str(sb, "metadata.resourceVersion"), "11");
    cJSON_Delete(sb);
}

TEST(the_deadline_ends_a_silent_watch) {
    cJSON *sb;
    long long took;
    CHECK_INT(wait_in("silent", "phase=Running", 700, &sb, &took), 1);
    fprintf(stderr, "  timed out after %lld ms (deadline 700 ms)\n", took);
    CHECK(took >= 700);
    CHECK(took < 700 + 1000 * K);   /* the server's timeoutSeconds would be 1 s later, then a relist */
    CHECK(sb == NULL);
    /* one list and one watch, its timeoutSeconds the deadline rounded up */
    cJSON *log = fake_log(&fake);
    const cJSON *e[4];
    int n = fake_requests(log, "GET", "/apis/sandbox.yaoapps.com/v1alpha1/namespaces/silent/sandboxes", e, 4);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK(fake_query(e[0], "watch") == NULL);
        CHECK_STR(fake_query(e[0], "fieldSelector"), "metadata.name=sb");
        CHECK_STR(fake_query(e[1], "watch"), "true");
        CHECK_STR(fake_query(e[1], "resourceVersion"), "20");
        CHECK_STR(fake_query(e[1], "timeoutSeconds"), "1");
    }
    cJSON_Delete(log);
}

TEST(a_stuck_sandbox_ends_the_wait_early) {
    cJSON *sb;
    long long took;
    CHECK_INT(wait_in("stuck", "phase=Running", 20000, &sb, &took), 1);
    fprintf(stderr, "  gave up after %lld ms (deadline 20 s)\n", took);
    CHECK(took >= 0 && took < 5000 * K);
    CHECK(sb == NULL);
}

/* The scheduler's refusal seen a moment after the pod was made (its cache had not seen the
 * PVC yet) is not the end: the watch then brings Running. (It once ended logs -f and
 * create --wait with "cannot start: Unschedulable ... not found".) */
TEST(a_refusal_that_heals_does_not_end_the_wait) {
    cJSON *sb;
    long long took;
    CHECK_INT(wait_graced("healed", "phase=Running", 4000 * K, 20000 * K, &sb, &took), 0);
    fprintf(stderr, "  met after %lld ms\n", took);
    CHECK_STR(kj_str(sb, "metadata.resourceVersion"), "71");
    cJSON_Delete(sb);
}

/* A refusal that holds for the grace ends the wait then, with the scheduler's words, long
 * before the deadline; the timer wakes the silent watch for it. */
TEST(a_refusal_that_holds_ends_the_wait_after_the_grace) {
    cJSON *sb;
    long long took;
    CHECK_INT(wait_graced("refusing", "phase=Running", 600, 20000, &sb, &took), 1);
    fprintf(stderr, "  gave up after %lld ms (grace 600 ms, deadline 20 s)\n", took);
    CHECK(took >= 600);
    CHECK(took < 5000 * K);
    CHECK(sb == NULL);
}

/* The one watch loop (cli/watchloop.c): a watch too old (410) lists again and goes on from
 * the new list; a watch the server keeps refusing (500, no event) is given up after two
 * tries, each after a fresh list, with the server's message. */
TEST(an_expired_watch_lists_again) {
    cJSON *sb;
    long long took;
    CHECK_INT(wait_in("expired", "phase=Running", 20000, &sb, &took), 0);
    CHECK_STR(kj_str(sb, "metadata.resourceVersion"), "46");
    cJSON_Delete(sb);
    cJSON *log = fake_log(&fake);
    const cJSON *e[6];
    int n = fake_requests(log, "GET", "/apis/sandbox.yaoapps.com/v1alpha1/namespaces/expired/sandboxes", e, 6);
    CHECK_INT(n, 3);   /* list, watch (410), list */
    if (n == 3) {
        CHECK_STR(fake_query(e[1], "resourceVersion"), "40");
        CHECK(fake_query(e[2], "watch") == NULL);
    }
    cJSON_Delete(log);
}

TEST(a_refused_watch_is_given_up_after_two_tries) {
    cJSON *sb;
    long long took;
    CHECK_INT(wait_in("refused", "phase=Running", 20000, &sb, &took), 1);
    CHECK(sb == NULL);
    CHECK(took < 15000);   /* not the deadline: given up */
    cJSON *log = fake_log(&fake);
    const cJSON *e[8];
    int n = fake_requests(log, "GET", "/apis/sandbox.yaoapps.com/v1alpha1/namespaces/refused/sandboxes", e, 8);
    CHECK_INT(n, 4);   /* list, watch (500), list, watch (500) */
    cJSON_Delete(log);
}

/* get -w (cli/cmd_sandbox.c over the same loop): the Sandbox now, then a line for each
 * version the watch brings; a watch the server then keeps refusing ends it with exit 1
 * after three tries. (The events once reached the relist's state instead of the printer:
 * nothing was printed after the first line.) */
TEST(get_watch_prints_every_change) {
    if (!up()) { CHECK(!"the fake runs"); return; }
    char dir[] = "/tmp/yao-getw-XXXXXX", kc[300], outp[300], doc[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    snprintf(outp, sizeof outp, "%s/out", dir);
    snprintf(doc, sizeof doc,
             "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
             "clusters:\n- name: fake\n  cluster: {server: '%s', insecure-skip-tls-verify: %s}\n"
             "contexts:\n- name: fake\n  context: {cluster: fake, namespace: getw, user: u}\n"
             "users:\n- name: u\n  user: {}\n",
             fake.server, fake.tls ? "true" : "false");
    FILE *f = fopen(kc, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(doc, f);
    fclose(f);
    const char *pos[] = {"sb"};
    struct args a = {.kubeconfig = kc, .watch = 1, .output = "jsonpath={.status.phase}{\"\\n\"}", .pos = pos, .npos = 1};
    struct cli c = {.a = &a};
    snprintf(c.ns, sizeof c.ns, "getw");
    fflush(stdout);
    int saved = dup(1), fd = open(outp, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    CHECK(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    int rc = cmd_get(&c);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    kube_client_free(c.kc);
    CHECK_INT(rc, 1);   /* the refused watches end it */
    char got[256] = "";
    f = fopen(outp, "r");
    if (f) {
        size_t n = fread(got, 1, sizeof got - 1, f);
        got[n] = '\0';
        fclose(f);
    }
    CHECK_STR(got, "Creating\nRunning\nStopped\n");
    unlink(outp);
    unlink(kc);
    rmdir(dir);
}
