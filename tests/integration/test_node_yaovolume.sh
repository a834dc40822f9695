#!/usr/bin/env bash
# The Go Volume (clients/go/yaovolume: Yao's Volume method set over the workspaces) against
# real containers on the real node:
#   - a running Sandbox: every method, containment (.., absolute paths, links out made by
#     the sandbox), odd and unicode names, a 200 MB file streamed, SyncPush/SyncPull with
#     excludes, sub-path and deletes, cancellation mid-sync (the extraction is killed in
#     the pod), concurrent writers (TestVolumeRunningOnTheRealNode);
#   - a stopped, hand-named Sandbox (found by the selectable fields): the same through the
#     helper pod (restricted, owned, idle-removed), never woken, PolicyRefuse, a client
#     with the editor role alone refused with Forbidden, and the helper removed when the
#     Sandbox is started under a sync (TestVolumeStoppedOnTheRealNode); the controller
#     holds a stopped Sandbox's pod back while a helper pod holds its claim (WorkspaceBusy);
#   - with YAO_NODE_BENCH=1 (not in make test: benchmarks are not timed tests): SyncPush against kubectl cp on the same
#     pod, a re-push after one change, ReadFile against kubectl exec cat, a stopped
#     sandbox's ListDir/ReadFile (TestVolume*BenchOnTheRealNode); the numbers are printed
#     and written to $BUILD_DIR/yaovolume-bench.txt.
# The client's ServiceAccount has yao-sandbox-editor plus a Role with pods create/delete
# (the helper); a second one has the editor role only.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-yaovolume
LOG=$BUILD_DIR/test-node-yaovolume.log
: > "$LOG"
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
check "go toolchain present ($GO)" test -x "$GO"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

kubectl -n $NS create serviceaccount yao >/dev/null
kubectl -n $NS create rolebinding yao-editor --clusterrole=yao-sandbox-editor --serviceaccount=$NS:yao >/dev/null
kubectl -n $NS create role yao-volume-helper --verb=create,delete,get --resource=pods >/dev/null
kubectl -n $NS create rolebinding yao-volume-helper --role=yao-volume-helper --serviceaccount=$NS:yao >/dev/null
kubectl -n $NS create serviceaccount editor-only >/dev/null
kubectl -n $NS create rolebinding editor-only --clusterrole=yao-sandbox-editor --serviceaccount=$NS:editor-only >/dev/null
check "a kubeconfig with the editor role and the helper Role" sa_kubeconfig "$WORK/yao.kubeconfig" yao $NS
check "a kubeconfig with the editor role only" sa_kubeconfig "$WORK/editor.kubeconfig" editor-only $NS
check "the editor alone may not create pods" eq "$(kubectl -n $NS auth can-i create pods --as system:serviceaccount:$NS:editor-only)" no

kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: yao-sb-vol-run}
spec: {userID: vol, chatID: run, lifecycle: persistent}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: stopped-workspace}
spec: {userID: vol, chatID: "Stopped Chat", lifecycle: persistent}
YAML
for sb in yao-sb-vol-run stopped-workspace; do
    check "sandbox $sb runs on the real node" eventually 120 phase_is $NS $sb Running
done

# go_test NAME REGEXP — one Go test, its verdict as a check.
# VOLUME_TESTS=REGEXP runs only the Go tests it matches.
go_test() {
    local name=$1 re=$2
    if [ -n "${VOLUME_TESTS:-}" ] && ! [[ $re =~ $VOLUME_TESTS ]]; then return 0; fi
    (cd "$SRC_DIR/clients/go" && env YAO_NODE_KUBECONFIG="$WORK/yao.kubeconfig" YAO_NODE_EDITOR_KUBECONFIG="$WORK/editor.kubeconfig" \
        YAO_NODE_NAMESPACE=$NS YAO_NODE_HELPER_IMAGE="$NODE_SANDBOX_IMAGE" \
        YAO_NODE_RUNNING_SESSION=vol/run YAO_NODE_STOPPED_SESSION="vol/Stopped Chat" \
        YAO_NODE_BENCH="$BENCH" YAO_NODE_BENCH_OUT="$BUILD_DIR/yaovolume-bench.txt" \
        "$GO" test -count=1 -timeout 900s -run "^$re\$" -v ./yaovolume/ > "$WORK/go.out" 2>&1)
    grep -E "^(---|    |=== RUN)|BENCH" "$WORK/go.out" | grep -v "^=== RUN" | head -60
    check "$name" grep -q -- "--- PASS: $re " "$WORK/go.out"
    grep -q -- "--- PASS: $re " "$WORK/go.out" || tail -30 "$WORK/go.out"
}
BENCH=$([ "${YAO_NODE_BENCH:-0}" = 1 ] && echo 1)
: > "$BUILD_DIR/yaovolume-bench.txt"
go_test "Volume on a running sandbox: every method, containment, odd names, 200 MB, cancel, concurrent writers" TestVolumeRunningOnTheRealNode
go_test "Volume on a stopped sandbox: the helper pod, never woken, Forbidden without pods/create, started under a sync" TestVolumeStoppedOnTheRealNode
if [ -n "$BENCH" ]; then
    go_test "Volume benchmarks: SyncPush vs kubectl cp, re-push, ReadFile vs kubectl exec cat" TestVolumeBenchOnTheRealNode
    go_test "Volume benchmarks: a stopped sandbox's ListDir and ReadFile" TestVolumeStoppedBenchOnTheRealNode
fi
# The controller's side of the guard: a Sandbox started while a helper pod holds its
# workspace gets no pod until the helper has ended (Creating/WorkspaceBusy), then runs.
SB=stopped-workspace
kubectl -n $NS patch sandbox $SB --type merge -p '{"spec":{"paused":true}}' >/dev/null
check "WorkspaceBusy: the sandbox is stopped (paused)" eventually 60 eval \
    "phase_is $NS $SB Stopped && ! kubectl -n $NS get pod \$(kubectl -n $NS get sandbox $SB -o jsonpath='{.status.podName}') >/dev/null 2>&1"
SBUID=$(kubectl -n $NS get sandbox $SB -o jsonpath='{.metadata.uid}')
CLAIM=$(kubectl -n $NS get sandbox $SB -o jsonpath='{.status.workspaceClaim}')
kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: yao-vol-$SBUID
  labels: {app.kubernetes.io/component: volume-helper}
  ownerReferences: [{apiVersion: sandbox.yaoapps.com/v1alpha1, kind: Sandbox, name: $SB, uid: $SBUID}]
spec:
  automountServiceAccountToken: false
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: volume
    image: $NODE_SANDBOX_IMAGE
    command: [sleep, "600"]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts: [{name: workspace, mountPath: /workspace}]
  volumes: [{name: workspace, persistentVolumeClaim: {claimName: $CLAIM}}]
YAML
check "WorkspaceBusy: a helper pod holds the stopped sandbox's claim" eventually 60 eval \
    "[ \"\$(kubectl -n $NS get pod yao-vol-$SBUID -o jsonpath='{.status.phase}')\" = Running ]"
kubectl -n $NS patch sandbox $SB --type merge -p '{"spec":{"paused":false}}' >/dev/null
check "WorkspaceBusy: started, it waits (Creating, reason WorkspaceBusy)" eventually 30 reason_is $NS $SB WorkspaceBusy
sleep 3
POD=$(kubectl -n $NS get sandbox $SB -o jsonpath='{.status.podName}')
check "WorkspaceBusy: 3 s on, still no sandbox pod on the claim" eval \
    "reason_is $NS $SB WorkspaceBusy && ! kubectl -n $NS get pod $POD >/dev/null 2>&1"
kubectl -n $NS delete pod yao-vol-$SBUID --grace-period=0 --force >/dev/null 2>&1
check "WorkspaceBusy: the helper gone, the sandbox runs" eventually 120 phase_is $NS $SB Running
check "no helper pod is left" eq "$(kubectl -n $NS get pods -l app.kubernetes.io/component=volume-helper -o name 2>/dev/null | grep -c .)" 0
cat "$BUILD_DIR/yaovolume-bench.txt"
finish
