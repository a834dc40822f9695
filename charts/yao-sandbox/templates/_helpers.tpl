{{/*
Base name of every object: the release name when it already contains the chart name
(release "yao-sandbox" -> "yao-sandbox", so the objects are named exactly as in
manifests/), else "<release>-<chart>". Truncated so that "<fullname>-leader-election"
still fits in 63 characters.
*/}}
{{- define "yao-sandbox.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 42 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 42 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 42 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of the controller's Deployment, ServiceAccount, ClusterRole/Role, bindings, Lease. */}}
{{- define "yao-sandbox.controllerName" -}}
{{- printf "%s-controller" (include "yao-sandbox.fullname" .) -}}
{{- end -}}

{{/* Labels that select the controller pods (stable across upgrades). */}}
{{- define "yao-sandbox.selectorLabels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* Labels of every object of the release. */}}
{{- define "yao-sandbox.labels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: yao-sandbox
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/*
The namespace the controller watches, or "" for all of them. The controller takes one
--namespace: more than one entry in watchNamespaces is refused here, at render time.
*/}}
{{- define "yao-sandbox.watchNamespace" -}}
{{- $ns := .Values.watchNamespaces | default list -}}
{{- if gt (len $ns) 1 -}}
{{- fail (printf "watchNamespaces: the controller watches one namespace or all of them, got %d (%s); leave it empty for cluster-wide mode, or install one release per namespace" (len $ns) (join ", " $ns)) -}}
{{- end -}}
{{- if eq (len $ns) 1 -}}
{{- $one := index $ns 0 -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $one) -}}
{{- fail (printf "watchNamespaces: %q is not a valid namespace name" $one) -}}
{{- end -}}
{{- $one -}}
{{- end -}}
{{- end -}}

{{/*
The number of shards (the `shards` value; 1 = no sharding, one Deployment as before). The
chart owns --shards/--shard and YAO_SANDBOX_SHARDS/YAO_SANDBOX_SHARD: each Deployment it
renders gets its own shard, so a copy of them in extraArgs or extraEnv (the same for every
pod of the release) is refused here.
*/}}
{{- define "yao-sandbox.shards" -}}
{{- range .Values.extraArgs -}}
{{- if regexMatch "^--shards?(=.*)?$" (toString .) -}}
{{- fail (printf "extraArgs: %q is set by the chart: use the value shards (one Deployment per shard, each with its own --shard), not extraArgs" (toString .)) -}}
{{- end -}}
{{- end -}}
{{- range .Values.extraEnv -}}
{{- if has .name (list "YAO_SANDBOX_SHARDS" "YAO_SANDBOX_SHARD") -}}
{{- fail (printf "extraEnv: %s is set by the chart: use the value shards (one Deployment per shard, each with its own --shard), not extraEnv" .name) -}}
{{- end -}}
{{- end -}}
{{- $s := int (default 1 .Values.shards) -}}
{{- if or (lt $s 1) (gt $s 1024) -}}
{{- fail (printf "shards: %d is not between 1 and 1024" $s) -}}
{{- end -}}
{{- $s -}}
{{- end -}}

{{/*
Name of the controller Deployment (and PodDisruptionBudget) of shard I: <fullname>-controller
unsharded, <fullname>-controller-shard-<I> with shards > 1 (the Lease the controller takes is
named the same way: --lease-name plus -shard-<I>). Takes (dict "root" $ "shard" I "shards" S).
*/}}
{{- define "yao-sandbox.shardName" -}}
{{- if gt (int .shards) 1 -}}
{{- printf "%s-shard-%d" (include "yao-sandbox.controllerName" .root) (int .shard) -}}
{{- else -}}
{{- include "yao-sandbox.controllerName" .root -}}
{{- end -}}
{{- end -}}

{{/*
Labels that select the controller pods of shard I: the release's selector labels plus
sandbox.yaoapps.com/shard: "I" with shards > 1 (so no shard's Deployment or budget selects
another's pods), the release's selector labels alone unsharded. Takes the dict of shardName.
The metrics Service, ServiceMonitor and PodMonitor keep selecting every shard's pods.
*/}}
{{- define "yao-sandbox.shardSelectorLabels" -}}
{{- include "yao-sandbox.selectorLabels" .root }}
{{- if gt (int .shards) 1 }}
sandbox.yaoapps.com/shard: {{ int .shard | toString | quote }}
{{- end -}}
{{- end -}}

{{/* Leader election is on when asked for, and always with more than one replica. */}}
{{- define "yao-sandbox.leaderElect" -}}
{{- /* More than one replica, or shards (the Leases order a change of the shard count), force it. */ -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicas) 1) (gt (int (include "yao-sandbox.shards" .)) 1) -}}true{{- end -}}
{{- end -}}

{{/*
The rules of the controller's ClusterRole (cluster-wide mode) or Role (namespaced mode):
what the controller calls, and nothing more. Kept equal to manifests/20-rbac.yaml.
*/}}
{{- define "yao-sandbox.controllerRules" -}}
# informer (list/watch; the controller never GETs a Sandbox: it reads its cache),
# removal of finished or idle Sandboxes (delete), a last-used-at in the future set to
# now (patch, conditional on the resourceVersion read)
- apiGroups: [sandbox.yaoapps.com]
  resources: [sandboxes]
  verbs: [list, watch, delete, patch]
# status writes: merge patch on /status only
- apiGroups: [sandbox.yaoapps.com]
  resources: [sandboxes/status]
  verbs: [patch]
# the pods and claims it creates carry an ownerReference to their Sandbox with
# blockOwnerDeletion: where owner-reference permissions are enforced (the
# OwnerReferencesPermissionEnforcement admission plugin, on by default in OpenShift) that
# needs update on the owner's finalizers. Never called: checked by admission only.
- apiGroups: [sandbox.yaoapps.com]
  resources: [sandboxes/finalizers]
  verbs: [update]
# the sandbox pods and workspace claims it owns (get: after a 409 on create, to tell
# its own object from a stranger's)
- apiGroups: [""]
  resources: [pods, persistentvolumeclaims]
  verbs: [get, list, watch, create, delete]
# a grown spec.workspace.size raises the claim's storage request (where the class
# allows volume expansion); with --shards > 1 the shard label is added to a pod or claim
# made before sharding was turned on (sandbox/io/shard.c)
- apiGroups: [""]
  resources: [pods, persistentvolumeclaims]
  verbs: [patch]
# a warm-idle sandbox's CPU resized in place, down at its idle deadline and back up when it
# is used (a SandboxClass's spec.warmIdle; Kubernetes 1.33+)
- apiGroups: [""]
  resources: [pods/resize]
  verbs: [patch]
# the Service of a Sandbox with spec.service.enabled (informer; create; patch when its
# ports change; delete when turned off or orphaned; get after a 409 on create)
- apiGroups: [""]
  resources: [services]
  verbs: [get, list, watch, create, patch, delete]
# the NetworkPolicy of a Sandbox whose class's spec.network.mode is isolated (informer;
# create; patch when the class or the Sandbox's egressCIDRs change; delete when the mode
# turns none or orphaned; get after a 409 on create)
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch, create, patch, delete]
# the binding mode of a workspace claim's StorageClass (informer): a pod on a
# WaitForFirstConsumer class is created at once, not after its claim is bound. (A Role of a
# namespaced install cannot grant this cluster-scoped read; without it classes count as
# Immediate: a namespaced install grants it with its <name>-cluster-reads ClusterRole.)
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [list, watch]
# SandboxClasses (informer; cluster-scoped): the defaults and limits of each Sandbox.
# (A namespaced install's Role cannot grant this read: its <name>-cluster-reads ClusterRole
# does; without it every Sandbox would get the flag defaults.)
- apiGroups: [sandbox.yaoapps.com]
  resources: [sandboxclasses]
  verbs: [list, watch]
# Namespaces (informer, their labels only): which namespaces may use a SandboxClass
# (spec.allowedNamespaces) and a namespace's default class (the label
# sandbox.yaoapps.com/default-class). Without it a class limited to some namespaces
# refuses every Sandbox.
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list, watch]
# Events on Sandboxes (core/v1): a new Event per transition, or a patch raising the count
# of an identical one (kube/events.c)
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
# PodMetrics (metrics.k8s.io, metrics-server): the CPU of a sandbox's pod at its idle
# deadline, when its SandboxClass counts activity (spec.activity)
- apiGroups: [metrics.k8s.io]
  resources: [pods]
  verbs: [get]
{{- end -}}

{{/* The controller image: [registry/]repository, then @digest or :tag (appVersion). */}}
{{- define "yao-sandbox.image" -}}
{{- $img := .Values.image -}}
{{- $repo := $img.repository -}}
{{- with $img.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" .) $repo }}{{ end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default $.Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* The sandbox image (YAO_SANDBOX_IMAGE): sandboxDefaults.image, else the sandbox image of
     this release from the controller's registry: [image.registry/]yao-sandbox/sandbox:<tag>
     (image.tag, else appVersion) — `images/build.sh push` puts both images there, so a
     registry that serves the controller serves the sandboxes too. */}}
{{- define "yao-sandbox.sandboxImage" -}}
{{- if .Values.sandboxDefaults.image -}}
{{- .Values.sandboxDefaults.image -}}
{{- else -}}
{{- $repo := "yao-sandbox/sandbox" -}}
{{- with .Values.image.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" .) $repo }}{{ end -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The controller's ServiceAccount: serviceAccount.name, else <fullname>-controller. */}}
{{- define "yao-sandbox.serviceAccountName" -}}
{{- default (include "yao-sandbox.controllerName" .) .Values.serviceAccount.name -}}
{{- end -}}
