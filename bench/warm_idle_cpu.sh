#!/usr/bin/env bash
# bench/warm_idle_cpu.sh — the CPU of warm-idle sandboxes as metrics-server reports it
# (docs/benchmarks.md, issue 36 item 3), on a plane with the real node (tests/cluster/up
# --real-node, which runs metrics-server): a class with warmIdle {cpu: 50m} over a 500m
# spec, two session sandboxes, one idle and one running a busy loop started before its
# idle deadline (the class counts no activity, so it goes warm-idle all the same and is held
# at the floor). Prints, every 15 s for 2 minutes, each pod's CPU limit and its
# metrics.k8s.io usage. Usage: YAO_BUILD_DIR=build bench/warm_idle_cpu.sh
. "$(cd "$(dirname "$0")/.." && pwd)/tests/integration/lib.sh"
use_real_node
NS=yao-measure-warm
LOG=$BUILD_DIR/bench-warm-idle-cpu.log
: > "$LOG"
install_manifests
fresh_namespace $NS
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-measure-warm}
spec: {warmIdle: {cpu: 50m, window: 30m}, resources: {cpu: {default: 500m}}}
YAML
on_exit "kubectl delete sandboxclass yao-measure-warm --ignore-not-found"
start_controller "$LOG" --namespace $NS --max-running 0
for n in idle spin; do
  printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: m, chatID: %s, lifecycle: session, idleTimeout: 20s, className: yao-measure-warm}\n' $n $n | kubectl -n $NS apply -f - >/dev/null
done
eventually 120 eval 'phase_is $NS idle Running && phase_is $NS spin Running' || { echo "not running"; exit 1; }
kubectl -n $NS exec "$(kubectl -n $NS get sandbox spin -o jsonpath='{.status.podName}')" -- sh -c 'nohup sh -c "while :; do :; done" >/dev/null 2>&1 &' 
eventually 90 eval 'reason_is $NS idle WarmIdle && reason_is $NS spin WarmIdle' || { echo "not warm"; exit 1; }
echo "warm-idle: $(date -u +%T)"
for i in $(seq 1 8); do
  sleep 15
  for n in idle spin; do
    pod=$(kubectl -n $NS get sandbox $n -o jsonpath='{.status.podName}')
    m=$(kubectl get --raw /apis/metrics.k8s.io/v1beta1/namespaces/$NS/pods/$pod 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["timestamp"], d["window"], " ".join(c["name"]+"="+c["usage"]["cpu"] for c in d["containers"]))' 2>/dev/null)
    lim=$(kubectl -n $NS get pod $pod -o jsonpath='{.status.containerStatuses[0].resources.limits.cpu}')
    echo "$n limit=$lim $m"
  done
done
finish
