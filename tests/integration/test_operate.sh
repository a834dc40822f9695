#!/usr/bin/env bash
# Operating the controller: leader election between two replicas (kill -9 the leader, the
# standby takes over within ~20 s and keeps reconciling), /healthz, /readyz and /metrics
# (scraped and parsed; /healthz next to clients trickling 1 byte/s), the write fence (a
# frozen leader writes nothing after the standby took over: audit log), credentials that
# rotate (token file swapped, old token revoked) and tls-server-name, Events on Sandboxes,
# structured logs.
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
# A client trickling its request one byte a second (it could be any sandbox pod) must not
# delay the liveness probe: /healthz answers within 100 ms all along, 20 times in 3 s.
slow_client_probe() {
    python3 - "$P1" <<'PY'
import socket, sys, threading, time
port = int(sys.argv[1])
def trickle():
    s = socket.create_connection(("127.0.0.1", port))
    for ch in b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n":
        try: s.send(bytes([ch]))
        except OSError: return
        time.sleep(1)
for _ in range(4): threading.Thread(target=trickle, daemon=True).start()
time.sleep(0.2)
worst = 0
for _ in range(20):
    t0 = time.monotonic()
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        b = c.recv(4096)
        if not b: break
        data += b
    c.close()
    worst = max(worst, time.monotonic() - t0)
    assert data.endswith(b"ok\n"), data
    time.sleep(0.15)
print("    slowest /healthz next to 4 trickling clients: %.1f ms" % (worst * 1000))
sys.exit(0 if worst < 0.1 else 1)
PY
}
check "/healthz within 100 ms while clients trickle 1 byte/s" slow_client_probe
ready_both() { [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$P1/readyz)" = 200 ] && [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$P2/readyz)" = 200 ]; }
check "/readyz is 200 on the leader and the standby" eventually 20 ready_both
L1=$(metric $P1 yao_sandbox_leader); L2=$(metric $P2 yao_sandbox_leader)
check "exactly one replica leads (metrics)" eq "$((L1 + L2))" 1
if [ "$L1" = 1 ]; then LEADER=$PID1; LP=$P1; STANDBY_PORT=$P2; SLOG=$LOG2; else LEADER=$PID2; LP=$P2; STANDBY_PORT=$P1; SLOG=$LOG1; fi
first=$(holder)

printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: led-1}\nspec: {userID: op, chatID: one}\n' | kubectl -n $NS apply -f - >/dev/null
check "the leader reconciles" eventually 20 phase_is $NS led-1 Running
check "the standby did not reconcile (no pod created in its log)" eq "$(grep -c 'pod created' "$SLOG")" 0

kubectl -n $NS patch sandbox led-1 --type=merge -p '{"spec":{"paused":true}}' >/dev/null
check "paused: Stopped" eventually 20 phase_is $NS led-1 Stopped
kubectl -n $NS patch sandbox led-1 --type=merge -p '{"spec":{"paused":false}}' >/dev/null
check "resumed: Running again (a wake, for the histogram)" eventually 20 phase_is $NS led-1 Running

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
        "yao_sandbox_exec_sessions_total", "yao_sandbox_leader", "process_resident_memory_bytes",
        "yao_sandbox_informer_lists_total", "yao_sandbox_informer_watches_total", "yao_sandbox_informer_stalls_total"]
missing = [n for n in need if n not in families]
if missing: print("missing families:", missing); sys.exit(1)
assert samples["yao_sandbox_reconcile_total"] > 0, "no reconciles counted"
assert samples['yao_sandbox_sandboxes{phase="Running",lifecycle="session"}'] >= 1, "Running sandbox not counted"
assert samples['yao_sandbox_reconcile_duration_seconds_bucket{le="+Inf"}'] == samples["yao_sandbox_reconcile_duration_seconds_count"]
assert any(k.startswith('yao_sandbox_api_requests_total{verb="POST",code="2xx"}') for k in samples), "no POST counted"
for r in ("sandboxes", "pods", "persistentvolumeclaims"):
    assert samples['yao_sandbox_informer_lists_total{resource="%s"}' % r] >= 1, "no list of " + r + " counted"
    assert samples['yao_sandbox_informer_watches_total{resource="%s"}' % r] >= 1, "no watch of " + r + " counted"
for h in ("yao_sandbox_create_ready_duration_seconds", "yao_sandbox_wake_duration_seconds"):
    assert families.get(h) == "histogram", h + " is not a histogram"
    counts = {k: v for k, v in samples.items() if k.startswith(h + '_count{lifecycle="session",')}
    assert counts and sum(counts.values()) >= 1, "no session start in " + h
    for k, v in counts.items():
        assert samples[k.replace("_count{", "_bucket{").replace("}", ',le="+Inf"}')] == v, k
        assert samples[k.replace("_count{", "_sum{")] > 0, k + ": no time summed"
assert [k for k in samples if k.startswith("yao_sandbox_build_info{version=")], "no build_info"
import time
assert time.time() - 3600 < samples["process_start_time_seconds"] <= time.time(), "process_start_time_seconds"
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

# --- Fencing: a stalled leader writes nothing once a standby has taken over --------------
# Two replicas on a short lease (3 s / renew 2 s / retry 0.5 s). The leader is frozen with
# SIGSTOP (its clock runs on, its connections buffer), Sandboxes are created, the standby
# takes over and brings them up; then the old leader is thawed with watch events waiting
# in its sockets. Its write fence is already shut: the audit log (which names each replica
# by the identity in its User-Agent) must show no write from it received after the
# standby's first Lease update, and it must exit non-zero, as client-go's elector does.
FLEASE=yao-fence-test
kubectl -n yao-sandbox-system delete lease $FLEASE --ignore-not-found >/dev/null
FLOG1=$BUILD_DIR/test-operate-fence-1.log; FLOG2=$BUILD_DIR/test-operate-fence-2.log
: > "$FLOG1"; : > "$FLOG2"
FENCE_ARGS=(--leader-elect --lease-namespace yao-sandbox-system --lease-name $FLEASE
            --lease-duration 3s --renew-deadline 2s --retry-period 500ms)
start_controller "$FLOG1" "${FENCE_ARGS[@]}"; FPID1=${CONTROLLER_PIDS[-1]}
sleep 0.5
start_controller "$FLOG2" "${FENCE_ARGS[@]}"; FPID2=${CONTROLLER_PIDS[-1]}
identity_of() { sed -n 's/.*msg="waiting for leadership".* identity=\([^ ]*\).*/\1/p' "$1" | head -n 1; }
fholder() { kubectl -n yao-sandbox-system get lease $FLEASE -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
check "fence: a leader is elected" eventually 20 eval '[ -n "$(fholder)" ] && [ -n "$(identity_of "$FLOG2")" ]'
ID1=$(identity_of "$FLOG1"); ID2=$(identity_of "$FLOG2"); FIRST=$(fholder)
if [ "$FIRST" = "$ID1" ]; then OLD=$FPID1; OLD_ID=$ID1; NEW_ID=$ID2; else OLD=$FPID2; OLD_ID=$ID2; NEW_ID=$ID1; fi
printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: fence-0}\nspec: {userID: fence, chatID: zero}\n' | kubectl -n $NS apply -f - >/dev/null
check "fence: the leader reconciles" eventually 20 phase_is $NS fence-0 Running
kill -STOP "$OLD"
for i in 1 2 3 4 5; do
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: fence-%s}\nspec: {userID: fence, chatID: c%s}\n' $i $i
    echo ---
done | kubectl -n $NS apply -f - >/dev/null
kubectl -n $NS annotate sandbox fence-0 sandbox.yaoapps.com/last-used-at="$(date -u +%Y-%m-%dT%H:%M:%SZ)" --overwrite >/dev/null
check "fence: the standby takes over from the frozen leader" eventually 20 eval '[ "$(fholder)" = "$NEW_ID" ]'
all_running() { for i in 1 2 3 4 5; do phase_is $NS fence-$i Running || return 1; done; }
check "fence: the new leader brings the new Sandboxes up" eventually 30 all_running
kill -CONT "$OLD"
check "fence: the thawed leader exits within 10 s" eventually 10 eval '! kill -0 "$OLD"'
kill -9 "$OLD" 2>/dev/null; wait "$OLD"; OLD_RC=$?
check "fence: the thawed leader exits non-zero (leadership lost)" test "$OLD_RC" -ne 0
check "fence: it logged the loss" eval 'grep -q "lost leadership" "$FLOG1" "$FLOG2"'
echo "    writes refused by the fence: $(cat "$FLOG1" "$FLOG2" | grep -c 'write fence closed')"
sleep 2.5   # the audit log is written in 1 s batches
fence_audit() {
    python3 - "$YAO_PLANE_DIR/logs/audit.log" "$OLD_ID" "$NEW_ID" "$FLEASE" <<'PY'
import json, sys
path, old, new, lease = sys.argv[1:]
writes = {"create", "update", "patch", "delete", "deletecollection"}
events = []
for line in open(path):
    try: e = json.loads(line)
    except ValueError: continue
    if e.get("stage") != "ResponseComplete": continue
    events.append(e)
def by(e, ident): return ("(%s)" % ident) in e.get("userAgent", "")
def is_lease(e): return (e.get("objectRef") or {}).get("resource") == "leases" and (e.get("objectRef") or {}).get("name") == lease
took = sorted(e["requestReceivedTimestamp"] for e in events if by(e, new) and is_lease(e) and e["verb"] == "update")
if not took: print("no Lease update by the standby in the audit log"); sys.exit(1)
t_acq = took[0]
before = [e for e in events if by(e, old) and e["verb"] in writes and e["requestReceivedTimestamp"] < t_acq]
after = [e for e in events if by(e, old) and e["verb"] in writes and e["requestReceivedTimestamp"] >= t_acq]
print("    standby's first Lease update at %s; old leader: %d writes before, %d after" % (t_acq, len(before), len(after)))
for e in after[:10]:
    print("    late write: %s %s %s" % (e["requestReceivedTimestamp"], e["verb"], e.get("requestURI")))
if not before: print("no write of the old leader seen at all: the audit check would prove nothing"); sys.exit(1)
sys.exit(1 if after else 0)
PY
}
check "fence: the audit log shows no write from the old leader after the standby acquired" fence_audit

# --- Credentials that rotate ------------------------------------------------------------
# The controller reads its token from a file (tokenFile) and checks the API server's
# certificate against tls-server-name "kubernetes.default" (a name the certificate holds;
# a wrong name is refused, so the name is really used). The token is bound to a Secret;
# mid-run the file is swapped for a token bound to another Secret and the first Secret is
# deleted, which invalidates the old token at once. The next writes get 401, re-read the
# file and go on: a Sandbox created after the swap comes up.
RDIR=$(mktemp -d /tmp/yao-rotate.XXXXXX); on_exit "rm -rf $RDIR"
SA_NS=yao-sandbox-system
for s in yao-rot-a yao-rot-b; do
    kubectl -n $SA_NS delete secret $s --ignore-not-found >/dev/null
    kubectl -n $SA_NS create secret generic $s >/dev/null
    on_exit "kubectl -n $SA_NS delete secret $s --ignore-not-found"
done
bound_token() { kubectl -n $SA_NS create token yao-sandbox-controller --bound-object-kind Secret --bound-object-name "$1" --duration 1h; }
TOKA=$(bound_token yao-rot-a); TOKB=$(bound_token yao-rot-b)
printf '%s\n' "$TOKA" > "$RDIR/token"
rot_kubeconfig() { # FILE TLS-SERVER-NAME
    cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$(cat "$YAO_PLANE_DIR/api-port")", certificate-authority: "$YAO_PLANE_DIR/pki/ca.crt", tls-server-name: "$2"}
users:
- name: rotating
  user: {tokenFile: "$RDIR/token"}
contexts:
- name: local
  context: {cluster: local, user: rotating}
current-context: local
KC
}
rot_kubeconfig "$RDIR/wrong.kubeconfig" wrong.example
rot_kubeconfig "$RDIR/kubeconfig" kubernetes.default
RLOG=$BUILD_DIR/test-operate-rotate.log; : > "$RLOG"
CONTROLLER_KUBECONFIG=$RDIR/wrong.kubeconfig start_controller "$RLOG.wrong" --namespace $NS
check "tls-server-name: a name the certificate lacks is refused" eventually 15 grep -q "SSL peer certificate" "$RLOG.wrong"
kill_controller TERM
CONTROLLER_KUBECONFIG=$RDIR/kubeconfig start_controller "$RLOG" --namespace $NS
printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: rot-1}\nspec: {userID: rot, chatID: one}\n' | kubectl -n $NS apply -f - >/dev/null
check "rotation: the controller works with tls-server-name and the first token" eventually 20 phase_is $NS rot-1 Running
printf '%s\n' "$TOKB" > "$RDIR/token.new" && mv "$RDIR/token.new" "$RDIR/token"
kubectl -n $SA_NS delete secret yao-rot-a >/dev/null
printf '%s\n' "$TOKA" > "$RDIR/token-a"
sed "s|$RDIR/token|$RDIR/token-a|" "$RDIR/kubeconfig" > "$RDIR/old.kubeconfig"
old_refused() { local out; out=$(kubectl --kubeconfig "$RDIR/old.kubeconfig" get --raw /api 2>&1); [[ $out == *Unauthorized* ]]; }
# (the API server caches a token review for up to 10 s)
check "rotation: the old token is refused once its Secret is gone" eventually 30 old_refused
printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: rot-2}\nspec: {userID: rot, chatID: two}\n' | kubectl -n $NS apply -f - >/dev/null
check "rotation: a Sandbox created after the swap comes up (401 → token file re-read)" eventually 30 phase_is $NS rot-2 Running
check "rotation: the controller saw the 401 and re-read the file" grep -q '401 Unauthorized: token file re-read' "$RLOG"
kubectl -n $NS annotate sandbox rot-1 sandbox.yaoapps.com/last-used-at="$(date -u +%Y-%m-%dT%H:%M:%SZ)" --overwrite >/dev/null
kubectl -n $NS patch sandbox rot-1 --type merge -p '{"spec":{"paused":true}}' >/dev/null
check "rotation: and an existing one is still managed (paused → Stopped)" eventually 30 phase_is $NS rot-1 Stopped
kill_controller TERM

started_event() { kubectl -n $NS get events --field-selector involvedObject.name=led-2 -o jsonpath='{.items[*].reason}' | grep -q Started; }
check "Events record the start (written by their own thread: a moment later)" eventually 5 started_event
check "every log line is logfmt with ts and level" eq "$(grep -vc '^ts=[0-9T:.-]*Z level=\(debug\|info\|warn\|error\) ' "$LOG1" "$LOG2" | awk -F: '{s+=$2} END {print s}')" 0
finish
