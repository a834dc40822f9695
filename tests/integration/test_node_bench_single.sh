#!/usr/bin/env bash
# Benchmark smoke test of the single starts on the real node (scenario g, real-node-single):
# bench/run at K = 1, the floor and yao-sandbox only, on the running plane (--no-up). Checks
# that each kind (create, wake after an idle stop, resume) was measured for both with real
# numbers, that a return to a warm-idle sandbox (wake-warm: the pod kept, its CPU resized in
# place) was measured with its first exec answered and no restart, that the wake's Sandbox was stopped by its idle timeout (reason Idle), that the
# node's logs were read (containerd's RunPodSandbox and StartContainer, the kubelet's
# observed running time, our controller's "pod created"), that the kwok nodes are
# schedulable again and the real node cordoned as before, and that nothing of the run is
# left. The values are not compared with the targets.
. "$(dirname "$0")/lib.sh"
OUT=$BUILD_DIR/bench-single-smoke.json
LOG=$BUILD_DIR/bench-single-smoke.log
rm -f "$OUT"
export YAO_BUILD_DIR=$BUILD_DIR
cordoned() { kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.spec.unschedulable}{" "}{end}'; }
before=$(cordoned)
t0=$(now_ms)
"$SRC_DIR/bench/run" --no-up --scenario real-node-single --rounds 1 --no-docs --out "$OUT" -- \
    --single-k 1 --only floor,ours --no-merge >"$LOG" 2>&1
rc=$?
echo "    bench/run took $(( $(now_ms) - t0 )) ms (log: $LOG)"
check "bench/run --scenario real-node-single (K = 1) exits 0" eq "$rc" 0
[ "$rc" = 0 ] || tail -n 30 "$LOG" | sed 's/^/    /'

json() { python3 -c "import json,sys; d=json.load(open('$OUT')); s=d['scenarios']['real-node-single']; $1" 2>&1; }
check "results JSON is written with only this scenario" eq "$(json 'print(sorted(d["scenarios"]))')" "['real-node-single']"
check "it ran on local-path, K = 1" eq "$(json 'print(s["storage_class"], s["k"])')" "local-path 1"
# Ready after its pod: the bench sees the pod and the Sandbox on two watch streams, which
# may deliver a few ms out of order (seen: the Sandbox's Ready 2 ms before the pod's on the
# bench's side, while the controller wrote it after its own cache had the pod Ready); a
# Sandbox Ready more than 100 ms before its pod is a wrong status, and fails.
for kind in create wake resume; do
    for who in floor ours; do
        check "$kind/$who: ok, one start, Ready after its pod" eq "$(json "o = s['kinds']['$kind']['$who']; x = o['samples'][0]; \
print(o['status'], o['count'], 0 < x['pod_ms'] <= x['pod_ready_ms'] <= x['ready_ms'] + 100)")" "ok 1 True"
        check "$kind/$who: containerd's sandbox and container start and the kubelet's running time found" eq \
            "$(json "x = s['kinds']['$kind']['$who']['samples'][0]; \
print(all(x.get(k) is not None for k in ('cri_sandbox_start_ms', 'cri_sandbox_done_ms', 'cri_start_done_ms', 'kubelet_running_ms')))")" True
    done
    check "$kind: ours / floor computed" eq "$(json "print(s['kinds']['$kind']['ratio'] > 0)")" True
    check "$kind/ours: the controller's pod-created line found" eq \
        "$(json "print(s['kinds']['$kind']['ours']['samples'][0].get('controller_pod_created_ms') is not None)")" True
done
check "wake-warm/ours: ok, one return to a warm-idle sandbox: Ready, its exec answered, no restart" eq "$(json "o = s['kinds']['wake-warm']['ours']; x = o['samples'][0]; \
print(o['status'], o['count'], 0 < x['ready_ms'], 0 < x['first_exec_ms'], x['exec_ok'], x['restart_count'])")" "ok 1 True True True 0"
check "wake/ours: the first command after the cold wake answered, and compared" eq "$(json "print(s['kinds']['wake']['ours']['samples'][0]['first_exec_rt_ms'] > 0, \
s['kinds']['wake-warm']['first_command_vs_cold'] > 0)")" "True True"
check "wake-warm/floor: ok, one restart on the claim" eq "$(json "print(s['kinds']['wake-warm']['floor']['status'])")" ok
check "wake-warm: compared with ours' cold wake" eq "$(json "print(s['kinds']['wake-warm']['vs_cold_wake'] > 0)")" True
check "no SandboxClass of the run is left" eq "$(kubectl get sandboxclass -o name | grep -c 'yao-bench-single' || true)" 0
check "the wake followed a stop by the idle timeout" eq "$(json 'print(s["stop_reasons"])')" "['Idle']"
check "the create was measured on a fresh claim (floor: claim Bound seen)" eq \
    "$(json "print(s['kinds']['create']['floor']['samples'][0].get('bound_ms', 0) > 0)")" True
check "report.py renders the scenario's row" eq "$(python3 "$SRC_DIR/bench/report.py" "$OUT" | grep -c '^| g real-node-single | K = 1 |')" 1
check "nodes cordoned as before the run" eq "$(cordoned)" "$before"
# (the bench deletes its namespaces and does not wait: the namespace controller empties them)
bench_ns_gone() { local ns; ns=$(kubectl get ns -o name) || return 1; ! grep -q yao-bench-single <<<"$ns"; }
check "no benchmark namespace is left (their deletion ends)" eventually 120 bench_ns_gone
check "the benchmark's cluster-admin bindings are removed" eq "$(kubectl get clusterrolebinding yao-bench-ours yao-bench-agent-sandbox --ignore-not-found -o name)" ""
finish
