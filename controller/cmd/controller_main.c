/* cmd/controller_main.c — yao-sandbox-controller: parses the settings, connects to the API
 * server, runs the Sandbox controller until SIGTERM/SIGINT, then shuts down cleanly.
 * All behaviour lives in the library (controller/kube, runtime, sandbox); this file only
 * wires it together. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/config.h"
#include "kube/rest.h"
#include "runtime/log.h"
#include "sandbox/reconcile.h"
#include "sandbox/settings.h"

static volatile sig_atomic_t stop_requested;

/* SIGTERM / SIGINT: ask the main loop to stop. */
static void on_signal(int sig) { stop_requested = 1; }

/* getenv with the signature settings expect. */
static const char *env_lookup(const char *name) { return getenv(name); }

int main(int argc, char **argv) {
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
    struct kube_client *client = kube_client_new(&cfg, "yao-sandbox-controller/" YAO_VERSION, err, sizeof(err));
    if (!client) {
        kube_config_free(&cfg);
        fprintf(stderr, "yao-sandbox-controller: %s\n", err);
        return 1;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sbx_controller *ctl = sbx_controller_new(client, &s.controller, err, sizeof(err));
    if (!ctl) {
        fprintf(stderr, "yao-sandbox-controller: %s\n", err);
        kube_client_free(client);
        return 1;
    }
    LOGI("msg=\"starting\" version=%s server=%s namespace=%s max_running=%d workers=%d", YAO_VERSION,
         kube_client_config(client)->server, s.controller.namespace_ ? s.controller.namespace_ : "(all)",
         s.controller.max_running, s.controller.workers);
    int rc = 0;
    if (sbx_controller_run(ctl, (volatile int *)&stop_requested) < 0) {
        if (!stop_requested) { LOGE("msg=\"could not start the controller\""); rc = 1; }
    } else {
        while (!stop_requested) pause();
    }
    LOGI("msg=\"shutting down\"");
    sbx_controller_free(ctl);
    kube_client_free(client);
    return rc;
}
