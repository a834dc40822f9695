#!/usr/bin/env bash
# Policy that holds between users, on the plane (kwok nodes), each actor with its own
# credentials: the operator (admin) makes SandboxClasses and labels Namespaces, a
# namespace user holds only the yao-sandbox-editor role, the controller runs with its
# ServiceAccount. Checked (issue 23):
# - a class limited to some namespaces (spec.allowedNamespaces) refuses a Sandbox of
#   another namespace: InvalidSpec, Accepted=False/ClassNotAllowed, a Warning Event, no
#   pod; labelling the namespace (the operator) lets it start, at once;
# - a namespace names its default class (label sandbox.yaoapps.com/default-class);
# - the editor cannot leave the operator's class: a className change to a class the
#   namespace may not use, or a lifecycle the class does not allow, is refused and the
#   pod keeps running under the previous spec, its NetworkPolicy in place;
# - an allowed className change from an isolated class to one without isolation keeps the
#   NetworkPolicy until the pod built under the isolated class is gone (sampled all along);
# - forks stay with their owner (WorkspaceSourceForbidden, no claim) unless the class allows
#   forks across users; a fork is held to the class's workspace ceiling at its clone's size;
#   a fork asked smaller than its source takes the source's size with no Workspace warning;
# - status publishes the effective policy (className, idleTimeout, reclaimAfter, idleAt);
# - a class tightened under a running session: the pod keeps being governed (status keeps
#   phase and podName, Accepted says what is invalid), and the idle removal still comes.
# Classes are named yao-it-pol-*; removed at the end.
. "$(dirname "$0")/lib.sh"
NS=yao-it-policy
LOG=$BUILD_DIR/test-policy.log
: > "$LOG"
check "CRDs and manifests apply with kubectl" install_manifests
kubectl wait --for=condition=Established crd/sandboxclasses.sandbox.yaoapps.com --timeout=30s >/dev/null
CLASSES="yao-it-pol-iso yao-it-pol-open yao-it-pol-trusted yao-it-pol-lc yao-it-pol-team yao-it-pol-ceil yao-it-pol-idle"
cleanup_classes() { kubectl delete sandboxclass $CLASSES --ignore-not-found >/dev/null; }
cleanup_classes
on_exit cleanup_classes
fresh_namespace $NS
T=$(mktemp -d)
on_exit "rm -rf $T"

# The operator's classes. iso: isolated network, only for namespaces labelled team=a.
# open: no isolation, any namespace. trusted: only namespaces labelled tier=trusted.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-pol-iso}
spec:
  allowedNamespaces: {selector: {matchLabels: {team: a}}}
  allowedLifecycles: [session, long-running]
  network: {mode: isolated, egressCIDRs: ["0.0.0.0/0"]}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-pol-open}
spec:
  network: {mode: none}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-pol-trusted}
spec:
  allowedNamespaces: {selector: {matchExpressions: [{key: tier, operator: In, values: [trusted]}]}}
YAML
check "a class with a namespace selector and allowed lifecycles is accepted by the API server" \
    eq "$(kubectl get sandboxclass yao-it-pol-iso -o jsonpath='{.spec.allowedNamespaces.selector.matchLabels.team}/{.spec.allowedLifecycles[1]}')" "a/long-running"
out=$(printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: SandboxClass\nmetadata: {name: yao-it-pol-bad}\nspec: {allowedLifecycles: [forever]}\n' | kubectl apply -f - 2>&1)
check "  an unknown lifecycle in allowedLifecycles is refused by the schema" contains "$out" 'Unsupported value: "forever"'

# The namespace user: a ServiceAccount bound to yao-sandbox-editor in $NS, nothing more.
kubectl -n $NS create serviceaccount editor >/dev/null
kubectl -n $NS create rolebinding editor --clusterrole=yao-sandbox-editor --serviceaccount=$NS:editor >/dev/null
check "the editor's kubeconfig" sa_kubeconfig "$T/editor.kc" editor $NS
ed() { kubectl --kubeconfig "$T/editor.kc" -n $NS "$@"; }
check "the editor may not label its Namespace (only the operator can open a class to it)" \
    eq "$(kubectl auth can-i patch namespaces/$NS --as=system:serviceaccount:$NS:editor 2>/dev/null)" no

start_controller "$LOG" --namespace $NS --max-running 0 --workers 2 --idle-timeout 45m

sandbox() {   # sandbox NAME USER SPEC-MEMBERS — created by the editor
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: %s, chatID: %s%s}\n' \
        "$1" "$2" "$1" "${3:+, $3}" | ed apply -f - >/dev/null
}
field() { kubectl -n $NS get "$1" "$2" -o jsonpath="{$3}" 2>/dev/null; }
accepted() { field sandbox "$1" '.status.conditions[?(@.type=="Accepted")].reason'; }
accepted_is() { [ "$(accepted "$1")" = "$2" ]; }
pod_of() { field sandbox "$1" .status.podName; }
events_of() { kubectl -n $NS get events --field-selector "involvedObject.name=$1" -o jsonpath='{range .items[*]}{.type}/{.reason} {end}'; }
has_event() { events_of "$1" | grep -q "$2"; }

# --- classes a namespace may use ------------------------------------------------------------
sandbox scoped u1 "className: yao-it-pol-iso"
check "a class the namespace may not use: Accepted=False/ClassNotAllowed" eventually 20 accepted_is scoped ClassNotAllowed
check "  Pending, Ready=False/InvalidSpec, the message names the class and the rule" contains \
    "$(field sandbox scoped '.status.phase}/{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Accepted")].message')" \
    "Pending/InvalidSpec: spec.className: SandboxClass \"yao-it-pol-iso\" may not be used in namespace \"$NS\""
check "  a Warning Event says so" eventually 20 has_event scoped Warning/ClassNotAllowed
check "  and no pod was made" eval "! kubectl -n $NS get pod yao-sb-u1-scoped >/dev/null 2>&1"
kubectl label namespace $NS team=a >/dev/null
check "the operator labels the namespace: the Sandbox starts (the Namespace's change queues it)" eventually 20 phase_is $NS scoped Running
check "  Accepted is gone, status.className is the class" eq "$(accepted scoped)/$(field sandbox scoped .status.className)" "/yao-it-pol-iso"
check "  its NetworkPolicy is there" eventually 10 kubectl -n $NS get networkpolicy yao-sb-u1-scoped
check "  the pod records the class it was built under" eq "$(field pod yao-sb-u1-scoped '.metadata.annotations.sandbox\.yaoapps\.com/class')" yao-it-pol-iso
POD1_UID=$(field pod yao-sb-u1-scoped .metadata.uid)

# The editor tries to leave the class: to one the namespace may not use.
ed patch sandbox scoped --type=merge -p '{"spec":{"className":"yao-it-pol-trusted"}}' >/dev/null
check "the editor changes className to a class the namespace may not use: refused (Accepted=False/ClassNotAllowed)" \
    eventually 20 accepted_is scoped ClassNotAllowed
check "  the pod keeps running under the previous spec: phase Running, podName kept, same pod" \
    eq "$(field sandbox scoped .status.phase)/$(pod_of scoped)/$(field pod yao-sb-u1-scoped .metadata.uid)" "Running/yao-sb-u1-scoped/$POD1_UID"
check "  the message says the pod continues under the previous spec" contains \
    "$(field sandbox scoped '.status.conditions[?(@.type=="Accepted")].message')" "the running pod continues under the previous spec"
check "  its NetworkPolicy stays" kubectl -n $NS get networkpolicy yao-sb-u1-scoped
check "  status.className still names the class it runs under" eq "$(field sandbox scoped .status.className)" yao-it-pol-iso
# ... or to a lifecycle its class does not allow (persistent is exempt from reclaim).
ed patch sandbox scoped --type=merge -p '{"spec":{"className":"yao-it-pol-iso","lifecycle":"persistent"}}' >/dev/null
check "the editor makes it persistent, which the class does not allow: Accepted=False/LifecycleNotAllowed" \
    eventually 20 accepted_is scoped LifecycleNotAllowed
check "  status.lifecycle stays session, the pod runs on" eq "$(field sandbox scoped .status.lifecycle)/$(field pod yao-sb-u1-scoped .metadata.uid)" "session/$POD1_UID"
ed patch sandbox scoped --type=json -p '[{"op":"remove","path":"/spec/lifecycle"}]' >/dev/null
check "the editor takes it back: accepted again, the same pod" eventually 20 eval \
    "[ -z \"\$(accepted scoped)\" ] && [ \"\$(field pod yao-sb-u1-scoped .metadata.uid)\" = $POD1_UID ]"

# An allowed change to a class without isolation: the pod is replaced, and the policy stays
# until the pod built under the isolated class is gone. Sampled every 50 ms.
sample_isolation() {
    local end=$(( $(date +%s) + 30 )) bad=0 pods np
    while [ "$(date +%s)" -lt "$end" ]; do
        pods=$(kubectl -n $NS get pod yao-sb-u1-scoped -o jsonpath='{.metadata.annotations.sandbox\.yaoapps\.com/class}' 2>/dev/null)
        np=$(kubectl -n $NS get networkpolicy yao-sb-u1-scoped -o name 2>/dev/null)
        if [ "$pods" = yao-it-pol-iso ] && [ -z "$np" ]; then bad=$((bad + 1)); fi
        if [ "$pods" = yao-it-pol-open ] && [ -z "$np" ]; then echo "done $bad"; return; fi
        sleep 0.05
    done
    echo "timeout $bad"
}
ed patch sandbox scoped --type=merge -p '{"spec":{"className":"yao-it-pol-open"}}' >/dev/null
res=$(sample_isolation)
check "className changed to an open class: the pod is replaced, and no pod of the isolated class ran without its policy" eq "$res" "done 0"
check "  the new pod is of the open class, the policy is gone" eq "$(field pod yao-sb-u1-scoped '.metadata.annotations.sandbox\.yaoapps\.com/class')/$(kubectl -n $NS get networkpolicy -o name | wc -l)" "yao-it-pol-open/0"
check "  Running under it" eventually 20 eval "phase_is $NS scoped Running && [ \"\$(field sandbox scoped .status.className)\" = yao-it-pol-open ]"
ed patch sandbox scoped --type=merge -p '{"spec":{"className":"yao-it-pol-iso"}}' >/dev/null
check "back to the isolated class: the policy is made again (before anything else changes)" eventually 10 kubectl -n $NS get networkpolicy yao-sb-u1-scoped
check "  and the pod is replaced by one of the isolated class" eventually 30 eval \
    "[ \"\$(field pod yao-sb-u1-scoped '.metadata.annotations.sandbox\.yaoapps\.com/class')\" = yao-it-pol-iso ] && phase_is $NS scoped Running"

# --- a namespace's default class ------------------------------------------------------------
kubectl label namespace $NS sandbox.yaoapps.com/default-class=yao-it-pol-iso >/dev/null
sandbox nsdefault u2 ""
check "a Sandbox naming no class gets its namespace's default class" eventually 20 eval \
    "phase_is $NS nsdefault Running && [ \"\$(field sandbox nsdefault .status.className)\" = yao-it-pol-iso ]"
check "  with its NetworkPolicy" kubectl -n $NS get networkpolicy yao-sb-u2-nsdefault
check "the editor cannot change the namespace's default" eq "$(kubectl auth can-i patch namespaces --as=system:serviceaccount:$NS:editor 2>/dev/null)" no
kubectl label namespace $NS sandbox.yaoapps.com/default-class- >/dev/null

# --- forks stay with their owner ---------------------------------------------------------------
sandbox src-a alice "lifecycle: session, className: yao-it-pol-open, workspace: {size: 2Gi}"
check "user A's source Sandbox is Running" eventually 30 phase_is $NS src-a Running
sandbox fork-b bob "className: yao-it-pol-open, workspace: {size: 1Gi, from: {sandbox: src-a}}"
check "user B forks user A's workspace: Accepted=False/WorkspaceSourceForbidden" eventually 20 accepted_is fork-b WorkspaceSourceForbidden
check "  Pending/InvalidSpec" eq "$(field sandbox fork-b '.status.phase}/{.status.conditions[?(@.type=="Ready")].reason')" "Pending/InvalidSpec"
check "  a Warning Event says so" eventually 20 has_event fork-b Warning/WorkspaceSourceForbidden
sleep 1
check "  no claim, no pod" eq "$(kubectl -n $NS get pvc,pod -o name | grep -c bob)" 0
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-pol-team}
spec:
  workspace: {allowForksAcrossUsers: true}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-pol-ceil}
spec:
  workspace: {maxSize: 1536Mi}
YAML
sandbox fork-t bob "className: yao-it-pol-team, workspace: {size: 1Gi, from: {sandbox: src-a}}"
check "a class that allows forks across users (team templates): the fork runs" eventually 40 phase_is $NS fork-t Running
T_CLAIM=$(field sandbox fork-t .status.workspaceClaim)
A_CLAIM=$(field sandbox src-a .status.workspaceClaim)
check "  a clone of A's claim at the source's size (2Gi > 1Gi asked)" eq "$(field pvc "$T_CLAIM" '.spec.dataSource.name} {.spec.resources.requests.storage')" "$A_CLAIM 2Gi"
check "  and no Workspace condition (a fork is at least its source: no false ShrinkRefused)" eq \
    "$(field sandbox fork-t '.status.conditions[?(@.type=="Workspace")].reason')" ""
sandbox fork-own alice "className: yao-it-pol-open, workspace: {size: 1Gi, from: {sandbox: src-a}}"
check "the same user's fork asked smaller than its source: Running" eventually 40 phase_is $NS fork-own Running
sleep 2
check "  no Workspace condition and no ShrinkRefused Event" eval \
    "[ -z \"\$(field sandbox fork-own '.status.conditions[?(@.type==\"Workspace\")].reason')\" ] && ! events_of fork-own | grep -q ShrinkRefused"
sandbox fork-big alice "className: yao-it-pol-ceil, workspace: {size: 1Gi, from: {sandbox: src-a}}"
check "a fork whose source (2Gi) is above its class's maxSize (1536Mi): InvalidSpec naming the ceiling" eventually 20 eval \
    "accepted_is fork-big InvalidSpec && field sandbox fork-big '.status.conditions[?(@.type==\"Accepted\")].message' | grep -q 'above the maximum 1536Mi of SandboxClass \"yao-it-pol-ceil\" (spec.workspace.maxSize)'"
check "  and it made no claim" eval "! kubectl -n $NS get pvc \"\$(field sandbox fork-big .status.workspaceClaim)\" >/dev/null 2>&1 && [ \"\$(kubectl -n $NS get pvc -o name | grep -c fork-big)\" = 0 ]"

# --- the effective policy in status; a tightened class does not orphan a running session -----
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-pol-idle}
spec:
  idleTimeout: 20s
  resources: {memory: {max: 2Gi}}
  reclaim: {idleAfter: 10m}
YAML
sandbox sess carol "className: yao-it-pol-idle, resources: {memory: 2Gi}"
check "a session of a class with idleTimeout 20s: Running" eventually 20 phase_is $NS sess Running
check "  status.idleTimeout 20s (the class's), reclaimAfter 10m, className" eq \
    "$(field sandbox sess '.status.idleTimeout}/{.status.reclaimAfter}/{.status.className')" "20s/10m/yao-it-pol-idle"
idle_at=$(field sandbox sess .status.idleAt)
last=$(field sandbox sess .status.lastUsedAt)
check "  status.idleAt is lastUsedAt + 20 s" eq "$(( $(date -d "$idle_at" +%s) - $(date -d "$last" +%s) ))" 20
# The annotation has whole seconds: touch in a later second than lastUsedAt, then wait for the status write.
while [ "$(date -u +%s)" -le "$(date -d "$last" +%s)" ]; do sleep 0.2; done
kubectl -n $NS annotate sandbox sess --overwrite sandbox.yaoapps.com/last-used-at="$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null
check "a touch moves idleAt" eventually 10 eval "[ \"\$(field sandbox sess .status.idleAt)\" != '$idle_at' ]"
SESS_POD=$(field pod yao-sb-carol-sess .metadata.uid)
touched=$(date +%s)
kubectl -n $NS annotate sandbox sess --overwrite sandbox.yaoapps.com/last-used-at="$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null
kubectl patch sandboxclass yao-it-pol-idle --type=merge -p '{"spec":{"resources":{"memory":{"max":"1Gi"}}}}' >/dev/null
check "the operator lowers the class's memory.max below the session's: Accepted=False/InvalidSpec" eventually 20 accepted_is sess InvalidSpec
check "  status keeps phase Running, podName, workspaceClaim and the recorded policy" eq \
    "$(field sandbox sess '.status.phase}/{.status.podName}/{.status.workspaceClaim}/{.status.idleTimeout')" \
    "Running/yao-sb-carol-sess/yao-sb-carol-sess-workspace/20s"
check "  the same pod runs on" eq "$(field pod yao-sb-carol-sess .metadata.uid)" "$SESS_POD"
check "  the message names the limit and says the pod continues" contains \
    "$(field sandbox sess '.status.conditions[?(@.type=="Accepted")].message')" \
    "is above the maximum 1Gi of SandboxClass \"yao-it-pol-idle\" (spec.resources.memory.max); the running pod continues under the previous spec"
check "  idle removal still comes: the session is removed ~20 s after its last use" eventually 45 eval \
    "! kubectl -n $NS get sandbox sess >/dev/null 2>&1"
gone=$(date +%s)
check "  not before its idle timeout" eval "[ $((gone - touched)) -ge 19 ]"
check "  its claim goes with it" eventually 30 eval "! kubectl -n $NS get pvc yao-sb-carol-sess-workspace >/dev/null 2>&1"
# The class deleted under a running pod: governed on, paused by the user, then waiting.
kubectl patch sandboxclass yao-it-pol-idle --type=merge -p '{"spec":{"resources":{"memory":{"max":"2Gi"}}}}' >/dev/null
sandbox lr carol "className: yao-it-pol-idle, lifecycle: long-running"
check "a long-running Sandbox of that class: Running" eventually 20 phase_is $NS lr Running
kubectl delete sandboxclass yao-it-pol-idle >/dev/null
check "its class deleted: Accepted=False/InvalidSpec (not found), still Running" eventually 20 eval \
    "accepted_is lr InvalidSpec && phase_is $NS lr Running"
ed patch sandbox lr --type=merge -p '{"spec":{"paused":true}}' >/dev/null
check "  a pause by the user still stops it (the pod is deleted, the workspace kept)" eventually 20 eval \
    "! kubectl -n $NS get pod yao-sb-carol-lr >/dev/null 2>&1 && kubectl -n $NS get pvc yao-sb-carol-lr-workspace >/dev/null 2>&1"
check "  then, with no pod left, it waits: Pending/InvalidSpec" eventually 20 eval \
    "phase_is $NS lr Pending && reason_is $NS lr InvalidSpec"
ed patch sandbox lr --type=merge -p '{"spec":{"paused":false}}' >/dev/null
sleep 2
check "  unpaused while invalid: no pod is built from the invalid spec" eval "! kubectl -n $NS get pod yao-sb-carol-lr >/dev/null 2>&1"

check "no Forbidden in the controller log" eval "! grep -q 'status=403\|Forbidden' '$LOG'"
finish
