#!/usr/bin/env bash
# Benchmark smoke test (make test): bench/run at N=8, one round, two scenarios (immediate and
# wffc) against the shared plane — the no-controller floor, yao-sandbox and
# kubernetes-sigs/agent-sandbox v1.0.3 (built once into the component cache), plus a short
# exec comparison. Checks that the results JSON has every key for the three in both
# scenarios with real numbers (every sandbox Ready and deleted, latencies, per-stage
# intervals, RSS/PSS/USS, requests, target ratios), and that the peer's CRD is gone
# afterwards (its kind is also `sandboxes`: left installed it would capture
# `kubectl get sandbox`). The values themselves are not compared with the targets.
. "$(dirname "$0")/lib.sh"
OUT=$BUILD_DIR/bench-smoke.json
LOG=$BUILD_DIR/bench-smoke.log
N=8
rm -f "$OUT"
export YAO_BUILD_DIR=$BUILD_DIR
t0=$(now_ms)
"$SRC_DIR/bench/run" --scenario immediate,wffc -n $N --rounds 1 --idle 2 --no-docs --out "$OUT" -- \
    --pause 0.5 --exec-reps 3 --exec-tput-reps 1 --exec-bytes 10000000 >"$LOG" 2>&1
rc=$?
echo "    bench/run took $(( $(now_ms) - t0 )) ms (log: $LOG)"
check "bench/run --scenario immediate,wffc -n $N exits 0" eq "$rc" 0
[ "$rc" = 0 ] || tail -n 30 "$LOG" | sed 's/^/    /'

json() { python3 -c "import json,sys; d=json.load(open('$OUT')); $1" 2>&1; }
check "results JSON is written" test -s "$OUT"
check "JSON: n is $N" eq "$(json 'print(d["n"])')" $N
check "JSON: the peer is agent-sandbox v1.0.3" eq "$(json 'print(d["peer_version"])')" v1.0.3
check "JSON: scenarios immediate and wffc" eq "$(json 'print(sorted(d["scenarios"]))')" "['immediate', 'wffc']"
check "JSON: wffc ran on yao-test-wffc" eq "$(json 'print(d["scenarios"]["wffc"]["storage_class"])')" yao-test-wffc
keys="pod_p50_ms pod_p99_ms ready_p50_ms ready_p99_ms all_ready_s all_gone_s rss_peak_kib cpu_s requests_per_sandbox idle_cpu_pct pss_peak_kib uss_peak_kib pss_rest_kib uss_rest_kib"
for who in floor ours agent_sandbox; do
    check "JSON: $who has every key" eq "$(json "print(sorted(set('$keys'.split()) - set(d['$who'])))")" "[]"
done
check "JSON: has an exec object" eq "$(json 'print(isinstance(d["exec"], dict) and "status" in d["exec"])')" True
for sc in immediate wffc; do
    S="d['scenarios']['$sc']"
    check "$sc: peer_version and n recorded" eq "$(json "print($S['peer_version'], $S['n'])")" "v1.0.3 $N"
    for who in floor ours agent_sandbox; do
        check "$sc/$who: run ok, all $N sandboxes became Ready" eq \
            "$(json "o = $S['$who']; print(o['status'], o['runs'][0]['ready_count'])")" "ok $N"
        check "$sc/$who: ready p50 <= p99, both > 0; all-ready and all-gone measured" eq "$(json "o = $S['$who']; \
print(0 < o['ready_p50_ms'] <= o['ready_p99_ms'] and o['all_ready_s'] > 0 and o['all_gone_s'] is not None)")" True
        check "$sc/$who: every stage of the profile was seen for every sandbox" eq "$(json "p = $S['$who']['runs'][0]['profile']; \
print([k for k in ('pvc_bound', 'pod_exists', 'pod_scheduled', 'pod_ready', 'sandbox_ready') if p[k]['count'] != $N])")" "[]"
    done
    for who in ours agent_sandbox; do
        check "$sc/$who: every pod, PVC and Sandbox was deleted" eq "$(json "print(not any($S['$who']['runs'][0]['left_over'].values()))")" True
        # (CPU is counted in 10 ms ticks: at small N it may legitimately round to 0)
        # (the peak RSS is VmHWM, whose counters lag smaps_rollup's by a few pages: compared
        # with PSS and USS only within one smaps_rollup sample)
        check "$sc/$who: RSS >= PSS >= USS > 0 at rest, peaks measured, CPU and requests measured" eq "$(json "o = $S['$who']; \
print(o['rss_peak_kib'] > 0 and o['pss_peak_kib'] >= o['uss_peak_kib'] > 0 and o['rss_rest_kib'] >= o['pss_rest_kib'] >= o['uss_rest_kib'] > 0 \
and o['requests_per_sandbox'] >= 2 and o['cpu_s'] >= 0 and o['idle_cpu_pct'] >= 0)")" True
        check "$sc/$who: the sandbox → pod interval was measured" eq "$(json "print($S['$who']['runs'][0]['stages']['sandbox→pod']['count'])")" $N
    done
    check "$sc: every target ratio computed" eq "$(json "print([t['target'] for t in $S['targets'] if t['ratio'] is None])")" "[]"
done
check "report.py renders the scenarios table" eq "$(python3 "$SRC_DIR/bench/report.py" "$OUT" | grep -c '^| [ab] \(immediate\|wffc\) | '"$N"' |')" 2
check "the benchmark's cluster-admin bindings are removed" eq "$(kubectl get clusterrolebinding yao-bench-ours yao-bench-agent-sandbox --ignore-not-found -o name)" ""
check "the agent-sandbox CRD is removed afterwards" eq "$(kubectl get crd sandboxes.agents.x-k8s.io --ignore-not-found -o name)" ""
sandbox_group() { kubectl get sandbox -A -v=6 2>&1 | grep -o '/apis/[a-z.-]*/v1[a-z0-9]*/sandboxes' | head -n 1; }
check "kubectl get sandbox still means sandbox.yaoapps.com" eq "$(sandbox_group)" "/apis/sandbox.yaoapps.com/v1alpha1/sandboxes"
echo "    exec: $(json 'e = d["exec"]; print(e["status"] if e["status"] != "ok" else "%s: true p50 %s ms vs kubectl %s ms" % (e["client"], e["true_p50_ms_ours"], e["true_p50_ms_kubectl"]))')"
finish
