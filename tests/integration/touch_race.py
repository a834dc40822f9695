#!/usr/bin/env python3
"""tests/integration/touch_race.py — touches at the idle deadline must never be lost.

Creates N `session` Sandboxes with a short idleTimeout, waits until each is Running, and
touches each one (merge patch of sandbox.yaoapps.com/last-used-at) at its idle deadline
(status.startedAt + idleTimeout, the moment the controller acts) plus a random offset in
[-SPREAD, +SPREAD] ms, while a watch records when each Sandbox is deleted. A touch the API
server accepted (200) gives the Sandbox a fresh idle period, so its removal must not come
before touch + idleTimeout; a removal within that period is a lost touch. Then every
Sandbox must still be removed once it is idle again.

usage: touch_race.py SERVER TOKEN CA NAMESPACE N IDLE_SECONDS [SPREAD_MS]
Prints a summary; exit 0 when no accepted touch was lost and all were removed, else 1.
"""
import json, random, ssl, sys, threading, time, urllib.error, urllib.parse, urllib.request
from datetime import datetime, timezone

server, token, ca, ns = sys.argv[1:5]
N, IDLE = int(sys.argv[5]), float(sys.argv[6])
SPREAD = float(sys.argv[7]) / 1000 if len(sys.argv) > 7 else 0.05
ctx = ssl.create_default_context(cafile=ca)
BASE = "/apis/sandbox.yaoapps.com/v1alpha1/namespaces/%s/sandboxes" % ns
ANN = "sandbox.yaoapps.com/last-used-at"


def call(method, path, body=None, ctype="application/json", timeout=30):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None


def rfc3339(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (int(t * 1000) % 1000)


def parse_time(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


names = ["race-%03d" % i for i in range(N)]
wanted = set(names)
deleted = {}          # name -> local time its DELETED event arrived
started = {}          # name -> status.startedAt (s)
watch_ready = threading.Event()


def watch():
    status, lst = call("GET", BASE)
    rv = lst["metadata"]["resourceVersion"]
    watch_ready.set()
    while True:
        q = urllib.parse.urlencode({"watch": "true", "resourceVersion": rv, "timeoutSeconds": "600"})
        req = urllib.request.Request(server + BASE + "?" + q)
        req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=660) as r:
                for line in r:
                    ev = json.loads(line)
                    if ev["type"] == "ERROR":
                        return
                    rv = ev["object"]["metadata"]["resourceVersion"]
                    name = ev["object"]["metadata"]["name"]
                    if name not in wanted:
                        continue
                    if ev["type"] == "DELETED":
                        deleted.setdefault(name, time.time())
                    s = ev["object"].get("status", {}).get("startedAt")
                    if s and name not in started:
                        started[name] = parse_time(s)
        except Exception:
            time.sleep(0.2)


threading.Thread(target=watch, daemon=True).start()
watch_ready.wait(30)
idle_str = "%ds" % IDLE if IDLE == int(IDLE) else "%dms" % (IDLE * 1000)
for n in names:
    st, _ = call("POST", BASE, {"apiVersion": "sandbox.yaoapps.com/v1alpha1", "kind": "Sandbox",
                                "metadata": {"name": n},
                                "spec": {"userID": "race", "chatID": n, "lifecycle": "session",
                                         "idleTimeout": idle_str}})
    if st not in (200, 201):
        print("create %s: HTTP %d" % (n, st))
        sys.exit(1)

# Wait for status.startedAt on all of them (the idle clock starts at the first Ready),
# as the watch reports it.
deadline = time.time() + 120
while len(started) < N and time.time() < deadline:
    time.sleep(0.05)
if len(started) < N:
    print("only %d of %d sandboxes started" % (len(started), N))
    sys.exit(1)

results = {}   # name -> (http status, time sent, time answered)


def toucher(name, at):
    time.sleep(max(0.0, at - time.time()))
    t0 = time.time()
    st, _ = call("PATCH", BASE + "/" + name, {"metadata": {"annotations": {ANN: rfc3339(t0)}}},
                 ctype="application/merge-patch+json")
    results[name] = (st, t0, time.time())


threads = []
for n in names:
    at = started[n] + IDLE + random.uniform(-SPREAD, SPREAD)
    th = threading.Thread(target=toucher, args=(n, at))
    th.start()
    threads.append(th)
for th in threads:
    th.join()

# Every Sandbox is idle again IDLE after its touch; wait for all removals.
end = max(r[2] for r in results.values()) + IDLE + 20
while time.time() < end and len(deleted) < N:
    time.sleep(0.1)

accepted = [n for n in names if results[n][0] == 200]
lost = []
for n in accepted:
    st, t0, t1 = results[n]
    # A legitimate removal comes no sooner than the touch's own time + idleTimeout (the
    # controller's idle clock reads the annotation; 0.5 s for watch delivery is plenty).
    if n in deleted and deleted[n] < t0 + IDLE - 0.5:
        lost.append("%s (touch answered at +%.3f s, removed %.3f s later)" % (
            n, t1 - (started[n] + IDLE), deleted[n] - t1))
refused = [n for n in names if results[n][0] != 200]
# And nothing is removed before its idle deadline.
early = [n for n in names if n in deleted and deleted[n] < started[n] + IDLE]
print("sandboxes=%d accepted_touches=%d refused_touches=%d (statuses %s) lost_touches=%d removed=%d removed_early=%d" % (
    N, len(accepted), len(refused), sorted(set(results[n][0] for n in refused)), len(lost), len(deleted), len(early)))
for l in lost:
    print("  lost: " + l)
sys.exit(0 if not lost and not early and len(deleted) == N and accepted else 1)
