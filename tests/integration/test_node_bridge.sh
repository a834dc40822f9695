#!/usr/bin/env bash
# yao-bridge inside the real sandbox image, on the real node: an MCP JSON-RPC session fed to
# `yao-bridge` (TCP mode, token handshake) through `yao-sandbox exec -i` reaches a peer
# outside the pod (tests/bridge/peer.c on the node address, the one port the node's guard
# is told to let pods reach) and comes back byte-exact, UTF-8 and escapes untouched; and
# the node's guard keeps pods off every other port of the host (the kubelet API) while the
# API server stays reachable through the `kubernetes` Service address.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-bridge
LOG=$BUILD_DIR/test-node-bridge.log
: > "$LOG"
CLI=$BUILD_DIR/bin/yao-sandbox
PEER=$BUILD_DIR/bin/yao-bridge-test-peer
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
[ -x "$PEER" ] || cmake --build "$BUILD_DIR" --target yao-bridge-test-peer >/dev/null
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 2
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: mcp}
spec: {userID: bridge-user, chatID: mcp, lifecycle: persistent}
YAML
check "the sandbox runs on the real node" eventually 90 phase_is $NS mcp Running

# The MCP session: initialize, initialized, tools/list, tools/call with UTF-8, an escaped
# quote, \u2028 and a backslash (the bridge must not touch any of it).
python3 - "$WORK/session" <<'PY'
import sys
lines = [
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"yao","version":"1.0"}}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
    b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}\n',
    ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":'
     '{"text":"h\u00e9llo \u2713 \\"q\\" \\u2028 back\\\\slash \U0001F600"}}}\n').encode(),
]
open(sys.argv[1], "wb").write(b"".join(lines))
PY
GREETING='{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}'
"$PEER" --tcp "$NODE_IP:0" --token node-bridge-token --greet "$GREETING
" --ready "$WORK/ready" --record "$WORK/record" --sent "$WORK/sent" --events "$WORK/events" \
    --timeout 60 2>"$WORK/peer.err" &
peer=$!
on_exit "kill $peer"
check "the peer listens on the node address" eventually 10 test -s "$WORK/ready"
PORT=$(cat "$WORK/ready")
check "the node's guard lets pods reach that one port" node_allow_port "$PORT"
"$CLI" -n $NS exec -i mcp -e YAO_IPC_MODE=tcp -e "YAO_IPC_ADDR=$NODE_IP:$PORT" -e YAO_TOKEN=node-bridge-token \
    -e YAO_BRIDGE_ALLOW_INSECURE=1 -- yao-bridge < "$WORK/session" > "$WORK/out" 2>"$WORK/err"
rc=$?
wait $peer; peer_rc=$?
check "yao-bridge in the sandbox exits 0 with nothing on stderr" eq "$rc/$(cat "$WORK/err")" "0/"
check "the peer saw the token and ended cleanly" eq "$peer_rc/$(grep -c token-ok "$WORK/events")" "0/1"
check "the peer received the session byte-exact" cmp "$WORK/session" "$WORK/record"
check "stdout is byte-exact what the peer sent" cmp "$WORK/sent" "$WORK/out"
check "  and holds the greeting and the responses to ids 1, 2, 3" eq \
    "$(head -n1 "$WORK/out")/$(grep -o '"id":[0-9]*' "$WORK/out" | tr '\n' ' ')" "$GREETING/\"id\":1 \"id\":2 \"id\":3 "

# The guard: the kubelet's port on the node address is not reachable from the pod.
KPORT=$(cat "$YAO_PLANE_DIR/node/kubelet-port")
probe=$("$CLI" -n $NS exec mcp -- sh -c "timeout 5 bash -c 'echo > /dev/tcp/$NODE_IP/$KPORT' 2>/dev/null && echo open || echo closed")
check "a pod cannot open the kubelet's port on the node" eq "$probe" closed
probe=$("$CLI" -n $NS exec mcp -- sh -c "timeout 5 bash -c 'echo > /dev/tcp/10.0.0.1/443' 2>/dev/null && echo open || echo closed")
check "while the API server's Service address is reachable (the probe itself works)" eq "$probe" open
finish
