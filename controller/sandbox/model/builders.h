/* sandbox/model/builders.h — the objects a Sandbox owns (workspace PVC, Pod, Service, the
 * metadata they share, the status endpoints), built as cJSON from a spec that
 * sbx_spec_parse accepted (sandbox/model/spec.h). No I/O. */
#ifndef YAO_SANDBOX_BUILDERS_H
#define YAO_SANDBOX_BUILDERS_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "sandbox/model/spec.h"

/* Identity of the owning Sandbox, for ownerReferences and labels. */
struct sbx_shard_labels;
struct sbx_owner {
    const char *name, *namespace_, *uid;
    /* The shard labels the objects get (sandbox/decide/shard_decide.h), or NULL (no sharding: none). */
    const struct sbx_shard_labels *shard;
};

/* The controller ownerReference of obj when it names a Sandbox of this API group
 * (apiVersion sandbox.yaoapps.com/..., kind Sandbox, controller: true), else NULL. A
 * Sandbox kind of another group (another product's CRD) is not ours. */
const cJSON *sbx_sandbox_controller_ref(const cJSON *obj);

/* Workspace claim name for a pod name: pod_name + "-workspace". out >= 80 bytes
 * (a longer pod name or a smaller out truncates). */
void sbx_claim_name(const char *pod_name, char *out, size_t outlen);
/* A container's resources as the sandbox container's: s's cpu and memory limits and
 * requests, and its ephemeral-storage limit when set. 0 or -1. */
int sbx_add_resources(cJSON *ctr, const struct sbx_spec *s);
/* {name, persistentVolumeClaim {claimName, readOnly when read_only}} appended to vols. 0 or -1. */
int sbx_add_claim_volume(cJSON *vols, const char *name, const char *claim, int read_only);
/* A helper container's (copier, binder) restricted hardening: no privilege escalation,
 * every capability dropped. 0 or -1. */
int sbx_add_helper_hardening(cJSON *ctr);
/* spec.imagePullSecrets of a pod spec from s's pull secrets (none: nothing added). 0 or -1. */
int sbx_add_pull_secrets(cJSON *pod_spec, const struct sbx_spec *s);

/* The workspace PVC (apiVersion/kind/metadata/spec): labels and annotations as SPEC §3,
 * ownerReference to the Sandbox with controller=true and blockOwnerDeletion=true,
 * ReadWriteOnce, requests.storage = workspace size, storageClassName if set.
 * Returns a new cJSON object (caller deletes) or NULL on ENOMEM. */
cJSON *sbx_build_pvc(const struct sbx_owner *o, const struct sbx_spec *s,
                     const char *pod_name, const char *claim_name);
/* The size a clone asks for: the spec's, or the source's when that is larger (a clone
 * cannot be smaller than its source). */
int64_t sbx_clone_bytes(int64_t own_bytes, int64_t source_bytes);

/* sbx_build_pvc, and with src the claim is a clone of src->claim: spec.dataSource
 * {kind: PersistentVolumeClaim, name}, the storage request sbx_clone_bytes(spec, source),
 * and storageClassName the spec's or else the source's. NULL on ENOMEM or src->claim NULL. */
cJSON *sbx_build_pvc_from(const struct sbx_owner *o, const struct sbx_spec *s,
                          const char *pod_name, const char *claim_name,
                          const struct sbx_ws_source *src);
/* Both builders take a spec from a successful sbx_spec_parse and need o->name and o->uid
 * (o->namespace_ NULL omits metadata.namespace); they return NULL if either is missing. */
/* The sandbox Pod: one container "sandbox" with the image; command/args from the spec,
 * and when neither is given an idle main process that exits promptly on SIGTERM
 * (/bin/sh -c SBX_IDLE_SCRIPT), so any image with a POSIX sh can be exec'd into; env
 * YAO_SANDBOX_NAME / YAO_USER_ID / YAO_CHAT_ID then spec.env; imagePullPolicy from the
 * controller; limits = memory/cpu, requests = memory_request/cpu_request; the workspace PVC mounted at mountPath; restricted-PSS hardening
 * (runAsNonRoot, runAsUser/runAsGroup/fsGroup = s->run_as_user (1000 by default; none
 * with SBX_RUN_AS_AUTO), allowPrivilegeEscalation false,
 * capabilities drop ALL, seccompProfile RuntimeDefault); automountServiceAccountToken
 * false; enableServiceLinks false; restartPolicy Always (Never for one-shot);
 * imagePullSecrets from s->pull_secrets when there are any;
 * labels/annotations/ownerReference as for the PVC, plus SBX_ANN_TEMPLATE_HASH: the first
 * 16 hex digits of the SHA-256 of the pod's spec as JSON (image, command, env, resources,
 * mount path, ...: anything that reaches the pod), so a spec change is seen on the pod.
 * Returns a new cJSON object or NULL on ENOMEM. */
cJSON *sbx_build_pod(const struct sbx_owner *o, const struct sbx_spec *s,
                     const char *pod_name, const char *claim_name);

/* The metadata every owned object carries (name, namespace, the project's labels, the
 * user/chat annotations, the controller ownerReference), for builders outside builders.c
 * (sandbox/model/netpol.c). NULL on ENOMEM or a missing owner field. */
cJSON *sbx_build_owned_meta(const struct sbx_owner *o, const struct sbx_spec *s, const char *name);

/* The Sandbox's Service (spec.service.enabled): named like the pod, type ClusterIP,
 * selector = the pod's SBX_LABEL_NAME label plus SBX_LABEL_POD (set on the pod only, so
 * nothing else can match), one port per spec.ports (name, port, targetPort = port,
 * protocol); labels, annotations and the controller ownerReference as for the pod.
 * NULL when the spec has no ports, a missing owner field, or ENOMEM. */
cJSON *sbx_build_service(const struct sbx_owner *o, const struct sbx_spec *s, const char *pod_name);

/* Does the live Service svc carry what sbx_build_service(o, s, pod_name) would: its
 * ports (name, port, targetPort, protocol, in order) and selector? 1 yes, 0 no (to be
 * patched). */
int sbx_service_matches(const cJSON *svc, const cJSON *want);

/* Add status.endpoints (one per spec.ports: name, port, protocol, podAddress "IP:port"
 * when pod_ip is set, serviceAddress "clusterIP:port" and serviceDNS
 * "SVC.NS.svc:port" when cluster_ip is set; IPv6 addresses in brackets) and, with
 * cluster_ip, status.service {name, clusterIP, dnsName} to the status object st. Nothing
 * when the spec has no ports. 0, or -1 on ENOMEM. */
int sbx_status_add_endpoints(cJSON *st, const struct sbx_spec *s, const char *ns, const char *svc_name,
                             const char *pod_ip, const char *cluster_ip);

#endif
