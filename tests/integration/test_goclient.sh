#!/usr/bin/env bash
# The Go client module (clients/go) on the real plane: `go test ./...` with the unit tests
# (naming cross-checked against controller/sandbox/model/naming.c, exec argv, the listing
# script under the local tools and busybox, the touch throttle) and the integration tests
# (clients/go/sandbox/integration_test.go, clients/go/yaoruntime/integration_test.go),
# which run against this plane as a ServiceAccount bound to the yao-sandbox-editor role
# only, with the controller running: get-or-create (canonical name = pod name, 8
# concurrent calls make one Sandbox, a stranger's name is a conflict), list by user and
# chat through the CRD's selectable fields, WaitReady with the reason of a failure, exec
# (exit codes, streams kept apart, binary stdin, tty, workdir, env, timeout), a heartbeat
# that keeps a 4 s-idle session alive through a 10 s command, stop/start/remove, the file
# helpers, and the Yao runtime adapter. Each Go test is one line "ok"/"FAIL" here.
#
# kwok runs exec'd commands on this host (uid 1000, in $YAO_PLANE_DIR/exec-home), so the
# Sandboxes get spec.workspace.mountPath = a fresh directory there: relative paths of the
# file helpers land in it. GO_TEST_RUN=REGEXP runs only the matching Go tests.
. "$(dirname "$0")/lib.sh"
NS=yao-it-2            # a namespace of the plane's ClusterExec (kwok runs exec only there)
LOG=$BUILD_DIR/test-goclient.log
: > "$LOG"
T=$(mktemp -d)
on_exit "rm -rf '$T'"
ROOT=$YAO_PLANE_DIR/exec-home/go-it-$$
on_exit "rm -rf '$ROOT'"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

check "go toolchain present ($GO)" test -x "$GO"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0

# The client's identity: a ServiceAccount with the editor role, nothing more.
kubectl -n $NS create serviceaccount go-client >/dev/null
kubectl -n $NS create rolebinding go-client --clusterrole=yao-sandbox-editor \
    --serviceaccount=$NS:go-client >/dev/null
check "editor kubeconfig for the Go client" sa_kubeconfig "$T/go.kubeconfig" go-client $NS
mkdir -p "$ROOT" && chown 1000:1000 "$ROOT"

# The Go tests reach the plane through an exec credential plugin (client-go's exec
# authenticator, as with EKS, GKE or kubelogin): plugin.sh answers with the ServiceAccount's
# token, or as $PLUGIN_DIR/mode says (TestITExecPlugin: bad-first, cert, fail, expiring).
cat > "$T/plugin.sh" <<'SH'
#!/bin/sh
d=$PLUGIN_DIR
n=$(( $(cat "$d/runs" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/runs"
printf 'args=%s info=%s\n' "$*" "$KUBERNETES_EXEC_INFO" >> "$d/plugin.log"
api=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"apiVersion":"\([^"]*\)".*/\1/p')
life=$(cat "$d/lifetime" 2>/dev/null)
exp=
[ -n "$life" ] && exp=$(printf ',"expirationTimestamp":"%s"' "$(date -u -d "@$(( $(date +%s) + life ))" +%Y-%m-%dT%H:%M:%SZ)")
json() { awk '{ printf "%s\\n", $0 }' "$1"; }   # PEM: no quotes or backslashes, only newlines
case $(cat "$d/mode") in
    fail) echo "plugin: login required" >&2; exit 1 ;;
    cert) printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"clientCertificateData":"%s","clientKeyData":"%s"%s}}\n' \
              "$api" "$(json "$d/cert")" "$(json "$d/key")" "$exp"; exit 0 ;;
    bad-first) if [ "$n" = 1 ]; then tok=bogus-token-from-the-plugin; else tok=$(cat "$d/token"); fi ;;
    *) tok=$(cat "$d/token") ;;
esac
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s"%s}}\n' "$api" "$tok" "$exp"
SH
chmod 755 "$T/plugin.sh"
mkdir -p "$T/plugin-main" && echo token > "$T/plugin-main/mode"
sed -n 's/^ *user: {token: "\(.*\)"}$/\1/p' "$T/go.kubeconfig" > "$T/plugin-main/token"
cat > "$T/plugin.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$(cat "$YAO_PLANE_DIR/api-port")", certificate-authority: "$YAO_PLANE_DIR/pki/ca.crt"}
users:
- name: plugged
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $T/plugin.sh
      env: [{name: PLUGIN_DIR, value: "$T/plugin-main"}]
      interactiveMode: Never
contexts:
- name: local
  context: {cluster: local, user: plugged, namespace: $NS}
current-context: local
KC
whoami() { kubectl --kubeconfig "$T/plugin.kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username}'; }
check "the plugin kubeconfig works with kubectl (its token is the editor's)" eq "$(whoami)" "system:serviceaccount:$NS:go-client"

# go test -json → one line per test; a build failure counts as a failure.
summarise() {
    python3 -c '
import json, sys
res, out = {}, {}
for line in sys.stdin:
    try: ev = json.loads(line)
    except ValueError: print(line, end=""); continue
    t, a = ev.get("Test"), ev.get("Action")
    key = (ev.get("Package", "").split("/clients/go/")[-1], t)
    if a == "output":
        out.setdefault(key, []).append(ev.get("Output", ""))
        if ev.get("Output", "").startswith(("FAIL", "# ")) and not t: print(ev["Output"], end="")
    if t and a in ("pass", "fail", "skip"): res[key] = a
    if not t and a == "fail" and not any(k[0] == key[0] for k in res): res[(key[0], "(build)")] = "fail"
for (pkg, t), a in res.items():
    if a == "fail":
        print("".join(out.get((pkg, t), [])[-30:]), end="")
    print({"pass": "ok  ", "fail": "FAIL", "skip": "skip"}[a], pkg + ": " + t)
'
}
cd "$SRC_DIR/clients/go" || exit 1
YAO_GO_IT_KUBECONFIG=$T/plugin.kubeconfig YAO_GO_IT_SA_KUBECONFIG=$T/go.kubeconfig YAO_GO_IT_NAMESPACE=$NS \
    YAO_GO_IT_ROOT=$ROOT YAO_GO_IT_PLUGIN=$T/plugin.sh YAO_GO_IT_PKI=$YAO_PLANE_DIR/pki \
    "$GO" test -p=2 -count=1 -timeout 600s ${GO_TEST_RUN:+-run "$GO_TEST_RUN"} -json ./... 2>&1 | summarise > "$T/results"
cat "$T/results"
PASSED=$((PASSED + $(grep -c '^ok   ' "$T/results")))
FAILED=$((FAILED + $(grep -c '^FAIL ' "$T/results")))
check "go test reported tests" test -s "$T/results"
check "the Go tests authenticated through the exec plugin" test "$(cat "$T/plugin-main/runs" 2>/dev/null || echo 0)" -ge 1
finish
