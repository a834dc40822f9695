#!/usr/bin/env bash
# Warm-idle on the real node (Kubernetes >= 1.33: the pods/resize subresource): a class with
# spec.warmIdle keeps an idle sandbox's pod with its CPU resized down in place instead of
# stopping it. A long-running Sandbox (idle limit 24 x 1 s) goes Running -> WarmIdle: the same
# pod (uid, restartCount 0), its CPU request and limit at the floor as the kubelet reports
# them, the files kept; a touch resizes it back up (same pod) and the first exec answers;
# left alone past the window it is stopped (pod gone, claim kept) and a touch makes a new pod
# with the files. A controller restart while warm-idle changes nothing (no duplicate pod,
# no resize sent again) and a touch then wakes it. A session past its window is removed.
# Caps: with --max-running 1 and the class's reclaim, a waiting Sandbox gets the warm-idle
# one's slot. Measured: warm wake (touch -> the CPU back up as the kubelet reports it, then
# the first exec's round trip) against a cold wake (touch -> Running, then the first exec).
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-warm
LOG=$BUILD_DIR/test-node-warmidle.log
: > "$LOG"
CLI=$BUILD_DIR/bin/yao-sandbox
install_manifests
fresh_namespace $NS
check "the API server serves pods/resize (Kubernetes >= 1.33)" eval \
    "kubectl get --raw /api/v1 | grep -q '\"pods/resize\"'"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-warm}
spec: {warmIdle: {cpu: 50m, window: 25s}, resources: {cpu: {default: 500m}}}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-warm-reclaim}
spec: {warmIdle: {cpu: 50m, window: 10m}, reclaim: {idleAfter: 1h}, resources: {cpu: {default: 500m}}}
YAML
on_exit "kubectl delete sandboxclass yao-it-warm yao-it-warm-reclaim --ignore-not-found"
start_controller "$LOG" --namespace $NS --max-running 0

sandbox() { # name lifecycle idle class
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: warm, chatID: %s, lifecycle: %s, idleTimeout: %s, className: %s}\n' \
        "$1" "$1" "$2" "$3" "$4" | kubectl -n $NS apply -f - >/dev/null
}
field() { kubectl -n $NS get sandbox "$1" -o jsonpath="{$2}" 2>/dev/null; }
podf() { kubectl -n $NS get pod "$1" -o jsonpath="$2" 2>/dev/null; }   # $2: a jsonpath with its braces
gone() { ! kubectl -n $NS get sandbox "$1" >/dev/null 2>&1; }
# the CPU limit the pod's spec asks / the kubelet gives the sandbox container
spec_cpu() { podf "$1" '{.spec.containers[0].resources.limits.cpu}'; }
given_cpu() { podf "$1" '{.status.containerStatuses[0].resources.limits.cpu}'; }
cpu_is() { [ "$(spec_cpu "$1")" = "$2" ] && [ "$(given_cpu "$1")" = "$2" ]; }
# the container's CFS quota as the kernel has it (cgroup v1 on this node; v2 elsewhere)
quota() { kubectl -n $NS exec "$1" -- sh -c 'cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d" " -f1 /sys/fs/cgroup/cpu.max' 2>/dev/null; }
warm() { reason_is $NS "$1" WarmIdle; }
ms() { echo $(( $(now_ms) - $1 )); }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

# --- Running -> warm-idle ------------------------------------------------------------------------
sandbox lr long-running 1s yao-it-warm
check "the long-running sandbox runs" eventually 90 phase_is $NS lr Running
POD=$(field lr .status.podName)
UID0=$(podf "$POD" '{.metadata.uid}')
check "  at the spec's CPU (500m)" eventually 10 cpu_is "$POD" 500m
MEM0=$(podf "$POD" '{.spec.containers[0].resources.limits.memory}/{.spec.containers[0].resources.requests.memory}')
# A plain exec: touches nothing.
kubectl -n $NS exec "$POD" -- sh -c 'echo keep-me > /workspace/keep.txt'
check "idle past 24 x 1 s: WarmIdle" eventually 60 warm lr
check "  phase Running, Ready True, status.warmIdleSince set" eval \
    '[ "$(field lr .status.phase)/$(field lr ".status.conditions[?(@.type==\"Ready\")].status")" = Running/True ] && [ -n "$(field lr .status.warmIdleSince)" ]'
check "  the same pod (uid), restartCount 0" eval \
    '[ "$(podf "$POD" "{.metadata.uid}")" = "$UID0" ] && [ "$(podf "$POD" "{.status.containerStatuses[0].restartCount}")" = 0 ]'
check "  its CPU resized down to 50m (the pod's spec and the kubelet)" eventually 30 cpu_is "$POD" 50m
check "  in the kernel: CFS quota 5000 us per 100 ms" eventually 20 eval '[ "$(quota "$POD")" = 5000 ]'
echo "    requests.cpu now: $(podf "$POD" '{.spec.containers[0].resources.requests.cpu}'), memory limit: $(podf "$POD" '{.spec.containers[0].resources.limits.memory}')"
check "  memory kept as it was ($MEM0)" eq "$(podf "$POD" '{.spec.containers[0].resources.limits.memory}/{.spec.containers[0].resources.requests.memory}')" "$MEM0"
check "  the files kept" eq "$(kubectl -n $NS exec "$POD" -- cat /workspace/keep.txt)" keep-me
# (read whole, then searched: a `kubectl | grep -q` pipe under pipefail fails whenever grep
# has quit before kubectl's last write — SIGPIPE — which a loaded machine makes likely)
wide() { local out; out=$(kubectl -n $NS get ysb lr -o wide) || return 1
    grep -q WarmIdle <<<"$out" && head -1 <<<"$out" | grep -q WARM-IDLE-SINCE; }
check "  kubectl get ysb -o wide shows WarmIdle and the time" wide
check "  an Event WarmIdle" eventually 10 eval \
    "kubectl -n $NS get events --field-selector involvedObject.name=lr,reason=WarmIdle -o name | grep -q ."

# --- a touch wakes it in place (measured) -------------------------------------------------------
WARM_UP=() WARM_EXEC=()
for run in 1 2 3; do
    [ "$run" = 1 ] || check "warm-idle again (run $run)" eventually 60 eval "warm lr && cpu_is $POD 50m"
    t0=$(now_ms)
    "$CLI" -n $NS touch lr >/dev/null
    check "touch: the CPU back up to 500m (run $run)" eventually 30 cpu_is "$POD" 500m
    up=$(ms "$t0")
    t1=$(now_ms)
    out=$("$CLI" -n $NS exec lr -- cat /workspace/keep.txt)
    ex=$(ms "$t1")
    check "  the first exec answers, the files there" eq "$out" keep-me
    WARM_UP+=("$up") WARM_EXEC+=("$ex")
    echo "    warm wake $run: touch -> CPU back ${up} ms, first exec ${ex} ms"
done
check "woken: CFS quota back to 50000 us (500m)" eventually 20 eval '[ "$(quota "$POD")" = 50000 ]'
check "woken: the same pod, restartCount 0, PodReady, no warmIdleSince" eval \
    '[ "$(podf "$POD" "{.metadata.uid}")" = "$UID0" ] && [ "$(podf "$POD" "{.status.containerStatuses[0].restartCount}")" = 0 ] && reason_is $NS lr PodReady && [ -z "$(field lr .status.warmIdleSince)" ]'
check "  an Event WarmIdleWoken" eventually 10 eval \
    "kubectl -n $NS get events --field-selector involvedObject.name=lr,reason=WarmIdleWoken -o name | grep -q ."

# --- a controller restart while warm-idle --------------------------------------------------------
check "warm-idle again" eventually 60 eval "warm lr && cpu_is $POD 50m"
kill_controller TERM
resized_before=$(grep -c 'msg="pod resized"' "$LOG")
start_controller "$LOG" --namespace $NS --max-running 0
sleep 5
check "after a controller restart: still warm-idle, the same pod, the only one" eval \
    "warm lr && [ \"\$(podf $POD '{.metadata.uid}')\" = $UID0 ] && [ \"\$(kubectl -n $NS get pods -l sandbox.yaoapps.com/name=lr -o name | wc -l)\" = 1 ] && cpu_is $POD 50m"
check "  and no resize sent again" eq "$(grep -c 'msg="pod resized"' "$LOG")" "$resized_before"
"$CLI" -n $NS touch lr >/dev/null
check "  a touch then wakes it (CPU back, same pod)" eventually 30 eval "cpu_is $POD 500m && [ \"\$(podf $POD '{.metadata.uid}')\" = $UID0 ]"

# --- past the window: stopped, claim kept; a touch makes a new pod (measured) -------------------
COLD_UP=() COLD_EXEC=()
for run in 1 2; do
    check "left alone past the window: Stopped (run $run)" eventually 120 phase_is $NS lr Stopped
    check "  the pod gone, the claim kept" eval \
        "! kubectl -n $NS get pod $POD >/dev/null 2>&1 && kubectl -n $NS get pvc \"\$(field lr .status.workspaceClaim)\" >/dev/null"
    t0=$(now_ms)
    "$CLI" -n $NS touch lr >/dev/null
    check "  a touch: a new pod, Running (run $run)" eventually 90 phase_is $NS lr Running
    up=$(ms "$t0")
    t1=$(now_ms)
    out=$("$CLI" -n $NS exec lr -- cat /workspace/keep.txt)
    ex=$(ms "$t1")
    check "  with the files" eq "$out" keep-me
    check "  a new pod at the spec's CPU" eval "[ \"\$(podf $POD '{.metadata.uid}')\" != $UID0 ] && cpu_is $POD 500m"
    COLD_UP+=("$up") COLD_EXEC+=("$ex")
    echo "    cold wake $run: touch -> Running ${up} ms, first exec ${ex} ms"
done

# --- a session past its window is removed ---------------------------------------------------------
sandbox sess session 3s yao-it-warm
check "a session runs" eventually 90 phase_is $NS sess Running
check "  goes warm-idle after 3 s" eventually 30 warm sess
check "  and is removed once the window (25 s) is over" eventually 60 gone sess

# --- caps: the warm-idle one gives its slot to a waiting one -----------------------------------
kill_controller TERM
kubectl -n $NS delete sandbox lr --wait=false >/dev/null
check "lr gone" eventually 60 eval "gone lr && ! kubectl -n $NS get pod $POD >/dev/null 2>&1"
start_controller "$LOG" --namespace $NS --max-running 1
sandbox c1 session 3s yao-it-warm-reclaim
check "c1 runs (the one slot)" eventually 90 phase_is $NS c1 Running
check "  goes warm-idle" eventually 30 warm c1
sandbox c2 session 10m yao-it-warm-reclaim
check "c2 waiting for the cap gets the warm-idle one's slot (reclaimed) and runs" eventually 120 phase_is $NS c2 Running
check "  c1 was reclaimed (Event Reclaimed)" eval \
    "kubectl -n $NS get events --field-selector involvedObject.name=c1,reason=Reclaimed -o name | grep -q ."

wu=$(echo "${WARM_UP[*]}" | median); we=$(echo "${WARM_EXEC[*]}" | median)
cu=$(echo "${COLD_UP[*]}" | median); ce=$(echo "${COLD_EXEC[*]}" | median)
echo "    MEASURED warm wake (touch -> CPU back, as the kubelet reports it): ${WARM_UP[*]} ms, median $wu; first exec ${WARM_EXEC[*]} ms, median $we"
echo "    MEASURED cold wake (touch -> Running, new pod): ${COLD_UP[*]} ms, median $cu; first exec ${COLD_EXEC[*]} ms, median $ce"
echo "    MEASURED warm / cold (touch to first exec answered): $((wu + we)) / $((cu + ce)) ms"
finish
