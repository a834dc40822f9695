#!/usr/bin/env bash
# Sharding (--shards 2): Sandboxes made by an unsharded controller are taken over (their
# objects labelled, nothing recreated) when two shard controllers start, each with its own
# Lease, a standby for shard 0 waiting on that Lease; 20 Sandboxes of 8 users are each
# Running exactly once, every pod and claim labelled with hash(namespace/user) mod 2, each
# controller's /metrics counting only its shard's Sandboxes; with shard 1's controller
# stopped a shard-0 user's new Sandbox comes up and a shard-1 user's waits, and shard 1
# restarted converges without duplicates; no object of either shard was deleted (uids);
# changed to 3 shards while the old replicas still run, the new count waits until they are
# gone (Leases labelled with their count), then every object is relabelled in place.
. "$(dirname "$0")/lib.sh"
NS=yao-shard
LEASE=yao-shard-it
LOG0=$BUILD_DIR/test-shard-0.log; LOG0B=$BUILD_DIR/test-shard-0b.log; LOG1=$BUILD_DIR/test-shard-1.log
LOGU=$BUILD_DIR/test-shard-unsharded.log
: > "$LOG0"; : > "$LOG0B"; : > "$LOG1"; : > "$LOGU"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
for i in 0 1 2; do kubectl -n yao-sandbox-system delete lease "$LEASE-shard-$i" --ignore-not-found >/dev/null; done

# shard_of USER [S] — the user's shard of S (2) in the test's namespace (lib.sh's shard_hash)
shard_of() { shard_hash "$NS" "$1" "${2:-2}"; }
USERS=(u1 u2 u3 u4 u5 u6 u7 u8)
declare -A SHARD
S0=(); S1=()
for u in "${USERS[@]}"; do SHARD[$u]=$(shard_of "$u"); if [ "${SHARD[$u]}" = 0 ]; then S0+=("$u"); else S1+=("$u"); fi; done
echo "    shard 0: ${S0[*]}; shard 1: ${S1[*]}"
check "the 8 users fall in both shards" eval '[ ${#S0[@]} -gt 0 ] && [ ${#S1[@]} -gt 0 ]'

# mk NAME USER — a Sandbox
mk() {
    kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: $1}
spec: {userID: $2, chatID: $1}
YAML
}
running_count() { kubectl -n $NS get sandboxes -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$'; }
all_running() { [ "$(running_count)" = "$1" ]; }
bound_port() { sed -n 's/.*msg="serving probes and metrics".* port=\([0-9]*\).*/\1/p' "$1" | head -n 1; }
sandboxes_metric() { curl -s "http://127.0.0.1:$1/metrics" | awk '$1 ~ /^yao_sandbox_sandboxes\{/ { n += $2 } END { print n + 0 }'; }
leader_metric() { curl -s "http://127.0.0.1:$1/metrics" | awk '$1 == "yao_sandbox_leader" { print $2 }'; }
# uids KIND — "name uid" of each object of KIND the controller made, sorted
uids() { kubectl -n $NS get "$1" -l sandbox.yaoapps.com/name -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid}{"\n"}{end}' | sort; }

# 1. Before sharding: an unsharded controller brings up 4 Sandboxes (2 users of each shard).
start_controller "$LOGU" --namespace $NS --max-running 0
UNSHARDED=${CONTROLLER_PIDS[-1]}
mk pre-a "${S0[0]}"; mk pre-b "${S0[-1]}"; mk pre-c "${S1[0]}"; mk pre-d "${S1[-1]}"
check "unsharded: 4 Sandboxes Running" eventually 60 all_running 4
check "unsharded: no shard label on its objects" eq "$(kubectl -n $NS get pods,pvc -l sandbox.yaoapps.com/shard -o name | wc -l)" 0
PRE_PODS=$(uids pods); PRE_PVCS=$(uids pvc)
kill -TERM "$UNSHARDED"; wait "$UNSHARDED" 2>/dev/null

# 2. Two shards, leader election on (a Lease each), a standby of shard 0.
SHARD_ARGS=(--namespace $NS --max-running 0 --leader-elect --lease-namespace yao-sandbox-system --lease-name $LEASE
            --metrics-addr 127.0.0.1:0 --shards 2)
start_controller "$LOG0" "${SHARD_ARGS[@]}" --shard 0
PID0=${CONTROLLER_PIDS[-1]}
start_controller "$LOG1" "${SHARD_ARGS[@]}" --shard 1
PID1=${CONTROLLER_PIDS[-1]}
holder() { kubectl -n yao-sandbox-system get lease "$LEASE-shard-$1" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
check "each shard takes its own Lease ($LEASE-shard-0, -shard-1)" eventually 30 eval '[ -n "$(holder 0)" ] && [ -n "$(holder 1)" ]'
check "the two shards' holders differ" eval '[ "$(holder 0)" != "$(holder 1)" ]'
start_controller "$LOG0B" "${SHARD_ARGS[@]}" --shard 0
PID0B=${CONTROLLER_PIDS[-1]}
eventually 10 eval '[ -n "$(bound_port "$LOG0")" ] && [ -n "$(bound_port "$LOG1")" ] && [ -n "$(bound_port "$LOG0B")" ]'
P0=$(bound_port "$LOG0"); P1=$(bound_port "$LOG1"); P0B=$(bound_port "$LOG0B")

labelled_as_user() {   # every pod and claim carries shard = hash(user) mod S, shards = S (S = $1, 2)
    local bad=0 kind name user shard of s=${1:-2}
    for kind in pods pvc; do
        while read -r name user shard of; do
            [ -z "$name" ] && continue
            if [ "$shard/$of" != "$(shard_of "$user" "$s")/$s" ]; then echo "    $kind $name of $user: shard/shards [$shard/$of]" >&2; bad=1; fi
        done < <(kubectl -n $NS get "$kind" -l sandbox.yaoapps.com/name -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations.sandbox\.yaoapps\.com/user-id} {.metadata.labels.sandbox\.yaoapps\.com/shard} {.metadata.labels.sandbox\.yaoapps\.com/shards}{"\n"}{end}')
    done
    return $bad
}
check "the unsharded controller's objects are labelled with their user's shard" eventually 30 labelled_as_user
check "  and none was recreated (pod uids unchanged)" eq "$(uids pods)" "$PRE_PODS"
check "  (claim uids unchanged)" eq "$(uids pvc)" "$PRE_PVCS"
check "  the 4 stay Running" all_running 4

# 3. 16 more: 20 Sandboxes of 8 users.
for i in $(seq 1 16); do u=${USERS[$(( (i - 1) % 8 ))]}; mk "sb-$i" "$u"; done
check "20 Sandboxes Running" eventually 120 all_running 20
check "exactly one pod per Sandbox (20 pods)" eq "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/name -o name | wc -l)" 20
check "exactly one claim per Sandbox (20 claims)" eq "$(kubectl -n $NS get pvc -l sandbox.yaoapps.com/name -o name | wc -l)" 20
check "every pod and claim carries shard = hash(namespace/user) mod 2 (and shards = 2)" labelled_as_user
expected() {   # Sandboxes of shard $1
    kubectl -n $NS get sandboxes -o jsonpath='{range .items[*]}{.spec.userID}{"\n"}{end}' |
        while read -r u; do [ "$(shard_of "$u")" = "$1" ] && echo x; done | wc -l
}
E0=$(expected 0); E1=$(expected 1)
echo "    shard 0 serves $E0 Sandboxes, shard 1 $E1"
check "shard 0's /metrics counts only its Sandboxes" eq "$(sandboxes_metric $P0)" "$E0"
check "shard 1's /metrics counts only its Sandboxes" eq "$(sandboxes_metric $P1)" "$E1"
check "shard 0 leads, its second replica stands by, shard 1 leads" eq "$(leader_metric $P0) $(leader_metric $P0B) $(leader_metric $P1)" "1 0 1"
check "  the standby caches nothing (the leader started the controller)" eq "$(sandboxes_metric $P0B)" 0

still_there() {   # every object of kind $1 listed in $2 ("name uid" lines) still has its uid
    local now; now=$(uids "$1")
    [ -z "$(comm -23 <(echo "$2") <(echo "$now"))" ]
}

# 4. Shard 1's controller stops: only its users wait.
BEFORE_PODS=$(uids pods); BEFORE_PVCS=$(uids pvc)
kill -TERM "$PID1"; wait "$PID1" 2>/dev/null
mk late-0 "${S0[0]}"; mk late-1 "${S1[0]}"
check "with shard 1 down, a shard-0 user's new Sandbox comes up" eventually 60 phase_is $NS late-0 Running
sleep 3
check "  and a shard-1 user's waits (no status, no pod)" eval '[ -z "$(sandbox_phase $NS late-1)" ] && [ "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/name=late-1 -o name | wc -l)" = 0 ]'
check "  no pod was deleted or replaced meanwhile (uids)" still_there pods "$BEFORE_PODS"

# 5. Shard 1 back: converges, no duplicates, nothing deleted.
start_controller "$LOG1" "${SHARD_ARGS[@]}" --shard 1
PID1=${CONTROLLER_PIDS[-1]}
eventually 10 eval '[ "$(bound_port "$LOG1")" != "$P1" ] || [ $(grep -c "serving probes" "$LOG1") -ge 2 ]'
check "shard 1 restarted: the waiting Sandbox comes up" eventually 60 phase_is $NS late-1 Running
check "22 Sandboxes Running" eventually 60 all_running 22
check "22 pods, 22 claims: no duplicates" eq "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/name -o name | wc -l) $(kubectl -n $NS get pvc -l sandbox.yaoapps.com/name -o name | wc -l)" "22 22"
check "no pod of either shard was deleted or replaced (uids)" still_there pods "$BEFORE_PODS"
check "no claim of either shard was deleted or replaced (uids)" still_there pvc "$BEFORE_PVCS"
check "no controller deleted anything as an orphan" eq "$(cat "$LOG0" "$LOG0B" "$LOG1" | grep -c 'deleted orphan')" 0
check "every pod and claim still carries its user's shard" labelled_as_user

# 6. S changes (2 -> 3) with the old replicas still running, as a rolling update leaves
# them: the new count does not act (no relabelling, no pass) while a replica of the old one
# acts; once the old ones are gone, each new shard relabels its users' objects in place.
BEFORE_PODS=$(uids pods); BEFORE_PVCS=$(uids pvc)
LOGS3=()
for i in 0 1 2; do
    LOGS3+=("$BUILD_DIR/test-shard-3-$i.log"); : > "${LOGS3[-1]}"
    start_controller "${LOGS3[-1]}" --namespace $NS --max-running 0 --leader-elect --lease-namespace yao-sandbox-system \
        --lease-name $LEASE --shards 3 --shard $i
done
on_exit "kubectl -n yao-sandbox-system delete lease $LEASE-shard-2 --ignore-not-found"
check "--shards 3 beside the running --shards 2: shard 2 takes its new Lease" eventually 30 eval '[ -n "$(holder 2)" ]'
check "  and waits: the old count acts (its log says so)" eventually 30 grep -q 'waiting: replicas of another shard count are live' "${LOGS3[2]}"
check "  the Leases carry their shard count" eq "$(kubectl -n yao-sandbox-system get lease "$LEASE-shard-2" -o jsonpath='{.metadata.labels.sandbox\.yaoapps\.com/shards}')/$(kubectl -n yao-sandbox-system get lease "$LEASE-shard-1" -o jsonpath='{.metadata.labels.sandbox\.yaoapps\.com/shards}/{.metadata.labels.sandbox\.yaoapps\.com/acting}')" "3/2/true"
mk during-2 "${USERS[1]}"
check "  meanwhile the old shards serve: a new Sandbox comes up" eventually 60 phase_is $NS during-2 Running
sleep 3
check "  and no object was relabelled for 3 shards, no pass made by the new count" eval \
    "[ \"\$(kubectl -n $NS get pods,pvc -l sandbox.yaoapps.com/shards=3 -o name | wc -l)\" = 0 ] && ! grep -q 'msg=\"reconciled\"\|labelled as this shard' ${LOGS3[*]}"
BEFORE_PODS=$(uids pods); BEFORE_PVCS=$(uids pvc)
for p in "$PID0" "$PID0B" "$PID1"; do kill -TERM "$p" 2>/dev/null; done
for p in "$PID0" "$PID0B" "$PID1"; do wait "$p" 2>/dev/null; done
check "--shards 3: every pod and claim relabelled to hash(namespace/user) mod 3" eventually 60 labelled_as_user 3
mk after-3 "${USERS[2]}"
check "  a new Sandbox comes up" eventually 60 phase_is $NS after-3 Running
check "  24 Running, 24 pods, 24 claims: each Sandbox has exactly one of each" eventually 30 eval '[ "$(running_count) $(kubectl -n $NS get pods -l sandbox.yaoapps.com/name -o name | wc -l) $(kubectl -n $NS get pvc -l sandbox.yaoapps.com/name -o name | wc -l)" = "24 24 24" ]'
check "  no pod was recreated (uids)" still_there pods "$BEFORE_PODS"
check "  no claim was recreated (uids)" still_there pvc "$BEFORE_PVCS"
check "  nothing deleted as an orphan" eq "$(cat "${LOGS3[@]}" | grep -c 'deleted orphan')" 0

finish
