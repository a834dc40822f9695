/* sandbox/model/spec.h — the Sandbox API in C: parsing and validating a Sandbox object
 * (sandbox.yaoapps.com/v1alpha1) into a typed spec with the controller's defaults applied.
 * The objects built from that spec are sandbox/model/builders.h.
 * No I/O: everything here is unit-testable from JSON fixtures. */
#ifndef YAO_SANDBOX_SPEC_H
#define YAO_SANDBOX_SPEC_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#define SBX_GROUP "sandbox.yaoapps.com"
#define SBX_API_VERSION "sandbox.yaoapps.com/v1alpha1"
#define SBX_KIND "Sandbox"
#define SBX_PLURAL "sandboxes"

#define SBX_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define SBX_MANAGED_BY "yao-sandbox"
#define SBX_LABEL_NAME "sandbox.yaoapps.com/name"
#define SBX_LABEL_USER "sandbox.yaoapps.com/user"
#define SBX_LABEL_CHAT "sandbox.yaoapps.com/chat"
#define SBX_LABEL_LIFECYCLE "sandbox.yaoapps.com/lifecycle"
#define SBX_ANN_USER_ID "sandbox.yaoapps.com/user-id"
#define SBX_ANN_CHAT_ID "sandbox.yaoapps.com/chat-id"
#define SBX_ANN_LAST_USED "sandbox.yaoapps.com/last-used-at"
/* On the pod: the hash of the pod spec it was built from (sbx_build_pod). A Sandbox whose
 * desired pod has another hash gets its pod replaced. */
#define SBX_ANN_TEMPLATE_HASH "sandbox.yaoapps.com/template-hash"
#define SBX_TEMPLATE_HASH_LEN 16
/* On the pod: the SandboxClass it was built under ("" = none; absent: built by an earlier
 * controller, not replaced for that alone). A pod of another class than the Sandbox's is
 * replaced, and a NetworkPolicy weakens only once the pod of the stronger class is gone.
 * Not part of the template hash. */
#define SBX_ANN_CLASS "sandbox.yaoapps.com/class"
/* On the claim of a fork: the size it was cloned at (the source's, when larger than the
 * spec's): a spec.workspace.size below it is no shrink, a fork is at least its source. */
#define SBX_ANN_CLONED_SIZE "sandbox.yaoapps.com/cloned-size"
/* On the claim of a fork filled by a copy instead of a clone: the source claim (same
 * namespace) the copier reads (sandbox/model/workspacecopy.h). */
#define SBX_ANN_FORK_FROM "sandbox.yaoapps.com/fork-from"
#define SBX_CONTAINER_NAME "sandbox"
#define SBX_CLAIM_SUFFIX "-workspace"
/* On the pod: its own name, for the Service's selector (the name label is sanitised and
 * could be shared by two Sandboxes; a pod name is unique in its namespace). */
#define SBX_LABEL_POD "sandbox.yaoapps.com/pod"
/* Sharding (shard_decide.h): the shard an owned object belongs to, and the shard count S
 * the label was computed for: objects of another S (or none) are found with one selector
 * (SBX_LABEL_SHARDS!=S), and never seen by a shard's informers meanwhile. */
#define SBX_LABEL_SHARD "sandbox.yaoapps.com/shard"
#define SBX_LABEL_SHARDS "sandbox.yaoapps.com/shards"
/* The two label values an owned object of a sharded install carries. */
struct sbx_shard_labels { char shard[8], shards[8]; };
/* Warm pools (warm_decide.h). On a pool claim: the pool's key (sbx_warm_key), removed when
 * a Sandbox adopts it. On an adopted pool claim: when it was adopted (RFC 3339); a claim
 * adopted moments ago that no sandbox pod has used yet may be given up when its volume's
 * node cannot take the Sandbox's pod (reconcile_decide.h, SBX_ACT_RELEASE_CLAIM). */
#define SBX_LABEL_WARM_POOL "sandbox.yaoapps.com/warm-pool"
#define SBX_ANN_WARM_ADOPTED "sandbox.yaoapps.com/warm-adopted-at"
/* Activity (activity_decide.h): written by the controller with the last-used-at it
 * refreshes: when and what was seen, e.g. "2026-12-02T01:23:45Z cpu=250m threshold=100m
 * window=15s". status.lastActivity and the Event say the same. */
#define SBX_ANN_LAST_ACTIVITY "sandbox.yaoapps.com/last-activity"

enum sbx_lifecycle {
    SBX_ONE_SHOT,
    SBX_SESSION,
    SBX_LONG_RUNNING,
    SBX_PERSISTENT,
};

/* The container's imagePullPolicy (controller-wide, YAO_SANDBOX_IMAGE_PULL_POLICY). */
enum sbx_pull_policy {
    SBX_PULL_IF_NOT_PRESENT,   /* an image already on the node is used */
    SBX_PULL_ALWAYS,
    SBX_PULL_NEVER,
    /* The default: per image, as Kubernetes defaults a container's imagePullPolicy —
     * Always for ":latest" or no tag at all (the tag may move in the registry), else
     * IfNotPresent (a version tag or a digest names the same image on every node). */
    SBX_PULL_BY_IMAGE,
};

/* One variable: a literal value, or (secret_name set) valueFrom.secretKeyRef of a Secret
 * in the Sandbox's namespace, read by the kubelet: the controller never sees the value. */
struct sbx_env {
    char *name; char *value;
    char *secret_name, *secret_key;   /* both set, or both NULL */
    int secret_optional;
};

struct sbx_strv { char **v; size_t n; };   /* string array; v NULL when n == 0 */

enum sbx_port_protocol { SBX_PROTO_TCP, SBX_PROTO_UDP, SBX_PROTO_SCTP };

/* One of spec.ports: name (an IANA service name, unique), port 1-65535 (unique per
 * protocol), protocol (default TCP). */
struct sbx_port {
    char *name;
    int port;
    enum sbx_port_protocol protocol;
};

struct sbx_run {
    int present;               /* spec.run given */
    struct sbx_strv command;   /* required (n >= 1) when present */
    char *working_dir;         /* NULL = image default */
    struct sbx_env *env; size_t nenv;
    int64_t timeout_ms;        /* 0 = no timeout; default 10 min */
};

struct sbx_spec {
    char *user_id, *chat_id;   /* raw IDs */
    char *image;
    int image_builtin;         /* image is the built-in default (sbx_defaults.image_builtin) */
    enum sbx_lifecycle lifecycle;
    int64_t idle_timeout_ms;
    int paused;
    int has_command, has_args; /* given and non-empty → override the image's
                                  entrypoint/cmd (an empty list counts as not given) */
    struct sbx_strv command, args;
    struct sbx_env *env; size_t nenv;
    int64_t memory_bytes, cpu_millis;                  /* limits */
    int64_t memory_request_bytes, cpu_request_millis;  /* requests, never above the limits */
    enum sbx_pull_policy pull_policy;
    int64_t workspace_bytes;
    char *storage_class;       /* NULL = cluster default */
    char *mount_path;          /* default /workspace */
    /* spec.workspace.from.sandbox: the claim is created as a clone of that Sandbox's
     * workspace (same namespace); NULL = it starts empty. Read only when the claim is
     * created (the CRD makes it immutable). */
    char *workspace_from;
    struct sbx_run run;
    int64_t ttl_after_finished_s;
    /* Controller-wide, from the defaults: the pod's uid/gid/fsGroup (SBX_RUN_AS_AUTO =
     * none set) and imagePullSecrets (names not owned: they point into the defaults). */
    int64_t run_as_user;
    const char *const *pull_secrets; size_t npull_secrets;
    /* The SandboxClass's spec.image.pullSecrets, owned; pull_secrets points at them when
     * the class sets some (they replace the controller's). */
    struct sbx_strv class_pull_secrets;
    struct sbx_port *ports; size_t nports;   /* spec.ports, in the spec's order */
    int service;               /* spec.service.enabled: a ClusterIP Service for the ports */
    int64_t ephemeral_bytes;   /* ephemeral-storage limit; 0 = none */
    /* Pod placement and runtime, from the SandboxClass (sandbox/decide/class_decide.c); NULL = unset.
     * The JSON members are owned copies, emitted into the pod spec as they are. */
    char *runtime_class, *priority_class;
    cJSON *node_selector, *tolerations, *affinity;
    /* The class's spec.hostAliases as given (checked), and the pod's hostAliases resolved
     * from it ([{ip, hostnames}], Services' cluster IPs looked up by hostalias.c just before
     * the pod is created, on a copy of the spec; NULL otherwise: a pod built without it has
     * none). Neither is part of the pod's template hash: /etc/hosts is written when a pod is
     * created, so a changed address reaches the pods created after the change. */
    cJSON *host_aliases, *host_aliases_resolved;
    char *class_name;          /* the SandboxClass applied; NULL = flag defaults only */
    int max_running_per_user;  /* the class's cap on running sandboxes per user; 0 = none */
    /* The class's spec.maxRunningPerUserScope is Cluster: that cap counts one userID's
     * sandboxes of the class in every namespace (else within the sandbox's namespace). */
    int per_user_across_namespaces;
    /* The class's spec.reclaim.idleAfter: a running session or long-running sandbox idle
     * this long may be stopped to admit a waiting one while the running cap is full
     * (0 = never reclaimed). */
    int64_t reclaim_after_ms;
    /* From the class, for a fork (spec.workspace.from): its spec.workspace.maxSize (0 =
     * none), which the clone's size (at least the source's) must not exceed, and whether
     * the source may be another user's Sandbox (spec.workspace.allowForksAcrossUsers). */
    int64_t workspace_max_bytes;
    int forks_across_users;
    /* The class's spec.activity.cpu in millicores (0 = activity does not count): at an
     * idle deadline a pod using more is in use, and its idle clock restarts. */
    int64_t activity_cpu_millis;
    /* Warm-idle (the class's spec.warmIdle, else the controller's --warm-idle-cpu and
     * --warm-idle-window): at its idle deadline a running session or long-running pod is
     * first kept with its CPU request and limit resized in place down to
     * warm_idle_cpu_millis (memory kept), and only stopped (the lifecycle's idle action)
     * warm_idle_window_ms later; any use before then resizes it back up. Both 0 = off. */
    int64_t warm_idle_cpu_millis, warm_idle_window_ms;
};

/* Controller-wide defaults (flags / YAO_SANDBOX_* env). */
/* --sandbox-run-as-user auto: no runAsUser/runAsGroup/fsGroup in the pod, the platform
 * (e.g. OpenShift's restricted-v2 SCC) assigns them. */
#define SBX_RUN_AS_AUTO (-1)
#define SBX_RUN_AS_DEFAULT 1000      /* uid, gid and fsGroup of a sandbox pod by default */
#define SBX_PULL_SECRETS_MAX 16      /* --sandbox-image-pull-secret, at most this many */
#define SBX_ALLOWED_SECRETS_MAX 64   /* --allowed-secret, and a class's spec.secrets.names */

struct sbx_defaults {
    const char *image;             /* YAO_SANDBOX_IMAGE */
    int image_builtin;             /* image is SBX_DEFAULT_IMAGE because nothing named one
                                      (no --image, no class default): a pull failure then
                                      says how to name a pullable one */
    int64_t idle_timeout_ms;       /* YAO_SANDBOX_IDLE_TIMEOUT, 30 min */
    int64_t memory_bytes;          /* YAO_SANDBOX_MEMORY, 2 GiB (limit) */
    int64_t cpu_millis;            /* YAO_SANDBOX_CPU, 1000 (limit) */
    int64_t memory_request_bytes;  /* YAO_SANDBOX_MEMORY_REQUEST, 256 MiB (capped at the limit) */
    int64_t cpu_request_millis;    /* YAO_SANDBOX_CPU_REQUEST, 100 (capped at the limit) */
    enum sbx_pull_policy pull_policy; /* YAO_SANDBOX_IMAGE_PULL_POLICY, IfNotPresent */
    int64_t workspace_bytes;       /* 10 GiB */
    const char *storage_class;     /* NULL = cluster default */
    int64_t run_as_user;           /* YAO_SANDBOX_RUN_AS_USER: uid = gid = fsGroup, 1000;
                                      SBX_RUN_AS_AUTO = the platform chooses */
    const char *pull_secrets[SBX_PULL_SECRETS_MAX]; /* YAO_SANDBOX_IMAGE_PULL_SECRETS: */
    size_t npull_secrets;          /* imagePullSecrets of sandbox pods, none by default */
    /* YAO_SANDBOX_ALLOWED_SECRETS / --allowed-secret: the Secrets a Sandbox without a
     * SandboxClass may name in env valueFrom.secretKeyRef; none by default (a class has
     * its own, spec.secrets.names) */
    const char *allowed_secrets[SBX_ALLOWED_SECRETS_MAX];
    size_t nallowed_secrets;
    int64_t ephemeral_bytes;       /* ephemeral-storage limit, 0 = none (a SandboxClass sets one) */
    enum sbx_lifecycle lifecycle;  /* YAO_SANDBOX_LIFECYCLE: of Sandboxes without spec.lifecycle
                                      (a SandboxClass's spec.lifecycle first), session */
    int64_t warm_idle_cpu_millis;  /* YAO_SANDBOX_WARM_IDLE_CPU: the warm-idle CPU floor, 0 = off */
    int64_t warm_idle_window_ms;   /* YAO_SANDBOX_WARM_IDLE_WINDOW: how long warm-idle lasts */
};

/* How long warm-idle lasts when the floor is set and the window is not (30 min). */
#define SBX_WARM_IDLE_WINDOW_DEFAULT_MS (INT64_C(30) * 60 * 1000)

/* The idle main process used when the spec gives neither command nor args. */
#define SBX_IDLE_SCRIPT "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"

/* The default sandbox image: the sandbox image of this very release, tagged with the
 * project version (CMakeLists.txt passes it in as YAO_VERSION; images/build.sh tags the
 * image the same way). Never ":latest": with imagePullPolicy IfNotPresent a versioned tag
 * lets a node use an image loaded into it without a registry. */
#define SBX_DEFAULT_IMAGE "yao-sandbox/sandbox:" YAO_VERSION

/* Requests sized for density: a sandbox is mostly an idle shell waiting for exec, so it
 * reserves little and may burst up to its limits (2 GiB, 1 core by default). */
#define SBX_DEFAULT_MEMORY_REQUEST (INT64_C(256) << 20)
#define SBX_DEFAULT_CPU_REQUEST 100

/* Fill d with the built-in defaults: image SBX_DEFAULT_IMAGE with pull policy
 * IfNotPresent, lifecycle session, idle 30 min, limits memory 2 GiB and cpu 1000m, requests 256 MiB and
 * 100m, workspace 10 GiB, cluster-default storage class. */
void sbx_defaults_init(struct sbx_defaults *d);

/* "Always", "IfNotPresent", "Never" (Kubernetes spelling, case-sensitive). */
const char *sbx_pull_policy_name(enum sbx_pull_policy p);
/* The policy a container of image gets under the configured one: p itself, or for
 * SBX_PULL_BY_IMAGE the per-image rule above (never SBX_PULL_BY_IMAGE). */
enum sbx_pull_policy sbx_pull_policy_for(enum sbx_pull_policy p, const char *image);
int sbx_pull_policy_parse(const char *s, enum sbx_pull_policy *out);

const char *sbx_port_protocol_name(enum sbx_port_protocol p);   /* "TCP", "UDP", "SCTP" */

const char *sbx_lifecycle_name(enum sbx_lifecycle l);    /* "one-shot", ... */
int sbx_lifecycle_parse(const char *s, enum sbx_lifecycle *out);

/* Parse and validate the `spec` of a Sandbox object (the whole object is passed).
 * Everything the API server's schema may have let through is checked again here
 * (required IDs, lengths, quantities, durations, env names, enum values, absolute
 * mountPath, run.command for one-shot, requests not above limits), including the defaults taken from d (NULL = the
 * built-in defaults). Limits and rules mirror crd/sandbox.yaml. 0 on success; -1 with a readable message in err
 * (used verbatim as the Ready=False/InvalidSpec condition message); out is then empty. */
int sbx_spec_parse(const cJSON *sandbox, const struct sbx_defaults *d,
                   struct sbx_spec *out, char *err, size_t errlen);
void sbx_spec_free(struct sbx_spec *s);

/* The policy a running pod keeps being governed by once its Sandbox's spec can no longer
 * be applied (a class tightened or deleted, an image no longer allowed): the spec it was
 * built from, as far as the lifecycle needs it. From the Sandbox's status, as the last
 * valid pass recorded it: status.lifecycle, status.idleTimeout, status.reclaimAfter,
 * status.className; from its spec what the user may always do: spec.paused, and
 * spec.ttlSecondsAfterFinished; the IDs from spec.userID/chatID. What the status lacks (a
 * Sandbox last reconciled by an older controller) comes from the spec's own idleTimeout,
 * then d (NULL = built-in defaults). Nothing a pod is built from (image, resources, ...) is
 * set: this spec never builds a pod. 0, or -1 with the reason in err (no usable IDs). */
int sbx_spec_recorded(const cJSON *sandbox, const struct sbx_defaults *d, struct sbx_spec *out, char *err,
                      size_t errlen);

/* The claim a new workspace is cloned from (spec.workspace.from), as the controller
 * found it: its name, StorageClass (NULL = unknown) and size (the larger of its request
 * and its capacity; 0 = unknown). The strings are not owned. */
struct sbx_ws_source {
    const char *claim;
    const char *storage_class;
    int64_t bytes;
    /* Filled by a copy (sandbox/model/workspacecopy.h), not cloned: its StorageClass's driver
     * does not say it clones. The claim then has no dataSource, may be of another
     * StorageClass, and carries the source's name in SBX_ANN_FORK_FROM. */
    int copy;
};

/* Can the workspace of s be cloned from src? Kubernetes clones a claim only within its
 * StorageClass: a spec that names another class than the source's is refused (-1, a
 * readable reason in why); one that names none takes the source's (0). */
int sbx_ws_source_check(const struct sbx_spec *s, const struct sbx_ws_source *src,
                        char *why, size_t whylen);

#endif
