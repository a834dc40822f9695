#!/usr/bin/env bash
# No orphans (issue 34) on the real plane (kwok nodes): `kubectl delete sandbox X
# --cascade=orphan` by a namespace editor (a ServiceAccount holding only the
# yao-sandbox-editor role, with its own token) makes the garbage collector strip the owner
# references of the sandbox's pod, claim, Service and NetworkPolicy and then delete the
# Sandbox; without the controller's sweep they would live on, ungoverned (no idle timeout,
# no cap, still exec-able). The controller deletes every object with its labels and no
# owner as soon as its informers show it (uid precondition): at once while it runs, and
# on its start for what was orphaned while it was down. Owned objects (another Sandbox's)
# are left alone, and a Sandbox made again under the same name gets pods of its own.
# Classes made here are named yao-it-orph-* and removed at the end.
. "$(dirname "$0")/lib.sh"
NS=yao-it-orphans
LOG=$BUILD_DIR/test-orphans.log
: > "$LOG"
T=$(mktemp -d)
on_exit "rm -rf '$T'"
check "CRDs and manifests apply with kubectl" install_manifests
kubectl wait --for=condition=Established crd/sandboxclasses.sandbox.yaoapps.com --timeout=30s >/dev/null
cleanup_classes() { kubectl delete sandboxclass yao-it-orph-iso --ignore-not-found >/dev/null; }
cleanup_classes
on_exit cleanup_classes
fresh_namespace $NS
# An isolated class: each sandbox also gets a NetworkPolicy.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-orph-iso}
spec: {network: {mode: isolated}}
YAML

kubectl -n $NS create serviceaccount editor >/dev/null
kubectl -n $NS create rolebinding editor --clusterrole=yao-sandbox-editor --serviceaccount=$NS:editor >/dev/null
check "the editor's kubeconfig" sa_kubeconfig "$T/editor.kc" editor $NS
ed() { kubectl --kubeconfig "$T/editor.kc" -n $NS "$@"; }
check "the editor may delete Sandboxes (so also with --cascade=orphan)" \
    eq "$(kubectl auth can-i delete sandboxes -n $NS --as=system:serviceaccount:$NS:editor 2>/dev/null)" yes
check "  but not pods: it cannot clean up after itself" \
    eq "$(kubectl auth can-i delete pods -n $NS --as=system:serviceaccount:$NS:editor 2>/dev/null)" no

sandbox() {   # sandbox NAME — by the editor: a pod, a claim, a Service and a NetworkPolicy
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: ou, chatID: %s, className: yao-it-orph-iso, ports: [{name: http, port: 8080}], service: {enabled: true}}\n' \
        "$1" "$1" | ed apply -f - >/dev/null
}
uid_of() { kubectl -n $NS get "$1" "$2" -o jsonpath='{.metadata.uid}' 2>/dev/null; }
owners_of() { kubectl -n $NS get "$1" "$2" -o jsonpath='{.metadata.ownerReferences}' 2>/dev/null; }
# gone KIND NAME UID — the object of that uid is deleted or being deleted (kwok finishes
# a pod's termination at once, a claim may wait for its volume's protection).
gone() {
    local uid ts
    uid=$(uid_of "$1" "$2")
    [ -z "$uid" ] || [ "$uid" != "$3" ] && return 0
    ts=$(kubectl -n $NS get "$1" "$2" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)
    [ -n "$ts" ]
}
all_gone() {   # all_gone NAME — the four objects recorded by record NAME
    local n=$1
    gone pod "yao-sb-ou-$n" "${POD[$n]}" && gone pvc "yao-sb-ou-$n-workspace" "${PVC[$n]}" &&
        gone service "yao-sb-ou-$n" "${SVC[$n]}" && gone networkpolicy "yao-sb-ou-$n" "${NP[$n]}"
}
declare -A POD PVC SVC NP
record() {
    POD[$1]=$(uid_of pod "yao-sb-ou-$1"); PVC[$1]=$(uid_of pvc "yao-sb-ou-$1-workspace")
    SVC[$1]=$(uid_of service "yao-sb-ou-$1"); NP[$1]=$(uid_of networkpolicy "yao-sb-ou-$1")
    [ -n "${POD[$1]}" ] && [ -n "${PVC[$1]}" ] && [ -n "${SVC[$1]}" ] && [ -n "${NP[$1]}" ]
}

start_controller "$LOG" --namespace $NS --max-running 0 --workers 2
sandbox keep
sandbox one
check "the editor's Sandboxes run" eventually 30 eval "phase_is $NS keep Running && phase_is $NS one Running"
check "  each with a pod, a claim, a Service and a NetworkPolicy" eventually 15 eval "record keep && record one"

# --- while the controller is down: the hole, then the sweep on start -------------------------
kill_controller TERM
check "the controller stopped; the editor deletes 'one' with --cascade=orphan" \
    eval "ed delete sandbox one --cascade=orphan --timeout=60s >/dev/null"
check "  the Sandbox is gone" eval "! kubectl -n $NS get sandbox one >/dev/null 2>&1"
check "  its pod runs on with no owner (the garbage collector orphaned it)" eval \
    "[ \"\$(uid_of pod yao-sb-ou-one)\" = \"${POD[one]}\" ] && [ -z \"\$(owners_of pod yao-sb-ou-one)\" ]"
check "  and so do its claim, Service and NetworkPolicy" eval \
    "[ -z \"\$(owners_of pvc yao-sb-ou-one-workspace)\$(owners_of service yao-sb-ou-one)\$(owners_of networkpolicy yao-sb-ou-one)\" ] && [ \"\$(uid_of service yao-sb-ou-one)\" = \"${SVC[one]}\" ]"
sleep 5
check "  nothing else removes them (5 s later, still there)" eq "$(uid_of pod yao-sb-ou-one)" "${POD[one]}"
start_controller "$LOG" --namespace $NS --max-running 0 --workers 2
t0=$(now_ms)
check "the controller starts: all four are deleted within 10 s" eventually 10 all_gone one
echo "    (after $(($(now_ms) - t0)) ms)"
check "  the log says so, by uid" eval "grep -q 'no owner left.*uid=${POD[one]}' '$LOG'"

# --- while the controller runs: within one pass --------------------------------------------
sandbox two
check "another Sandbox of the editor runs" eventually 30 eval "phase_is $NS two Running && record two"
t0=$(now_ms)
check "the editor deletes it with --cascade=orphan" eval "ed delete sandbox two --cascade=orphan --timeout=60s >/dev/null"
check "  its pod, claim, Service and NetworkPolicy are deleted within 5 s of the Sandbox's deletion" eventually 5 all_gone two
echo "    (after $(($(now_ms) - t0)) ms from the delete command)"

# --- what is not an orphan -------------------------------------------------------------------
check "the other Sandbox's objects are untouched (same uids)" eval \
    "[ \"\$(uid_of pod yao-sb-ou-keep)/\$(uid_of pvc yao-sb-ou-keep-workspace)/\$(uid_of service yao-sb-ou-keep)/\$(uid_of networkpolicy yao-sb-ou-keep)\" = \"${POD[keep]}/${PVC[keep]}/${SVC[keep]}/${NP[keep]}\" ] && phase_is $NS keep Running"
kubectl -n $NS run plain --image=busybox --restart=Never --labels=sandbox.yaoapps.com/name=x >/dev/null
check "  a pod of someone else's carrying only the name label is left alone" eval \
    "sleep 3; [ -n \"\$(uid_of pod plain)\" ] && [ -z \"\$(kubectl -n $NS get pod plain -o jsonpath='{.metadata.deletionTimestamp}')\" ]"
# Owners are by uid: a Sandbox made again under the orphan's name is a new owner, with a pod
# and claim of its own (the orphan's are not adopted).
sandbox one
check "'one' made again runs, on a new pod and a new claim" eventually 30 eval \
    "phase_is $NS one Running && [ -n \"\$(uid_of pod yao-sb-ou-one)\" ] && [ \"\$(uid_of pod yao-sb-ou-one)\" != \"${POD[one]}\" ] && [ \"\$(uid_of pvc yao-sb-ou-one-workspace)\" != \"${PVC[one]}\" ]"
check "no Forbidden in the controller log" eval "! grep -q 'status=403\|Forbidden' '$LOG'"
finish
