#!/usr/bin/env bash
# The agent images the design ships (images/sandbox-claude), on the real node: built by
# images/build.sh (cached by buildah's layers), pushed to the plane's registry, made the
# default image of a SandboxClass (spec.image.default) whose hostAliases pin
# host.tai.internal at an address (the node's, where a Yao-like gRPC server listens:
# tests/bridge/grpcpeer). In a Sandbox of that class, as uid 1000 in /workspace: Claude
# Code's CLI runs (`claude --version`), Node.js and Python 3 are Debian's, and Claude Code's
# own MCP health check (`claude mcp list`, no Anthropic account needed) starts yao-bridge
# from the image's ~/.claude.json and connects: the server sees the bridge list its tools.
# The :full variant adds Go: `go version`, and a program built and run in the workspace.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-agents
CLASS=yao-node-agents
LOG=$BUILD_DIR/test-node-agents.log
: > "$LOG"
CLI=$BUILD_DIR/bin/yao-sandbox
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
REG_DIR=$YAO_PLANE_DIR/registry/plane
CLAUDE_VERSION=$(sed -n 's/^CLAUDE_CODE_VERSION=\${CLAUDE_CODE_VERSION:-\(.*\)}$/\1/p' "$SRC_DIR/images/build.sh")
GO_VERSION=$(sed -n 's/^GO_VERSION=\${YAO_IMAGE_GO_VERSION:-\(.*\)}$/\1/p' "$SRC_DIR/images/build.sh")
IMG=$NODE_REGISTRY/yao-sandbox/sandbox-claude

t0=$(now_ms)
check "images/build.sh agents push-agents (to the plane's registry)" sh -c "YAO_IMAGE_REGISTRY=$NODE_REGISTRY \
    YAO_IMAGE_REGISTRY_AUTHFILE=$REG_DIR/auth.json YAO_IMAGE_REGISTRY_CERT_DIR=$REG_DIR/ca \
    '$SRC_DIR/images/build.sh' agents push-agents >'$WORK/build.log' 2>&1 || { tail -30 '$WORK/build.log'; exit 1; }"
echo "    built and pushed in $(( ($(now_ms) - t0) / 1000 )) s"
grep '\[images\] size' "$WORK/build.log" | sed 's/^/    /'

# The Yao-like server on the node's address (the node's guard lets pods reach that port).
"$SRC_DIR/tests/bridge/grpcpeer/build.sh" "$WORK/grpcpeer" >/dev/null 2>&1 ||
    { check "the Yao test server builds" false; finish; exit 1; }
"$WORK/grpcpeer" -listen "$NODE_IP:0" -ready "$WORK/port" -token tok-agent -session sbx-agent \
    -record "$WORK/calls" 2>"$WORK/grpcpeer.err" &
gp=$!
on_exit "kill $gp"
check "the Yao test server listens on the node address" eventually 10 test -s "$WORK/port"
PORT=$(cat "$WORK/port")
check "the node's guard lets pods reach that port" node_allow_port "$PORT"

check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
kubectl delete sandboxclass $CLASS --ignore-not-found >/dev/null 2>&1
on_exit "kubectl delete sandboxclass $CLASS --ignore-not-found"
kubectl apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: $CLASS}
spec:
  image: {default: "$IMG:$IMAGE_TAG"}
  hostAliases: [{hostnames: [host.tai.internal], ip: "$NODE_IP"}]
  resources: {memory: {default: 1Gi}}
YAML
start_controller "$LOG" --namespace $NS --max-running 0 --workers 2
sandbox_env="[{name: YAO_IPC_MODE, value: grpc}, {name: YAO_GRPC_ADDR, value: 'host.tai.internal:$PORT'},
       {name: YAO_TOKEN, value: tok-agent}, {name: YAO_SANDBOX_ID, value: sbx-agent}]"
kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: claude}
spec:
  userID: agent-user
  chatID: claude
  className: $CLASS
  lifecycle: persistent
  env: $sandbox_env
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: claude-full}
spec:
  userID: agent-user
  chatID: claude-full
  className: $CLASS
  lifecycle: persistent
  image: "$IMG:$IMAGE_TAG-full"
  env: $sandbox_env
YAML
t0=$(now_ms)
check "a Sandbox of the class (its default image: sandbox-claude) runs on the real node" eventually 240 phase_is $NS claude Running
echo "    Running in $(( ($(now_ms) - t0) / 1000 )) s (pull included)"
check "  with the class's image" eq "$(kubectl -n $NS get pod "$(kubectl -n $NS get sandbox claude -o jsonpath='{.status.podName}')" -o jsonpath='{.spec.containers[0].image}')" "$IMG:$IMAGE_TAG"
x() { "$CLI" -n $NS exec "$1" -- sh -c "$2" 2>&1; }
check "claude --version runs: Claude Code $CLAUDE_VERSION" eq "$(x claude 'claude --version')" "$CLAUDE_VERSION (Claude Code)"
check "as uid 1000 in /workspace" eq "$(x claude 'echo $(id -u) $PWD')" "1000 /workspace"
check "Node.js and Python 3 are there" eval "x claude 'node --version && python3 --version' | tr '\n' ' ' | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+ Python 3\.[0-9]+'"
mcp=$(x claude 'claude mcp list')
echo "$mcp" | sed 's/^/    | /'
check "claude mcp list: the image's MCP server yao (yao-bridge) is connected" eval "grep -Eq '^yao: yao-bridge +- ✔ Connected' <<<\"\$mcp\""
check "  the Yao server saw yao-bridge list its tools with the token" eval \
    "grep '\"method\":\"/yao.Yao/MCPListTools\"' '$WORK/calls' | grep -q 'Bearer tok-agent'"

check "the :full variant runs" eventually 240 phase_is $NS claude-full Running
check "  go version: Go $GO_VERSION" eval "x claude-full 'go version' | grep -q '^go version go$GO_VERSION linux/amd64'"
check "  a Go program builds and runs in the workspace" eq "$(x claude-full 'mkdir -p /workspace/hello && cd /workspace/hello &&
    printf "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"hello from go\") }\n" > main.go &&
    GOFLAGS=-mod=mod go mod init example.com/hello >/dev/null 2>&1; go run . 2>&1')" "hello from go"
check "  and Claude Code is there too" eq "$(x claude-full 'claude --version')" "$CLAUDE_VERSION (Claude Code)"
finish
