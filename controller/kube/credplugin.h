/* kube/credplugin.h — exec credential plugins (a kubeconfig user's `exec`, as client-go
 * runs them: EKS `aws eks get-token`, GKE `gke-gcloud-auth-plugin`, `kubelogin`).
 *
 * The plugin is run with its args and env added to ours, and KUBERNETES_EXEC_INFO: an
 * ExecCredential of its apiVersion (client.authentication.k8s.io/v1 or v1beta1) whose
 * spec says whether it may talk to the user (interactive) and, with provideClusterInfo,
 * the cluster (server, certificate-authority-data, tls-server-name,
 * insecure-skip-tls-verify, proxy-url, and the cluster's extension
 * "client.authentication.k8s.io/exec" as config). Its stdout must be an ExecCredential of
 * the same apiVersion whose status has a token or a client certificate and key (PEM),
 * optionally expirationTimestamp (RFC 3339); its stderr is passed on to ours. stdin:
 * interactiveMode Never gives it none, IfAvailable (the default) ours when that is a
 * terminal, Always requires a terminal. The credential is kept until it expires (for
 * good when it names no expiry) and the plugin is run again then, or when the API server
 * answered 401 (kube_credplugin_invalidate). A plugin that does not talk to the user is
 * stopped after 60 s.
 *
 * The parsing parts are pure (unit-tested on their own); running the plugin forks. */
#ifndef YAO_KUBE_CREDPLUGIN_H
#define YAO_KUBE_CREDPLUGIN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum kube_interactive { KUBE_INTERACTIVE_IF_AVAILABLE, KUBE_INTERACTIVE_NEVER, KUBE_INTERACTIVE_ALWAYS };

/* A credential the plugin gave. */
struct kube_exec_credential {
    char *token;                     /* bearer token, or NULL */
    char *cert_pem, *key_pem;        /* client certificate and key (both or neither) */
    size_t cert_len, key_len;
    int64_t expires_ms;              /* Unix ms of expirationTimestamp; 0 = none */
    unsigned generation;             /* kube_credplugin_get: which fetch it came from */
};

struct kube_credplugin {
    char *api_version;               /* client.authentication.k8s.io/v1 or /v1beta1 */
    char *command;                   /* a relative one with a '/' resolved against the kubeconfig's directory */
    char **args;
    size_t nargs;
    char **env;                      /* "NAME=VALUE" */
    size_t nenv;
    enum kube_interactive interactive;
    char *install_hint;              /* shown when the command cannot be run; may be NULL */
    char *cluster_json;              /* the ExecCredential spec.cluster (provideClusterInfo), or NULL */
    char *user;                      /* the kubeconfig user's name, for messages */
    long timeout_ms;                 /* for a plugin that gets no terminal (60000) */
    /* the cached credential (under mu) */
    pthread_mutex_t mu;
    int mu_ready;
    struct kube_exec_credential cred;
    int have;
    unsigned generation;             /* counts the credentials fetched */
    unsigned runs;                   /* how often it ran (for tests and logs) */
};

/* ---- pure ---- */

/* Parse the plugin's stdout (an ExecCredential of api_version). 0 with *out (free with
 * kube_exec_credential_free), or -1 with err naming what is wrong. */
int kube_exec_credential_parse(const char *text, size_t len, const char *api_version,
                               struct kube_exec_credential *out, char *err, size_t errlen);
void kube_exec_credential_free(struct kube_exec_credential *c);
/* KUBERNETES_EXEC_INFO: {"apiVersion":..., "kind":"ExecCredential", "spec":{"interactive":
 * B[, "cluster":{...}]}}. malloc'd; NULL when out of memory. cluster_json may be NULL. */
char *kube_exec_info(const char *api_version, int interactive, const char *cluster_json);
/* 1 when a credential with expiry expires_ms must be replaced at now_ms (Unix ms): at or
 * past its expiry. Never for expires_ms 0. */
int kube_exec_credential_expired(int64_t expires_ms, int64_t now_ms);

/* ---- running it ---- */

/* Run the plugin now (stdin_is_terminal: whether ours is one). 0 with *out, or -1 with
 * err (the command not found — with the install hint —, a non-zero exit, bad output, a
 * timeout, Always without a terminal). */
int kube_credplugin_run(struct kube_credplugin *p, int stdin_is_terminal, struct kube_exec_credential *out,
                        char *err, size_t errlen);
/* The current credential: the cached one while it has not expired, else a fresh one.
 * Thread-safe (one run at a time; others wait for it). Copies into *out (caller frees with
 * kube_exec_credential_free). 0, or -1 with err. */
int kube_credplugin_get(struct kube_credplugin *p, struct kube_exec_credential *out, char *err, size_t errlen);
/* The API server refused the credential of that generation (401): forget it, unless a
 * newer one was fetched meanwhile (another request's 401 did this: a burst of 401s runs
 * the plugin once). 1: a retry may help (with the credential the next get gives). */
int kube_credplugin_invalidate(struct kube_credplugin *p, unsigned generation);
/* Free everything (credential wiped); safe on a zeroed struct. */
void kube_credplugin_free(struct kube_credplugin *p);

#endif
