/* tests/fake/fake.h — for C tests: start tests/fake/fake_apiserver.py with a scenario
 * from tests/fake/scenarios/, wait for its port, build a kube client pointed at it over
 * plain http, read its request log, and kill it. Header-only (static functions), included
 * by tests/unit/test_*_faults.c as "../fake/fake.h".
 *
 * The fake is found through $YAO_SOURCE_DIR, else $YAO_TEST_DATA/../../.. (ctest sets
 * that), else next to this header (__FILE__). python3 comes from $PATH ($YAO_PYTHON
 * overrides). */
#ifndef YAO_TEST_FAKE_H
#define YAO_TEST_FAKE_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../unit/check.h"
#include "base/clock.h"
#include "kube/config.h"
#include "kube/rest.h"

struct fake {
    pid_t pid;
    int port;
    int tls;             /* HTTPS with tests/fake/tls/server.crt (name "fake.test") */
    char dir[64];        /* scratch directory holding the port file */
    char server[64];     /* "http://127.0.0.1:PORT" */
};

static inline void fake_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

/* tests/fake/ in the source tree. */
static inline const char *fake_dir(void) {
    static char dir[4096];
    const char *src = getenv("YAO_SOURCE_DIR"), *data = getenv("YAO_TEST_DATA"), *slash;

    if (dir[0]) return dir;
    if (src && *src) {
        snprintf(dir, sizeof dir, "%s/tests/fake", src);
    } else if (data && *data) {
        snprintf(dir, sizeof dir, "%s/../../fake", data);   /* tests/unit/data */
    } else if ((slash = strrchr(__FILE__, '/'))) {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - __FILE__), __FILE__);
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    return dir;
}

/* Start the fake with tests/fake/scenarios/<scenario>, over HTTPS when tls is set.
 * 0, or -1 (message on stderr). */
/* How long fake_start waits for the server to listen. */
#define FAKE_START_MS 60000

static inline int fake_start_tls(struct fake *f, const char *scenario, int tls) {
    char script[4200], fake_py[4200], port_file[128], cert[4200], key[4200];
    const char *py = getenv("YAO_PYTHON");

    memset(f, 0, sizeof(*f));
    f->tls = tls;
    snprintf(cert, sizeof cert, "%s/tls/server.crt", fake_dir());
    snprintf(key, sizeof key, "%s/tls/server.key", fake_dir());
    f->pid = -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/yao-fake-XXXXXX");
    if (!mkdtemp(f->dir)) {
        fprintf(stderr, "fake: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    snprintf(port_file, sizeof port_file, "%s/port", f->dir);
    snprintf(script, sizeof script, "%s/scenarios/%s", fake_dir(), scenario);
    snprintf(fake_py, sizeof fake_py, "%s/fake_apiserver.py", fake_dir());
    if (access(fake_py, R_OK) != 0 || access(script, R_OK) != 0) {
        fprintf(stderr, "fake: cannot find %s or %s (set YAO_SOURCE_DIR)\n", fake_py, script);
        return -1;
    }
    fflush(NULL);
    f->pid = fork();
    if (f->pid < 0) {
        fprintf(stderr, "fake: fork: %s\n", strerror(errno));
        return -1;
    }
    if (f->pid == 0) {
        /* Die with the test, even when it is killed (a ctest timeout) before fake_stop. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) { dup2(null, 0); dup2(null, 1); close(null); }
        if (tls)
            execlp(py && *py ? py : "python3", "python3", "-u", fake_py, "--port-file", port_file,
                   "--script", script, "--tls-cert", cert, "--tls-key", key, (char *)NULL);
        else
            execlp(py && *py ? py : "python3", "python3", "-u", fake_py, "--port-file", port_file,
                   "--script", script, (char *)NULL);
        fprintf(stderr, "fake: exec python3: %s\n", strerror(errno));
        _exit(127);
    }
    /* Python's start is a fraction of a second on an idle machine, but once took over 20 s
     * beside a whole `make test` (load 12 on 2 cores): a wait for readiness, not a bound. */
    for (long long deadline = clock_mono_ms() + FAKE_START_MS; clock_mono_ms() < deadline;) {
        FILE *pf = fopen(port_file, "r");
        if (pf) {
            int ok = fscanf(pf, "%d", &f->port) == 1;
            fclose(pf);
            if (ok && f->port > 0) {
                snprintf(f->server, sizeof f->server, "%s://127.0.0.1:%d", tls ? "https" : "http", f->port);
                return 0;
            }
        }
        int status;
        if (waitpid(f->pid, &status, WNOHANG) == f->pid) {
            fprintf(stderr, "fake: the server exited before listening (status %d)\n", status);
            f->pid = -1;
            return -1;
        }
        fake_sleep_ms(20);
    }
    fprintf(stderr, "fake: no port after %d s\n", FAKE_START_MS / 1000);
    return -1;
}

/* Start the fake over plain HTTP. */
static inline int fake_start(struct fake *f, const char *scenario) { return fake_start_tls(f, scenario, 0); }

/* Kill the fake and remove its scratch directory. Safe to call twice. */
static inline void fake_stop(struct fake *f) {
    char port_file[128];
    if (f->pid > 0) {
        kill(f->pid, SIGTERM);
        while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR) {}
        f->pid = -1;
    }
    if (f->dir[0]) {
        snprintf(port_file, sizeof port_file, "%s/port", f->dir);
        unlink(port_file);
        rmdir(f->dir);
        f->dir[0] = '\0';
    }
}

/* A kube client for the fake (no credentials; TLS not verified), or NULL. */
static inline struct kube_client *fake_client(const struct fake *f) {
    char doc[512], err[512];
    struct kube_config cfg;
    struct kube_client *c;

    snprintf(doc, sizeof doc,
             "current-context: fake\n"
             "clusters:\n- name: fake\n  cluster: {server: '%s', insecure-skip-tls-verify: %s}\n"
             "contexts:\n- name: fake\n  context: {cluster: fake, namespace: t}\n",
             f->server, f->tls ? "true" : "false");
    if (kube_config_parse(doc, strlen(doc), NULL, NULL, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "fake: kubeconfig: %s\n", err);
        return NULL;
    }
    c = kube_client_new(&cfg, "yao-fault-tests", err, sizeof err);
    if (!c) {
        fprintf(stderr, "fake: client: %s\n", err);
        kube_config_free(&cfg);
    }
    return c;
}

/* The fake's request log (a JSON array of {method, path, query, t, t_end}), or NULL. */
static inline cJSON *fake_log(const struct fake *f) {
    struct kube_client *c = fake_client(f);
    cJSON *log = NULL;
    struct kube_error err;
    if (!c) return NULL;
    if (kube_get(c, "/__log", &log, &err) != 200) {
        fprintf(stderr, "fake: /__log: %s\n", err.message);
        cJSON_Delete(log);
        log = NULL;
    }
    kube_client_free(c);
    return log;
}

/* Log entries for path (and method, NULL = any), in order; at most max. Returns the
 * count; out[i] are borrowed from log. */
static inline int fake_requests(const cJSON *log, const char *method, const char *path,
                         const cJSON **out, int max) {
    const cJSON *e;
    int n = 0;
    cJSON_ArrayForEach(e, log) {
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "method"));
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "path"));
        if (!p || strcmp(p, path) || (method && (!m || strcmp(m, method)))) continue;
        if (n < max) out[n] = e;
        n++;
    }
    return n;
}

/* A query parameter of a log entry, or NULL. */
static inline const char *fake_query(const cJSON *entry, const char *key) {
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(entry, "query"), key));
}

/* A number field ("t", "t_end") of a log entry, or -1. */
static inline double fake_time(const cJSON *entry, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(entry, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Valgrind runs everything ~20x slower: time bounds in the fault suites are FAKE_K times
 * looser there (RUNNING_ON_VALGRIND comes with the harness, check.h). */
#define FAKE_K (RUNNING_ON_VALGRIND ? 4 : 1)

/* One fake per test file, started on first use and killed at exit:
 *     FAKE_SHARED("rest_faults.json")
 * defines `static struct fake fake` and `static int up(void)` (1 = the fake runs). */
#define FAKE_SHARED(scenario)                                                        \
    static struct fake fake;                                                         \
    static int fake_shared_up_ = -1;   /* -1 not tried, 0 failed, 1 running */       \
    static void fake_shared_stop_(void) { fake_stop(&fake); }                        \
    static int up(void) {                                                            \
        if (fake_shared_up_ < 0) {                                                   \
            fake_shared_up_ = fake_start(&fake, scenario) == 0;                      \
            atexit(fake_shared_stop_);                                               \
        }                                                                            \
        return fake_shared_up_;                                                      \
    }

#endif
