/* tests/integration/exec_probe.c — a small driver of kube_exec for test_exec.sh:
 *
 *   exec_probe --kubeconfig K -n NS POD [-c CONTAINER] [--stdin|--stdin-callback] [--tty]
 *              [--size WxH[,WxH]...] [--protocols P] [--timeout MS] [--parallel N]
 *              [--repeat N] -- CMD...
 *
 * Streams the command's stdout and stderr to its own (unbuffered, so memory stays flat),
 * feeds its stdin with --stdin (kube_exec reads fd 0 itself: use_stdin_fd) or
 * --stdin-callback (a blocking read(0) in read_stdin, the older way), and exits with the
 * command's exit code, or 125 with the error on stderr when the command could not be run.
 * --parallel N runs N sessions at once in threads (no stdin) and prints one line per
 * session instead of the output:
 *   session I rc=R exit=E stdout_bytes=B stdout_sha256=H stderr=FIRST-LINE
 * --repeat N runs the (single) session N times in a row, stopping at the first failure.
 * --size (with --tty) gives the terminal size: the first right away, the next one at each
 * SIGWINCH the probe gets (the test's `kill -WINCH`), as a terminal's owner would.
 * Environment: YAO_EXEC_PROBE_RSS=1 prints "VmHWM: N kB" (peak RSS) to stderr at the end;
 * YAO_EXEC_PROBE_VERBOSE=1 prints the negotiated subprotocol, the time per session, and
 * OpenSSL's next SSL ex-data index before and after (it must not grow with sessions). */
#include <errno.h>
#include <signal.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "kube/config.h"
#include "kube/exec.h"
#include "kube/rest.h"

#define PROBE_FAIL 125
#define PROBE_MAX_PARALLEL 64

struct probe_opts {
    const char *kubeconfig, *ns, *pod, *container, *protocols, *sizes;
    int use_stdin, stdin_callback, tty, parallel, repeat;
    long timeout_ms;
    const char *const *argv;
    size_t argc;
};

/* write(2) all of it; -1 on error (EPIPE included). */
static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int to_stdout(void *ud, const char *p, size_t n) { return write_all(1, p, n); }
static int to_stderr(void *ud, const char *p, size_t n) { return write_all(2, p, n); }

static ssize_t from_stdin(void *ud, char *buf, size_t cap) {
    for (;;) {
        ssize_t r = read(0, buf, cap);
        if (r < 0 && errno == EINTR) continue;
        return r;
    }
}

/* --size: the sizes, and how many SIGWINCHes came (the size to report is the one at that
 * index, the last one once they run out). */
static atomic_int winches, resized;   /* lock-free (kube/exec.h), set by the handler */

static void on_winch(int sig) {
    (void)sig;
    atomic_fetch_add(&winches, 1);
    atomic_store(&resized, 1);
}

static int probe_size(void *ud, unsigned *w, unsigned *h) {
    const char *p = ud;
    for (int i = 0; i < atomic_load(&winches) && strchr(p, ','); i++) p = strchr(p, ',') + 1;
    return sscanf(p, "%ux%u", w, h) == 2 ? 0 : -1;
}

static void print_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    if (!f) return;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmHWM:", 6)) fprintf(stderr, "VmHWM: %ld kB\n", strtol(line + 6, NULL, 10));
    fclose(f);
}

/* ---- --parallel ----------------------------------------------------------------------- */

struct session_out {
    struct kube_client *c;
    const struct probe_opts *po;
    int idx, rc, exit_code;
    EVP_MD_CTX *sha;
    unsigned long long bytes;
    char err_line[256];
    size_t err_len;
    char fail[512];
};

static int hash_out(void *ud, const char *p, size_t n) {
    struct session_out *s = ud;
    s->bytes += n;
    return EVP_DigestUpdate(s->sha, p, n) == 1 ? 0 : -1;
}

static int keep_err(void *ud, const char *p, size_t n) {
    struct session_out *s = ud;
    for (size_t i = 0; i < n && s->err_len + 1 < sizeof(s->err_line); i++) {
        if (p[i] == '\n') {
            s->err_len = sizeof(s->err_line);   /* first line only */
            break;
        }
        s->err_line[s->err_len++] = p[i];
        s->err_line[s->err_len] = 0;
    }
    return 0;
}

static void *run_one(void *arg) {
    struct session_out *s = arg;
    const struct probe_opts *po = s->po;
    struct kube_exec_options o = {
        .namespace_ = po->ns, .pod = po->pod, .container = po->container, .argv = po->argv, .argc = po->argc,
        .on_stdout = hash_out, .on_stderr = keep_err, .ud = s, .tty = po->tty, .timeout_ms = po->timeout_ms,
        .protocols = po->protocols,
    };
    struct kube_exec_result r;
    s->rc = kube_exec(s->c, &o, &r);
    s->exit_code = r.exit_code;
    snprintf(s->fail, sizeof(s->fail), "%s", r.err);
    return NULL;
}

static int run_parallel(struct kube_client *c, const struct probe_opts *po) {
    struct session_out s[PROBE_MAX_PARALLEL];
    pthread_t t[PROBE_MAX_PARALLEL];
    int bad = 0;
    for (int i = 0; i < po->parallel; i++) {
        memset(&s[i], 0, sizeof(s[i]));
        s[i].c = c;
        s[i].po = po;
        s[i].idx = i;
        s[i].sha = EVP_MD_CTX_new();
        if (!s[i].sha || EVP_DigestInit_ex(s[i].sha, EVP_sha256(), NULL) != 1 ||
            pthread_create(&t[i], NULL, run_one, &s[i]) != 0) {
            fprintf(stderr, "exec_probe: cannot start session %d\n", i);
            return PROBE_FAIL;
        }
    }
    for (int i = 0; i < po->parallel; i++) {
        unsigned char md[32];
        unsigned int mdlen = 0;
        char hex[65];
        pthread_join(t[i], NULL);
        EVP_DigestFinal_ex(s[i].sha, md, &mdlen);
        EVP_MD_CTX_free(s[i].sha);
        for (unsigned int k = 0; k < mdlen; k++) snprintf(hex + 2 * k, 3, "%02x", md[k]);
        hex[2 * mdlen] = 0;
        printf("session %d rc=%d exit=%d stdout_bytes=%llu stdout_sha256=%s stderr=%s\n", i, s[i].rc,
               s[i].exit_code, s[i].bytes, hex, s[i].err_line);
        if (s[i].rc) {
            fprintf(stderr, "exec_probe: session %d: %s\n", i, s[i].fail);
            bad = 1;
        }
    }
    return bad ? PROBE_FAIL : 0;
}

/* ---- main ------------------------------------------------------------------------------ */

static int usage(void) {
    fprintf(stderr, "usage: exec_probe --kubeconfig K -n NS POD [-c CONTAINER] [--stdin|--stdin-callback] "
                    "[--tty] [--size WxH[,WxH]...] [--protocols P] [--timeout MS] [--parallel N] [--repeat N] "
                    "-- CMD...\n");
    return 2;
}

int main(int argc, char **argv) {
    struct probe_opts po = {0};
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) { i++; break; }
        if (!strcmp(a, "--stdin") || !strcmp(a, "-i")) po.use_stdin = 1;
        else if (!strcmp(a, "--stdin-callback")) po.use_stdin = po.stdin_callback = 1;
        else if (!strcmp(a, "--tty") || !strcmp(a, "-t")) po.tty = 1;
        else if (i + 1 < argc && !strcmp(a, "--kubeconfig")) po.kubeconfig = argv[++i];
        else if (i + 1 < argc && (!strcmp(a, "-n") || !strcmp(a, "--namespace"))) po.ns = argv[++i];
        else if (i + 1 < argc && (!strcmp(a, "-c") || !strcmp(a, "--container"))) po.container = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--protocols")) po.protocols = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--size")) po.sizes = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--timeout")) po.timeout_ms = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--parallel")) po.parallel = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--repeat")) po.repeat = atoi(argv[++i]);
        else if (a[0] != '-' && !po.pod) po.pod = a;
        else return usage();
    }
    if (!po.pod || i >= argc || po.parallel < 0 || po.parallel > PROBE_MAX_PARALLEL || (po.parallel && po.use_stdin) ||
        po.repeat < 0 || (po.repeat > 1 && (po.parallel || po.use_stdin)))
        return usage();
    if (po.repeat < 1) po.repeat = 1;
    int verbose = getenv("YAO_EXEC_PROBE_VERBOSE") != NULL;
    int index_before = verbose ? SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL) : 0;
    po.argv = (const char *const *)argv + i;
    po.argc = (size_t)(argc - i);

    struct kube_config cfg;
    char err[512];
    if (kube_config_load(po.kubeconfig, NULL, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "exec_probe: %s\n", err);
        return PROBE_FAIL;
    }
    if (!po.ns) po.ns = cfg.namespace_ ? cfg.namespace_ : "default";
    char ns[256];
    snprintf(ns, sizeof(ns), "%s", po.ns);
    po.ns = ns;
    struct kube_client *c = kube_client_new(&cfg, "exec_probe", err, sizeof(err));
    if (!c) {
        fprintf(stderr, "exec_probe: %s\n", err);
        kube_config_free(&cfg);
        return PROBE_FAIL;
    }

    int rc = PROBE_FAIL;
    int64_t t0 = clock_mono_ms();
    if (po.parallel) {
        rc = run_parallel(c, &po);
    } else {
        struct kube_exec_options o = {
            .namespace_ = po.ns, .pod = po.pod, .container = po.container, .argv = po.argv, .argc = po.argc,
            .on_stdout = to_stdout, .on_stderr = po.tty ? NULL : to_stderr,
            .read_stdin = po.stdin_callback ? from_stdin : NULL, .use_stdin_fd = po.use_stdin && !po.stdin_callback,
            .stdin_fd = 0, .tty = po.tty, .timeout_ms = po.timeout_ms, .protocols = po.protocols,
            .term_size = po.sizes ? probe_size : NULL, .resized = po.sizes ? &resized : NULL,
            .ud = (void *)po.sizes,
        };
        if (po.sizes) {
            struct sigaction sa;
            memset(&sa, 0, sizeof(sa));
            sa.sa_handler = on_winch;
            sa.sa_flags = SA_RESTART;
            sigaction(SIGWINCH, &sa, NULL);
        }
        struct kube_exec_result r;
        for (int k = 0; k < po.repeat; k++) {
            if (kube_exec(c, &o, &r) < 0) {
                fprintf(stderr, "exec_probe: %s\n", r.err);
                rc = PROBE_FAIL;
                break;
            }
            rc = r.exit_code;
        }
        if (verbose) fprintf(stderr, "protocol: %s\n", r.protocol);
    }
    if (verbose) {
        fprintf(stderr, "session_ms: %ld\n", (long)(clock_mono_ms() - t0) / (po.parallel ? 1 : po.repeat));
        fprintf(stderr, "ssl_ex_index: %d -> %d\n", index_before, SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL));
    }
    if (getenv("YAO_EXEC_PROBE_RSS")) print_rss();
    kube_client_free(c);
    return rc;
}
