#!/usr/bin/env python3
"""tests/cluster/provisioner.py — a test-only dynamic volume provisioner for the local plane.

Watches PersistentVolumeClaims of its StorageClasses and creates, for each one, a
hostPath PersistentVolume pre-bound to it (claimRef), so kube-controller-manager's binder
binds the pair exactly as it does behind a real CSI provisioner, and kube-scheduler then
schedules the pods that mount it. Deletes Released volumes it provisioned (reclaim policy
Delete). Talks to the API server over HTTPS with the admin token; standard library only.

Two classes, as on real clusters:
  yao-test       volumeBindingMode Immediate: provisioned as soon as the claim exists.
  yao-test-wffc  volumeBindingMode WaitForFirstConsumer: provisioned only once the
                 scheduler picked a node for the first pod using the claim and wrote it
                 into the claim's volume.kubernetes.io/selected-node annotation; the
                 volume is pinned to that node (nodeAffinity), like a local volume.

A claim with spec.dataSource {kind: PersistentVolumeClaim} is a clone (CSI volume
cloning): its directory is filled with a copy of the source claim's volume (modes,
ownership, times and symbolic links kept) before its volume is created, for both classes.
A source that is not bound yet is tried again every few seconds, as external-provisioner
retries; the copy goes to a temporary directory renamed into place, so a crash mid-copy
leaves no half-filled volume.
"""
import json, os, shutil, ssl, sys, threading, time, urllib.error, urllib.parse, urllib.request

CLASSES = {"yao-test": "Immediate", "yao-test-wffc": "WaitForFirstConsumer"}
PROVISIONER = "yao-sandbox.test/hostpath"
SELECTED_NODE = "volume.kubernetes.io/selected-node"

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


lock = threading.Lock()


def provision(pvc):
    with lock:  # the watch and the clone retries
        provision_locked(pvc)


def provision_locked(pvc):
    meta, spec = pvc["metadata"], pvc.get("spec", {})
    cls = spec.get("storageClassName")
    if cls not in CLASSES or spec.get("volumeName"):
        return
    if pvc.get("status", {}).get("phase") not in (None, "Pending"):
        return
    node = meta.get("annotations", {}).get(SELECTED_NODE)
    if CLASSES[cls] == "WaitForFirstConsumer" and not node:
        return  # not before the scheduler chose a node for its first consumer
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


def watch_forever(path, handle):
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
        except Exception as e:  # reconnect after any failure: relist is always correct
            log("watch %s: %s; relisting" % (path, e))
            time.sleep(1)


threading.Thread(target=watch_forever, args=("/api/v1/persistentvolumes", reclaim), daemon=True).start()
watch_forever("/api/v1/persistentvolumeclaims", provision)
