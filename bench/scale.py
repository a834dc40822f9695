#!/usr/bin/env python3
"""bench/scale.py — the 10,000-Sandbox benchmark (issue 12 item 8, scenario (f) of issue 15):
one controller, N persistent Sandboxes on the kwok plane, then what a single leader costs
and how it recovers. Runs on its own against a running plane:

  YAO_PLANE_DIR=/tmp/yao-plane-x tests/cluster/up
  python3 bench/scale.py --plane-dir /tmp/yao-plane-x --ours build/bin/yao-sandbox-controller \\
      -n 10000 [--only ours,agent_sandbox,floor] [--peer BIN --peer-crd CRD --peer-version V]

For our controller (--workers 4, all Sandboxes in one namespace), in order:
  1. baseline: started with 0 Sandboxes, caches synced, 3 s settled: VmRSS, VmHWM, PSS;
  2. N creates from --clients threads; time until every Sandbox is Running and Ready; then
     until the controller is quiet (work queue empty, no reconcile or write for 3 s):
     RSS/PSS with N → KiB per Sandbox above baseline; CPU seconds and API requests per
     Sandbox (its own FlowSchema's dispatched requests, as bench.py counts them);
  3. controller restart: SIGTERM, start again, poll its /metrics: converged when its caches
     are synced, the work queue is empty and nothing changed for 3 s; the convergence time
     is that of the last reconcile; the writes it made after the restart (target 0);
  4. API server restart (tests/cluster/restart-component kube-apiserver): time until the
     controller's watches are open again, the relists it did, writes, and time until a
     Sandbox created right after the API server is back is Ready;
  5. churn (--churn, default on): 30 % of the Sandboxes deleted (70 % persistent stay),
     then --churn-total one-shot Sandboxes (ttlSecondsAfterFinished 0) created at
     --churn-rate per second, each pod finished by a stand-in kubelet as soon as it runs:
     work-queue depth (max, mean), RSS growth, requests per one-shot, all gone at the end.
The peer (agent-sandbox) and the floor (PVC + pod, no controller) run the creates only.

At 10,000 the plane, not the controller, paces a bring-up (the test provisioner makes a
few volumes a second on a loaded machine; kube-controller-manager's binder binds one claim
at a time, 2-3 a second): --bulk-bind makes and binds each claim's volume from the bench, 8
connections in parallel, the same for every config (the side-by-side run);
--static-volumes pre-makes the volumes and leaves the binding to kube-controller-manager;
--existing NS measures memory and the restarts on Sandboxes an earlier run left
(--delete-timeout 0), and --freeze stops kube-controller-manager and kube-scheduler
meanwhile so the world is unchanged.

Writes bench/results/scale.json (--out): per-config keys like latest.json (`floor`, `ours`,
`agent_sandbox`, `peer_version`, `n`) plus the restart, memory and churn figures and the
machine's load (the 2 cores are shared).
"""
import argparse
import base64
import collections
import datetime
import http.client
import json
import os
import queue
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (Api, Watch, identities, object shapes)
from bench import OURS_GROUP, FLOW_SCHEMA, log, rnd, pct  # noqa: E402

SCALE_NODE_PREFIX = "kwok-scale-"
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")


# --------------------------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------------------------
def memory(pid):
    """VmRSS, VmHWM, RssAnon (KiB) from status; Pss, Pss_Anon from smaps_rollup."""
    out = {}
    for k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
        out[k] = bench.proc_status(pid, k)
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] in ("Pss:", "Pss_Anon:", "Private_Dirty:"):
                    out[parts[0][:-1]] = int(parts[1])
    except OSError:
        pass
    return out


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def machine():
    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    mem = next(int(ln.split()[1]) for ln in open("/proc/meminfo") if ln.startswith("MemTotal"))
    return {"nproc": os.cpu_count(), "mem_gib": round(mem / 1048576, 1), "cpu": model,
            "loadavg_at_start": loadavg(), "loadavg_samples": []}


def mem_available_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1048576
    return None


def parse_metrics(text):
    """Prometheus text → {name{labels}: value}."""
    out = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        k, _, v = line.rpartition(" ")
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out


def msum(m, prefix, pred=lambda k: True):
    return sum(v for k, v in m.items() if k.startswith(prefix) and pred(k))


def writes_of(m):
    """Every mutating request of the controller's clients: the workers' (api_requests_total by
    verb) and the Event recorder's (events_sent_total)."""
    w = msum(m, "yao_sandbox_api_requests_total{", lambda k: any(f'verb="{v}"' in k for v in WRITE_VERBS))
    return w + m.get("yao_sandbox_events_sent_total", 0)


def writes_by_kind(m0, m1, n):
    """The mutating requests of writes_of per Sandbox, broken down: by verb and status class
    (api_requests_total), the status writes the API server accepted, and Event writes."""
    def d(k):
        return m1.get(k, 0) - m0.get(k, 0)
    out = {k[len("yao_sandbox_api_requests_total"):]: rnd(d(k) / n, 3) for k in m1
           if k.startswith("yao_sandbox_api_requests_total{") and d(k)
           and any(f'verb="{v}"' in k for v in WRITE_VERBS)}
    out["status_accepted"] = rnd(d('yao_sandbox_objects_written_total{op="status"}') / n, 3)
    out["events_sent"] = rnd(d("yao_sandbox_events_sent_total") / n, 3)
    return out


class PlaneLoad:
    """Where a bring-up's work went: CPU seconds of each plane process, the controller and this
    bench (its clients, tracker and bulk binder), and the mutating requests the API server
    served from every client (apiserver_request_total), over a window. On a saturated plane
    the second is what sets the pace: each write costs the API server and etcd alike."""
    PARTS = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "provisioner")

    def __init__(self, args, api, controller_pid=None):
        self.plane_dir, self.api, self.controller_pid = args.plane_dir, api, controller_pid

    def snapshot(self):
        cpu = {}
        for name in self.PARTS:
            try:
                with open(os.path.join(self.plane_dir, "pids", f"{name}.pid")) as f:
                    cpu[name] = bench.proc_cpu_s(int(f.read().strip()))
            except (OSError, ValueError):
                pass
        if self.controller_pid:
            cpu["controller"] = bench.proc_cpu_s(self.controller_pid)
        t = os.times()
        cpu["bench"] = t.user + t.system
        st, text = self.api.call("GET", "/metrics", raw=True)
        writes = sum(float(m.group(1)) for m in re.finditer(
            r'^apiserver_request_total\{[^}]*verb="(?:POST|PUT|PATCH|DELETE|APPLY)"[^}]*\} (\S+)$', text, re.M))
        return {"cpu": cpu, "writes": writes, "t": time.monotonic()}

    @staticmethod
    def since(s0, s1, n):
        cpu = {k: rnd(s1["cpu"][k] - v, 1) for k, v in s0["cpu"].items() if k in s1["cpu"]}
        wall = s1["t"] - s0["t"]
        return {"cpu_s": cpu, "cpu_total_s": rnd(sum(cpu.values()), 1), "wall_s": rnd(wall, 1),
                "busy_cores": rnd(sum(cpu.values()) / wall, 2) if wall > 0 else None,
                "writes_per_sandbox": rnd((s1["writes"] - s0["writes"]) / n, 2)}


# --------------------------------------------------------------------------------------------
# The plane
# --------------------------------------------------------------------------------------------
def quantity(q):
    """A plain decimal Kubernetes quantity ("2k", "250m", "256") as a float."""
    mult = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9}
    return float(q[:-1]) * mult[q[-1]] if q and q[-1] in mult else float(q)


def ensure_nodes(api, pods_needed):
    """kwok nodes with room for pods_needed more pods of 250m/256Mi. tests/cluster/up makes two
    nodes of 256 CPUs (1024 such pods each, 2000 pod slots); the rest come from nodes
    kwok-scale-K of 2560 CPUs / 5000 pod slots, created here and removed at the end."""
    nodes = api.must("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")["items"]
    have = 0
    for nd in nodes:
        alloc = (nd.get("status") or {}).get("allocatable") or {}
        have += min(int(quantity(alloc.get("pods", "0"))), int(quantity(alloc.get("cpu", "0")) / 0.25))
    need = pods_needed + 200 - have
    made = []
    k = 0
    while need > 0:
        name = f"{SCALE_NODE_PREFIX}{k}"
        k += 1
        if any(nd["metadata"]["name"] == name for nd in nodes):
            continue
        api.must("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64"}},
            "status": {"allocatable": {"cpu": "2560", "memory": "4Ti", "ephemeral-storage": "4Ti", "pods": "5000"},
                       "capacity": {"cpu": "2560", "memory": "4Ti", "ephemeral-storage": "4Ti", "pods": "5000"}}},
            ok=(201, 409))
        made.append(name)
        need -= 5000
    if made:
        log(f"added kwok nodes {made} for {pods_needed} pods")
        # The node's status from the POST is dropped (status is a subresource); kwok fills it
        # in from the node's annotations on its first heartbeat. Wait until Ready.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            nodes = {nd["metadata"]["name"]: nd for nd in
                     api.must("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")["items"]}
            if all(bench.cond_true(nodes.get(m, {}), "Ready") for m in made):
                break
            time.sleep(0.5)
        for m in made:   # capacity as a status write (kwok keeps what is there)
            api.call("PATCH", f"/api/v1/nodes/{m}/status",
                     {"status": {"allocatable": {"cpu": "2560", "memory": "4Ti", "ephemeral-storage": "4Ti",
                                                 "pods": "5000"},
                                 "capacity": {"cpu": "2560", "memory": "4Ti", "ephemeral-storage": "4Ti",
                                              "pods": "5000"}}},
                     ctype="application/merge-patch+json")
    bench.wait_nodes_ready(api)
    return made


STATIC_CLASS = "yao-scale-static"


def static_class(api):
    """The StorageClass of --static-volumes and --bulk-bind: no provisioner, Immediate."""
    api.apply("/apis/storage.k8s.io/v1/storageclasses", STATIC_CLASS,
              {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": STATIC_CLASS},
               "provisioner": "kubernetes.io/no-provisioner", "reclaimPolicy": "Retain",
               "volumeBindingMode": "Immediate"})


def static_volumes(api, args, count):
    """--static-volumes: a StorageClass without a provisioner (Immediate) and `count`
    Available hostPath volumes of it, made in bulk before the run; kube-controller-manager's
    binder binds each claim to one of them. The plane's test provisioner (one Python
    thread, a few volumes a second on a loaded machine) would otherwise pace a 10,000
    bring-up, and it is not what is measured here. Returns the names of the volumes."""
    static_class(api)
    names = [f"yao-scale-pv-{i:05d}" for i in range(count)]
    root = os.path.join(args.plane_dir, "pv")

    def create(c, name):
        st, obj = api.call("POST", "/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": bench.WORKSPACE}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": STATIC_CLASS,
                     "volumeMode": "Filesystem", "hostPath": {"path": os.path.join(root, name)}}}, conn=c)
        if st not in (201, 409):
            raise RuntimeError(f"HTTP {st}: {str(obj)[:200]}")
    t0 = time.monotonic()
    errs = bench.burst(api, names, create, args.clients)
    if errs:
        raise RuntimeError(f"{len(errs)} volume creates failed, first: {errs[0]}")
    log(f"{count} static volumes of class {STATIC_CLASS} in {time.monotonic() - t0:.1f} s")
    bench.STORAGE_CLASS = STATIC_CLASS   # read by bench.ours_sandbox, pvc_spec at call time
    return names


class BulkBinder:
    """--bulk-bind: each claim of the static class gets its own volume the moment it appears,
    and the pair is bound here, from `threads` connections in parallel: the volume created
    pre-bound (claimRef with the claim's uid) and marked Bound, the claim given its
    volumeName, the binder's annotations and status Bound -- the writes
    kube-controller-manager's volume binder makes for a claim, which it makes one claim at a
    time (about 2-3 claims a second on this machine at 10,000: that, not a controller, paced
    every 10,000 bring-up before). The binder still syncs each pair and finds nothing to
    change; when it gets to a claim first it binds it to the same volume (the conflicts are
    read again here). The same for the floor, ours and the peer; its requests go under the
    admin identity, so they are not counted as a controller's."""

    def __init__(self, api, args, threads=8):
        self.api, self.root = api, os.path.join(args.plane_dir, "pv")
        self.q = queue.Queue()
        self.seen, self.volumes, self.errors = set(), [], []
        self.lock = threading.Lock()
        self.bound = 0
        self.watch = self.new_watch()
        self.threads = [threading.Thread(target=self.work, daemon=True) for _ in range(threads)]
        self.threads.append(threading.Thread(target=self.rewatch, daemon=True))
        self.stopping = threading.Event()
        self.rewatches = 0

    def new_watch(self):
        return bench.Watch(self.api, "/api/v1/persistentvolumeclaims", self.on_claim)

    def rewatch(self):
        """A watch that ended with an error (the API server restart of the run: "too old
        resource version") is started again: its list sees every claim, the bound ones and
        those already taken are skipped."""
        while not self.stopping.wait(1):
            if self.watch.error or not self.watch.is_alive():
                time.sleep(1)
                self.rewatches += 1
                log(f"bulk binder: watching the claims again ({self.watch.error})")
                self.watch = self.new_watch()
                self.watch.start()

    def on_claim(self, t, typ, c):
        if (typ == "DELETED" or c["spec"].get("storageClassName") != STATIC_CLASS
                or c["spec"].get("volumeName")):
            return
        with self.lock:
            if c["metadata"]["uid"] in self.seen:
                return
            self.seen.add(c["metadata"]["uid"])
        self.q.put(c)

    def work(self):
        conn = self.api.conn()
        while True:
            c = self.q.get()
            if c is None:
                conn.close()
                return
            for attempt in range(5):
                try:
                    self.bind(conn, c)
                    break
                except (OSError, http.client.HTTPException) as e:
                    # a connection the API server's restart cut (ssl EOF, refused): a new one
                    conn.close()
                    if attempt == 4:
                        with self.lock:
                            self.errors.append(f"{c['metadata']['namespace']}/{c['metadata']['name']}: {e}")
                    else:
                        time.sleep(2)
                        conn = self.api.conn()
                except Exception as e:  # noqa: BLE001 -- reported at the end of the run
                    with self.lock:
                        self.errors.append(f"{c['metadata']['namespace']}/{c['metadata']['name']}: {e}")
                    break

    def bind(self, conn, c):
        ns, name, uid = c["metadata"]["namespace"], c["metadata"]["name"], c["metadata"]["uid"]
        pv = f"yao-scale-pv-{uid}"
        path = f"/api/v1/persistentvolumes/{pv}"
        st, vol = self.api.call("POST", "/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv, "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
            "spec": {"capacity": {"storage": c["spec"]["resources"]["requests"]["storage"]},
                     "accessModes": c["spec"]["accessModes"], "persistentVolumeReclaimPolicy": "Retain",
                     "storageClassName": STATIC_CLASS, "volumeMode": "Filesystem",
                     "hostPath": {"path": os.path.join(self.root, pv)},
                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": ns,
                                  "name": name, "uid": uid}}}, conn=conn)
        if st == 409:
            st, vol = self.api.call("GET", path, conn=conn)
        if st not in (200, 201):
            raise RuntimeError(f"volume: HTTP {st}: {str(vol)[:200]}")
        with self.lock:
            self.volumes.append(pv)
        self.update(conn, path + "/status", vol, lambda o: (o.get("status") or {}).get("phase") == "Bound",
                    lambda o: o.update(status={"phase": "Bound"}))
        cpath = f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}"

        def claim_spec(o):
            o["spec"]["volumeName"] = pv
            o["metadata"].setdefault("annotations", {}).update(
                {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"})
        c = self.update(conn, cpath, c, lambda o: bool(o["spec"].get("volumeName")), claim_spec)
        if c is not None:
            self.update(conn, cpath + "/status", c, lambda o: (o.get("status") or {}).get("phase") == "Bound",
                        lambda o: o.update(status={"phase": "Bound", "accessModes": vol["spec"]["accessModes"],
                                                   "capacity": vol["spec"]["capacity"]}))
        with self.lock:
            self.bound += 1

    def update(self, conn, path, obj, done, change, attempts=8):
        """PUT change(obj) unless done(obj); on a conflict read it again (kube-controller-manager
        may have written it meanwhile). Returns the object as written or found; None when the
        claim is gone."""
        for _ in range(attempts):
            if done(obj):
                return obj
            change(obj)
            st, out = self.api.call("PUT", path, obj, conn=conn)
            if st == 200:
                return out
            if st != 409:
                raise RuntimeError(f"PUT {path}: HTTP {st}: {str(out)[:200]}")
            st, obj = self.api.call("GET", path.removesuffix("/status"), conn=conn)
            if st == 404:
                return None
            if st != 200:
                raise RuntimeError(f"GET {path}: HTTP {st}: {str(obj)[:200]}")
        raise RuntimeError(f"PUT {path}: still conflicting after {attempts} attempts")

    def start(self):
        self.watch.start()
        self.watch.established.wait(60)
        if self.watch.error:
            raise self.watch.error
        for t in self.threads:
            t.start()
        bench.STORAGE_CLASS = STATIC_CLASS
        return self

    def stop(self):
        self.stopping.set()
        self.watch.stop()
        for _ in self.threads:
            self.q.put(None)
        for t in self.threads:
            t.join(30)


def remove_static_volumes(api, args, names):
    def delete(c, name):
        api.call("DELETE", f"/api/v1/persistentvolumes/{name}", conn=c)
    bench.burst(api, names, delete, args.clients)


def remove_nodes(api, names):
    for n in names:
        api.call("DELETE", f"/api/v1/nodes/{n}")


def delete_namespace(api, ns, timeout=900):
    """Delete the namespace and wait until it is gone (the namespace controller and the GC
    remove what is in it); timeout 0: do not wait (the plane is torn down next)."""
    t0 = time.monotonic()
    api.call("DELETE", f"/api/v1/namespaces/{ns}")
    if not timeout:
        return None
    while time.monotonic() - t0 < timeout:
        if api.call("GET", f"/api/v1/namespaces/{ns}")[0] == 404:
            return time.monotonic() - t0
        time.sleep(1)
    log(f"namespace {ns} still there after {timeout} s")
    return None


# --------------------------------------------------------------------------------------------
# Controller processes
# --------------------------------------------------------------------------------------------
class Ours:
    """Our controller as a child process with its /metrics on a kernel-chosen port."""

    def __init__(self, args, kubeconfig, ns, workdir):
        self.cmd = [args.ours, "--kubeconfig", kubeconfig, "--namespace", ns, "--max-running", "0",
                    "--workers", str(args.workers), "--metrics-addr", "127.0.0.1:0"]
        self.workdir, self.ns = workdir, ns
        self.proc = None
        self.port = None
        self.starts = 0

    def start(self, timeout=300):
        """Start; returns (seconds until 'caches synced', monotonic start time)."""
        self.starts += 1
        self.log = os.path.join(self.workdir, f"{self.ns}.ours.{self.starts}.log")
        logf = open(self.log, "w")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        logf.close()
        self.port = None
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"our controller exited with {self.proc.returncode}; see {self.log}")
            with open(self.log, errors="replace") as f:
                text = f.read()
            if self.port is None:
                m = re.search(r"serving probes and metrics.* port=(\d+)", text)
                if m:
                    self.port = int(m.group(1))
            if "caches synced" in text and self.port:
                return time.monotonic() - t0, t0
            time.sleep(0.02)
        raise RuntimeError(f"our controller: no 'caches synced' in {timeout} s; see {self.log}")

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            return parse_metrics(r.read().decode())

    def stop(self, timeout=60):
        """SIGTERM; returns the seconds it took to exit."""
        if not self.proc or self.proc.poll() is not None:
            return None
        t0 = time.monotonic()
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return time.monotonic() - t0

    def wait_quiet(self, quiet_s=3.0, timeout=600, min_reconciles=0, poll=0.25):
        """Poll /metrics until the work queue is empty and neither the reconcile count nor the
        write count has changed for quiet_s (and at least min_reconciles were done).
        -> (monotonic time of the last change seen, last metrics, depth samples)."""
        t0 = time.monotonic()
        last_key, last_change, m = None, t0, {}
        depths = []
        while time.monotonic() - t0 < timeout:
            try:
                m = self.metrics()
            except OSError:
                time.sleep(poll)
                continue
            now = time.monotonic()
            depth = m.get("yao_sandbox_workqueue_depth", 0)
            depths.append(depth)
            key = (m.get("yao_sandbox_reconcile_total", 0), writes_of(m))
            if key != last_key:
                last_key, last_change = key, now
            if depth == 0 and now - last_change >= quiet_s and key[0] >= min_reconciles:
                return last_change, m, depths
            time.sleep(poll)
        raise RuntimeError(f"our controller not quiet after {timeout} s (depth {m.get('yao_sandbox_workqueue_depth')})")


def peer_cmd(args, kubeconfig):
    return [args.peer, "--kubeconfig", kubeconfig, "--leader-elect=false", "--metrics-bind-address", "0",
            "--health-probe-bind-address", "0", "--sandbox-concurrent-workers", str(args.workers)]


# --------------------------------------------------------------------------------------------
# Ready tracking
# --------------------------------------------------------------------------------------------
class Tracker:
    """A watch on one collection; ready[name] = monotonic time first seen ready. With state
    (a function of an object), paths[name] = the distinct states it went through, in order:
    each change a status write made."""

    def __init__(self, api, path, is_ready, key=lambda o: o["metadata"]["name"], state=None):
        self.ready, self.live, self.paths = {}, set(), {}
        self.lock = threading.Condition()
        self.is_ready, self.key, self.state = is_ready, key, state
        self.watch = bench.Watch(api, path, self.on_event)

    def on_event(self, t, typ, obj):
        k = self.key(obj)
        with self.lock:
            if typ == "DELETED":
                self.live.discard(k)
            else:
                self.live.add(k)
                if k not in self.ready and self.is_ready(obj):
                    self.ready[k] = t
                if self.state:
                    seen, now = self.paths.setdefault(k, []), self.state(obj)
                    if not seen or seen[-1] != now:
                        seen.append(now)
            self.lock.notify_all()

    def path_counts(self, top=6):
        """The most common paths (states joined by " > ") and how many objects took each."""
        with self.lock:
            counts = collections.Counter(" > ".join(p) for p in self.paths.values())
        return dict(counts.most_common(top))

    def start(self):
        self.watch.start()
        self.watch.established.wait(60)
        if self.watch.error:
            raise self.watch.error
        return self

    def wait(self, pred, timeout):
        deadline = time.monotonic() + timeout
        with self.lock:
            while not pred(self):
                if self.watch.error:
                    raise RuntimeError(f"watch failed: {self.watch.error}")
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(min(left, 1.0))
        return True

    def stop(self):
        self.watch.stop()


def ours_ready(sb):
    return (sb.get("status") or {}).get("phase") == "Running" and bench.cond_true(sb, "Ready")


def ours_state(sb):
    """A Sandbox's phase and its Ready condition's reason: what a status write changes."""
    st = sb.get("status") or {}
    reason = next((c.get("reason") for c in st.get("conditions") or [] if c.get("type") == "Ready"), None)
    return f"{st.get('phase') or '-'}/{reason or '-'}"


def create_all(api, args, path, names, body_of):
    def create(c, item):
        i, name = item
        st, obj = api.call("POST", path, body_of(name, i), conn=c)
        if st not in (201, 409):
            raise RuntimeError(f"HTTP {st}: {str(obj)[:200]}")
    errs = bench.burst(api, list(enumerate(names)), create, args.clients)
    if errs:
        raise RuntimeError(f"{len(errs)} creates failed, first: {errs[0]}")


class Sampler(threading.Thread):
    """Load average and MemAvailable every 10 s while a config runs (the record of how
    shared the machine was)."""

    def __init__(self, mach):
        super().__init__(daemon=True)
        self.mach, self.stopping = mach, threading.Event()

    def run(self):
        while not self.stopping.wait(10):
            self.mach["loadavg_samples"].append(
                [datetime.datetime.now().strftime("%H:%M:%S")] + loadavg() + [rnd(mem_available_gib(), 1)])


# --------------------------------------------------------------------------------------------
# Our controller
# --------------------------------------------------------------------------------------------
def oneshot_body(name, i):
    return {"apiVersion": OURS_GROUP, "kind": "Sandbox", "metadata": {"name": name},
            "spec": {"userID": "scale", "chatID": f"o{i:05d}", "image": bench.IMAGE, "lifecycle": "one-shot",
                     "ttlSecondsAfterFinished": 0, "run": {"command": ["sh", "-c", "echo scale"]},
                     "resources": {"cpu": bench.CPU, "memory": bench.MEMORY},
                     "workspace": {"size": bench.WORKSPACE, "storageClassName": bench.STORAGE_CLASS}}}


class StandInKubelet:
    """kwok runs no containers: each one-shot run pod (its command carries the yao-run
    wrapper, see controller/sandbox/model/oneshot.h) is finished as the kubelet would report it as
    soon as it is Running: phase Succeeded, state.terminated with exit code 0 and the
    wrapper's termination message for the output "scale\\n"."""

    def __init__(self, api, ns):
        self.api, self.ns = api, ns
        self.done = set()
        self.pending = []
        self.cv = threading.Condition()
        self.finished = 0
        self.watch = bench.Watch(api, f"/api/v1/namespaces/{ns}/pods", self.on_pod)
        self.workers = [threading.Thread(target=self.work, daemon=True) for _ in range(4)]
        self.stopping = False

    def on_pod(self, t, typ, p):
        if typ == "DELETED" or (p.get("status") or {}).get("phase") != "Running":
            return
        c = p["spec"]["containers"][0]
        if c.get("command", [])[3:4] != ["yao-run"]:
            return
        uid = p["metadata"]["uid"]
        with self.cv:
            if uid in self.done:
                return
            self.done.add(uid)
            self.pending.append((p["metadata"]["name"], c["image"]))
            self.cv.notify()

    def work(self):
        conn = self.api.conn()
        out = b"scale\n"
        msg = "yao-run/1 %d 0\n%s\n.\n" % (len(out), base64.b64encode(out).decode())
        while True:
            with self.cv:
                while not self.pending and not self.stopping:
                    self.cv.wait(1)
                if self.stopping:
                    conn.close()
                    return
                name, image = self.pending.pop(0)
            ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            self.api.call("PATCH", f"/api/v1/namespaces/{self.ns}/pods/{name}/status", {"status": {
                "phase": "Succeeded",
                "containerStatuses": [{"name": "sandbox", "image": image, "imageID": "", "ready": False,
                                       "restartCount": 0, "state": {"running": None, "terminated": {
                                           "exitCode": 0, "reason": "Completed", "message": msg,
                                           "startedAt": ts, "finishedAt": ts}}}]}},
                conn=conn, ctype="application/strategic-merge-patch+json")
            self.finished += 1

    def start(self):
        self.watch.start()
        self.watch.established.wait(60)
        for w in self.workers:
            w.start()
        return self

    def stop(self):
        self.watch.stop()
        with self.cv:
            self.stopping = True
            self.cv.notify_all()


def run_ours(args, api, workdir, res):
    if args.existing:
        return run_ours_existing(args, api, workdir, res)
    n = args.n
    ns = f"yao-scale-ours-{random.randrange(16**4):04x}"
    bench.ensure_namespace(api, ns)
    path = f"/apis/{OURS_GROUP}/namespaces/{ns}/sandboxes"
    kc = bench.controller_kubeconfig(api, "ours", workdir)
    ctl = Ours(args, kc, ns, workdir)
    r = {"n": n, "namespace": ns, "workers": args.workers, "controller_cmd": " ".join(ctl.cmd)}
    res["ours"] = r
    tr = None
    try:
        # ---- 1. baseline
        r["startup_s"] = rnd(ctl.start()[0], 3)
        time.sleep(3)
        m0 = ctl.metrics()
        base = memory(ctl.proc.pid)
        r["baseline_memory_kib"] = base
        log(f"ours: baseline RSS {base['VmRSS']} KiB, PSS {base.get('Pss')} KiB")

        # ---- 2. N creates
        tr = Tracker(api, path, ours_ready, state=ours_state).start()
        cpu0, req0 = bench.proc_cpu_s(ctl.proc.pid), bench.flow_counts(api).get(FLOW_SCHEMA["ours"], 0.0)
        names = [f"sb-{i:05d}" for i in range(n)]
        load = PlaneLoad(args, api, ctl.proc.pid)
        l0 = load.snapshot()
        t0 = time.monotonic()
        create_all(api, args, path, names, lambda name, i: bench.ours_sandbox(name, i))
        r["create_burst_s"] = rnd(time.monotonic() - t0, 2)
        ok = tr.wait(lambda t: len(t.ready) >= n, args.timeout)
        r["plane_bringup"] = PlaneLoad.since(l0, load.snapshot(), n)
        with tr.lock:
            lat = sorted(v - t0 for v in tr.ready.values())
        r["ready_count"] = len(lat)
        r["all_ready_s"] = rnd(lat[-1], 2) if ok else None
        r["ready_p50_s"], r["ready_p99_s"] = rnd(pct(lat, 50), 2), rnd(pct(lat, 99), 2)
        log(f"ours: {len(lat)}/{n} Ready, all in {r['all_ready_s']} s")
        if not ok:
            raise RuntimeError(f"only {len(lat)}/{n} Ready after {args.timeout} s")
        t_quiet, m1, _ = ctl.wait_quiet(timeout=args.timeout)
        r["quiet_after_s"] = rnd(t_quiet - t0, 2)
        cpu1, req1 = bench.proc_cpu_s(ctl.proc.pid), bench.flow_counts(api).get(FLOW_SCHEMA["ours"], 0.0)
        full = memory(ctl.proc.pid)
        r["memory_kib"] = full
        r["cpu_s"] = rnd(cpu1 - cpu0, 2)
        r["cpu_ms_per_sandbox"] = rnd((cpu1 - cpu0) * 1000 / n, 3)
        r["requests"] = int(req1 - req0)
        r["requests_per_sandbox"] = rnd((req1 - req0) / n, 3)
        r["writes_per_sandbox"] = rnd((writes_of(m1) - writes_of(m0)) / n, 3)
        r["writes_by_kind_per_sandbox"] = writes_by_kind(m0, m1, n)
        r["status_paths"] = tr.path_counts()   # which Sandboxes got more status writes, and why
        r["reconciles_per_sandbox"] = rnd((m1.get("yao_sandbox_reconcile_total", 0)
                                           - m0.get("yao_sandbox_reconcile_total", 0)) / n, 2)
        r["rss_peak_kib"] = full["VmHWM"]
        r["rss_per_sandbox_kib"] = rnd((full["VmRSS"] - base["VmRSS"]) / n, 3)
        r["pss_per_sandbox_kib"] = rnd((full.get("Pss", 0) - base.get("Pss", 0)) / n, 3)
        r["hwm_per_sandbox_kib"] = rnd((full["VmHWM"] - base["VmRSS"]) / n, 3)
        if "process_heap_inuse_bytes" in m1:   # live heap (malloc's view) vs the resident set
            r["heap_inuse_kib"] = [int(m0["process_heap_inuse_bytes"] / 1024), int(m1["process_heap_inuse_bytes"] / 1024)]
            r["heap_inuse_per_sandbox_kib"] = rnd((m1["process_heap_inuse_bytes"] - m0["process_heap_inuse_bytes"])
                                                  / 1024 / n, 3)
        res["rss_per_sandbox_kib"] = r["rss_per_sandbox_kib"]
        log(f"ours: quiet; RSS {full['VmRSS']} KiB ({r['rss_per_sandbox_kib']} KiB/Sandbox above baseline, "
            f"HWM {full['VmHWM']}), CPU {r['cpu_s']} s, {r['requests_per_sandbox']} requests/Sandbox")

        # ---- idle with N present
        c0, q0, t_i = bench.proc_cpu_s(ctl.proc.pid), bench.flow_counts(api).get(FLOW_SCHEMA["ours"], 0.0), time.monotonic()
        time.sleep(args.idle)
        r["idle_cpu_pct"] = rnd((bench.proc_cpu_s(ctl.proc.pid) - c0) / (time.monotonic() - t_i) * 100, 2)
        r["idle_requests"] = int(bench.flow_counts(api).get(FLOW_SCHEMA["ours"], 0.0) - q0)

        # ---- 3. controller restart
        res["controller_restart"] = restart_controller(api, ctl, n)
        res["restart_converge_s"] = res["controller_restart"]["converge_s"]

        # ---- 4. API server restart
        tr.stop()
        tr = None
        res["apiserver_restart"] = restart_apiserver(args, api, ctl, path, n)
        res["apiserver_restart_converge_s"] = res["apiserver_restart"]["converge_s"]

        # ---- 5. churn
        if args.churn:
            res["churn"] = churn(args, api, ctl, ns, path, names)
    finally:
        if tr:
            tr.stop()
        log(f"ours: deleting namespace {ns}")
        alive = ctl.proc and ctl.proc.poll() is None
        c0 = bench.proc_cpu_s(ctl.proc.pid) if alive else None
        gone = delete_namespace(api, ns, args.delete_timeout)
        r["namespace_delete_s"] = rnd(gone, 1)
        if alive and ctl.proc.poll() is None:   # what the controller spent while its Sandboxes went
            r["namespace_delete_cpu_s"] = rnd(bench.proc_cpu_s(ctl.proc.pid) - c0, 2)
            log(f"ours: namespace gone in {r['namespace_delete_s']} s; controller CPU meanwhile "
                f"{r['namespace_delete_cpu_s']} s")
        ctl.stop()


class Frozen:
    """--freeze: SIGSTOP kube-controller-manager and kube-scheduler of the plane while the
    restarts are measured, so the world the controller finds is unchanged (no volume is
    bound, no pod scheduled meanwhile); kwok keeps the nodes' heartbeats. SIGCONT after."""

    def __init__(self, plane_dir, on):
        self.pids = []
        if on:
            for name in ("kube-controller-manager", "kube-scheduler"):
                with open(os.path.join(plane_dir, "pids", f"{name}.pid")) as f:
                    self.pids.append(int(f.read().strip()))

    def __enter__(self):
        for pid in self.pids:
            os.kill(pid, 19)   # SIGSTOP
        return self

    def __exit__(self, *exc):
        for pid in self.pids:
            os.kill(pid, 18)   # SIGCONT


def run_ours_existing(args, api, workdir, res):
    """--existing NS: the N Sandboxes are already there (brought up by an earlier run whose
    controller was stopped). Baseline from a controller on an empty namespace; then the
    controller started on NS (a restart with N present), a second restart, and an API
    server restart."""
    ns = args.existing
    path = f"/apis/{OURS_GROUP}/namespaces/{ns}/sandboxes"
    kc = bench.controller_kubeconfig(api, "ours", workdir)
    empty = f"yao-scale-empty-{random.randrange(16**4):04x}"
    bench.ensure_namespace(api, empty)
    base_ctl = Ours(args, kc, empty, workdir)
    base_ctl.start()
    time.sleep(3)
    base, mb = memory(base_ctl.proc.pid), base_ctl.metrics()
    base_ctl.stop()
    api.call("DELETE", f"/api/v1/namespaces/{empty}")
    ctl = Ours(args, kc, ns, workdir)
    r = {"namespace": ns, "workers": args.workers, "controller_cmd": " ".join(ctl.cmd), "existing": True,
         "baseline_memory_kib": base}
    res["ours"] = r
    counts = {}
    for sb in api.must("GET", path)["items"]:
        ph = (sb.get("status") or {}).get("phase") or "none"
        counts[ph] = counts.get(ph, 0) + 1
    n = sum(counts.values())
    r["n"] = res["n"] = n
    r["phases"] = counts
    for kind in ("pods", "persistentvolumeclaims"):
        c = {}
        for o in api.must("GET", f"/api/v1/namespaces/{ns}/{kind}")["items"]:
            ph = (o.get("status") or {}).get("phase") or "none"
            c[ph] = c.get(ph, 0) + 1
        r[f"{kind}_phases"] = c
    log(f"ours: {n} Sandboxes present in {ns}: {counts}; pods {r['pods_phases']}; claims "
        f"{r['persistentvolumeclaims_phases']}")
    try:
        with Frozen(args.plane_dir, args.freeze):
            first = restart_controller(api, ctl, n, first_start=True)
            r["first_start"] = first
            full = first["memory_kib_after"]
            r["memory_kib"] = full
            r["rss_per_sandbox_kib"] = rnd((full["VmRSS"] - base["VmRSS"]) / n, 3)
            r["pss_per_sandbox_kib"] = rnd((full.get("Pss", 0) - base.get("Pss", 0)) / n, 3)
            r["hwm_per_sandbox_kib"] = rnd((full["VmHWM"] - base["VmRSS"]) / n, 3)
            if first.get("heap_inuse_kib_after") and "process_heap_inuse_bytes" in mb:
                r["heap_inuse_per_sandbox_kib"] = rnd(
                    (first["heap_inuse_kib_after"] - mb["process_heap_inuse_bytes"] / 1024) / n, 3)
            res["rss_per_sandbox_kib"] = r["rss_per_sandbox_kib"]
            c0 = bench.proc_cpu_s(ctl.proc.pid)
            t_i = time.monotonic()
            time.sleep(args.idle)
            r["idle_cpu_pct"] = rnd((bench.proc_cpu_s(ctl.proc.pid) - c0) / (time.monotonic() - t_i) * 100, 2)
            res["controller_restart"] = restart_controller(api, ctl, n)
            res["restart_converge_s"] = res["controller_restart"]["converge_s"]
            res["apiserver_restart"] = restart_apiserver(args, api, ctl, path, n)
            res["apiserver_restart_converge_s"] = res["apiserver_restart"]["converge_s"]
    finally:
        ctl.stop()


def restart_controller(api, ctl, n, first_start=False):
    """SIGTERM, start again; converged = caches synced, queue empty, nothing changed for 3 s.
    first_start: no controller is running yet (only the start is measured)."""
    out = {}
    req0 = bench.flow_counts(api).get(FLOW_SCHEMA["ours"], 0.0)
    if not first_start:
        out["stop_s"] = rnd(ctl.stop(), 2)
    synced_s, t0 = ctl.start()
    cpu_start = bench.proc_cpu_s(ctl.proc.pid)
    t_last, m, depths = ctl.wait_quiet(timeout=600, poll=0.1)
    req1 = bench.flow_counts(api).get(FLOW_SCHEMA["ours"], 0.0)
    out.update({
        "caches_synced_s": rnd(synced_s, 3),
        "converge_s": rnd(max(t_last - t0, synced_s), 3),
        "reconciles": int(m.get("yao_sandbox_reconcile_total", 0)),
        "writes": int(writes_of(m)),
        "writes_by_verb": {k.split('verb="')[1].split('"')[0]: int(v) for k, v in m.items()
                           if k.startswith("yao_sandbox_api_requests_total{")
                           and any(f'verb="{w}"' in k for w in WRITE_VERBS)},
        "events_sent": int(m.get("yao_sandbox_events_sent_total", 0)),
        "requests": int(req1 - req0),
        "max_queue_depth": int(max(depths) if depths else 0),
        "cpu_s": rnd(bench.proc_cpu_s(ctl.proc.pid), 2),
        "cpu_s_after_start": rnd(bench.proc_cpu_s(ctl.proc.pid) - cpu_start, 2),
        "lists": int(msum(m, "yao_sandbox_informer_lists_total")),
        "memory_kib_after": memory(ctl.proc.pid),
        "heap_inuse_kib_after": int(m.get("process_heap_inuse_bytes", 0) / 1024) or None,
    })
    log(f"ours: restart converged in {out['converge_s']} s (caches synced {out['caches_synced_s']} s), "
        f"{out['reconciles']} reconciles, {out['writes']} writes, {out['requests']} requests")
    return out


def restart_apiserver(args, api, ctl, path, n):
    """Restart kube-apiserver as the chaos suite does; converged = the controller has opened
    its watches again, its queue is empty and quiet, and a Sandbox created right after the
    API server is back is Ready."""
    out = {}
    m0 = ctl.metrics()
    watches0 = msum(m0, "yao_sandbox_informer_watches_total")
    lists0 = msum(m0, "yao_sandbox_informer_lists_total")
    errors0 = msum(m0, "yao_sandbox_informer_errors_total")
    w0, rec0 = writes_of(m0), m0.get("yao_sandbox_reconcile_total", 0)
    ninf = sum(1 for k in m0 if k.startswith("yao_sandbox_informer_watches_total{"))
    env = dict(os.environ, YAO_PLANE_DIR=args.plane_dir)
    t0 = time.monotonic()
    subprocess.run([os.path.join(args.src, "tests/cluster/restart-component"), "kube-apiserver"],
                   env=env, check=True)
    out["apiserver_ready_s"] = rnd(time.monotonic() - t0, 2)
    # every informer has had its watch fail and opened a new one
    t_watch = None
    while time.monotonic() - t0 < 300:
        m = ctl.metrics()
        per = [k for k, v in m.items() if k.startswith("yao_sandbox_informer_watches_total{")
               and v > m0.get(k, 0)]
        if len(per) >= ninf:
            t_watch = time.monotonic()
            break
        time.sleep(0.1)
    out["watches_reopened_s"] = rnd(t_watch - t0, 2) if t_watch else None
    # a new Sandbox created now is brought up (not with a frozen plane: nothing would bind)
    probe = "sb-probe-after-apiserver"
    t_p = time.monotonic()
    if not args.freeze:
        api.must("POST", path, bench.ours_sandbox(probe, 99999), ok=(201,))
    ready_at = None
    while not args.freeze and time.monotonic() - t_p < 120:
        st, sb = api.call("GET", f"{path}/{probe}")
        if st == 200 and ours_ready(sb):
            ready_at = time.monotonic()
            break
        time.sleep(0.1)
    out["probe_ready_after_create_s"] = rnd(ready_at - t_p, 2) if ready_at else None
    t_last, m1, _ = ctl.wait_quiet(timeout=600, poll=0.1)
    if not args.freeze:
        api.call("DELETE", f"{path}/{probe}")
    out.update({
        "converge_s": rnd(max(t_last, ready_at or t_last) - t0, 2),
        "relists": int(msum(m1, "yao_sandbox_informer_lists_total") - lists0),
        "informers": ninf,
        "watch_errors": int(msum(m1, "yao_sandbox_informer_errors_total") - errors0),
        "watches_opened": int(msum(m1, "yao_sandbox_informer_watches_total") - watches0),
        "reconciles": int(m1.get("yao_sandbox_reconcile_total", 0) - rec0),
        "writes": int(writes_of(m1) - w0),
    })
    log(f"ours: API server restart: ready in {out['apiserver_ready_s']} s, watches re-opened at "
        f"{out['watches_reopened_s']} s, converged {out['converge_s']} s, {out['relists']} relists, "
        f"{out['writes']} writes{'' if args.freeze else ' (incl. the probe Sandbox)'}")
    return out


def churn(args, api, ctl, ns, path, names):
    """Keep 70 % persistent; create --churn-total one-shots at --churn-rate per second."""
    out = {}
    keep = int(round(len(names) * 0.7))
    drop = names[keep:]
    t0 = time.monotonic()

    def delete(c, name):
        st, obj = api.call("DELETE", f"{path}/{name}", conn=c)
        if st not in (200, 202, 404):
            raise RuntimeError(f"HTTP {st}")
    tr = Tracker(api, path, ours_ready).start()
    bench.burst(api, drop, delete, args.clients)
    if not tr.wait(lambda t: len(t.live) <= keep, 600):
        raise RuntimeError("persistent Sandboxes not deleted in 600 s")
    t_q, m0, _ = ctl.wait_quiet(timeout=600)
    out["persistent"] = keep
    out["deleted_first"] = len(drop)
    out["delete_quiet_s"] = rnd(t_q - t0, 1)
    mem0 = memory(ctl.proc.pid)
    cpu0 = bench.proc_cpu_s(ctl.proc.pid)
    req0 = bench.flow_counts(api).get(FLOW_SCHEMA["ours"], 0.0)
    kubelet = StandInKubelet(api, ns).start()
    total, rate = args.churn_total, args.churn_rate
    depths, rss = [], []
    stop = threading.Event()

    def sample():
        while not stop.wait(0.5):
            try:
                m = ctl.metrics()
            except OSError:
                continue
            depths.append(m.get("yao_sandbox_workqueue_depth", 0))
            rss.append(bench.proc_status(ctl.proc.pid, "VmRSS"))
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t1 = time.monotonic()
    conns = [api.conn() for _ in range(4)]
    errors = []

    def creator(k):
        for i in range(k, total, len(conns)):
            due = t1 + i / rate
            d = due - time.monotonic()
            if d > 0:
                time.sleep(d)
            st, obj = api.call("POST", path, oneshot_body(f"os-{i:05d}", i), conn=conns[k])
            if st not in (201, 409):
                errors.append(f"os-{i:05d}: HTTP {st}")
    cts = [threading.Thread(target=creator, args=(k,)) for k in range(len(conns))]
    for c in cts:
        c.start()
    for c in cts:
        c.join()
    t_sent = time.monotonic()
    # all one-shots finished and removed (ttlSecondsAfterFinished 0)
    tr.wait(lambda t: not any(k.startswith("os-") for k in t.live), args.timeout)
    with tr.lock:
        left = sum(1 for k in tr.live if k.startswith("os-"))
    t_gone = time.monotonic()
    t_q, m1, _ = ctl.wait_quiet(timeout=600)
    stop.set()
    sampler.join()
    kubelet.stop()
    for c in conns:
        c.close()
    mem1 = memory(ctl.proc.pid)
    req1 = bench.flow_counts(api).get(FLOW_SCHEMA["ours"], 0.0)
    items = api.must("GET", f"{path}")["items"]
    still_ready = sum(1 for s in items if ours_ready(s))
    tr.stop()
    out.update({
        "one_shot_total": total, "rate_per_s": rate, "create_errors": len(errors),
        "create_window_s": rnd(t_sent - t1, 1),
        "all_one_shots_gone_s": rnd(t_gone - t1, 1) if left == 0 else None,
        "one_shots_left": left,
        "runs_finished_by_stand_in": kubelet.finished,
        "runs_finished": int(m1.get("yao_sandbox_runs_finished_total", 0) - m0.get("yao_sandbox_runs_finished_total", 0)),
        "queue_depth_max": int(max(depths) if depths else 0),
        "queue_depth_mean": rnd(sum(depths) / len(depths), 1) if depths else None,
        "rss_kib_before": mem0["VmRSS"], "rss_kib_peak_during": max(rss) if rss else None,
        "rss_kib_after": mem1["VmRSS"], "hwm_kib_after": mem1["VmHWM"],
        "rss_growth_kib": mem1["VmRSS"] - mem0["VmRSS"],
        "pss_kib_before": mem0.get("Pss"), "pss_kib_after": mem1.get("Pss"),
        "cpu_s": rnd(bench.proc_cpu_s(ctl.proc.pid) - cpu0, 2),
        "requests": int(req1 - req0),
        "requests_per_one_shot": rnd((req1 - req0) / total, 2),
        "persistent_ready_after": still_ready,
    })
    log(f"ours: churn {total} one-shots at {rate}/s with {keep} persistent: gone after {out['all_one_shots_gone_s']} s, "
        f"queue max {out['queue_depth_max']}, RSS {mem0['VmRSS']} → {mem1['VmRSS']} KiB, "
        f"{out['requests_per_one_shot']} requests/one-shot, {still_ready}/{keep} persistent Ready")
    return out


# --------------------------------------------------------------------------------------------
# The peer and the floor: creates and all-ready only
# --------------------------------------------------------------------------------------------
def run_peer(args, api, workdir, res):
    n = args.n
    ns = f"yao-scale-peer-{random.randrange(16**4):04x}"
    r = {"n": n, "namespace": ns, "workers": args.workers}
    res["agent_sandbox"] = r
    res["peer_version"] = args.peer_version
    with bench.PeerCrd(api, [args.peer_crd], args.kubeconfig):
        bench.gc_knows_peer_kind(api)
        bench.ensure_namespace(api, ns)
        path = f"/apis/{bench.PEER_GROUP}/namespaces/{ns}/sandboxes"
        kc = bench.controller_kubeconfig(api, "agent_sandbox", workdir)
        logp = os.path.join(workdir, f"{ns}.peer.log")
        cmd = peer_cmd(args, kc)
        r["controller_cmd"] = " ".join(cmd)
        logf = open(logp, "w")
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        logf.close()
        tr = None
        try:
            t0 = time.monotonic()
            while "Starting workers" not in open(logp, errors="replace").read():
                if proc.poll() is not None or time.monotonic() - t0 > 120:
                    raise RuntimeError(f"peer did not start; see {logp}")
                time.sleep(0.05)
            time.sleep(3)
            base = memory(proc.pid)
            r["baseline_memory_kib"] = base
            tr = Tracker(api, path, lambda o: bench.cond_true(o, "Ready")).start()
            cpu0, req0 = bench.proc_cpu_s(proc.pid), bench.flow_counts(api).get(FLOW_SCHEMA["agent_sandbox"], 0.0)
            names = [f"sb-{i:05d}" for i in range(n)]
            load = PlaneLoad(args, api, proc.pid)
            l0 = load.snapshot()
            t0 = time.monotonic()
            create_all(api, args, path, names, lambda name, i: bench.peer_sandbox(name, i))
            ok = tr.wait(lambda t: len(t.ready) >= n, args.timeout)
            r["plane_bringup"] = PlaneLoad.since(l0, load.snapshot(), n)
            with tr.lock:
                lat = sorted(v - t0 for v in tr.ready.values())
            r["ready_count"] = len(lat)
            r["all_ready_s"] = rnd(lat[-1], 2) if ok else None
            r["ready_p50_s"], r["ready_p99_s"] = rnd(pct(lat, 50), 2), rnd(pct(lat, 99), 2)
            log(f"peer: {len(lat)}/{n} Ready, all in {r['all_ready_s']} s")
            # settle like ours: no request for 3 s
            last, t_last = None, time.monotonic()
            while time.monotonic() - t_last < 3 and time.monotonic() - t0 < args.timeout + 300:
                q = bench.flow_counts(api).get(FLOW_SCHEMA["agent_sandbox"], 0.0)
                if q != last:
                    last, t_last = q, time.monotonic()
                time.sleep(0.5)
            cpu1, req1 = bench.proc_cpu_s(proc.pid), bench.flow_counts(api).get(FLOW_SCHEMA["agent_sandbox"], 0.0)
            full = memory(proc.pid)
            r.update({"memory_kib": full, "rss_peak_kib": full["VmHWM"], "cpu_s": rnd(cpu1 - cpu0, 2),
                      "cpu_ms_per_sandbox": rnd((cpu1 - cpu0) * 1000 / n, 3),
                      "requests": int(req1 - req0), "requests_per_sandbox": rnd((req1 - req0) / n, 3),
                      "rss_per_sandbox_kib": rnd((full["VmRSS"] - base["VmRSS"]) / n, 3)})
            log(f"peer: RSS {full['VmRSS']} KiB, CPU {r['cpu_s']} s, {r['requests_per_sandbox']} requests/Sandbox")
        finally:
            if tr:
                tr.stop()
            log(f"peer: deleting namespace {ns}")
            r["namespace_delete_s"] = rnd(delete_namespace(api, ns, args.delete_timeout), 1)
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run_floor(args, api, workdir, res):
    n = args.n
    ns = f"yao-scale-floor-{random.randrange(16**4):04x}"
    bench.ensure_namespace(api, ns)
    r = {"n": n, "namespace": ns}
    res["floor"] = r
    tr = Tracker(api, f"/api/v1/namespaces/{ns}/pods", bench.pod_ready).start()
    try:
        names = [f"sb-{i:05d}" for i in range(n)]

        def create(c, item):
            i, name = item
            objs, _ = bench.floor_objects(ns, name, i)
            for p, body in objs:
                st, obj = api.call("POST", p, body, conn=c)
                if st not in (201, 409):
                    raise RuntimeError(f"HTTP {st}: {str(obj)[:200]}")
        load = PlaneLoad(args, api)
        l0 = load.snapshot()
        t0 = time.monotonic()
        errs = bench.burst(api, list(enumerate(names)), create, args.clients)
        if errs:
            raise RuntimeError(f"{len(errs)} creates failed, first: {errs[0]}")
        ok = tr.wait(lambda t: len(t.ready) >= n, args.timeout)
        r["plane_bringup"] = PlaneLoad.since(l0, load.snapshot(), n)
        with tr.lock:
            lat = sorted(v - t0 for v in tr.ready.values())
        r["ready_count"] = len(lat)
        r["all_ready_s"] = rnd(lat[-1], 2) if ok else None
        r["ready_p50_s"], r["ready_p99_s"] = rnd(pct(lat, 50), 2), rnd(pct(lat, 99), 2)
        log(f"floor: {len(lat)}/{n} Ready, all in {r['all_ready_s']} s")
    finally:
        tr.stop()
        r["namespace_delete_s"] = rnd(delete_namespace(api, ns, args.delete_timeout), 1)


# --------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plane-dir", default=os.environ.get("YAO_PLANE_DIR"), required=not os.environ.get("YAO_PLANE_DIR"))
    ap.add_argument("--ours", required=True)
    ap.add_argument("--peer", default="")
    ap.add_argument("--peer-crd", default="")
    ap.add_argument("--peer-version", default="")
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--only", default="ours", help="comma-separated subset of ours,agent_sandbox,floor")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--timeout", type=float, default=None, help="seconds for all Ready (default max(300, 0.3 N))")
    ap.add_argument("--churn", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--churn-total", type=int, default=None, help="one-shots in the churn (default 0.3 N)")
    ap.add_argument("--churn-rate", type=float, default=20.0, help="one-shots created per second")
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "yao-scale-work"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "scale.json"))
    ap.add_argument("--delete-timeout", type=float, default=900,
                    help="seconds to wait for each namespace to be gone at the end (0: do not wait)")
    ap.add_argument("--static-volumes", action="store_true",
                    help="pre-create the workspaces' volumes (a class without provisioner) instead of "
                         "the plane's test provisioner")
    ap.add_argument("--bulk-bind", action="store_true",
                    help="make and bind each workspace's volume from the bench, in parallel "
                         "(kube-controller-manager's binder does it one claim at a time)")
    ap.add_argument("--existing", default="",
                    help="namespace whose Sandboxes are already there: measure memory, restarts and the "
                         "API server restart with them (no creates)")
    ap.add_argument("--freeze", action="store_true",
                    help="with --existing: SIGSTOP kube-controller-manager and kube-scheduler during the "
                         "measurements (an unchanged world)")
    ap.add_argument("--merge", action="store_true", help="keep the configs of --out that this run does not measure")
    args = ap.parse_args()
    args.src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args.timeout = args.timeout or max(300.0, 0.3 * args.n)
    args.churn_total = args.churn_total or int(round(0.3 * args.n))
    D = args.plane_dir
    args.kubeconfig = os.path.join(D, "kubeconfig")
    with open(os.path.join(D, "api-port")) as f:
        server = f"https://127.0.0.1:{f.read().strip()}"
    with open(os.path.join(D, "admin-token")) as f:
        api = bench.Api(server, f.read().strip(), os.path.join(D, "pki", "ca.crt"))
    os.makedirs(args.workdir, exist_ok=True)
    only = [w for w in ("floor", "ours", "agent_sandbox") if w in args.only.split(",")]
    if args.bulk_bind and args.static_volumes:
        ap.error("--bulk-bind and --static-volumes are two ways to the same volumes: choose one")
    if "agent_sandbox" in only and not (args.peer and args.peer_crd and args.peer_version):
        ap.error("agent_sandbox needs --peer, --peer-crd and --peer-version")
    if "agent_sandbox" in only:
        bench.PEER_GROUP = bench.peer_api_version(args.peer_crd)   # v1alpha1 up to v0.4.x, else v1beta1

    res = {}
    if args.merge and os.path.exists(args.out):
        with open(args.out) as f:
            res = json.load(f)
    mach = machine()
    started = datetime.datetime.now(datetime.timezone.utc)
    res.update({"n": args.n, "date": started.isoformat(timespec="seconds"), "machine": mach,
                "command": " ".join(sys.argv),
                "settings": {"clients": args.clients, "workers": args.workers, "image": bench.IMAGE,
                             "cpu": bench.CPU, "memory": bench.MEMORY, "workspace": bench.WORKSPACE,
                             "storage_class": bench.STORAGE_CLASS, "churn_rate": args.churn_rate,
                             "churn_total": args.churn_total}})
    sampler = Sampler(mach)
    sampler.start()
    subprocess.run(["kubectl", "--kubeconfig", args.kubeconfig, "apply", "-f", os.path.join(args.src, "crd/")],
                   check=True, stdout=subprocess.DEVNULL)
    added = ensure_nodes(api, args.n + (args.churn_total if args.churn else 0))
    volumes = []
    if args.static_volumes:
        # every config makes its own claims; Retain: a released volume is not reused
        per = args.n + (args.churn_total if args.churn and "ours" in only else 0)
        volumes = static_volumes(api, args, per * len(only) + 10)
    binder = None
    if args.bulk_bind:
        static_class(api)
        binder = BulkBinder(api, args).start()
    res["settings"]["storage_class"] = bench.STORAGE_CLASS
    res["settings"]["static_volumes"] = len(volumes)
    res["settings"]["bulk_bind"] = bool(binder)
    try:
        for who in only:
            log(f"{who}: N = {args.n}; load {loadavg()}, {mem_available_gib():.1f} GiB available")
            {"ours": run_ours, "agent_sandbox": run_peer, "floor": run_floor}[who](args, api, args.workdir, res)
            mach[f"loadavg_after_{who}"] = loadavg()
    finally:
        sampler.stopping.set()
        bench.remove_identities(api)
        remove_nodes(api, added)
        if binder:
            binder.stop()
            res["settings"]["bulk_bound"] = binder.bound
            res["settings"]["bulk_bind_rewatches"] = binder.rewatches
            if binder.errors:
                res["settings"]["bulk_bind_errors"] = binder.errors[:20]
                log(f"bulk binder: {len(binder.errors)} errors, first: {binder.errors[0]}")
            if args.delete_timeout:
                volumes += binder.volumes
        if volumes and args.delete_timeout:
            remove_static_volumes(api, args, volumes)
        mach["loadavg_at_end"] = loadavg()
        tmp = args.out + ".tmp"
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
        os.replace(tmp, args.out)
        log(f"results in {args.out}")


if __name__ == "__main__":
    main()
