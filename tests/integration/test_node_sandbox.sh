#!/usr/bin/env bash
# Sandboxes as real containers on the real node (kubelet + containerd + runc): the pod runs
# the project's sandbox image pulled from the plane's registry, on the real node with a pod IP
# from the CNI bridge; the workspace is writable as uid 1000 and a file written there
# survives pod deletion, pause -> resume and an idle stop -> wake; the container runs with
# uid 1000, no service-account token, seccomp RuntimeDefault and no capabilities; the CPU
# limit is a CFS quota and the memory limit a cgroup limit; a main process that outgrows its
# memory is OOMKilled and the Sandbox says so; session idle removal and a one-shot run.
# Defects the real node showed (each check fails without its fix): the idle clock starts at
# first Ready (an image that cannot be pulled is not removed as Idle), pull and scheduling
# failures are named in status, the default image is pulled from the plane's registry, default
# sandboxes are sized so several fit on a 2-CPU node. The workspaces are on local-path
# (WaitForFirstConsumer, no expansion, reclaim Delete): the pod is created before its claim
# binds, the claim is provisioned for and pinned to the node the pod was scheduled to,
# growth is refused with ExpansionNotSupported, files outlive stop/start, the volume and its
# directory on the node go with the Sandbox.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-it
LOG=$BUILD_DIR/test-node-sandbox.log
: > "$LOG"
CLI=$BUILD_DIR/bin/yao-sandbox
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

sandbox() { # name lifecycle idle [extra spec yaml lines...]
    local name=$1 lc=$2 idle=$3; shift 3
    {
        printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\n' "$name"
        printf 'spec:\n  userID: node-user\n  chatID: %s\n  lifecycle: %s\n  idleTimeout: %s\n' "$name" "$lc" "$idle"
        printf '  %s\n' "$@"
    } | kubectl -n $NS apply -f - >/dev/null
}
sx() { "$CLI" -n $NS exec "$@"; }
field() { kubectl -n $NS get sandbox "$1" -o jsonpath="{$2}" 2>/dev/null; }

# --- the core: a real container, its workspace -------------------------------------------------
t0=$(now_ms)
sandbox core long-running 1h
check "Sandbox on the real node reaches Running" eventually 90 phase_is $NS core Running
echo "    create -> Running on the real node: $(($(now_ms) - t0)) ms"
POD=$(field core .status.podName)
check "the pod runs on the real node" eq "$(pod_node $NS "$POD")" "$REAL_NODE"
check "with a pod IP from the CNI bridge (10.85.0.0/16)" contains "$(field core .status.podIP)" "10.85."
check "the default image is the versioned sandbox image in the plane's registry, IfNotPresent" eq \
    "$(kubectl -n $NS get pod "$POD" -o jsonpath='{.spec.containers[0].image}/{.spec.containers[0].imagePullPolicy}')" \
    "$NODE_REGISTRY/yao-sandbox/sandbox:$IMAGE_TAG/IfNotPresent"
check "the container really runs (containerd reports it running)" eq \
    "$(kubectl -n $NS get pod "$POD" -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}' | cut -c1-2)" "20"
check "the workspace is writable as uid 1000" eq \
    "$(sx core -- sh -c 'id -u; echo keep-me > /workspace/keep.txt && cat /workspace/keep.txt' | tr '\n' ' ')" "1000 keep-me "

# pod deletion: the controller recreates it; the file is still there
uid=$(kubectl -n $NS get pod "$POD" -o jsonpath='{.metadata.uid}')
kubectl -n $NS delete pod "$POD" --wait=false >/dev/null
new_pod() { local u; u=$(kubectl -n $NS get pod "$POD" -o jsonpath='{.metadata.uid}') && [ -n "$u" ] && [ "$u" != "$uid" ] && phase_is $NS core Running; }
check "a deleted pod comes back" eventually 60 new_pod
check "  and the workspace file survived" eq "$(sx core -- cat /workspace/keep.txt)" keep-me

# pause -> resume
kubectl -n $NS patch sandbox core --type merge -p '{"spec":{"paused":true}}' >/dev/null
pod_gone() { ! kubectl -n $NS get pod "$POD" >/dev/null 2>&1; }
check "paused: phase Stopped, the pod is gone" eventually 60 sh -c "[ \"\$(kubectl -n $NS get sandbox core -o jsonpath='{.status.phase}')\" = Stopped ] && ! kubectl -n $NS get pod $POD"
kubectl -n $NS patch sandbox core --type merge -p '{"spec":{"paused":false}}' >/dev/null
check "resumed: Running again" eventually 60 phase_is $NS core Running
check "  and the workspace file survived pause -> resume" eq "$(sx core -- cat /workspace/keep.txt)" keep-me


# --- local-path: a WaitForFirstConsumer class, as on kind, k3s and most managed clusters ----
# The suite's workspaces are on local-path (rancher/local-path-provisioner, the plane's
# tests/cluster/local-path). The claim binds only after the scheduler placed the pod, so the
# pod is created at once (no wait for Bound); the provisioner's helper pod makes the volume's
# directory on the node the scheduler chose and the volume is pinned to it; growth is
# refused (the class has no allowVolumeExpansion); the files outlive stop/start; the
# volume and its directory on the node go with the Sandbox (reclaim Delete).
check "the core sandbox's workspace is on local-path (the real-node suites' default)" eq \
    "$(kubectl -n $NS get pvc "$(field core .status.workspaceClaim)" -o jsonpath='{.spec.storageClassName}')" local-path
t0=$(now_ms)
sandbox late persistent 1h "workspace: {size: 1Gi, storageClassName: local-path}"
# The first status that names the pod: the claim's phase at that moment.
CLAIM_AT_POD=
pod_named() {
    [ -n "$(field late .status.podName)" ] || return 1
    CLAIM_AT_POD=$(kubectl -n $NS get pvc "$(field late .status.workspaceClaim)" -o jsonpath='{.status.phase}')
}
check "local-path: the pod is created at once, before its claim is bound" eventually 30 pod_named
check "  (the claim was still Pending then)" eq "$CLAIM_AT_POD" Pending
check "  the sandbox runs on the real node" eventually 90 phase_is $NS late Running
echo "    create -> Running on the real node, local-path: $(($(now_ms) - t0)) ms"
LPOD=$(field late .status.podName)
LCLAIM=$(field late .status.workspaceClaim)
LPV=$(kubectl -n $NS get pvc "$LCLAIM" -o jsonpath='{.spec.volumeName}')
check "  its claim was provisioned for the node the scheduler chose" eq \
    "$(kubectl -n $NS get pvc "$LCLAIM" -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}')" "$REAL_NODE"
check "  by local-path-provisioner" eq \
    "$(kubectl get pv "$LPV" -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/provisioned-by}')" rancher.io/local-path
check "  and the volume is pinned to that node" eq \
    "$(kubectl get pv "$LPV" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')" "$REAL_NODE"
LDIR=$(kubectl get pv "$LPV" -o jsonpath='{.spec.hostPath.path}{.spec.local.path}')
check "  a directory of the plane's local-path directory on the node" eq "$(dirname "$LDIR")" "$YAO_PLANE_DIR/local-path"
check "  the workspace is writable" eq "$(sx late -- sh -c 'echo late-file > /workspace/w.txt && cat /workspace/w.txt')" late-file
check "  and what is written lands in that directory on the node, owned by uid 1000" eq \
    "$(stat -c %u "$LDIR/w.txt" 2>&1)/$(cat "$LDIR/w.txt" 2>&1)" "1000/late-file"
luid=$(kubectl -n $NS get pod "$LPOD" -o jsonpath='{.metadata.uid}')
kubectl -n $NS delete pod "$LPOD" --wait=false >/dev/null
late_back() { local u; u=$(kubectl -n $NS get pod "$LPOD" -o jsonpath='{.metadata.uid}') && [ -n "$u" ] && [ "$u" != "$luid" ] && phase_is $NS late Running; }
check "  a deleted pod comes back on the same volume" eventually 60 late_back
check "  with the file" eq "$(sx late -- cat /workspace/w.txt)" late-file

# Growth: local-path's class does not allow expansion.
ws_cond() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.status.conditions[?(@.type=="Workspace")].reason}: {.status.conditions[?(@.type=="Workspace")].message}'; }
kubectl -n $NS patch sandbox late --type merge -p '{"spec":{"workspace":{"size":"2Gi"}}}' >/dev/null
check "  a grown workspace.size is refused: Workspace ExpansionNotSupported, naming the class's rule" eventually 20 eval \
    '[ "$(ws_cond late)" = "ExpansionNotSupported: spec.workspace.size 2Gi: the claim'"'"'s StorageClass does not allow volume expansion (allowVolumeExpansion); the workspace stays 1Gi" ]'
check "  with a Warning Event ExpansionNotSupported" eventually 10 eval \
    'kubectl -n $NS get events --field-selector involvedObject.name=late,type=Warning -o jsonpath="{.items[*].reason}" | grep -q ExpansionNotSupported'
check "  the claim keeps 1Gi, the sandbox keeps running" eq \
    "$(kubectl -n $NS get pvc "$LCLAIM" -o jsonpath='{.spec.resources.requests.storage}')/$(sandbox_phase $NS late)" 1Gi/Running
kubectl -n $NS patch sandbox late --type merge -p '{"spec":{"workspace":{"size":"1Gi"}}}' >/dev/null
check "  back to 1Gi: the condition goes" eventually 20 eval '[ "$(ws_cond late)" = ": " ]'

# Stop and start: a new pod on the same volume, the files there.
"$CLI" -n $NS stop late --wait >/dev/null
check "  stopped: phase Stopped, no pod, the claim and volume kept" eq \
    "$(sandbox_phase $NS late)/$(kubectl -n $NS get pod "$LPOD" -o name 2>/dev/null)/$(kubectl -n $NS get pvc "$LCLAIM" -o jsonpath='{.status.phase}')/$(kubectl get pv "$LPV" -o jsonpath='{.status.phase}')" \
    "Stopped//Bound/Bound"
"$CLI" -n $NS start late --wait >/dev/null
check "  started again: Running" phase_is $NS late Running
check "  the file written before the stop is there" eq "$(sx late -- cat /workspace/w.txt)" late-file

# Deleted: the claim, the volume and its directory on the node go.
kubectl -n $NS delete sandbox late --wait=false >/dev/null
check "  deleting the Sandbox removes its claim" eventually 60 eval '! kubectl -n $NS get pvc "$LCLAIM" >/dev/null 2>&1'
check "  and its volume (reclaim Delete)" eventually 60 eval '! kubectl get pv "$LPV" >/dev/null 2>&1'
check "  and the volume's directory on the node (local-path's teardown helper pod)" eventually 30 test ! -e "$LDIR"
check "  and local-path's helper pods for it are gone" eventually 30 eval \
    '[ -z "$(kubectl -n local-path-storage get pods -o name 2>/dev/null | grep -F -e "-$LPV")" ]'

# --- inside the container: identity and confinement -----------------------------------------
inside=$(sx core -- sh -c 'id -u; id -g;
    [ -e /var/run/secrets/kubernetes.io/serviceaccount/token ] && echo token || echo no-token;
    grep "^Seccomp:" /proc/self/status | tr -d "\t ";
    grep "^CapEff:" /proc/self/status | tr -d "\t ";
    grep "^NoNewPrivs:" /proc/self/status | tr -d "\t "')
check "uid 1000, gid 1000 inside the container" eq "$(echo "$inside" | sed -n 1,2p | tr '\n' ' ')" "1000 1000 "
check "no service-account token file in the container" eq "$(echo "$inside" | sed -n 3p)" no-token
check "seccomp RuntimeDefault in effect (Seccomp: 2)" eq "$(echo "$inside" | sed -n 4p)" "Seccomp:2"
check "no effective capabilities" eq "$(echo "$inside" | sed -n 5p)" "CapEff:0000000000000000"
check "no_new_privs set (allowPrivilegeEscalation: false)" eq "$(echo "$inside" | sed -n 6p)" "NoNewPrivs:1"

# --- resources: limits are cgroup limits --------------------------------------------------------
sandbox sized persistent 1h 'resources: {memory: 96Mi, cpu: 250m}'
check "a sized sandbox runs" eventually 90 phase_is $NS sized Running
cg=$(sx sized -- sh -c 'cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/memory/memory.limit_in_bytes' | tr '\n' ' ')
check "cpu 250m is a CFS quota of 25000 per 100000 us, memory 96Mi a cgroup limit" eq "$cg" "25000 100000 100663296 "
SPOD=$(field sized .status.podName)
check "requests are not the limits (requests sized for density)" test \
    "$(kubectl -n $NS get pod "$SPOD" -o jsonpath='{.spec.containers[0].resources.requests.cpu}')" != 250m

# A main process that outgrows its memory limit is OOMKilled; the Sandbox says so.
sandbox hog persistent 1h 'resources: {memory: 48Mi, cpu: 500m}' \
    'command: ["sh", "-c", "sleep 1; x=$(head -c 200000000 /dev/zero | tr \"\\\\0\" a); sleep 3600"]'
oom_seen() { [ "$(field hog .status.lastTermination.reason)" = OOMKilled ] && [ "$(field hog .status.restartCount)" -ge 1 ]; }
check "an OOM-killed sandbox: status.lastTermination.reason=OOMKilled, restartCount >= 1" eventually 90 oom_seen
echo "    hog: $(field hog '.status.conditions[?(@.type=="Ready")].reason'): $(field hog '.status.conditions[?(@.type=="Ready")].message')"
check "  and its Ready condition is False with a machine-readable reason" eventually 30 sh -c \
    "kubectl -n $NS get sandbox hog -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}/{.status.conditions[?(@.type==\"Ready\")].reason}' | grep -Eq '^False/(OOMKilled|CrashLoopBackOff)$'"
check "  between the kill and the restart its Ready reason is OOMKilled (not a bare PodNotReady)" eventually 90 sh -c \
    "kubectl -n $NS get sandbox hog -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}/{.status.conditions[?(@.type==\"Ready\")].reason}' | grep -qx False/OOMKilled"
kubectl -n $NS delete sandbox hog sized --wait=false >/dev/null

# --- defects the real node showed ------------------------------------------------------------
# An image that cannot be pulled: named in status, and never removed as Idle (the idle clock
# starts at first Ready, not at pod.status.startTime).
sandbox nopull session 2s 'image: yao-sandbox/does-not-exist:0.0.1'
pull_named() { reason_is $NS nopull ErrImagePull || reason_is $NS nopull ImagePullBackOff; }
check "an image pull failure is the Ready reason (ErrImagePull/ImagePullBackOff)" eventually 60 pull_named
check "  with the kubelet's message" contains "$(field nopull '.status.conditions[?(@.type=="Ready")].message')" "does-not-exist"
sleep 6
check "  and it is not removed as Idle (6 s past a 2 s idle timeout, never Ready)" eq "$(field nopull .metadata.name)" nopull
kubectl -n $NS delete sandbox nopull --wait=false >/dev/null

# Unschedulable: named in status with the scheduler's message.
sandbox huge persistent 1h 'resources: {memory: 1Gi, cpu: "64", requests: {cpu: "64"}}'
check "a sandbox no node can hold: Ready reason Unschedulable" eventually 60 reason_is $NS huge Unschedulable
# (Eventually: while the workspace claim is still binding, the scheduler's message is about it.)
huge_message_named() { field huge '.status.conditions[?(@.type=="Ready")].message' | grep -q "Insufficient cpu"; }
check "  with the scheduler's message (Insufficient cpu)" eventually 60 huge_message_named
kubectl -n $NS delete sandbox huge --wait=false >/dev/null

# Several default sandboxes fit on the 2-CPU node (requests sized for density).
for i in 1 2 3 4 5 6; do sandbox "dense-$i" persistent 1h; done
dense_running() {
    [ "$(kubectl -n $NS get sandboxes -o jsonpath='{range .items[*]}{.metadata.name}={.status.phase}{"\n"}{end}' | grep -c '^dense-.*=Running$')" = 6 ]
}
check "six default sandboxes all run on the 2-CPU real node" eventually 120 dense_running
kubectl -n $NS delete sandbox dense-1 dense-2 dense-3 dense-4 dense-5 dense-6 --wait=false >/dev/null

# --- lifecycle on real containers -------------------------------------------------------------
# session: Running, then removed after its idle timeout, counted from first Ready.
t0=$(now_ms)
sandbox brief session 4s
# Ready happened after the last poll that did not see it: the timeout runs from there at
# the earliest (the time the poll that saw it returned can be a second late on a loaded
# machine: removal then looked 2.9 s after "Ready" for a 4 s timeout).
not_yet=$t0
brief_running() { phase_is $NS brief Running && return 0; not_yet=$(now_ms); return 1; }
check "a session sandbox runs" eventually 90 brief_running
ready_at=$(now_ms)
gone() { ! kubectl -n $NS get sandbox brief >/dev/null 2>&1; }
check "and is removed once idle for 4 s" eventually 60 gone
echo "    session: Running after $((ready_at - t0)) ms, removed $(($(now_ms) - ready_at)) ms later"
check "  not before its idle timeout ran from Ready" test $(($(now_ms) - not_yet)) -ge 3000

# long-running: stopped when idle (x24), woken by use, workspace intact.
sandbox napper long-running 1s
check "a long-running sandbox runs" eventually 90 phase_is $NS napper Running
sx napper -- sh -c 'echo nap > /workspace/nap.txt' >/dev/null
check "is stopped after 24 x its idle timeout" eventually 90 phase_is $NS napper Stopped
check "exec wakes it and the workspace file is there" eq "$(sx napper -- cat /workspace/nap.txt)" nap
check "  and it is Running again" phase_is $NS napper Running
kubectl -n $NS delete sandbox napper --wait=false >/dev/null

# one-shot: the command's exit code and output in status.run.
sandbox job one-shot 1h 'run: {command: ["sh", "-c", "echo out-$(id -u); echo err >&2; exit 3"]}'
check "a one-shot run on a real container ends Failed" eventually 90 phase_is $NS job Failed
check "  with its exit code" eq "$(field job .status.run.exitCode)" 3
check "  and its stdout" contains "$(field job .status.run.stdout)" "out-1000"
check "  and its stderr, apart" eq "$(field job .status.run.stderr)" "err"
sandbox slow one-shot 1h 'run: {command: ["sh", "-c", "echo partial; sleep 600"], timeout: 5s}'
check "a one-shot past run.timeout is stopped by the kubelet: Failed, exit code 124" eventually 120 eval '[ "$(field slow .status.phase)/$(field slow .status.run.exitCode)" = Failed/124 ]'
check "  with the output so far" eq "$(field slow .status.run.stdout)" "partial"
check "  and the reason" contains "$(field slow .status.run.stderr)" "timed out after 5s"
sandbox survivor one-shot 1h 'run: {command: ["sh", "-c", "sleep 8; echo survived; exit 4"]}'
check "a one-shot is running" eventually 90 reason_is $NS survivor RunningCommand
kill_controller KILL
sleep 12
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4
check "after a SIGKILL mid-run the result is still recorded: exit 4" eventually 60 eval '[ "$(field survivor .status.run.exitCode)" = 4 ]'
check "  with its output" eq "$(field survivor .status.run.stdout)" "survived"
sandbox cancel one-shot 1h 'run: {command: ["sleep", "3599"]}'
check "a long one-shot runs" eventually 90 reason_is $NS cancel RunningCommand
CPOD=$(field cancel .status.podName)
check "  as a process on the node" eventually 20 pgrep -x -f 'sleep 3599'
kubectl -n $NS delete sandbox cancel --wait=false >/dev/null
check "deleting its Sandbox kills the run" eventually 60 eval '! kubectl -n $NS get pod "$CPOD" >/dev/null 2>&1'
check "  and no process of it is left on the node" eventually 30 sh -c "! pgrep -x -f 'sleep 3599'"

finish
