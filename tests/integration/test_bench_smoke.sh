#!/usr/bin/env bash
# Benchmark smoke test (make test): bench/run at N=10, one round, against the shared plane —
# the no-controller floor, yao-sandbox and kubernetes-sigs/agent-sandbox v0.4.6 (built once
# into the component cache), plus a short exec comparison. Checks that the results JSON has
# every key for the three, that every sandbox became Ready and was deleted for both
# controllers, and that the peer's CRD is gone afterwards (its kind is also `sandboxes`:
# left installed it would capture `kubectl get sandbox`). The numbers are not asserted.
. "$(dirname "$0")/lib.sh"
OUT=$BUILD_DIR/bench-smoke.json
LOG=$BUILD_DIR/bench-smoke.log
rm -f "$OUT"
export YAO_BUILD_DIR=$BUILD_DIR
t0=$(now_ms)
"$SRC_DIR/bench/run" -n 10 --rounds 1 --idle 3 --no-docs --out "$OUT" -- \
    --pause 0.5 --exec-reps 3 --exec-tput-reps 1 --exec-bytes 10000000 >"$LOG" 2>&1
rc=$?
echo "    bench/run took $(( $(now_ms) - t0 )) ms (log: $LOG)"
check "bench/run -n 10 exits 0" eq "$rc" 0
[ "$rc" = 0 ] || tail -n 30 "$LOG" | sed 's/^/    /'

json() { python3 -c "import json,sys; d=json.load(open('$OUT')); $1" 2>&1; }
check "results JSON is written" test -s "$OUT"
check "JSON: n is 10" eq "$(json 'print(d["n"])')" 10
keys="pod_p50_ms pod_p99_ms ready_p50_ms ready_p99_ms all_ready_s all_gone_s rss_peak_kib cpu_s requests_per_sandbox idle_cpu_pct"
for who in floor ours agent_sandbox; do
    check "JSON: $who has every key" eq "$(json "print(sorted(set('$keys'.split()) - set(d['$who'])))")" "[]"
done
check "JSON: has an exec object" eq "$(json 'print(isinstance(d["exec"], dict) and "status" in d["exec"])')" True
for who in ours agent_sandbox; do
    check "$who: all 10 sandboxes became Ready" eq "$(json "print(d['$who']['runs'][0]['ready_count'])")" 10
    check "$who: all-ready time measured" eq "$(json "print(d['$who']['all_ready_s'] is not None)")" True
    check "$who: every pod, PVC and Sandbox was deleted" eq "$(json "print(d['$who']['all_gone_s'] is not None and not any(d['$who']['runs'][0]['left_over'].values()))")" True
    # (CPU is counted in 10 ms ticks: at N = 10 it may legitimately round to 0)
    check "$who: controller RSS, CPU and requests measured" eq "$(json "o = d['$who']; print(o['rss_peak_kib'] > 0 and o['requests_per_sandbox'] > 0 and o['cpu_s'] >= 0 and o['idle_cpu_pct'] >= 0)")" True
done
check "the controllers' request counts include at least their PVC and pod creates" eq "$(json "print(all(d[w]['requests_per_sandbox'] >= 2 for w in ('ours', 'agent_sandbox')))")" True
check "the benchmark's cluster-admin bindings are removed" eq "$(kubectl get clusterrolebinding yao-bench-ours yao-bench-agent-sandbox --ignore-not-found -o name)" ""
check "floor: all 10 pods became Ready" eq "$(json "print(d['floor']['runs'][0]['ready_count'])")" 10
check "the agent-sandbox CRD is removed afterwards" eq "$(kubectl get crd sandboxes.agents.x-k8s.io --ignore-not-found -o name)" ""
sandbox_group() { kubectl get sandbox -A -v=6 2>&1 | grep -o '/apis/[a-z.-]*/v1alpha1/sandboxes' | head -n 1; }
check "kubectl get sandbox still means sandbox.yaoapps.com" eq "$(sandbox_group)" "/apis/sandbox.yaoapps.com/v1alpha1/sandboxes"
echo "    exec: $(json 'e = d["exec"]; print(e["status"] if e["status"] != "ok" else "%s: true p50 %s ms vs kubectl %s ms" % (e["client"], e["true_p50_ms_ours"], e["true_p50_ms_kubectl"]))')"
finish
