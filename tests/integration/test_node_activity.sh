#!/usr/bin/env bash
# Activity counts as use, on the real node with metrics-server (tests/cluster/metrics-server):
# a session of a class with spec.activity.cpu whose pod is busy (a CPU loop started by a
# plain pods/exec, which touches nothing) outlives its idle deadline — last-used-at is
# refreshed once, status.lastActivity and an Event ActiveAtIdleDeadline say what was seen —
# and once the work stops it is removed at its next deadline. The same busy pod under a
# class that does not count activity is removed at its deadline. The controller reads
# metrics.k8s.io once per deadline reached (the API server's audit log counts its calls).
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-act
LOG=$BUILD_DIR/test-node-activity.log
AUDIT=$YAO_PLANE_DIR/logs/audit.log
: > "$LOG"
install_manifests
fresh_namespace $NS
check "metrics.k8s.io is served (metrics-server)" eval "kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes/$REAL_NODE >/dev/null"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-activity}
spec: {activity: {cpu: 50m}, resources: {cpu: {default: "0.5"}}}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-no-activity}
spec: {resources: {cpu: {default: "0.5"}}}
YAML
on_exit "kubectl delete sandboxclass yao-it-activity yao-it-no-activity --ignore-not-found"
audit_before=$(wc -l < "$AUDIT" 2>/dev/null || echo 0)
start_controller "$LOG" --namespace $NS --max-running 0

# 45 s: metrics-server has a sample of a new pod within about 30 s (two kubelet samples).
for s in busy:yao-it-activity plain:yao-it-no-activity; do
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: act, chatID: %s, lifecycle: session, idleTimeout: 45s, className: %s}\n' \
        "${s%%:*}" "${s%%:*}" "${s#*:}" | kubectl -n $NS apply -f - >/dev/null
done
check "both sessions run" eventually 120 eval "phase_is $NS busy Running && phase_is $NS plain Running"
pod_of() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.status.podName}'; }
# Work started the way a server drives pods: a plain exec (no touch), left in the background.
for s in busy plain; do
    kubectl -n $NS exec "$(pod_of $s)" -- sh -c 'nohup sh -c "while :; do :; done" >/dev/null 2>&1 & echo $! > /workspace/.busy.pid'
done
lu() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.metadata.annotations.sandbox\.yaoapps\.com/last-used-at}'; }
lu0=$(lu busy)
field() { kubectl -n $NS get sandbox "$1" -o jsonpath="{$2}" 2>/dev/null; }
gone() { ! kubectl -n $NS get sandbox "$1" >/dev/null 2>&1; }

check "the class without activity: the busy session is removed at its deadline" eventually 90 gone plain
check "the class counting activity: the busy session is kept past its deadline (last-used-at refreshed)" \
    eventually 30 eval '[ "$(lu busy)" != "$lu0" ] && [ -n "$(lu busy)" ]'
check "  still Running" phase_is $NS busy Running
act=$(field busy .status.lastActivity)
echo "    status.lastActivity: $act"
check "  status.lastActivity says what was seen (cpu above the threshold)" eval \
    "grep -qE '^[0-9T:-]+Z cpu=[0-9.]+m? threshold=50m( window=[0-9a-z]+)?$' <<<\"\$act\""
check "  and an Event ActiveAtIdleDeadline" eventually 10 eval \
    "kubectl -n $NS get events --field-selector involvedObject.name=busy,reason=ActiveAtIdleDeadline -o name | grep -q ."
check "  idleAt is lastUsedAt + 45 s" eventually 10 eval \
    '[ $(( $(date -d "$(field busy .status.idleAt)" +%s) - $(date -d "$(lu busy)" +%s) )) = 45 ]'
# The work ends: at the next deadline the pod is idle, and the session goes.
kubectl -n $NS exec "$(pod_of busy)" -- sh -c 'kill "$(cat /workspace/.busy.pid)"'
stopped_at=$(now_ms)
check "once the work stops, the session is removed at its next deadline" eventually 120 gone busy
echo "    removed $(( ($(now_ms) - stopped_at) / 1000 )) s after the work stopped"

# What it cost: reads of metrics.k8s.io by the controller, one per deadline reached (busy:
# 2, plain: none, its class does not count activity).
reads=$(tail -n +$((audit_before + 1)) "$AUDIT" | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    ev = json.loads(line)
    o = ev.get("objectRef", {})
    if ev["user"]["username"].endswith(":yao-sandbox-controller") and o.get("apiGroup") == "metrics.k8s.io" \
            and ev.get("stage") == "ResponseComplete" and o.get("namespace") == "'$NS'":
        n += 1
print(n)')
echo "    metrics.k8s.io reads by the controller: $reads"
check "the controller read metrics.k8s.io once per deadline reached (2; a third only if a write raced the first)" \
    test "$reads" -ge 2 -a "$reads" -le 3
finish
