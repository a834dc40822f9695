#!/usr/bin/env python3
"""tests/chaos/chaos.py — churn plus faults against the real local plane, then invariants.

N Sandboxes across all lifecycles are created, touched, paused/resumed, exec'd into and
deleted at random while the controller is SIGKILLed and restarted, the API server is
restarted once and etcd is paused (SIGSTOP) for a few seconds once. Afterwards the
harness waits for convergence and checks, printing figures:

  - no Sandbox has two pods (or two claims) — checked throughout, not only at the end;
  - no pod or PVC of ours lacks its Sandbox;
  - every live Sandbox's status matches reality (Running ⇔ a ready pod with that IP,
    Stopped ⇔ no pod), and every Sandbox that should run does;
  - no workspace PVC of a live Sandbox was ever replaced (its uid never changed);
  - observedGeneration ⇒ pod matches: a Running Sandbox whose status.observedGeneration
    is its generation has a pod with the spec's env (the harness changes env at random);
  - no accepted touch lost: a short-idle session the API server accepted a touch for is
    not removed before that touch's own idle period ends (a watch records removals);
  - the controller converged within a bound after the last fault.

Randomness is seeded; the seed is printed so a failure can be replayed with --seed.
Standard library only; talks to the API server with the plane's admin token.
"""
import argparse, http.client, json, os, random, signal, ssl, subprocess, sys, time, urllib.parse

p = argparse.ArgumentParser()
p.add_argument("--plane", default=os.environ.get("YAO_PLANE_DIR", "/tmp/yao-sandbox-plane"))
p.add_argument("--controller", required=True)
p.add_argument("--controller-kubeconfig", required=True)
p.add_argument("--namespace", default="yao-it")
p.add_argument("--sandboxes", type=int, default=200)
p.add_argument("--duration", type=float, default=120.0, help="seconds of churn")
p.add_argument("--controller-kills", type=int, default=5)
p.add_argument("--seed", type=int, default=None)
p.add_argument("--converge-timeout", type=float, default=120.0)
p.add_argument("--log", default="chaos-controller.log")
p.add_argument("--src", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
args = p.parse_args()

seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
rng = random.Random(seed)
print("chaos: seed=%d sandboxes=%d duration=%ss controller-kills=%d" % (seed, args.sandboxes, args.duration, args.controller_kills), flush=True)

NS = args.namespace
PLANE = args.plane
PORT = int(open(os.path.join(PLANE, "api-port")).read())
TOKEN = open(os.path.join(PLANE, "admin-token")).read().strip()
CTX = ssl.create_default_context(cafile=os.path.join(PLANE, "pki", "ca.crt"))
GROUP = "/apis/sandbox.yaoapps.com/v1alpha1/namespaces/%s/sandboxes" % NS


class Api:
    """One keep-alive HTTPS connection; reconnects on any failure."""

    def __init__(self):
        self.conn = None

    def call(self, method, path, body=None, ctype="application/json", tries=20):
        for attempt in range(tries):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection("127.0.0.1", PORT, context=CTX, timeout=20)
                hdrs = {"Authorization": "Bearer " + TOKEN, "Accept": "application/json"}
                data = None
                if body is not None:
                    data = json.dumps(body).encode()
                    hdrs["Content-Type"] = ctype
                self.conn.request(method, path, body=data, headers=hdrs)
                r = self.conn.getresponse()
                payload = r.read()
                if r.status in (429, 500, 502, 503, 504):
                    raise IOError("HTTP %d" % r.status)
                return r.status, (json.loads(payload) if payload else {})
            except (OSError, http.client.HTTPException, ValueError):
                self.conn = None
                time.sleep(min(0.2 * (attempt + 1), 2.0))  # the API server may be restarting
        raise RuntimeError("%s %s: API unreachable" % (method, path))


api = Api()
stats = {k: 0 for k in ("created", "deleted", "touched", "spec_changes", "paused", "resumed", "execs", "exec_failures",
                        "controller_kills", "apiserver_restarts", "etcd_pauses", "double_pod_seen",
                        "double_claim_seen", "observed_mismatch_seen")}
claim_uids = {}   # sandbox name -> first workspace PVC uid seen (for persistent / long-running)
names = []
touches = []      # (name, time the accepted touch was sent) for short-idle sessions
our_deletes = {}  # name -> when the harness itself deleted it
removed_at = {}   # name -> when a watch saw it deleted


def watch_removals():
    """Record when each Sandbox disappears (watch, relist after any failure: a removal
    seen late only makes the lost-touch check weaker, never wrong)."""
    import threading
    def run():
        known = set()
        while True:
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", PORT, context=CTX, timeout=120)
                hdrs = {"Authorization": "Bearer " + TOKEN, "Accept": "application/json"}
                conn.request("GET", GROUP, headers=hdrs)
                resp = conn.getresponse()
                lst = json.loads(resp.read())
                if resp.status != 200 or "items" not in lst:
                    raise RuntimeError("list: HTTP %d" % resp.status)  # (an API server restarting)
                now_names = {i["metadata"]["name"] for i in lst.get("items", [])}
                for n in known - now_names:
                    removed_at.setdefault(n, time.time())
                known = now_names
                q = urllib.parse.urlencode({"watch": "true", "resourceVersion": lst["metadata"]["resourceVersion"],
                                            "timeoutSeconds": "60"})
                conn.request("GET", GROUP + "?" + q, headers=hdrs)
                r = conn.getresponse()
                while True:
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev["type"] == "ERROR":
                        break
                    n = ev["object"]["metadata"]["name"]
                    if ev["type"] == "DELETED":
                        removed_at.setdefault(n, time.time())
                        known.discard(n)
                    else:
                        known.add(n)
            except Exception:
                time.sleep(0.2)
    threading.Thread(target=run, daemon=True).start()


def play_kubelet():
    """kwok runs no containers: finish each one-shot pod (its run is the pod's own process)
    as the kubelet would report it, a moment after it is Running: phase Succeeded and
    state.terminated with exit code 0 and the wrapper's termination message (stdout of
    "echo chaos N"; see controller/sandbox/model/oneshot.h)."""
    import base64, threading
    def run():
        kapi = Api()
        while True:
            try:
                for p in owned_with(kapi, "pods"):
                    c = p["spec"]["containers"][0]
                    if p.get("status", {}).get("phase") != "Running" or c.get("command", [])[3:4] != ["yao-run"]:
                        continue
                    out = c["command"][-1][len("echo "):] + "\n"
                    msg = "yao-run/1 %d 0\n%s\n.\n" % (len(out), base64.b64encode(out.encode()).decode())
                    t = now_rfc3339()
                    kapi.call("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (NS, p["metadata"]["name"]), {"status": {
                        "phase": "Succeeded",
                        "containerStatuses": [{"name": "sandbox", "image": c["image"], "imageID": "", "ready": False,
                                               "restartCount": 0, "state": {"running": None, "terminated": {
                                                   "exitCode": 0, "reason": "Completed", "message": msg,
                                                   "startedAt": t, "finishedAt": t}}}]}},
                              ctype="application/strategic-merge-patch+json", tries=3)
            except Exception:
                pass
            time.sleep(0.5)
    threading.Thread(target=run, daemon=True).start()


def owned_with(a, kind_path):
    st, lst = a.call("GET", "/api/v1/namespaces/%s/%s?labelSelector=%s" % (
        NS, kind_path, urllib.parse.quote("app.kubernetes.io/managed-by=yao-sandbox")))
    return lst.get("items", [])


def short_idle(name):
    return int(name.split("-")[1]) % 8 == 2


def now_rfc3339():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


# Every eighth Sandbox is a session with a short idle timeout: touched at random, removed
# when idle, so touches race the controller's idle removal ("no accepted touch lost").
SHORT_IDLE = 3.0


def sandbox(i):
    lifecycle = ["persistent", "long-running", "session", "one-shot"][i % 4]
    spec = {"userID": "chaos", "chatID": "c%03d" % i, "lifecycle": lifecycle, "workspace": {"size": "1Gi"}}
    if lifecycle in ("session", "long-running"):
        spec["idleTimeout"] = "%ds" % SHORT_IDLE if i % 8 == 2 else "1h"
    if lifecycle == "one-shot":
        spec["run"] = {"command": ["sh", "-c", "echo chaos %d" % i]}
        spec["ttlSecondsAfterFinished"] = 3600
    return {"apiVersion": "sandbox.yaoapps.com/v1alpha1", "kind": "Sandbox",
            "metadata": {"name": "chaos-%03d" % i}, "spec": spec}


def owned(kind_path):
    st, lst = api.call("GET", "/api/v1/namespaces/%s/%s?labelSelector=%s" % (
        NS, kind_path, urllib.parse.quote("app.kubernetes.io/managed-by=yao-sandbox")))
    return lst.get("items", [])


def owner_uid(obj):
    for r in obj["metadata"].get("ownerReferences", []):
        if r.get("controller") and r.get("kind") == "Sandbox":
            return r["uid"]
    return None


def list_sandboxes():
    st, lst = api.call("GET", GROUP)
    return {s["metadata"]["name"]: s for s in lst.get("items", [])}


def snapshot_checks():
    """Invariants that must hold at every instant: never two live pods/claims for one Sandbox."""
    for kind, key in (("pods", "double_pod_seen"), ("persistentvolumeclaims", "double_claim_seen")):
        seen = {}
        for o in owned(kind):
            if o["metadata"].get("deletionTimestamp"):
                continue
            u = owner_uid(o)
            seen[u] = seen.get(u, 0) + 1
        stats[key] += sum(1 for c in seen.values() if c > 1)
    # observedGeneration ⇒ pod matches, at any instant (the harness changes nothing
    # between these two reads)
    sbs = {s["metadata"]["uid"]: s for s in list_sandboxes().values()}
    for p in owned("pods"):
        sb = sbs.get(owner_uid(p))
        if not sb or p["metadata"].get("deletionTimestamp") or sb["spec"]["lifecycle"] == "one-shot":
            continue
        if sb.get("status", {}).get("observedGeneration") != sb["metadata"].get("generation"):
            continue
        want = {e["name"]: e.get("value") for e in sb["spec"].get("env", [])}
        have = {e["name"]: e.get("value") for e in p["spec"]["containers"][0].get("env", [])}
        if any(have.get(k) != v for k, v in want.items()):
            stats["observed_mismatch_seen"] += 1


def remember_claims():
    sbs = list_sandboxes()
    by_uid = {s["metadata"]["uid"]: n for n, s in sbs.items()}
    for c in owned("persistentvolumeclaims"):
        n = by_uid.get(owner_uid(c))
        if n and sbs[n]["spec"]["lifecycle"] in ("persistent", "long-running") and not c["metadata"].get("deletionTimestamp"):
            claim_uids.setdefault(n, c["metadata"]["uid"])


# --- the controller under test -------------------------------------------------------------------
ctl = None
ctl_log = open(args.log, "ab")


def start_controller():
    global ctl
    ctl = subprocess.Popen([args.controller, "--kubeconfig", args.controller_kubeconfig, "--namespace", NS,
                            "--max-running", "0"], stdout=ctl_log, stderr=ctl_log)


def kill_controller():
    ctl.send_signal(signal.SIGKILL)
    ctl.wait()
    stats["controller_kills"] += 1


def exec_into(name):
    st, sb = api.call("GET", GROUP + "/" + name)
    pod = sb.get("status", {}).get("podName") if st == 200 else None
    if not pod or sb.get("status", {}).get("phase") != "Running":
        return
    cli = os.path.join(os.path.dirname(args.controller), "yao-sandbox")
    kc = os.path.join(PLANE, "kubeconfig")
    if os.path.exists(cli):
        cmd = [cli, "--kubeconfig", kc, "exec", name, "-n", NS, "--", "sh", "-c", "echo ok"]
    else:
        cmd = ["kubectl", "--kubeconfig", kc, "-n", NS, "exec", pod, "--", "sh", "-c", "echo ok"]
    stats["execs"] += 1
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=30)
        if out.returncode != 0 or out.stdout.strip() != b"ok":
            stats["exec_failures"] += 1
    except subprocess.TimeoutExpired:
        stats["exec_failures"] += 1


# --- churn with faults -------------------------------------------------------------------------------
watch_removals()
play_kubelet()
start_controller()
t_start = time.time()
kill_times = sorted(rng.uniform(0.05, 0.9) * args.duration for _ in range(args.controller_kills))
apiserver_at = rng.uniform(0.3, 0.6) * args.duration
etcd_at = rng.uniform(0.6, 0.85) * args.duration
next_i = 0
created_live = set()
last_fault = t_start

def inject_faults(t):
    """Runs every fault planned at or before t (more than one when the loop was slow)."""
    global apiserver_at, etcd_at, last_fault
    while kill_times and t >= kill_times[0]:
        kill_times.pop(0)
        kill_controller()
        time.sleep(rng.uniform(0.0, 1.5))
        start_controller()
        last_fault = time.time()
        print("  %6.1fs controller killed and restarted" % (time.time() - t_start), flush=True)
    if apiserver_at is not None and t >= apiserver_at:
        apiserver_at = None
        subprocess.run([os.path.join(args.src, "tests/cluster/restart-component"), "kube-apiserver"], check=True,
                       env=dict(os.environ, YAO_PLANE_DIR=PLANE))
        stats["apiserver_restarts"] += 1
        api.conn = None
        last_fault = time.time()
        print("  %6.1fs kube-apiserver restarted" % (time.time() - t_start), flush=True)
    if etcd_at is not None and t >= etcd_at:
        etcd_at = None
        etcd_pid = int(open(os.path.join(PLANE, "pids", "etcd.pid")).read())
        os.kill(etcd_pid, signal.SIGSTOP)
        time.sleep(4)
        os.kill(etcd_pid, signal.SIGCONT)
        stats["etcd_pauses"] += 1
        last_fault = time.time()
        print("  %6.1fs etcd paused for 4 s" % (time.time() - t_start), flush=True)


while time.time() - t_start < args.duration:
    inject_faults(time.time() - t_start)
    action = rng.random()
    if next_i < args.sandboxes and (action < 0.45 or not created_live):
        obj = sandbox(next_i)
        st, _ = api.call("POST", GROUP, obj)
        if st in (200, 201, 409):
            created_live.add(obj["metadata"]["name"])
            names.append(obj["metadata"]["name"])
            stats["created"] += 1
        next_i += 1
    elif created_live:
        name = rng.choice(sorted(created_live))
        if action < 0.60:
            t_sent = time.time()
            st, _ = api.call("PATCH", GROUP + "/" + name,
                             {"metadata": {"annotations": {"sandbox.yaoapps.com/last-used-at": now_rfc3339()}}},
                             "application/merge-patch+json")
            stats["touched"] += 1
            if st == 200 and short_idle(name):
                touches.append((name, t_sent))
        elif action < 0.75:
            st, sb = api.call("GET", GROUP + "/" + name)
            if st == 200:
                paused = not sb["spec"].get("paused", False)
                api.call("PATCH", GROUP + "/" + name, {"spec": {"paused": paused}}, "application/merge-patch+json")
                stats["paused" if paused else "resumed"] += 1
        elif action < 0.80:
            exec_into(name)
        elif action < 0.85:
            if not name.startswith("chaos-") or int(name.split("-")[1]) % 4 == 3:
                pass  # one-shot pods run to the end; their spec is not changed
            else:
                api.call("PATCH", GROUP + "/" + name, {"spec": {"env": [{"name": "CHAOS_V", "value": str(rng.randrange(1 << 20))}]}},
                         "application/merge-patch+json")
                stats["spec_changes"] += 1
        elif action < 0.92 and len(created_live) > max(2, next_i // 2):
            # keep at least half of what was created alive, so the end state has substance
            our_deletes[name] = time.time()
            api.call("DELETE", GROUP + "/" + name)
            created_live.discard(name)
            claim_uids.pop(name, None)
            stats["deleted"] += 1
    if rng.random() < 0.15:
        snapshot_checks()
        remember_claims()
    time.sleep(rng.uniform(0.0, 0.15))

# A fault still planned when the window closed (the loop was slow, e.g. behind the etcd pause) runs now,
# so every run sees the faults it was asked for.
inject_faults(float("inf"))
print("chaos: churn done after %.1fs; %s" % (time.time() - t_start, json.dumps(stats)), flush=True)
# Unpause everything so that every Sandbox should end up running (or finished).
for name, sb in list_sandboxes().items():
    if sb["spec"].get("paused"):
        api.call("PATCH", GROUP + "/" + name, {"spec": {"paused": False}}, "application/merge-patch+json")
last_change = time.time()


# --- convergence and invariants -------------------------------------------------------------------
def violations():
    out = []
    sbs = list_sandboxes()
    uids = {s["metadata"]["uid"]: n for n, s in sbs.items()}
    pods = [p for p in owned("pods") if not p["metadata"].get("deletionTimestamp")]
    pvcs = [c for c in owned("persistentvolumeclaims") if not c["metadata"].get("deletionTimestamp")]
    pods_by, pvcs_by = {}, {}
    for o in pods:
        pods_by.setdefault(uids.get(owner_uid(o)), []).append(o)
    for o in pvcs:
        pvcs_by.setdefault(uids.get(owner_uid(o)), []).append(o)
    orphans = len(pods_by.get(None, [])) + len(pvcs_by.get(None, []))
    if orphans:
        out.append("%d pods/PVCs without their Sandbox" % orphans)
    for n, sb in sbs.items():
        if sb["metadata"].get("deletionTimestamp"):
            continue
        st = sb.get("status", {})
        phase = st.get("phase")
        lc = sb["spec"]["lifecycle"]
        mine = pods_by.get(n, [])
        if len(mine) > 1 or len(pvcs_by.get(n, [])) > 1:
            out.append("%s has %d pods, %d claims" % (n, len(mine), len(pvcs_by.get(n, []))))
        if lc == "one-shot":
            if phase not in ("Succeeded", "Failed"):
                out.append("%s (one-shot) is %s, not finished" % (n, phase))
            elif pvcs_by.get(n):
                out.append("%s finished but its claim is not being deleted" % n)
            elif any(p.get("status", {}).get("phase") not in ("Succeeded", "Failed") for p in mine):
                # its finished pod is kept for its log until the Sandbox goes (like a Job's)
                out.append("%s finished but still has a pod that is not finished" % n)
            continue
        if phase != "Running":
            out.append("%s should run but is %s" % (n, phase))
            continue
        if not mine:
            out.append("%s says Running without a pod" % n)
            continue
        pod = mine[0]
        if st.get("observedGeneration") == sb["metadata"].get("generation"):
            want = {e["name"]: e.get("value") for e in sb["spec"].get("env", [])}
            have = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}
            if any(have.get(k) != v for k, v in want.items()):
                out.append("%s: observedGeneration %s but its pod has another env" % (n, st.get("observedGeneration")))
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))
        if not ready or pod["status"].get("podIP") != st.get("podIP") or pod["metadata"]["name"] != st.get("podName"):
            out.append("%s status does not match its pod" % n)
        if n in claim_uids:
            c = pvcs_by.get(n, [])
            if not c or c[0]["metadata"]["uid"] != claim_uids[n]:
                out.append("%s lost its workspace claim (uid changed)" % n)
    return out, len(sbs), len(pods), len(pvcs)


churn_end = time.time()
deadline = time.time() + args.converge_timeout
while True:
    v, nsb, npod, npvc = violations()
    if not v or time.time() > deadline:
        break
    time.sleep(1)
converged_at = time.time()
converged_after = converged_at - churn_end
print("chaos: %d Sandboxes, %d pods, %d claims at the end; %d workspace claims tracked" % (nsb, npod, npvc, len(claim_uids)))
print("chaos: faults: %d controller kills, %d API server restarts, %d etcd pauses" % (
    stats["controller_kills"], stats["apiserver_restarts"], stats["etcd_pauses"]))
print("chaos: operations: %d created, %d deleted, %d touched, %d paused, %d resumed, %d execs (%d failed)" % (
    stats["created"], stats["deleted"], stats["touched"], stats["paused"], stats["resumed"], stats["execs"], stats["exec_failures"]))
print("chaos: a Sandbox with two pods/claims was seen %d/%d times during the churn" % (stats["double_pod_seen"], stats["double_claim_seen"]))
print("chaos: converged %.1f s after the churn ended (%.1f s after the last fault)" % (
    converged_after, converged_at - last_fault))
ctl.send_signal(signal.SIGTERM)
ctl.wait()
# A removal within an accepted touch's own idle period lost that touch (0.5 s for watch
# delivery; removals the harness made itself do not count).
lost = sorted({n for n, t in touches if n in removed_at and n not in our_deletes and removed_at[n] < t + SHORT_IDLE - 0.5})
print("chaos: %d accepted touches of short-idle sessions, %d of those sessions removed when idle, %d lost" % (
    len(touches), len({n for n, _ in touches if n in removed_at and n not in our_deletes}), len(lost)))
failed = 0
checks = [
    ("no Sandbox ever had two pods", stats["double_pod_seen"] == 0),
    ("no Sandbox ever had two claims", stats["double_claim_seen"] == 0),
    ("observedGeneration never claimed a pod that did not match (%d spec changes)" % stats["spec_changes"],
     stats["observed_mismatch_seen"] == 0),
    ("all invariants hold after convergence (%s)" % ("; ".join(v[:5]) or "none violated"), not v),
    ("converged within %ds of the end of the churn" % args.converge_timeout, not v),
    ("no accepted touch lost (%s)" % (", ".join(lost[:5]) or "none"), not lost),
    ("the faults happened", stats["controller_kills"] >= args.controller_kills and stats["apiserver_restarts"] == 1 and stats["etcd_pauses"] == 1),
    # an exec can race a pause or the API server restart; most must succeed
    ("execs into running sandboxes succeeded (%d of %d)" % (stats["execs"] - stats["exec_failures"], stats["execs"]),
     stats["execs"] == 0 or stats["exec_failures"] * 2 <= stats["execs"]),
]
for name, ok in checks:
    print(("ok   " if ok else "FAIL ") + name)
    failed += 0 if ok else 1
print("seed %d (replay with --seed %d)" % (seed, seed))
print("%d passed, %d failed" % (len(checks) - failed, failed))
sys.exit(1 if failed else 0)
