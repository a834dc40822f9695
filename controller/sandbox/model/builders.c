/* sandbox/model/builders.c — the objects a Sandbox owns, built from its parsed spec (see
 * builders.h): their shared metadata (the project's labels, the user/chat annotations, the
 * controller ownerReference), the workspace PVC (new or cloned), the sandbox Pod with its
 * template hash, the Service and the status endpoints; the pieces the helper pods share
 * (sandbox/model/workspacecopy.c, sandbox/model/warmbinder.c); and the check that an object's
 * controller is a Sandbox.
 *
 * Members are added in a fixed order: the Pod's template hash is taken over its spec as
 * printed, so any change of order here changes the hash of every pod and rolls them all.
 *
 * Not here: parsing and validating the spec (spec.c), any I/O. */
#include "sandbox/model/builders.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "kube/kjson.h"
#include "sandbox/model/naming.h"
#include "sandbox/model/oneshot.h"
#include "sandbox/model/quantity.h"
#include "sandbox/model/spec.h"

#define SBX_GRACE_SECONDS 10
#define SBX_VOLUME_NAME "workspace"


const cJSON *sbx_sandbox_controller_ref(const cJSON *obj) {
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(md, "ownerReferences")) {
        const cJSON *ctl = cJSON_GetObjectItemCaseSensitive(r, "controller");
        if (!cJSON_IsTrue(ctl)) continue;
        const cJSON *api = cJSON_GetObjectItemCaseSensitive(r, "apiVersion");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(r, "kind");
        int ours = cJSON_IsString(api) && !strncmp(api->valuestring, SBX_GROUP "/", strlen(SBX_GROUP "/")) &&
                   cJSON_IsString(kind) && !strcmp(kind->valuestring, SBX_KIND);
        return ours ? r : NULL;   /* one controller at most */
    }
    return NULL;
}

int sbx_add_resources(cJSON *ctr, const struct sbx_spec *s) {
    char mem[32], cpu[32], mem_req[32], cpu_req[32];
    if (qty_format_memory(s->memory_bytes, mem, sizeof mem) != 0 || qty_format_cpu(s->cpu_millis, cpu, sizeof cpu) != 0 ||
        qty_format_memory(s->memory_request_bytes, mem_req, sizeof mem_req) != 0 ||
        qty_format_cpu(s->cpu_request_millis, cpu_req, sizeof cpu_req) != 0)
        return -1;
    cJSON *res = cJSON_AddObjectToObject(ctr, "resources");
    cJSON *lim = cJSON_AddObjectToObject(res, "limits");
    cJSON *req = cJSON_AddObjectToObject(res, "requests");
    if (!cJSON_AddStringToObject(lim, "cpu", cpu) || !cJSON_AddStringToObject(lim, "memory", mem) ||
        !cJSON_AddStringToObject(req, "cpu", cpu_req) || !cJSON_AddStringToObject(req, "memory", mem_req))
        return -1;
    /* A limit on the container's writable layer, logs and emptyDirs: past it the kubelet
     * evicts the pod instead of letting it fill the node's disk. No request is set, so
     * Kubernetes takes the limit as the request (the scheduler reserves it). */
    if (s->ephemeral_bytes > 0) {
        char eph[32];
        if (qty_format_memory(s->ephemeral_bytes, eph, sizeof eph) != 0 ||
            !cJSON_AddStringToObject(lim, "ephemeral-storage", eph))
            return -1;
    }
    return 0;
}

int sbx_add_claim_volume(cJSON *vols, const char *name, const char *claim, int read_only) {
    cJSON *v = cJSON_CreateObject(), *pvc;
    if (!v || !cJSON_AddItemToArray(vols, v)) { cJSON_Delete(v); return -1; }
    if (!cJSON_AddStringToObject(v, "name", name) || !(pvc = cJSON_AddObjectToObject(v, "persistentVolumeClaim")) ||
        !cJSON_AddStringToObject(pvc, "claimName", claim) || (read_only && !cJSON_AddTrueToObject(pvc, "readOnly")))
        return -1;
    return 0;
}

int sbx_add_helper_hardening(cJSON *ctr) {
    cJSON *csc, *caps;
    return (csc = cJSON_AddObjectToObject(ctr, "securityContext")) &&
                   cJSON_AddFalseToObject(csc, "allowPrivilegeEscalation") &&
                   (caps = cJSON_AddObjectToObject(csc, "capabilities")) &&
                   cJSON_AddItemToObject(caps, "drop", cJSON_CreateStringArray((const char *const[]){"ALL"}, 1))
               ? 0 : -1;
}

int sbx_add_pull_secrets(cJSON *pod_spec, const struct sbx_spec *s) {
    if (!s->npull_secrets) return 0;
    cJSON *ps = cJSON_AddArrayToObject(pod_spec, "imagePullSecrets");
    if (!ps) return -1;
    for (size_t i = 0; i < s->npull_secrets; i++) {
        cJSON *ref = cJSON_CreateObject();
        if (!ref || !cJSON_AddItemToArray(ps, ref)) {
            cJSON_Delete(ref);
            return -1;
        }
        if (!cJSON_AddStringToObject(ref, "name", s->pull_secrets[i])) return -1;
    }
    return 0;
}

void sbx_claim_name(const char *pod_name, char *out, size_t outlen) {
    if (outlen) snprintf(out, outlen, "%s%s", pod_name, SBX_CLAIM_SUFFIX);
}

/* Adds key: label-safe form of value to labels; NULL on ENOMEM. */
static cJSON *sbx_add_label(cJSON *labels, const char *key, const char *value) {
    char buf[SBX_LABEL_VALUE_MAX + 1];

    sbx_label_value(value, buf, sizeof buf);
    return cJSON_AddStringToObject(labels, key, buf);
}

/* metadata of an owned object: name, namespace, the SPEC §3 labels, the raw IDs as
 * annotations, and the controller ownerReference to the Sandbox. NULL on ENOMEM. */
static cJSON *sbx_build_meta(const struct sbx_owner *o, const struct sbx_spec *s,
                             const char *name) {
    cJSON *meta = cJSON_CreateObject(), *labels, *ann, *refs, *ref;

    if (!cJSON_AddStringToObject(meta, "name", name)) goto err;
    if (o->namespace_ && !cJSON_AddStringToObject(meta, "namespace", o->namespace_)) goto err;

    labels = cJSON_AddObjectToObject(meta, "labels");
    if (!cJSON_AddStringToObject(labels, SBX_LABEL_MANAGED_BY, SBX_MANAGED_BY) ||
        !sbx_add_label(labels, SBX_LABEL_NAME, o->name) ||
        !sbx_add_label(labels, SBX_LABEL_USER, s->user_id) ||
        !sbx_add_label(labels, SBX_LABEL_CHAT, s->chat_id) ||
        !cJSON_AddStringToObject(labels, SBX_LABEL_LIFECYCLE, sbx_lifecycle_name(s->lifecycle)) ||
        (o->shard && (!cJSON_AddStringToObject(labels, SBX_LABEL_SHARD, o->shard->shard) ||
                      !cJSON_AddStringToObject(labels, SBX_LABEL_SHARDS, o->shard->shards))))
        goto err;

    ann = cJSON_AddObjectToObject(meta, "annotations");
    if (!cJSON_AddStringToObject(ann, SBX_ANN_USER_ID, s->user_id) ||
        !cJSON_AddStringToObject(ann, SBX_ANN_CHAT_ID, s->chat_id))
        goto err;

    refs = cJSON_AddArrayToObject(meta, "ownerReferences");
    ref = cJSON_CreateObject();
    if (!refs || !ref) {
        cJSON_Delete(ref);
        goto err;
    }
    cJSON_AddItemToArray(refs, ref);
    if (!cJSON_AddStringToObject(ref, "apiVersion", SBX_API_VERSION) ||
        !cJSON_AddStringToObject(ref, "kind", SBX_KIND) ||
        !cJSON_AddStringToObject(ref, "name", o->name) ||
        !cJSON_AddStringToObject(ref, "uid", o->uid) ||
        !cJSON_AddTrueToObject(ref, "controller") ||
        !cJSON_AddTrueToObject(ref, "blockOwnerDeletion"))
        goto err;
    return meta;
err:
    cJSON_Delete(meta);
    return NULL;
}

cJSON *sbx_build_owned_meta(const struct sbx_owner *o, const struct sbx_spec *s, const char *name) {
    if (!o || !o->name || !o->uid || !s || !s->user_id || !s->chat_id || !name) return NULL;
    return sbx_build_meta(o, s, name);
}

/* A new {apiVersion, kind, metadata} object; NULL on ENOMEM or a missing owner field. */
static cJSON *sbx_build_object(const char *kind, const struct sbx_owner *o,
                               const struct sbx_spec *s, const char *name) {
    cJSON *obj, *meta;

    if (!o || !o->name || !o->uid || !s || !s->user_id || !s->chat_id || !name) return NULL;
    obj = cJSON_CreateObject();
    if (!cJSON_AddStringToObject(obj, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(obj, "kind", kind))
        goto err;
    meta = sbx_build_meta(o, s, name);
    if (!meta) goto err;
    if (!cJSON_AddItemToObject(obj, "metadata", meta)) {
        cJSON_Delete(meta);
        goto err;
    }
    return obj;
err:
    cJSON_Delete(obj);
    return NULL;
}

int64_t sbx_clone_bytes(int64_t own_bytes, int64_t source_bytes) {
    return source_bytes > own_bytes ? source_bytes : own_bytes;
}

cJSON *sbx_build_pvc(const struct sbx_owner *o, const struct sbx_spec *s,
                     const char *pod_name, const char *claim_name) {
    return sbx_build_pvc_from(o, s, pod_name, claim_name, NULL);
}

cJSON *sbx_build_pvc_from(const struct sbx_owner *o, const struct sbx_spec *s,
                          const char *pod_name, const char *claim_name,
                          const struct sbx_ws_source *src) {
    char size[32];
    const char *cls;
    cJSON *pvc, *spec, *modes, *res, *ds;

    (void)pod_name;   /* the claim is tied to the pod only by name */
    if (src && !src->claim) return NULL;
    if (qty_format_memory(s ? sbx_clone_bytes(s->workspace_bytes, src ? src->bytes : 0) : 0,
                          size, sizeof size) != 0)
        return NULL;
    pvc = sbx_build_object("PersistentVolumeClaim", o, s, claim_name);
    if (!pvc) return NULL;
    spec = cJSON_AddObjectToObject(pvc, "spec");
    modes = cJSON_AddArrayToObject(spec, "accessModes");
    if (!modes || !cJSON_AddItemToArray(modes, cJSON_CreateString("ReadWriteOnce")))
        goto err;
    /* A clone must be of its source's class: the cluster default is named explicitly. */
    cls = s->storage_class ? s->storage_class : src ? src->storage_class : NULL;
    if (cls && !cJSON_AddStringToObject(spec, "storageClassName", cls))
        goto err;
    if (!cJSON_AddStringToObject(spec, "volumeMode", "Filesystem")) goto err;
    res = cJSON_AddObjectToObject(spec, "resources");
    if (!cJSON_AddStringToObject(cJSON_AddObjectToObject(res, "requests"), "storage", size))
        goto err;
    if (src) {
        cJSON *ann = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pvc, "metadata"),
                                                      "annotations");
        if (!ann || !cJSON_AddStringToObject(ann, SBX_ANN_CLONED_SIZE, size)) goto err;
        if (src->copy) {
            /* Filled by a copier pod (sandbox/model/workspacecopy.h), which reads the source. */
            if (!cJSON_AddStringToObject(ann, SBX_ANN_FORK_FROM, src->claim)) goto err;
            return pvc;
        }
        ds = cJSON_AddObjectToObject(spec, "dataSource");
        if (!cJSON_AddStringToObject(ds, "kind", "PersistentVolumeClaim") ||
            !cJSON_AddStringToObject(ds, "name", src->claim))
            goto err;
    }
    return pvc;
err:
    cJSON_Delete(pvc);
    return NULL;
}

/* Appends the strings of v to a new array member key of obj; -1 on ENOMEM. */
static int sbx_add_strv(cJSON *obj, const char *key, const char *const *v, size_t n) {
    cJSON *arr = cJSON_AddArrayToObject(obj, key);

    if (!arr) return -1;
    for (size_t i = 0; i < n; i++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateString(v[i]))) return -1;
    return 0;
}

/* Appends {name, value} to the env array; -1 on ENOMEM. */
static int sbx_add_env(cJSON *env, const char *name, const char *value) {
    cJSON *e = cJSON_CreateObject();

    if (!e || !cJSON_AddItemToArray(env, e)) {
        cJSON_Delete(e);
        return -1;
    }
    return cJSON_AddStringToObject(e, "name", name) && cJSON_AddStringToObject(e, "value", value)
               ? 0 : -1;
}

/* Appends a spec env item: {name, value}, or {name, valueFrom: {secretKeyRef}}. */
static int sbx_add_spec_env(cJSON *env, const struct sbx_env *v) {
    cJSON *e, *ref;

    if (!v->secret_name) return sbx_add_env(env, v->name, v->value ? v->value : "");
    e = cJSON_CreateObject();
    if (!e || !cJSON_AddItemToArray(env, e)) {
        cJSON_Delete(e);
        return -1;
    }
    if (!cJSON_AddStringToObject(e, "name", v->name)) return -1;
    ref = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "secretKeyRef");
    if (!ref ||
        !cJSON_AddStringToObject(ref, "name", v->secret_name) ||
        !cJSON_AddStringToObject(ref, "key", v->secret_key))
        return -1;
    return v->secret_optional && !cJSON_AddTrueToObject(ref, "optional") ? -1 : 0;
}

/* The container: image, main process, env, resources, mount, hardening. */
static int sbx_build_container(cJSON *ctr, const struct sbx_owner *o,
                               const struct sbx_spec *s) {
    static const char *const idle[] = { "/bin/sh", "-c", SBX_IDLE_SCRIPT };
    cJSON *env, *mounts, *mount, *sc, *caps;

    if (!cJSON_AddStringToObject(ctr, "name", SBX_CONTAINER_NAME) ||
        !cJSON_AddStringToObject(ctr, "image", s->image) ||
        !cJSON_AddStringToObject(ctr, "imagePullPolicy", sbx_pull_policy_name(sbx_pull_policy_for(s->pull_policy, s->image))))
        return -1;
    if (s->lifecycle == SBX_ONE_SHOT && s->run.present) {
        /* The run is the main process, through the wrapper that keeps stdout and stderr
         * apart for the termination message (oneshot.h); argv follows "$@" unchanged. */
        cJSON *cmd = cJSON_AddArrayToObject(ctr, "command");
        static const char *const wrap[] = { "/bin/sh", "-c", SBX_RUN_SCRIPT, "yao-run" };
        for (size_t i = 0; cmd && i < 4 + s->run.command.n; i++) {
            cJSON *a = cJSON_CreateString(i < 4 ? wrap[i] : s->run.command.v[i - 4]);
            if (!a || !cJSON_AddItemToArray(cmd, a)) { cJSON_Delete(a); return -1; }
        }
        if (!cmd) return -1;
        if (s->run.working_dir && !cJSON_AddStringToObject(ctr, "workingDir", s->run.working_dir)) return -1;
    } else if (!s->has_command && !s->has_args) {
        if (sbx_add_strv(ctr, "command", idle, 3)) return -1;
    } else {
        if (s->has_command &&
            sbx_add_strv(ctr, "command", (const char *const *)s->command.v, s->command.n))
            return -1;
        if (s->has_args && sbx_add_strv(ctr, "args", (const char *const *)s->args.v, s->args.n))
            return -1;
    }

    /* spec.ports: only when there are some, so the template hash of a pod without ports
     * is what it was before ports existed (no rollout of every sandbox). */
    if (s->nports) {
        cJSON *ports = cJSON_AddArrayToObject(ctr, "ports");
        if (!ports) return -1;
        for (size_t i = 0; i < s->nports; i++) {
            cJSON *cp = cJSON_CreateObject();
            if (!cp || !cJSON_AddItemToArray(ports, cp)) { cJSON_Delete(cp); return -1; }
            if (!cJSON_AddStringToObject(cp, "name", s->ports[i].name) ||
                !cJSON_AddNumberToObject(cp, "containerPort", s->ports[i].port) ||
                !cJSON_AddStringToObject(cp, "protocol", sbx_port_protocol_name(s->ports[i].protocol)))
                return -1;
        }
    }

    env = cJSON_AddArrayToObject(ctr, "env");
    if (!env || sbx_add_env(env, "YAO_SANDBOX_NAME", o->name) ||
        sbx_add_env(env, "YAO_USER_ID", s->user_id) ||
        sbx_add_env(env, "YAO_CHAT_ID", s->chat_id))
        return -1;
    for (size_t i = 0; i < s->nenv; i++)
        if (sbx_add_spec_env(env, &s->env[i])) return -1;
    if (s->lifecycle == SBX_ONE_SHOT)   /* after spec.env: a name in both takes run.env's value */
        for (size_t i = 0; i < s->run.nenv; i++)
            if (sbx_add_spec_env(env, &s->run.env[i])) return -1;
    /* The run's result is read from the termination message (oneshot.h); should the wrapper
     * not write one (no /bin/sh in the image), the kubelet falls back to the log's tail. */
    if (s->lifecycle == SBX_ONE_SHOT &&
        (!cJSON_AddStringToObject(ctr, "terminationMessagePath", "/dev/termination-log") ||
         !cJSON_AddStringToObject(ctr, "terminationMessagePolicy", "FallbackToLogsOnError")))
        return -1;

    if (sbx_add_resources(ctr, s) < 0) return -1;

    mounts = cJSON_AddArrayToObject(ctr, "volumeMounts");
    mount = cJSON_CreateObject();
    if (!mounts || !mount || !cJSON_AddItemToArray(mounts, mount)) {
        cJSON_Delete(mount);
        return -1;
    }
    if (!cJSON_AddStringToObject(mount, "name", SBX_VOLUME_NAME) ||
        !cJSON_AddStringToObject(mount, "mountPath", s->mount_path ? s->mount_path : "/workspace"))
        return -1;

    /* Restricted PSS at container level; the root filesystem stays writable because
     * sandboxes install things. */
    sc = cJSON_AddObjectToObject(ctr, "securityContext");
    if (!cJSON_AddFalseToObject(sc, "allowPrivilegeEscalation") ||
        !cJSON_AddFalseToObject(sc, "privileged") ||
        !cJSON_AddFalseToObject(sc, "readOnlyRootFilesystem"))
        return -1;
    caps = cJSON_AddObjectToObject(sc, "capabilities");
    if (!caps) return -1;
    {
        static const char *const drop[] = { "ALL" };
        if (sbx_add_strv(caps, "drop", drop, 1)) return -1;
    }
    return 0;
}

/* First SBX_TEMPLATE_HASH_LEN hex digits of SHA-256 over the pod spec as compact JSON (the
 * builder adds members in a fixed order, so equal specs print equal). 0 or -1. */
static int sbx_template_hash(const cJSON *pod_spec, char *out) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    int rc = -1;
    char *text = cJSON_PrintUnformatted(pod_spec);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    if (text && ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
        EVP_DigestUpdate(ctx, text, strlen(text)) == 1 && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 &&
        mdlen >= SBX_TEMPLATE_HASH_LEN / 2) {
        for (int i = 0; i < SBX_TEMPLATE_HASH_LEN / 2; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
        rc = 0;
    }
    EVP_MD_CTX_free(ctx);
    cJSON_free(text);
    return rc;
}

cJSON *sbx_build_pod(const struct sbx_owner *o, const struct sbx_spec *s,
                     const char *pod_name, const char *claim_name) {
    cJSON *pod, *spec, *sc, *ctrs, *ctr, *vols, *vol;

    if (!claim_name) return NULL;
    pod = sbx_build_object("Pod", o, s, pod_name);
    if (!pod) return NULL;
    if (!cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                                                  "labels"), SBX_LABEL_POD, pod_name))
        goto err;
    spec = cJSON_AddObjectToObject(pod, "spec");
    if (!cJSON_AddStringToObject(spec, "restartPolicy",
                                 s->lifecycle == SBX_ONE_SHOT ? "Never" : "Always") ||
        !cJSON_AddFalseToObject(spec, "automountServiceAccountToken") ||
        !cJSON_AddFalseToObject(spec, "enableServiceLinks") ||
        !cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", SBX_GRACE_SECONDS))
        goto err;
    /* run.timeout, enforced by the kubelet (the pod fails with reason DeadlineExceeded),
     * whole seconds rounded up. The clock starts when the kubelet accepts the pod. */
    if (s->lifecycle == SBX_ONE_SHOT && s->run.present && s->run.timeout_ms > 0 &&
        !cJSON_AddNumberToObject(spec, "activeDeadlineSeconds", (double)((s->run.timeout_ms + 999) / 1000)))
        goto err;

    /* Runtime and placement from the SandboxClass: a sandboxed runtime (gVisor, Kata),
     * dedicated nodes, scheduling priority. */
    if ((s->runtime_class && !cJSON_AddStringToObject(spec, "runtimeClassName", s->runtime_class)) ||
        (s->priority_class && !cJSON_AddStringToObject(spec, "priorityClassName", s->priority_class)) ||
        (s->node_selector && !cJSON_AddItemToObject(spec, "nodeSelector", cJSON_Duplicate(s->node_selector, 1))) ||
        (s->tolerations && !cJSON_AddItemToObject(spec, "tolerations", cJSON_Duplicate(s->tolerations, 1))) ||
        (s->affinity && !cJSON_AddItemToObject(spec, "affinity", cJSON_Duplicate(s->affinity, 1))))
        goto err;

    sc = cJSON_AddObjectToObject(spec, "securityContext");
    if (!cJSON_AddTrueToObject(sc, "runAsNonRoot")) goto err;
    /* SBX_RUN_AS_AUTO: the platform assigns uid, gid and fsGroup (an OpenShift SCC takes
     * them from the namespace's range and refuses pods that name others). */
    if (s->run_as_user != SBX_RUN_AS_AUTO &&
        (!cJSON_AddNumberToObject(sc, "runAsUser", (double)s->run_as_user) ||
         !cJSON_AddNumberToObject(sc, "runAsGroup", (double)s->run_as_user) ||
         !cJSON_AddNumberToObject(sc, "fsGroup", (double)s->run_as_user)))
        goto err;
    if (/* chown the workspace once, not on every start of a big volume */
        !cJSON_AddStringToObject(sc, "fsGroupChangePolicy", "OnRootMismatch") ||
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(sc, "seccompProfile"), "type",
                                 "RuntimeDefault"))
        goto err;

    ctrs = cJSON_AddArrayToObject(spec, "containers");
    ctr = cJSON_CreateObject();
    if (!ctrs || !ctr || !cJSON_AddItemToArray(ctrs, ctr)) {
        cJSON_Delete(ctr);
        goto err;
    }
    if (sbx_build_container(ctr, o, s)) goto err;

    if (sbx_add_pull_secrets(spec, s) < 0) goto err;

    vols = cJSON_AddArrayToObject(spec, "volumes");
    vol = cJSON_CreateObject();
    if (!vols || !vol || !cJSON_AddItemToArray(vols, vol)) {
        cJSON_Delete(vol);
        goto err;
    }
    if (!cJSON_AddStringToObject(vol, "name", SBX_VOLUME_NAME) ||
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(vol, "persistentVolumeClaim"),
                                 "claimName", claim_name))
        goto err;
    {
        char hash[SBX_TEMPLATE_HASH_LEN + 1];
        cJSON *ann = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                                      "annotations");
        if (sbx_template_hash(spec, hash) || !cJSON_AddStringToObject(ann, SBX_ANN_TEMPLATE_HASH, hash))
            goto err;
        if (!cJSON_AddStringToObject(ann, SBX_ANN_CLASS, s->class_name ? s->class_name : "")) goto err;
    }
    /* After the hash: the addresses are looked up at creation and may move (hostalias.c). */
    if (s->host_aliases_resolved) {
        cJSON *aliases = cJSON_Duplicate(s->host_aliases_resolved, 1);
        if (!aliases || !cJSON_AddItemToObject(spec, "hostAliases", aliases)) {
            cJSON_Delete(aliases);
            goto err;
        }
    }
    return pod;
err:
    cJSON_Delete(pod);
    return NULL;
}

/* {SBX_LABEL_NAME: sanitised owner name, SBX_LABEL_POD: pod name} as a new object. */
static cJSON *sbx_service_selector(const struct sbx_owner *o, const char *pod_name) {
    cJSON *sel = cJSON_CreateObject();

    if (!sbx_add_label(sel, SBX_LABEL_NAME, o->name) || !cJSON_AddStringToObject(sel, SBX_LABEL_POD, pod_name)) {
        cJSON_Delete(sel);
        return NULL;
    }
    return sel;
}

cJSON *sbx_build_service(const struct sbx_owner *o, const struct sbx_spec *s, const char *pod_name) {
    cJSON *svc, *spec, *sel, *ports;

    if (!s || !s->nports) return NULL;
    svc = sbx_build_object("Service", o, s, pod_name);
    if (!svc) return NULL;
    spec = cJSON_AddObjectToObject(svc, "spec");
    if (!cJSON_AddStringToObject(spec, "type", "ClusterIP")) goto err;
    sel = sbx_service_selector(o, pod_name);
    if (!sel || !cJSON_AddItemToObject(spec, "selector", sel)) {
        cJSON_Delete(sel);
        goto err;
    }
    ports = cJSON_AddArrayToObject(spec, "ports");
    if (!ports) goto err;
    for (size_t i = 0; i < s->nports; i++) {
        cJSON *sp = cJSON_CreateObject();
        if (!sp || !cJSON_AddItemToArray(ports, sp)) { cJSON_Delete(sp); goto err; }
        if (!cJSON_AddStringToObject(sp, "name", s->ports[i].name) ||
            !cJSON_AddStringToObject(sp, "protocol", sbx_port_protocol_name(s->ports[i].protocol)) ||
            !cJSON_AddNumberToObject(sp, "port", s->ports[i].port) ||
            !cJSON_AddNumberToObject(sp, "targetPort", s->ports[i].port))
            goto err;
    }
    return svc;
err:
    cJSON_Delete(svc);
    return NULL;
}

/* Integer member key of obj, or -1. */
static long sbx_int_member(const cJSON *obj, const char *key) {
    const cJSON *v = kj_member(obj, key);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

int sbx_service_matches(const cJSON *svc, const cJSON *want) {
    const cJSON *have_spec = kj_member(svc, "spec"), *want_spec = kj_member(want, "spec");
    const cJSON *hp = kj_member(have_spec, "ports"), *wp = kj_member(want_spec, "ports");
    const cJSON *hs = kj_member(have_spec, "selector"), *ws = kj_member(want_spec, "selector"), *kv;
    int n = cJSON_GetArraySize(wp);

    if (!cJSON_IsArray(hp) || cJSON_GetArraySize(hp) != n) return 0;
    for (int i = 0; i < n; i++) {
        const cJSON *h = cJSON_GetArrayItem(hp, i), *w = cJSON_GetArrayItem(wp, i);
        const cJSON *hn = kj_member(h, "name"), *hpr = kj_member(h, "protocol");
        if (!cJSON_IsString(hn) || strcmp(hn->valuestring, kj_member(w, "name")->valuestring) != 0 ||
            !cJSON_IsString(hpr) || strcmp(hpr->valuestring, kj_member(w, "protocol")->valuestring) != 0 ||
            sbx_int_member(h, "port") != sbx_int_member(w, "port") ||
            sbx_int_member(h, "targetPort") != sbx_int_member(w, "targetPort"))
            return 0;
    }
    if (!cJSON_IsObject(hs) || cJSON_GetArraySize(hs) != cJSON_GetArraySize(ws)) return 0;
    cJSON_ArrayForEach(kv, ws) {
        const cJSON *h = kj_member(hs, kv->string);
        if (!cJSON_IsString(h) || strcmp(h->valuestring, kv->valuestring) != 0) return 0;
    }
    return 1;
}

/* "host:port", with host in brackets when it is an IPv6 address. */
static void sbx_host_port(char *out, size_t n, const char *host, int port) {
    snprintf(out, n, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

int sbx_status_add_endpoints(cJSON *st, const struct sbx_spec *s, const char *ns, const char *svc_name,
                             const char *pod_ip, const char *cluster_ip) {
    char buf[600];
    cJSON *eps;

    if (!s || !s->nports) return 0;
    if (cluster_ip && (!*cluster_ip || !strcmp(cluster_ip, "None"))) cluster_ip = NULL;
    if (pod_ip && !*pod_ip) pod_ip = NULL;
    eps = cJSON_AddArrayToObject(st, "endpoints");
    if (!eps) return -1;
    for (size_t i = 0; i < s->nports; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(eps, e)) { cJSON_Delete(e); return -1; }
        if (!cJSON_AddStringToObject(e, "name", s->ports[i].name) ||
            !cJSON_AddNumberToObject(e, "port", s->ports[i].port) ||
            !cJSON_AddStringToObject(e, "protocol", sbx_port_protocol_name(s->ports[i].protocol)))
            return -1;
        if (pod_ip) {
            sbx_host_port(buf, sizeof buf, pod_ip, s->ports[i].port);
            if (!cJSON_AddStringToObject(e, "podAddress", buf)) return -1;
        }
        if (cluster_ip && svc_name && ns) {
            sbx_host_port(buf, sizeof buf, cluster_ip, s->ports[i].port);
            if (!cJSON_AddStringToObject(e, "serviceAddress", buf)) return -1;
            snprintf(buf, sizeof buf, "%s.%s.svc:%d", svc_name, ns, s->ports[i].port);
            if (!cJSON_AddStringToObject(e, "serviceDNS", buf)) return -1;
        }
    }
    if (cluster_ip && svc_name && ns) {
        cJSON *svc = cJSON_AddObjectToObject(st, "service");
        snprintf(buf, sizeof buf, "%s.%s.svc", svc_name, ns);
        if (!svc || !cJSON_AddStringToObject(svc, "name", svc_name) ||
            !cJSON_AddStringToObject(svc, "clusterIP", cluster_ip) || !cJSON_AddStringToObject(svc, "dnsName", buf))
            return -1;
    }
    return 0;
}
