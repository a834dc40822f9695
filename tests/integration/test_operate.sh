#!/usr/bin/env bash
# Operating the controller: leader election between two replicas (kill -9 the leader, the
# standby takes over within ~20 s and keeps reconciling), /healthz, /readyz and /metrics
# (scraped and parsed), Events on Sandboxes, structured logs.
. "$(dirname "$0")/lib.sh"
NS=yao-it
LOG1=$BUILD_DIR/test-operate-1.log
LOG2=$BUILD_DIR/test-operate-2.log
: > "$LOG1"; : > "$LOG2"
install_manifests
fresh_namespace $NS
kubectl -n yao-sandbox-system delete lease yao-sandbox-controller --ignore-not-found >/dev/null

# Port 0: the kernel picks a free port; the controller logs the one it bound.
bound_port() { sed -n 's/.*msg="serving probes and metrics".* port=\([0-9]*\).*/\1/p' "$1" | head -n 1; }
start_controller "$LOG1" --leader-elect --lease-namespace yao-sandbox-system --metrics-addr 127.0.0.1:0
PID1=${CONTROLLER_PIDS[-1]}
sleep 0.5
start_controller "$LOG2" --leader-elect --lease-namespace yao-sandbox-system --metrics-addr 127.0.0.1:0 --log-level debug
PID2=${CONTROLLER_PIDS[-1]}
eventually 10 eval '[ -n "$(bound_port "$LOG1")" ] && [ -n "$(bound_port "$LOG2")" ]'
P1=$(bound_port "$LOG1"); P2=$(bound_port "$LOG2")

holder() { kubectl -n yao-sandbox-system get lease yao-sandbox-controller -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
has_holder() { [ -n "$(holder)" ]; }
check "a leader is elected" eventually 20 has_holder
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
check "/healthz answers ok" eq "$(curl -s http://127.0.0.1:$P1/healthz)" ok
ready_both() { [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$P1/readyz)" = 200 ] && [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$P2/readyz)" = 200 ]; }
check "/readyz is 200 on the leader and the standby" eventually 20 ready_both
L1=$(metric $P1 yao_sandbox_leader); L2=$(metric $P2 yao_sandbox_leader)
check "exactly one replica leads (metrics)" eq "$((L1 + L2))" 1
if [ "$L1" = 1 ]; then LEADER=$PID1; LP=$P1; STANDBY_PORT=$P2; SLOG=$LOG2; else LEADER=$PID2; LP=$P2; STANDBY_PORT=$P1; SLOG=$LOG1; fi
first=$(holder)

printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: led-1}\nspec: {userID: op, chatID: one}\n' | kubectl -n $NS apply -f - >/dev/null
check "the leader reconciles" eventually 20 phase_is $NS led-1 Running
check "the standby did not reconcile (no pod created in its log)" eq "$(grep -c 'pod created' "$SLOG")" 0

# Metrics: well-formed exposition with the families we promise.
curl -s "http://127.0.0.1:$LP/metrics" > "$BUILD_DIR/metrics.txt"
parse_metrics() {
    python3 - "$BUILD_DIR/metrics.txt" <<'PY'
import re, sys
families, samples = {}, {}
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"]*",?)*\})? (-?[0-9.eE+-]+|NaN|\+Inf)$')
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(" ", 3); families[name] = kind; continue
    if line.startswith("#") or not line: continue
    m = sample.match(line)
    if not m: print("malformed line:", line); sys.exit(1)
    samples[line.rsplit(" ", 1)[0]] = float(line.rsplit(" ", 1)[1])
need = ["yao_sandbox_reconcile_total", "yao_sandbox_reconcile_errors_total", "yao_sandbox_reconcile_duration_seconds",
        "yao_sandbox_workqueue_depth", "yao_sandbox_sandboxes", "yao_sandbox_api_requests_total",
        "yao_sandbox_exec_sessions_total", "yao_sandbox_leader", "process_resident_memory_bytes"]
missing = [n for n in need if n not in families]
if missing: print("missing families:", missing); sys.exit(1)
assert samples["yao_sandbox_reconcile_total"] > 0, "no reconciles counted"
assert samples['yao_sandbox_sandboxes{phase="Running",lifecycle="session"}'] >= 1, "Running sandbox not counted"
assert samples['yao_sandbox_reconcile_duration_seconds_bucket{le="+Inf"}'] == samples["yao_sandbox_reconcile_duration_seconds_count"]
assert any(k.startswith('yao_sandbox_api_requests_total{verb="POST",code="2xx"}') for k in samples), "no POST counted"
print("metrics ok: %d families, %d samples" % (len(families), len(samples)))
PY
}
check "/metrics parses as Prometheus text with the promised families" parse_metrics

# Kill -9 the leader: the standby takes over (lease 15 s, renew 10 s, retry 2 s).
t0=$(now_ms)
kill -9 "$LEADER"; wait "$LEADER" 2>/dev/null
changed() { local h; h=$(holder); [ -n "$h" ] && [ "$h" != "$first" ]; }
check "the standby takes the lease after the leader is killed" eventually 30 changed
took=$(( $(now_ms) - t0 ))
echo "    takeover after $took ms"
check "takeover within ~20 s" test "$took" -le 21000
printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: led-2}\nspec: {userID: op, chatID: two}\n' | kubectl -n $NS apply -f - >/dev/null
check "the new leader keeps reconciling" eventually 20 phase_is $NS led-2 Running
check "metrics of the new leader say leader 1" eventually 5 eval '[ "$(metric $STANDBY_PORT yao_sandbox_leader)" = 1 ]'

# A clean shutdown releases the lease at once.
t0=$(now_ms)
for pid in "${CONTROLLER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
echo "    clean shutdown took $(( $(now_ms) - t0 )) ms"
check "a clean shutdown releases the lease" eq "$(holder)" ""

check "Events record the start" contains "$(kubectl -n $NS get events --field-selector involvedObject.name=led-2 -o jsonpath='{.items[*].reason}')" Started
check "every log line is logfmt with ts and level" eq "$(grep -vc '^ts=[0-9T:.-]*Z level=\(debug\|info\|warn\|error\) ' "$LOG1" "$LOG2" | awk -F: '{s+=$2} END {print s}')" 0
finish
