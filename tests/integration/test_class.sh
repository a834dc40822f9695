#!/usr/bin/env bash
# SandboxClass and secrets on the real plane (kwok nodes): the SandboxClass CRD and the
# controller's RBAC installed with kubectl apply, the controller running with its
# ServiceAccount's token. Without a class a Sandbox gets the controller's flags; a class
# named in spec.className gives its defaults (image, memory, ephemeral-storage) and its
# runtimeClassName, nodeSelector, tolerations, affinity and priorityClassName to the pod;
# a Sandbox beyond the class (memory, image, workspace size) is Ready=False/InvalidSpec
# naming the field and the limit; a class that does not exist yet is InvalidSpec until it
# is created; the class marked default applies to Sandboxes without className; a change of
# a class reaches its running Sandboxes (pod replaced); spec.env[].valueFrom.secretKeyRef
# reaches the pod while the Sandbox holds no secret value, and the viewer role cannot read
# Secrets; a class's maxRunningPerUser holds the user's next Sandbox of that class
# (UserCapacityExceeded) but not the user's Sandboxes of other classes, and a freed slot
# of the class admits it. Classes made here are named yao-it-* and removed at the end.
. "$(dirname "$0")/lib.sh"
NS=yao-it-class
LOG=$BUILD_DIR/test-class.log
: > "$LOG"
check "CRDs and manifests apply with kubectl" install_manifests
est() { kubectl wait --for=condition=Established crd/sandboxclasses.sandbox.yaoapps.com --timeout=30s >/dev/null; }
check "SandboxClass CRD is Established" est
# Discovery follows an Established CRD a moment later (seen once: the first listing lacked it).
check "short name ysbc" eventually 15 eval "kubectl api-resources --api-group=sandbox.yaoapps.com | grep -q '^sandboxclasses *ysbc '"
cleanup_classes() { kubectl delete sandboxclass yao-it-small yao-it-default yao-it-late yao-it-capped yao-it-lc yao-it-reclaim yao-it-secrets --ignore-not-found >/dev/null; }
cleanup_classes
on_exit cleanup_classes
on_exit "kubectl delete runtimeclass yao-it-gvisor --ignore-not-found; kubectl delete priorityclass yao-it-sandboxes --ignore-not-found"
fresh_namespace $NS
others=$(kubectl get sandboxclass -o jsonpath='{range .items[?(@.metadata.annotations.sandbox\.yaoapps\.com/is-default-class=="true")]}{.metadata.name} {end}')
[ -z "$others" ] || echo "    note: default SandboxClass(es) already on the cluster: $others (the flag-fallback checks will see them)"

# A RuntimeClass and a PriorityClass for the class to name (the API server refuses a pod
# naming ones that do not exist); kwok runs any handler.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: yao-it-gvisor}
handler: runsc
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: yao-it-sandboxes}
value: 1000
description: yao-sandbox integration test
YAML
# A pod with an ephemeral-storage limit (request = limit) needs nodes that report
# ephemeral-storage, as a real kubelet does; tests/cluster/up gives its kwok nodes 1Ti, and
# a plane started before that gets it here.
for n in $(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.allocatable.ephemeral-storage}{"\n"}{end}' | sed -n 's/=$//p'); do
    kubectl patch node "$n" --subresource=status --type=merge \
        -p '{"status":{"capacity":{"ephemeral-storage":"1Ti"},"allocatable":{"ephemeral-storage":"1Ti"}}}' >/dev/null
done
NODE_LABEL=$(kubectl get nodes -o jsonpath='{.items[0].metadata.labels.kubernetes\.io/hostname}')

start_controller "$LOG" --namespace $NS --max-running 0 --workers 2 --memory 3Gi --idle-timeout 45m

sandbox() {   # sandbox NAME SPEC-MEMBERS
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: cu, chatID: %s%s}\n' \
        "$1" "$1" "${2:+, $2}" | kubectl -n $NS apply -f - >/dev/null
}
podj() { kubectl -n $NS get pod "yao-sb-cu-$1" -o jsonpath="$2" 2>/dev/null; }
msg() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}'; }
pod_is() { [ "$(podj "$1" "$2")" = "$3" ]; }

# --- no class: the controller's flags ----------------------------------------------------------
sandbox plain
check "no class: Running" eventually 20 phase_is $NS plain Running
check "no class: the flags' memory limit (--memory 3Gi), no ephemeral-storage limit, no runtimeClassName" \
    eq "$(podj plain '{.spec.containers[0].resources.limits.memory}/{.spec.containers[0].resources.limits.ephemeral-storage}/{.spec.runtimeClassName}')" "3Gi//"

# --- a named class ------------------------------------------------------------------------------
kubectl apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-small}
spec:
  image: {default: "busybox:1.36", allowedPrefixes: ["busybox:", "yao-sandbox/"]}
  resources:
    memory: {default: 1Gi, max: 2Gi}
    cpu: {max: "2"}
    ephemeralStorage: {default: 4Gi, max: 8Gi}
  workspace: {maxSize: 20Gi}
  runtimeClassName: yao-it-gvisor
  priorityClassName: yao-it-sandboxes
  nodeSelector: {kubernetes.io/hostname: "$NODE_LABEL"}
  tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: Exists}]}]
  idleTimeout: 20m
  maxRunningPerUser: 3
YAML
sandbox within 'className: yao-it-small'
check "class: Running" eventually 20 phase_is $NS within Running
check "class: its default image, memory, ephemeral-storage; cpu the flags' (under the max)" \
    eq "$(podj within '{.spec.containers[0].image} {.spec.containers[0].resources.limits.memory}/{.spec.containers[0].resources.limits.ephemeral-storage}/{.spec.containers[0].resources.limits.cpu}')" \
    "busybox:1.36 1Gi/4Gi/1"
check "class: runtimeClassName and priorityClassName" eq "$(podj within '{.spec.runtimeClassName}/{.spec.priorityClassName}')" "yao-it-gvisor/yao-it-sandboxes"
check "class: nodeSelector, tolerations, affinity" \
    eq "$(podj within '{.spec.nodeSelector.kubernetes\.io/hostname}/{.spec.tolerations[?(@.key=="sandbox")].effect}/{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator}')" \
    "$NODE_LABEL/NoSchedule/Exists"
check "class: the pod is still hardened (restricted PSS)" \
    eq "$(podj within '{.spec.securityContext.runAsNonRoot}/{.spec.automountServiceAccountToken}/{.spec.containers[0].securityContext.capabilities.drop[0]}')" "true/false/ALL"

sandbox bigmem 'className: yao-it-small, resources: {memory: 4Gi}'
check "beyond the class (memory): InvalidSpec" eventually 20 reason_is $NS bigmem InvalidSpec
check "  naming the field and the limit" eq "$(msg bigmem)" \
    'spec.resources.memory: 4Gi is above the maximum 2Gi of SandboxClass "yao-it-small" (spec.resources.memory.max)'
check "  and no pod" eq "$(kubectl -n $NS get pod yao-sb-cu-bigmem -o name 2>/dev/null)" ""
sandbox badimage 'className: yao-it-small, image: "docker.io/evil/miner:1"'
check "beyond the class (image): InvalidSpec naming the allowed prefixes" eventually 20 reason_is $NS badimage InvalidSpec
check "  message" eq "$(msg badimage)" \
    'spec.image: "docker.io/evil/miner:1" is not allowed by SandboxClass "yao-it-small" (spec.image.allowedPrefixes: "busybox:", "yao-sandbox/")'
sandbox bigdisk 'className: yao-it-small, workspace: {size: 64Ti}, resources: {ephemeralStorage: 9Gi}'
check "beyond the class (workspace size): InvalidSpec" eventually 20 reason_is $NS bigdisk InvalidSpec
check "  message" eq "$(msg bigdisk)" \
    'spec.resources.ephemeralStorage: 9Gi is above the maximum 8Gi of SandboxClass "yao-it-small" (spec.resources.ephemeralStorage.max)'
kubectl -n $NS patch sandbox bigdisk --type=merge -p '{"spec":{"resources":{"ephemeralStorage":"8Gi"}}}' >/dev/null
check "  fixed the ephemeral-storage, the workspace size is next" eventually 20 eval \
    "[ \"\$(msg bigdisk)\" = 'spec.workspace.size: 64Ti is above the maximum 20Gi of SandboxClass \"yao-it-small\" (spec.workspace.maxSize)' ]"

# --- a class that does not exist yet: InvalidSpec, then Running once it is created -------------
sandbox late 'className: yao-it-late'
check "unknown class: InvalidSpec" eventually 20 reason_is $NS late InvalidSpec
check "  message" eq "$(msg late)" 'spec.className: SandboxClass "yao-it-late" not found'
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-late}
spec: {resources: {ephemeralStorage: {max: 2Gi}}}
YAML
check "  created: the Sandbox is queued again and Running (level-triggered)" eventually 20 phase_is $NS late Running
check "  with the class's maximum as its ephemeral-storage limit" eq "$(podj late '{.spec.containers[0].resources.limits.ephemeral-storage}')" 2Gi

# --- a change of a class reaches its Sandboxes -------------------------------------------------
uid_before=$(podj within '{.metadata.uid}')
kubectl patch sandboxclass yao-it-small --type=merge -p '{"spec":{"resources":{"ephemeralStorage":{"default":"6Gi"}}}}' >/dev/null
check "class changed: the pod of its Sandbox is replaced with the new limit" eventually 30 pod_is within '{.spec.containers[0].resources.limits.ephemeral-storage}' 6Gi
check "  (another pod, same workspace)" eval "[ \"\$(podj within '{.metadata.uid}')\" != '$uid_before' ]"
check "  and Running again" eventually 20 phase_is $NS within Running

# --- the default class --------------------------------------------------------------------------
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata:
  name: yao-it-default
  annotations: {sandbox.yaoapps.com/is-default-class: "true"}
spec:
  resources: {memory: {default: 1536Mi, max: 8Gi}, ephemeralStorage: {default: 3Gi}}
YAML
sandbox plain2
check "default class: a Sandbox without className gets it" eventually 20 pod_is plain2 '{.spec.containers[0].resources.limits.memory}/{.spec.containers[0].resources.limits.ephemeral-storage}' 1536Mi/3Gi
check "  and the one made before the class is rolled onto it" eventually 30 pod_is plain '{.spec.containers[0].resources.limits.memory}/{.spec.containers[0].resources.limits.ephemeral-storage}' 1536Mi/3Gi
check "  a Sandbox naming another class keeps that one" eq "$(podj within '{.spec.containers[0].resources.limits.memory}')" 1Gi
sandbox plain3 'resources: {memory: 9Gi}'
check "  beyond the default class: InvalidSpec naming it" eventually 20 eval \
    "[ \"\$(msg plain3)\" = 'spec.resources.memory: 9Gi is above the maximum 8Gi of SandboxClass \"yao-it-default\" (spec.resources.memory.max)' ]"
kubectl annotate sandboxclass yao-it-default sandbox.yaoapps.com/is-default-class- >/dev/null
check "default mark removed: back to the flags (3Gi, no ephemeral-storage limit)" eventually 30 pod_is plain '{.spec.containers[0].resources.limits.memory}/{.spec.containers[0].resources.limits.ephemeral-storage}' 3Gi/
check "  and the one beyond it is fine now" eventually 20 phase_is $NS plain3 Running

# --- a class's per-user cap ----------------------------------------------------------------------
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-capped}
spec: {maxRunningPerUser: 1}
YAML
sandbox cap1 'className: yao-it-capped'
check "class cap 1: the user's first Sandbox of the class runs" eventually 20 phase_is $NS cap1 Running
sandbox cap2 'className: yao-it-capped'
check "  the user's second of the class waits: UserCapacityExceeded" eventually 20 reason_is $NS cap2 UserCapacityExceeded
check "  its message names the class and its cap" contains "$(msg cap2)" \
    'limit of running sandboxes of SandboxClass "yao-it-capped" (spec.maxRunningPerUser: 1) is reached'
check "  Pending, and no pod" eq "$(kubectl -n $NS get sandbox cap2 -o jsonpath='{.status.phase}')/$(podj cap2 '{.metadata.name}')" "Pending/"
sandbox capother 'className: yao-it-small'
check "  the same user's Sandbox of another class still runs (it already has one there)" eventually 20 phase_is $NS capother Running
sandbox capnone
check "  and one without a class runs too" eventually 20 phase_is $NS capnone Running
check "  the second still waits" reason_is $NS cap2 UserCapacityExceeded
kubectl -n $NS delete sandbox cap1 --wait=false >/dev/null
check "  the first deleted: the second is admitted and runs" eventually 30 phase_is $NS cap2 Running
kubectl patch sandboxclass yao-it-capped --type=merge -p '{"spec":{"maxRunningPerUser":2}}' >/dev/null
sandbox cap3 'className: yao-it-capped'
check "  the class raised to 2: a new one runs beside it" eventually 20 phase_is $NS cap3 Running
sandbox cap4 'className: yao-it-capped'
check "  and the third waits again" eventually 20 reason_is $NS cap4 UserCapacityExceeded

# --- the default lifecycle --------------------------------------------------------------------------
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-lc}
spec: {lifecycle: long-running}
YAML
lcj() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.spec.lifecycle}/{.status.lifecycle}' 2>/dev/null; }
lc_is() { [ "$(lcj "$1")" = "$2" ]; }
sandbox lc1 'className: yao-it-lc'
check "lifecycle: none given, the class's default is in force (status.lifecycle)" eventually 20 lc_is lc1 /long-running
check "  nothing written into the spec, the pod is labelled with it" \
    eq "$(lcj lc1)/$(podj lc1 '{.metadata.labels.sandbox\.yaoapps\.com/lifecycle}')" /long-running/long-running
check "  kubectl get shows it (printer column)" eval "kubectl -n $NS get sandbox lc1 --no-headers | grep -q ' long-running '"
sandbox lc2 'className: yao-it-lc, lifecycle: persistent'
check "  the Sandbox's own lifecycle wins over the class's" eventually 20 lc_is lc2 persistent/persistent
check "  no class, none given: the controller's default (session)" lc_is plain /session
kubectl patch sandboxclass yao-it-lc --type=merge -p '{"spec":{"lifecycle":"persistent"}}' >/dev/null
sandbox lc3 'className: yao-it-lc'
check "  the class's default changed: a new Sandbox gets the new one" eventually 20 lc_is lc3 /persistent
check "  the existing one keeps the one it got" lc_is lc1 /long-running
kubectl patch sandboxclass yao-it-lc --type=merge -p '{"spec":{"lifecycle":"one-shot"}}' >/dev/null
sandbox lc4 'className: yao-it-lc'
check "  a one-shot class default without spec.run: InvalidSpec naming the class" eventually 20 eval \
    "[ \"\$(sandbox_reason $NS lc4)\" = InvalidSpec ] && msg lc4 | grep -q 'the default of SandboxClass \"yao-it-lc\"'"
check "  and the ones made before stay as they were" eq "$(lcj lc1)/$(lcj lc3)/$(sandbox_phase $NS lc1)" /long-running//persistent/Running
out=$(printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: lcbad}\nspec: {userID: a, chatID: b, lifecycle: one-shot}\n' | kubectl -n $NS apply -f - 2>&1)
check "schema: lifecycle one-shot without spec.run is still refused" contains "$out" "spec.run is required when lifecycle is one-shot"
out=$(kubectl -n $NS patch sandbox lc1 --type=merge -p '{"spec":{"lifecycle":"one-shot","run":{"command":["true"]}}}' 2>&1)
check "schema: no lifecycle to one-shot by an edit" contains "$out" "cannot be changed to or from one-shot"

# --- the schema ---------------------------------------------------------------------------------
out=$(printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: SandboxClass\nmetadata: {name: yao-it-bad}\nspec: {resources: {memory: {max: lots}}}\n' | kubectl apply -f - 2>&1)
check "schema: a class with a bad quantity is refused by the API server" contains "$out" "spec.resources.memory.max"
out=$(printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: bad}\nspec: {userID: a, chatID: b, className: "Not_A_Name"}\n' | kubectl -n $NS apply -f - 2>&1)
check "schema: a className that is no object name is refused" contains "$out" "spec.className"

# --- secrets --------------------------------------------------------------------------------------
kubectl -n $NS create secret generic yao-token --from-literal=token=s3cr3t-value-42 >/dev/null
# Secrets by consent: a class lists the Secrets its Sandboxes may name (spec.secrets.names).
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-secrets}
spec: {secrets: {names: [yao-token]}}
YAML
sandbox withsecret 'className: yao-it-secrets, env: [{name: YAO_TOKEN, valueFrom: {secretKeyRef: {name: yao-token, key: token}}}, {name: PLAIN, value: x}]'
check "env from a Secret: Running" eventually 20 phase_is $NS withsecret Running
check "  the pod takes YAO_TOKEN from the Secret (the kubelet reads it)" \
    eq "$(podj withsecret '{.spec.containers[0].env[?(@.name=="YAO_TOKEN")].valueFrom.secretKeyRef.name}/{.spec.containers[0].env[?(@.name=="YAO_TOKEN")].valueFrom.secretKeyRef.key}/{.spec.containers[0].env[?(@.name=="PLAIN")].value}')" \
    "yao-token/token/x"
check "  the secret value is in neither the Sandbox nor the pod" eval \
    "! { kubectl -n $NS get sandbox withsecret -o json; kubectl -n $NS get pod yao-sb-cu-withsecret -o json; } | grep -q s3cr3t-value-42"
out=$(printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: both}\nspec: {userID: a, chatID: b, env: [{name: T, value: x, valueFrom: {secretKeyRef: {name: s, key: k}}}]}\n' | kubectl -n $NS apply -f - 2>&1)
check "schema: value and valueFrom together are refused" contains "$out" "value and valueFrom are mutually exclusive"
kubectl -n $NS create serviceaccount viewer >/dev/null
kubectl -n $NS create serviceaccount editor >/dev/null
kubectl -n $NS create rolebinding viewer --clusterrole=yao-sandbox-viewer --serviceaccount=$NS:viewer >/dev/null
kubectl -n $NS create rolebinding editor --clusterrole=yao-sandbox-editor --serviceaccount=$NS:editor >/dev/null
can() { kubectl auth can-i "$@" 2>/dev/null; }
check "the viewer reads Sandboxes" eq "$(can get sandboxes -n $NS --as=system:serviceaccount:$NS:viewer)" yes
check "the viewer cannot read Secrets" eq "$(can get secrets -n $NS --as=system:serviceaccount:$NS:viewer)/$(can list secrets -n $NS --as=system:serviceaccount:$NS:viewer)" no/no
check "the editor cannot read Secrets either" eq "$(can get secrets -n $NS --as=system:serviceaccount:$NS:editor)" no
# ... nor through a sandbox (issue 34): the editor, with its own token, names a Secret it
# cannot read. Refused, with no pod, under a class that lists another Secret, under one
# that lists none, and with no class (the controller runs without --allowed-secret).
kubectl -n $NS create secret generic db-admin --from-literal=password=db-pass-7731 >/dev/null
T=$(mktemp -d)
on_exit "rm -rf '$T'"
check "the editor's kubeconfig" sa_kubeconfig "$T/editor.kc" editor $NS
check "  the editor may not get secret/db-admin" eq "$(can get secret/db-admin -n $NS --as=system:serviceaccount:$NS:editor)" no
ed_sandbox() {   # ed_sandbox NAME SPEC-MEMBERS — created by the editor
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: cu, chatID: %s%s}\n' \
        "$1" "$1" "${2:+, $2}" | kubectl --kubeconfig "$T/editor.kc" -n $NS apply -f - >/dev/null
}
accepted_reason() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.status.conditions[?(@.type=="Accepted")].reason}' 2>/dev/null; }
DBREF='env: [{name: P, valueFrom: {secretKeyRef: {name: db-admin, key: password}}}]'
check "  the editor may create a Sandbox naming db-admin (the API server cannot know)" ed_sandbox dbsteal "className: yao-it-secrets, $DBREF"
check "the editor names db-admin: refused, InvalidSpec / SecretNotAllowed" eventually 20 eval \
    "[ \"\$(sandbox_reason $NS dbsteal)/\$(accepted_reason dbsteal)\" = InvalidSpec/SecretNotAllowed ]"
check "  the message names the field, the Secret and the class's list" eq "$(msg dbsteal)" \
    'spec.env[0].valueFrom.secretKeyRef.name: Secret "db-admin" is not allowed by SandboxClass "yao-it-secrets" (spec.secrets.names: yao-token)'
check "  no pod" eval "! kubectl -n $NS get pod yao-sb-cu-dbsteal -o name 2>/dev/null | grep -q ."
check "  in run.env too (one-shot)" ed_sandbox dbsteal2 "className: yao-it-secrets, lifecycle: one-shot, run: {command: [env], $DBREF}"
check "  refused the same way" eventually 20 eval "[ \"\$(accepted_reason dbsteal2)\" = SecretNotAllowed ]"
check "  and with no class (no --allowed-secret: none allowed)" ed_sandbox dbsteal3 "$DBREF"
check "  refused, naming the flag" eventually 20 eval \
    "[ \"\$(accepted_reason dbsteal3)\" = SecretNotAllowed ] && msg dbsteal3 | grep -q 'without a SandboxClass'"
check "  the allowed Secret by the editor runs" ed_sandbox edtoken "className: yao-it-secrets, env: [{name: T, valueFrom: {secretKeyRef: {name: yao-token, key: token}}}]"
check "  Running" eventually 20 phase_is $NS edtoken Running
check "  db-admin's value is in no pod of the namespace" eval \
    "! kubectl -n $NS get pods -o json | grep -q 'db-admin'"
check "the viewer cannot change SandboxClasses" eq "$(can patch sandboxclasses --as=system:serviceaccount:$NS:viewer)" no
check "the controller cannot read Secrets" eq "$(can get secrets -n $NS --as=system:serviceaccount:yao-sandbox-system:yao-sandbox-controller)" no
check "the controller reads SandboxClasses and cannot change them" \
    eq "$(can list sandboxclasses --as=system:serviceaccount:yao-sandbox-system:yao-sandbox-controller)/$(can patch sandboxclasses --as=system:serviceaccount:yao-sandbox-system:yao-sandbox-controller)" yes/no

check "no Forbidden in the controller log" eval "! grep -q 'status=403\|Forbidden' '$LOG'"

# --- reclaim ------------------------------------------------------------------------------------
# Another controller, on its own namespace, with a global cap of 2: three users; idle
# sandboxes of a class with reclaim.idleAfter 5s are stopped (workspace kept) to admit a
# waiting one, the longest idle first, one per waiting Sandbox; a touch starts one again.
kill_controller TERM
NS2=yao-it-reclaim
fresh_namespace $NS2
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-reclaim}
spec: {reclaim: {idleAfter: 5s}}
YAML
start_controller "$LOG" --namespace $NS2 --max-running 2 --workers 2 --idle-timeout 45m
rsb() {   # rsb NAME USER SPEC-MEMBERS
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: %s, chatID: c1%s}\n' \
        "$1" "$2" "${3:+, $3}" | kubectl -n $NS2 apply -f - >/dev/null
}
touch_sb() { kubectl -n $NS2 annotate --overwrite sandbox "$1" "sandbox.yaoapps.com/last-used-at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null; }
rreason() { sandbox_reason $NS2 "$1"; }
claim_uid() { kubectl -n $NS2 get pvc "yao-sb-$1-c1-workspace" -o jsonpath='{.metadata.uid}' 2>/dev/null; }
rsb ra alice 'className: yao-it-reclaim, lifecycle: session'
check "reclaim: alice's session runs" eventually 20 phase_is $NS2 ra Running
rsb rb bob 'className: yao-it-reclaim, lifecycle: long-running'
check "  bob's long-running runs" eventually 20 phase_is $NS2 rb Running
ALICE_CLAIM=$(claim_uid alice)
sleep 3
touch_sb rb   # bob was used after alice: alice is the longest idle
sleep 6       # both idle past 5s
rsb rc carol ''
check "  carol's Sandbox (cap 2 full) is admitted and runs" eventually 30 phase_is $NS2 rc Running
check "  the longest idle (alice's) was reclaimed: Stopped, reason Reclaimed" eventually 20 eval \
    "phase_is $NS2 ra Stopped && reason_is $NS2 ra Reclaimed"
check "  bob's still runs (one reclaimed for one waiting)" eq "$(sandbox_phase $NS2 rb)/$(rreason rb)" Running/PodReady
check "  alice's pod is gone, her workspace claim kept (same claim)" \
    eq "$(kubectl -n $NS2 get pod yao-sb-alice-c1 -o name 2>/dev/null)/$(claim_uid alice)" "/$ALICE_CLAIM"
check "  alice's Sandbox is kept, its status says why" contains "$(kubectl -n $NS2 get sandbox ra -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')" "reclaimed while idle"
check "  an Event Reclaimed names the class and its threshold" eventually 10 eval \
    "kubectl -n $NS2 get events --field-selector involvedObject.name=ra,reason=Reclaimed -o jsonpath='{.items[*].message}' | grep -q 'SandboxClass \"yao-it-reclaim\" spec.reclaim.idleAfter: 5s'"
check "  alice stays stopped while unused" eval "sleep 3; phase_is $NS2 ra Stopped"
# Alice comes back: she waits for a slot, and bob (idle past 5s) is reclaimed for her.
touch_sb ra
check "  alice touched: she runs again" eventually 30 phase_is $NS2 ra Running
check "  on the same workspace claim" eq "$(claim_uid alice)" "$ALICE_CLAIM"
check "  bob (now the idle one) was reclaimed for her" eventually 20 eval "phase_is $NS2 rb Stopped && reason_is $NS2 rb Reclaimed"
check "  carol's (no class, no reclaim) still runs" eq "$(sandbox_phase $NS2 rc)" Running
# Negative: dave waits while alice is in use (touched every second) and the only other
# running one (carol's) is of no reclaiming class: nothing is reclaimed.
# (Alice's use goes on in the background from before dave comes, every second, so a loaded
# machine's slow checks cannot leave her idle past 5 s by accident.)
( for _ in $(seq 1 40); do touch_sb ra; sleep 1; done ) & TOUCHER=$!
on_exit "kill $TOUCHER"
sleep 1
rsb rd dave ''
check "  dave waits (CapacityExceeded)" eventually 20 reason_is $NS2 rd CapacityExceeded
sleep 8
check "  alice, used within 5s all along, was not reclaimed" eq "$(sandbox_phase $NS2 ra)/$(rreason ra)" Running/PodReady
check "  dave still waits" eq "$(sandbox_phase $NS2 rd)/$(rreason rd)" Pending/CapacityExceeded
kill $TOUCHER 2>/dev/null; wait $TOUCHER 2>/dev/null
# Left idle, alice is reclaimed for dave.
check "  alice left idle: reclaimed, dave runs" eventually 30 eval "phase_is $NS2 rd Running && reason_is $NS2 ra Reclaimed"
check "  bob's stays stopped (unused)" eq "$(sandbox_phase $NS2 rb)/$(rreason rb)" Stopped/Reclaimed
check "  three reclaims in the controller's log, no Forbidden" eval \
    "[ \$(grep -c 'msg=\"sandbox reclaimed\"' '$LOG') -eq 3 ] && ! grep -q 'status=403\|Forbidden' '$LOG'"
finish
