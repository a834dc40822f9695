#!/usr/bin/env python3
"""tests/integration/bringup.py — create → Running of Sandboxes on one StorageClass.

Creates N persistent Sandboxes whose workspace uses CLASS, one after the other, and
measures for each the time from the create request to the first watch event showing
status.phase Running. Prints "class=… n=… median_ms=… p90_ms=… max_ms=…" and deletes them.

usage: bringup.py SERVER TOKEN CA NAMESPACE CLASS N [PREFIX]
"""
import json, ssl, sys, threading, time, urllib.error, urllib.parse, urllib.request

server, token, ca, ns, cls = sys.argv[1:6]
N = int(sys.argv[6])
prefix = sys.argv[7] if len(sys.argv) > 7 else "bringup"
ctx = ssl.create_default_context(cafile=ca)
BASE = "/apis/sandbox.yaoapps.com/v1alpha1/namespaces/%s/sandboxes" % ns


def call(method, path, body=None):
    req = urllib.request.Request(server + path, data=json.dumps(body).encode() if body is not None else None,
                                 method=method)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None


running = {}
ready = threading.Event()


def watch():
    _, lst = call("GET", BASE)
    q = urllib.parse.urlencode({"watch": "true", "resourceVersion": lst["metadata"]["resourceVersion"],
                                "timeoutSeconds": "600"})
    req = urllib.request.Request(server + BASE + "?" + q)
    req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, context=ctx, timeout=660) as r:
        ready.set()
        for line in r:
            ev = json.loads(line)
            o = ev.get("object", {})
            if o.get("status", {}).get("phase") == "Running":
                running.setdefault(o["metadata"]["name"], time.time())


threading.Thread(target=watch, daemon=True).start()
ready.wait(30)
took = []
for i in range(N):
    name = "%s-%02d" % (prefix, i)
    t0 = time.time()
    st, _ = call("POST", BASE, {"apiVersion": "sandbox.yaoapps.com/v1alpha1", "kind": "Sandbox",
                                "metadata": {"name": name},
                                "spec": {"userID": prefix, "chatID": "c%02d" % i, "lifecycle": "persistent",
                                         "workspace": {"size": "1Gi", "storageClassName": cls}}})
    if st not in (200, 201):
        print("create %s: HTTP %d" % (name, st))
        sys.exit(1)
    deadline = t0 + 30
    while name not in running and time.time() < deadline:
        time.sleep(0.005)
    if name not in running:
        print("%s not Running after 30 s" % name)
        sys.exit(1)
    took.append((running[name] - t0) * 1000)
for i in range(N):
    call("DELETE", BASE + "/%s-%02d" % (prefix, i))
took.sort()
print("class=%s n=%d median_ms=%d p90_ms=%d max_ms=%d" % (
    cls, N, took[len(took) // 2], took[min(len(took) - 1, int(len(took) * 0.9))], took[-1]))
