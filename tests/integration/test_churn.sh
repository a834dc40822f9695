#!/usr/bin/env bash
# One record per Sandbox, keyed by UID: a one-shot Sandbox deleted while its run is in
# flight does not wedge a new Sandbox of the same name; a churn of one-shot Sandboxes
# (created, run, removed after ttlSecondsAfterFinished 0) leaves the work queue and the
# controller's memory flat afterwards: a Sandbox that no longer exists leaves the queue
# for good (not even the resync, 2 s here, brings its key back). CHURN_N sets the count
# per round (default 150 in `make test`; `make chaos` runs 1000).
. "$(dirname "$0")/lib.sh"
NS=yao-it
LOG=$BUILD_DIR/test-churn.log
: > "$LOG"
N=${CHURN_N:-150}
install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --resync 2s --metrics-addr 127.0.0.1:0
PID=${CONTROLLER_PIDS[-1]}
port() { sed -n 's/.*serving probes and metrics.* port=\([0-9]*\).*/\1/p' "$LOG" | tail -n 1; }
eventually 10 eval '[ -n "$(port)" ]'
metric() { curl -s "http://127.0.0.1:$(port)/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }
oneshot() { # name command ttl
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: churn, chatID: %s, lifecycle: one-shot, ttlSecondsAfterFinished: %s, run: {command: [sh, -c, "%s"]}}\n' \
        "$1" "$1" "$3" "$2"
}

# kwok runs no containers: this plays the kubelet for one-shot pods. Each Running pod's own
# command (the wrapper and the run's argv) runs here; when it exits, the pod's status gets
# what the kubelet would report (state.terminated with the exit code and the wrapper's
# termination message, phase Succeeded/Failed). A pod deleted meanwhile has its process
# killed, as its container would be.
python3 - "$NS" "$YAO_PLANE_DIR/kubeconfig" >>"$LOG.kubelet" 2>&1 <<'PY' &
import json, os, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
ns, kc = sys.argv[1], sys.argv[2]
k = ["kubectl", "--kubeconfig", kc, "-n", ns]
procs = {}   # pod uid -> (name, Popen, message file, started)
done = set()
pool = ThreadPoolExecutor(8)
def now(): return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
def report(name, code, msgfile, started):
    message = open(msgfile, encoding="utf-8", errors="replace").read()
    os.unlink(msgfile)
    st = {"phase": "Succeeded" if code == 0 else "Failed",
          "containerStatuses": [{"name": "sandbox", "image": "x", "imageID": "", "ready": False, "restartCount": 0,
              "state": {"running": None, "terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                        "message": message, "startedAt": started, "finishedAt": now()}}}]}
    subprocess.run(k + ["patch", "pod", name, "--subresource=status", "--type=strategic", "-p",
                        json.dumps({"status": st})], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while True:
    out = subprocess.run(k + ["get", "pods", "-l", "app.kubernetes.io/managed-by=yao-sandbox", "-o", "json"],
                         capture_output=True, text=True)
    try: pods = json.loads(out.stdout)["items"]
    except ValueError: pods = []
    seen = set()
    for p in pods:
        uid, name = p["metadata"]["uid"], p["metadata"]["name"]
        seen.add(uid)
        c = p["spec"]["containers"][0]
        if uid in procs or uid in done or p["status"].get("phase") != "Running" or c["command"][3:4] != ["yao-run"]:
            continue
        fd, msg = tempfile.mkstemp()
        os.close(fd)
        env = {"PATH": os.environ["PATH"], "YAO_RUN_MESSAGE": msg}
        env.update({e["name"]: e.get("value", "") for e in c.get("env", [])})
        procs[uid] = (name, subprocess.Popen(c["command"], env=env, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL), msg, now())
    for uid in list(procs):
        name, pr, msg, started = procs[uid]
        if uid not in seen:
            pr.kill(); pr.wait(); os.unlink(msg); del procs[uid]; done.add(uid)
        elif pr.poll() is not None:
            del procs[uid]; done.add(uid)
            pool.submit(report, name, pr.returncode, msg, started)
    time.sleep(0.3)
PY
KUBELET=$!
on_exit "kill $KUBELET 2>/dev/null"

# --- deleted mid-run, recreated with the same name -----------------------------------------
oneshot twin "sleep 3; echo first" 300 | kubectl -n $NS apply -f - >/dev/null
check "a one-shot run starts" eventually 20 reason_is $NS twin RunningCommand
kubectl -n $NS delete sandbox twin --wait=true >/dev/null
oneshot twin "echo second" 300 | kubectl -n $NS apply -f - >/dev/null
check "a new Sandbox of the same name runs its own command (not wedged in RunningCommand)" \
    eventually 30 phase_is $NS twin Succeeded
check "  and records its own output" eq "$(kubectl -n $NS get sandbox twin -o jsonpath='{.status.run.stdout}')" "second"
kubectl -n $NS delete sandbox twin --wait=false >/dev/null

# --- churn ----------------------------------------------------------------------------------------
# Two rounds: memory after the second is compared with after the first (the allocator's
# arenas fill during the first), the queue with before both.
sleep 5
q0=$(metric yao_sandbox_workqueue_waiting); r0=$(rss_kb)
left() { [ "$(kubectl -n $NS get sandboxes --no-headers 2>/dev/null | wc -l)" = 0 ]; }
nothing_owned() { [ "$(kubectl -n $NS get pods,pvc -l app.kubernetes.io/managed-by=yao-sandbox --no-headers 2>/dev/null | wc -l)" = 0 ]; }
for round in 1 2; do
    t0=$(now_ms)
    for i in $(seq 1 "$N"); do oneshot "churn-$round-$i" true 0; echo ---; done | kubectl -n $NS apply -f - >/dev/null
    check "round $round: $N one-shot Sandboxes run and are removed" eventually 600 left
    echo "    round $round of $N took $(( ($(now_ms) - t0) / 1000 )) s"
    check "  their pods and claims are gone" eventually 60 nothing_owned
    # Deleted keys are swept (their objects gone), then dropped from the queue; with a
    # 2 s resync a key that stayed would be waiting again and again.
    sleep 10
    eval "r$round=\$(rss_kb)"
done
q1=$(metric yao_sandbox_workqueue_waiting); d1=$(metric yao_sandbox_workqueue_depth)
echo "    work queue waiting: $q0 before, $q1 after; depth after: $d1; RSS ${r0} kB before, ${r1} kB after round 1, ${r2} kB after round 2"
# A key whose Sandbox went while the cache still showed its objects waits out the orphan
# sweep's 30 s grace once (one more than before, then gone); a deleted key that stayed
# would be waiting again at every resync and never drop back.
check "the work queue is back where it was (no deleted key left in it)" eventually 45 eval \
    '[ "$(metric yao_sandbox_workqueue_waiting)" -le "$q0" ]'
check "  and nothing is ready to run" eq "$d1" 0
sleep 5
check "  and stays there over more resync periods" test "$(metric yao_sandbox_workqueue_waiting)" -le "$q0"
# Bounded caches still fill during the second round: the Event recorder's aggregation LRU
# (3 Events per one-shot, ~600 B each, capped at 4096 entries: ~540 KiB a round until
# full) and the swept Sandboxes' one-minute tombstones (~0.6 KiB each, the last minute's).
# A leak of 5 KiB per Sandbox (a packed object, a record and its Events together) would
# still show: the bound is 5.12 KiB per Sandbox of a round (1.5 MiB at 300; 300 grew it
# by 836 KiB in a clean-clone run).
bound=$((1536 * N / 300))
check "controller memory is flat: the second round grew RSS by less than $bound KiB" test $((r2 - r1)) -lt "$bound"
check "the controller logged no reconcile failures" eq "$(grep -c 'reconcile failed' "$LOG")" 0
finish
