#!/usr/bin/env bash
# Yao in the cluster, end to end on the real node, as a platform team runs it:
#   - a Yao-like server (tests/bridge/grpcpeer: the real yao.Yao gRPC service — Heartbeat,
#     MCP list/call tools, the bearer-token check) runs as a Deployment + Service `yao` in
#     namespace yao, from an image in the plane's registry;
#   - the chart is installed for the tenant namespace with sandboxClass.serverNamespaces=[yao]
#     and its default isolated class, whose hostAliases point host.tai.internal at the
#     Service `yao` (the controller reads its cluster IP; kube-proxy routes it; kube-router
#     enforces the class's NetworkPolicy);
#   - Yao's ServiceAccount, holding only yao-sandbox-editor in the tenant namespace, creates
#     the chat's Sandbox through the Go client's Yao runtime with Yao's exact environment
#     (YAO_IPC_MODE=grpc, YAO_GRPC_ADDR=host.tai.internal:9099, tokens, no YAO_GRPC_TLS) and
#     runs yao-bridge in it: it lists and calls Yao's MCP tools and sends Heartbeat
#     (clients/go/yaoruntime/yao_incluster_it_test.go);
#   - the network: another user's sandbox cannot reach this one's ports, a pod of another
#     namespace cannot reach the sandbox (so it cannot use it to reach Yao's port), the Yao
#     namespace can; the sandbox reaches Yao but not another namespace's pods;
#   - the Yao server's address changed in the class (helm upgrade) reaches new pods.
. "$(dirname "$0")/lib.sh"
use_real_node --whole-node
CHART=$SRC_DIR/charts/yao-sandbox
REL=yao-sandbox-yao
RNS=yao-sandbox-yao
TNS=yao-tenant
YNS=yao
ONS=yao-outsider
CLASS=yao-isolated
LOG=$BUILD_DIR/test-node-yao.log
: > "$LOG"
HELM=$(cached_bin helm)
[ -x "$HELM" ] || "$SRC_DIR/tests/cluster/build" helm >&2 || { echo "cannot build helm" >&2; exit 1; }
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
export HELM_CONFIG_HOME=$WORK/helm/config HELM_CACHE_HOME=$WORK/helm/cache HELM_DATA_HOME=$WORK/helm/data
quiet() { local out; out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }; }
CLI=$BUILD_DIR/bin/yao-sandbox

# --- the Yao server's image: FROM scratch + the static grpc-go server ------------------------
check "the Yao test server builds (tests/bridge/grpcpeer)" quiet "$SRC_DIR/tests/bridge/grpcpeer/build.sh" "$WORK/yao-server"
ys=$(buildah from scratch)
buildah copy --chmod 0755 "$ys" "$WORK/yao-server" /yao-server >/dev/null
buildah config --entrypoint '["/yao-server"]' --user 65532:65532 "$ys" >/dev/null
buildah commit -q "$ys" localhost/yao-sandbox/yao-test-server:1 >/dev/null
buildah rm "$ys" >/dev/null
check "the Yao server image is pushed to the plane's registry" node_image yao-sandbox/yao-test-server:1 localhost/yao-sandbox/yao-test-server:1

for ns in $RNS $TNS $YNS $ONS; do kubectl delete namespace $ns --ignore-not-found --wait=true --timeout=90s >/dev/null 2>&1; done
kubectl delete sandboxclass $CLASS --ignore-not-found >/dev/null 2>&1
for ns in $TNS $YNS $ONS; do kubectl create namespace $ns >/dev/null; done
on_exit "kubectl delete namespace $TNS $YNS $ONS --wait=false"

# --- Yao: two server Deployments (the second is where the address moves to), its SA -----------
yao_server() { # NAME TOKEN SESSION
    kubectl -n $YNS apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      automountServiceAccountToken: false
      containers:
        - name: yao
          image: $NODE_REGISTRY/yao-sandbox/yao-test-server:1
          args: [-listen=0.0.0.0:9099, -token=$2, -session=$3, -record=/dev/stdout]
          ports: [{containerPort: 9099, name: grpc}]
          securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {name: $1}
spec:
  selector: {app: $1}
  ports: [{name: grpc, port: 9099, targetPort: 9099}]
YAML
}
yao_server yao tok-alice sbx-alice
yao_server yao-v2 tok-alice sbx-alice
ready() { [ "$(kubectl -n $YNS get deploy "$1" -o jsonpath='{.status.readyReplicas}')" = 1 ]; }
check "the Yao server runs as a Deployment on the real node" eventually 90 ready yao
check "  and the second one (yao-v2)" eventually 90 ready yao-v2
YAO_IP=$(kubectl -n $YNS get service yao -o jsonpath='{.spec.clusterIP}')
YAO2_IP=$(kubectl -n $YNS get service yao-v2 -o jsonpath='{.spec.clusterIP}')
echo "    Service yao: $YAO_IP, yao-v2: $YAO2_IP"
kubectl -n $YNS create serviceaccount yao >/dev/null
kubectl -n $TNS create rolebinding yao --clusterrole=yao-sandbox-editor --serviceaccount=$YNS:yao >/dev/null
check "Yao's ServiceAccount holds only the editor role in the tenant namespace" eq \
    "$(kubectl -n $TNS auth can-i create sandboxes --as system:serviceaccount:$YNS:yao)/$(kubectl -n $TNS auth can-i create pods --as system:serviceaccount:$YNS:yao)/$(kubectl -n $TNS auth can-i get secrets --as system:serviceaccount:$YNS:yao)" "yes/no/no"
check "a kubeconfig with Yao's token" sa_kubeconfig "$WORK/yao.kubeconfig" yao $YNS

# --- the chart, as the operator installs it for Yao ---------------------------------------------
hosts_json() { printf '[{"hostnames":["host.tai.internal"],"service":{"namespace":"%s","name":"%s"}}]' $YNS "$1"; }
on_exit "$HELM uninstall $REL -n $RNS --wait --timeout 60s; kubectl delete namespace $RNS --wait=false"
check "helm install: serverNamespaces=[yao], the isolated default class, host.tai.internal -> Service yao" \
    quiet "$HELM" install $REL "$CHART" -n $RNS --create-namespace \
    --set image.registry="$NODE_REGISTRY" --set image.tag="$IMAGE_TAG" --set "watchNamespaces={$TNS}" \
    --set sandboxClass.name=$CLASS --set sandboxClass.default=true --set "sandboxClass.serverNamespaces={$YNS}" \
    --set-json "sandboxClass.hostAliases=$(hosts_json yao)" \
    --set sandboxDefaults.storageClass=$NODE_STORAGE_CLASS --wait --timeout 120s
check "the class is isolated and names host.tai.internal" eq \
    "$(kubectl get sandboxclass $CLASS -o jsonpath='{.spec.network.mode} {.spec.hostAliases[0].hostnames[0]} {.spec.hostAliases[0].service.name}')" \
    "isolated host.tai.internal yao"
check "the controller may read Services in yao only through the chart's Role" eq \
    "$(kubectl -n $YNS auth can-i get services --as system:serviceaccount:$RNS:$REL-controller)/$(kubectl -n $ONS auth can-i get services --as system:serviceaccount:$RNS:$REL-controller)" "yes/no"

# --- Yao creates the chat's sandbox and runs yao-bridge in it (Go, as Yao's SA) ------------------
check "yao-bridge in the sandbox lists and calls Yao's tools over gRPC (Go runtime, Yao's SA and environment)" \
    sh -c "cd '$SRC_DIR/clients/go' && YAO_GO_IT_YAO_KUBECONFIG='$WORK/yao.kubeconfig' YAO_GO_IT_YAO_NAMESPACE=$TNS \
        YAO_GO_IT_YAO_USER=alice YAO_GO_IT_YAO_CHAT=chat-1 YAO_GO_IT_YAO_TOKEN=tok-alice YAO_GO_IT_YAO_REFRESH=ref-alice \
        YAO_GO_IT_YAO_SESSION=sbx-alice YAO_GO_IT_YAO_TOOLS=echo,big YAO_GO_IT_YAO_SERVER_IP=$YAO_IP \
        '$GO' test -count=1 -v -run '^TestITYaoInCluster$' ./yaoruntime/ >'$WORK/go.out' 2>&1"
sed 's/^/    | /' "$WORK/go.out" | grep -v '^    | === RUN' | head -n 30
check "  and it ran (not skipped)" eval "grep -q -- '--- PASS: TestITYaoInCluster' '$WORK/go.out'"
ALICE=$(kubectl -n $TNS get sandboxes -o jsonpath='{.items[?(@.spec.userID=="alice")].metadata.name}')
ALICE_POD=$(kubectl -n $TNS get sandbox "$ALICE" -o jsonpath='{.status.podName}')
check "the sandbox's pod carries the class's hostAliases at the Service's cluster IP" eq \
    "$(kubectl -n $TNS get pod "$ALICE_POD" -o jsonpath='{.spec.hostAliases[0].ip} {.spec.hostAliases[0].hostnames[0]}')" "$YAO_IP host.tai.internal"
server_log=$(kubectl -n $YNS logs deploy/yao 2>&1)
check "the Yao server saw MCPListTools and MCPCallTool for the sandbox's session" eval \
    "grep -q '\"method\":\"/yao.Yao/MCPListTools\"' <<<\"\$server_log\" && grep -q '\"method\":\"/yao.Yao/MCPCallTool\"' <<<\"\$server_log\""
check "  and a Heartbeat from it (sandbox_id sbx-alice, with the bearer token)" eval \
    "grep '\"method\":\"/yao.Yao/Heartbeat\"' <<<\"\$server_log\" | grep -q 'sbx-alice'"
check "  every call came from the sandbox's pod address" eval \
    "! grep '\"method\":\"/yao.Yao/MCP' <<<\"\$server_log\" | grep -v \"\$(kubectl -n $TNS get pod $ALICE_POD -o jsonpath='{.status.podIP}')\" | grep -q ."
# A wrong token is refused by Yao (the token check is the server's, end to end).
bad=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}' |
      KUBECONFIG=$WORK/yao.kubeconfig "$CLI" -n $TNS exec -i "$ALICE" -e YAO_TOKEN=wrong -- yao-bridge 2>/dev/null)
check "a wrong token gets Yao's refusal, not its tools" eval "grep -q '\"error\"' <<<\"\$bad\" && ! grep -q '\"echo\"' <<<\"\$bad\""

# --- the network -------------------------------------------------------------------------------
# alice's sandbox listens on 8080 (perl from the image's perl-base); bob's sandbox, a pod in
# the Yao namespace and one in another namespace try it.
KUBECONFIG=$WORK/yao.kubeconfig kubectl -n $TNS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: alice-web}
spec:
  userID: alice
  chatID: web
  lifecycle: persistent
  command: [perl, -MIO::Socket::INET, -e, 'my $s = IO::Socket::INET->new(LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die $!; $SIG{TERM} = sub { exit 0 }; while (my $c = $s->accept) { print $c "alice-port\n"; close $c }']
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: bob}
spec: {userID: bob, chatID: chat-1, lifecycle: persistent}
YAML
both_run() { phase_is $TNS alice-web Running && phase_is $TNS bob Running; }
check "alice's listening sandbox and bob's sandbox run" eventually 120 both_run
WEB_IP=$(kubectl -n $TNS get pod "$(kubectl -n $TNS get sandbox alice-web -o jsonpath='{.status.podName}')" -o jsonpath='{.status.podIP}')
# A pod of the sandbox image (curl, perl) that listens on 8081 and answers its name.
probe_pod() { # NS NAME
    kubectl -n "$1" run "$2" --image="$NODE_SANDBOX_IMAGE" --restart=Never \
        --overrides='{"spec":{"automountServiceAccountToken":false}}' --command -- \
        perl -MIO::Socket::INET -e 'my $s = IO::Socket::INET->new(LocalPort => 8081, Listen => 5, ReuseAddr => 1) or die $!; $SIG{TERM} = sub { exit 0 }; while (my $c = $s->accept) { print $c "$ARGV[0]\n"; close $c }' "$2" >/dev/null &&
        kubectl -n "$1" wait --for=condition=Ready "pod/$2" --timeout=90s >/dev/null
}
check "a pod in the Yao namespace runs" probe_pod $YNS yao-client
check "a pod in another namespace runs" probe_pod $ONS outsider
reach() { # NS POD|sandbox:NAME URL -> prints what the URL answered, "" when refused or cut
    local ns=$1 who=$2 url=$3
    case $who in
        sandbox:*) "$CLI" -n "$ns" exec "${who#sandbox:}" -- curl -s --http0.9 --max-time 4 "$url" 2>/dev/null ;;
        *) kubectl -n "$ns" exec "$who" -- curl -s --http0.9 --max-time 4 "$url" 2>/dev/null ;;
    esac
}
yao_reaches_web() { [ "$(reach $YNS yao-client "http://$WEB_IP:8080/")" = alice-port ]; }
check "the Yao namespace reaches alice's port (serverNamespaces: the policy lets Yao in)" eventually 30 yao_reaches_web
check "bob's sandbox cannot reach alice's port" eq "$(reach $TNS sandbox:bob "http://$WEB_IP:8080/")" ""
check "a pod of another namespace cannot reach the sandbox (nor Yao's port through it)" \
    eq "$(reach $ONS outsider "http://$WEB_IP:8080/")" ""
OUT_IP=$(kubectl -n $ONS get pod outsider -o jsonpath='{.status.podIP}')
outsider_answers() { [ "$(reach $ONS outsider "http://$OUT_IP:8081/")" = outsider ]; }
check "  while the outsider's own port answers inside its namespace" eventually 20 outsider_answers
check "the sandbox cannot reach another namespace's pods" eq "$(reach $TNS "sandbox:$ALICE" "http://$OUT_IP:8081/")" ""
check "the sandbox reaches Yao's gRPC port through host.tai.internal" eval \
    "\"$CLI\" -n $TNS exec $ALICE -- curl -s --max-time 4 -o /dev/null -w '%{http_code}' --http2-prior-knowledge http://host.tai.internal:9099/ | grep -qv '^000$'"

# --- the Yao server's address moves: the class changes, new pods follow ---------------------------
check "helm upgrade: host.tai.internal -> Service yao-v2" quiet "$HELM" upgrade $REL "$CHART" -n $RNS --reuse-values \
    --set-json "sandboxClass.hostAliases=$(hosts_json yao-v2)" --wait --timeout 120s
KUBECONFIG=$WORK/yao.kubeconfig kubectl -n $TNS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: alice-chat-2}
spec: {userID: alice, chatID: chat-2, lifecycle: persistent}
YAML
check "a new chat's sandbox runs" eventually 120 phase_is $TNS alice-chat-2 Running
hosts_ip() { "$CLI" -n $TNS exec "$1" -- sh -c 'grep -w host.tai.internal /etc/hosts | cut -f1 | cut -d" " -f1' 2>/dev/null; }
check "  its host.tai.internal is the new Service's address" eq "$(hosts_ip alice-chat-2)" "$YAO2_IP"
check "  the running sandbox keeps the address it was created with" eq "$(hosts_ip "$ALICE")" "$YAO_IP"
[ "$FAILED" = 0 ] || kubectl -n $TNS get sandboxes,pods -o wide 2>&1 | sed 's/^/    /'
[ "$FAILED" = 0 ] || kubectl -n $RNS logs deploy/$REL-controller --tail=40 2>&1 | cut -c1-300 | sed 's/^/    /'
finish
