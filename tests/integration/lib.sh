# tests/integration/lib.sh — shared helpers for the integration suites: the kubeconfig of
# the running local plane, kubectl wrappers, polling with deadlines, and check() that counts
# results and prints the closing line "N passed, N failed". Sourced by test_*.sh.
set -uo pipefail
IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${YAO_SOURCE_DIR:-$(cd "$IT_DIR/../.." && pwd)}
BUILD_DIR=${YAO_BUILD_DIR:-$SRC_DIR/build}
. "$SRC_DIR/tests/cluster/common.sh"
export KUBECONFIG=$YAO_PLANE_DIR/kubeconfig
[ -f "$KUBECONFIG" ] || { echo "no local plane: run tests/cluster/up first" >&2; exit 1; }

# The nodes' default: yao-node cordoned, the kwok nodes schedulable. A suite that was killed
# (ctest's timeout is a SIGKILL: no exit trap runs) may have left a cordon of its own in
# place (use_real_node --whole-node's swap, test_warm's cordon of a kwok node), which would
# send the next suite's pods elsewhere: put the default back. ctest runs the suites in two
# lanes on the one plane (tests/tests.cmake: YAO_SUITE_LANE): a real-node suite (lane
# "node") pins its pods by namespace and may run beside a kwok suite (lane "kwok"), so it
# leaves the kwok nodes' cordons to the kwok suite running. (test_node_token_rotation runs
# beside every suite and sets LIB_KEEP_CORDONS: it pins its pods with a toleration.)
if [ -z "${LIB_KEEP_CORDONS:-}" ] && kubectl get node yao-node >/dev/null 2>&1; then
    kubectl cordon yao-node >/dev/null 2>&1
    if [ "${YAO_SUITE_LANE:-}" != node ]; then
        kubectl get nodes -l type=kwok -o name 2>/dev/null | xargs -r kubectl uncordon >/dev/null 2>&1
    fi
fi

PASSED=0
FAILED=0
FAILED_NAMES=()     # the names of the failed checks (repeated at the end)
CLEANUPS=()
CONTROLLER_LOGS=()   # logs of the controllers start_controller ran (shown when a check failed)

# check NAME CMD... — run CMD; count and print the outcome.
check() {
    local name=$1; shift
    if "$@"; then
        PASSED=$((PASSED + 1)); echo "ok   $name"
    else
        FAILED=$((FAILED + 1)); echo "FAIL $name"
        FAILED_NAMES+=("$name")
    fi
}

# eventually SECONDS CMD... — true once CMD succeeds within the deadline (polls every 0.1 s).
eventually() {
    local secs=$1; shift
    local deadline; deadline=$(($(date +%s%N) / 1000000 + secs * 1000))
    until "$@" >/dev/null 2>&1; do
        [ "$(($(date +%s%N) / 1000000))" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}

# eq A B — string equality with a message on mismatch.
eq() {
    if [ "$1" == "$2" ]; then return 0; fi
    echo "    expected [$2], got [$1]" >&2
    return 1
}

# contains HAYSTACK NEEDLE
contains() {
    case "$1" in *"$2"*) return 0 ;; esac
    echo "    [$1] does not contain [$2]" >&2
    return 1
}

on_exit() { CLEANUPS+=("$*"); }
finish() {
    local i
    for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do eval "${CLEANUPS[$i]}" >/dev/null 2>&1 || true; done
    # A failure in CI leaves only this output: the end of each controller's log goes with it.
    if [ "$FAILED" != 0 ]; then
        for i in "${!CONTROLLER_LOGS[@]}"; do
            [ -f "${CONTROLLER_LOGS[$i]}" ] || continue
            echo "    --- last lines of ${CONTROLLER_LOGS[$i]}"
            tail -n 40 "${CONTROLLER_LOGS[$i]}" | cut -c1-400 | sed 's/^/    /'
        done
        # ... and, last (CI shows the end of a long output), which checks failed.
        [ ${#FAILED_NAMES[@]} = 0 ] || printf 'FAILED: %s\n' "${FAILED_NAMES[@]}"
    fi
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" = 0 ]
}

# fresh_namespace NAME — (re)create a namespace and remove it at the end. After
# use_real_node every pod of the namespace lands on the real node (pin_namespace).
fresh_namespace() {
    kubectl delete namespace "$1" --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
    kubectl create namespace "$1" >/dev/null
    on_exit "kubectl delete namespace $1 --wait=false"
    if [ -n "${PIN_TO_REAL_NODE:-}" ]; then pin_namespace "$1"; fi
}

# install_manifests — the CRD and the plain manifests, exactly as a user applies them, but
# for the controller's Deployment: the suites run the controller themselves (on the host,
# with the ServiceAccount's token, so they can restart, kill and configure it), and a second,
# in-cluster controller watching every namespace would fight it — on the real node it would
# really run. A Deployment left by an earlier install is removed. (The in-cluster
# controller is tested on its own: test_node_incluster.sh, test_helm.sh.)
install_manifests() {
    local args
    mapfile -t args < <(manifest_args "$SRC_DIR")
    kubectl apply "${args[@]}" >/dev/null &&
        kubectl -n yao-sandbox-system delete deployment yao-sandbox-controller --ignore-not-found --wait=false >/dev/null &&
        kubectl wait --for=condition=Established crd/sandboxes.sandbox.yaoapps.com --timeout=30s >/dev/null
}

# sa_kubeconfig FILE [SA] [NS] — a kubeconfig carrying a ServiceAccount's own token (not
# admin), so a missing RBAC rule makes the tests fail.
sa_kubeconfig() {
    local file=$1 sa=${2:-yao-sandbox-controller} ns=${3:-yao-sandbox-system} token
    token=$(kubectl -n "$ns" create token "$sa" --duration=2h) || return 1
    # written aside and renamed into place: suites that run side by side may read it meanwhile
    (umask 077 && cat > "$file.$$" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$(cat "$YAO_PLANE_DIR/api-port")", certificate-authority: "$YAO_PLANE_DIR/pki/ca.crt"}
users:
- name: $sa
  user: {token: "$token"}
contexts:
- name: local
  context: {cluster: local, user: $sa}
current-context: local
KC
    ) && mv -f "$file.$$" "$file"
}

CONTROLLER_PIDS=()
# start_controller LOGFILE [ARGS...] — run the controller with the ServiceAccount's
# kubeconfig in the background; its pid is appended to CONTROLLER_PIDS and it is stopped
# at exit.
start_controller() {
    local log=$1; shift
    local kc=${CONTROLLER_KUBECONFIG:-$YAO_PLANE_DIR/controller-sa.kubeconfig}
    [ -f "$kc" ] || sa_kubeconfig "$kc" || return 1
    "$BUILD_DIR/bin/yao-sandbox-controller" --kubeconfig "$kc" "$@" >>"$log" 2>&1 &
    CONTROLLER_PIDS+=($!)
    case " ${CONTROLLER_LOGS[*]} " in *" $log "*) ;; *) CONTROLLER_LOGS+=("$log") ;; esac
    on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
}

# kill_controller SIGNAL — signal the newest controller and wait for it.
kill_controller() {
    local pid=${CONTROLLER_PIDS[-1]}
    kill "-${1:-TERM}" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

# passes_before_pod NS NAME LOG — how many passes the controller (run with --log-level
# debug) finished on Sandbox NS/NAME before the one that created its pod: 0 when its first
# pass made it; empty when it made none.
passes_before_pod() {
    awk -v k="sandbox=$1/$2" '
        index($0, "msg=\"pod created\" " k " ") { print n + 0; exit }
        index($0, "msg=\"reconciled\" " k " ") || index($0, "msg=\"reconcile failed\" " k " ") { n++ }' "$3"
}

# explain_sandbox NS NAME LOG — what a failed check needs to be understood from CI output
# alone: the Sandbox's status and annotations, its pod's status, and the controller's log
# lines about it.
explain_sandbox() {
    echo "    --- sandbox $1/$2:"
    kubectl -n "$1" get sandbox "$2" -o jsonpath='{.metadata.resourceVersion} {.metadata.annotations} {.status}{"\n"}' 2>&1 | cut -c1-2000 | sed 's/^/    /'
    local pod; pod=$(kubectl -n "$1" get sandbox "$2" -o jsonpath='{.status.podName}' 2>/dev/null)
    [ -n "$pod" ] && kubectl -n "$1" get pod "$pod" -o jsonpath='{.metadata.resourceVersion} {.status}{"\n"}' 2>&1 | cut -c1-2000 | sed 's/^/    /'
    echo "    --- controller log about it:"
    grep -E "sandbox=$1/$2( |$)" "$3" | tail -n 40 | cut -c1-400 | sed 's/^/    /'
}

# sandbox_phase NS NAME
sandbox_phase() { kubectl -n "$1" get sandbox "$2" -o jsonpath='{.status.phase}' 2>/dev/null; }
# sandbox_reason NS NAME — reason of the Ready condition
sandbox_reason() { kubectl -n "$1" get sandbox "$2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}' 2>/dev/null; }
phase_is() { [ "$(sandbox_phase "$1" "$2")" = "$3" ]; }
reason_is() { [ "$(sandbox_reason "$1" "$2")" = "$3" ]; }
# now_ms
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# shard_hash NAMESPACE USER SHARDS — the shard of a user's Sandboxes: FNV-1a 64 of
# "namespace/user" mod SHARDS, computed here independently of controller/sandbox/decide/shard_decide.c.
shard_hash() {
    python3 -c 'import sys
h = 0xcbf29ce484222325
for b in (sys.argv[1] + "/" + sys.argv[2]).encode():
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print(h % int(sys.argv[3]))' "$1" "$2" "$3"
}

# --- the real node (tests/cluster/up --real-node) -------------------------------------------
# Suites that need real containers call use_real_node: it fails when the plane has no real
# node and otherwise pins every namespace the suite then makes with fresh_namespace to the
# real node (pin_namespace). yao-node stays cordoned: kwok nodes stay the default for every
# other pod (e.g. for scale work), so a kwok suite can run beside a real-node one. A suite
# whose pods live in namespaces it does not make itself (a chart's, the demo's) calls
# use_real_node --whole-node instead: it uncordons yao-node and cordons the kwok nodes, so
# every new pod lands on the real node, and puts both back at exit (it cannot run beside
# another suite: tests/tests.cmake gives it the whole plane). Their workspaces are on the
# real node's StorageClass local-path (rancher/local-path-provisioner, tests/cluster/local-path), what
# kind and k3s users have: the controllers they start take it as their default
# (YAO_SANDBOX_STORAGE_CLASS), an in-cluster one gets it from the chart
# (sandboxDefaults.storageClass=$NODE_STORAGE_CLASS). Their images come from the plane's
# registry (tests/cluster/registry, $NODE_REGISTRY), as a cluster pulls from the registry
# it is given: the controllers they start take the sandbox image there as their default
# (YAO_SANDBOX_IMAGE=$NODE_SANDBOX_IMAGE), an in-cluster one gets it and the controller
# image from the chart (image.registry, sandboxDefaults.image); the node has its own
# credential for that registry, so no imagePullSecrets are needed for these images.
REAL_NODE=yao-node
NODE_STORAGE_CLASS=local-path
have_real_node() {
    [ -f "$YAO_PLANE_DIR/node/pids/kubelet.pid" ] &&
        kubectl wait --for=condition=Ready "node/$REAL_NODE" --timeout=10s >/dev/null 2>&1
}
use_real_node() {
    if ! have_real_node; then
        echo "this suite needs the real node: start the plane with tests/cluster/up --real-node" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
    if ! kubectl get storageclass "$NODE_STORAGE_CLASS" >/dev/null 2>&1 ||
        ! kill -0 "$(cat "$YAO_PLANE_DIR/pids/local-path-provisioner.pid" 2>/dev/null)" 2>/dev/null; then
        echo "this suite needs StorageClass $NODE_STORAGE_CLASS and its provisioner: start the plane with tests/cluster/up --real-node" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
    if ! NODE_REGISTRY=$(cat "$YAO_PLANE_DIR/registry/plane/address" 2>/dev/null) ||
        ! kill -0 "$(cat "$YAO_PLANE_DIR/pids/registry-plane.pid" 2>/dev/null)" 2>/dev/null; then
        echo "this suite needs the plane's registry: start the plane with tests/cluster/up --real-node" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
    IMAGE_TAG=$(sed -n 's/^project(yao-sandbox VERSION \([0-9.]*\).*/\1/p' "$SRC_DIR/CMakeLists.txt")
    NODE_SANDBOX_IMAGE=$NODE_REGISTRY/yao-sandbox/sandbox:$IMAGE_TAG
    export YAO_SANDBOX_STORAGE_CLASS=$NODE_STORAGE_CLASS YAO_SANDBOX_IMAGE=$NODE_SANDBOX_IMAGE
    NODE_IP=$(cat "$YAO_PLANE_DIR/node-ip")
    if [ "${1:-}" != --whole-node ]; then
        PIN_TO_REAL_NODE=1
        return 0
    fi
    if [ "${YAO_SUITE_LANE:-}" = node ]; then
        echo "use_real_node --whole-node swaps the cordons: this suite cannot run in the node lane (tests/tests.cmake)" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
    local kwok
    kwok=$(kubectl get nodes -l type=kwok -o name | tr '\n' ' ')   # one line: on_exit evals it
    # shellcheck disable=SC2086
    kubectl cordon $kwok >/dev/null && kubectl uncordon "$REAL_NODE" >/dev/null || return 1
    on_exit "kubectl cordon $REAL_NODE; kubectl uncordon $kwok"
}
# pin_namespace NS — every pod made in NS from now on runs on the real node, though it stays
# cordoned: the API server's admission plugins PodNodeSelector and PodTolerationRestriction
# (tests/cluster/up) add the namespace's node selector and a toleration of the cordon to
# each pod, whoever makes it (the controller, a ReplicaSet, kubectl run).
pin_namespace() {
    kubectl annotate --overwrite namespace "$1" \
        "scheduler.alpha.kubernetes.io/node-selector=kubernetes.io/hostname=$REAL_NODE" \
        'scheduler.alpha.kubernetes.io/defaultTolerations=[{"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"}]' \
        >/dev/null
}
# node_allow_port PORT — let pods open connections to PORT on the node (the node's guard,
# in the mangle table, drops every other connection from pods to the host); removed at exit.
node_allow_port() {
    iptables -t mangle -A YAO-NODE-ALLOW -p tcp -d "$NODE_IP" --dport "$1" -j ACCEPT &&
        on_exit "iptables -t mangle -D YAO-NODE-ALLOW -p tcp -d $NODE_IP --dport $1 -j ACCEPT"
}
# pod_node NS POD
pod_node() { kubectl -n "$1" get pod "$2" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
# registry_push BUILDAH_IMAGE REF [REGISTRY] — push a buildah image to one of the plane's
# registries (plane, the default, or private) as REF (host:port/repository:tag), with that
# registry's credentials and the plane's CA.
registry_push() {
    local r=$YAO_PLANE_DIR/registry/${3:-plane}
    buildah push -q --authfile "$r/auth.json" --cert-dir "$r/ca" "$1" "docker://$2"
}
# node_image NAME BUILDAH_IMAGE — make a buildah image pullable by the real node: pushed to
# the plane's registry as $NODE_REGISTRY/NAME (e.g. yao-sandbox/busybox-test:1).
node_image() { registry_push "$2" "$NODE_REGISTRY/$1"; }
