#!/usr/bin/env bash
# In-place pod resize on the real node (the pods/resize subresource: Kubernetes 1.33+, beta
# and on by default; kubelet 1.34 on cgroup v1 with the cgroupfs driver, containerd 1.6, runc).
# A Guaranteed pod with cpu 500m is resized to 50m and back without a restart: the same
# container, restartCount 0, status.containerStatuses[].resources shows the new values, the
# PodResizePending / PodResizeInProgress conditions clear, and the node's cgroups
# (cpu.cfs_quota_us, cpu.shares of the pod and the container) really change; the time from
# the PATCH to a status that shows the new values, 5 runs. Through kubectl 1.32 (strategic
# merge patch) and through the raw API (PATCH pods/NAME/resize, what a controller sends); a
# JSON merge patch replaces the whole containers list, so one that names only cpu is refused.
# What the node cannot give: cpu far above its allocatable is PodResizePending / Infeasible
# and nothing changes; above what is free now is Deferred and applied once room frees.
# resizePolicy: none given means NotRequired (memory grows in place too); memory
# RestartContainer restarts the container on a memory resize but not on a cpu one. A memory
# limit decrease is accepted by the API; the kubelet applies it only when the container uses
# less than the new limit (else PodResizeInProgress / Error "cannot decrease memory limits",
# the container untouched), and applies it once usage falls.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-resize
fresh_namespace $NS

# pod NAME CPU MEMORY [RESIZE-POLICY-YAML] — a Guaranteed pod on the real node running a shell
# that waits (the sandbox image, from the plane's registry).
pod() {
    kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeSelector: {kubernetes.io/hostname: $REAL_NODE}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: $NODE_SANDBOX_IMAGE
    command: [sh, -c, "trap 'exit 0' TERM; while :; do sleep 3600 & wait \$!; done"]
    ${4:-}
    resources: {requests: {cpu: $2, memory: $3}, limits: {cpu: $2, memory: $3}}
YAML
}
get() { kubectl -n $NS get pod "$1" -o jsonpath="{$2}" 2>/dev/null; }
cstatus_cpu() { get "$1" '.status.containerStatuses[0].resources.requests.cpu}/{.status.containerStatuses[0].resources.limits.cpu'; }
cstatus_mem() { get "$1" '.status.containerStatuses[0].resources.limits.memory'; }
restarts() { get "$1" '.status.containerStatuses[0].restartCount'; }
cond() { get "$1" ".status.conditions[?(@.type==\"$2\")].$3"; }
# resize_conditions POD — the PodResizePending / PodResizeInProgress conditions ("" when cleared)
resize_conditions() { echo "$(cond "$1" PodResizePending status)$(cond "$1" PodResizeInProgress status)"; }
# cgroup POD CONTROLLER FILE [pod] — a file of the container's cgroup (cgroupfs driver, cgroup
# v1: /sys/fs/cgroup/<controller>/kubepods[/<qos>]/pod<uid>/<container id>), or the pod's.
cgroup() {
    local uid cid dir
    uid=$(get "$1" .metadata.uid)
    cid=$(get "$1" '.status.containerStatuses[0].containerID'); cid=${cid#containerd://}
    dir=$(find "/sys/fs/cgroup/$2/kubepods" -maxdepth 2 -type d -name "pod$uid" 2>/dev/null | head -n 1)
    [ -n "$dir" ] || return 1
    if [ "${4:-}" = pod ]; then cat "$dir/$3"; else cat "$dir/$cid/$3"; fi
}
cpu_cgroups() { echo "$(cgroup "$1" cpu cpu.cfs_quota_us pod) $(cgroup "$1" cpu cpu.shares pod) $(cgroup "$1" cpu cpu.cfs_quota_us) $(cgroup "$1" cpu cpu.shares)"; }
# resize POD JSON — kubectl 1.32's patch of the resize subresource (strategic merge: the
# container is merged by name, so cpu alone may be named).
resize() { kubectl -n $NS patch pod "$1" --subresource resize -p "$2" >/dev/null; }
cpu_patch() { echo "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"$1\"},\"limits\":{\"cpu\":\"$1\"}}}]}}"; }
mem_patch() { echo "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"memory\":\"$1\"},\"limits\":{\"memory\":\"$1\"}}}]}}"; }
# raw_resize POD JSON — PATCH /api/v1/namespaces/NS/pods/POD/resize with the admin token.
raw_resize() {
    curl -sf -o /dev/null --cacert "$YAO_PLANE_DIR/pki/ca.crt" \
        -H "Authorization: Bearer $(cat "$YAO_PLANE_DIR/admin-token")" \
        -H 'Content-Type: application/strategic-merge-patch+json' -X PATCH --data "$2" \
        "https://127.0.0.1:$(cat "$YAO_PLANE_DIR/api-port")/api/v1/namespaces/$NS/pods/$1/resize"
}
applied() { # POD CPU — the status shows CPU as request and limit, and no resize condition is left
    [ "$(get "$1" '.status.containerStatuses[0].resources.requests.cpu}/{.status.containerStatuses[0].resources.limits.cpu}|{.status.conditions[?(@.type=="PodResizePending")].status}{.status.conditions[?(@.type=="PodResizeInProgress")].status')" = "$2/$2|" ]
}
# merge_refused POD JSON — a JSON merge patch of the resize subresource is refused because it
# drops the resources it does not name.
merge_refused() {
    local out
    out=$(kubectl -n $NS patch pod "$1" --subresource resize --type merge -p "$2" 2>&1) && return 1
    contains "$out" "cannot be removed"
}

pod p 500m 64Mi
check "a Guaranteed pod with cpu 500m runs on the real node" eventually 120 eval \
    "[ \"\$(get p .status.phase)\" = Running ] && [ \"\$(get p .spec.nodeName)\" = $REAL_NODE ]"
check "  QoS Guaranteed" eq "$(get p .status.qosClass)" Guaranteed
check "  no resizePolicy given (none is defaulted)" eq "$(get p '.spec.containers[0].resizePolicy')" ""
check "  status resources 500m/500m" eq "$(cstatus_cpu p)" "500m/500m"
check "  cgroups (pod quota, pod shares, container quota, container shares): 50000 512 50000 512" \
    eq "$(cpu_cgroups p)" "50000 512 50000 512"
CID=$(get p '.status.containerStatuses[0].containerID')

# --- 500m → 50m → 500m --------------------------------------------------------------------
check "resize to 50m (kubectl patch --subresource resize) is accepted" resize p "$(cpu_patch 50m)"
check "  the spec says 50m" eq "$(get p '.spec.containers[0].resources.limits.cpu')" 50m
check "  the status shows 50m/50m, the resize conditions clear" eventually 30 applied p 50m
check "  cgroups: 5000 51 5000 51" eq "$(cpu_cgroups p)" "5000 51 5000 51"
check "  the same container, restartCount 0" eq "$(get p '.status.containerStatuses[0].containerID') $(restarts p)" "$CID 0"
check "  status.observedGeneration caught up with the resize" eq "$(get p .status.observedGeneration)" "$(get p .metadata.generation)"
check "  an Event ResizeCompleted" eventually 10 eval \
    "kubectl -n $NS get events --field-selector involvedObject.name=p,reason=ResizeCompleted -o name | grep -q ."
check "a JSON merge patch naming cpu only is refused (it replaces the containers list)" merge_refused p "$(cpu_patch 500m)"
check "  and changes nothing" eq "$(get p '.spec.containers[0].resources.limits.cpu')" 50m
check "resize back to 500m through the raw API (PATCH pods/p/resize)" raw_resize p "$(cpu_patch 500m)"
check "  the status shows 500m/500m, the resize conditions clear" eventually 30 applied p 500m
check "  cgroups: 50000 512 50000 512" eq "$(cpu_cgroups p)" "50000 512 50000 512"
check "  the same container, restartCount 0" eq "$(get p '.status.containerStatuses[0].containerID') $(restarts p)" "$CID 0"

# --- how long: PATCH → the status shows it (and when the node's cgroup changed) -------------
TIMES=() CG_TIMES=()
timed_resize() { # CPU QUOTA — one resize; appends the ms to TIMES and CG_TIMES
    local t0 t_cg="" now
    t0=$(now_ms)
    resize p "$(cpu_patch "$1")" || return 1
    for _ in $(seq 1 600); do
        now=$(now_ms)
        [ -z "$t_cg" ] && [ "$(cgroup p cpu cpu.cfs_quota_us)" = "$2" ] && t_cg=$((now - t0))
        if applied p "$1"; then
            [ -n "$t_cg" ] || t_cg=$((now - t0))
            TIMES+=($((now - t0))); CG_TIMES+=("$t_cg"); return 0
        fi
        sleep 0.05
    done
    return 1
}
ok=0
for i in 1 2 3 4 5; do
    timed_resize 50m 5000 && timed_resize 500m 50000 && ok=$((ok + 1))
done
check "5 round trips 500m → 50m → 500m, each applied within 30 s" eq "$ok" 5
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
echo "    PATCH → status shows it, ms (down, up, ...): ${TIMES[*]} (median $(median "${TIMES[@]}"))"
echo "    PATCH → the container's cfs_quota_us changed, ms: ${CG_TIMES[*]} (median $(median "${CG_TIMES[@]}"))"
echo "    (kubectl polls: about 0.1 s resolution; the PATCH's own kubectl run included)"
check "  restartCount still 0, the same container" eq "$(restarts p) $(get p '.status.containerStatuses[0].containerID')" "0 $CID"

# --- what the node cannot give ----------------------------------------------------------------
ALLOC=$(kubectl get node $REAL_NODE -o jsonpath='{.status.allocatable.cpu}')
check "cpu 64 (allocatable $ALLOC) is accepted by the API" resize p "$(cpu_patch 64)"
check "  PodResizePending, reason Infeasible" eventually 30 eval \
    "[ \"\$(cond p PodResizePending status)/\$(cond p PodResizePending reason)\" = True/Infeasible ]"
echo "    message: $(cond p PodResizePending message)"
check "  the status and the cgroups keep 500m" eq "$(cstatus_cpu p) $(cpu_cgroups p)" "500m/500m 50000 512 50000 512"
check "  asking for 500m again clears it" eval "resize p '$(cpu_patch 500m)' && eventually 30 applied p 500m"

# Deferred: p (500m) asks for 1500m while another pod holds 1 cpu of the node's 2.
pod blocker 1 32Mi
check "a second pod holding 1 cpu runs" eventually 120 eval "[ \"\$(get blocker .status.phase)\" = Running ]"
check "p asking for 1500m: PodResizePending, reason Deferred" eval \
    "resize p '$(cpu_patch 1500m)' && eventually 30 eval '[ \"\$(cond p PodResizePending reason)\" = Deferred ]'"
echo "    message: $(cond p PodResizePending message)"
check "  the status keeps 500m" eq "$(cstatus_cpu p)" "500m/500m"
kubectl -n $NS delete pod blocker --wait=false >/dev/null
check "  once the other pod is gone the resize is applied (1500m, quota 150000)" eventually 60 eval \
    "applied p 1500m && [ \"\$(cgroup p cpu cpu.cfs_quota_us)\" = 150000 ]"
check "  restartCount still 0" eq "$(restarts p)" 0

# --- memory and resizePolicy ------------------------------------------------------------------
check "memory 64Mi → 96Mi with no resizePolicy (NotRequired): applied in place" eval \
    "resize p '$(mem_patch 96Mi)' && eventually 30 eval '[ \"\$(cstatus_mem p)\" = 96Mi ] && [ -z \"\$(resize_conditions p)\" ]'"
check "  memory.limit_in_bytes 100663296, restartCount 0" eq "$(cgroup p memory memory.limit_in_bytes) $(restarts p)" "100663296 0"
# A memory limit decrease: 40 MiB in /dev/shm (tmpfs, charged to the container's memory cgroup).
kubectl -n $NS exec p -- dd if=/dev/zero of=/dev/shm/fill bs=1M count=40 2>/dev/null
check "memory 96Mi → 32Mi while the container uses ~40 MiB: accepted by the API" resize p "$(mem_patch 32Mi)"
check "  PodResizeInProgress, reason Error, \"cannot decrease memory limits\"" eventually 30 eval \
    "[ \"\$(cond p PodResizeInProgress reason)\" = Error ] && cond p PodResizeInProgress message | grep -q 'cannot decrease memory limits'"
check "  the limit stays 96Mi (status, cgroup), the container keeps running (restartCount 0)" eq \
    "$(cstatus_mem p) $(cgroup p memory memory.limit_in_bytes) $(restarts p)" "96Mi 100663296 0"
kubectl -n $NS exec p -- rm -f /dev/shm/fill
check "  once the usage fell, the kubelet applies it (32Mi, 33554432), conditions clear" eventually 60 eval \
    "[ \"\$(cstatus_mem p) \$(cgroup p memory memory.limit_in_bytes)\" = '32Mi 33554432' ] && [ -z \"\$(resize_conditions p)\" ]"
check "  restartCount still 0, the same container" eq "$(restarts p) $(get p '.status.containerStatuses[0].containerID')" "0 $CID"

pod q 200m 64Mi "resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}, {resourceName: memory, restartPolicy: RestartContainer}]"
check "a pod with resizePolicy cpu NotRequired, memory RestartContainer runs" eventually 120 eval "[ \"\$(get q .status.phase)\" = Running ]"
check "  cpu 200m → 100m: applied without a restart" eval \
    "resize q '$(cpu_patch 100m)' && eventually 30 applied q 100m && [ \"\$(restarts q)\" = 0 ]"
check "  memory 64Mi → 96Mi is accepted" resize q "$(mem_patch 96Mi)"
check "  and applied by restarting the container (restartCount 1)" eventually 60 eval \
    "[ \"\$(cstatus_mem q)/\$(restarts q)\" = 96Mi/1 ] && [ -z \"\$(resize_conditions q)\" ]"
check "  the new container's memory.limit_in_bytes is 100663296" eventually 30 eval \
    "[ \"\$(cgroup q memory memory.limit_in_bytes)\" = 100663296 ]"
finish
