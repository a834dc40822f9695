#!/usr/bin/env bash
# Warm workspaces on local-path (WaitForFirstConsumer, rancher/local-path-provisioner with its
# helper pods) on the real node: a SandboxClass with warmPool.size 2 on local-path keeps 2
# claims Bound before any chat exists (each bound by a binder pod, which is gone
# afterwards; each volume a hostPath PV pinned to the real node); a new chat adopts one,
# its pod is made in the pass that adopted it, runs on the volume's node, and its
# workspace is writable by the sandbox user; a cold chat of a class without a pool is
# (another workspace size) measured beside it; the pool refills; deleting the class removes the pool's claims and
# their volumes.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-warm
LOG=$BUILD_DIR/test-node-warm.log
: > "$LOG"
install_manifests
fresh_namespace $NS
kubectl apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-node-warm}
spec:
  resources: {cpu: {default: 100m}, memory: {default: 128Mi}}
  workspace: {storageClassName: local-path, defaultSize: 1Gi, warmPool: {size: 2, namespaces: [$NS]}}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-node-cold}
spec:
  resources: {cpu: {default: 100m}, memory: {default: 128Mi}}
  workspace: {storageClassName: local-path, defaultSize: 2Gi}   # another shape: no pool claim fits
YAML
on_exit "kubectl delete sandboxclass yao-it-node-warm yao-it-node-cold --ignore-not-found --wait=false"
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

field() { kubectl -n $NS get "$1" "$2" -o jsonpath="{$3}" 2>/dev/null; }
pool_claims() { kubectl -n $NS get pvc -l sandbox.yaoapps.com/warm-pool -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.metadata.deletionTimestamp}{"\n"}{end}' 2>/dev/null; }
pool_bound() { pool_claims | awk '$2 == "Bound" && $3 == "" {n++} END {print n + 0}'; }
pool_live() { pool_claims | awk '$3 == "" {n++} END {print n + 0}'; }
binders() { kubectl -n $NS get pod -o jsonpath='{range .items[*]}{.metadata.annotations.sandbox\.yaoapps\.com/binds-claim}|{.metadata.name}{"\n"}{end}' 2>/dev/null | grep -v '^|'; }
pv_node() { # claim → the node its PV is pinned to
    kubectl get pv "$(field pvc "$1" .spec.volumeName)" \
        -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}' 2>/dev/null
}
# timed_create NAME CLASS — sets T_RUN (ms from the create to phase Running)
timed_create() {
    local t0; T_RUN=""
    t0=$(now_ms)
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: warm-user, chatID: %s, className: %s}\n' \
        "$1" "$1" "$2" | kubectl -n $NS apply -f - >/dev/null
    for _ in $(seq 1 1200); do
        if phase_is $NS "$1" Running; then T_RUN=$(($(now_ms) - t0)); return 0; fi
        sleep 0.1
    done
    return 1
}

check "the pool's 2 local-path claims are Bound before any chat exists" eventually 180 eval '[ "$(pool_bound)" = 2 ]'
P1=$(pool_claims | awk 'NR == 1 {print $1}')
check "  bound by binder pods (the controller's log)" eval \
    "grep -q 'msg=\"warm pool: binder pod created\" namespace=$NS .* claim=$P1 ' '$LOG'"
check "  each volume pinned to the real node ($P1: $(pv_node "$P1"))" eq "$(pv_node "$P1")" "$REAL_NODE"
check "  no binder pod is left" eventually 60 eval '[ -z "$(binders)" ]'

check "a new chat of the class reaches Running" timed_create warm1 yao-it-node-warm
WARM_RUN=$T_RUN
W1=$(field sandbox warm1 .status.workspaceClaim)
check "  on an adopted pool claim ($W1)" eval '[[ $W1 == yao-warm-* ]]'
check "  its pod was made in the pass that adopted the claim" eq "$(passes_before_pod $NS warm1 "$LOG")" 0
check "  its pod runs on its volume's node" eq "$(field pod "$(field sandbox warm1 .status.podName)" .spec.nodeName)" "$(pv_node "$W1")"
check "  its workspace is writable by the sandbox user" eval \
    "kubectl -n $NS exec $(field sandbox warm1 .status.podName) -- sh -c 'id -u; echo hi > /workspace/f; cat /workspace/f' | tr '\n' ' ' | grep -qx '1000 hi '"
check "a cold chat of a class without a pool reaches Running" timed_create cold1 yao-it-node-cold
COLD_RUN=$T_RUN
check "  on a claim of its own" eq "$(field sandbox cold1 .status.workspaceClaim)" "$(field sandbox cold1 .status.podName)-workspace"
check "the pool refills to 2 Bound" eventually 180 eval '[ "$(pool_bound)" = 2 ]'
check "  no binder pod is left" eventually 60 eval '[ -z "$(binders)" ]'
echo "create → Running on local-path: warm ${WARM_RUN} ms, cold ${COLD_RUN} ms"

PVS=$(for c in $(pool_claims | awk '{print $1}'); do field pvc "$c" .spec.volumeName; echo; done | tr '\n' ' ')
kubectl delete sandboxclass yao-it-node-warm --wait=false >/dev/null
check "deleting the class removes the pool's claims" eventually 60 eval '[ "$(pool_live)" = 0 ]'
# shellcheck disable=SC2086
check "  and their volumes ($PVS)" eventually 120 eval "! kubectl get pv $PVS -o name 2>/dev/null | grep -q ."
check "  warm1 keeps its adopted claim" eq "$(field pvc "$W1" .metadata.name)" "$W1"
finish
