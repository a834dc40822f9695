/* kube/config.h — where the API server is and how to authenticate to it: kubeconfig
 * files (--kubeconfig, $KUBECONFIG with several files joined by ':', ~/.kube/config) and
 * in-cluster service-account config. Credentials stay in memory: files referenced by the
 * kubeconfig are read into PEM buffers; nothing is ever written to disk. Also exec
 * credential plugins (kube/credplugin.h), impersonation and the cluster's proxy-url. */
#ifndef YAO_KUBE_CONFIG_H
#define YAO_KUBE_CONFIG_H

#include <stddef.h>
#include <time.h>
#include <pthread.h>

struct kube_config {
    char *server;          /* "https://127.0.0.1:6443", no trailing slash */
    char *namespace_;      /* context namespace or in-cluster namespace file; NULL if unset */
    char *context;         /* name of the context used (NULL in-cluster) */
    /* credentials (any may be NULL) */
    char *token;           /* bearer token (from `token` or the current contents of token_file) */
    char *token_file;      /* re-read when it changes (in-cluster SA token, `tokenFile`) */
    char *username, *password; /* basic auth, if the kubeconfig uses it */
    char *ca_pem;   size_t ca_len;    /* certificate-authority(-data), PEM */
    char *ca_file;         /* where ca_pem came from, when a file: re-read when it changes */
    char *cert_pem; size_t cert_len;  /* client-certificate(-data), PEM */
    char *key_pem;  size_t key_len;   /* client-key(-data), PEM — memory only */
    int insecure_skip_tls_verify;
    char *tls_server_name;
    char *proxy_url;       /* the cluster's proxy-url (kube/proxy.h decides), NULL = none */
    /* users[].user.exec: a credential plugin gives the token or client certificate
     * (kube/credplugin.h); NULL = none */
    struct kube_credplugin *exec_plugin;
    /* impersonation (kubeconfig as, as-uid, as-groups, as-user-extra; the CLI's --as and
     * --as-group replace them): Impersonate-* headers on every request */
    char *impersonate_user, *impersonate_uid;
    char **impersonate_groups;
    size_t n_impersonate_groups;
    char **impersonate_extra;  /* "KEY=VALUE", one header Impersonate-Extra-KEY each */
    size_t n_impersonate_extra;
    /* token refresh state (guarded by lock) */
    pthread_mutex_t lock;
    int lock_ready;        /* lock initialised: kube_config_free is safe on a zeroed struct */
    time_t token_checked;  /* monotonic seconds (clock_mono_ms() / 1000) when token_file was last examined */
    time_t token_mtime;    /* mtime of token_file when token was read from it */
    time_t ca_checked, ca_mtime;  /* the same for ca_file */
};

/* Every constructor below zeroes *out first and leaves it zeroed on failure, so
 * kube_config_free(out) is always safe; on success out->lock is initialised.
 *
 * Parse one kubeconfig document (YAML or JSON) held in memory (at most 4 MiB). base_dir
 * resolves relative file paths (certificate-authority etc.; NULL = as given, i.e. against
 * the working directory); context_name NULL = current-context.
 * 0 on success; -1 with a one-line reason in err. */
int kube_config_parse(const char *text, size_t len, const char *base_dir,
                      const char *context_name, struct kube_config *out,
                      char *err, size_t errlen);
/* Load from explicit path(s) (':'-separated, like $KUBECONFIG; first file that defines a
 * key wins, as kubectl merges; files in the list that do not exist are skipped, at most 32
 * entries), or when paths is NULL: $KUBECONFIG, else ~/.kube/config. Relative paths inside
 * a file resolve against that file's directory. */
int kube_config_load(const char *paths, const char *context_name, struct kube_config *out,
                     char *err, size_t errlen);
/* In-cluster: sa_dir (NULL = /var/run/secrets/kubernetes.io/serviceaccount) holds token,
 * ca.crt, namespace; server from $KUBERNETES_SERVICE_HOST/PORT (IPv6 bracketed). */
int kube_config_in_cluster(const char *sa_dir, struct kube_config *out, char *err, size_t errlen);
/* Try, in order: explicit kubeconfig path, $KUBECONFIG, in-cluster, ~/.kube/config. */
int kube_config_auto(const char *kubeconfig_path, struct kube_config *out, char *err, size_t errlen);
/* Current bearer token (re-reads token_file if at least 60 s passed and its mtime changed,
 * or immediately when force is set; a failed re-read keeps the previous token).
 * Thread-safe. Returns a malloc'd copy (caller frees) or NULL. */
char *kube_config_token(struct kube_config *c, int force);
/* Current CA bundle: a malloc'd NUL-terminated copy in *pem (caller frees; NULL when none)
 * and its length. Re-reads ca_file when at least 60 s passed and its mtime changed, or at
 * once when force is set (a TLS verification failure: the server may have a new CA); a
 * file that cannot be read or holds no PEM keeps the previous bundle. Thread-safe.
 * 0, or -1 when out of memory. */
int kube_config_ca(struct kube_config *c, int force, char **pem, size_t *len);
/* The credentials of one request: a copy of the bearer token and client certificate and
 * key, from the exec plugin when there is one (run now if its credential is missing or
 * expired), else from the kubeconfig / token file. */
struct kube_auth {
    char *token;                       /* NULL = none */
    char *cert_pem, *key_pem;          /* NULL = none */
    size_t cert_len, key_len;
};
/* 0 with *a (free with kube_auth_free), or -1 with err (the plugin failed). Thread-safe. */
int kube_config_auth(struct kube_config *c, struct kube_auth *a, char *err, size_t errlen);
void kube_auth_free(struct kube_auth *a);
/* After a 401 on this thread's last request: the exec plugin's credential it sent is
 * dropped (unless a newer one came meanwhile), so the next request runs the plugin again.
 * 1 when a retry may help (there is a plugin), else 0. */
int kube_config_auth_rejected(struct kube_config *c);
/* Replace the impersonation (--as USER, --as-group GROUP...): user NULL keeps the
 * kubeconfig's user, ngroups 0 its groups. Groups without a user are refused, as kubectl
 * does. 0, or -1 with err. */
int kube_config_set_impersonation(struct kube_config *c, const char *user, const char *const *groups, size_t ngroups,
                                  char *err, size_t errlen);
/* The Impersonate-* header lines ("Impersonate-User: alice", ...) for c, each malloc'd,
 * into a NULL-terminated array (caller frees with kube_config_free_lines); NULL when there
 * are none or out of memory (*oom set then). Extra keys are percent-encoded. */
char **kube_config_impersonation_headers(const struct kube_config *c, int *oom);
void kube_config_free_lines(char **lines);

/* Release everything (secrets are wiped first) and zero *c; safe on a zeroed struct and
 * after a failed constructor, and idempotent. */
void kube_config_free(struct kube_config *c);

#endif
