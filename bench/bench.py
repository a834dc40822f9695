#!/usr/bin/env python3
"""bench/bench.py — side-by-side benchmark of yao-sandbox against kubernetes-sigs/agent-sandbox
and against a no-controller floor, on the local control plane. Driven by bench/run, which
brings the plane up, builds/caches both controllers and passes their paths here.

Everything is Python standard library: http.client + ssl with HTTP keep-alive against the
API server, one thread per watch, a pool of client threads for the bursts. Times come from
this process's monotonic clock at the moment a request is sent or a watch event is read,
never from the second-resolution timestamps the API server writes into objects.

One measured run (a "config": floor, ours or agent_sandbox) on a fresh namespace:
  1. watches on pods, PVCs and (for controllers) the Sandbox kind, started and established
     BEFORE anything is created; the controller started and its caches synced;
  2. snapshot (controller CPU, controller API requests); burst of N creates from
     --clients threads; wait until every sandbox is Ready;
  3. settle 2 s, then --idle seconds of idle CPU measurement with N sandboxes present;
  4. burst of N deletes; wait until every pod, PVC and Sandbox is gone; snapshot; VmHWM.
"""
import argparse
import datetime
import http.client
import json
import os
import queue
import random
import re
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

IMAGE = "yao-sandbox/sandbox:latest"     # same image string for all three
PULL_POLICY = None                       # kwok pulls nothing; the real node: IfNotPresent
CPU = "250m"                             # the CPU limit
CPU_REQUEST = CPU                        # requests == limits, as our controller sets them by default
MEMORY = "256Mi"
WORKSPACE = "1Gi"
STORAGE_CLASS = "yao-test"
IDLE_SCRIPT = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"
OURS_GROUP = "sandbox.yaoapps.com/v1alpha1"
PEER_GROUP = "agents.x-k8s.io/v1beta1"          # v1alpha1 up to v0.4.x: set from the CRD file
PEER_EXT_GROUP = "extensions.agents.x-k8s.io/v1beta1"   # SandboxTemplate, SandboxWarmPool, SandboxClaim
FLOW_SCHEMA = {"ours": "yao-bench-ours", "agent_sandbox": "yao-bench-agent-sandbox"}
SA_NS = "yao-bench"
KEYS = ["pod_p50_ms", "pod_p90_ms", "pod_p99_ms", "ready_p50_ms", "ready_p90_ms", "ready_p99_ms",
        "all_ready_s", "all_gone_s", "rss_peak_kib", "cpu_s", "requests_per_sandbox", "idle_cpu_pct",
        "pss_peak_kib", "uss_peak_kib", "rss_rest_kib", "pss_rest_kib", "uss_rest_kib"]


def log(msg):
    print(f"[{datetime.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# API client
# --------------------------------------------------------------------------------------------
class Api:
    """Minimal Kubernetes REST client: bearer token, CA file, keep-alive connections.
    Counts every request it sends (the harness's own API traffic)."""

    def __init__(self, server, token, ca):
        u = urllib.parse.urlparse(server)
        self.server, self.host, self.port, self.token = server, u.hostname, u.port, token
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ca = ca
        self.count = 0
        self.lock = threading.Lock()

    def conn(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None, conn=None, ctype="application/json", raw=False):
        """-> (status, parsed JSON or text). Retries what the server asks to retry (429/503,
        e.g. "storage is (re)initializing" just after a CRD is installed), honouring
        Retry-After, up to about 30 s."""
        for attempt in range(30):
            st, obj = self.call_once(method, path, body, conn, ctype, raw)
            if st not in (429, 503) or attempt == 29:
                return st, obj
            wait = 1.0
            if isinstance(obj, dict):
                wait = float((obj.get("details") or {}).get("retryAfterSeconds") or 1)
            time.sleep(min(max(wait, 0.1), 5.0))

    def call_once(self, method, path, body=None, conn=None, ctype="application/json", raw=False):
        """-> (status, parsed JSON or text). Retries once on a dropped keep-alive connection."""
        own = conn is None
        c = conn or self.conn()
        hdr = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            hdr["Content-Type"] = ctype
        try:
            for attempt in (0, 1):
                try:
                    with self.lock:
                        self.count += 1
                    c.request(method, path, body=data, headers=hdr)
                    r = c.getresponse()
                    payload = r.read()
                    break
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                        http.client.CannotSendRequest, http.client.ResponseNotReady):
                    c.close()
                    if attempt:
                        raise
            if raw:
                return r.status, payload.decode(errors="replace")
            try:
                return r.status, json.loads(payload) if payload else None
            except ValueError:
                return r.status, payload.decode(errors="replace")
        finally:
            if own:
                c.close()

    def must(self, method, path, body=None, ok=(200, 201, 202), **kw):
        st, obj = self.call(method, path, body, **kw)
        if st not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {st}: {str(obj)[:300]}")
        return obj

    def apply(self, path, name, body):
        """Create, or leave as is when it exists (409)."""
        st, obj = self.call("POST", path, body)
        if st not in (200, 201, 409):
            raise RuntimeError(f"POST {path}/{name}: HTTP {st}: {str(obj)[:300]}")


class Watch(threading.Thread):
    """LIST for a resourceVersion, then a streaming WATCH from it. on_event(t, type, obj) is
    called with the monotonic time at which the event's line was read. Re-watches from the
    last seen resourceVersion if the server ends the stream."""

    def __init__(self, api, path, on_event):
        super().__init__(daemon=True)
        self.api, self.path, self.on_event = api, path, on_event
        self.established = threading.Event()
        self.stopping = False
        self.conn = None
        self.error = None

    def run(self):
        try:
            lst = self.api.must("GET", self.path)
            rv = lst["metadata"]["resourceVersion"]
            for item in lst.get("items", []):
                self.on_event(time.monotonic(), "ADDED", item)
            while not self.stopping:
                self.conn = self.api.conn(timeout=None)
                sep = "&" if "?" in self.path else "?"
                self.conn.request("GET", f"{self.path}{sep}watch=1&resourceVersion={rv}&timeoutSeconds=3600",
                                  headers={"Authorization": "Bearer " + self.api.token})
                r = self.conn.getresponse()
                if r.status != 200:
                    raise RuntimeError(f"watch {self.path}: HTTP {r.status}")
                self.established.set()
                while True:
                    line = r.readline()
                    t = time.monotonic()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev["type"] == "ERROR":
                        raise RuntimeError(f"watch {self.path}: {ev['object'].get('message')}")
                    rv = ev["object"]["metadata"].get("resourceVersion", rv)
                    if ev["type"] != "BOOKMARK":
                        self.on_event(t, ev["type"], ev["object"])
                self.conn.close()
        except Exception as e:  # noqa: BLE001 — reported by the run
            if not self.stopping:
                self.error = e
                log(f"watch {self.path} failed: {e}")
        finally:
            self.established.set()

    def stop(self):
        self.stopping = True
        try:
            if self.conn and self.conn.sock:
                self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# --------------------------------------------------------------------------------------------
# Objects of equal shape
# --------------------------------------------------------------------------------------------
def pod_spec(env_name, user, chat, claim=None, mount=True):
    """The pod our controller builds (controller/sandbox/model/builders.c), reproduced for the peer's
    podTemplate and for the floor, so admission, scheduling and kwok see the same shape."""
    spec = {
        "restartPolicy": "Always",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 10,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000,
                            "fsGroupChangePolicy": "OnRootMismatch",
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "sandbox", "image": IMAGE, "command": ["/bin/sh", "-c", IDLE_SCRIPT],
            **({"imagePullPolicy": PULL_POLICY} if PULL_POLICY else {}),
            "env": [{"name": "YAO_SANDBOX_NAME", "value": env_name}, {"name": "YAO_USER_ID", "value": user},
                    {"name": "YAO_CHAT_ID", "value": chat}],
            "resources": {"limits": {"cpu": CPU, "memory": MEMORY}, "requests": {"cpu": CPU_REQUEST, "memory": MEMORY}},
            **({"volumeMounts": [{"name": "workspace", "mountPath": "/workspace"}]} if mount else {}),
            "securityContext": {"allowPrivilegeEscalation": False, "privileged": False,
                                "readOnlyRootFilesystem": False, "capabilities": {"drop": ["ALL"]}},
        }],
    }
    if claim:
        spec["volumes"] = [{"name": "workspace", "persistentVolumeClaim": {"claimName": claim}}]
    return spec


def pvc_spec():
    return {"accessModes": ["ReadWriteOnce"], "storageClassName": STORAGE_CLASS, "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": WORKSPACE}}}


def ours_sandbox(name, i, class_name=None):
    # lifecycle persistent: like the peer's Sandbox without shutdownTime, never stopped.
    sb = {"apiVersion": OURS_GROUP, "kind": "Sandbox", "metadata": {"name": name},
          "spec": {"userID": "bench", "chatID": f"c{i:05d}", "image": IMAGE, "lifecycle": "persistent",
                   "resources": {"cpu": CPU, "memory": MEMORY},
                   "workspace": {"size": WORKSPACE, "storageClassName": STORAGE_CLASS}}}
    if CPU_REQUEST != CPU:
        sb["spec"]["resources"]["requests"] = {"cpu": CPU_REQUEST, "memory": MEMORY}
    if class_name:
        sb["spec"]["className"] = class_name
    return sb


def ours_warm_class(name, size):
    """warm-pool scenario: a SandboxClass keeping `size` Bound, unowned workspace claims of its
    default workspace (storageClassName, defaultSize: the Sandboxes' own) per namespace that
    has Sandboxes of the class (spec.workspace.warmPool.size)."""
    return {"apiVersion": OURS_GROUP, "kind": "SandboxClass", "metadata": {"name": name},
            "spec": {"workspace": {"storageClassName": STORAGE_CLASS, "defaultSize": WORKSPACE,
                                   "warmPool": {"size": size}}}}


def peer_template(name, workspace=False):
    """warm-pool scenario: the peer's SandboxTemplate. Its pods carry no workspace (a warm pool
    pod has no claim); a SandboxClaim may add one (volumeClaimTemplatesPolicy Allowed), which
    the peer turns into the PVC workspace-<sandbox> and a pod volume named workspace. The
    container does not mount it: a mount in the template would make every pool pod invalid
    (no such volume); for the scheduler, the binder and kwok the claim is the same.
    workspace (real-node-local-path): the template itself carries the volumeClaimTemplate
    `workspace`, mounted by the container: every pool sandbox has its own claim, bound while
    it waits, and a claim without templates of its own adopts one with its workspace."""
    spec = {"podTemplate": {"metadata": {"labels": {"app.kubernetes.io/name": "bench"}},
                            "spec": pod_spec("pool", "bench", "pool", mount=workspace)},
            "volumeClaimTemplatesPolicy": "Allowed"}
    if workspace:
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "workspace"}, "spec": pvc_spec()}]
    return {"apiVersion": PEER_EXT_GROUP, "kind": "SandboxTemplate", "metadata": {"name": name}, "spec": spec}


def peer_warm_pool(name, template, replicas):
    return {"apiVersion": PEER_EXT_GROUP, "kind": "SandboxWarmPool", "metadata": {"name": name},
            "spec": {"replicas": replicas, "sandboxTemplateRef": {"name": template}}}


def peer_claim(name, pool, workspace):
    spec = {"warmPoolRef": {"name": pool}}
    if workspace:   # forces a cold start: pool sandboxes have no such claim
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "workspace"}, "spec": pvc_spec()}]
    return {"apiVersion": PEER_EXT_GROUP, "kind": "SandboxClaim", "metadata": {"name": name}, "spec": spec}


def peer_sandbox(name, i):
    return {"apiVersion": PEER_GROUP, "kind": "Sandbox", "metadata": {"name": name},
            "spec": {"podTemplate": {"metadata": {"labels": {"app.kubernetes.io/name": "bench"}},
                                     "spec": pod_spec(name, "bench", f"c{i:05d}")},
                     "volumeClaimTemplates": [{"metadata": {"name": "workspace"}, "spec": pvc_spec()}]}}


def floor_objects(ns, name, i):
    claim = f"{name}-workspace"
    return ([(f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
              {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim}, "spec": pvc_spec()}),
             (f"/api/v1/namespaces/{ns}/pods",
              {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "bench"}},
               "spec": pod_spec(name, "bench", f"c{i:05d}", claim)})],
            [f"/api/v1/namespaces/{ns}/pods/{name}", f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{claim}"])


def cond_true(obj, ctype):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c.get("status") == "True"
    return False


def pod_ready(p):
    return (p.get("status") or {}).get("phase") == "Running" and cond_true(p, "Ready")


# --------------------------------------------------------------------------------------------
# Process and metrics probes
# --------------------------------------------------------------------------------------------
CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK   # utime + stime


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def flow_counts(api):
    """apiserver_flowcontrol_dispatched_requests_total by flow schema: each controller runs as
    its own ServiceAccount, matched by its own FlowSchema, so this counts exactly its requests."""
    st, text = api.call("GET", "/metrics", raw=True)
    out = {}
    for m in re.finditer(r'^apiserver_flowcontrol_dispatched_requests_total\{flow_schema="([^"]+)"[^}]*\} (\S+)$',
                         text, re.M):
        out[m.group(1)] = out.get(m.group(1), 0) + float(m.group(2))
    return out


def trace_summary(path, windows, n):
    """Requests recorded by reqtrace.py inside the windows, by verb and resource, per sandbox."""
    counts = {}
    with open(path) as f:
        for line in f:
            t, method, target = line.split(" ", 2)
            t = float(t)
            if not any(a <= t <= b for a, b in windows):
                continue
            p, _, q = target.strip().partition("?")
            parts = p.strip("/").split("/")
            parts = parts[2:] if parts[0] == "api" else parts[3:]
            if len(parts) > 2 and parts[0] == "namespaces":
                parts = parts[2:]
            res = parts[0] if parts else "/"
            if len(parts) > 2:
                res += "/" + parts[2]
            if "watch=1" in q or "watch=true" in q:
                kind = " watch"
            elif method == "GET" and len(parts) == 1:
                kind = " list"
            else:
                kind = ""
            key = f"{method} {res}{kind}"
            counts[key] = counts.get(key, 0) + 1
    return {k: round(v / n, 2) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)


def rnd(x, nd=1):
    return None if x is None else round(x, nd)


# --------------------------------------------------------------------------------------------
# Setup: identities for the controllers, CRDs
# --------------------------------------------------------------------------------------------
REAL_NODE = "yao-node"   # tests/cluster/up --real-node


def wait_nodes_ready(api, real_node=False, timeout=60):
    """A kwok node that misses its heartbeat is marked NotReady by kube-controller-manager,
    which flips every pod on it to Ready=False for good: never start a run on such a plane.
    real_node: the real node instead."""
    deadline = time.monotonic() + timeout
    sel = f"fieldSelector=metadata.name%3D{REAL_NODE}" if real_node else "labelSelector=type%3Dkwok"
    while True:
        nodes = api.must("GET", f"/api/v1/nodes?{sel}")["items"]
        bad = [nd["metadata"]["name"] for nd in nodes if not cond_true(nd, "Ready")]
        if nodes and not bad:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{'the real node' if real_node else 'kwok nodes'} not Ready: {bad or 'none found'}")
        time.sleep(0.5)


def ensure_namespace(api, ns):
    api.apply("/api/v1/namespaces", ns, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:   # pods are refused until the default ServiceAccount exists
        st, _ = api.call("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
        if st == 200:
            return
        time.sleep(0.1)
    raise RuntimeError(f"namespace {ns}: no default ServiceAccount after 60 s")


def controller_kubeconfig(api, who, workdir, via=None):
    """A ServiceAccount yao-bench/<flow schema name> bound to cluster-admin (the same rights
    as the admin token, for both controllers), a FlowSchema that sends exactly its requests
    to the exempt priority level (no API-side throttling, like the admin token), and a
    kubeconfig carrying a fresh token for it."""
    sa = FLOW_SCHEMA[who]
    ensure_namespace(api, SA_NS)
    api.apply(f"/api/v1/namespaces/{SA_NS}/serviceaccounts", sa,
              {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}})
    api.apply("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", sa,
              {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": sa},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
               "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": SA_NS}]})
    api.apply("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", sa,
              {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": sa},
               "spec": {"matchingPrecedence": 50, "priorityLevelConfiguration": {"name": "exempt"},
                        "rules": [{"subjects": [{"kind": "ServiceAccount",
                                                 "serviceAccount": {"name": sa, "namespace": SA_NS}}],
                                   "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                      "namespaces": ["*"], "clusterScope": True}],
                                   "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}})
    tok = api.must("POST", f"/api/v1/namespaces/{SA_NS}/serviceaccounts/{sa}/token",
                   {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"expirationSeconds": 4 * 3600}})["status"]["token"]
    path = os.path.join(workdir, f"{sa}{'-traced' if via else ''}.kubeconfig")
    cluster = (f'{{server: "{via}", insecure-skip-tls-verify: true}}' if via else
               f'{{server: "{api.server}", certificate-authority: "{api.ca}"}}')
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster: {cluster}
users:
- name: {sa}
  user: {{token: "{tok}"}}
contexts:
- name: bench
  context: {{cluster: bench, user: {sa}, namespace: {SA_NS}}}
current-context: bench
""")
    return path


def gc_knows_peer_kind(api, kind="Sandbox", timeout=90):
    """The peer relies on the garbage collector to delete a Sandbox's pod and PVC (and a
    SandboxClaim's Sandbox). The GC only acts for owner kinds its discovery knows, and it
    re-reads discovery every 30 s: right after the CRD is installed, deletes would look up to
    30 s slower than on any real cluster. Probe: a ConfigMap owned by an object of that kind
    (no controller running); delete the owner; wait until the GC has deleted the ConfigMap.
    Returns the seconds it took."""
    ns = SA_NS
    ensure_namespace(api, ns)
    if kind == "Sandbox":
        group, plural = PEER_GROUP, "sandboxes"
        idle = {"replicas": 0} if PEER_GROUP.endswith("v1alpha1") else {"operatingMode": "Suspended"}
        spec = {"podTemplate": {"spec": {"containers": [{"name": "c", "image": IMAGE}]}}, **idle}
    else:
        group, plural = PEER_EXT_GROUP, "sandboxclaims"
        spec = {"warmPoolRef": {"name": "gc-probe-none"}}
    base = f"/apis/{group}/namespaces/{ns}/{plural}"
    t0 = time.monotonic()
    while True:
        name = f"gc-probe-{random.randrange(16**6):06x}"
        sb = api.must("POST", base, {"apiVersion": group, "kind": kind, "metadata": {"name": name}, "spec": spec})
        api.must("POST", f"/api/v1/namespaces/{ns}/configmaps",
                 {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": name, "ownerReferences": [{"apiVersion": group, "kind": kind,
                                                                  "name": name, "uid": sb["metadata"]["uid"]}]}})
        api.must("DELETE", f"{base}/{name}")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if api.call("GET", f"/api/v1/namespaces/{ns}/configmaps/{name}")[0] == 404:
                return time.monotonic() - t0
            time.sleep(0.2)
        api.call("DELETE", f"/api/v1/namespaces/{ns}/configmaps/{name}")
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"the garbage collector did not act for {group} {kind}s in {timeout} s")


def remove_identities(api):
    """The controllers' ServiceAccounts, cluster-admin bindings and FlowSchemas go at the end:
    no cluster-admin identity is left behind on a shared plane."""
    for sa in FLOW_SCHEMA.values():
        api.call("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{sa}")
        api.call("DELETE", f"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/{sa}")
        api.call("DELETE", f"/api/v1/namespaces/{SA_NS}/serviceaccounts/{sa}")


def kubectl(args, kubeconfig, check=True, **kw):
    p = subprocess.run(["kubectl", "--kubeconfig", kubeconfig] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[:500]}")
    return p


def peer_api_version(crd_path):
    """agents.x-k8s.io/v1beta1 from v1.0 on, v1alpha1 before: the version the CRD stores."""
    with open(crd_path) as f:
        text = f.read()
    m = re.search(r"^\s*-?\s*name: (v1\w+)\s*$", text, re.M)
    return f"agents.x-k8s.io/{m.group(1) if m else 'v1alpha1'}"


def peer_extension_crds(crd_path):
    """The peer's extension CRDs (SandboxClaim, SandboxTemplate, SandboxWarmPool), next to
    its Sandbox CRD in the module's k8s/crds."""
    d = os.path.dirname(crd_path)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("extensions.agents.x-k8s.io_"))


class PeerCrd:
    """The peer's CRDs are installed only while the benchmark runs. Its kind is also
    `sandboxes`, and with fresh discovery `kubectl get sandbox` resolves to agents.x-k8s.io
    (alphabetically first), which would break anyone using `kubectl get sandbox` on the same
    plane meanwhile. After removing it, `kubectl api-resources` refreshes kubectl's discovery
    cache (which would otherwise keep mapping `sandbox` to the removed kind). The extension
    CRDs (warm-pool scenario) come and go with it."""

    def __init__(self, api, paths, kubeconfig):
        self.api, self.paths, self.kubeconfig = api, list(paths), kubeconfig

    def __enter__(self):
        for path in self.paths:
            kubectl(["apply", "--server-side", "-f", path], self.kubeconfig)
        deadline = time.monotonic() + 60
        for path in self.paths:
            with open(path) as f:
                name = re.search(r"^  name: (\S+)$", f.read(), re.M).group(1)
            # (kubectl wait fails on a CRD that has no conditions yet: poll the API instead)
            while True:
                st, crd = self.api.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                if st == 200 and cond_true(crd, "Established"):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the CRD {name} is not Established after 60 s")
                time.sleep(0.2)
            plural, group = name.split(".", 1)
            version = crd["spec"]["versions"][0]["name"]
            while self.api.call("GET", f"/apis/{group}/{version}/{plural}")[0] != 200:   # served
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{group}/{plural} is not served after 60 s")
                time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        for path in reversed(self.paths):
            kubectl(["delete", "-f", path, "--ignore-not-found", "--wait=true", "--timeout=120s"],
                    self.kubeconfig, check=False)
        kubectl(["api-resources"], self.kubeconfig, check=False)


# --------------------------------------------------------------------------------------------
# One measured run
# --------------------------------------------------------------------------------------------
def burst(api, items, fn, clients):
    """Run fn(conn, item) for every item from `clients` threads, each with one keep-alive
    connection. Returns the list of errors."""
    q = queue.Queue()
    for it in items:
        q.put(it)
    errors = []

    def worker():
        c = api.conn()
        try:
            while True:
                try:
                    it = q.get_nowait()
                except queue.Empty:
                    return
                try:
                    fn(c, it)
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{it}: {e}")
        finally:
            c.close()

    ts = [threading.Thread(target=worker) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


class MemSampler(threading.Thread):
    """RSS, PSS and USS of a controller from /proc/PID/smaps_rollup every 0.25 s: the peaks,
    and `rest()` for a sample at a chosen moment. PSS charges each shared page to the processes
    mapping it in equal parts; USS counts only the pages no other process maps (what stopping
    the process would give back)."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = {"rss": 0, "pss": 0, "uss": 0}
        self.stopping = threading.Event()

    def sample(self):
        out = {}
        try:
            with open(f"/proc/{self.pid}/smaps_rollup") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k in ("Rss", "Pss", "Private_Clean", "Private_Dirty", "Private_Hugetlb"):
                        out[k] = int(v.split()[0])
        except (OSError, ValueError):
            return None
        s = {"rss": out.get("Rss", 0), "pss": out.get("Pss", 0),
             "uss": out.get("Private_Clean", 0) + out.get("Private_Dirty", 0) + out.get("Private_Hugetlb", 0)}
        for k, v in s.items():
            self.peak[k] = max(self.peak[k], v)
        return s

    def run(self):
        while not self.stopping.wait(0.25):
            if self.sample() is None:
                return

    def stop(self):
        self.stopping.set()


STAGES = ["sandbox_exists", "pvc_exists", "pvc_bound", "pod_exists", "pod_scheduled", "pod_ready", "sandbox_ready"]
# intervals between milestones, per sandbox (where the time goes between two watch events)
INTERVALS = [("create→sandbox", None, "sandbox_exists"), ("sandbox→pod", "sandbox_exists", "pod_exists"),
             ("pod→scheduled", "pod_exists", "pod_scheduled"), ("create→claim bound", None, "pvc_bound"),
             ("scheduled→pod ready", "pod_scheduled", "pod_ready"), ("pod ready→Ready", "pod_ready", "sandbox_ready")]


class Run:
    """One measured run of one config. `who` is floor, ours or agent_sandbox; in the warm-pool
    scenario also agent_sandbox_warm; in real-node-local-path also floor_bound (bare pods on
    claims made and bound before the burst). scn: the scenario (dict, see SCENARIOS)."""

    def __init__(self, args, api, who, n, tag, scn=None):
        self.args, self.api, self.who, self.n = args, api, who, n
        self.scn = scn or {}
        self.ns = f"yao-bench-{tag}"
        self.names = [f"sb-{i:05d}" for i in range(n)]
        self.peer = who.startswith("agent_sandbox")
        self.bare = who in ("floor", "floor_bound")       # no controller: the pods themselves
        self.warm = bool(self.scn.get("warm"))
        self.claims = self.warm and self.peer            # the peer through SandboxClaims
        # the peer's claim carries the workspace (a cold start) — except where the template
        # carries it (real-node-local-path: every claim adopts a pool sandbox with its claim)
        self.claim_workspace = self.claims and who == "agent_sandbox" and not self.scn.get("template_workspace")
        self.ours_warm = self.warm and who == "ours"
        self.lock = threading.Lock()
        self.created = {}     # name -> monotonic time the create request was sent
        self.pod_t = {}       # name -> first ADDED of its pod
        self.ready_t = {}     # name -> first time Ready
        # the stages in between, for the latency profile
        self.stage = {k: {} for k in ("sandbox_exists", "pvc_exists", "pvc_bound", "pod_scheduled", "pod_ready")}
        self.live = {"pods": set(), "pvcs": set(), "sandboxes": set(), "claims": set()}
        self.seen = {"pods": 0, "pvcs": 0, "sandboxes": 0, "claims": 0}
        self.sb2claim = {}    # peer claims: Sandbox name -> the SandboxClaim owning it
        self.adopted = set()  # claims that adopted a pool sandbox (its pod predates the claim)
        self.pod_nodes = {}   # pod name -> node it was scheduled to
        self.last_gone = 0.0
        self.changed = threading.Condition(self.lock)
        self.timeout = args.timeout or max(120.0, 0.6 * n)
        self.proc = None
        self.mem = None
        self.tracer = None
        self.perf = None
        self.watches = []
        self.bound_q = queue.Queue() if (who == "floor" and args.floor_after_bound) else None
        self.result = {}

    # ---- watch callbacks
    def _key_of_pod(self, p):
        md = p["metadata"]
        if self.who == "ours":
            return (md.get("labels") or {}).get("sandbox.yaoapps.com/name")
        if self.claims:
            return self.sb2claim.get(md["name"])
        return md["name"]

    def _key_of_pvc(self, o):
        md = o["metadata"]
        if self.who == "ours":
            return (md.get("labels") or {}).get("sandbox.yaoapps.com/name")
        if self.peer:
            sb = md["name"][len("workspace-"):] if md["name"].startswith("workspace-") else None
            return self.sb2claim.get(sb) if self.claims else sb
        return md["name"][:-len("-workspace")] if md["name"].endswith("-workspace") else None

    def _stage(self, name, k, t):
        if k is not None and k not in self.stage[name]:
            self.stage[name][k] = t

    def _track(self, kind, t, typ, obj):
        name = obj["metadata"]["name"]
        if typ == "ADDED":
            if name not in self.live[kind]:
                self.seen[kind] += 1
            self.live[kind].add(name)
        elif typ == "DELETED":
            self.live[kind].discard(name)
            self.last_gone = max(self.last_gone, t)

    def on_pod(self, t, typ, p):
        with self.lock:
            self._track("pods", t, typ, p)
            k = self._key_of_pod(p)
            if k is not None and typ == "ADDED" and k not in self.pod_t:
                self.pod_t[k] = t
            node = (p.get("spec") or {}).get("nodeName")
            if node and k is not None:
                self.pod_nodes[p["metadata"]["name"]] = node
            if typ != "DELETED" and k not in self.adopted:   # (a warm pod was scheduled before its claim)
                if cond_true(p, "PodScheduled") or (p.get("spec") or {}).get("nodeName"):
                    self._stage("pod_scheduled", k, t)
                if pod_ready(p):
                    self._stage("pod_ready", k, t)
            if self.bare and k is not None and typ != "DELETED" and k not in self.ready_t and pod_ready(p):
                self.ready_t[k] = t
            self.changed.notify_all()

    def on_pvc(self, t, typ, o):
        with self.lock:
            self._track("pvcs", t, typ, o)
            if typ != "DELETED":
                k = self._key_of_pvc(o)
                self._stage("pvc_exists", k, t)
                if (o.get("status") or {}).get("phase") == "Bound":
                    if k is not None and k not in self.stage["pvc_bound"] and self.bound_q is not None:
                        self.bound_q.put(k)
                    self._stage("pvc_bound", k, t)
            self.changed.notify_all()

    def pod_feeder(self):
        """--floor-after-bound: the floor's pods are created only once their claim is Bound
        (what a controller could do for an Immediate storage class), by --clients threads."""
        index = {name: i for i, name in enumerate(self.names)}
        errors = []

        def work():
            c = self.api.conn()
            try:
                while True:
                    k = self.bound_q.get()
                    if k is None:
                        self.bound_q.put(None)
                        return
                    (_, (path, body)), _ = floor_objects(self.ns, k, index[k])
                    st, obj = self.api.call("POST", path, body, conn=c)
                    if st not in (201, 409):
                        errors.append(f"{k}: HTTP {st}")
            finally:
                c.close()

        ts = [threading.Thread(target=work) for _ in range(self.args.clients)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errors:
            log(f"floor: {len(errors)} pod creates failed, first: {errors[0]}")
            self.changed.notify_all()

    def on_sandbox(self, t, typ, sb):
        with self.lock:
            self._track("sandboxes", t, typ, sb)
            k = sb["metadata"]["name"]
            if self.claims:
                # a claim's Sandbox: cold, created for it; warm, adopted from the pool (the
                # claim becomes its controller owner)
                owner = next((o["name"] for o in sb["metadata"].get("ownerReferences") or []
                              if o.get("kind") == "SandboxClaim" and o.get("controller")), None)
                if owner and typ != "DELETED" and k not in self.sb2claim:
                    self.sb2claim[k] = owner
                    self._stage("sandbox_exists", owner, t)
                    if k in self.live["pods"] and owner not in self.pod_t:
                        self.pod_t[owner] = t   # a warm pod: exists for this claim from now on
                        self.adopted.add(owner)
                self.changed.notify_all()
                return
            if typ == "ADDED":
                self._stage("sandbox_exists", k, t)
            if typ != "DELETED" and k not in self.ready_t:
                if self.who == "ours":
                    ok = (sb.get("status") or {}).get("phase") == "Running" and cond_true(sb, "Ready")
                else:
                    ok = cond_true(sb, "Ready")
                if ok:
                    self.ready_t[k] = t
            self.changed.notify_all()

    def on_claim(self, t, typ, c):
        with self.lock:
            self._track("claims", t, typ, c)
            k = c["metadata"]["name"]
            if typ != "DELETED" and k not in self.ready_t and cond_true(c, "Ready"):
                self.ready_t[k] = t
            self.changed.notify_all()

    def wait(self, pred, timeout):
        deadline = time.monotonic() + timeout
        with self.lock:
            while not pred():
                broken = [w for w in self.watches if w.error]
                if broken:
                    raise RuntimeError(f"watch failed: {broken[0].error}")
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 0.5))
        return True

    # ---- controller process
    def start_controller(self, workdir):
        a = self.args
        logf = open(os.path.join(workdir, f"{self.ns}.log"), "w")
        via = None
        if a.trace:
            self.trace_log = os.path.join(workdir, f"{self.ns}.requests")
            self.tracer = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "reqtrace.py"),
                                            self.api.server, self.api.ca, self.trace_log],
                                           stdout=subprocess.PIPE, text=True)
            via = f"https://127.0.0.1:{self.tracer.stdout.readline().strip()}"
        who = "agent_sandbox" if self.peer else self.who
        kc = controller_kubeconfig(self.api, who, workdir, via)
        if self.who == "ours":
            cmd = [a.ours, "--kubeconfig", kc, "--namespace", self.ns, "--max-running", "0",
                   "--workers", str(a.workers)]
            if self.scn.get("log_level"):   # real-node-single: when it saw what, for the breakdown
                cmd += ["--log-level", self.scn["log_level"]]
            synced, times = "caches synced", 1
        else:
            cmd = [a.peer, "--kubeconfig", kc, "--leader-elect=false", "--metrics-bind-address", "0",
                   "--health-probe-bind-address", "0"]
            if a.peer_workers:
                cmd += ["--sandbox-concurrent-workers", str(a.peer_workers)]
            # its Sandbox controller; with --extensions also SandboxClaim, SandboxTemplate and
            # SandboxWarmPool: one "Starting workers" line each
            synced, times = "Starting workers", 1
            if self.claims:
                cmd.append("--extensions")
                times = 4
        self.result["controller_cmd"] = " ".join(cmd)
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        logf.close()
        path = os.path.join(workdir, f"{self.ns}.log")
        while time.monotonic() - t0 < 60:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.who} controller exited with {self.proc.returncode}; see {path}")
            with open(path, errors="replace") as f:
                if f.read().count(synced) >= times:
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"{self.who} controller: no {times}× '{synced}' in 60 s; see {path}")
        self.result["startup_ms"] = rnd((time.monotonic() - t0) * 1000)
        time.sleep(1.0)   # let it finish its initial sync before the baseline snapshot
        self.result["rss_after_start_kib"] = proc_status(self.proc.pid, "VmRSS")
        self.mem = MemSampler(self.proc.pid)
        self.mem.start()
        if a.perf:
            self.perf_data = os.path.join(workdir, f"{self.ns}.perf")
            self.perf = subprocess.Popen(["perf", "record", "-q", "-F", "499", "--call-graph", a.perf_callgraph,
                                          "-p", str(self.proc.pid),
                                          "-o", self.perf_data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)

    def snapshot(self):
        s = {"t": time.monotonic(), "wall": time.time(), "client": self.api.count}
        if self.proc:
            s["cpu"] = proc_cpu_s(self.proc.pid)
            s["req"] = flow_counts(self.api).get(FLOW_SCHEMA["agent_sandbox" if self.peer else self.who], 0.0)
        return s

    # ---- the run
    def paths(self):
        ns = self.ns
        if self.who == "ours":
            return f"/apis/{OURS_GROUP}/namespaces/{ns}/sandboxes"
        if self.claims:
            return f"/apis/{PEER_EXT_GROUP}/namespaces/{ns}/sandboxclaims"
        if self.peer:
            return f"/apis/{PEER_GROUP}/namespaces/{ns}/sandboxes"
        return None

    def execute(self, workdir):
        api, ns, n = self.api, self.ns, self.n
        log(f"{self.who}: N={n} in namespace {ns}")
        wait_nodes_ready(api, self.scn.get("real_node"))
        ensure_namespace(api, ns)
        cr_path = self.paths()
        watches = [Watch(api, f"/api/v1/namespaces/{ns}/pods", self.on_pod),
                   Watch(api, f"/api/v1/namespaces/{ns}/persistentvolumeclaims", self.on_pvc)]
        if self.claims:
            watches.append(Watch(api, f"/apis/{PEER_GROUP}/namespaces/{ns}/sandboxes", self.on_sandbox))
            watches.append(Watch(api, cr_path, self.on_claim))
        elif cr_path:
            watches.append(Watch(api, cr_path, self.on_sandbox))
        self.watches = watches
        for w in watches:
            w.start()
        for w in watches:
            w.established.wait(30)
            if w.error:
                raise w.error
        warm_class = None
        try:
            if not self.bare:
                self.start_controller(workdir)
            if self.who == "floor_bound":
                self.bind_floor_claims()
            elif self.ours_warm:
                warm_class = f"yao-bench-warm-{random.randrange(16**6):06x}"
                self.fill_ours_pool(warm_class)
            elif self.claims:
                self.fill_peer_pool()
            self._measure(cr_path, warm_class)
        finally:
            for w in watches:
                w.stop()
            if self.mem:
                self.mem.stop()
            if self.proc:
                if self.proc.poll() is None:
                    self.proc.terminate()
                    try:
                        self.proc.wait(15)
                    except subprocess.TimeoutExpired:
                        self.proc.kill()
                        self.proc.wait()
            if self.tracer:
                self.tracer.kill()
                self.tracer.wait()
            if self.perf:
                self.perf.wait(30)   # perf ends with the process it follows
                self.result["perf_data"] = self.perf_data
            api.call("DELETE", f"/api/v1/namespaces/{ns}")
            if warm_class:
                api.call("DELETE", f"/apis/{OURS_GROUP}/sandboxclasses/{warm_class}")
        return self.result

    def pool_size(self):
        return self.args.warm_pool_size or self.n

    def fill_ours_pool(self, cls):
        """Our warm workspaces: a SandboxClass with warmPool.size K; the pool exists for a
        namespace that has Sandboxes of the class, so one seed Sandbox goes first; then wait
        until K Bound claims that no Sandbox controls are waiting and no binder pod is left.
        pool_fill_s: seed created → K Bound, binders gone."""
        api, ns, k = self.api, self.ns, self.pool_size()
        api.must("POST", f"/apis/{OURS_GROUP}/sandboxclasses", ours_warm_class(cls, k))
        t0 = time.monotonic()
        api.must("POST", f"/apis/{OURS_GROUP}/namespaces/{ns}/sandboxes", ours_sandbox("seed", 99999, cls))
        deadline = t0 + max(120.0, 0.6 * k) + 60
        while True:
            items = api.must("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
            # spare: Bound, and no Sandbox controls it (a pool claim may carry a plain owner
            # reference to its SandboxClass, for the garbage collector)
            free = [p for p in items if (p.get("status") or {}).get("phase") == "Bound"
                    and not p["metadata"].get("deletionTimestamp")
                    and not any(o.get("kind") == "Sandbox" and o.get("controller")
                                for o in p["metadata"].get("ownerReferences") or [])]
            # ... and settled: the binder pods of a WaitForFirstConsumer pool gone (each is
            # deleted once its claim is Bound), as floor_bound's are before its burst
            binders = [p["metadata"]["name"] for p in api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
                       if p["metadata"]["name"].endswith("-binder")] if len(free) >= k else None
            if len(free) >= k and not binders:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"ours: warm pool has {len(free)}/{k} Bound unowned claims after "
                                   f"{time.monotonic() - t0:.0f} s" + (f", binders left {binders[:3]}" if binders else ""))
            time.sleep(0.5)
        self.result["pool_size"] = k
        self.result["pool_fill_s"] = rnd(time.monotonic() - t0, 3)
        log(f"ours: warm pool of {k} Bound claims in {self.result['pool_fill_s']} s")

    def bind_floor_claims(self):
        """floor_bound: the N claims made and bound before the burst, as a warm pool's are. On
        a WaitForFirstConsumer class (local-path) a claim binds only for a pod that uses it,
        so one short-lived binder pod per claim (the workspace mounted, `true`, never
        restarted) is scheduled, the claims wait for Bound, and the binders are deleted and
        gone before the burst. pool_fill_s: first claim created → all N Bound, binders gone."""
        api, ns, n = self.api, self.ns, self.n
        t0 = time.monotonic()
        binders = []
        for i, name in enumerate(self.names):
            objs, _ = floor_objects(ns, name, i)
            claim_path, claim = objs[0]
            api.must("POST", claim_path, claim)
            spec = pod_spec(f"{name}-bind", "bench", f"c{i:05d}", claim["metadata"]["name"])
            spec["restartPolicy"] = "Never"
            spec["containers"][0]["command"] = ["true"]
            api.must("POST", f"/api/v1/namespaces/{ns}/pods",
                     {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-bind"}, "spec": spec})
            binders.append(f"{name}-bind")
        deadline = t0 + max(120.0, 0.6 * n) + 60
        while True:
            items = api.must("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
            bound = [p for p in items if (p.get("status") or {}).get("phase") == "Bound"]
            if len(bound) >= n:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"floor_bound: {len(bound)}/{n} claims Bound after {time.monotonic() - t0:.0f} s")
            time.sleep(0.5)
        for b in binders:
            st, obj = api.call("DELETE", f"/api/v1/namespaces/{ns}/pods/{b}?gracePeriodSeconds=0")
            if st not in (200, 202, 404):
                raise RuntimeError(f"floor_bound: deleting binder {b}: HTTP {st}: {str(obj)[:200]}")
        while True:
            left = [p["metadata"]["name"] for p in api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]]
            if not left:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"floor_bound: binder pods {left[:3]} still there after {time.monotonic() - t0:.0f} s")
            time.sleep(0.2)
        self.result["pool_size"] = n
        self.result["pool_fill_s"] = rnd(time.monotonic() - t0, 3)
        log(f"floor_bound: {n} claims Bound, binders gone, in {self.result['pool_fill_s']} s")

    def fill_peer_pool(self):
        """The peer's warm pool: SandboxTemplate + SandboxWarmPool of K; wait until
        status.readyReplicas ≥ K. pool_fill_s: pool created → K Ready."""
        api, ns, k = self.api, self.ns, self.pool_size()
        api.must("POST", f"/apis/{PEER_EXT_GROUP}/namespaces/{ns}/sandboxtemplates",
                 peer_template("bench", bool(self.scn.get("template_workspace"))))
        t0 = time.monotonic()
        api.must("POST", f"/apis/{PEER_EXT_GROUP}/namespaces/{ns}/sandboxwarmpools", peer_warm_pool("bench", "bench", k))
        deadline = t0 + max(120.0, 0.6 * k) + 60
        while True:
            pool = api.must("GET", f"/apis/{PEER_EXT_GROUP}/namespaces/{ns}/sandboxwarmpools/bench")
            ready = (pool.get("status") or {}).get("readyReplicas") or 0
            if ready >= k:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"agent-sandbox: warm pool has {ready}/{k} ready after {time.monotonic() - t0:.0f} s")
            time.sleep(0.5)
        self.result["pool_size"] = k
        self.result["pool_fill_s"] = rnd(time.monotonic() - t0, 3)
        log(f"{self.who}: warm pool of {k} Ready sandboxes in {self.result['pool_fill_s']} s")

    def profile(self):
        """Per sandbox, create → each milestone (p50/p99), and the intervals between
        milestones (INTERVALS), from watch event times."""
        src = {"pod_exists": self.pod_t, "sandbox_ready": self.ready_t, **self.stage}
        prof = {}
        for st in STAGES:
            lat = [(src[st][k] - self.created[k]) * 1000 for k in self.names if k in src[st]]
            prof[st] = {"p50_ms": rnd(pct(lat, 50)), "p99_ms": rnd(pct(lat, 99)), "count": len(lat)}
        iv = {}
        for label, a, b in INTERVALS:
            lat = [(src[b][k] - (self.created[k] if a is None else src[a][k])) * 1000 for k in self.names
                   if k in src[b] and (a is None or k in src[a])]
            iv[label] = {"p50_ms": rnd(pct(lat, 50)), "p99_ms": rnd(pct(lat, 99)), "count": len(lat)}
        return prof, iv

    def _measure(self, cr_path, warm_class=None):
        api, ns, n, a, r = self.api, self.ns, self.n, self.args, self.result
        s0 = self.snapshot()

        # ---- create burst
        def create(c, item):
            i, name = item
            if self.bare:
                objs, _ = floor_objects(ns, name, i)
                if self.who == "floor_bound":
                    objs = objs[1:]     # the claim is there and Bound (bind_floor_claims)
                with self.lock:
                    self.created[name] = time.monotonic()
                if a.floor_after_bound and self.who == "floor":
                    objs = objs[:1]     # the pod follows once the claim is Bound (pod_feeder)
                for path, body in objs:
                    st, obj = api.call("POST", path, body, conn=c)
                    if st not in (201, 409):   # 409: a retried request had gone through
                        raise RuntimeError(f"HTTP {st}: {str(obj)[:200]}")
            else:
                if self.who == "ours":
                    body = ours_sandbox(name, i, warm_class)
                elif self.claims:
                    body = peer_claim(name, "bench", self.claim_workspace)
                else:
                    body = peer_sandbox(name, i)
                with self.lock:
                    self.created[name] = time.monotonic()
                st, obj = api.call("POST", cr_path, body, conn=c)
                if st not in (201, 409):
                    raise RuntimeError(f"HTTP {st}: {str(obj)[:200]}")

        feeder = None
        if self.who == "floor" and a.floor_after_bound:
            feeder = threading.Thread(target=self.pod_feeder, daemon=True)
            feeder.start()
        t_burst = time.monotonic()
        errs = burst(api, list(enumerate(self.names)), create, a.clients)
        t_sent = time.monotonic()
        if errs:
            raise RuntimeError(f"{len(errs)} creates failed, first: {errs[0]}")
        all_ready = self.wait(lambda: all(k in self.ready_t for k in self.names), self.timeout)
        if feeder:
            self.bound_q.put(None)
            feeder.join()
        s_ready = self.snapshot()
        with self.lock:
            pod_lat = [(self.pod_t[k] - self.created[k]) * 1000 for k in self.names if k in self.pod_t]
            ready_lat = [(self.ready_t[k] - self.created[k]) * 1000 for k in self.names if k in self.ready_t]
            last_ready = max(self.ready_t[k] for k in self.names if k in self.ready_t) if ready_lat else None
            r["profile"], r["stages"] = self.profile()
            r["pods_per_node"] = {nd: list(self.pod_nodes.values()).count(nd) for nd in sorted(set(self.pod_nodes.values()))}
        r.update({
            "n": n, "namespace": ns, "create_burst_s": rnd(t_sent - t_burst, 3),
            "ready_count": len(ready_lat), "pod_count": len(pod_lat),
            "pod_p50_ms": rnd(pct(pod_lat, 50)), "pod_p90_ms": rnd(pct(pod_lat, 90)), "pod_p99_ms": rnd(pct(pod_lat, 99)),
            "ready_p50_ms": rnd(pct(ready_lat, 50)), "ready_p90_ms": rnd(pct(ready_lat, 90)),
            "ready_p99_ms": rnd(pct(ready_lat, 99)),
            "all_ready_s": rnd(last_ready - t_burst, 3) if all_ready else None,
        })
        if not all_ready:
            log(f"{self.who}: only {len(ready_lat)}/{n} Ready after {self.timeout}s")
        else:
            log(f"{self.who}: all {n} Ready in {r['all_ready_s']} s (ready p50 {r['ready_p50_ms']} ms, "
                f"p99 {r['ready_p99_ms']} ms)")

        # ---- idle with N present
        time.sleep(2.0)
        s_idle0 = self.snapshot()
        time.sleep(a.idle)
        s_idle1 = self.snapshot()
        if self.proc:
            r["idle_cpu_pct"] = rnd((s_idle1["cpu"] - s_idle0["cpu"]) / (s_idle1["t"] - s_idle0["t"]) * 100, 2)
            r["idle_requests"] = s_idle1["req"] - s_idle0["req"]
            rest = self.mem.sample() or {}
            r["rss_rest_kib"], r["pss_rest_kib"], r["uss_rest_kib"] = rest.get("rss"), rest.get("pss"), rest.get("uss")
        else:
            r["idle_cpu_pct"] = None

        # ---- delete burst
        def delete(c, name):
            if self.bare:
                _, paths = floor_objects(ns, name, 0)
            else:
                paths = [f"{cr_path}/{name}"]
            for p in paths:
                st, obj = api.call("DELETE", p, conn=c)
                if st not in (200, 202, 404):
                    raise RuntimeError(f"HTTP {st}: {str(obj)[:200]}")

        t_del = time.monotonic()
        errs = burst(api, self.names + (["seed"] if warm_class else []), delete, a.clients)
        if errs:
            raise RuntimeError(f"{len(errs)} deletes failed, first: {errs[0]}")
        expect_sb = n if cr_path else 0

        def gone():
            if self.claims:
                # the claims, their Sandboxes and those Sandboxes' pods and claims (the pool
                # refills with new ones meanwhile: those are not the run's)
                mine = set(self.sb2claim)
                return (not self.live["claims"] and self.seen["claims"] >= n
                        and not (mine & self.live["sandboxes"]) and not (mine & self.live["pods"])
                        and not ({f"workspace-{s}" for s in mine} & self.live["pvcs"]))
            if self.ours_warm:   # the pool's spare claims stay
                return (not self.live["pods"] and not self.live["sandboxes"]
                        and self.seen["pods"] >= n and self.seen["sandboxes"] >= n)
            return (not self.live["pods"] and not self.live["pvcs"] and not self.live["sandboxes"]
                    and self.seen["pods"] >= n and self.seen["pvcs"] >= n and self.seen["sandboxes"] >= expect_sb)

        all_gone = self.wait(gone, self.timeout)
        s_end = self.snapshot()
        with self.lock:
            r["all_gone_s"] = rnd(self.last_gone - t_del, 3) if all_gone else None
            r["left_over"] = {k: len(v) for k, v in self.live.items()} if not self.claims and not self.ours_warm else \
                {"pods": 0, "pvcs": 0, "sandboxes": 0} if all_gone else {k: len(v) for k, v in self.live.items()}
        if not all_gone:
            log(f"{self.who}: not all gone after {self.timeout}s: {r['left_over']}")
        else:
            log(f"{self.who}: all gone in {r['all_gone_s']} s")

        # ---- controller totals (the idle window is reported separately, not included)
        busy = (s_end["t"] - s0["t"]) - (s_idle1["t"] - s_idle0["t"])
        r["client_requests_per_sandbox"] = rnd((s_end["client"] - s0["client"]) / n, 2)
        if self.proc:
            r["cpu_s"] = rnd((s_end["cpu"] - s0["cpu"]) - (s_idle1["cpu"] - s_idle0["cpu"]), 2)
            reqs = (s_end["req"] - s0["req"]) - (s_idle1["req"] - s_idle0["req"])
            r["requests"] = int(reqs)
            r["requests_per_sandbox"] = rnd(reqs / n, 2)
            r["rss_peak_kib"] = proc_status(self.proc.pid, "VmHWM")
            self.mem.sample()
            r["pss_peak_kib"], r["uss_peak_kib"] = self.mem.peak["pss"], self.mem.peak["uss"]
            # what the resident set is made of at the end: private heap vs mapped files
            # (binary and shared libraries, whose pages are shared with other processes)
            r["rss_anon_kib_end"] = proc_status(self.proc.pid, "RssAnon")
            r["rss_file_kib_end"] = proc_status(self.proc.pid, "RssFile")
            r["busy_window_s"] = rnd(busy, 2)
            r["create_phase_cpu_s"] = rnd(s_ready["cpu"] - s0["cpu"], 2)      # burst → all Ready
            r["delete_phase_cpu_s"] = rnd(s_end["cpu"] - s_idle1["cpu"], 2)   # delete burst → all gone
            if self.tracer:
                time.sleep(0.5)
                r["traced_requests"] = trace_summary(self.trace_log, [(s0["wall"], s_idle0["wall"]),
                                                                      (s_idle1["wall"], s_end["wall"])], n)
        else:
            r.update({"cpu_s": None, "requests_per_sandbox": None, "rss_peak_kib": None,
                      "pss_peak_kib": None, "uss_peak_kib": None})


# --------------------------------------------------------------------------------------------
# Exec: our client against kubectl exec, same pod, same path
# --------------------------------------------------------------------------------------------
def timed_run(cmd, count_stdout=False, timeout=300):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    total = 0
    if count_stdout:
        while True:
            b = p.stdout.read1(1 << 20)
            if not b:
                break
            total += len(b)
    else:
        p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)       # the client's own CPU time comes with it
    p.returncode = rc = os.waitstatus_to_exitcode(status)
    timed_run.cpu = ru.ru_utime + ru.ru_stime
    return time.monotonic() - t0, rc, total, err.decode(errors="replace")


def exec_bench(args, api, workdir):
    """Our exec client(s) and kubectl exec, alternating, against the same pod (a Sandbox of
    ours in yao-bench, which kwok's ClusterExec serves), same API server, same admin
    kubeconfig. Each invocation is a fresh process, timed from spawn to exit; stdout is read
    through a pipe and counted. "ours" is the yao-sandbox CLI (what users run; it also reads
    the Sandbox and touches last-used-at on each exec) when built, else exec_probe (the bare
    kube/exec.c transport); when both exist the probe is measured too."""
    res = {"client": None, "status": "not run"}
    clients = []
    if args.cli and os.access(args.cli, os.X_OK):
        clients.append("yao-sandbox exec")
    if args.exec_probe and os.access(args.exec_probe, os.X_OK):
        clients.append("exec_probe")
    if not clients:
        res["status"] = ("skipped: neither the yao-sandbox CLI nor exec_probe is built "
                         f"(looked for {args.cli} and {args.exec_probe})")
        log("exec: " + res["status"])
        return res
    res["client"] = clients[0]
    ns = SA_NS   # in kwok's exec allow-list
    ensure_namespace(api, ns)
    run = Run(args, api, "ours", 1, "exec")
    run.ns = ns
    path = f"/apis/{OURS_GROUP}/namespaces/{ns}/sandboxes"
    name = "bench-exec"
    api.call("DELETE", f"{path}/{name}")
    try:
        run.start_controller(workdir)
        api.must("POST", path, ours_sandbox(name, 0), ok=(201, 409))
        pod = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            sb = api.must("GET", f"{path}/{name}")
            if (sb.get("status") or {}).get("phase") == "Running":
                pod = sb["status"]["podName"]
                break
            time.sleep(0.2)
        if not pod:
            raise RuntimeError("exec sandbox did not become Running in 60 s")
        kc = args.kubeconfig
        bases = {"kubectl": ["kubectl", "--kubeconfig", kc, "exec", "-n", ns, pod, "-c", "sandbox", "--"],
                 "yao-sandbox exec": [args.cli, "--kubeconfig", kc, "-n", ns, "exec", name, "--"],
                 "exec_probe": [args.exec_probe, "--kubeconfig", kc, "-n", ns, pod, "--"]}
        order = ["kubectl"] + clients
        res.update({"pod": f"{ns}/{pod}", "commands": {c: " ".join(bases[c]) + " CMD" for c in order}})
        lat = {c: [] for c in order}
        thr = {c: [] for c in order}
        cpu = {c: [] for c in order}
        for i in range(args.exec_reps):
            for c in (order if i % 2 == 0 else order[::-1]):
                dt, rc, _, err = timed_run(bases[c] + ["true"])
                if rc != 0:
                    raise RuntimeError(f"exec true via {c}: exit {rc}: {err.strip()[:300]}")
                lat[c].append(dt * 1000)
        nbytes = args.exec_bytes
        for i in range(args.exec_tput_reps):
            for c in (order if i % 2 == 0 else order[::-1]):
                dt, rc, total, err = timed_run(bases[c] + ["head", "-c", str(nbytes), "/dev/zero"], count_stdout=True)
                if rc != 0 or total != nbytes:
                    raise RuntimeError(f"exec head via {c}: exit {rc}, {total}/{nbytes} bytes: {err.strip()[:300]}")
                thr[c].append(total / dt / 1e6)
                cpu[c].append(timed_run.cpu)
        per = {c: {"true_p50_ms": rnd(statistics.median(lat[c])), "true_p90_ms": rnd(pct(lat[c], 90)),
                   "stdout_MBps": rnd(statistics.median(thr[c])), "stdout_MBps_all": [rnd(x) for x in thr[c]],
                   "stdout_client_cpu_s": rnd(statistics.median(cpu[c]), 2)}
               for c in order}
        o, k = per[clients[0]], per["kubectl"]
        res.update({
            "status": "ok", "per_client": per, "stdout_bytes": nbytes,
            "reps_true": args.exec_reps, "reps_stdout": args.exec_tput_reps,
            "true_p50_ms_ours": o["true_p50_ms"], "true_p50_ms_kubectl": k["true_p50_ms"],
            "true_p90_ms_ours": o["true_p90_ms"], "true_p90_ms_kubectl": k["true_p90_ms"],
            "stdout_MBps_ours": o["stdout_MBps"], "stdout_MBps_kubectl": k["stdout_MBps"],
            "throughput_ratio": rnd(o["stdout_MBps"] / k["stdout_MBps"], 2),
            "latency_ratio": rnd(o["true_p50_ms"] / k["true_p50_ms"], 2),
        })
        for c in order:
            log(f"exec {c}: true p50 {per[c]['true_p50_ms']} ms, {nbytes / 1e6:g} MB stdout "
                f"{per[c]['stdout_MBps']} MB/s")
    except Exception as e:  # noqa: BLE001 — the exec part is reported, not fatal
        res["status"] = f"failed: {e}"
        log("exec: " + res["status"])
    finally:
        api.call("DELETE", f"{path}/{name}")
        time.sleep(1)
        if run.proc and run.proc.poll() is None:
            run.proc.terminate()
            run.proc.wait(15)
        if run.tracer:
            run.tracer.kill()
            run.tracer.wait()
    return res


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------
def median_of(runs):
    out = {}
    keys = []
    for r in runs:
        for k, v in r.items():
            if k not in keys and isinstance(v, (int, float)) and not isinstance(v, bool):
                keys.append(k)
    for k in keys:
        vals = [r[k] for r in runs if isinstance(r.get(k), (int, float))]
        if len(vals) == len(runs):
            out[k] = rnd(statistics.median(vals), 3 if k.endswith("_s") else 2)
        else:
            out[k] = None   # some round did not produce it (e.g. not all Ready): no median
    for k in KEYS:
        out.setdefault(k, None)
    return out


def spread_of(runs):
    sp = {}
    for k in KEYS:
        vals = [r.get(k) for r in runs if isinstance(r.get(k), (int, float))]
        if vals:
            sp[k] = [min(vals), max(vals)]
    return sp


# The scenarios (docs/benchmarks.md): name -> storage class, default N list, and what is special.
SCENARIOS = {
    "immediate": {"letter": "a", "storage_class": "yao-test", "n": [100, 1000],
                  "about": "Immediate class, instant provisioning (kwok nodes)"},
    "wffc": {"letter": "b", "storage_class": "yao-test-wffc", "n": [100],
             "about": "WaitForFirstConsumer class (kwok nodes)"},
    "slow-provisioning": {"letter": "c", "storage_class": "yao-test-slow", "n": [100],
                          "about": "Immediate class whose volumes take ≥ 2 s each to provision (kwok nodes)"},
    "real-node": {"letter": "d", "storage_class": "yao-test", "n": [20], "real_node": True, "exec": True,
                  "about": "real containers on the real node (kubelet + containerd), and exec there"},
    "warm-pool": {"letter": "e", "storage_class": "yao-test-slow", "n": [100], "warm": True,
                  "about": "warm pools on the slow class: ours (warm workspaces) vs the peer's "
                           "SandboxWarmPool + SandboxClaim with and without a workspace"},
    "real-node-single": {"letter": "g", "storage_class": "local-path", "n": [5], "real_node": True, "single": True,
                         "n_arg": "single_k", "cpu": "500m", "cpu_request": "150m", "memory": "256Mi",
                         "about": "single starts on the real node, one at a time, each beside the floor: create, "
                                  "wake (idle-stopped, touched), resume (spec.paused); K repetitions"},
    "real-node-local-path": {"letter": "h", "storage_class": "local-path", "n": [10], "real_node": True, "warm": True,
                             "template_workspace": True, "n_arg": "local_path_n", "floor_bound": True,
                             "about": "a new chat on local-path (WaitForFirstConsumer) on the real node: the floor, "
                                      "ours with a warm pool, the peer's SandboxWarmPool whose template has a "
                                      "volumeClaimTemplate on local-path"},
}
# measured elsewhere (bench/scale.py, bench/results/scale.json), folded in by report.py
EXTERNAL_SCENARIOS = {"scale-10k": {"letter": "f", "about": "N = 10,000 on kwok (bench/scale.py)"}}
REAL_NODE_IMAGE = "yao-sandbox/sandbox:0.1.0"   # in the plane's registry (tests/cluster/node/images)
# the real node's sandboxes: 20 of them fit the 2-CPU node (scenarios d, h); g names a size an
# agent's sandbox has (a 50m limit throttles even an exec): a 500m limit, 150m requested, so its
# 2 K = 10 pods of the floor and ours that stand at once fit the node
REAL_NODE_CPU, REAL_NODE_MEMORY = "50m", "64Mi"


def parse_scenarios(spec):
    names = []
    for part in (spec or "immediate").split(","):
        part = part.strip()
        if not part:
            continue
        if part == "all":
            names += [k for k in SCENARIOS if k not in names]
            continue
        by_letter = {v["letter"]: k for k, v in SCENARIOS.items()}
        name = by_letter.get(part, part)
        if name in EXTERNAL_SCENARIOS:
            continue   # bench/scale.py measures it; report.py folds its file in
        if name not in SCENARIOS:
            raise SystemExit(f"unknown scenario {part!r}: one of {', '.join(SCENARIOS)} (or their letters, all)")
        if name not in names:
            names.append(name)
    return names


def real_node_image(kubeconfig):
    """The sandbox image as the real node pulls it: from the plane's registry
    (tests/cluster/registry writes its address next to the plane's kubeconfig)."""
    plane = os.path.dirname(os.path.abspath(kubeconfig))
    with open(os.path.join(plane, "registry", "plane", "address")) as f:
        return f"{f.read().strip()}/{REAL_NODE_IMAGE}"


def configure(args, scn):
    """Set the object shapes for a scenario (module globals used by the object builders)."""
    global STORAGE_CLASS, IMAGE, PULL_POLICY, CPU, CPU_REQUEST, MEMORY
    STORAGE_CLASS = args.storage_class or scn["storage_class"]
    if scn.get("real_node"):
        IMAGE, PULL_POLICY = real_node_image(args.kubeconfig), "IfNotPresent"
        CPU, MEMORY = scn.get("cpu", REAL_NODE_CPU), scn.get("memory", REAL_NODE_MEMORY)
        CPU_REQUEST = scn.get("cpu_request", CPU)
    else:
        IMAGE, PULL_POLICY, CPU, MEMORY = "yao-sandbox/sandbox:latest", None, "250m", "256Mi"
        CPU_REQUEST = CPU


def storage_class_exists(api, name):
    return api.call("GET", f"/apis/storage.k8s.io/v1/storageclasses/{name}")[0] == 200


def ours_has_warm_pool(api):
    """Our warm workspaces exist when the SandboxClass CRD has spec.workspace.warmPool."""
    st, crd = api.call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sandboxclasses.sandbox.yaoapps.com")
    if st != 200:
        return False
    for v in crd["spec"]["versions"]:
        ws = (((v.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties", {}).get("spec", {})
              .get("properties", {}).get("workspace", {}).get("properties", {}))
        if "warmPool" in ws:
            return True
    return False


class RealNodeOnly:
    """real-node scenario: every new pod lands on the real node — kwok nodes cordoned, the
    real node uncordoned (tests/cluster/up leaves it cordoned) — and back afterwards."""

    def __init__(self, api):
        self.api = api
        self.kwok = [nd["metadata"]["name"] for nd in api.must("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")["items"]]

    def _set(self, node, unschedulable):
        self.api.must("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": unschedulable}},
                      ctype="application/merge-patch+json")

    def __enter__(self):
        for nd in self.kwok:
            self._set(nd, True)
        self._set(REAL_NODE, False)
        return self

    def __exit__(self, *exc):
        self._set(REAL_NODE, True)
        for nd in self.kwok:
            self._set(nd, False)


def configs_of(scn):
    order = ["floor", "ours", "agent_sandbox"]
    if scn.get("floor_bound"):
        order.insert(1, "floor_bound")
    if scn.get("warm") and not scn.get("template_workspace"):
        order.append("agent_sandbox_warm")
    return order


def bench_n(args, api, n, workdir, scn, skip=None):
    """All configs of one scenario at one N, args.rounds rounds (order reversed every other
    round). skip: {config: reason} for configs that cannot run here."""
    skip = skip or {}
    order = configs_of(scn)
    runs = {k: [] for k in order}
    errors = {k: [] for k in order}
    only = set(args.only.split(",")) if args.only else set(order)
    for rnd_i in range(args.rounds):
        seq = order if rnd_i % 2 == 0 else list(reversed(order))
        for who in seq:
            if who not in only or who in skip:
                continue
            tag = f"{who.replace('_', '-')}-{n}-{rnd_i + 1}-{random.randrange(16**4):04x}"
            r = Run(args, api, who, n, tag, scn)
            try:
                if who.startswith("agent_sandbox"):
                    waited = gc_knows_peer_kind(api)
                    if scn.get("warm"):
                        waited += gc_knows_peer_kind(api, "SandboxClaim")
                    if waited > 1:
                        log(f"garbage collector knows the agent-sandbox kinds (waited {waited:.1f} s)")
                runs[who].append(r.execute(workdir))
            except Exception as e:  # noqa: BLE001 — recorded; the other configs still run
                log(f"{who}: run failed: {e}")
                errors[who].append(str(e))
            time.sleep(args.pause)
    out = {"n": n, "rounds": args.rounds}
    for who in order:
        out[who] = median_of(runs[who])
        if who in skip:
            out[who]["status"] = skip[who]
        elif errors[who]:
            out[who]["status"] = "failed: " + errors[who][0]
        elif runs[who]:
            out[who]["status"] = "ok"
        else:
            out[who]["status"] = "not run (--only)"
        if runs[who]:
            out[who]["spread"] = spread_of(runs[who])
            out[who]["runs"] = runs[who]
    return out


def fmt(v):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 10 else f"{v:.1f}".rstrip("0").rstrip(".")
    return str(v)


ROWS = [("pod_p50_ms", "create → pod exists p50 (ms)"), ("pod_p99_ms", "create → pod exists p99 (ms)"),
        ("ready_p50_ms", "create → Ready p50 (ms)"), ("ready_p90_ms", "create → Ready p90 (ms)"),
        ("ready_p99_ms", "create → Ready p99 (ms)"),
        ("all_ready_s", "all N Ready (s)"), ("all_gone_s", "all gone after delete (s)"),
        ("rss_peak_kib", "controller peak RSS (KiB)"), ("pss_peak_kib", "controller peak PSS (KiB)"),
        ("uss_peak_kib", "controller peak USS (KiB)"),
        ("rss_rest_kib", "controller RSS at rest, N present (KiB)"),
        ("pss_rest_kib", "controller PSS at rest (KiB)"), ("uss_rest_kib", "controller USS at rest (KiB)"),
        ("cpu_s", "controller CPU, create+delete (s)"),
        ("requests_per_sandbox", "controller API requests / sandbox"),
        ("idle_cpu_pct", "controller idle CPU with N present (%)")]


def table(res):
    pv = res.get("peer_version") or PEER_VERSION or "v0.4.6"   # documents without it predate v1.0.3
    warm = "agent_sandbox_warm" in res
    head = f"| N = {res['n']} (median of {res.get('rounds', 1)}) | floor (no controller) | yao-sandbox | agent-sandbox {pv}"
    head += " (claim + workspace) | agent-sandbox warm claim, no workspace |" if warm else " |"
    lines = [head + " ours / peer |", "|---|---|---|---|" + ("---|" if warm else "") + "---|"]
    for k, label in ROWS + ([("pool_fill_s", "warm pool of N filled in (s)")] if warm else []):
        f, o, p = res["floor"].get(k), res["ours"].get(k), res["agent_sandbox"].get(k)
        ratio = fmt(rnd(o / p, 2)) + "×" if isinstance(o, (int, float)) and isinstance(p, (int, float)) and p else "–"
        cells = [fmt(f), fmt(o), fmt(p)] + ([fmt(res["agent_sandbox_warm"].get(k))] if warm else [])
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


def exec_table(e):
    if e.get("status") != "ok":
        return f"exec: {e.get('status')}"
    mb = e["stdout_bytes"] / 1e6
    lines = [f"| exec, pod {e['pod']} | `true` p50 (ms) | `true` p90 (ms) | {mb:g} MB stdout (MB/s) "
             f"| client CPU for {mb:g} MB (s) |", "|---|---|---|---|---|"]
    for c, v in e["per_client"].items():
        lines.append(f"| {c} | {fmt(v['true_p50_ms'])} | {fmt(v['true_p90_ms'])} | {fmt(v['stdout_MBps'])} "
                     f"| {fmt(v.get('stdout_client_cpu_s'))} |")
    lines.append(f"| {e['client']} / kubectl | {fmt(e['latency_ratio'])}× | | {fmt(e['throughput_ratio'])}× | |")
    return "\n".join(lines)


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def targets(res, e):
    o, p, f = res["ours"], res["agent_sandbox"], res["floor"]
    checks = [("ready p99 ≤ 0.5× peer", ratio(o["ready_p99_ms"], p["ready_p99_ms"]), 0.5),
              ("all-ready ≤ 0.5× peer", ratio(o["all_ready_s"], p["all_ready_s"]), 0.5),
              ("peak RSS ≤ 0.2× peer", ratio(o["rss_peak_kib"], p["rss_peak_kib"]), 0.2),
              ("CPU s ≤ 0.5× peer", ratio(o["cpu_s"], p["cpu_s"]), 0.5),
              ("requests/sandbox ≤ peer", ratio(o["requests_per_sandbox"], p["requests_per_sandbox"]), 1.0),
              ("all-ready ≤ 1.15× floor", ratio(o["all_ready_s"], f["all_ready_s"]), 1.15)]
    out = []
    for name, r, lim in checks:
        out.append({"target": name, "ratio": rnd(r, 2), "met": None if r is None else r <= lim})
    if e.get("status") == "ok":
        out.append({"target": "exec throughput ≥ 1.0× kubectl", "ratio": e["throughput_ratio"],
                    "met": e["throughput_ratio"] >= 1.0})
    else:
        out.append({"target": "exec throughput ≥ 1.0× kubectl", "ratio": None, "met": None})
    return out


def single_table(sc):
    """real-node-single: per kind, the p50 (min – max) of each config, ours / floor, and where
    the time of ours and the floor goes (p50 of each phase, ms)."""
    import single
    lines = ["| single start, K = " + str(sc.get("k")) + " | floor p50 (min – max) ms | ours p50 (min – max) ms "
             "| agent-sandbox p50 ms | ours / floor (≤ 1.1) |", "|---|---|---|---|---|"]
    for kind in single.KINDS:
        kd = (sc.get("kinds") or {}).get(kind) or {}

        def cell(w):
            d = kd.get(w) or {}
            if d.get("ready_p50_ms") is None:
                return d.get("status", "–")
            return f"{fmt(d['ready_p50_ms'])} ({fmt(d.get('ready_min_ms'))} – {fmt(d.get('ready_max_ms'))})"
        r = kd.get("ratio")
        met = '' if kd.get('met') is None else ' ✓' if kd['met'] else ' ✗'
        if kind == "wake-warm":   # its target: against ours' cold wake
            v, fc = kd.get("vs_cold_wake"), kd.get("first_command_vs_cold")
            o = kd.get("ours") or {}
            lines.append(f"| {kind} (touch → Ready; the first command answered p50 {fmt(o.get('first_exec_p50_ms'))} ms, "
                         f"{fmt(fc) + '×' if fc is not None else '–'} the cold wake's Ready + first command; a later "
                         f"exec {fmt(o.get('exec_rt_p50_ms'))} ms) | {cell('floor')} | {cell('ours')} | – | "
                         f"{fmt(r) + '×' if r is not None else '–'}; {fmt(v) + '× cold wake (≤ 0.1)' if v is not None else '–'}{met} |")
            continue
        lines.append(f"| {kind} | {cell('floor')} | {cell('ours')} | {cell('agent_sandbox')} | "
                     f"{fmt(r) + '×' if r is not None else '–'}{met} |")
    phases = [p[0] for p in single.PHASES] + ["claim created", "node selected", "claim Bound", "kubelet saw it running",
                                               "kubelet's E2E (from the whole-second creationTimestamp)",
                                               "ours: pod created"]
    lines += ["", "| p50 (ms) of each phase | " + " | ".join(phases) + " |", "|---|" + "---|" * len(phases)]
    for kind in single.KINDS:
        for w in ("floor", "ours", "agent_sandbox"):
            b = (((sc.get("kinds") or {}).get(kind) or {}).get(w) or {}).get("breakdown")
            if not b or not (((sc.get("kinds") or {}).get(kind) or {}).get(w) or {}).get("count"):
                continue
            vals = [b.get(p) for p in [p[0] for p in single.PHASES]] + [b.get("claim_ms"), b.get("selected_node_ms"),
                                                                           b.get("bound_ms"), b.get("kubelet_running_ms"),
                                                                           b.get("kubelet_e2e_ms"),
                                                                           b.get("controller_pod_created_ms")]
            lines.append(f"| {kind}: {w.replace('_', '-')} | " + " | ".join(fmt(v) for v in vals) + " |")
    cr = (sc.get("kinds") or {}).get("create") or {}
    if cr.get("modes_s"):
        added = cr.get("ours_added_ms") or {}
        lines += ["", f"create, each start's Ready in whole seconds: floor {cr['modes_s'].get('floor')}, ours "
                  f"{cr['modes_s'].get('ours')}; what ours adds before its claim exists "
                  f"{fmt(added.get('claim_ms'))} ms, before its pod exists {fmt(added.get('pod_ms'))} ms (p50 against the floor's)"]
    return "\n".join(lines)


def scenario_targets(sc):
    """The round-2 targets of one scenario (issue 15, item 6; warm-pool: ready p50 ≤ 0.3× the
    peer's claim with a workspace)."""
    o, p, f = sc["ours"], sc["agent_sandbox"], sc["floor"]
    checks = [("ready p99 ≤ 0.5× peer", ratio(o.get("ready_p99_ms"), p.get("ready_p99_ms")), 0.5),
              ("all-ready ≤ 0.5× peer", ratio(o.get("all_ready_s"), p.get("all_ready_s")), 0.5),
              ("all-ready ≤ 1.15× floor", ratio(o.get("all_ready_s"), f.get("all_ready_s")), 1.15),
              ("requests/sandbox ≤ peer", ratio(o.get("requests_per_sandbox"), p.get("requests_per_sandbox")), 1.0)]
    if "agent_sandbox_warm" in sc:
        checks.insert(0, ("ready p50 ≤ 0.3× peer claim with workspace",
                          ratio(o.get("ready_p50_ms"), p.get("ready_p50_ms")), 0.3))
    if sc.get("scenario") == "real-node-local-path":   # issue 25, item 3 (the peer: its warm pool)
        checks[0:0] = [("ready p50 ≤ 0.3× floor", ratio(o.get("ready_p50_ms"), f.get("ready_p50_ms")), 0.3),
                       ("ready p50 ≤ peer warm pool", ratio(o.get("ready_p50_ms"), p.get("ready_p50_ms")), 1.0)]
        if "floor_bound" in sc:   # issue 36, item 3: against bare pods on claims bound before the burst
            fb = sc["floor_bound"]
            checks.insert(2, ("all-ready ≤ 1.1× floor on bound claims",
                              ratio(o.get("all_ready_s"), fb.get("all_ready_s")), 1.1))
    return [{"target": name, "ratio": rnd(r, 2), "met": None if r is None else r <= lim} for name, r, lim in checks]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--kubeconfig", required=True, help="admin kubeconfig (kubectl, exec)")
    ap.add_argument("--ours", required=True)
    ap.add_argument("--peer", required=True)
    ap.add_argument("--peer-crd", required=True)
    ap.add_argument("--peer-version", default="", help="the peer's version, for the tables (e.g. v1.0.3)")
    ap.add_argument("--exec-probe", default="")
    ap.add_argument("--cli", default="")
    ap.add_argument("--scenario", default="immediate",
                    help="comma-separated scenarios: " + ", ".join(f"{v['letter']}/{k}" for k, v in SCENARIOS.items())
                         + ", or all (scale-10k/f is bench/scale.py's)")
    ap.add_argument("-n", type=int, action="append",
                    help="sandboxes per run (repeatable); overrides every scenario's default N except real-node's")
    ap.add_argument("--real-node-n", type=int, default=20, help="N of the real-node scenario")
    ap.add_argument("--warm-pool-size", type=int, default=0, help="warm-pool scenario: pool size (default N)")
    ap.add_argument("--single-k", type=int, default=0, help="real-node-single: repetitions of each kind (default 5)")
    ap.add_argument("--local-path-n", type=int, default=0, help="N of real-node-local-path (default 10)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default="",
                    help="comma-separated subset of floor,floor_bound,ours,agent_sandbox,agent_sandbox_warm (diagnosis)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--workers", type=int, default=4, help="our controller's --workers")
    ap.add_argument("--peer-workers", type=int, default=0,
                    help="peer's --sandbox-concurrent-workers (0: its default, 100 in v1.0.3, 1 in v0.4.6)")
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--pause", type=float, default=2.0, help="seconds between runs")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds to wait for all Ready / all gone (default max(120, 0.6 N))")
    ap.add_argument("--exec", dest="do_exec", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--exec-only", action="store_true", help="only the exec part (prints it, writes nothing)")
    ap.add_argument("--exec-reps", type=int, default=20)
    ap.add_argument("--exec-tput-reps", type=int, default=3)
    ap.add_argument("--exec-bytes", type=int, default=100_000_000)
    ap.add_argument("--trace", action="store_true",
                    help="diagnosis: route each controller through bench/reqtrace.py and break its requests "
                         "down by verb and resource (changes the transport: not for the measured numbers)")
    ap.add_argument("--perf", action="store_true",
                    help="diagnosis: perf record each controller during its run (WORKDIR/<namespace>.perf)")
    ap.add_argument("--perf-callgraph", default="fp", help="perf --call-graph mode (fp, dwarf)")
    ap.add_argument("--floor-after-bound", action="store_true",
                    help="diagnosis: the floor creates each pod only once its claim is Bound")
    ap.add_argument("--storage-class", default=None,
                    help="StorageClass of every workspace claim, in place of each scenario's own")
    ap.add_argument("--merge", action=argparse.BooleanOptionalAction, default=True,
                    help="keep the scenarios of --out that this run does not measure (default)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--machine", default="{}")
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    global PEER_GROUP, PEER_VERSION
    PEER_GROUP = peer_api_version(args.peer_crd)
    PEER_VERSION = args.peer_version or os.path.basename(args.peer).rsplit("-", 1)[-1]
    with open(args.token_file) as f:
        api = Api(args.server, f.read().strip(), args.ca)
    os.makedirs(args.workdir, exist_ok=True)
    try:
        run_all(args, api)
    finally:
        remove_identities(api)


PEER_VERSION = ""


def run_scenario(args, api, name, workdir):
    scn = SCENARIOS[name]
    configure(args, scn)
    if scn.get("n_arg"):
        ns = [getattr(args, scn["n_arg"]) or scn["n"][0]]
    else:
        ns = sorted(set([args.real_node_n] if scn.get("real_node") else (args.n or scn["n"])))
    sc = {"scenario": name, "about": scn["about"], "peer_version": PEER_VERSION, "storage_class": STORAGE_CLASS,
          "image": IMAGE, "cpu": CPU, "cpu_request": CPU_REQUEST, "memory": MEMORY, "rounds": args.rounds,
          "n": max(ns)}
    skip_all = None
    if not storage_class_exists(api, STORAGE_CLASS):
        skip_all = f"skipped: StorageClass {STORAGE_CLASS} is not on this plane"
    elif scn.get("real_node"):
        st, node = api.call("GET", f"/api/v1/nodes/{REAL_NODE}")
        if st != 200 or not cond_true(node, "Ready"):
            skip_all = f"skipped: no Ready real node {REAL_NODE} (start the plane with tests/cluster/up --real-node)"
    if skip_all:
        log(f"scenario {name}: {skip_all}")
        sc["status"] = skip_all
        for who in configs_of(scn):
            sc[who] = dict(median_of([]), status=skip_all)
        sc["targets"] = scenario_targets(sc)
        return sc
    skip = {}
    if scn.get("warm") and not ours_has_warm_pool(api):
        skip["ours"] = ("not available: the SandboxClass CRD has no spec.workspace.warmPool "
                        "(warm workspaces are not in this build)")
        log(f"scenario {name}: ours {skip['ours']}")
    sc["status"] = "ok"
    log(f"scenario {name} ({scn['about']}): N = {', '.join(map(str, ns))}, class {STORAGE_CLASS}")
    t0 = time.monotonic()
    per_n = {}
    guard = RealNodeOnly(api) if scn.get("real_node") else None
    if guard:
        guard.__enter__()
    try:
        if scn.get("single"):
            import single   # bench/single.py (imports this module)
            only = set(args.only.split(",")) if args.only else {"floor", "ours", "agent_sandbox"}
            res = single.run(args, api, workdir, ns[0], with_peer="agent_sandbox" in only)
            sc.update(res)
            for who in configs_of(scn):
                k = res["kinds"]["create"].get(who) or {}
                sc[who] = dict(median_of([]), **{x: k.get(x) for x in ("ready_p50_ms", "status")})
            sc["n"] = ns[0]
            sc["duration_s"] = rnd(time.monotonic() - t0, 1)
            sc["targets"] = [{"target": f"{kind} ready p50 ≤ 1.1× floor", "ratio": res["kinds"][kind]["ratio"],
                              "met": res["kinds"][kind]["met"]} for kind in single.KINDS if kind != "wake-warm"]
            sc["targets"].append({"target": "wake-warm ready p50 ≤ 0.1× ours' cold wake",
                                  "ratio": res["kinds"]["wake-warm"].get("vs_cold_wake"),
                                  "met": res["kinds"]["wake-warm"]["met"]})
            print(f"scenario {name}:", flush=True)
            print(single_table(sc), flush=True)
            return sc
        for n in ns:
            per_n[n] = bench_n(args, api, n, workdir, scn, skip)
            print(f"scenario {name}:", flush=True)
            print(table({**per_n[n], "peer_version": PEER_VERSION}), flush=True)
            print(flush=True)
        if scn.get("exec"):
            sc["exec"] = exec_bench(args, api, workdir) if args.do_exec else {"status": "not run (--no-exec)"}
    finally:
        if guard:
            guard.__exit__(None, None, None)
    largest = per_n[max(ns)]
    for who in configs_of(scn):
        sc[who] = largest[who]
    if len(ns) > 1:
        sc["smaller_n"] = {str(k): {w: {kk: v[w].get(kk) for kk in KEYS} for w in configs_of(scn)}
                           for k, v in per_n.items() if k != max(ns)}
    sc["duration_s"] = rnd(time.monotonic() - t0, 1)
    sc["targets"] = scenario_targets(sc)
    return sc


def merge_results(path, doc, scenarios):
    """--merge (the default): the scenarios of an earlier run in `path` that this run did not
    measure are kept (each with its own date and command). The top-level keys are the default
    scenario's (immediate): when this run did not measure it but the earlier document did,
    they stay the earlier run's, and this run is listed under `merged`."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return doc
    if not isinstance(old.get("scenarios"), dict):
        return doc
    for name, sc in old["scenarios"].items():
        if name not in scenarios:
            sc.setdefault("date", old.get("date"))
            sc.setdefault("command", old.get("command"))
    merged_scenarios = {**old["scenarios"], **scenarios}
    if doc["scenario"] != "immediate" and old.get("scenario") == "immediate":
        out = dict(old)
        out["scenarios"] = merged_scenarios
        out["merged"] = [m for m in old.get("merged") or [] if set(m.get("scenarios", [])) - set(scenarios)] + [
            {"date": doc["date"], "command": doc["command"], "scenarios": list(scenarios), "machine": doc["machine"]}]
        return out
    doc["scenarios"] = merged_scenarios
    return doc


def run_all(args, api):
    if args.exec_only:
        configure(args, SCENARIOS["immediate"])
        e = exec_bench(args, api, args.workdir)
        print(exec_table(e))
        print(json.dumps(e, indent=1))
        return
    names = parse_scenarios(args.scenario)
    started = datetime.datetime.now(datetime.timezone.utc)
    crds = [args.peer_crd]
    if any(SCENARIOS[s].get("warm") for s in names):
        crds += peer_extension_crds(args.peer_crd)
    scenarios = {}
    with PeerCrd(api, crds, args.kubeconfig):
        for name in names:
            scenarios[name] = run_scenario(args, api, name, args.workdir)
    # the exec comparison on kwok (the real-node scenario has its own)
    kwok_scenarios = [s for s in names if not SCENARIOS[s].get("real_node")]
    if args.do_exec and kwok_scenarios:
        configure(args, SCENARIOS["immediate"])
        e = exec_bench(args, api, args.workdir)
    else:
        e = {"status": "not run (--no-exec)" if not args.do_exec else "not run (no kwok scenario)"}
    # top-level keys: the default scenario (immediate when it ran, else the first one)
    main_name = "immediate" if "immediate" in scenarios else names[0]
    m = scenarios[main_name]
    doc = {"n": m["n"], "rounds": args.rounds, "scenario": main_name, "peer_version": PEER_VERSION,
           "floor": m["floor"], "ours": m["ours"], "agent_sandbox": m["agent_sandbox"],
           "exec": e if not SCENARIOS[main_name].get("real_node") else m.get("exec", e),
           "smaller_n": m.get("smaller_n", {}),
           "scenarios": scenarios,
           "date": started.isoformat(timespec="seconds"), "machine": json.loads(args.machine),
           "command": args.command,
           "settings": {"clients": args.clients, "ours_workers": args.workers,
                        "peer_workers": args.peer_workers or "default", "idle_s": args.idle,
                        "image": m["image"], "cpu": m["cpu"], "memory": m["memory"],
                        "workspace": WORKSPACE, "storage_class": m["storage_class"]}}
    doc["targets"] = targets(m, doc["exec"])
    doc["machine"]["loadavg_at_end"] = open("/proc/loadavg").read().split()[:3]
    for sc in scenarios.values():   # each scenario says when and how it was measured
        sc.update(date=doc["date"], command=args.command)
    if args.merge:
        doc = merge_results(args.out, doc, scenarios)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    if e.get("status") == "ok" or doc["scenario"] in scenarios:   # (not a merged earlier run's)
        print(exec_table(doc["exec"]))
        print()
    for name, sc in scenarios.items():
        for t in sc["targets"]:
            mark = "–" if t["met"] is None else ("met" if t["met"] else "NOT met")
            print(f"{name}: target {t['target']}: {fmt(t['ratio'])}× {mark}")
    log(f"results in {args.out}; logs in {args.workdir}")


if __name__ == "__main__":
    main()
