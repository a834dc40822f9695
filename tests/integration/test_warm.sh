#!/usr/bin/env bash
# Warm workspaces on the plane (kwok nodes, StorageClass yao-test-slow: every volume is
# provisioned 2 s after its claim appears, claims side by side — checked first). A SandboxClass with spec.workspace.warmPool
# size 3 keeps 3 Bound pool claims in its namespace; a new Sandbox of the class adopts
# one (status.workspaceClaim names it, the claim is the Sandbox's, the pod mounts it) and
# its pod is made in the pass that adopts it, where a cold claim's pod waits passes for
# its 2 s provisioning (from the controller's debug log); the pool refills. Two Sandboxes
# created together adopt different claims. A controller killed right after an adoption
# converges when started again (one claim per Sandbox, the pool back to 3, no orphans). A
# fork clones the adopted claim. Deleting a Sandbox removes its adopted claim as any
# other. A Sandbox of another size gets a cold claim of its own. The pool shrinks with the
# class and goes with it. A WaitForFirstConsumer class's pool is Bound ahead of demand by
# binder pods (none left afterwards), a Sandbox adopting one has its pod made at once, on
# its volume's node, and the refill's volume goes to another node. The --warm-workspaces
# pool: /metrics counts its Bound claims, adoptions, and the miss of a third Sandbox
# created at once with two others for a pool of 2. Prints the measured create → pod and
# create → Running with and without the pool.
. "$(dirname "$0")/lib.sh"
NS=yao-it-warm
CLASS=yao-it-warm-slow
LOG=$BUILD_DIR/test-warm.log
: > "$LOG"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS

class() { # name storageClass size
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: SandboxClass\nmetadata: {name: %s}\nspec:\n  workspace:\n    storageClassName: %s\n    defaultSize: 1Gi\n    warmPool: {size: %s, namespaces: [%s]}\n' \
        "$1" "$2" "$3" "$NS" | kubectl apply -f - >/dev/null
}
sandbox_yaml() { # name chat [workspace flow YAML]  (class: $SB_CLASS, "" = none)
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec:\n  userID: warm-user\n  chatID: %s\n%s  workspace: %s\n---\n' \
        "$1" "$2" "${SB_CLASS:+  className: $SB_CLASS
}" "${3:-{\}}"
}
SB_CLASS=$CLASS
field() { kubectl -n $NS get "$1" "$2" -o jsonpath="{$3}" 2>/dev/null; }
claim_of() { field sandbox "$1" .status.workspaceClaim; }
pool_claims() { kubectl -n $NS get pvc -l sandbox.yaoapps.com/warm-pool -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.metadata.deletionTimestamp}{"\n"}{end}' 2>/dev/null; }
pool_bound() { pool_claims | awk '$2 == "Bound" && $3 == "" {n++} END {print n + 0}'; }
pool_live() { pool_claims | awk '$3 == "" {n++} END {print n + 0}'; }
# claims_of NAME — the claims labelled with the Sandbox's name
claims_of() { kubectl -n $NS get pvc -l sandbox.yaoapps.com/name="$1" -o name 2>/dev/null | wc -l; }
owner_uid() { field pvc "$1" '.metadata.ownerReferences[?(@.controller==true)].uid'; }
pod_of() { kubectl -n $NS get pod -l sandbox.yaoapps.com/name="$1" -o name 2>/dev/null | head -1; }
# timed_create NAME CHAT [WS] — create a Sandbox; sets T_POD and T_RUN (ms from the create
# to its pod existing, to phase Running)
timed_create() {
    local t0 t; T_POD=""; T_RUN=""
    t0=$(now_ms)
    sandbox_yaml "$@" | kubectl -n $NS apply -f - >/dev/null
    for _ in $(seq 1 400); do
        t=$(now_ms)
        if [ -z "$T_POD" ] && [ -n "$(pod_of "$1")" ]; then T_POD=$((t - t0)); fi
        if [ -n "$T_POD" ] && phase_is $NS "$1" Running; then T_RUN=$((t - t0)); return 0; fi
        sleep 0.05
    done
    return 1
}

# --- the plane's slow class: 2 s per volume, claims side by side ------------------------
for i in $(seq 1 10); do printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: slow-%s}\nspec: {storageClassName: yao-test-slow, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n---\n' $i; done > "$BUILD_DIR/test-warm-claims.yaml"
t0=$(now_ms)
kubectl -n $NS create -f "$BUILD_DIR/test-warm-claims.yaml" >/dev/null
t1=$(now_ms)
slow_bound() { kubectl -n $NS get pvc -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c Bound; }
# (margins for a loaded CI machine: kube-controller-manager binds one claim at a time)
check "yao-test-slow: 10 claims created together all Bound within 12 s (side by side, not 20 s)" eventually 12 eval '[ "$(slow_bound)" = 10 ]'
t2=$(now_ms)
# each volume made 2 s after its claim (creationTimestamps have whole seconds: 1-3 s apart
# unloaded; one after another the last would be 20 s apart)
pv_lag() {
    local c pv
    for c in $(kubectl -n $NS get pvc -o jsonpath='{.items[*].metadata.name}'); do
        pv=$(field pvc "$c" .spec.volumeName)
        echo $(( $(date -d "$(kubectl get pv "$pv" -o jsonpath='{.metadata.creationTimestamp}')" +%s) - $(date -d "$(field pvc "$c" .metadata.creationTimestamp)" +%s) ))
    done | sort -n | sed -n '1p;$p' | tr '\n' ' '
}
lag=$(pv_lag)
check "  each volume 2 s after its claim (lag min/max: ${lag}s; created in $((t1 - t0)) ms, all Bound $((t2 - t0)) ms after the first)" eval "[ ${lag%% *} -ge 1 ] && [ $(echo $lag | awk '{print $2}') -le 10 ]"
kubectl -n $NS delete pvc --all --wait=true --timeout=30s >/dev/null

class $CLASS yao-test-slow 3
on_exit "kubectl delete sandboxclass $CLASS yao-it-warm-wffc --ignore-not-found --wait=false"
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4 --log-level debug   # passes_before_pod reads its passes

# --- the pool fills; a cold claim first, for comparison --------------------------------
check "the pool fills: 3 Bound claims labelled with the pool" eventually 30 eval '[ "$(pool_bound)" = 3 ]'
first=$(pool_claims | awk 'NR == 1 {print $1}')
check "  named yao-warm-*, owned (not controlled) by the SandboxClass" eq "$(field pvc "$first" '.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller')" "SandboxClass/$CLASS/"
check "  the class's workspace: yao-test-slow, 1Gi" eq "$(field pvc "$first" '.spec.storageClassName} {.spec.resources.requests.storage')" "yao-test-slow 1Gi"

check "a Sandbox of another size gets a cold claim of its own" timed_create cold chat-cold '{size: 2Gi}'
COLD_POD=$T_POD COLD_RUN=$T_RUN
COLD_CLAIM=$(claim_of cold)
check "  named after its pod, not from the pool" eq "$COLD_CLAIM" "$(pod_of cold | sed 's|^pod/||')-workspace"
check "  not a pool claim, 2Gi" eq "$(field pvc "$COLD_CLAIM" '.metadata.labels.sandbox\.yaoapps\.com/warm-pool}|{.spec.resources.requests.storage')" "|2Gi"
check "  its pod waited for the 2 s provisioning (create → pod ${COLD_POD} ms)" eval "[ $COLD_POD -ge 1500 ]"
check "    over $(passes_before_pod $NS cold "$LOG") pass(es) before the one that made it" test "$(passes_before_pod $NS cold "$LOG")" -ge 1
check "  the pool was not touched" eq "$(pool_bound)" 3

# --- a warm start ------------------------------------------------------------------------
check "a Sandbox of the class reaches Running" timed_create warm1 chat-1
WARM_POD=$T_POD WARM_RUN=$T_RUN
W1=$(claim_of warm1)
# (a bound on create → pod would measure the loaded machine's kubectl as much as the
# controller: the log says whether anything was waited for)
check "  its pod was made in the pass that adopted the claim: no wait (create → pod ${WARM_POD} ms)" \
    eq "$(passes_before_pod $NS warm1 "$LOG")" 0
check "  status.workspaceClaim is a pool claim: $W1" contains "$W1" "yao-warm-"
check "  the claim is the Sandbox's: its controller reference and labels" eq "$(owner_uid "$W1") $(field pvc "$W1" '.metadata.labels.sandbox\.yaoapps\.com/name}/{.metadata.labels.sandbox\.yaoapps\.com/warm-pool')" "$(field sandbox warm1 .metadata.uid) warm1/"
check "  the class's reference is gone from it (deleting the class keeps it)" eq "$(field pvc "$W1" '.metadata.ownerReferences[*].kind')" "Sandbox"
check "  the pod keeps its yao-sb-<user>-<chat> name and mounts the adopted claim" eq "$(pod_of warm1 | sed 's|^pod/yao-sb-warm-user-.*|yes|') $(kubectl -n $NS get $(pod_of warm1) -o jsonpath='{.spec.volumes[?(@.name=="workspace")].persistentVolumeClaim.claimName}')" "yes $W1"
check "  the pool refills to 3" eventually 30 eval '[ "$(pool_bound)" = 3 ]'

# --- two at once ------------------------------------------------------------------------
{ sandbox_yaml warm2 chat-2; sandbox_yaml warm3 chat-3; } | kubectl -n $NS apply -f - >/dev/null
check "two Sandboxes created together both reach Running" eventually 30 eval 'phase_is $NS warm2 Running && phase_is $NS warm3 Running'
W2=$(claim_of warm2) W3=$(claim_of warm3)
check "  with different pool claims ($W2, $W3)" eval '[ -n "$W2" ] && [ "$W2" != "$W3" ] && [[ $W2 == yao-warm-* ]] && [[ $W3 == yao-warm-* ]]'
check "  each owned by its own Sandbox" eq "$(owner_uid "$W2") $(owner_uid "$W3")" "$(field sandbox warm2 .metadata.uid) $(field sandbox warm3 .metadata.uid)"
check "  the pool refills to 3" eventually 30 eval '[ "$(pool_bound)" = 3 ]'

# --- a controller killed right after an adoption ------------------------------------------
sandbox_yaml warm4 chat-4 | kubectl -n $NS apply -f - >/dev/null
adopted4() { kubectl -n $NS get pvc -l sandbox.yaoapps.com/name=warm4 -o name 2>/dev/null | grep -q .; }
for _ in $(seq 1 200); do adopted4 && break; sleep 0.02; done
kill_controller KILL
check "killed right after warm4 adopted a claim" adopted4
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4
check "  after a restart warm4 reaches Running" eventually 30 phase_is $NS warm4 Running
W4=$(claim_of warm4)
check "  with exactly one claim, the adopted one, owned by it" eq "$(claims_of warm4) $(owner_uid "$W4")" "1 $(field sandbox warm4 .metadata.uid)"
check "  a pool claim ($W4)" contains "$W4" "yao-warm-"
check "  the pool is back to 3, and not above" eventually 30 eval '[ "$(pool_bound)" = 3 ] && [ "$(pool_live)" = 3 ]'
sleep 2
check "  no other claim: 5 Sandboxes' claims + 3 pool claims" eq "$(kubectl -n $NS get pvc --no-headers 2>/dev/null | wc -l)" 8
check "  one claim per Sandbox" eq "$(claims_of warm1)$(claims_of warm2)$(claims_of warm3)$(claims_of warm4)$(claims_of cold)" 11111

# --- a fork clones the adopted claim -------------------------------------------------------
sandbox_yaml fork chat-fork '{from: {sandbox: warm2}}' | kubectl -n $NS apply -f - >/dev/null
check "a fork of warm2 reaches Running" eventually 40 phase_is $NS fork Running
FC=$(claim_of fork)
check "  its claim is a clone of warm2's adopted claim, not a pool claim" eq "$(field pvc "$FC" '.spec.dataSource.name}|{.metadata.labels.sandbox\.yaoapps\.com/warm-pool')" "$W2|"

# --- deletion --------------------------------------------------------------------------------
kubectl -n $NS delete sandbox warm1 cold --wait=false >/dev/null
check "deleting a Sandbox removes its adopted claim, as its cold one" eventually 40 eval '! kubectl -n $NS get pvc "$W1" "$COLD_CLAIM" -o name 2>/dev/null | grep -q .'
check "  the pool stays at 3" eq "$(pool_live)" 3

# --- the pool follows its class --------------------------------------------------------------
class $CLASS yao-test-slow 1
check "warmPool.size 1: the pool shrinks to 1" eventually 30 eval '[ "$(pool_live)" = 1 ]'
check "  the adopted claims are kept" eq "$(kubectl -n $NS get pvc "$W2" "$W3" "$W4" -o name 2>/dev/null | wc -l)" 3
kubectl delete sandboxclass $CLASS --wait=false >/dev/null
check "deleting the class removes its pool claims" eventually 30 eval '[ "$(pool_live)" = 0 ]'
check "  and keeps the adopted ones" eq "$(kubectl -n $NS get pvc "$W2" "$W3" "$W4" -o name 2>/dev/null | wc -l)" 3

# --- a WaitForFirstConsumer class: binder pods bind its pool ahead of demand -----------------
# (its claims would otherwise stay Pending until a Sandbox's pod is scheduled)
binders() { kubectl -n $NS get pod -o jsonpath='{range .items[*]}{.metadata.annotations.sandbox\.yaoapps\.com/binds-claim}|{.metadata.name}{"\n"}{end}' 2>/dev/null | grep -v '^|'; }
# every live pool claim had a binder of its own (the controller's log names its claim)
all_had_binders() {
    local c n=0
    for c in $(pool_claims | awk '$3 == "" {print $1}'); do
        grep -q "msg=\"warm pool: binder pod created\" namespace=$NS .* claim=$c " "$LOG" || return 1
        n=$((n + 1))
    done
    [ $n -gt 0 ]
}
selected_node() { field pvc "$1" '.metadata.annotations.volume\.kubernetes\.io/selected-node'; }
class yao-it-warm-wffc yao-test-wffc 2
SB_CLASS=yao-it-warm-wffc
sandbox_yaml wffc0 chat-w0 | kubectl -n $NS apply -f - >/dev/null
check "a WaitForFirstConsumer class: its 2 pool claims are Bound ahead of demand" eventually 40 eval '[ "$(pool_bound)" = 2 ]'
check "  each bound by a binder pod of its own (the controller's log)" all_had_binders
BP=$(grep -m1 'msg="warm pool: binder pod created"' "$LOG" | sed 's/.* claim=\([^ ]*\).*/\1/')
check "  each on the node the scheduler chose for its binder (selected-node: $(selected_node "$BP"))" eval '[ -n "$(selected_node "$BP")" ]'
check "  no binder pod is left once they are Bound" eventually 30 eval '[ -z "$(binders)" ]'
check "  the controller says the class binds on first consumer, once" eq "$(grep -c 'WaitForFirstConsumer.*storageclass=yao-test-wffc' "$LOG")" 1
check "a Sandbox of the class reaches Running" timed_create wffc1 chat-w1
WF1=$(claim_of wffc1)
check "  it adopted a Bound pool claim ($WF1)" eval '[[ $WF1 == yao-warm-* ]] && [ "$(owner_uid "$WF1")" = "$(field sandbox wffc1 .metadata.uid)" ]'
check "  its pod was made in the pass that adopted the claim (create → pod ${T_POD} ms)" \
    eq "$(passes_before_pod $NS wffc1 "$LOG")" 0
check "  its pod is on its volume's node" eq "$(kubectl -n $NS get $(pod_of wffc1) -o jsonpath='{.spec.nodeName}')" "$(selected_node "$WF1")"
check "  the pool refills to 2 Bound" eventually 40 eval '[ "$(pool_bound)" = 2 ]'
# The refill's binder prefers a node without one of the pool's volumes.
spread_ok() {
    local a b
    read -r a b <<< "$(pool_claims | awk '$2 == "Bound" && $3 == "" {print $1}' | while read -r c; do selected_node "$c"; echo; done | tr '\n' ' ')"
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]
}
check "  the pool's two volumes are on two nodes" spread_ok
check "  no binder pod is left" eventually 30 eval '[ -z "$(binders)" ]'
class yao-it-warm-wffc yao-test-wffc 0
check "warmPool.size 0: the pool claims go" eventually 30 eval '[ "$(pool_live)" = 0 ]'
check "  wffc1 keeps its adopted claim" eq "$(kubectl -n $NS get pvc "$WF1" -o name 2>/dev/null)" "persistentvolumeclaim/$WF1"
kubectl delete sandboxclass yao-it-warm-wffc --wait=false >/dev/null
SB_CLASS=$CLASS

# --- without classes: --warm-workspaces for the flag defaults ------------------------------
kill_controller TERM
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4 --warm-workspaces 2 --storage-class yao-test-slow --workspace-size 1Gi \
    --metrics-addr 127.0.0.1:0
SB_CLASS=""
sandbox_yaml flag0 chat-f0 | kubectl -n $NS apply -f - >/dev/null
check "--warm-workspaces 2: a namespace with a Sandbox of no class gets 2 Bound pool claims" eventually 30 eval '[ "$(pool_bound)" = 2 ]'
fp=$(pool_claims | awk 'NR == 1 {print $1}')
check "  without an owner (no class to go with)" eq "$(field pvc "$fp" .metadata.ownerReferences)" ""
check "  a second Sandbox of no class adopts one" timed_create flag1 chat-f1
check "  status.workspaceClaim names it ($(claim_of flag1), create → pod ${T_POD} ms)" eval '[[ $(claim_of flag1) == yao-warm-* ]] && [ "$(owner_uid "$(claim_of flag1)")" = "$(field sandbox flag1 .metadata.uid)" ]'
check "  the pool refills to 2" eventually 30 eval '[ "$(pool_bound)" = 2 ]'

# --- the pool in /metrics: Bound claims, adoptions, misses ----------------------------------
MPORT=$(sed -n 's/.*msg="serving probes and metrics".* port=\([0-9]*\).*/\1/p' "$LOG" | tail -n 1)
wmetric() { curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
check "metrics: the pool's 2 Bound claims, none pending" eventually 10 eval \
    '[ "$(wmetric "yao_sandbox_warm_claims{state=\"bound\"}") $(wmetric "yao_sandbox_warm_claims{state=\"pending\"}")" = "2 0" ]'
A0=$(wmetric yao_sandbox_warm_adoptions_total)
M0=$(wmetric yao_sandbox_warm_misses_total)
check "  flag1's adoption counted (adoptions ${A0:-none})" test "${A0:-0}" -ge 1
for n in 2 3 4; do sandbox_yaml flag$n chat-f$n; done | kubectl -n $NS apply -f - >/dev/null
check "three Sandboxes created at once for a pool of 2 all reach Running" eventually 30 eval \
    'phase_is $NS flag2 Running && phase_is $NS flag3 Running && phase_is $NS flag4 Running'
warm_of_three() { for n in 2 3 4; do claim_of flag$n; echo; done | grep -c '^yao-warm-'; }
check "  two of them adopted pool claims, one made its own" eq "$(warm_of_three)" 2
check "  metrics: 2 more adoptions and 1 more miss" eq "$(( $(wmetric yao_sandbox_warm_adoptions_total) - A0 )) $(( $(wmetric yao_sandbox_warm_misses_total) - M0 ))" "2 1"

echo "create → pod:     cold claim ${COLD_POD} ms, warm claim ${WARM_POD} ms"
echo "create → Running: cold claim ${COLD_RUN} ms, warm claim ${WARM_RUN} ms (yao-test-slow: 2 s per volume)"
finish
