#!/usr/bin/env python3
"""tests/cluster/provisioner.py — a test-only dynamic volume provisioner for the local plane.

Watches PersistentVolumeClaims of its StorageClasses and creates, for each one, a
hostPath PersistentVolume pre-bound to it (claimRef), so kube-controller-manager's binder
binds the pair exactly as it does behind a real CSI provisioner, and kube-scheduler then
schedules the pods that mount it. Deletes Released volumes it provisioned (reclaim policy
Delete). Talks to the API server over HTTPS with the admin token; standard library only.

It serves every StorageClass whose provisioner is yao-sandbox.test/hostpath (tests/cluster/up
makes three), by its volumeBindingMode, as on real clusters:
  Immediate             provisioned as soon as the claim exists (yao-test, yao-test-slow).
  WaitForFirstConsumer  provisioned only once the scheduler picked a node for the first pod
                        using the claim and wrote it into the claim's
                        volume.kubernetes.io/selected-node annotation; the volume is pinned
                        to that node (nodeAffinity), like a local volume (yao-test-wffc).
The class parameter yao.test/provision-delay-ms (yao-test-slow: "2000") makes each claim of
the class wait that long, from when the provisioner first saw it, before its volume is
created, like a cloud CSI driver: claims wait concurrently (a timer heap and a few workers,
not a sleep in the watch loop), so 100 claims created together are all bound ~2 s later.

A claim with spec.dataSource {kind: PersistentVolumeClaim} is a clone (CSI volume
cloning): its directory is filled with a copy of the source claim's volume (modes,
ownership, times and symbolic links kept) before its volume is created, for both classes.
A source that is not bound yet is tried again every few seconds, as external-provisioner
retries; the copy goes to a temporary directory renamed into place, so a crash mid-copy
leaves no half-filled volume.
"""
import heapq, json, os, queue, shutil, ssl, sys, threading, time, urllib.error, urllib.parse, urllib.request

PROVISIONER = "yao-sandbox.test/hostpath"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
DELAY_PARAM = "yao.test/provision-delay-ms"
DELAY_WORKERS = 8

server, token, ca_file, root = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=ca_file)


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def call(method, path, body=None, timeout=30):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    return urllib.request.urlopen(req, context=ctx, timeout=timeout)


def get(path):
    with call("GET", path) as r:
        return json.load(r)


def source_dir(pvc):
    """The hostPath directory of the claim pvc is cloned from; None when it has no PVC
    dataSource; raises LookupError when the source is not ready (not bound, not ours)."""
    ds = pvc.get("spec", {}).get("dataSource") or {}
    if ds.get("kind") != "PersistentVolumeClaim" or ds.get("apiGroup"):
        return None
    ns = pvc["metadata"]["namespace"]
    try:
        src = get("/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (ns, urllib.parse.quote(ds["name"])))
        vol = src.get("spec", {}).get("volumeName")
        if not vol or src.get("status", {}).get("phase") != "Bound":
            raise LookupError("source claim %s/%s is not bound" % (ns, ds["name"]))
        pv = get("/api/v1/persistentvolumes/" + urllib.parse.quote(vol))
    except urllib.error.HTTPError as e:
        raise LookupError("source claim %s/%s: HTTP %d" % (ns, ds["name"], e.code))
    path = pv.get("spec", {}).get("hostPath", {}).get("path", "")
    if not path.startswith(root + os.sep) or not os.path.isdir(path):
        raise LookupError("source volume %s is not one of ours" % vol)
    return path


def copy_tree(src, dst):
    """Copy the contents of src into the new directory dst: modes, times, ownership and
    symbolic links (not followed) as they are."""
    shutil.copytree(src, dst, symlinks=True, copy_function=shutil.copy2)
    for d, dirs, files in os.walk(src):
        for n in [None] + dirs + files:
            s = os.path.join(d, n) if n else d
            st = os.lstat(s)
            os.lchown(os.path.join(dst, os.path.relpath(s, src)), st.st_uid, st.st_gid)


def retry_later(pvc):
    """Look at the claim again (fresh) in a few seconds."""
    def again():
        meta = pvc["metadata"]
        try:
            provision(get("/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (meta["namespace"], meta["name"])))
        except Exception as e:  # gone, or the API server away: its next event brings it back
            log("retry %s/%s: %s" % (meta["namespace"], meta["name"], e))
    t = threading.Timer(3, again)
    t.daemon = True
    t.start()


# StorageClasses: name -> (volumeBindingMode, delay in seconds) for this provisioner's, kept by
# their own watch; a claim of a class not seen yet asks for it once (the watches race at start).
# A class of another provisioner is remembered as None: without that, every event of every
# claim of it (a static class's, 10,000 in a scale run) fetched the class again, each on a
# new TLS connection.
classes, classes_lock = {}, threading.Lock()


def note_class(sc, deleted=False):
    name = sc["metadata"]["name"]
    with classes_lock:
        if deleted:
            classes.pop(name, None)
            return
        if sc.get("provisioner") != PROVISIONER:
            classes[name] = None   # known, not ours: its claims are not looked up again
            return
        try:
            delay = max(0, int((sc.get("parameters") or {}).get(DELAY_PARAM, "0"))) / 1000.0
        except ValueError:
            log("class %s: %s is not a number of ms; no delay" % (name, DELAY_PARAM))
            delay = 0.0
        classes[name] = (sc.get("volumeBindingMode", "Immediate"), delay)


def class_of(name):
    with classes_lock:
        if name in classes:
            return classes[name]
    try:
        note_class(get("/apis/storage.k8s.io/v1/storageclasses/" + urllib.parse.quote(name)))
    except (urllib.error.HTTPError, urllib.error.URLError, OSError) as e:
        log("class %s: %s" % (name, e))
    with classes_lock:
        return classes.get(name)


# Claims of a class with a delay: when each was first seen (uid -> monotonic time), and a
# heap of (due, uid, namespace, name) that one timer thread hands to DELAY_WORKERS workers
# once due; each worker reads the claim again and provisions it.
first_seen, due_heap, due_cond = {}, [], threading.Condition()
due_work = queue.Queue()


def wait_for_delay(pvc, delay):
    """True when the claim's delay is over; else schedules it (once) and returns False."""
    meta, now = pvc["metadata"], time.monotonic()
    with due_cond:
        first = first_seen.get(meta["uid"])
        if first is None:
            first = first_seen[meta["uid"]] = now
            heapq.heappush(due_heap, (first + delay, meta["uid"], meta["namespace"], meta["name"]))
            due_cond.notify()
        return now >= first + delay


def due_timer():
    while True:
        with due_cond:
            while not due_heap or due_heap[0][0] > time.monotonic():
                due_cond.wait(None if not due_heap else due_heap[0][0] - time.monotonic())
            item = heapq.heappop(due_heap)
        due_work.put(item)


def due_worker():
    while True:
        _, uid, ns, name = due_work.get()
        gone = False
        try:
            pvc = get("/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (ns, urllib.parse.quote(name)))
            gone = pvc["metadata"]["uid"] != uid
            if not gone:
                provision(pvc)
        except urllib.error.HTTPError as e:
            gone = e.code == 404
            if not gone:
                log("delayed %s/%s: HTTP %d" % (ns, name, e.code))
        except Exception as e:  # the API server away: the watch's relist brings the claim back
            log("delayed %s/%s: %s" % (ns, name, e))
        if gone:
            with due_cond:
                first_seen.pop(uid, None)


# One lock per claim (striped): the watch, the clone retries and the delay workers may look
# at the same claim; different claims are provisioned side by side.
locks = [threading.Lock() for _ in range(32)]


def provision(pvc):
    with locks[hash(pvc["metadata"]["uid"]) % len(locks)]:
        provision_locked(pvc)


def provision_locked(pvc):
    meta, spec = pvc["metadata"], pvc.get("spec", {})
    cls = spec.get("storageClassName")
    if not cls or spec.get("volumeName") or pvc.get("status", {}).get("phase") not in (None, "Pending"):
        with due_cond:
            first_seen.pop(meta["uid"], None)
        return
    info = class_of(cls)
    if info is None:
        return
    mode, delay = info
    node = meta.get("annotations", {}).get(SELECTED_NODE)
    if mode == "WaitForFirstConsumer" and not node:
        return  # not before the scheduler chose a node for its first consumer
    if delay > 0 and not wait_for_delay(pvc, delay):
        return
    name = "pvc-" + meta["uid"]
    size = spec.get("resources", {}).get("requests", {}).get("storage", "1Gi")
    path = os.path.join(root, name)
    pv = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": cls,
            "volumeMode": spec.get("volumeMode", "Filesystem"),
            "hostPath": {"path": path, "type": "DirectoryOrCreate"},
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                         "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
        },
    }
    if node:
        pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    # The directory is made here, world-writable like real local provisioners make theirs
    # (local-path-provisioner: 0777): the kubelet would create a missing hostPath directory
    # 0755 root, and fsGroup does not apply to hostPath volumes, so a non-root sandbox
    # could not write its workspace.
    try:
        src = source_dir(pvc)
    except LookupError as e:
        log("clone %s/%s: %s; trying again" % (meta["namespace"], meta["name"], e))
        retry_later(pvc)
        return
    try:
        if src is not None and not os.path.isdir(path):
            tmp = path + ".cloning"
            shutil.rmtree(tmp, ignore_errors=True)
            copy_tree(src, tmp)
            os.chmod(tmp, 0o777)
            os.rename(tmp, path)
            log("cloned %s into %s" % (src, path))
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0o777)
    except OSError as e:
        log("mkdir %s: %s" % (path, e))
        return
    try:
        call("POST", "/api/v1/persistentvolumes", pv).close()
        log("provisioned %s for %s/%s%s" % (name, meta["namespace"], meta["name"], " on " + node if node else ""))
    except urllib.error.HTTPError as e:
        if e.code != 409:
            log("create %s: HTTP %d %s" % (name, e.code, e.read()[:200]))


def reclaim(pv):
    meta = pv["metadata"]
    if meta.get("annotations", {}).get("pv.kubernetes.io/provisioned-by") != PROVISIONER:
        return
    if pv.get("status", {}).get("phase") != "Released" or meta.get("deletionTimestamp"):
        return
    try:
        call("DELETE", "/api/v1/persistentvolumes/" + meta["name"]).close()
        log("deleted released %s" % meta["name"])
        path = pv.get("spec", {}).get("hostPath", {}).get("path", "")
        if path.startswith(root + os.sep):
            shutil.rmtree(path, ignore_errors=True)
    except urllib.error.HTTPError as e:
        if e.code != 404:
            log("delete %s: HTTP %d" % (meta["name"], e.code))


def watch_forever(path, handle, on_delete=None):
    """list+watch with resourceVersion tracking; relist on 410 or any error."""
    while True:
        try:
            with call("GET", path) as r:
                lst = json.load(r)
            for item in lst.get("items", []):
                handle(item)
            rv = lst["metadata"]["resourceVersion"]
            while True:
                q = urllib.parse.urlencode({"watch": "true", "resourceVersion": rv,
                                            "allowWatchBookmarks": "true", "timeoutSeconds": "300"})
                with call("GET", path + "?" + q, timeout=330) as r:
                    for line in r:
                        ev = json.loads(line)
                        if ev["type"] == "ERROR":
                            raise RuntimeError("watch error: %s" % ev["object"].get("message"))
                        rv = ev["object"]["metadata"]["resourceVersion"]
                        if ev["type"] in ("ADDED", "MODIFIED"):
                            handle(ev["object"])
                        elif ev["type"] == "DELETED" and on_delete:
                            on_delete(ev["object"])
        except Exception as e:  # reconnect after any failure: relist is always correct
            log("watch %s: %s; relisting" % (path, e))
            time.sleep(1)


threading.Thread(target=watch_forever, args=("/api/v1/persistentvolumes", reclaim), daemon=True).start()
threading.Thread(target=watch_forever, args=("/apis/storage.k8s.io/v1/storageclasses", note_class,
                                             lambda sc: note_class(sc, deleted=True)), daemon=True).start()
threading.Thread(target=due_timer, daemon=True).start()
for _ in range(DELAY_WORKERS):
    threading.Thread(target=due_worker, daemon=True).start()
watch_forever("/api/v1/persistentvolumeclaims", provision)
