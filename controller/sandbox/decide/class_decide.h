/* sandbox/decide/class_decide.h — SandboxClass (sandbox.yaoapps.com/v1alpha1, cluster-scoped):
 * the operator's template and limits for Sandboxes, like a StorageClass. Parsing a class
 * object, and the pure resolution "Sandbox + class (or the controller's flag defaults) →
 * effective spec, or InvalidSpec naming the field and the limit". No I/O: the informer and
 * the choice of a class (spec.className, else the default class) are in class.c. */
#ifndef YAO_SANDBOX_CLASS_DECIDE_H
#define YAO_SANDBOX_CLASS_DECIDE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "sandbox/model/netpol.h"
#include "sandbox/model/spec.h"

#define SBX_CLASS_KIND "SandboxClass"
#define SBX_CLASS_PLURAL "sandboxclasses"
/* On a SandboxClass: "true" makes it the class of Sandboxes without spec.className (as
 * storageclass.kubernetes.io/is-default-class). */
#define SBX_ANN_DEFAULT_CLASS "sandbox.yaoapps.com/is-default-class"
/* On a Namespace: the SandboxClass of its Sandboxes without spec.className, before the
 * cluster's default class. A label, so only who may edit Namespaces (cluster admins, not a
 * namespace's editors) sets it. */
#define SBX_LABEL_NAMESPACE_CLASS "sandbox.yaoapps.com/default-class"

/* A default and a ceiling; 0 = not set. */
struct sbx_class_limit { int64_t dflt, max; };

struct sbx_class {
    char *name;
    char *image;                          /* spec.image.default */
    struct sbx_strv image_prefixes;       /* spec.image.allowedPrefixes; empty = any image */
    struct sbx_strv image_pull_secrets;   /* spec.image.pullSecrets (Secret names, at most
                                             SBX_PULL_SECRETS_MAX); empty = the controller's */
    struct sbx_class_limit memory, cpu;   /* spec.resources.{memory,cpu}: bytes, millicores */
    struct sbx_class_limit ephemeral;     /* spec.resources.ephemeralStorage: bytes */
    struct sbx_class_limit workspace;     /* spec.workspace.{defaultSize,maxSize} */
    char *storage_class;                  /* spec.workspace.storageClassName */
    struct sbx_strv storage_classes;      /* spec.workspace.allowedStorageClassNames */
    int warm_pool_size;                   /* spec.workspace.warmPool.size; 0 = no pool */
    struct sbx_strv warm_pool_namespaces; /* spec.workspace.warmPool.namespaces: kept warm
                                             even before their first Sandbox of the class */
    char *runtime_class, *priority_class; /* spec.runtimeClassName, spec.priorityClassName */
    cJSON *node_selector, *tolerations, *affinity;   /* copies; NULL = unset */
    cJSON *host_aliases;                  /* spec.hostAliases, checked (hostalias_decide.h) */
    int has_lifecycle;                    /* spec.lifecycle set: */
    enum sbx_lifecycle lifecycle;         /* the lifecycle of Sandboxes that set none */
    int64_t idle_timeout_ms;              /* spec.idleTimeout; 0 = the controller's */
    int64_t reclaim_after_ms;             /* spec.reclaim.idleAfter; 0 = never reclaimed */
    int max_running_per_user;             /* spec.maxRunningPerUser; 0 = no cap */
    int per_user_across_namespaces;       /* spec.maxRunningPerUserScope: Cluster */
    struct sbx_network network;           /* spec.network; mode none when unset */
    /* Who may use the class. spec.allowedNamespaces.selector: a label selector on the
     * Namespace of a Sandbox (NULL = every namespace). spec.allowedLifecycles: a bit set of
     * 1 << enum sbx_lifecycle (0 = every lifecycle). */
    cJSON *namespace_selector;
    unsigned allowed_lifecycles;
    int forks_across_users;               /* spec.workspace.allowForksAcrossUsers */
    /* spec.activity.cpu: a pod using more CPU than this (millicores, metrics.k8s.io) at its
     * idle deadline is in use (sandbox/decide/activity_decide.h); 0 = activity does not count. */
    int64_t activity_cpu_millis;
    /* spec.warmIdle: {cpu (the floor, millicores), window (default 30m)}; cpu 0 = unset
     * (the controller's --warm-idle-cpu applies). */
    int64_t warm_idle_cpu_millis, warm_idle_window_ms;
    /* spec.secrets.names: the Secrets (of the Sandbox's own namespace) a Sandbox of the class
     * may name in env or run.env valueFrom.secretKeyRef; empty (the default) = none. */
    struct sbx_strv secret_names;
};

/* Reasons of the Accepted condition when a class refuses a Sandbox (sandbox/io/status.c). */
#define SBX_REASON_CLASS_NOT_ALLOWED "ClassNotAllowed"
#define SBX_REASON_LIFECYCLE_NOT_ALLOWED "LifecycleNotAllowed"
#define SBX_REASON_SECRET_NOT_ALLOWED "SecretNotAllowed"

/* Parse and validate a SandboxClass object into out. 0, or -1 with a one-line message
 * naming the class and the field in err (out is then empty). */
int sbx_class_parse(const cJSON *obj, struct sbx_class *out, char *err, size_t errlen);
void sbx_class_free(struct sbx_class *c);

/* True if the object carries SBX_ANN_DEFAULT_CLASS: "true". */
int sbx_class_is_default(const cJSON *obj);

/* The effective spec of sandbox under cls (NULL: no class, the flag defaults alone).
 * The lifecycle: spec.lifecycle; else status.lifecycle, the one this Sandbox got when its
 * default was first resolved (a default is taken once, as the API server's defaults are:
 * a later change of the class's default applies to new Sandboxes); else the class's
 * spec.lifecycle; else the flag default. A spec.lifecycle that would turn a Sandbox to or
 * from one-shot against its recorded status.lifecycle is InvalidSpec.
 * Other defaults: the Sandbox's own field, else the class's default, else the flag default
 * (capped at the class's maximum when the class sets only a maximum). Then the class's
 * ceilings: image prefixes, memory, cpu, ephemeral-storage, workspace size, storage class.
 * Placement and runtime (runtimeClassName, nodeSelector, tolerations, affinity,
 * priorityClassName) and the per-user cap are copied into out. 0, or -1 with the
 * InvalidSpec message in err ("spec.resources.memory: 4Gi is above the maximum 2Gi of
 * SandboxClass \"small\" (spec.resources.memory.max)"). d NULL = built-in defaults. */
int sbx_class_resolve(const cJSON *sandbox, const struct sbx_class *cls, const struct sbx_defaults *d,
                      struct sbx_spec *out, char *err, size_t errlen);

/* May a Sandbox of namespace ns (whose labels are ns_labels; NULL = none, or unknown when
 * the controller cannot read Namespaces: ns_known 0) use cls? 1, or 0 with the message in
 * why ("spec.className: SandboxClass \"gpu\" may not be used in namespace \"team-b\"
 * (spec.allowedNamespaces)"). A class with no selector allows every namespace. */
int sbx_class_allows_namespace(const struct sbx_class *cls, const char *ns, const cJSON *ns_labels, int ns_known,
                               char *why, size_t whylen);

/* May the resolved spec s name the Secrets its env and run.env take values from
 * (valueFrom.secretKeyRef)? Each must be one of cls's spec.secrets.names, or with no
 * class (cls NULL) one of the controller's d->allowed_secrets (d NULL: none). Consent is by
 * name: the kubelet reads the value for the pod, and whoever may exec into it reads it
 * then, so a Secret is usable only where the operator said so, never because a namespace
 * editor named it. 1, or 0 with the first refused reference in why
 * ("spec.env[0].valueFrom.secretKeyRef.name: Secret \"db-admin\" is not allowed by
 * SandboxClass \"default\" (spec.secrets.names: yao-token)"). */
int sbx_class_allows_secrets(const struct sbx_class *cls, const struct sbx_defaults *d, const struct sbx_spec *s,
                             char *why, size_t whylen);

/* Does cls allow the lifecycle of the resolved spec s? 1, or 0 with the message in why. */
int sbx_class_allows_lifecycle(const struct sbx_class *cls, const struct sbx_spec *s, char *why, size_t whylen);

#endif
