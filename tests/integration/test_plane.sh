#!/usr/bin/env bash
# Self-test of the local control plane (issue: real local Kubernetes): PVC binding through
# the test provisioner, scheduling by kube-scheduler, kwok pod status, exec through the API
# server with stdout/stderr/exit code, garbage collection by kube-controller-manager, and
# RBAC refusal for the unprivileged identity.
. "$(dirname "$0")/lib.sh"
NS=yao-selftest
fresh_namespace $NS
eventually 30 kubectl -n $NS get serviceaccount default

kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: yao-test
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  automountServiceAccountToken: false
  containers:
  - name: main
    image: busybox
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
YAML

pvc_bound() { [ "$(kubectl -n $NS get pvc data -o jsonpath='{.status.phase}')" = Bound ]; }
check "PVC of the test class is Bound" eventually 30 pvc_bound
check "Pod mounting it becomes Ready" eventually 30 kubectl -n $NS wait --for=condition=Ready pod/web --timeout=1s
check "Pod was scheduled onto a kwok node" contains "$(kubectl -n $NS get pod web -o jsonpath='{.spec.nodeName}')" kwok-node-
check "Pod is Running with a pod IP" eq "$(kubectl -n $NS get pod web -o jsonpath='{.status.phase}/{.status.podIP}' | sed 's#/[0-9.]*[0-9]$#/IP#')" "Running/IP"

out=$(kubectl -n $NS exec web -- sh -c 'echo out; echo err >&2; exit 3' 2>/tmp/yao-selftest-err.$$); rc=$?
err=$(cat /tmp/yao-selftest-err.$$); rm -f /tmp/yao-selftest-err.$$
check "exec stdout is 'out'" eq "$out" out
check "exec stderr is 'err'" contains "$err" err
check "exec exit code is 3" eq "$rc" 3

# Garbage collection: a ConfigMap owned by another is deleted after its owner.
kubectl -n $NS create configmap owner >/dev/null
uid=$(kubectl -n $NS get configmap owner -o jsonpath='{.metadata.uid}')
kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: "$uid"}]
YAML
kubectl -n $NS delete configmap owner >/dev/null
gone() { ! kubectl -n $NS get configmap dependent >/dev/null 2>&1; }
check "dependent is garbage-collected after its owner" eventually 30 gone

# RBAC: the unprivileged identity is refused.
U=$YAO_PLANE_DIR/kubeconfig-unprivileged
check "unprivileged identity cannot list pods (can-i)" eq "$(kubectl --kubeconfig "$U" auth can-i list pods -n $NS 2>/dev/null)" no
msg=$(kubectl --kubeconfig "$U" -n $NS get pods 2>&1)
check "unprivileged identity gets 403 Forbidden" contains "$msg" Forbidden

# The deleted PVC's volume is reclaimed by the provisioner.
pv=$(kubectl -n $NS get pvc data -o jsonpath='{.spec.volumeName}')
kubectl -n $NS delete pod web --wait=true --timeout=30s >/dev/null
kubectl -n $NS delete pvc data --wait=true --timeout=30s >/dev/null
pv_gone() { ! kubectl get pv "$pv" >/dev/null 2>&1; }
check "released volume is deleted" eventually 30 pv_gone
finish
