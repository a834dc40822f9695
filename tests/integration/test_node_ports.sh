#!/usr/bin/env bash
# Ports on the real node: spec.ports reach the container, `yao-sandbox port-forward`
# carries HTTP to a server running inside the sandbox (busybox httpd) through the API
# server (pods/portforward over WebSocket) — byte-exact large bodies, several connections
# at once, the server closing each connection, a clear error for a port nobody listens on,
# LOCAL 0 picking a free port, the sandbox marked used while forwarding, a clean exit on
# SIGINT — all with the yao-sandbox-editor role only; the Sandbox's Service (ClusterIP,
# owned by the Sandbox, selecting its pod) and status.endpoints; a port change replaces
# the pod on the same workspace; the Service goes with the Sandbox.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-ports
LOG=$BUILD_DIR/test-node-ports.log
: > "$LOG"
CLI=$BUILD_DIR/bin/yao-sandbox
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

# The client: a ServiceAccount with the yao-sandbox-editor role in the namespace only.
kubectl -n $NS create serviceaccount pf-client >/dev/null
kubectl -n $NS create rolebinding pf-client --clusterrole=yao-sandbox-editor --serviceaccount=$NS:pf-client >/dev/null
check "a kubeconfig with the editor role only" sa_kubeconfig "$WORK/client.kubeconfig" pf-client $NS
cli() { KUBECONFIG=$WORK/client.kubeconfig "$CLI" -n $NS "$@"; }
# in the background (`cli_bg ... &`): the CLI replaces the subshell, so $! is its pid and a
# signal sent there reaches it
cli_bg() { KUBECONFIG=$WORK/client.kubeconfig exec "$CLI" -n $NS "$@"; }

# An image with an HTTP server: FROM scratch + static busybox (httpd, nc).
bb=$(buildah from scratch)
buildah copy "$bb" /bin/busybox /bin/busybox >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox mkdir -p /usr/bin /sbin /usr/sbin /tmp /workspace >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox --install -s >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/sh -c 'chmod 1777 /tmp; chown 1000:1000 /workspace' >/dev/null
buildah commit -q "$bb" localhost/yao-sandbox/busybox-ports:1 >/dev/null
buildah rm "$bb" >/dev/null
check "a busybox image with httpd is pushed to the plane's registry" node_image yao-sandbox/busybox-ports:1 localhost/yao-sandbox/busybox-ports:1

kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: web}
spec:
  userID: ports-user
  chatID: web
  lifecycle: persistent
  idleTimeout: 6s
  image: "$NODE_REGISTRY/yao-sandbox/busybox-ports:1"
  command: [/bin/sh, -c, "mkdir -p /workspace/www && exec httpd -f -p 8080 -h /workspace/www"]
  ports:
    - {name: http, port: 8080}
    - {name: dns, port: 5353, protocol: UDP}
  service: {enabled: true}
YAML
check "the sandbox runs on the real node" eventually 90 phase_is $NS web Running
POD=$(kubectl -n $NS get sandbox web -o jsonpath='{.status.podName}')
check "the container has the ports of spec.ports" eq \
    "$(kubectl -n $NS get pod "$POD" -o jsonpath='{range .spec.containers[0].ports[*]}{.name}/{.containerPort}/{.protocol} {end}')" \
    "http/8080/TCP dns/5353/UDP "

# --- content for the server --------------------------------------------------------------------
head -c 20000000 /dev/urandom > "$WORK/big"
echo "hello from the sandbox" > "$WORK/index.html"
cli write web www/big < "$WORK/big"
cli write web www/index.html < "$WORK/index.html"

# --- port-forward: LOCAL 0 picks a free port; a second port nobody listens on ---------------------
FREE=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cli_bg port-forward web :8080 "$FREE:9" > "$WORK/pf.out" 2> "$WORK/pf.err" &
PF=$!
on_exit "kill $PF 2>/dev/null"
forwarding() { [ "$(grep -c '^Forwarding from 127.0.0.1:' "$WORK/pf.out")" = 2 ]; }
check "port-forward prints where it listens" eventually 60 forwarding
LPORT=$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) -> 8080$/\1/p' "$WORK/pf.out")
check "LOCAL 0 got a free port" test -n "$LPORT"
check "the fixed local port is the one asked for" grep -qx "Forwarding from 127.0.0.1:$FREE -> 9" "$WORK/pf.out"
check "a small page through the forward" eq "$(curl -sS --max-time 20 "http://127.0.0.1:$LPORT/index.html")" "hello from the sandbox"
curl -sS --max-time 60 -o "$WORK/big.1" "http://127.0.0.1:$LPORT/big"
check "20 MB through the forward arrive byte-exact" cmp "$WORK/big" "$WORK/big.1"
curls=()
for i in 1 2 3 4 5 6; do curl -sS --max-time 120 -o "$WORK/par.$i" "http://127.0.0.1:$LPORT/big" & curls+=($!); done
wait "${curls[@]}"
same=0; for i in 1 2 3 4 5 6; do cmp -s "$WORK/big" "$WORK/par.$i" && same=$((same + 1)); done
check "6 connections at once, each byte-exact" eq "$same" 6
# the server closes each connection after its response (HTTP/1.0): the client sees the end
t0=$(now_ms)
curl -sS --max-time 20 -0 -o /dev/null "http://127.0.0.1:$LPORT/index.html"; rc=$?
check "the server's close ends the local connection (no hang)" test "$rc" = 0 -a $(( $(now_ms) - t0 )) -lt 10000
# a port nobody listens on in the pod: the connection ends, the pod's reason is printed
curl -sS --max-time 20 -o /dev/null "http://127.0.0.1:$FREE/" 2>/dev/null
check "a port nobody listens on gives a clear error" eventually 20 grep -q "port-forward 127.0.0.1:$FREE -> 9: .*refused" "$WORK/pf.err"
check "and the forward keeps serving" eq "$(curl -sS --max-time 20 "http://127.0.0.1:$LPORT/index.html")" "hello from the sandbox"
# marked used while forwarding (idleTimeout 6s: every 2 s)
lu1=$(kubectl -n $NS get sandbox web -o jsonpath='{.metadata.annotations.sandbox\.yaoapps\.com/last-used-at}')
lu_moved() { [ "$(kubectl -n $NS get sandbox web -o jsonpath='{.metadata.annotations.sandbox\.yaoapps\.com/last-used-at}')" != "$lu1" ]; }
check "the sandbox is marked used while forwarding" eventually 10 lu_moved
kill -INT $PF
t0=$(now_ms)
wait $PF; rc=$?
check "SIGINT ends port-forward with exit 0" eq "$rc" 0
check "promptly" test $(( $(now_ms) - t0 )) -lt 3000
check "and its ports are closed" test "$(curl -s --max-time 3 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$LPORT/" 2>/dev/null)" = 000
check "usage errors exit 2" test "$(cli port-forward web 0 2>/dev/null; echo $?)" = 2

# --- the Go client's PortForward (clients/go/sandbox/portforward_node_test.go) ------------------
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
(cd "$SRC_DIR/clients/go" && YAO_PF_KUBECONFIG=$WORK/client.kubeconfig YAO_PF_NAMESPACE=$NS YAO_PF_SANDBOX=web \
    YAO_PF_PORT=8080 YAO_PF_BIG=$WORK/big "$GO" test -count=1 -timeout 300s -run TestPortForwardOnTheRealNode -v \
    ./sandbox/ > "$WORK/go.out" 2>&1)
rc=$?
grep -E "^(---|    )" "$WORK/go.out" | head -20
check "Go PortForward: 4 connections byte-exact, a dead port closes, ctx ends it" \
    grep -q -- "--- PASS: TestPortForwardOnTheRealNode" "$WORK/go.out"
[ $rc = 0 ] || tail -20 "$WORK/go.out"

# --- the Service and status.endpoints ----------------------------------------------------------
SB_UID=$(kubectl -n $NS get sandbox web -o jsonpath='{.metadata.uid}')
svc() { kubectl -n $NS get service "$POD" -o jsonpath="$1" 2>/dev/null; }
check "the Service exists, named like the pod" eventually 30 eval '[ -n "$(svc {.spec.clusterIP})" ]'
CIP=$(svc '{.spec.clusterIP}')
POD_IP=$(kubectl -n $NS get pod "$POD" -o jsonpath='{.status.podIP}')
check "the Service is ClusterIP with the ports of spec.ports" eq \
    "$(svc '{.spec.type} {range .spec.ports[*]}{.name}/{.port}/{.targetPort}/{.protocol} {end}')" \
    "ClusterIP http/8080/8080/TCP dns/5353/5353/UDP "
check "owned by the Sandbox (controller reference)" eq \
    "$(svc '{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].uid}/{.metadata.ownerReferences[0].controller}')" \
    "Sandbox/$SB_UID/true"
SEL=$(kubectl -n $NS get service "$POD" -o go-template='{{range $k, $v := .spec.selector}}{{$k}}={{$v}},{{end}}' | sed 's/,$//')
check "its selector selects the sandbox's pod and nothing else" eq "$(kubectl -n $NS get pods -l "$SEL" -o name)" "pod/$POD"
slice_ip() { kubectl -n $NS get endpointslices -l kubernetes.io/service-name="$POD" -o jsonpath='{.items[*].endpoints[*].addresses[*]}'; }
check "the cluster's endpoints of the Service are the pod" eventually 30 eval '[ "$(slice_ip)" = "$POD_IP" ]'
ep() { kubectl -n $NS get sandbox web -o jsonpath="$1"; }
check "status.endpoints: the pod's address" eventually 30 eval '[ "$(ep "{.status.endpoints[0].podAddress}")" = "$POD_IP:8080" ]'
check "status.endpoints: the Service's address and DNS name" eq \
    "$(ep '{.status.endpoints[0].serviceAddress} {.status.endpoints[0].serviceDNS} {.status.endpoints[1].protocol}')" \
    "$CIP:8080 $POD.$NS.svc:8080 UDP"
check "status.service" eq "$(ep '{.status.service.name} {.status.service.clusterIP} {.status.service.dnsName}')" \
    "$POD $CIP $POD.$NS.svc"

# --- a port change replaces the pod on the same workspace, and updates the Service --------------
OLD_UID=$(kubectl -n $NS get pod "$POD" -o jsonpath='{.metadata.uid}')
kubectl -n $NS patch sandbox web --type merge -p \
    '{"spec":{"command":["/bin/sh","-c","exec httpd -f -p 8081 -h /workspace/www"],"ports":[{"name":"http","port":8081}]}}' >/dev/null
new_pod() { [ "$(kubectl -n $NS get pod "$POD" -o jsonpath='{.metadata.uid}' 2>/dev/null)" != "$OLD_UID" ] && phase_is $NS web Running; }
check "a port change replaces the pod" eventually 90 new_pod
check "the Service follows (patched)" eventually 30 eval '[ "$(svc "{range .spec.ports[*]}{.port} {end}")" = "8081 " ]'
check "the Service keeps its clusterIP" eq "$(svc '{.spec.clusterIP}')" "$CIP"
cli_bg port-forward web :8081 > "$WORK/pf2.out" 2>&1 &
PF2=$!
on_exit "kill $PF2 2>/dev/null"
check "port-forward to the new port" eventually 60 grep -q '^Forwarding from' "$WORK/pf2.out"
L2=$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) -> 8081$/\1/p' "$WORK/pf2.out")
curl -sS --max-time 60 -o "$WORK/big.2" "http://127.0.0.1:$L2/big"
check "the workspace survived the replacement (same 20 MB through the new port)" cmp "$WORK/big" "$WORK/big.2"
kill -INT $PF2; wait $PF2

# --- turned off, then the Sandbox deleted: the Service goes ---------------------------------------
kubectl -n $NS patch sandbox web --type merge -p '{"spec":{"service":{"enabled":false}}}' >/dev/null
check "spec.service.enabled=false deletes the Service" eventually 30 eval '! kubectl -n $NS get service "$POD" >/dev/null 2>&1'
check "and status.service goes" eventually 30 eval '[ -z "$(ep "{.status.service.name}")" ]'
kubectl -n $NS patch sandbox web --type merge -p '{"spec":{"service":{"enabled":true}}}' >/dev/null
check "enabled again: the Service is back" eventually 30 eval '[ -n "$(svc {.spec.clusterIP})" ]'
kubectl -n $NS delete sandbox web --wait=false >/dev/null
check "deleting the Sandbox removes its Service" eventually 60 eval '! kubectl -n $NS get service "$POD" >/dev/null 2>&1'
check "and its pod" eventually 60 eval '! kubectl -n $NS get pod "$POD" >/dev/null 2>&1'

finish
