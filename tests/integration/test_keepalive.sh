#!/usr/bin/env bash
# Clients keep a sandbox alive by the policy the controller publishes (issue 23 item 3):
# the controller writes the effective idle timeout and reclaim window into status
# (status.idleTimeout, status.reclaimAfter, status.idleAt), and the CLI and the Go client
# touch at a third of the shorter of them while a command runs — not by spec.idleTimeout
# alone, which a class's policy leaves empty.
#   - a SandboxClass with idleTimeout 5s, a session Sandbox with no spec.idleTimeout:
#     `yao-sandbox exec -- sh -c 'sleep 15; echo finished'` prints finished and the
#     Sandbox and its workspace claim are still there; the same through the Go client;
#     left unused afterwards, each is removed (the 5 s are really in force);
#   - a class with reclaim.idleAfter 5s, a global cap of 1 and a Sandbox waiting for the
#     slot: a 15 s exec (CLI, then Go client) is not reclaimed under the command; once
#     it has ended, the idle sandbox is reclaimed for the waiting one.
# kwok runs the exec'd commands on this host (in $YAO_PLANE_DIR/exec-home).
. "$(dirname "$0")/lib.sh"
NS=yao-it-3            # a namespace of the plane's ClusterExec (kwok runs exec only there)
LOG=$BUILD_DIR/test-keepalive.log
: > "$LOG"
Y=$BUILD_DIR/bin/yao-sandbox
T=$(mktemp -d)
on_exit "rm -rf '$T'"
ROOT=$YAO_PLANE_DIR/exec-home/keepalive-it-$$
on_exit "rm -rf '$ROOT'"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
IDLE_CLASS=yao-it-ka-idle
RECLAIM_CLASS=yao-it-ka-reclaim
cleanup_classes() { kubectl delete sandboxclass $IDLE_CLASS $RECLAIM_CLASS --ignore-not-found >/dev/null; }

check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
cleanup_classes
on_exit cleanup_classes
kubectl apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: $IDLE_CLASS}
spec: {idleTimeout: 5s}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: $RECLAIM_CLASS}
spec: {reclaim: {idleAfter: 5s}}
YAML
mkdir -p "$ROOT" && chown 1000:1000 "$ROOT"

# The Go client's identity: a ServiceAccount with the editor role only.
kubectl -n $NS create serviceaccount go-client >/dev/null
kubectl -n $NS create rolebinding go-client --clusterrole=yao-sandbox-editor \
    --serviceaccount=$NS:go-client >/dev/null
check "editor kubeconfig for the Go client" sa_kubeconfig "$T/go.kubeconfig" go-client $NS

sb() {   # sb NAME USER SPEC-MEMBERS
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: %s, chatID: c%s}\n' \
        "$1" "$2" "${3:+, $3}" | kubectl -n $NS apply -f - >/dev/null
}
field() { kubectl -n $NS get sandbox "$1" -o jsonpath="{$2}" 2>/dev/null; }
exists() { kubectl -n $NS get sandbox "$1" >/dev/null 2>&1; }
gone() { ! exists "$1"; }
# claim_of NAME — the workspace claim the Sandbox names, when that claim exists
claim_of() { local c; c=$(field "$1" .status.workspaceClaim) && [ -n "$c" ] && kubectl -n $NS get pvc "$c" -o name 2>/dev/null; }
# name_of USER — the Sandbox of USER (the Go client names it itself)
name_of() { kubectl -n $NS get sandboxes -o jsonpath="{.items[?(@.spec.userID==\"$1\")].metadata.name}"; }
# still_in_use NAME UID POD — the same Sandbox, Running on the same pod, not reclaimed, its
# claim there (two reads: the check must be quick, the window after a command is short)
still_in_use() {
    local got claim
    got=$(kubectl -n $NS get sandbox "$1" -o jsonpath='{.metadata.uid}/{.status.podName}/{.status.phase}/{.status.conditions[?(@.type=="Ready")].reason}/{.status.workspaceClaim}' 2>&1)
    claim=${got##*/}
    if [ "${got%/*}" != "$2/$3/Running/PodReady" ] || [ -z "$claim" ] || ! kubectl -n $NS get pvc "$claim" >/dev/null 2>&1; then
        echo "    expected $2/$3/Running/PodReady with its claim, got $got" >&2
        explain_sandbox $NS "$1" "$LOG"
        return 1
    fi
}
go_keepalive() {   # go_keepalive CLASS USER — the Go client's 15 s command (TestITKeepAliveClassPolicy)
    (cd "$SRC_DIR/clients/go" && YAO_GO_IT_KUBECONFIG=$T/go.kubeconfig YAO_GO_IT_NAMESPACE=$NS YAO_GO_IT_ROOT=$ROOT \
        YAO_GO_IT_KEEPALIVE_CLASS=$1 YAO_GO_IT_KEEPALIVE_USER=$2 \
        "$GO" test -count=1 -timeout 300s -run '^TestITKeepAliveClassPolicy$' -v ./sandbox)
}
sleep_until() { local ms=$(( $1 - $(now_ms) )); [ "$ms" -le 0 ] || sleep "$(awk -v m="$ms" 'BEGIN {print m / 1000}')"; }
passed_go() { grep -q -- '--- PASS: TestITKeepAliveClassPolicy' "$1" || { sed 's/^/    /' "$1" >&2; return 1; }; }

check "go toolchain present ($GO)" test -x "$GO"
# Build the Go test binary now, so the timed parts below do not wait for the compiler.
check "the Go client's tests build" eval "(cd '$SRC_DIR/clients/go' && '$GO' test -count=1 -run '^\$' ./sandbox >/dev/null)"

# ---- a class idle timeout of 5 s ----------------------------------------------------------
start_controller "$LOG" --namespace $NS --max-running 0 --idle-timeout 45m
sb idle alice "className: $IDLE_CLASS, lifecycle: session"
check "the session of a 5 s-idle class runs" eventually 30 phase_is $NS idle Running
UID1=$(field idle .metadata.uid) POD1=$(field idle .status.podName)
# The command starts at once (left alone 5 s, the session is removed); the published
# policy is read while it runs.
t0=$(now_ms)
"$Y" -n $NS exec idle -- sh -c 'sleep 15; echo finished' > "$T/idle.out" 2>"$T/idle.err" &
EXEC=$!
on_exit "kill $EXEC"
check "status.idleTimeout is the class's (5s), not the controller's 45m" eventually 10 eval '[ "$(field idle .status.idleTimeout)" = 5s ]'
check "status.reclaimAfter is absent (the class never reclaims)" eq "$(field idle .status.reclaimAfter)" ""
idle_at_ok() {   # status.idleAt is an RFC 3339 instant 5 s after the last use (last-used-at)
    local at used
    at=$(date -d "$(field idle .status.idleAt)" +%s) || return 1
    used=$(date -d "$(field idle '.metadata.annotations.sandbox\.yaoapps\.com/last-used-at')" +%s) || return 1
    [ $((at - used)) -ge 4 ] && [ $((at - used)) -le 6 ]
}
check "status.idleAt is 5 s after its last use" eventually 10 idle_at_ok
sleep_until $((t0 + 10000))
check "CLI: 10 s into the command (twice the idle timeout) the session still runs" still_in_use idle "$UID1" "$POD1"
wait $EXEC; rc=$?
check "CLI: a 15 s exec in the 5 s-idle session prints finished, exit 0" eq "$(cat "$T/idle.out")/$rc" "finished/0"
[ "$rc" = 0 ] || sed 's/^/    /' "$T/idle.err"
check "CLI: it really ran 15 s" test $(( $(now_ms) - t0 )) -ge 15000
check "CLI: the Sandbox and its workspace claim are still there, same pod" still_in_use idle "$UID1" "$POD1"
check "CLI: left unused, the session is removed (the class's 5 s are in force)" eventually 30 gone idle

go_keepalive $IDLE_CLASS bob > "$T/go-idle.out" 2>&1
check "Go client: a 15 s Exec in a 5 s-idle session finishes, same Sandbox Running" passed_go "$T/go-idle.out"
GNAME=$(name_of bob)
check "Go client: the Sandbox's workspace claim is still there" eval '[ -n "$GNAME" ] && [ -n "$(claim_of "$GNAME")" ]'
check "Go client: left unused, the session is removed" eventually 30 gone "$GNAME"

# ---- a class reclaim window of 5 s, the cap full, one waiting ------------------------------
kill_controller TERM
start_controller "$LOG" --namespace $NS --max-running 1 --idle-timeout 45m
sb rc1 carol "className: $RECLAIM_CLASS, lifecycle: session"
check "reclaim: carol's session runs" eventually 30 phase_is $NS rc1 Running
check "reclaim: status.reclaimAfter is the class's 5s, status.idleTimeout the controller's 45m" eventually 10 eval \
    '[ "$(field rc1 .status.reclaimAfter)/$(field rc1 .status.idleTimeout)" = 5s/45m ]'
UID1=$(field rc1 .metadata.uid) POD1=$(field rc1 .status.podName)
t0=$(now_ms)
"$Y" -n $NS exec rc1 -- sh -c 'sleep 15; echo finished' > "$T/rc1.out" 2>&1 &
EXEC=$!
on_exit "kill $EXEC"
sleep 1
sb wait1 dave ''
check "reclaim: dave's waits for the slot (CapacityExceeded)" eventually 10 reason_is $NS wait1 CapacityExceeded
sleep_until $((t0 + 11000))
check "CLI: 11 s into the command (past the 5 s window, dave waiting) carol's is not reclaimed" still_in_use rc1 "$UID1" "$POD1"
check "reclaim: and dave's still waits" eq "$(sandbox_phase $NS wait1)/$(sandbox_reason $NS wait1)" Pending/CapacityExceeded
wait $EXEC; rc=$?
# (exit 0, not 75: the CLI says 75 when the sandbox was stopped under the command)
check "CLI: the 15 s exec in the reclaimable session prints finished, exit 0" eq "$(cat "$T/rc1.out")/$rc" "finished/0"
check "reclaim: left unused, carol's is reclaimed and dave's runs (the window is in force)" eventually 30 eval \
    "reason_is $NS rc1 Reclaimed && phase_is $NS wait1 Running"

# The Go client: its session takes the slot once dave's and carol's are gone, then erin waits.
kubectl -n $NS delete sandbox rc1 wait1 --wait=true --timeout=60s >/dev/null
go_keepalive $RECLAIM_CLASS frank > "$T/go-reclaim.out" 2>&1 &
GOTEST=$!
on_exit "kill $GOTEST"
frank_runs() { local n; n=$(name_of frank) && [ -n "$n" ] && phase_is $NS "$n" Running; }
check "Go client: frank's reclaimable session runs" eventually 90 frank_runs
GNAME=$(name_of frank)
UID1=$(field "$GNAME" .metadata.uid) POD1=$(field "$GNAME" .status.podName)
sb wait2 erin ''
check "reclaim: erin's waits for the slot" eventually 10 reason_is $NS wait2 CapacityExceeded
# the Go test's command starts as the sandbox is ready: 9 s after that is past the window
# and well before the command ends
sleep_until $(( $(date -d "$(field "$GNAME" .status.startedAt)" +%s) * 1000 + 9000 ))
check "Go client: 9 s into its command (erin waiting) frank's is not reclaimed" still_in_use "$GNAME" "$UID1" "$POD1"
check "reclaim: and erin's still waits" eq "$(sandbox_phase $NS wait2)/$(sandbox_reason $NS wait2)" Pending/CapacityExceeded
wait $GOTEST
check "Go client: a 15 s Exec in the reclaimable session finishes, same Sandbox Running" passed_go "$T/go-reclaim.out"
check "reclaim: left unused, frank's is reclaimed and erin's runs" eventually 30 eval \
    "reason_is $NS $GNAME Reclaimed && phase_is $NS wait2 Running"
check "no Forbidden in the controller log" eval "! grep -q 'status=403\|Forbidden' '$LOG'"
finish
