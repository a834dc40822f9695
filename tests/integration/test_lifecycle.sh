#!/usr/bin/env bash
# Lifecycle policies on the real plane with short timeouts: session removal when idle,
# the idle clock starting at the first Ready (a session that cannot start is never idle),
# touch keeps it alive, long-running stop then wake by touch with the same workspace PVC,
# pause/resume, one-shot runs as the pod's own process (results from its terminated state,
# a timeout, a controller SIGKILLed mid-run, cancel by deletion) and cleanup, last-used-at in the future (taken as now)
# or unparseable (ignored), with Warning Events, touches at the idle deadline never lost,
# the running cap with oldest-first admission (strangers' labelled pods hold no slot), fair
# admission across three users with queuePosition, a per-user cap, no duplicate creates in
# the audit log, and Events on the Sandboxes.
. "$(dirname "$0")/lib.sh"
NS=yao-it
LOG=$BUILD_DIR/test-lifecycle.log
: > "$LOG"
install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --log-level debug   # debug: each pass and its requeue, for a failure in CI

sb() { # name lifecycle extra-spec-yaml
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: lc, chatID: %s, lifecycle: %s%s}\n' \
        "$1" "$1" "$2" "${3:+, $3}" | kubectl -n $NS apply -f - >/dev/null
}
gone() { ! kubectl -n $NS get sandbox "$1" >/dev/null 2>&1; }
field() { kubectl -n $NS get sandbox "$1" -o jsonpath="$2" 2>/dev/null; }
touch_sb() { kubectl -n $NS annotate --overwrite sandbox "$1" "sandbox.yaoapps.com/last-used-at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null; }
events_of() { kubectl -n $NS get events --field-selector "involvedObject.name=$1" -o jsonpath='{range .items[*]}{.reason} {end}'; }
# has_event SANDBOX TEXT — its Events' reasons contain TEXT (Events are written by a thread
# of their own, a moment after the transition: poll with eventually)
has_event() { case "$(events_of "$1")" in *"$2"*) return 0 ;; esac; return 1; }

# --- session: removed after idleTimeout ------------------------------------------------------
sb idle-session session "idleTimeout: 3s"
check "session sandbox starts" eventually 20 phase_is $NS idle-session Running
t_run=$(now_ms)
POD=$(field idle-session '{.status.podName}')
check "idle session is removed" eventually 20 gone idle-session
t_gone=$(now_ms)
echo "    removed $((t_gone - t_run)) ms after it was seen Running (idleTimeout 3s)"
check "removal waited for the idle timeout (>= 1.5 s after Running)" test $((t_gone - t_run)) -ge 1500
pod_gone() { ! kubectl -n $NS get pod "$1" >/dev/null 2>&1; }
check "its pod is gone too" eventually 20 pod_gone "$POD"

# --- session kept alive by touches ------------------------------------------------------------
# The annotation has whole seconds and each kubectl takes its own time under load (up to a
# second or more in CI), so a touch can land up to ~2.5 s after the previous one's value: a
# 6 s timeout leaves room for that, and 14 s of touches still spans more than two timeouts.
sb busy-session session "idleTimeout: 6s"
check "busy session starts" eventually 20 phase_is $NS busy-session Running
t_touch=$(now_ms)
while [ $(($(now_ms) - t_touch)) -lt 14000 ]; do touch_sb busy-session; sleep 1; done
check "a session touched every second for 14 s outlives its 6s idle timeout" phase_is $NS busy-session Running
check "status.lastUsedAt follows the touches" test -n "$(field busy-session '{.status.lastUsedAt}')"
check "and is removed once the touches stop" eventually 30 gone busy-session

# --- long-running: stopped when idle (1s x 24), woken by a touch, same workspace --------------
sb sleeper long-running "idleTimeout: 1s"
check "long-running sandbox starts" eventually 20 phase_is $NS sleeper Running
CLAIM=$(field sleeper '{.status.workspaceClaim}')
PV=$(kubectl -n $NS get pvc "$CLAIM" -o jsonpath='{.spec.volumeName}')
check "long-running stops after 24 x idleTimeout" eventually 45 phase_is $NS sleeper Stopped
phase_is $NS sleeper Stopped || explain_sandbox $NS sleeper "$LOG"
check "stopped: reason Idle" reason_is $NS sleeper Idle
check "stopped: no pod" eq "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/chat=sleeper --no-headers 2>/dev/null | wc -l)" 0
check "stopped: workspace PVC kept" eq "$(kubectl -n $NS get pvc "$CLAIM" -o jsonpath='{.spec.volumeName}')" "$PV"
check "stopped: stoppedAt set" test -n "$(field sleeper '{.status.stoppedAt}')"
touch_sb sleeper
check "a newer last-used-at wakes it" eventually 20 phase_is $NS sleeper Running
check "woken with the same workspace volume" eq "$(kubectl -n $NS get pvc "$(field sleeper '{.status.workspaceClaim}')" -o jsonpath='{.spec.volumeName}')" "$PV"
check "Events record Started and Stopped" eventually 5 has_event sleeper Stopped

# --- pause / resume ---------------------------------------------------------------------------
sb keeper persistent
check "persistent sandbox starts" eventually 20 phase_is $NS keeper Running
KCLAIM=$(field keeper '{.status.workspaceClaim}')
KPV=$(kubectl -n $NS get pvc "$KCLAIM" -o jsonpath='{.spec.volumeName}')
kubectl -n $NS patch sandbox keeper --type merge -p '{"spec":{"paused":true}}' >/dev/null
check "paused: phase Stopped" eventually 20 phase_is $NS keeper Stopped
check "paused: reason Paused" reason_is $NS keeper Paused
check "paused: no pod" eq "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/chat=keeper --no-headers 2>/dev/null | wc -l)" 0
kubectl -n $NS patch sandbox keeper --type merge -p '{"spec":{"paused":false}}' >/dev/null
check "resumed: Running again" eventually 20 phase_is $NS keeper Running
check "resumed with the same workspace volume" eq "$(kubectl -n $NS get pvc "$KCLAIM" -o jsonpath='{.spec.volumeName}')" "$KPV"

# --- the idle clock starts at the first Ready --------------------------------------------------
# A session that cannot start is never idle, even when a client touched it at creation. The
# kwok nodes have 256 cores each: two 200-core sandboxes fill both, a third cannot be placed.
sb hog-a persistent 'resources: {cpu: "200", requests: {cpu: "200"}}'
sb hog-b persistent 'resources: {cpu: "200", requests: {cpu: "200"}}'
check "two 200-core sandboxes fill the two nodes" eventually 20 eval 'phase_is $NS hog-a Running && phase_is $NS hog-b Running'
waiter_audit_from=$(wc -l < "$YAO_PLANE_DIR/logs/audit.log" 2>/dev/null || echo 0)   # an earlier run's waiter is not this one
sb waiter session 'idleTimeout: 2s, resources: {cpu: "200", requests: {cpu: "200"}}'
touch_sb waiter
check "a session no node can hold waits: Ready=False/Unschedulable" eventually 20 reason_is $NS waiter Unschedulable
sleep 5
check "never Ready: not removed as Idle 5 s past its 2 s idle timeout" eq "$(sandbox_phase $NS waiter)/$(sandbox_reason $NS waiter)" "Creating/Unschedulable"
check "  and no startedAt yet" eq "$(field waiter '{.status.startedAt}')" ""
kubectl -n $NS delete sandbox hog-a --wait=false >/dev/null
# Its status and its pod's Ready time are read as they come: with a 2 s idle timeout
# both are gone moments after Running (a loaded CI machine was slower than that).
W_STARTED="" W_POD_READY=""
waiter_runs() {
    local phase pod started t
    read -r phase pod started <<< "$(field waiter '{.status.phase} {.status.podName} {.status.startedAt}')"
    if [ -n "$pod" ] && [ -z "$W_POD_READY" ]; then
        t=$(kubectl -n $NS get pod "$pod" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}' 2>/dev/null)
        [ "${t%% *}" = True ] && W_POD_READY=${t#* }
    fi
    [ "$phase" = Running ] && W_STARTED=$started
}
check "once a node frees, it runs" eventually 30 waiter_runs
check "  with startedAt = when its pod became Ready" eq "$W_STARTED" "$W_POD_READY"
check "then, idle for 2 s after Ready, it is removed" eventually 20 gone waiter
# When it was removed is the controller's DELETE in the plane's audit log (the test's own
# view of Running can lag a loaded machine by a second or more); Ready has whole seconds,
# so >= 2 s after the Ready second means at least 1 s after Ready itself. An idle clock
# that ran from creation (minutes before) would remove it at once on Ready.
sleep 2   # the audit log is written in batches (max wait 1 s)
removed_at() { tail -n +$((waiter_audit_from + 1)) "$YAO_PLANE_DIR/logs/audit.log" | python3 -c '
import json, sys
for line in sys.stdin:
    ev = json.loads(line)
    o = ev.get("objectRef", {})
    if ev.get("verb") == "delete" and o.get("resource") == "sandboxes" and o.get("namespace") == sys.argv[1] \
            and o.get("name") == "waiter" and ev.get("responseStatus", {}).get("code") in (200, 202):
        print(ev["requestReceivedTimestamp"])
        break' $NS; }
W_REMOVED=$(removed_at)
echo "    pod Ready at $W_POD_READY, Sandbox deleted at $W_REMOVED (idleTimeout 2s)"
check "  not before its idle timeout ran from Ready (deleted >= 2 s after the Ready second)" \
    test -n "$W_REMOVED" -a -n "$W_POD_READY" -a $(( $(date -d "${W_REMOVED:-now}" +%s%3N) - $(date -d "${W_POD_READY:-now}" +%s%3N) )) -ge 2000
kubectl -n $NS delete sandbox hog-b --wait=false >/dev/null

# --- one-shot: the run is the pod's main process ------------------------------------------------
# kwok runs no containers, so this plays the kubelet: the pod's own wrapper script
# (command[2]) runs its argv (command[4:]) here with the container's env, exactly as in the
# container, its termination message is read back, and the pod's status is patched to what
# the kubelet reports then (state.terminated with exitCode, reason, message, startedAt,
# finishedAt; phase Succeeded/Failed; reason DeadlineExceeded for a timeout).
kubelet_finish() { # pod [term-after-seconds [pod-reason]]
    kubectl -n $NS get pod "$1" -o json | python3 -c '
import json, os, subprocess, sys, tempfile, time
pod = json.load(sys.stdin)
term_after = float(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 0
pod_reason = sys.argv[2] if len(sys.argv) > 2 else ""
c = pod["spec"]["containers"][0]
assert c["command"][:2] == ["/bin/sh", "-c"] and c["command"][3] == "yao-run", c["command"]
env = {"PATH": os.environ["PATH"]}
env.update({e["name"]: e.get("value", "") for e in c.get("env", [])})
fd, msg = tempfile.mkstemp()
os.close(fd)
env["YAO_RUN_MESSAGE"] = msg
t0 = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
p = subprocess.Popen(c["command"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if term_after:
    time.sleep(term_after)
    p.terminate()
code = p.wait()
code = 128 - code if code < 0 else code
message = open(msg, encoding="utf-8", errors="replace").read()
os.unlink(msg)
t1 = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
status = {"phase": "Succeeded" if code == 0 else "Failed",
          "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": t1, "reason": "PodCompleted"}],
          "containerStatuses": [{"name": "sandbox", "image": c["image"], "imageID": "", "ready": False, "restartCount": 0,
              "state": {"running": None, "terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                        "message": message, "startedAt": t0, "finishedAt": t1}}}]}
if pod_reason:
    status["reason"] = pod_reason
    status["message"] = "Pod was active on the node longer than the specified deadline"
print(json.dumps({"status": status}))
' "${2:-}" "${3:-}" > "$BUILD_DIR/lc-kubelet-patch.json" &&
    kubectl -n $NS patch pod "$1" --subresource=status --type=strategic --patch-file "$BUILD_DIR/lc-kubelet-patch.json" >/dev/null
}
pod_of() { kubectl -n $NS get pods -l sandbox.yaoapps.com/chat=$1 -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
pod_running() { [ "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/chat=$1 -o jsonpath='{.items[0].status.phase}' 2>/dev/null)" = Running ]; }
cat <<'YAML' | kubectl -n $NS apply -f - >/dev/null
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: job-fail}
spec:
  userID: lc
  chatID: job-fail
  lifecycle: one-shot
  ttlSecondsAfterFinished: 12   # room for the checks on status.run below on a loaded machine
  run:
    command: ["sh", "-c", "echo hello \"$WHO\"; echo oops >&2; exit 7"]
    env: [{name: WHO, value: "the world"}]
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: job-ok}
spec:
  userID: lc
  chatID: job-ok
  lifecycle: one-shot
  ttlSecondsAfterFinished: 300
  run:
    command: ["sh", "-c", "head -c 10000 /dev/zero | tr '\\0' x; echo; echo done"]
    timeout: 1500ms
YAML
check "one-shot pods run" eventually 30 eval 'pod_running job-fail && pod_running job-ok'
FPOD=$(pod_of job-fail)
check "the run is the pod's own command, argv exact, never restarted" eq \
    "$(kubectl -n $NS get pod "$FPOD" -o jsonpath='{.spec.restartPolicy}|{.spec.containers[0].command[3]}|{.spec.containers[0].command[4]}|{.spec.containers[0].command[5]}|{.spec.containers[0].command[6]}')" \
    'Never|yao-run|sh|-c|echo hello "$WHO"; echo oops >&2; exit 7'
check "run.env reaches the container" eq "$(kubectl -n $NS get pod "$FPOD" -o jsonpath='{.spec.containers[0].env[?(@.name=="WHO")].value}')" "the world"
check "the output tails come back in the termination message (FallbackToLogsOnError)" eq \
    "$(kubectl -n $NS get pod "$FPOD" -o jsonpath='{.spec.containers[0].terminationMessagePolicy}')" FallbackToLogsOnError
check "run.timeout is the pod's activeDeadlineSeconds (1500ms → 2)" eq \
    "$(kubectl -n $NS get pod "$(pod_of job-ok)" -o jsonpath='{.spec.activeDeadlineSeconds}')" 2
check "while it runs: Running/RunningCommand" eventually 20 eval 'phase_is $NS job-fail Running && reason_is $NS job-fail RunningCommand'
check "  with status.run.startedAt and no result yet" test -n "$(field job-fail '{.status.run.startedAt}')" -a -z "$(field job-fail '{.status.run.exitCode}')"
kubelet_finish "$FPOD"
kubelet_finish "$(pod_of job-ok)"
check "one-shot with exit 7 ends Failed" eventually 30 phase_is $NS job-fail Failed
# One read of the result: the Sandbox is deleted 12 s after it finished (ttlSecondsAfterFinished).
run_json=$(kubectl -n $NS get sandbox job-fail -o json 2>/dev/null)
run_field() { python3 -c 'import json, sys; r = json.loads(sys.argv[1] or "{}").get("status", {}).get("run", {}); v = r.get(sys.argv[2], ""); print(str(v).rstrip("\n"))' "$run_json" "$1"; }
run_code=$(run_field exitCode); run_out=$(run_field stdout); run_err=$(run_field stderr)
run_started=$(run_field startedAt); run_finished=$(run_field finishedAt)
check "status.run.exitCode is 7" eq "$run_code" 7
check "status.run.stdout has the output" eq "$run_out" "hello the world"
check "status.run.stderr has the errors, apart" eq "$run_err" "oops"
check "status.run has start and finish times" test -n "$run_started" -a -n "$run_finished"
check "one-shot with exit 0 ends Succeeded" eventually 30 phase_is $NS job-ok Succeeded
check "a long stdout keeps its last 1400 bytes and says truncated" eq "$(field job-ok '{.status.run.truncated}')/$(field job-ok '{.status.run.stdout}' | wc -c)" "true/1400"
check "  ending with the last line" eq "$(field job-ok '{.status.run.stdout}' | tail -n 1)" "done"
no_owned() { [ "$(kubectl -n $NS get pods,pvc -l sandbox.yaoapps.com/chat=$1 --no-headers 2>/dev/null | wc -l)" = 0 ]; }
# The finished pod stays, as a Job's does, for its log (the whole output); the claim's
# deletion is asked at once (pvc-protection holds it while the pod exists).
pvc_going() { [ -z "$(kubectl -n $NS get pvc -l sandbox.yaoapps.com/chat=$1 -o name 2>/dev/null)" ] ||
    [ -n "$(kubectl -n $NS get pvc -l sandbox.yaoapps.com/chat=$1 -o jsonpath='{.items[0].metadata.deletionTimestamp}' 2>/dev/null)" ]; }
check "finished one-shot: the claim's deletion is asked" eventually 30 pvc_going job-ok
check "  the finished pod is kept (Succeeded) for its log" eq \
    "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/chat=job-ok -o jsonpath='{.items[0].status.phase}/{.items[0].metadata.deletionTimestamp}')" "Succeeded/"
check "Events record RunFinished" eventually 5 has_event job-ok RunFinished
check "the finished Sandbox is deleted after ttlSecondsAfterFinished" eventually 30 gone job-fail
check "  its kept pod goes with it" eventually 30 no_owned job-fail
check "one with a long ttl stays for its result" phase_is $NS job-ok Succeeded

# A timeout: the kubelet fails the pod (DeadlineExceeded) and stops the container (SIGTERM,
# which the wrapper passes on): exit code 124 as today, the output so far, and a note.
sb job-slow one-shot 'run: {command: [sh, -c, "echo partial; sleep 30"], timeout: 2s}'
check "slow one-shot runs" eventually 30 pod_running job-slow
kubelet_finish "$(pod_of job-slow)" 0.5 DeadlineExceeded
check "a timed-out run ends Failed with exit code 124" eventually 30 eval '[ "$(field job-slow "{.status.phase}/{.status.run.exitCode}")" = Failed/124 ]'
check "  with its output so far" eq "$(field job-slow '{.status.run.stdout}')" "partial"
check "  and the reason in stderr" contains "$(field job-slow '{.status.run.stderr}')" "yao-sandbox: the command timed out after 2s (spec.run.timeout)"

# The result comes from the pod, not from the controller's memory: SIGKILL the controller
# mid-run, let the run finish while no controller runs, start a new one.
sb job-restart one-shot 'run: {command: [sh, -c, "echo survived; echo warn >&2; exit 3"]}'
check "one-shot for the restart runs" eventually 30 eval 'pod_running job-restart && reason_is $NS job-restart RunningCommand'
kill_controller KILL
kubelet_finish "$(pod_of job-restart)"
sleep 1
check "no controller: nothing recorded yet" eq "$(field job-restart '{.status.run.exitCode}')" ""
start_controller "$LOG" --namespace $NS --max-running 0 --log-level debug   # debug: each pass and its requeue, for a failure in CI
check "after SIGKILL and restart the result is recorded: Failed, exit code 3" eventually 30 eval '[ "$(field job-restart "{.status.phase}/{.status.run.exitCode}")" = Failed/3 ]'
check "  with its stdout and stderr" eq "$(field job-restart '{.status.run.stdout}')|$(field job-restart '{.status.run.stderr}')" "survived|warn"
check "  and its claim's deletion asked (its pod kept for the log)" eventually 30 pvc_going job-restart

# Deleting the Sandbox kills the run: its pod goes (owner references and the sweep).
sb job-cancel one-shot 'run: {command: [sleep, "3600"]}'
check "one-shot to cancel runs" eventually 30 pod_running job-cancel
CPOD=$(pod_of job-cancel)
kubectl -n $NS delete sandbox job-cancel --wait=false >/dev/null
pod_gone_or_going() { ! kubectl -n $NS get pod "$1" >/dev/null 2>&1 || [ -n "$(kubectl -n $NS get pod "$1" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)" ]; }
check "deleting the Sandbox deletes the run's pod" eventually 30 pod_gone_or_going "$CPOD"

# --- validated last-used-at ----------------------------------------------------------------------
# In the future beyond 10 s of skew: taken as now (the annotation is rewritten), with a
# Warning Event, so it cannot keep a session alive forever. Not RFC 3339: a Warning Event
# once, and ignored.
ann() { kubectl -n $NS annotate --overwrite sandbox "$1" "sandbox.yaoapps.com/last-used-at=$2" >/dev/null; }
warnings_of() { kubectl -n $NS get events --field-selector "involvedObject.name=$1,type=Warning" -o jsonpath='{range .items[*]}{.reason}:{.message}{"\n"}{end}'; }
has_warning() { case "$(warnings_of "$1")" in *"$2"*) return 0 ;; esac; return 1; }
sb future-touch session "idleTimeout: 3s"
check "session for the future touch starts" eventually 20 phase_is $NS future-touch Running
t_future=$(now_ms)
ann future-touch 2099-01-01T00:00:00Z
lu_of() { field "$1" '{.metadata.annotations.sandbox\.yaoapps\.com/last-used-at}'; }
not_2099() { case "$(lu_of future-touch)" in 2099*) return 1 ;; esac; }
check "a last-used-at in 2099 is rewritten to now" eventually 10 not_2099
rewritten=$(lu_of future-touch)
check "  to the controller's now (within 5 s of the touch)" test $(( $(date -d "$rewritten" +%s%3N) - t_future )) -lt 5000
check "  with a Warning Event LastUsedAtInFuture quoting the value" eventually 5 has_warning future-touch 'LastUsedAtInFuture:sandbox.yaoapps.com/last-used-at "2099-01-01T00:00:00Z" is more than 10 s ahead'
check "  and the session is still removed once idle (not kept until 2099)" eventually 20 gone future-touch
sb bad-touch long-running "idleTimeout: 1h"
check "long-running for the bad touch starts" eventually 20 phase_is $NS bad-touch Running
ann bad-touch yesterday
check "an unparseable last-used-at is recorded as ignored in status" eventually 10 eval '[ "$(field bad-touch "{.status.ignoredLastUsedAt}")" = yesterday ]'
check "  with a Warning Event LastUsedAtInvalid" eventually 5 has_warning bad-touch 'LastUsedAtInvalid:sandbox.yaoapps.com/last-used-at "yesterday" is not an RFC 3339 time'
check "  the sandbox keeps running" phase_is $NS bad-touch Running
kubectl -n $NS patch sandbox bad-touch --type merge -p '{"spec":{"env":[{"name":"X","value":"1"}]}}' >/dev/null
sleep 2
# (repeats would be folded into one Event by the recorder: its count tells them)
check "  one Event per value, however many passes (a spec change re-reconciles)" eq \
    "$(kubectl -n $NS get events --field-selector involvedObject.name=bad-touch,reason=LastUsedAtInvalid -o jsonpath='{.items[*].count}')" 1
touch_sb bad-touch
check "  a valid touch clears status.ignoredLastUsedAt" eventually 10 eval '[ -z "$(field bad-touch "{.status.ignoredLastUsedAt}")" ]'
kubectl -n $NS delete sandbox bad-touch --wait=false >/dev/null

# --- no accepted touch lost: 60 sessions touched at their idle deadline +-50 ms -----------------
# Destructive actions are conditional on the Sandbox being unchanged since the decision
# (resourceVersion preconditions); a touch accepted after the stop was recorded wakes it.
race() {
    python3 "$IT_DIR/touch_race.py" "https://127.0.0.1:$(cat "$YAO_PLANE_DIR/api-port")" \
        "$(cat "$YAO_PLANE_DIR/admin-token")" "$YAO_PLANE_DIR/pki/ca.crt" $NS 60 6 50 | sed 's/^/    /'
}
check "60 sessions touched at deadline +-50 ms: no accepted touch is followed by removal, all removed once idle" race
echo "    $(grep -c 'deciding again' "$LOG") stale decisions caught, $(grep -c 'not removed' "$LOG") sessions woken after their stop was recorded"

# --- running cap: 3 Sandboxes, cap 2, oldest first ---------------------------------------------
kill_controller TERM
kubectl -n $NS delete sandboxes --all --wait=true --timeout=60s >/dev/null
# Strangers' pods labelled like ours and Pending for good (no node matches): one with no
# ownerReference, one controlled by a ConfigMap. Neither holds a slot of the cap. (One
# naming a Sandbox uid that does not exist would be removed by the garbage collector at
# once; tests/unit/test_capacity_decide.c covers it.)
kubectl -n $NS create configmap stranger-owner >/dev/null
CM_UID=$(kubectl -n $NS get configmap stranger-owner -o jsonpath='{.metadata.uid}')
stranger_pod() { # name ownerReferences-json
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{"app.kubernetes.io/managed-by":"yao-sandbox","sandbox.yaoapps.com/name":"%s","stranger":"yes"},"ownerReferences":%s},"spec":{"nodeSelector":{"no-such-label":"x"},"containers":[{"name":"c","image":"busybox"}]}}' \
        "$1" "$1" "$2" | kubectl -n $NS apply -f - >/dev/null
}
stranger_pod stranger-bare '[]'
stranger_pod stranger-cm "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"stranger-owner\",\"uid\":\"$CM_UID\",\"controller\":true}]"
check "two labelled stranger pods wait in Pending" eq "$(kubectl -n $NS get pods -l stranger=yes --field-selector status.phase=Pending --no-headers | wc -l)" 2
start_controller "$LOG" --namespace $NS --max-running 2
sb cap-a persistent; sleep 1.1; sb cap-b persistent; sleep 1.1; sb cap-c persistent
check "cap: the two oldest run" eventually 20 eval 'phase_is $NS cap-a Running && phase_is $NS cap-b Running'
check "cap: the third waits in Pending" eventually 10 phase_is $NS cap-c Pending
check "cap: with reason CapacityExceeded" reason_is $NS cap-c CapacityExceeded
sleep 2
check "cap: never more than 2 pods" eq "$(kubectl -n $NS get pods -l 'app.kubernetes.io/managed-by=yao-sandbox,!stranger' --no-headers | wc -l)" 2
check "cap: the waiting one is told its place in line" eq "$(field cap-c '{.status.queuePosition}')" 1
kubectl -n $NS delete sandbox cap-a --wait=false >/dev/null
check "cap: when capacity frees, the waiting one starts" eventually 30 phase_is $NS cap-c Running
check "cap: and its queuePosition is gone" eq "$(field cap-c '{.status.queuePosition}')" ""
kubectl -n $NS delete pods -l stranger=yes --wait=false >/dev/null
kubectl -n $NS delete configmap stranger-owner >/dev/null

# --- fair admission: three users, cap 2 ------------------------------------------------------
# alice asks for three, then bob for two, then carol for one (1.1 s apart: distinct
# creationTimestamps). A freed slot goes to the user holding the fewest, oldest first.
kill_controller TERM
kubectl -n $NS delete sandboxes --all --wait=true --timeout=60s >/dev/null
AUDIT=$YAO_PLANE_DIR/logs/audit.log
audit_before=$(wc -l < "$AUDIT" 2>/dev/null || echo 0)
start_controller "$LOG" --namespace $NS --max-running 2
sbu() { # name user
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: %s, chatID: %s, lifecycle: persistent}\n' \
        "$1" "$2" "$1" | kubectl -n $NS apply -f - >/dev/null
}
for x in a1:alice a2:alice a3:alice b1:bob b2:bob c1:carol; do sbu "fair-${x%%:*}" "${x#*:}"; sleep 1.1; done
check "fair: alice's first two run" eventually 20 eval 'phase_is $NS fair-a1 Running && phase_is $NS fair-a2 Running'
positions() { for n in a3 b1 b2 c1; do printf '%s=%s ' $n "$(field fair-$n '{.status.queuePosition}')"; done; }
check "fair: the others wait in line round-robin (bob, carol, bob, then alice's third)" \
    eventually 25 eval '[ "$(positions)" = "a3=4 b1=1 b2=3 c1=2 " ]'
echo "    positions: $(positions)"
kubectl -n $NS delete sandbox fair-a1 --wait=false >/dev/null
check "fair: a freed slot goes to bob (holds none), not to alice's older third" eventually 30 phase_is $NS fair-b1 Running
check "fair: alice's third still waits" phase_is $NS fair-a3 Pending
check "fair: then carol, alice, bob" eventually 25 eval '[ "$(positions)" = "a3=2 b1= b2=3 c1=1 " ]'
kubectl -n $NS delete sandbox fair-a2 --wait=false >/dev/null
check "fair: the next freed slot goes to carol" eventually 30 phase_is $NS fair-c1 Running
live_pods() { kubectl -n $NS get pods -l app.kubernetes.io/managed-by=yao-sandbox -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1' | wc -l; }
check "fair: never more than 2 pods" eq "$(live_pods)" 2
sleep 2   # the audit log is written in batches (max wait 1 s)
dup_creates() { tail -n +$((audit_before + 1)) "$AUDIT" | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    ev = json.loads(line)
    o = ev.get("objectRef", {})
    if ev.get("verb") == "create" and o.get("resource") in ("pods", "persistentvolumeclaims") and \
            o.get("namespace") == sys.argv[1] and ev.get("responseStatus", {}).get("code") == 409 and \
            ev["user"]["username"].startswith("system:serviceaccount:yao-sandbox-system:"):
        n += 1
print(n)' $NS; }
check "the audit log shows no 409 from a duplicate create during these bring-ups" eq "$(dup_creates)" 0

# --- per-user cap: 1 each, no global cap -----------------------------------------------------
kill_controller TERM
kubectl -n $NS delete sandboxes --all --wait=true --timeout=60s >/dev/null
start_controller "$LOG" --namespace $NS --max-running 0 --max-running-per-user 1
sbu pu-a1 alice; sleep 1.1; sbu pu-a2 alice; sbu pu-b1 bob
check "per-user: alice's first and bob's run" eventually 20 eval 'phase_is $NS pu-a1 Running && phase_is $NS pu-b1 Running'
check "per-user: alice's second waits for her own slot" eventually 10 reason_is $NS pu-a2 UserCapacityExceeded
kubectl -n $NS delete sandbox pu-a1 --wait=false >/dev/null
check "per-user: when alice's first goes, her second starts" eventually 30 phase_is $NS pu-a2 Running
check "the controller logged no reconcile failures" eq "$(grep -c 'reconcile failed' "$LOG")" 0
finish
