#!/usr/bin/env bash
# The Go client (clients/go) against real containers on the real node, as the
# yao-sandbox-editor role only (which may read pods/log):
#   - Logs: the container's output, tail, byte limit, timestamps, follow (new lines as
#     they are printed; ending the context ends it), a stopped sandbox's NotReadyError
#     (clients/go/sandbox/logs_node_test.go);
#   - ending an Exec ends its processes (clients/go/sandbox/cancel_it_test.go): a
#     cancelled context, a Timeout, a command that ignores SIGTERM (SIGKILL after the
#     grace), KeepRunning (the process outlives the stream: what happens without the
#     kill), counted by a second exec in the container's own /proc — on the project's
#     sandbox image (GNU tools) and on a busybox-only image.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-goclient
LOG=$BUILD_DIR/test-node-goclient.log
: > "$LOG"
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
check "go toolchain present ($GO)" test -x "$GO"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

kubectl -n $NS create serviceaccount go-client >/dev/null
kubectl -n $NS create rolebinding go-client --clusterrole=yao-sandbox-editor --serviceaccount=$NS:go-client >/dev/null
check "a kubeconfig with the editor role only" sa_kubeconfig "$WORK/client.kubeconfig" go-client $NS
check "the editor may read pods/log" eq "$(kubectl -n $NS auth can-i get pods/log --as system:serviceaccount:$NS:go-client)" yes

# A busybox-only image (no GNU tools): FROM scratch + static busybox.
bb=$(buildah from scratch)
buildah copy "$bb" /bin/busybox /bin/busybox >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox mkdir -p /usr/bin /sbin /usr/sbin /tmp /workspace >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox --install -s >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/sh -c 'chmod 1777 /tmp; chown 1000:1000 /workspace' >/dev/null
buildah commit -q "$bb" localhost/yao-sandbox/busybox-goclient:1 >/dev/null
buildah rm "$bb" >/dev/null
check "a busybox-only image is pushed to the plane's registry" node_image yao-sandbox/busybox-goclient:1 localhost/yao-sandbox/busybox-goclient:1

sed "s#@REGISTRY@#$NODE_REGISTRY#" <<'YAML' | kubectl -n $NS apply -f - >/dev/null
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: logs}
spec:
  userID: go-user
  chatID: logs
  lifecycle: persistent
  image: "@REGISTRY@/yao-sandbox/busybox-goclient:1"
  command: [/bin/sh, -c, 'echo line 1; echo line 2; echo line 3; i=0; while :; do i=$((i + 1)); echo "tick $i"; sleep 1; done']
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: box}
spec: {userID: go-user, chatID: box, lifecycle: persistent}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: bb}
spec: {userID: go-user, chatID: bb, lifecycle: persistent, image: "@REGISTRY@/yao-sandbox/busybox-goclient:1"}
YAML
for sb in logs box bb; do
    check "sandbox $sb runs on the real node" eventually 120 phase_is $NS $sb Running
done
sleep 2   # a few ticks in the log

# go_test NAME REGEXP ENV... — one Go test, its verdict as a check.
go_test() {
    local name=$1 re=$2; shift 2
    (cd "$SRC_DIR/clients/go" && env YAO_NODE_KUBECONFIG="$WORK/client.kubeconfig" YAO_NODE_NAMESPACE=$NS "$@" \
        "$GO" test -count=1 -timeout 300s -run "^$re\$" -v ./sandbox/ > "$WORK/go.out" 2>&1)
    grep -E "^(---|    )" "$WORK/go.out" | head -20
    check "$name" grep -q -- "--- PASS: $re" "$WORK/go.out"
    grep -q -- "--- PASS: $re" "$WORK/go.out" || tail -20 "$WORK/go.out"
}
go_test "Go Logs: all, tail, limit, timestamps, follow, a stopped sandbox" TestLogsOnTheRealNode YAO_NODE_LOG_SANDBOX=logs
go_test "Go Exec: cancel, timeout and TERM-ignoring commands end with their processes (sandbox image)" \
    TestExecCancelOnTheRealNode YAO_NODE_SANDBOX=box
go_test "Go Exec: the same on a busybox-only image" TestExecCancelOnTheRealNode YAO_NODE_SANDBOX=bb
finish
