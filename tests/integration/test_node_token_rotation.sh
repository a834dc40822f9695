#!/usr/bin/env bash
# The controller pod's API token rotates under it, as projected service-account tokens do
# in every real cluster: the chart installs the controller with a 600 s token
# (serviceAccount.tokenExpirationSeconds, the API server's minimum), the kubelet renews it
# at 80 % of its life, and the same controller process keeps working after the first token
# has expired — it re-reads the token file; nothing restarts it.
#
# Takes about 11 minutes, so it does not hold the plane: it runs beside the other suites
# (tests/tests.cmake), touches only its own release and namespaces (no default SandboxClass:
# a cluster-wide class would change every other suite's Sandboxes), and pins the controller
# to the real node with a toleration of the cordon instead of uncordoning it.
LIB_KEEP_CORDONS=1   # (runs beside the other suites: lib.sh)
. "$(dirname "$0")/lib.sh"
have_real_node || { echo "this suite needs the real node (tests/cluster/up --real-node)" >&2; echo "0 passed, 1 failed"; exit 1; }
CHART=$SRC_DIR/charts/yao-sandbox
REL=yao-sandbox-rot
RNS=yao-sandbox-rot
NS=yao-rot
HELM=$(cached_bin helm)
T=$(mktemp -d)
on_exit "rm -rf $T"
export HELM_CONFIG_HOME=$T/helm/config HELM_CACHE_HOME=$T/helm/cache HELM_DATA_HOME=$T/helm/data
TAG=$(sed -n 's/^project(yao-sandbox VERSION \([0-9.]*\).*/\1/p' "$SRC_DIR/CMakeLists.txt")
# The images come from the plane's registry (tests/cluster/registry).
NODE_REGISTRY=$(cat "$YAO_PLANE_DIR/registry/plane/address")
NODE_SANDBOX_IMAGE=$NODE_REGISTRY/yao-sandbox/sandbox:$TAG
LIFETIME=600
quiet() { local out; out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }; }

kubectl delete namespace $RNS --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
fresh_namespace $NS
on_exit "$HELM uninstall $REL -n $RNS --wait --timeout 60s; kubectl delete namespace $RNS --wait=false"
check "helm install with a $LIFETIME s controller token, pinned to the real node" quiet "$HELM" install $REL "$CHART" \
    -n $RNS --create-namespace --set image.registry="$NODE_REGISTRY" --set image.tag="$TAG" \
    --set sandboxDefaults.image="$NODE_SANDBOX_IMAGE" \
    --set "watchNamespaces={$NS}" --set replicas=1 \
    --set serviceAccount.tokenExpirationSeconds=$LIFETIME --set sandboxClass.create=false \
    --set nodeSelector."kubernetes\.io/hostname"=$REAL_NODE \
    --set 'tolerations[0].key=node.kubernetes.io/unschedulable' --set 'tolerations[0].operator=Exists' \
    --set 'tolerations[0].effect=NoSchedule' --wait --timeout 120s
POD=$(kubectl -n $RNS get pods -l app.kubernetes.io/instance=$REL -o jsonpath='{.items[0].metadata.name}')
UID_=$(kubectl -n $RNS get pod "$POD" -o jsonpath='{.metadata.uid}')
check "the controller pod runs on the real node" eq "$(pod_node $RNS "$POD")" "$REAL_NODE"
STARTED=$(kubectl -n $RNS get pod "$POD" -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}')

# The token as the kubelet wrote it for the pod (this suite runs on the node, as root).
TOKEN_FILE=$YAO_PLANE_DIR/node/kubelet/pods/$UID_/volumes/kubernetes.io~projected/api-access/token
claims() { # token -> "iat exp"
    python3 -c 'import base64, json, sys
p = sys.argv[1].split(".")[1]; c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
print(c["iat"], c["exp"])' "$1"
}
check "the kubelet wrote the pod's projected token" test -s "$TOKEN_FILE"
first=$(cat "$TOKEN_FILE")
read -r iat1 exp1 < <(claims "$first")
check "the token lives $LIFETIME s" eq "$((exp1 - iat1))" "$LIFETIME"

sandbox() {
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: rot, chatID: %s, lifecycle: persistent}\n' "$1" "$1" |
        kubectl -n $NS apply -f - >/dev/null
}
sandbox before
check "with the first token the controller brings a Sandbox to Running" eventually 90 phase_is $NS before Running

# The kubelet renews the token at 80 % of its life; wait for that, then past the first
# token's expiry.
rotated() { [ "$(cat "$TOKEN_FILE" 2>/dev/null)" != "$first" ]; }
renew_by=$((exp1 - 2 - $(date +%s)))
check "the kubelet renews the token file before it expires" eventually $((renew_by > 30 ? renew_by : 30)) rotated
read -r iat2 _ < <(claims "$(cat "$TOKEN_FILE")")
echo "    token renewed $((iat2 - iat1)) s after it was issued"
wait_s=$((exp1 + 5 - $(date +%s)))
[ $wait_s -gt 0 ] && sleep $wait_s
check "the first token has expired now" test "$(date +%s)" -gt "$exp1"
sandbox after
check "after the first token expired, the same controller still works (a new Sandbox Running)" eventually 90 phase_is $NS after Running
check "  without a restart of its container" eq \
    "$(kubectl -n $RNS get pod "$POD" -o jsonpath='{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].state.running.startedAt}')" "0/$STARTED"
logs=$(kubectl -n $RNS logs "$POD" 2>&1)
check "  and no request of it was refused as unauthorized" test "$(grep -c -E 'code=401|Unauthorized' <<<"$logs")" = 0
finish
