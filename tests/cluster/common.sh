# tests/cluster/common.sh — shared settings for the local control-plane scripts:
# component versions, the cache location (outside the repository, keyed by version)
# and the state directory of a running plane. Sourced, never executed.

K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.5.21}
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
HELM_VERSION=${HELM_VERSION:-v3.17.4}
# The real node's NetworkPolicy enforcer: kube-router's network-policy controller alone.
KUBE_ROUTER_VERSION=${KUBE_ROUTER_VERSION:-v2.1.0}
# The real node's StorageClass `local-path` (tests/cluster/local-path).
LOCAL_PATH_VERSION=${LOCAL_PATH_VERSION:-v0.0.30}
# sigs.k8s.io/metrics-server: the resource metrics API of the real node (tests/cluster/metrics-server).
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
# The real node's container registries (tests/cluster/registry): distribution's cmd/registry.
REGISTRY_VERSION=${REGISTRY_VERSION:-v3.0.0}
# gVisor for the real node's RuntimeClass gvisor (tests/cluster/gvisor): runsc and gVisor's own
# containerd shim from gvisor.dev/gvisor, the newest version whose shim still speaks
# containerd 1.6's shim protocol (Debian's containerd; later ones answer `start` in
# containerd 2's JSON form).
GVISOR_VERSION=${GVISOR_VERSION:-v0.0.0-20260413194555-9680d69bf798}

YAO_CACHE=${YAO_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yao-sandbox}
YAO_BIN=$YAO_CACHE/bin
# runsc and containerd-shim-runsc-v1 of $GVISOR_VERSION (tests/cluster/gvisor builds them).
YAO_GVISOR_DIR=$YAO_CACHE/gvisor/$GVISOR_VERSION
# A running plane keeps its pids, ports, certificates and kubeconfig here.
YAO_PLANE_DIR=${YAO_PLANE_DIR:-${TMPDIR:-/tmp}/yao-sandbox-plane}

export PATH=/usr/local/go/bin:$PATH
export GOFLAGS=${GOFLAGS:-}
# Keep Go's caches outside the repository too; honour what the machine already has.
export GOMODCACHE=${GOMODCACHE:-$(go env GOMODCACHE)}
export GOCACHE=${GOCACHE:-$(go env GOCACHE)}

# Path of a cached binary, e.g. cached_bin kube-apiserver -> .../kube-apiserver-v1.34.4
cached_bin() {
    case "$1" in
        kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy) echo "$YAO_BIN/$1-$K8S_VERSION" ;;
        etcd) echo "$YAO_BIN/etcd-$ETCD_VERSION" ;;
        kwok) echo "$YAO_BIN/kwok-$KWOK_VERSION-patched1" ;;
        helm) echo "$YAO_BIN/helm-$HELM_VERSION" ;;
        kube-router) echo "$YAO_BIN/kube-router-$KUBE_ROUTER_VERSION" ;;
        local-path-provisioner) echo "$YAO_BIN/local-path-provisioner-$LOCAL_PATH_VERSION" ;;
        metrics-server) echo "$YAO_BIN/metrics-server-$METRICS_SERVER_VERSION" ;;
        registry) echo "$YAO_BIN/registry-$REGISTRY_VERSION" ;;
        *) echo "unknown component $1" >&2; return 1 ;;
    esac
}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# manifest_args SRC — `-f FILE` arguments for kubectl apply: the CRDs and every plain
# manifest but the controller's Deployment (the demo and the suites run the controller they
# built on the host; an in-cluster one watching every namespace would fight it).
manifest_args() {
    local f
    printf -- '-f\n%s\n' "$1/crd/"
    for f in "$1"/manifests/*.yaml; do
        case $f in */30-deployment.yaml) ;; *) printf -- '-f\n%s\n' "$f" ;; esac
    done
}
