"""bench/single.py — the real-node-single scenario (docs/benchmarks.md): single starts on the
real node, one at a time, each beside the floor, and where their time goes.

Three kinds, K repetitions each, the floor and ours alternating (which goes first flips every
repetition):
  create  ours: a new Sandbox → Running + Ready;  floor: a bare pod + a fresh claim of the same
          class, image and resources → pod Ready;  the peer (optional): a new agent-sandbox
          Sandbox with a volumeClaimTemplate → Ready (its own pass, with only its controller).
  wake    ours: a long-running Sandbox stopped by its idle timeout (phase Stopped, reason Idle:
          the pod deleted, the workspace kept), then touched — the annotation
          sandbox.yaoapps.com/last-used-at set to now, what `yao-sandbox exec` and the Go
          client's Touch write — → Running + Ready;  floor: a bare pod created again on the
          existing, Bound claim → Ready.
  resume  ours: spec.paused true (pod gone) → false → Running + Ready;  floor: as for wake.
  wake-warm  ours: a session Sandbox of a class with spec.warmIdle (cpu 50m, window 1h) left
          idle past its idleTimeout (10 s): warm-idle (Ready reason WarmIdle, the pod kept, its
          CPU resized in place down to 50m and the kubelet done with it), 3 s later touched, and
          at once the returning user's first command (`kubectl exec … -- true`): ready_ms is
          touch → Ready without WarmIdle, as for the cold wake (the pod never stopped; its CPU
          back at the kubelet ~50 ms after the controller's resize); first_exec_ms touch → that
          exec answered; awake_resized_ms touch → Ready and the CPU back as the kubelet's status
          reports it (its status trails the cgroup by about a second); exec_rt_ms a second exec
          after that. Target: ready p50 ≤ 0.1 × ours' cold wake of the same run; beside it the
          first command: first_exec_ms against the cold wake's Ready plus its first exec
          (first_exec_rt_ms, sent once the cold wake is Ready).  floor: as for wake.
Times: this process's monotonic clock when the request is sent and when the watch event is
read. Beside them, per start, what the node and the controller logged: the kubelet's
"Observed pod startup duration", containerd's RunPodSandbox / CreateContainer /
StartContainer, and (ours) the controller's "pod created" line — wall-clock times, put on the
same axis through the offset between the two clocks taken at the start.
"""
import datetime
import importlib
import json
import os
import re
import statistics
import sys
import threading
import time

# bench.py's module as it runs: run as a script it is __main__, whose globals configure() set
# (class, image, resources, the peer's API group); a fresh `import bench` would have defaults.
B = sys.modules["__main__"] if hasattr(sys.modules.get("__main__"), "floor_objects") else importlib.import_module("bench")

KINDS = ("create", "wake", "resume", "wake-warm")
RETURN_AFTER_S = 3.0   # wake-warm: from the pod's warm-idle resize done to the touch
WARM_CPU = "50m"   # the README's example floor: a tenth of the scenario's 500m limit (150m requested)
ANN_LAST_USED = "sandbox.yaoapps.com/last-used-at"
CLOCK_OFFSET = time.time() - time.monotonic()   # wall = monotonic + offset


def iso_now_ms():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def wall_of_log(ts):
    """An RFC 3339 time with up to 9 fractional digits (klog, containerd, ours) -> epoch s."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", ts)
    if not m:
        return None
    base = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return base.timestamp() + (float("0." + m.group(2)) if m.group(2) else 0.0)


def klog_wall(line):
    """klog's header 'I1202 05:06:07.123456 ...' -> epoch s (the year from today)."""
    m = re.match(r"[IWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)", line)
    if not m:
        return None
    year = datetime.datetime.now(datetime.timezone.utc).year
    dt = datetime.datetime(year, int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                           int(m.group(5)), tzinfo=datetime.timezone.utc)
    return dt.timestamp() + float("0." + m.group(6))


class Tracker:
    """Watches of one namespace (pods, PVCs, and the Sandbox kind of the controller under test);
    every event kept with its read time, so a waiter can ask for the first event after a
    moment that satisfies a predicate."""

    def __init__(self, api, ns, sandbox_path=None):
        self.api, self.ns = api, ns
        self.cv = threading.Condition()
        self.events = []   # (t, kind, type, obj)
        paths = {"pod": f"/api/v1/namespaces/{ns}/pods", "pvc": f"/api/v1/namespaces/{ns}/persistentvolumeclaims"}
        if sandbox_path:
            paths["sandbox"] = sandbox_path
        self.watches = [B.Watch(api, p, self._cb(kind)) for kind, p in paths.items()]

    def _cb(self, kind):
        def on(t, typ, obj):
            with self.cv:
                self.events.append((t, kind, typ, obj))
                self.cv.notify_all()
        return on

    def start(self):
        for w in self.watches:
            w.start()
        for w in self.watches:
            w.established.wait(30)
            if w.error:
                raise w.error

    def stop(self):
        for w in self.watches:
            w.stop()

    def first(self, since, kind, pred, timeout, what):
        """-> (t, obj) of the first event of `kind` read at or after `since` whose object
        satisfies pred(type, obj); raises after timeout s."""
        deadline = time.monotonic() + timeout
        i = 0
        with self.cv:
            while True:
                while i < len(self.events):
                    t, k, typ, obj = self.events[i]
                    i += 1
                    if k == kind and t >= since and pred(typ, obj):
                        return t, obj
                broken = [w for w in self.watches if w.error]
                if broken:
                    raise RuntimeError(f"watch failed: {broken[0].error}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{what}: not seen in {timeout:.0f} s")
                self.cv.wait(min(left, 0.5))


def ours_ready(sb):
    return (sb.get("status") or {}).get("phase") == "Running" and B.cond_true(sb, "Ready")


def ready_reason(sb):
    return next((c.get("reason") for c in (sb.get("status") or {}).get("conditions") or []
                 if c.get("type") == "Ready"), None)


def cpu_millis(q):
    """A CPU quantity ("250m", "1", "0.5") -> millicores (None when absent)."""
    if q is None:
        return None
    q = str(q)
    return int(q[:-1]) if q.endswith("m") else int(round(float(q) * 1000))


def resize_in_flight(pod):
    """Is a resize of the pod still pending or in progress at the kubelet (the conditions
    PodResizePending / PodResizeInProgress, 1.33+)?"""
    return any(c.get("type") in ("PodResizePending", "PodResizeInProgress") and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def pod_cpu_limit(pod):
    """The sandbox container's CPU limit as the kubelet reports it applied (containerStatuses
    resources), in millicores."""
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        lim = ((c.get("resources") or {}).get("limits") or {}).get("cpu")
        if lim is not None:
            return cpu_millis(lim)
    return None


def named(name):
    return lambda typ, o: typ != "DELETED" and o["metadata"]["name"] == name


SELECTED_NODE = "volume.kubernetes.io/selected-node"


def scheduling_events(api, ns, uid):
    """The scheduler's Events about the pod uid: how often it failed to schedule and the first
    reason given (a pod waiting for its claim shows here), -> dict for the sample."""
    st, body = api.call("GET", f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.uid%3D{uid}")
    if st != 200:
        return {}
    failed = [e for e in body.get("items") or [] if e.get("reason") == "FailedScheduling"]
    out = {"failed_scheduling": sum(int(e.get("count") or 1) for e in failed)}
    if failed:
        out["failed_scheduling_first"] = (failed[0].get("message") or "")[:200]
    return out


def ours_pod_of(name):
    return lambda typ, o: typ == "ADDED" and (o["metadata"].get("labels") or {}).get("sandbox.yaoapps.com/name") == name


class Single:
    """One pass of the scenario. results[kind][who] = list of samples, each
    {ready_ms, pod_ms, scheduled_ms, bound_ms, pod_ready_ms, pod, uid, t0_wall}."""

    def __init__(self, args, api, workdir, k, timeout=120):
        self.args, self.api, self.workdir, self.k, self.timeout = args, api, workdir, k, timeout
        self.results = {kind: {"floor": [], "ours": [], "agent_sandbox": []} for kind in KINDS}
        self.logs = {}

    # ---- one start, observed
    def _observe(self, tr, t0, who, pod_pred, ready_kind, ready_pred, pvc_name=None, sb_name=None):
        s = {"t0_wall": round(t0 + CLOCK_OFFSET, 3)}
        tp, pod = tr.first(t0, "pod", pod_pred, self.timeout, f"{who}: pod")
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        s.update(ns=pod["metadata"]["namespace"], pod=name, uid=uid, pod_ms=B.rnd((tp - t0) * 1000))
        ts, _ = tr.first(t0, "pod", lambda typ, o: o["metadata"]["uid"] == uid and bool((o.get("spec") or {}).get("nodeName")),
                         self.timeout, f"{who}: pod {name} scheduled")
        s["scheduled_ms"] = B.rnd((ts - t0) * 1000)
        tr_, _ = tr.first(t0, "pod", lambda typ, o: o["metadata"]["uid"] == uid and B.pod_ready(o),
                          self.timeout, f"{who}: pod {name} Ready")
        s["pod_ready_ms"] = B.rnd((tr_ - t0) * 1000)
        if ready_kind == "pod":
            s["ready_ms"] = s["pod_ready_ms"]
        else:
            tr2, _ = tr.first(t0, ready_kind, ready_pred, self.timeout, f"{who}: Ready")
            s["ready_ms"] = B.rnd((tr2 - t0) * 1000)
        if pvc_name == "auto":   # ours: the claim is the pod's name + -workspace
            pvc_name = f"{name}-workspace"
        if pvc_name:
            # the claim's milestones: created, the scheduler's node chosen (WaitForFirstConsumer:
            # the selected-node annotation, which starts the provisioner), Bound
            milestones = (("claim_ms", lambda o: True),
                          ("selected_node_ms", lambda o: SELECTED_NODE in (o["metadata"].get("annotations") or {})),
                          ("bound_ms", lambda o: (o.get("status") or {}).get("phase") == "Bound"))
            for key, pred in milestones:
                try:
                    tb, _ = tr.first(t0, "pvc", lambda typ, o, pred=pred: o["metadata"]["name"] == pvc_name
                                     and pred(o), 1, f"{who}: {key}")
                    s[key] = B.rnd((tb - t0) * 1000)
                except RuntimeError:
                    pass   # before t0 (a restart on an existing claim)
        s.update(scheduling_events(self.api, s["ns"], uid))
        return s

    def _gone(self, tr, since, uid, what):
        tr.first(since, "pod", lambda typ, o: typ == "DELETED" and o["metadata"]["uid"] == uid, self.timeout, what)

    # ---- the floor
    def floor_create(self, tr, ns, i):
        name = f"floor-{i}"
        objs, _ = B.floor_objects(ns, name, i)
        t0 = time.monotonic()
        for path, body in objs:
            self.api.must("POST", path, body)
        s = self._observe(tr, t0, "floor", named(name), "pod", None, pvc_name=f"{name}-workspace")
        self.results["create"]["floor"].append(s)
        log_sample("floor create", s)
        return s

    def floor_stop(self, tr, ns, i, uid):
        t = time.monotonic()
        self.api.must("DELETE", f"/api/v1/namespaces/{ns}/pods/floor-{i}")
        self._gone(tr, t, uid, f"floor-{i} deleted")

    def floor_restart(self, tr, ns, i, kind):
        name = f"floor-{i}"
        objs, _ = B.floor_objects(ns, name, i)
        path, body = objs[1]
        t0 = time.monotonic()
        self.api.must("POST", path, body)
        s = self._observe(tr, t0, "floor", named(name), "pod", None)
        self.results[kind]["floor"].append(s)
        log_sample(f"floor {kind}", s)
        self.floor_stop(tr, ns, i, s["uid"])
        return s

    # ---- ours
    def ours_path(self, ns, name=""):
        return f"/apis/{B.OURS_GROUP}/namespaces/{ns}/sandboxes" + (f"/{name}" if name else "")

    def ours_patch(self, ns, name, body):
        self.api.must("PATCH", self.ours_path(ns, name), body, ctype="application/merge-patch+json")

    def ours_create(self, tr, ns, i):
        name = f"ours-{i}"
        body = B.ours_sandbox(name, i)
        body["spec"].update(lifecycle="long-running", idleTimeout="1h")
        t0 = time.monotonic()
        self.api.must("POST", self.ours_path(ns), body)
        s = self._observe(tr, t0, "ours", ours_pod_of(name), "sandbox",
                          lambda typ, o: o["metadata"]["name"] == name and ours_ready(o), pvc_name="auto", sb_name=name)
        self.results["create"]["ours"].append(s)
        log_sample("ours create", s)
        return s

    def ours_wait_stopped(self, tr, since, name, uid, what):
        tr.first(since, "sandbox", lambda typ, o: o["metadata"]["name"] == name
                 and (o.get("status") or {}).get("phase") == "Stopped", self.timeout, what)
        self._gone(tr, since, uid, f"{what}: pod gone")

    def ours_start(self, tr, ns, i, kind, patch):
        name = f"ours-{i}"
        t0 = time.monotonic()
        self.ours_patch(ns, name, patch)
        s = self._observe(tr, t0, "ours", ours_pod_of(name), "sandbox",
                          lambda typ, o: o["metadata"]["name"] == name and ours_ready(o))
        if kind == "wake":
            # the returning user's first command, sent once Ready is seen: beside wake-warm's
            t1 = time.monotonic()
            p = B.kubectl(["-n", ns, "exec", s["pod"], "--", "true"], self.args.kubeconfig, check=False)
            s["first_exec_rt_ms"] = B.rnd((time.monotonic() - t1) * 1000) if p.returncode == 0 else None
        self.results[kind]["ours"].append(s)
        log_sample(f"ours {kind}", s)
        return s

    # ---- wake-warm (ours): a return to a warm-idle sandbox
    def ours_warm_wake(self, tr, ns, i, cls):
        name = f"warm-{i}"
        body = B.ours_sandbox(name, 1000 + i, class_name=cls)
        body["spec"].update(lifecycle="session", idleTimeout="1h")
        t = time.monotonic()
        self.api.must("POST", self.ours_path(ns), body)
        _, sb = tr.first(t, "sandbox", lambda typ, o: o["metadata"]["name"] == name and ours_ready(o),
                         self.timeout, f"{name}: Ready")
        _, pod = tr.first(t, "pod", lambda typ, o: (o["metadata"].get("labels") or {}).get("sandbox.yaoapps.com/name")
                          == name and B.pod_ready(o), self.timeout, f"{name}: pod Ready")
        uid, pod_name, full = pod["metadata"]["uid"], pod["metadata"]["name"], cpu_millis(B.CPU)
        if cpu_millis(WARM_CPU) >= full:
            raise RuntimeError(f"wake-warm: the warm-idle floor {WARM_CPU} is not below the sandboxes' CPU {B.CPU}")
        t = time.monotonic()
        # 10 s: long enough that the touch's measures end before the next idle deadline
        self.ours_patch(ns, name, {"spec": {"idleTimeout": "10s"}})
        tr.first(t, "sandbox", lambda typ, o: o["metadata"]["name"] == name and ready_reason(o) == "WarmIdle",
                 self.timeout, f"{name}: warm-idle")
        tr.first(t, "pod", lambda typ, o: o["metadata"]["uid"] == uid and pod_cpu_limit(o) == cpu_millis(WARM_CPU)
                 and not resize_in_flight(o), self.timeout, f"{name}: resized down to {WARM_CPU}, the kubelet done")
        # the user comes back later, not within the kubelet's last status update of the resize
        # (a touch 0.1 s after it met the kubelet still busy with it: every first exec then
        # took about a second)
        time.sleep(RETURN_AFTER_S)
        t0 = time.monotonic()
        self.ours_patch(ns, name, {"metadata": {"annotations": {ANN_LAST_USED: iso_now_ms()}}})
        # the returning user's first command, sent at once: the pod never stopped
        p = B.kubectl(["-n", ns, "exec", pod_name, "--", "true"], self.args.kubeconfig, check=False)
        te = time.monotonic()
        tw, _ = tr.first(t0, "sandbox", lambda typ, o: o["metadata"]["name"] == name and ours_ready(o)
                         and ready_reason(o) != "WarmIdle", self.timeout, f"{name}: awake")
        tp, pod2 = tr.first(t0, "pod", lambda typ, o: o["metadata"]["uid"] == uid and pod_cpu_limit(o) == full,
                            self.timeout, f"{name}: resized back up")
        t1 = time.monotonic()
        p2 = B.kubectl(["-n", ns, "exec", pod_name, "--", "true"], self.args.kubeconfig, check=False)
        exec_rt = (time.monotonic() - t1) * 1000
        restarts = sum(c.get("restartCount", 0) for c in (pod2.get("status") or {}).get("containerStatuses") or [])
        s = {"t0_wall": round(t0 + CLOCK_OFFSET, 3), "ns": ns, "pod": pod_name, "uid": uid,
             "ready_ms": B.rnd((tw - t0) * 1000), "resized_ms": B.rnd((tp - t0) * 1000),
             "first_exec_ms": B.rnd((te - t0) * 1000), "awake_resized_ms": B.rnd((max(tw, tp) - t0) * 1000),
             "exec_rt_ms": B.rnd(exec_rt), "exec_ok": p.returncode == 0 and p2.returncode == 0,
             "restart_count": restarts}
        self.results["wake-warm"]["ours"].append(s)
        log(f"ours wake-warm: {pod_name} Ready (awake) {s['ready_ms']} ms after the touch, its first exec answered "
            f"{s['first_exec_ms']} ms after it (awake and resized as the kubelet reports it {s['awake_resized_ms']}, "
            f"a second exec {s['exec_rt_ms']}, restarts {restarts})")
        self.ours_patch(ns, name, {"spec": {"idleTimeout": "1h"}})
        self.api.must("DELETE", self.ours_path(ns, name))
        return s

    def run_wake_warm(self, tr, ns):
        """wake-warm beside the floor's restart, with a SandboxClass of this run."""
        k, api = self.k, self.api
        cls = f"{ns}-warmidle"
        path = f"/apis/{B.OURS_GROUP}/sandboxclasses"
        body = {"apiVersion": B.OURS_GROUP, "kind": "SandboxClass", "metadata": {"name": cls},
                "spec": {"warmIdle": {"cpu": WARM_CPU, "window": "1h"}}}
        api.must("POST", path, body)
        try:
            for i in range(k):
                for who in (("floor", "ours") if i % 2 == 0 else ("ours", "floor")):
                    if who == "floor":
                        self.floor_restart(tr, ns, i, "wake-warm")
                    else:
                        self.ours_warm_wake(tr, ns, i, cls)
        finally:
            api.call("DELETE", f"{path}/{cls}")

    # ---- the passes
    def run_floor_and_ours(self):
        k, api = self.k, self.api
        ns = f"yao-bench-single-{os.getpid() % 10000:04d}{int(time.time()) % 1000:03d}"
        B.ensure_namespace(api, ns)
        tr = Tracker(api, ns, self.ours_path(ns))
        tr.start()
        run = B.Run(self.args, api, "ours", 1, "single", {"real_node": True, "log_level": "debug"})
        run.ns = ns
        try:
            run.start_controller(self.workdir)
            self.logs["ours"] = os.path.join(self.workdir, f"{ns}.log")
            floor_uid, ours_uid = {}, {}
            # create: one at a time, floor and ours alternating
            for i in range(k):
                for who in (("floor", "ours") if i % 2 == 0 else ("ours", "floor")):
                    if who == "floor":
                        floor_uid[i] = self.floor_create(tr, ns, i)["uid"]
                    else:
                        ours_uid[i] = self.ours_create(tr, ns, i)["uid"]
            # stop them all: ours by its idle timeout (long-running: 24 × idleTimeout without
            # use), the floor's pods deleted (claims kept)
            t = time.monotonic()
            for i in range(k):
                self.ours_patch(ns, f"ours-{i}", {"spec": {"idleTimeout": "1s"}})
            for i in range(k):
                self.floor_stop(tr, ns, i, floor_uid[i])
            for i in range(k):
                self.ours_wait_stopped(tr, t, f"ours-{i}", ours_uid[i], f"ours-{i} stopped by its idle timeout")
            idle = [o for (_, kd, typ, o) in tr.events if kd == "sandbox" and o["metadata"]["name"].startswith("ours-")
                    and (o.get("status") or {}).get("phase") == "Stopped"]
            reasons = sorted({next((c.get("reason") for c in (o.get("status") or {}).get("conditions") or []
                                    if c.get("type") == "Ready"), None) or "?" for o in idle})
            log(f"ours: all {k} stopped by the idle timeout (Ready reasons {reasons}) in {time.monotonic() - t:.1f} s")
            self.stop_reason = reasons
            # wake: a touch; after each, paused (pod deleted, workspace kept) for the resumes
            for kind in ("wake", "resume"):
                for i in range(k):
                    for who in (("floor", "ours") if i % 2 == 0 else ("ours", "floor")):
                        if who == "floor":
                            self.floor_restart(tr, ns, i, kind)
                            continue
                        patch = ({"metadata": {"annotations": {ANN_LAST_USED: iso_now_ms()}}} if kind == "wake"
                                 else {"spec": {"paused": False}})
                        s = self.ours_start(tr, ns, i, kind, patch)
                        t = time.monotonic()
                        self.ours_patch(ns, f"ours-{i}", {"spec": {"paused": True, "idleTimeout": "1h"}})
                        self.ours_wait_stopped(tr, t, f"ours-{i}", s["uid"], f"ours-{i} paused")
            # wake-warm: its own failure (a plane without in-place resize) leaves the others
            try:
                self.run_wake_warm(tr, ns)
            except Exception as e:  # noqa: BLE001 — reported with the kind
                log(f"real-node-single: wake-warm failed: {e}")
                self.warm_error = str(e)
        finally:
            tr.stop()
            if run.proc and run.proc.poll() is None:
                run.proc.terminate()
                try:
                    run.proc.wait(15)
                except Exception:  # noqa: BLE001
                    run.proc.kill()
                    run.proc.wait()
            api.call("DELETE", f"/api/v1/namespaces/{ns}")

    def run_peer(self):
        k, api = self.k, self.api
        ns = f"yao-bench-single-peer-{int(time.time()) % 100000:05d}"
        B.ensure_namespace(api, ns)
        path = f"/apis/{B.PEER_GROUP}/namespaces/{ns}/sandboxes"
        tr = Tracker(api, ns, path)
        tr.start()
        run = B.Run(self.args, api, "agent_sandbox", 1, "single-peer", {"real_node": True})
        run.ns = ns
        try:
            run.start_controller(self.workdir)
            self.logs["agent_sandbox"] = os.path.join(self.workdir, f"{ns}.log")
            for i in range(k):
                name = f"peer-{i}"
                t0 = time.monotonic()
                api.must("POST", path, B.peer_sandbox(name, i))
                s = self._observe(tr, t0, "agent_sandbox", named(name), "sandbox",
                                  lambda typ, o, n=name: o["metadata"]["name"] == n and B.cond_true(o, "Ready"),
                                  pvc_name=f"workspace-{name}")
                self.results["create"]["agent_sandbox"].append(s)
                log_sample("agent-sandbox create", s)
        finally:
            tr.stop()
            if run.proc and run.proc.poll() is None:
                run.proc.terminate()
                try:
                    run.proc.wait(15)
                except Exception:  # noqa: BLE001
                    run.proc.kill()
                    run.proc.wait()
            api.call("DELETE", f"/api/v1/namespaces/{ns}")


def log_sample(what, s):
    claim = "".join(f", {label} {s[key]}" for key, label in (("claim_ms", "claim created"),
                                                            ("selected_node_ms", "node selected"),
                                                            ("bound_ms", "claim Bound")) if key in s)
    failed = f", FailedScheduling x{s['failed_scheduling']}" if s.get("failed_scheduling") else ""
    log(f"{what}: {s['pod']} Ready in {s['ready_ms']} ms (pod exists {s['pod_ms']}, scheduled {s['scheduled_ms']}, "
        f"pod Ready {s['pod_ready_ms']}{claim}{failed})")


def log(msg):
    B.log(msg)


# --------------------------------------------------------------------------------------------
# What the node and the controller logged about each start
# --------------------------------------------------------------------------------------------
def kubelet_startups(path):
    """"ns/name" -> list of {wall, e2e_s, slo_s, running_wall} from the kubelet's "Observed pod
    startup duration" lines (pod_startup_latency_tracker), oldest first; a pod created again
    under the same name has one entry per start."""
    out = {}
    try:
        f = open(path, errors="replace")
    except OSError:
        return out
    with f:
        for line in f:
            if "Observed pod startup duration" not in line:
                continue
            m = re.search(r'pod="([^"]+)"', line)
            if not m:
                continue
            d = {"wall": klog_wall(line)}
            x = re.search(r'podStartE2EDuration="([0-9.]+)(ms|s)"', line)
            if x:
                d["e2e_s"] = float(x.group(1)) / (1000 if x.group(2) == "ms" else 1)
            x = re.search(r'podStartSLOduration=([0-9.]+)', line)
            if x:
                d["slo_s"] = float(x.group(1))
            x = re.search(r'observedRunningTime="([^"]+)"', line)
            if x:
                d["running_wall"] = go_time_wall(x.group(1))
            out.setdefault(m.group(1), []).append(d)
    return out


def go_time_wall(s):
    """Go's time.Time String(): '2026-12-02 05:06:07.123456789 +0000 UTC m=+12.3' -> epoch s."""
    m = re.match(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))? \+0000 UTC", s)
    if not m:
        return None
    return wall_of_log(f"{m.group(1)}T{m.group(2)}{'.' + m.group(3) if m.group(3) else ''}Z")


def containerd_starts(path):
    """pod uid -> {sandbox_start, sandbox_done, create_start, start_done} (epoch s) from
    containerd's CRI lines: RunPodSandbox for &PodSandboxMetadata{Name:…,Uid:…} [returns
    sandbox id "S"], CreateContainer within sandbox "S" …, StartContainer for "C" returns
    successfully."""
    out, by_sandbox, by_container = {}, {}, {}
    try:
        f = open(path, errors="replace")
    except OSError:
        return out
    with f:
        for line in f:
            m = re.match(r'time="([^"]+)"', line)
            if not m:
                continue
            t = wall_of_log(m.group(1))
            msg = line.replace('\\"', '"')
            x = re.search(r"RunPodSandbox for &PodSandboxMetadata\{Name:([^,]+),Uid:([^,]+),", msg)
            if x:
                d = out.setdefault(x.group(2), {"pod": x.group(1)})
                y = re.search(r'returns sandbox id "([0-9a-f]+)"', msg)
                if y:
                    d["sandbox_done"] = t
                    by_sandbox[y.group(1)] = x.group(2)
                else:
                    d["sandbox_start"] = t
                continue
            x = re.search(r'CreateContainer within sandbox "([0-9a-f]+)" for (?:container )?&ContainerMetadata\{Name:([^,]+),', msg)
            if x and x.group(1) in by_sandbox:
                d = out[by_sandbox[x.group(1)]]
                y = re.search(r'returns container id "([0-9a-f]+)"', msg)
                if y:
                    d["create_done"] = t
                    by_container[y.group(1)] = by_sandbox[x.group(1)]
                else:
                    d["create_start"] = t
                continue
            x = re.search(r'StartContainer for "([0-9a-f]+)"( returns successfully)?', msg)
            if x and x.group(1) in by_container:
                d = out[by_container[x.group(1)]]
                d["start_done" if x.group(2) else "start_start"] = t
    return out


def ours_pod_created(path):
    """pod name -> list of epoch s of our controller's 'pod created' lines (a wake's pod has
    the name of the one before it)."""
    out = {}
    try:
        f = open(path, errors="replace")
    except OSError:
        return out
    with f:
        for line in f:
            if 'msg="pod created"' not in line:
                continue
            m = re.match(r"ts=(\S+)", line)
            p = re.search(r"pod=(\S+)", line)
            if m and p:
                out.setdefault(p.group(1), []).append(wall_of_log(m.group(1)))
    return out


# the breakdown of one start (ms from the request): what each party took
PHASES = [("request → pod exists", None, "pod"),
          ("pod exists → scheduled", "pod", "scheduled"),
          ("scheduled → RunPodSandbox", "scheduled", "sandbox_start"),
          ("RunPodSandbox (sandbox + CNI)", "sandbox_start", "sandbox_done"),
          ("sandbox → container started", "sandbox_done", "start_done"),
          ("container started → pod Ready seen", "start_done", "pod_ready"),
          ("pod Ready → Ready", "pod_ready", "ready")]


def annotate(samples, kubelet, cri, created):
    """Adds, per sample, the kubelet's and containerd's times (ms from the request) and ours'
    pod-created time; -> the p50 of every phase."""
    for s in samples:
        w0 = s["t0_wall"]
        k = next((e for e in kubelet.get(f"{s['ns']}/{s['pod']}", []) if (e.get("wall") or 0) >= w0), {})
        if "e2e_s" in k:
            s["kubelet_e2e_ms"] = B.rnd(k["e2e_s"] * 1000)
        if k.get("running_wall"):
            s["kubelet_running_ms"] = B.rnd((k["running_wall"] - w0) * 1000)
        c = cri.get(s["uid"]) or {}
        for key in ("sandbox_start", "sandbox_done", "create_start", "create_done", "start_done"):
            if c.get(key):
                s[f"cri_{key}_ms"] = B.rnd((c[key] - w0) * 1000)
        pc = [t for t in created.get(s["pod"], []) if t >= w0 - 0.05]
        if pc:
            s["controller_pod_created_ms"] = B.rnd((min(pc) - w0) * 1000)
    at = {"pod": "pod_ms", "scheduled": "scheduled_ms", "sandbox_start": "cri_sandbox_start_ms",
          "sandbox_done": "cri_sandbox_done_ms", "start_done": "cri_start_done_ms", "pod_ready": "pod_ready_ms",
          "ready": "ready_ms"}
    out = {}
    for label, a, b in PHASES:
        vals = [s[at[b]] - (0 if a is None else s[at[a]]) for s in samples
                if s.get(at[b]) is not None and (a is None or s.get(at[a]) is not None)]
        out[label] = B.rnd(statistics.median(vals)) if vals else None
    for key in ("kubelet_e2e_ms", "kubelet_running_ms", "controller_pod_created_ms", "claim_ms", "selected_node_ms",
                "bound_ms", "failed_scheduling"):
        vals = [s[key] for s in samples if s.get(key) is not None]
        out[key] = B.rnd(statistics.median(vals)) if vals else None
    return out


def summary(samples):
    vals = [s["ready_ms"] for s in samples]
    if not vals:
        return {"ready_p50_ms": None, "count": 0}
    return {"ready_p50_ms": B.rnd(statistics.median(vals)), "ready_min_ms": B.rnd(min(vals)),
            "ready_max_ms": B.rnd(max(vals)), "count": len(vals), "ready_ms_all": vals}


def run(args, api, workdir, k, with_peer=True):
    """-> the scenario's result: kinds.{create,wake,resume}.{floor,ours,agent_sandbox} with
    ready_p50_ms, spread, samples and the breakdown; ratios ours / floor."""
    sg = Single(args, api, workdir, k)
    errors = {}
    try:
        sg.run_floor_and_ours()
    except Exception as e:  # noqa: BLE001 — reported
        log(f"real-node-single: floor/ours pass failed: {e}")
        errors["ours"] = str(e)
    if with_peer:
        try:
            sg.run_peer()
        except Exception as e:  # noqa: BLE001
            log(f"real-node-single: agent-sandbox pass failed: {e}")
            errors["agent_sandbox"] = str(e)
    plane = os.path.dirname(os.path.abspath(args.kubeconfig))
    kubelet = kubelet_startups(os.path.join(plane, "node", "logs", "kubelet.log"))
    cri = containerd_starts(os.path.join(plane, "node", "logs", "containerd.log"))
    created = ours_pod_created(sg.logs.get("ours", ""))
    kinds = {}
    for kind in KINDS:
        kinds[kind] = {}
        for who, samples in sg.results[kind].items():
            if not samples and who == "agent_sandbox" and kind != "create":
                continue
            d = summary(samples)
            # a warm wake starts no pod: the node's and controller's start logs say nothing of it
            d["breakdown"] = {} if kind == "wake-warm" and who == "ours" else annotate(samples, kubelet, cri, created)
            d["samples"] = samples
            err = errors.get(who) or errors.get("ours") or (getattr(sg, "warm_error", None)
                                                            if kind == "wake-warm" else None)
            d["status"] = ("ok" if len(samples) == k else
                           f"failed: {err or 'incomplete'}" if samples or err else "not run")
            if who == "agent_sandbox" and not with_peer:
                d["status"] = "not run (--only)"
            kinds[kind][who] = d
        f, o = kinds[kind]["floor"].get("ready_p50_ms"), kinds[kind]["ours"].get("ready_p50_ms")
        kinds[kind]["ratio"] = B.rnd(o / f, 2) if f and o else None
        kinds[kind]["met"] = None if kinds[kind]["ratio"] is None else kinds[kind]["ratio"] <= 1.1
    # create: on a WaitForFirstConsumer class both go the same way (claim, pod, node chosen at
    # once, the provisioner, the scheduler's bind poll at whole seconds), so the start times
    # fall in whole-second modes; what the controller adds is before the claim and the pod exist
    cr = kinds["create"]
    def p50s(who, key):
        v = [x[key] for x in cr[who].get("samples") or [] if x.get(key) is not None]
        return statistics.median(v) if v else None
    added = {}
    for key in ("claim_ms", "pod_ms"):
        f, o = p50s("floor", key), p50s("ours", key)
        added[key] = B.rnd(o - f) if f is not None and o is not None else None
    cr["ours_added_ms"] = added
    cr["modes_s"] = {who: sorted(round(x["ready_ms"] / 1000) for x in cr[who].get("samples") or [])
                     for who in ("floor", "ours")}
    # wake-warm's target is against ours' cold wake of the same run, not the floor
    w, c = kinds["wake-warm"]["ours"].get("ready_p50_ms"), kinds["wake"]["ours"].get("ready_p50_ms")
    kinds["wake-warm"]["vs_cold_wake"] = B.rnd(w / c, 3) if w and c else None
    kinds["wake-warm"]["met"] = None if not (w and c) else w <= 0.1 * c
    def p50(kind, key):
        v = [x[key] for x in kinds[kind]["ours"].get("samples") or [] if x.get(key) is not None]
        return B.rnd(statistics.median(v)) if v else None
    ww, wc = kinds["wake-warm"]["ours"], kinds["wake"]["ours"]
    ww["exec_rt_p50_ms"], ww["first_exec_p50_ms"] = p50("wake-warm", "exec_rt_ms"), p50("wake-warm", "first_exec_ms")
    wc["first_exec_rt_p50_ms"] = p50("wake", "first_exec_rt_ms")
    # the returning user's first command answered: touch → exec answered (warm), against
    # touch → Ready and then the exec's round trip (cold)
    cold_cmd = c + wc["first_exec_rt_p50_ms"] if c and wc["first_exec_rt_p50_ms"] else None
    kinds["wake-warm"]["first_command_vs_cold"] = (B.rnd(ww["first_exec_p50_ms"] / cold_cmd, 3)
                                                   if cold_cmd and ww["first_exec_p50_ms"] else None)
    return {"kinds": kinds, "k": k, "stop": "long-running lifecycle, spec.idleTimeout 1s "
                                            "(stopped after 24 × idleTimeout without use), woken by a touch of "
                                            + ANN_LAST_USED,
            "stop_reasons": getattr(sg, "stop_reason", None), "errors": errors,
            "logs": {"kubelet": "node/logs/kubelet.log", "containerd": "node/logs/containerd.log", **sg.logs}}


if __name__ == "__main__":   # parse the node's logs of a past run: bench/single.py PLANE_DIR
    import sys
    d = sys.argv[1]
    print(json.dumps({"kubelet": len(kubelet_startups(os.path.join(d, "node/logs/kubelet.log"))),
                      "containerd": len(containerd_starts(os.path.join(d, "node/logs/containerd.log")))}))
