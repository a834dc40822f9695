#!/usr/bin/env bash
# Events and bounded I/O on the real plane: a Sandbox whose name has 253 characters gets
# its Started Event (a valid name of at most 253 characters: it used to be refused);
# pausing and resuming twice gives one Started and one Stopped Event with count 2, not
# four objects; /metrics counts what was created and aggregated and drops nothing; a
# SIGTERM with work in flight ends the controller within a few seconds.
. "$(dirname "$0")/lib.sh"
NS=yao-it-events
LOG=$BUILD_DIR/test-events.log
: > "$LOG"
install_manifests
fresh_namespace $NS
bound_port() { sed -n 's/.*msg="serving probes and metrics".* port=\([0-9]*\).*/\1/p' "$LOG" | head -n 1; }
start_controller "$LOG" --namespace $NS --metrics-addr 127.0.0.1:0
PID=${CONTROLLER_PIDS[-1]}
eventually 10 eval '[ -n "$(bound_port)" ]'
P=$(bound_port)
metric() { curl -s "http://127.0.0.1:$P/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

LONG=$(printf 'l%.0s' $(seq 1 120)).$(printf 'm%.0s' $(seq 1 132))
check "the long name has 253 characters" eq "${#LONG}" 253
kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: $LONG}
spec: {userID: ev, chatID: long, lifecycle: persistent}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: flip}
spec: {userID: ev, chatID: flip, lifecycle: persistent}
YAML
check "the long-named Sandbox runs" eventually 30 phase_is $NS "$LONG" Running
ev_names() { kubectl -n $NS get events --field-selector "involvedObject.name=$1,reason=$2" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'; }
check "  and has its Started Event" eventually 10 eval '[ -n "$(ev_names "$LONG" Started)" ]'
N=$(ev_names "$LONG" Started | head -n 1)
check "  named within 253 characters (${#N})" eval '[ ${#N} -le 253 ] && [ ${#N} -gt 17 ]'

check "a second Sandbox runs" eventually 30 phase_is $NS flip Running
for i in 1 2; do
    kubectl -n $NS patch sandbox flip --type merge -p '{"spec":{"paused":true}}' >/dev/null
    check "pause $i: Stopped" eventually 20 phase_is $NS flip Stopped
    kubectl -n $NS patch sandbox flip --type merge -p '{"spec":{"paused":false}}' >/dev/null
    check "resume $i: Running" eventually 20 phase_is $NS flip Running
done
counts() { kubectl -n $NS get events --field-selector "involvedObject.name=flip,reason=$1" -o jsonpath='{.items[*].count}'; }
check "three starts: one Started Event, count 3" eventually 10 eval '[ "$(counts Started)" = 3 ]'
check "two stops: one Stopped Event, count 2" eventually 10 eval '[ "$(counts Stopped)" = 2 ]'
check "/metrics: Events created" eval '[ "$(metric yao_sandbox_events_created_total)" -ge 3 ]'
check "/metrics: occurrences aggregated into them" eval '[ "$(metric yao_sandbox_events_aggregated_total)" -ge 3 ]'
check "/metrics: nothing dropped for a full queue" eq "$(metric 'yao_sandbox_events_dropped_total{reason="queue_full"}')" 0
check "/metrics: no Event write failed" eq "$(metric 'yao_sandbox_events_dropped_total{reason="failed"}')" 0

# SIGTERM while work is in flight: 20 Sandboxes created at once, the controller stopped.
for i in $(seq 1 20); do
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: burst-%s}\nspec: {userID: ev, chatID: burst-%s}\n---\n' "$i" "$i"
done | kubectl -n $NS apply -f - >/dev/null
sleep 0.3
T0=$(now_ms)
kill -TERM "$PID"
wait "$PID" 2>/dev/null
STOP_MS=$(( $(now_ms) - T0 ))
echo "    SIGTERM with 20 creations in flight: exited after $STOP_MS ms"
check "SIGTERM ends the controller promptly ($STOP_MS ms)" eval '[ "$STOP_MS" -lt 5000 ]'
check "and it said so" eval 'grep -q "msg=\"shutting down\"" "$LOG"'
finish
