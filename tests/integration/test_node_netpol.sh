#!/usr/bin/env bash
# NetworkPolicy enforcement on the real node (kube-router's network-policy controller,
# tests/cluster/node/netpol): the shipped default SandboxClass, rendered by the chart with
# the Yao server's namespace named (sandboxClass.serverNamespaces) and applied with
# `kubectl apply -f` under a name of its own (not marked default: other suites share the
# plane), isolates its sandboxes. Every denial is first shown to be reachable without the
# policy (class mode none), so each check can fail:
#   - sandbox A cannot open sandbox B's port (nor B A's), nor can a pod of another
#     namespace; the Yao server's namespace can, and the sandboxes can reach it (egressTo);
#   - A cannot open the API server (the `kubernetes` Service) nor the node's kubelet port,
#     nor a listener on a host address inside the cluster-internal ranges;
#   - an egressCIDRs entry naming that host address lets A reach the listener;
#   - a class change takes effect on the running pods within a few seconds, without a pod
#     restart: isolating (none -> default) and narrowing (dropping the host's CIDR).
. "$(dirname "$0")/lib.sh"
use_real_node
NS=nettest-sbx
YAO_NS=nettest-yao
OTHER_NS=nettest-other
CLASS=nettest-net
LOG=$BUILD_DIR/test-node-netpol.log
: > "$LOG"
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
API_PORT=$(cat "$YAO_PLANE_DIR/api-port")
KUBELET_PORT=$(cat "$YAO_PLANE_DIR/node/kubelet-port")
KR_PID=$YAO_PLANE_DIR/node/pids/kube-router.pid
CHART=$SRC_DIR/charts/yao-sandbox
helm() { "$(cached_bin helm)" "$@"; }

check "kube-router's network-policy controller runs on the real node" \
    eval '[ -f "$KR_PID" ] && kill -0 "$(cat "$KR_PID")"'
check "CRD and manifests apply with kubectl" install_manifests
for ns in $NS $YAO_NS $OTHER_NS; do fresh_namespace $ns; done
on_exit "kubectl delete sandboxclass $CLASS --ignore-not-found"
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

# An image with a server and a client: FROM scratch + static busybox (httpd, nc).
bb=$(buildah from scratch)
buildah copy "$bb" /bin/busybox /bin/busybox >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox mkdir -p /usr/bin /sbin /usr/sbin /tmp /workspace >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox --install -s >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/sh -c 'chmod 1777 /tmp; chown 1000:1000 /workspace' >/dev/null
buildah commit -q "$bb" localhost/yao-sandbox/busybox-netpol:1 >/dev/null
buildah rm "$bb" >/dev/null
check "a busybox image is pushed to the plane's registry" node_image yao-sandbox/busybox-netpol:1 localhost/yao-sandbox/busybox-netpol:1
SERVE='mkdir -p /tmp/www && echo "hello from $(hostname)" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www'

# --- the class: the shipped default as the chart renders it with the Yao server's namespace
# named, first with mode none (what an operator sets to keep the old behaviour: the rest of
# the class, e.g. its ephemeral-storage limit, is the same, so no pod changes with the mode).
render_class() { # out [helm args...]
    local out=$1; shift
    helm template yao-sandbox "$CHART" --namespace yao-sandbox-system --kube-version "${K8S_VERSION#v}" \
        --show-only templates/sandboxclass.yaml \
        --set sandboxClass.name=$CLASS --set sandboxClass.default=false --set "sandboxClass.serverNamespaces={$YAO_NS}" \
        "$@" > "$out"
}
render_class "$WORK/class-none.yaml" --set sandboxClass.spec.network.mode=none
render_class "$WORK/class-default.yaml"
check "the chart's default class isolates (mode isolated, the cluster-internal ranges cut out)" eq \
    "$(kubectl create --dry-run=client -o jsonpath='{.spec.network.mode} {.spec.network.egressCIDRs} {.spec.network.egressExcept}' -f "$WORK/class-default.yaml")" \
    'isolated ["0.0.0.0/0","::/0"] ["10.0.0.0/8","172.16.0.0/12","192.168.0.0/16","100.64.0.0/10","169.254.0.0/16","fc00::/7","fe80::/10"]'
check "and names the Yao server's namespace in ingressFrom and egressTo" eq \
    "$(kubectl create --dry-run=client -o jsonpath='{.spec.network.ingressFrom[0].namespaceSelector.matchExpressions[0].values} {.spec.network.egressTo[0].namespaceSelector.matchExpressions[0].key}' -f "$WORK/class-default.yaml")" \
    "[\"$YAO_NS\"] kubernetes.io/metadata.name"
check "its cut ranges are manifests/classes/default.yaml's" eq \
    "$(kubectl create --dry-run=client -o jsonpath='{.spec.network.egressExcept}' -f "$SRC_DIR/manifests/classes/default.yaml")" \
    "$(kubectl create --dry-run=client -o jsonpath='{.spec.network.egressExcept}' -f "$WORK/class-default.yaml")"
kubectl apply -f "$WORK/class-none.yaml" >/dev/null

sandbox() { # name
    kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: $1}
spec:
  userID: net-$1
  chatID: c1
  className: $CLASS
  lifecycle: persistent
  image: "$NODE_REGISTRY/yao-sandbox/busybox-netpol:1"
  command: [/bin/sh, -c, '$SERVE']
  resources: {memory: 128Mi, cpu: 100m}
YAML
}
plain_pod() { # namespace name
    kubectl -n "$1" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2, labels: {app: $2}}
spec:
  automountServiceAccountToken: false
  securityContext: {runAsUser: 1000, runAsNonRoot: true}
  containers:
  - name: main
    image: $NODE_REGISTRY/yao-sandbox/busybox-netpol:1
    imagePullPolicy: IfNotPresent
    command: [/bin/sh, -c, '$SERVE']
    resources: {limits: {memory: 64Mi, cpu: 100m}}
YAML
}
sandbox a
sandbox b
plain_pod $YAO_NS yao
plain_pod $OTHER_NS stranger
check "sandboxes a and b run on the real node" eventually 120 eval 'phase_is $NS a Running && phase_is $NS b Running'
check "the Yao server's pod and a stranger's pod run" eventually 60 eval \
    'kubectl -n $YAO_NS wait --for=condition=Ready pod/yao --timeout=1s && kubectl -n $OTHER_NS wait --for=condition=Ready pod/stranger --timeout=1s'
POD_A=$(kubectl -n $NS get sandbox a -o jsonpath='{.status.podName}')
POD_B=$(kubectl -n $NS get sandbox b -o jsonpath='{.status.podName}')
ip_of() { kubectl -n "$1" get pod "$2" -o jsonpath='{.status.podIP}'; }
IP_A=$(ip_of $NS "$POD_A"); IP_B=$(ip_of $NS "$POD_B"); IP_YAO=$(ip_of $YAO_NS yao)
uid_restarts() { kubectl -n $NS get pod "$1" -o jsonpath='{.metadata.uid}/{.status.containerStatuses[0].restartCount}'; }
A0=$(uid_restarts "$POD_A"); B0=$(uid_restarts "$POD_B")

# A listener on a host address: the node's own (10.201.0.1 by default, inside 10.0.0.0/8),
# opened to pods by the node's guard so that only the policy decides.
HOST_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/www" && echo "hello from the host" > "$WORK/www/index.html"
python3 -m http.server "$HOST_PORT" --bind "$NODE_IP" --directory "$WORK/www" >/dev/null 2>&1 &
on_exit "kill $!"
node_allow_port "$HOST_PORT"
node_allow_port "$KUBELET_PORT"

# reach NS POD IP PORT — the pod opens a TCP connection to IP:PORT within 3 s.
reach() { kubectl -n "$1" exec "$2" -- nc -w 3 "$3" "$4" </dev/null >/dev/null 2>&1; }
blocked() { ! reach "$@"; }
# page NS POD IP PORT — the last line of what an HTTP GET from the pod returns (the static
# busybox's wget crashes in these pods: nc carries the request).
page() {
    kubectl -n "$1" exec "$2" -- sh -c 'printf "GET / HTTP/1.0\r\n\r\n" | nc -w 3 "$0" "$1"' "$3" "$4" 2>/dev/null | tail -n 1
}
# matrix — the reachability matrix, as "name:0|1 ..." (1 = reached).
matrix() {
    local out="" r
    for r in "a-to-b $NS $POD_A $IP_B 8080" "b-to-a $NS $POD_B $IP_A 8080" \
             "stranger-to-b $OTHER_NS stranger $IP_B 8080" "yao-to-b $YAO_NS yao $IP_B 8080" \
             "a-to-yao $NS $POD_A $IP_YAO 8080" "a-to-apiserver $NS $POD_A 10.0.0.1 443" \
             "a-to-kubelet $NS $POD_A $NODE_IP $KUBELET_PORT" "a-to-host $NS $POD_A $NODE_IP $HOST_PORT"; do
        set -- $r
        if reach "$2" "$3" "$4" "$5"; then out+="$1:1 "; else out+="$1:0 "; fi
    done
    echo "${out% }"
}

# --- without isolation: everything reaches everything (so each denial below can fail) ----------
check "mode none: no NetworkPolicy" eq "$(kubectl -n $NS get networkpolicy -o name)" ""
check "mode none: a reads b's page" eq "$(page $NS "$POD_A" "$IP_B" 8080)" "hello from $POD_B"
check "mode none: every probe connects" eq "$(matrix)" \
    "a-to-b:1 b-to-a:1 stranger-to-b:1 yao-to-b:1 a-to-yao:1 a-to-apiserver:1 a-to-kubelet:1 a-to-host:1"

# --- the default class: isolated at once --------------------------------------------------------
t0=$(now_ms)
kubectl apply -f "$WORK/class-default.yaml" >/dev/null
check "isolating: a loses b's port within 10 s of kubectl apply" eventually 10 blocked $NS "$POD_A" "$IP_B" 8080
T_ISOLATE=$(( $(now_ms) - t0 ))
echo "    (a lost b's port ${T_ISOLATE} ms after the class was applied)"
check "each sandbox has its NetworkPolicy" eq "$(kubectl -n $NS get networkpolicy -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | sort | tr '\n' ' ')" \
    "$(printf '%s\n' "$POD_A" "$POD_B" | sort | tr '\n' ' ')"
# kube-router applies a policy to a pod within seconds; give the last rules a moment.
settled() { [ "$(matrix)" = "$1" ]; }
ISOLATED="a-to-b:0 b-to-a:0 stranger-to-b:0 yao-to-b:1 a-to-yao:1 a-to-apiserver:0 a-to-kubelet:0 a-to-host:0"
check "isolated: only the Yao server's namespace gets in; out, only to it (not b, the API server, the kubelet, the host)" \
    eventually 15 settled "$ISOLATED"
check "  (the matrix, once more)" eq "$(matrix)" "$ISOLATED"
check "the Yao server reads b's page" eq "$(page $YAO_NS yao "$IP_B" 8080)" "hello from $POD_B"
check "a reads the Yao server's page (egressTo)" eq "$(page $NS "$POD_A" "$IP_YAO" 8080)" "hello from yao"
check "no pod was restarted or replaced" eq "$(uid_restarts "$POD_A") $(uid_restarts "$POD_B")" "$A0 $B0"
check "the sandboxes stay Running" eval 'phase_is $NS a Running && phase_is $NS b Running'

# --- an allowed egress CIDR: the host address named in egressCIDRs --------------------------------
render_class "$WORK/class-host.yaml" --set-json "sandboxClass.spec.network.egressCIDRs=[\"0.0.0.0/0\",\"::/0\",\"$NODE_IP/32\"]"
t0=$(now_ms)
kubectl apply -f "$WORK/class-host.yaml" >/dev/null
check "egressCIDRs + $NODE_IP/32: a reaches the host's listener" eventually 15 reach $NS "$POD_A" "$NODE_IP" "$HOST_PORT"
echo "    (a reached the host $(( $(now_ms) - t0 )) ms after the class was applied)"
check "  and reads its page" eq "$(page $NS "$POD_A" "$NODE_IP" "$HOST_PORT")" "hello from the host"
check "  b is still closed to a" blocked $NS "$POD_A" "$IP_B" 8080
check "the policy has the host's block, whole" contains \
    "$(kubectl -n $NS get networkpolicy "$POD_A" -o jsonpath='{.spec.egress}')" "{\"ipBlock\":{\"cidr\":\"$NODE_IP/32\"}}"

# --- narrowing: the class drops the host's CIDR again ---------------------------------------------
t0=$(now_ms)
kubectl apply -f "$WORK/class-default.yaml" >/dev/null
check "narrowing: a loses the host's listener within 10 s of kubectl apply" eventually 10 blocked $NS "$POD_A" "$NODE_IP" "$HOST_PORT"
T_NARROW=$(( $(now_ms) - t0 ))
echo "    (a lost the host ${T_NARROW} ms after the class was applied)"
check "narrowed: the isolated matrix again" eventually 15 settled "$ISOLATED"
check "still no pod restarted or replaced" eq "$(uid_restarts "$POD_A") $(uid_restarts "$POD_B")" "$A0 $B0"

# --- a Sandbox narrowing into a part the class cuts out is refused --------------------------------
kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: c}
spec:
  userID: net-c
  chatID: c1
  className: $CLASS
  image: "$NODE_REGISTRY/yao-sandbox/busybox-netpol:1"
  network: {egressCIDRs: ["$NODE_IP/32"]}
YAML
msg() { kubectl -n $NS get sandbox c -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}'; }
check "a Sandbox asking for the host's address under the default class is InvalidSpec" eventually 20 reason_is $NS c InvalidSpec
check "  naming the cut" eq "$(msg)" \
    "spec.network.egressCIDRs[0]: $NODE_IP/32 is inside 10.0.0.0/8, which SandboxClass \"$CLASS\" excepts from its egress CIDRs (spec.network.egressExcept)"

# --- back to mode none: open again -----------------------------------------------------------------
kubectl apply -f "$WORK/class-none.yaml" >/dev/null
check "mode none again: the policies go" eventually 20 eval '[ -z "$(kubectl -n $NS get networkpolicy -o name)" ]'
check "  and a reaches b" eventually 15 reach $NS "$POD_A" "$IP_B" 8080

[ "$FAILED" = 0 ] || { echo "    --- kube-router log:"; tail -n 30 "$YAO_PLANE_DIR/node/logs/kube-router.log" | cut -c1-300 | sed 's/^/    /'; }
finish
