/* cmd/controller_main.c — yao-sandbox-controller: parses the settings, connects to the API
 * server, serves /healthz /readyz /metrics, optionally waits to be elected leader, runs the
 * Sandbox controller until SIGTERM/SIGINT (or until leadership is lost), then shuts down
 * cleanly. All behaviour lives in the library (controller/kube, runtime, sandbox); this
 * file only wires it together. */
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/config.h"
#include "kube/kjson.h"
#include "kube/rest.h"
#include "runtime/httpd.h"
#include "runtime/leader.h"
#include "base/log.h"
#include "sandbox/io/metrics.h"
#include "sandbox/manager/reconcile.h"
#include "sandbox/manager/settings.h"
#include "sandbox/decide/shard_decide.h"

/* Set by SIGTERM/SIGINT, read by the main loop and (as its stop flag) sbx_controller_run.
 * The handler runs on whichever thread the signal lands on (an informer's, a worker's, the
 * probe server's): volatile sig_atomic_t is safe in a handler but a data race between
 * threads; a lock-free atomic is both (C11 7.14.1.1), hence the assertion. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag is set in a signal handler: atomic_int must be lock-free");
static atomic_int stop_requested;
/* Set by the election thread (its callbacks), read by the main loop. */
static atomic_int leading, lost_leadership;
/* Leading, and waiting for replicas of another --shards to stop acting (shard_barrier):
 * set by the main thread, read by /readyz on the probe server's thread. */
static atomic_int at_barrier;
/* (All plain seq_cst loads and stores: none of these flags publishes other data.) */

/* SIGTERM / SIGINT: ask the main loop to stop. */
static void on_signal(int sig) { atomic_store(&stop_requested, 1); }

/* getenv with the signature settings expect. */
static const char *env_lookup(const char *name) { return getenv(name); }

struct app {
    struct sbx_controller *ctl;
    struct leader_elector *elector;  /* NULL without --leader-elect */
};

/* Leader election callbacks (election thread). The write fence closed before on_stopped
 * runs; the main loop then exits non-zero, as client-go's elector users do. */
static void on_started_leading(void *ud) { atomic_store(&leading, 1); }
static void on_stopped_leading(void *ud) { atomic_store(&lost_leadership, 1); }

/* /healthz, /readyz, /metrics. */
static int serve_probe(void *ud, const char *path, struct dynbuf *body, const char **ctype) {
    struct app *a = ud;
    if (!strcmp(path, "/healthz") || !strcmp(path, "/livez")) {
        dynbuf_append_str(body, "ok\n");
        return 200;
    }
    if (!strcmp(path, "/readyz")) {
        /* A standby is ready (to take over), and so is a leader waiting for another shard
         * count to go (a rolling update must be able to replace the old replicas); a leader
         * once its caches are synced. */
        int ready = (a->elector && (!leader_is_leader(a->elector) || atomic_load(&at_barrier))) || sbx_controller_ready(a->ctl);
        dynbuf_append_str(body, ready ? "ok\n" : "caches not synced\n");
        return ready ? 200 : 503;
    }
    if (!strcmp(path, "/metrics")) {
        *ctype = "text/plain; version=0.0.4; charset=utf-8";
        int lead = a->elector ? leader_is_leader(a->elector) : 1;
        return sbx_controller_metrics(a->ctl, lead, body) == 0 ? 200 : 500;
    }
    dynbuf_append_str(body, "not found\n");
    return 404;
}

/* Sleep ms, waking early on a stop or a lost lease. */
static void nap(int64_t ms) {
    for (; ms > 0 && !atomic_load(&stop_requested) && !atomic_load(&lost_leadership); ms -= 50) usleep(50000);
}

/* 1 when a Lease of the family blocks this replica (why says which), 0 when none does, -1
 * when the Leases could not be listed (tried again), -2 when this replica may not list
 * them (a Role from before the rule: 401/403). */
static int leases_block(struct kube_client *c, const struct sbx_settings *s, const char *lease_ns, char *why,
                        size_t whylen) {
    char path[512];
    struct kube_error err;
    cJSON *list = NULL;
    /* All Leases: one of a controller from before the shards label has none. */
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases", lease_ns);
    long st = kube_get(c, path, &list, &err);
    if (st != 200) {
        snprintf(why, whylen, "listing the Leases of %.200s failed: %.250s", lease_ns, err.message);
        cJSON_Delete(list);
        return st == 401 || st == 403 ? -2 : -1;
    }
    int blocked = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, kj_path(list, "items")) {
        if (sbx_shard_lease_blocks(l, s->lease_base, s->lease_name, s->controller.shards, kj_now_ms(), why, whylen)) {
            blocked = 1;
            break;
        }
    }
    cJSON_Delete(list);
    return blocked;
}

/* Re-sharding without a stop (sandbox/decide/shard_decide.h, sbx_shard_lease_blocks): a leader acts only
 * once no replica of another --shards acts, and says so on its Lease (SBX_LABEL_ACTING)
 * before it checks a last time; two that said so at once both step back for a random
 * while. 0 to act, -1 on a stop or a lost lease. */
static int shard_barrier(struct app *a, struct kube_client *c, const struct sbx_settings *s, const char *lease_ns) {
    char why[512], last[512] = "";
    int announced = 0;
    atomic_store(&at_barrier, 1);
    while (!atomic_load(&stop_requested) && !atomic_load(&lost_leadership)) {
        int b = leases_block(c, s, lease_ns, why, sizeof(why));
        if (b == -2) {
            /* Not allowed to look (the RBAC of an older release): act as before the rule. */
            LOGW("msg=\"cannot list Leases (apply the current RBAC: list on leases): acting without waiting for "
                 "replicas of another shard count\" why=\"%s\"", why);
            atomic_store(&at_barrier, 0);
            return 0;
        }
        if (b == 0 && announced) { atomic_store(&at_barrier, 0); return 0; }
        if (b == 0) {
            /* Say it, wait until the Lease shows it, and look once more. */
            int64_t g = leader_set_label(a->elector, SBX_LABEL_ACTING, "true");
            while (g > 0 && !atomic_load(&stop_requested) && !atomic_load(&lost_leadership) &&
                   (int64_t)leader_labels_written(a->elector) < g)
                nap(50);
            announced = 1;
            continue;
        }
        if (announced) {
            leader_set_label(a->elector, SBX_LABEL_ACTING, NULL);
            announced = 0;
            nap(1000 + (kj_now_ms() ^ (int64_t)getpid()) % 2000);
        }
        if (strcmp(why, last) != 0) {
            LOGW("msg=\"waiting: replicas of another shard count are live (re-sharding); this one acts once they are "
                 "gone\" shards=%d why=\"%s\"", s->controller.shards, why);
            snprintf(last, sizeof(last), "%s", why);
        }
        nap(s->retry_period_ms);
    }
    return -1;
}

/* hostname_<random hex>: unique per process, readable in the Lease. */
static void make_identity(char *out, size_t n) {
    char host[128] = "unknown";
    gethostname(host, sizeof(host) - 1);
    unsigned r = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&r, sizeof(r), 1, f) != 1) r ^= (unsigned)clock();
        fclose(f);
    }
    snprintf(out, n, "%s_%08x", host, r);
}

int main(int argc, char **argv) {
    /* A dozen threads would each get a malloc arena of their own; the controller's
     * allocations are small and not contended, so two arenas keep RSS low. */
    mallopt(M_ARENA_MAX, 2);
    struct sbx_settings s;
    char err[KUBE_ERR_MAX];
    if (sbx_settings_parse(argc, argv, env_lookup, &s, err, sizeof(err)) < 0) {
        fprintf(stderr, "yao-sandbox-controller: %s\n", err);
        return 2;
    }
    if (s.show_help) { fputs(sbx_settings_usage(), stdout); return 0; }
    if (s.show_version) { printf("yao-sandbox-controller %s\n", YAO_VERSION); return 0; }
    log_set_level(s.log_level);

    struct kube_config cfg;
    if (kube_config_auto(s.kubeconfig, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "yao-sandbox-controller: %s\n", err);
        return 1;
    }
    /* (after the kubeconfig: a controller that cannot start says only why) */
    if (s.controller.defaults.image_builtin)
        LOGW("msg=\"no sandbox image configured: Sandboxes that name none (and whose class names none) "
             "get the built-in %s, which no public registry serves; set --image / YAO_SANDBOX_IMAGE to an "
             "image the nodes can pull\"", s.controller.defaults.image);
    char lease_ns[256];
    snprintf(lease_ns, sizeof(lease_ns), "%s",
             s.lease_namespace ? s.lease_namespace : cfg.namespace_ ? cfg.namespace_ : "yao-sandbox-system");
    /* The identity is in the User-Agent too, so the audit log tells the replicas apart. */
    char identity[200], agent[300];
    make_identity(identity, sizeof(identity));
    snprintf(agent, sizeof(agent), "yao-sandbox-controller/" YAO_VERSION " (%s)", identity);
    struct kube_client *client = kube_client_new(&cfg, agent, err, sizeof(err));
    if (!client) {
        kube_config_free(&cfg);
        fprintf(stderr, "yao-sandbox-controller: %s\n", err);
        return 1;
    }
    kube_client_set_max_body(client, (size_t)s.max_response_bytes);   /* the informers' lists page under it */
    /* The elector's own client (own connections, one attempt per call, per-call deadline):
     * the workers' retries and Retry-After sleeps never delay a renewal. */
    struct kube_client *lease_client = NULL;
    if (s.leader_elect) {
        struct kube_config lcfg;
        if (kube_config_auto(s.kubeconfig, &lcfg, err, sizeof(err)) < 0 ||
            !(lease_client = kube_client_new(&lcfg, agent, err, sizeof(err)))) {
            kube_config_free(&lcfg);
            kube_client_free(client);
            fprintf(stderr, "yao-sandbox-controller: %s\n", err);
            return 1;
        }
    }

    /* The Event recorder's own client too: its writes never wait behind the workers', and
     * it still flushes at shutdown after the workers' client was cancelled. */
    struct kube_config ecfg;
    if (kube_config_auto(s.kubeconfig, &ecfg, err, sizeof(err)) < 0 ||
        !(s.controller.events_client = kube_client_new(&ecfg, agent, err, sizeof(err)))) {
        kube_config_free(&ecfg);
        kube_client_free(client);
        kube_client_free(lease_client);
        fprintf(stderr, "yao-sandbox-controller: %s\n", err);
        return 1;
    }
    /* An Event is not worth a long wait: a short deadline keeps the queue moving. */
    kube_client_set_deadline(s.controller.events_client, 10000);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct app a = {0};
    struct httpd *httpd = NULL;
    int rc = 0;
    a.ctl = sbx_controller_new(client, &s.controller, err, sizeof(err));
    if (!a.ctl) {
        fprintf(stderr, "yao-sandbox-controller: %s\n", err);
        kube_client_free(client);
        kube_client_free(lease_client);
        return 1;
    }
    if (s.leader_elect) {
        struct leader_options lo = {
            .namespace_ = lease_ns, .name = s.lease_name, .identity = identity,
            .lease_duration_ms = s.lease_duration_ms, .renew_deadline_ms = s.renew_deadline_ms,
            .retry_period_ms = s.retry_period_ms, .on_started = on_started_leading,
            .on_stopped = on_stopped_leading,
        };
        a.elector = leader_new(lease_client, &lo);
        /* The shard count on the Lease from its first write (re-sharding, shard_barrier). */
        char count[16];
        snprintf(count, sizeof(count), "%d", s.controller.shards > 1 ? s.controller.shards : 1);
        if (a.elector) leader_set_label(a.elector, SBX_LABEL_SHARDS, count);
        /* Every write of the workers passes the fence: none once leadership is unconfirmed. */
        if (a.elector) kube_client_set_fence(client, leader_fence_remaining_ms, a.elector);
        /* Events too (the recorder owns that client now; it lives as long as a.ctl). */
        if (a.elector && sbx_controller_records_events(a.ctl)) kube_client_set_fence(s.controller.events_client, leader_fence_remaining_ms, a.elector);
        if (!a.elector || leader_start(a.elector) < 0) {
            fprintf(stderr, "yao-sandbox-controller: could not start leader election\n");
            rc = 1;
            goto done;
        }
        LOGI("msg=\"waiting for leadership\" lease=%s/%s identity=%s", lease_ns, s.lease_name, identity);
    } else {
        atomic_store(&leading, 1);
    }
    if (s.metrics_addr && s.metrics_addr[0]) {
        httpd = httpd_start(s.metrics_addr, serve_probe, &a, err, sizeof(err));
        if (!httpd) {
            fprintf(stderr, "yao-sandbox-controller: %s\n", err);
            rc = 1;
            goto done;
        }
        LOGI("msg=\"serving probes and metrics\" addr=%s port=%d", s.metrics_addr, httpd_port(httpd));
    }
    LOGI("msg=\"starting\" version=%s server=%s namespace=%s max_running=%d max_running_per_user=%d "
         "workers=%d leader_elect=%d", YAO_VERSION,
         kube_client_config(client)->server, s.controller.namespace_ ? s.controller.namespace_ : "(all)",
         s.controller.limits.max_running, s.controller.limits.max_running_per_user,
         s.controller.workers, s.leader_elect);

    while (!atomic_load(&stop_requested) && !atomic_load(&leading)) usleep(50000);
    if (!atomic_load(&stop_requested) && a.elector && shard_barrier(&a, client, &s, lease_ns) < 0 &&
        !atomic_load(&lost_leadership))
        atomic_store(&stop_requested, 1);
    if (!atomic_load(&stop_requested) && !atomic_load(&lost_leadership)) {
        if (sbx_controller_run(a.ctl, &stop_requested) < 0) {
            if (!atomic_load(&stop_requested)) { LOGE("msg=\"could not start the controller\""); rc = 1; }
        } else {
            while (!atomic_load(&stop_requested) && !atomic_load(&lost_leadership)) usleep(100000);
        }
    }
    if (atomic_load(&lost_leadership)) {
        /* As client-go does: a replica that lost the lease exits at once (its writes were
         * fenced already); it is restarted as a standby. */
        LOGE("msg=\"leadership lost; exiting\"");
        _exit(1);
    }
done:
    LOGI("msg=\"shutting down\"");
    if (a.elector) {
        /* SIGTERM: the lease goes first, so a standby takes over at once. Close the fence,
         * let the writes already on the wire finish (each ends by the fence anyway), then
         * release; the workers wind down afterwards, unable to write. */
        leader_fence_close(a.elector);
        if (kube_client_drain_writes(client, s.renew_deadline_ms) < 0)
            LOGW("msg=\"writes still in flight after the renew deadline\"");
        leader_stop(a.elector);
    }
    sbx_controller_stop(a.ctl);
    leader_free(a.elector);
    httpd_stop(httpd);
    sbx_controller_free(a.ctl);
    kube_client_free(client);
    kube_client_free(lease_client);
    return rc;
}
