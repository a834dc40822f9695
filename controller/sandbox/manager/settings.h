/* sandbox/manager/settings.h — the controller's configuration: command-line flags over the
 * YAO_SANDBOX_* environment over built-in defaults, validated with the same parsers the
 * Sandbox spec uses. Pure (the environment is passed in as a lookup function). */
#ifndef YAO_SANDBOX_SETTINGS_H
#define YAO_SANDBOX_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include "sandbox/manager/reconcile.h"

struct sbx_settings {
    struct sbx_controller_options controller;
    const char *kubeconfig;     /* NULL = $KUBECONFIG / in-cluster / ~/.kube/config */
    const char *log_level;      /* debug, info, warn, error */
    const char *metrics_addr;   /* host:port of /healthz /readyz /metrics ("" = off) */
    int leader_elect;
    const char *lease_name, *lease_namespace;   /* with --shards > 1, lease_name is the shard's */
    const char *lease_base;                      /* --lease-name as given: the family of Leases */
    char lease_name_shard[272];                  /* <--lease-name>-shard-<I> */
    int64_t lease_duration_ms, renew_deadline_ms, retry_period_ms;
    /* No API response above this many bytes is read (KUBE_MAX_BODY by default and at
     * most); informer lists page under it. */
    int64_t max_response_bytes;
    int show_help, show_version;
    /* Requests given explicitly (flag or variable): one above its limit is an error at
     * startup; the built-in request is instead capped at each Sandbox's limit. */
    int memory_request_set, cpu_request_set;
    /* YAO_SANDBOX_IMAGE_PULL_SECRETS, split at commas (the names point into it); the
     * first --sandbox-image-pull-secret replaces what the variable gave. */
    char pull_secrets_env[1024];
    int pull_secrets_from_flag;
    /* YAO_SANDBOX_ALLOWED_SECRETS the same way, for --allowed-secret. */
    char allowed_secrets_env[4096];
    int allowed_secrets_from_flag;
};

typedef const char *(*sbx_getenv_fn)(const char *name);

/* Parse argv (argv[0] skipped) and the environment. Strings point into argv/env.
 * 0, or -1 with a one-line message naming the flag or variable in err. */
int sbx_settings_parse(int argc, char **argv, sbx_getenv_fn env, struct sbx_settings *out,
                       char *err, size_t errlen);
/* The --help text. */
const char *sbx_settings_usage(void);

#endif
