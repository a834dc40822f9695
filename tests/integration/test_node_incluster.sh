#!/usr/bin/env bash
# The controller as a real pod, installed the way users install it: `helm install` of
# charts/yao-sandbox with the controller image built by images/build.sh, pulled by the
# node from the plane's registry (image.registry; the sandbox image from there too). The
# controller pod runs on the real node with in-cluster configuration —
# the projected, expiring service-account token and the CA from the pod, the API server
# reached through the `kubernetes` Service address — the kubelet probes /healthz and
# /readyz, it takes the leader Lease, and the sandbox pods it creates run as real
# containers. A second replica waits on the Lease and takes over when the leader's pod is
# deleted.
. "$(dirname "$0")/lib.sh"
use_real_node --whole-node
CHART=$SRC_DIR/charts/yao-sandbox
REL=yao-sandbox-node
RNS=yao-sandbox-node
NS=yao-node-helm
HELM=$(cached_bin helm)
[ -x "$HELM" ] || "$SRC_DIR/tests/cluster/build" helm >&2 || { echo "cannot build helm" >&2; exit 1; }
T=$(mktemp -d)
on_exit "rm -rf $T"
quiet() { local out; out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }; }
export HELM_CONFIG_HOME=$T/helm/config HELM_CACHE_HOME=$T/helm/cache HELM_DATA_HOME=$T/helm/data
TAG=$(sed -n 's/^project(yao-sandbox VERSION \([0-9.]*\).*/\1/p' "$SRC_DIR/CMakeLists.txt")

kubectl delete namespace $RNS --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
fresh_namespace $NS
on_exit "$HELM uninstall $REL -n $RNS --wait --timeout 60s; kubectl delete namespace $RNS --wait=false"
check "helm install with the controller image from the plane's registry" quiet "$HELM" install $REL "$CHART" -n $RNS --create-namespace \
    --set image.registry="$NODE_REGISTRY" --set image.tag="$TAG" --set "watchNamespaces={$NS}" \
    --set sandboxDefaults.image="$NODE_SANDBOX_IMAGE" \
    --set replicas=2 --set logLevel=debug --set sandboxClass.create=false \
    --set sandboxDefaults.storageClass=$NODE_STORAGE_CLASS --wait --timeout 120s
sel=app.kubernetes.io/instance=$REL
pods() { kubectl -n $RNS get pods -l $sel -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{" "}{.status.phase}{" "}{.status.containerStatuses[0].ready}{"\n"}{end}'; }
both_ready() { [ "$(pods | grep -c " $REAL_NODE Running true$")" = 2 ]; }
check "both controller pods Running and Ready on the real node (readiness probe /readyz)" eventually 90 both_ready
pods | sed 's/^/    /'
LEASE=$(kubectl -n $RNS get lease -o name | head -n1)
holder() { kubectl -n $RNS get "$LEASE" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
check "one of them holds the leader Lease" eventually 30 sh -c "kubectl -n $RNS get pods -l $sel -o name | grep -q \"/\$(kubectl -n $RNS get $LEASE -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1)\""
LEADER=$(kubectl -n $RNS get pods -l $sel -o name | while read -r p; do case $(holder) in ${p#pod/}*) echo "${p#pod/}";; esac; done | head -n1)
echo "    leader: $LEADER (lease holder $(holder))"

check "the pod uses a projected, expiring service-account token" eq \
    "$(kubectl -n $RNS get pod "$LEADER" -o jsonpath='{.spec.volumes[?(@.projected)].projected.sources[0].serviceAccountToken.expirationSeconds}' | grep -c '^[0-9]')" 1
logs=$(kubectl -n $RNS logs "$LEADER" 2>&1)
check "the controller uses in-cluster configuration: the kubernetes Service address" contains "$logs" "server=https://10.0.0.1:443"
check "liveness and readiness probes are /healthz and /readyz" eq \
    "$(kubectl -n $RNS get pod "$LEADER" -o jsonpath='{.spec.containers[0].livenessProbe.httpGet.path} {.spec.containers[0].readinessProbe.httpGet.path}')" "/healthz /readyz"
check "the kubelet's probes have not restarted it" eq "$(kubectl -n $RNS get pod "$LEADER" -o jsonpath='{.status.containerStatuses[0].restartCount}')" 0

kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: from-pod}
spec: {userID: helm-user, chatID: in-cluster, lifecycle: persistent}
YAML
check "a Sandbox handled by the in-cluster controller reaches Running" eventually 90 phase_is $NS from-pod Running
SPOD=$(kubectl -n $NS get sandbox from-pod -o jsonpath='{.status.podName}')
check "its pod is a real container on the real node" eq "$(pod_node $NS "$SPOD")/$(kubectl -n $NS get pod "$SPOD" -o jsonpath='{.status.containerStatuses[0].ready}')" "$REAL_NODE/true"
check "  its workspace on $NODE_STORAGE_CLASS (the chart's sandboxDefaults.storageClass)" eq \
    "$(kubectl -n $NS get pvc "$(kubectl -n $NS get sandbox from-pod -o jsonpath='{.status.workspaceClaim}')" -o jsonpath='{.spec.storageClassName}/{.status.phase}')" "$NODE_STORAGE_CLASS/Bound"
check "exec into it through the API server" eq "$("$BUILD_DIR/bin/yao-sandbox" -n $NS exec from-pod -- sh -c 'echo in-$(id -u)')" in-1000

# Fail-over: the leader's pod goes, the standby takes the Lease and keeps reconciling.
kubectl -n $RNS delete pod "$LEADER" --wait=false >/dev/null
new_holder() { local h; h=$(holder); [ -n "$h" ] && case $h in "$LEADER"*) return 1;; esac; }
check "the standby takes the Lease when the leader's pod is deleted" eventually 90 new_holder
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: after-failover}
spec: {userID: helm-user, chatID: failover, lifecycle: persistent}
YAML
check "the new leader brings a new Sandbox to Running" eventually 90 phase_is $NS after-failover Running
finish
