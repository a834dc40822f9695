#!/usr/bin/env bash
# Kubeconfig auth as client-go does it (issue 26 item 1), with the yao-sandbox CLI (and the
# kube_exec driver exec_probe) against the plane:
#   - an exec credential plugin (a script here: it prints an ExecCredential with a
#     ServiceAccount token from `kubectl create token`, or the plane's system:masters client
#     certificate): list and exec through it; the plugin gets its args, env and
#     KUBERNETES_EXEC_INFO (interactive false, the cluster with its extension's config);
#     a token refused with 401 makes it run again (REST, and exec's WebSocket upgrade);
#     an expiring token is fetched again while a command runs; v1beta1 too; a failing
#     plugin is one line with the plugin's own complaint;
#   - impersonation: --as, --as-group and the kubeconfig's as/as-groups become
#     Impersonate-User/Group (the API server's answers show whose rights were used), for
#     REST and exec;
#   - a real HTTP CONNECT proxy (Debian's tinyproxy, on loopback): the cluster's proxy-url
#     for list and exec (tinyproxy's log shows each CONNECT); HTTPS_PROXY for a server
#     named "kubernetes" that only the proxy can resolve (its own /etc/hosts, in a mount
#     namespace), and NO_PROXY sending it direct; HTTPS_PROXY not used for 127.0.0.1 (as
#     Go does); a proxy that wants a password (407) and one that gets it; the controller
#     itself (lists, watches, writes) through proxy-url.
. "$(dirname "$0")/lib.sh"
NS=yao-it-3            # a namespace of the plane's ClusterExec (kwok runs exec only there)
LOG=$BUILD_DIR/test-auth.log
: > "$LOG"
Y=$BUILD_DIR/bin/yao-sandbox
PROBE=${EXEC_PROBE:-$BUILD_DIR/bin/exec_probe}
T=$(mktemp -d)
chmod 755 "$T"
on_exit "rm -rf '$T'"
PORT=$(cat "$YAO_PLANE_DIR/api-port")
PKI=$YAO_PLANE_DIR/pki
SERVER=https://127.0.0.1:$PORT
one_line() { [ "$(wc -l < "$1")" = 1 ] || { echo "    not one line: $(cat "$1")" >&2; return 1; }; }

check "CRD and manifests apply with kubectl" install_manifests
check "tinyproxy and jq are installed (tests/cluster/deps)" eval "command -v tinyproxy >/dev/null && command -v jq >/dev/null"
check "exec_probe is built" test -x "$PROBE"
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: work}
spec: {userID: alice, chatID: c1, lifecycle: long-running}
YAML
check "the Sandbox runs" eventually 30 phase_is $NS work Running
POD=$(kubectl -n $NS get sandbox work -o jsonpath='{.status.podName}')

# The plugin's identity: a ServiceAccount with the editor role in $NS only.
SA=plugin-user
kubectl -n $NS create serviceaccount $SA >/dev/null
kubectl -n $NS create rolebinding $SA --clusterrole=yao-sandbox-editor --serviceaccount=$NS:$SA >/dev/null
kubectl -n $NS create token $SA --duration=1h > "$T/token"
SAUSER=system:serviceaccount:$NS:$SA

# ---- the plugin ----------------------------------------------------------------------------
# plugin.sh: counts its runs, logs what it got, and answers by $T/mode: token (the SA's),
# bad-first (a bogus token on its first run, then the SA's), cert (the system:masters client
# certificate), fail (exit 1). $T/lifetime: seconds until expirationTimestamp ("" = none).
cat > "$T/plugin.sh" <<'SH'
#!/bin/sh
d=$(dirname "$0")
n=$(( $(cat "$d/runs" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/runs"
printf 'run=%s ppid=%s args=%s env=%s info=%s\n' "$n" "$PPID" "$*" "$PLUGIN_ENV" "$KUBERNETES_EXEC_INFO" >> "$d/plugin.log"
api=$(printf '%s' "$KUBERNETES_EXEC_INFO" | jq -r .apiVersion)
life=$(cat "$d/lifetime" 2>/dev/null)
exp=null
[ -n "$life" ] && exp="\"$(date -u -d "@$(( $(date +%s) + life ))" +%Y-%m-%dT%H:%M:%SZ)\""
case $(cat "$d/mode") in
    fail) echo "plugin: login required: run 'corp-login'" >&2; exit 1 ;;
    cert) jq -n --arg api "$api" --rawfile c "$PKI/admin-client.crt" --rawfile k "$PKI/admin-client.key" --argjson exp "$exp" \
              '{apiVersion: $api, kind: "ExecCredential", status: ({clientCertificateData: $c, clientKeyData: $k} + (if $exp then {expirationTimestamp: $exp} else {} end))}' ;;
    bad-first) if [ "$n" = 1 ]; then tok=bogus-token-from-the-plugin; else tok=$(cat "$d/token"); fi ;;
    *) tok=$(cat "$d/token") ;;
esac
[ -n "$tok" ] && jq -n --arg api "$api" --arg t "$tok" --argjson exp "$exp" \
    '{apiVersion: $api, kind: "ExecCredential", status: ({token: $t} + (if $exp then {expirationTimestamp: $exp} else {} end))}'
exit 0
SH
sed -i "s|\$PKI|$PKI|g" "$T/plugin.sh"
chmod 755 "$T/plugin.sh"
plugin_kubeconfig() {   # plugin_kubeconfig FILE APIVERSION
    cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: "$SERVER"
    certificate-authority: "$PKI/ca.crt"
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: yao-plane}
users:
- name: plugged
  user:
    exec:
      apiVersion: $2
      command: ./plugin.sh
      args: [--cluster, local]
      env: [{name: PLUGIN_ENV, value: from-kubeconfig}]
      interactiveMode: Never
      provideClusterInfo: true
contexts:
- name: local
  context: {cluster: local, user: plugged, namespace: $NS}
current-context: local
KC
}
plugin_kubeconfig "$T/plugin.kubeconfig" client.authentication.k8s.io/v1
reset_plugin() { echo "$1" > "$T/mode"; echo "${2:-}" > "$T/lifetime"; rm -f "$T/runs" "$T/plugin.log"; }
runs() { cat "$T/runs" 2>/dev/null || echo 0; }
PY=(env KUBECONFIG="$T/plugin.kubeconfig" "$Y")

reset_plugin token 3600
out=$("${PY[@]}" list 2>"$T/err")
check "plugin: list through an exec credential plugin" contains "$out" "work"
check "plugin: it ran once" eq "$(runs)" 1
info=$(sed -n 's/.* info=//p' "$T/plugin.log" | head -1)
check "plugin: it got its args and env" contains "$(head -1 "$T/plugin.log")" "args=--cluster local env=from-kubeconfig"
check "plugin: KUBERNETES_EXEC_INFO: v1, not interactive, the cluster and its extension's config" eq \
    "$(printf '%s' "$info" | jq -r '[.apiVersion, .kind, .spec.interactive, .spec.cluster.server, .spec.cluster.config.audience, (.spec.cluster["certificate-authority-data"] | length > 100)] | join(" ")')" \
    "client.authentication.k8s.io/v1 ExecCredential false $SERVER yao-plane true"
"${PY[@]}" -n default list >/dev/null 2>"$T/err"; rc=$?
check "plugin: the plugin's token is the identity (no list in another namespace)" eval \
    "[ $rc = 1 ] && grep -q '$SAUSER' '$T/err'"
out=$("${PY[@]}" exec work -- sh -c 'echo through-the-plugin' 2>"$T/err")
check "plugin: exec through the plugin's token" eq "$out" through-the-plugin

reset_plugin bad-first 3600
out=$("${PY[@]}" list 2>"$T/err")
check "plugin: a token refused with 401 makes it run again (REST)" eq "$(echo "$out" | grep -c '^work ')/$(runs)" "1/2"
reset_plugin bad-first 3600
out=$("$PROBE" --kubeconfig "$T/plugin.kubeconfig" -n $NS "$POD" -- sh -c 'echo exec-after-401' 2>"$T/err")
check "plugin: exec's upgrade refused with 401: the plugin runs again and the command runs" eq "$out/$(runs)" "exec-after-401/2"
[ "$out" = exec-after-401 ] || sed 's/^/    /' "$T/err"

# A credential valid for 2 s, a 7 s command in a 6 s-idle session (touched every 2 s):
# each touch after the expiry fetches it again, in the same process.
printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: brief}\nspec: {userID: bob, chatID: c1, lifecycle: session, idleTimeout: 6s}\n' |
    kubectl -n $NS apply -f - >/dev/null
check "plugin: the 6 s-idle session runs" eventually 30 phase_is $NS brief Running
reset_plugin token 2
out=$("${PY[@]}" exec brief -- sh -c 'sleep 7; echo done' 2>"$T/err")
refetched() {
    local ppids; ppids=$(sed -n 's/.* ppid=\([0-9]*\) .*/\1/p' "$T/plugin.log" | sort -u | wc -l)
    [ "$(runs)" -ge 3 ] && [ "$ppids" = 1 ] && return 0
    echo "    runs $(runs), by $ppids processes" >&2; return 1
}
check "plugin: an expiring credential is fetched again while the command runs" refetched
check "plugin: and the command finished" eq "$out" done

reset_plugin cert
check "plugin: a client certificate from the plugin (system:masters: any namespace)" eval \
    "\"\${PY[@]}\" -n default list >/dev/null 2>'$T/err'"
out=$("${PY[@]}" exec work -- echo cert-exec 2>"$T/err")
check "plugin: exec with the plugin's client certificate" eq "$out" cert-exec

plugin_kubeconfig "$T/beta.kubeconfig" client.authentication.k8s.io/v1beta1
reset_plugin token
out=$(KUBECONFIG="$T/beta.kubeconfig" "$Y" list 2>"$T/err")
check "plugin: client.authentication.k8s.io/v1beta1" eq "$(echo "$out" | grep -c '^work ')/$(jq -r .apiVersion <<<"$(sed -n 's/.* info=//p' "$T/plugin.log")")" \
    "1/client.authentication.k8s.io/v1beta1"

reset_plugin fail
"${PY[@]}" list >"$T/out" 2>"$T/err"; rc=$?
check "plugin: a failing plugin: exit 1" eq "$rc" 1
check "plugin: its complaint reaches the user" grep -q "login required: run 'corp-login'" "$T/err"
check "plugin: and the error names the plugin and its exit status" grep -q 'exec credential plugin "[^"]*plugin.sh" of user "plugged": exit status 1' "$T/err"

# ---- impersonation ---------------------------------------------------------------------------
A=("$Y" -n $NS)   # the plane's admin kubeconfig ($KUBECONFIG)
out=$("${A[@]}" --as "$SAUSER" list 2>"$T/err")
check "--as: list as the ServiceAccount" contains "$out" work
"$Y" -n default --as "$SAUSER" list >/dev/null 2>"$T/err"; rc=$?
check "--as: its rights, not the admin's (no list in default, the answer names it)" eval \
    "[ $rc = 1 ] && grep -q 'User \"$SAUSER\" cannot list' '$T/err'"
"$Y" -n default --as nobody-at-all list >/dev/null 2>"$T/err"; rc=$?
check "--as nobody: forbidden" eq "$rc" 1
check "--as nobody --as-group system:masters: allowed" eval \
    "'$Y' -n default --as nobody-at-all --as-group system:masters --as-group other list >/dev/null 2>&1"
out=$("${A[@]}" --as "$SAUSER" exec work -- echo impersonated 2>"$T/err")
check "--as: exec as the ServiceAccount (pods/exec through impersonation)" eq "$out" impersonated
"${A[@]}" --as-group system:masters list >/dev/null 2>"$T/err"; rc=$?
check "--as-group without --as (nor as in the kubeconfig): exit 1, says so" eval "[ $rc = 1 ] && grep -q 'needs --as' '$T/err'"
kubectl config view --raw --minify > "$T/as.kubeconfig"
python3 - "$T/as.kubeconfig" "$SAUSER" <<'PY'
import sys, yaml
kc = yaml.safe_load(open(sys.argv[1]))
kc["users"][0]["user"]["as"] = sys.argv[2]
yaml.safe_dump(kc, open(sys.argv[1], "w"))
PY
KUBECONFIG="$T/as.kubeconfig" "$Y" -n default list >/dev/null 2>"$T/err"; rc=$?
check "kubeconfig as: the same impersonation" eval "[ $rc = 1 ] && grep -q 'User \"$SAUSER\" cannot list' '$T/err'"
out=$(KUBECONFIG="$T/as.kubeconfig" "$Y" -n $NS exec work -- echo as-from-kubeconfig 2>"$T/err")
check "kubeconfig as: exec" eq "$out" as-from-kubeconfig

# ---- a real CONNECT proxy ---------------------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PROXY_PIDS=()
# start_proxy NAME [CONF-LINES] — tinyproxy on a free loopback port (in $PROXY_PORT),
# logging to $T/NAME/log; its /etc/hosts (a mount namespace of its own) says kubernetes =
# 127.0.0.1. Not in a $(...) subshell: the cleanup it registers must reach finish.
start_proxy() {
    local name=$1 conf=${2:-} port; port=$(free_port)
    mkdir -p "$T/$name" && chmod 777 "$T/$name" && : > "$T/$name/log" && chmod 666 "$T/$name/log"
    printf '127.0.0.1 localhost kubernetes\n' > "$T/$name/hosts"
    cat > "$T/$name/conf" <<CONF
User nobody
Group nogroup
Port $port
Listen 127.0.0.1
Timeout 600
LogFile "$T/$name/log"
LogLevel Connect
MaxClients 50
Allow 127.0.0.1
ConnectPort $PORT
DisableViaHeader Yes
$conf
CONF
    unshare -m --propagation private sh -c "mount --bind '$T/$name/hosts' /etc/hosts && exec tinyproxy -d -c '$T/$name/conf'" \
        >"$T/$name/out" 2>&1 &
    PROXY_PIDS+=($!)
    on_exit "kill $!"
    local i; for i in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    PROXY_PORT=$port
}
connects() { grep -c "CONNECT $1 HTTP" "$T/$2/log" 2>/dev/null; }
start_proxy plain; PP=$PROXY_PORT
check "tinyproxy listens on 127.0.0.1:$PP" eval "(exec 3<>/dev/tcp/127.0.0.1/$PP) 2>/dev/null"
kubectl config view --raw --minify > "$T/proxy.kubeconfig"
python3 - "$T/proxy.kubeconfig" "http://127.0.0.1:$PP" <<'PY'
import sys, yaml
kc = yaml.safe_load(open(sys.argv[1]))
kc["clusters"][0]["cluster"]["proxy-url"] = sys.argv[2]
yaml.safe_dump(kc, open(sys.argv[1], "w"))
PY
out=$(KUBECONFIG="$T/proxy.kubeconfig" "$Y" -n $NS list 2>"$T/err")
check "proxy-url: list through the proxy" contains "$out" work
check "proxy-url: the proxy's log shows the CONNECT to the API server" eval "[ \$(connects 127.0.0.1:$PORT plain) -ge 1 ]"
before=$(connects "127.0.0.1:$PORT" plain)
out=$(KUBECONFIG="$T/proxy.kubeconfig" "$Y" -n $NS exec work -- echo via-proxy 2>"$T/err")
check "proxy-url: exec through the proxy" eq "$out" via-proxy
# REST (get, touch) and the exec WebSocket: at least two more tunnels
check "proxy-url: exec's connections were tunnelled too" eval "[ \$(connects 127.0.0.1:$PORT plain) -ge $((before + 2)) ]"
out=$("$PROBE" --kubeconfig "$T/proxy.kubeconfig" -n $NS "$POD" -- echo probe-via-proxy 2>"$T/err")
check "proxy-url: kube_exec alone (exec_probe) through the proxy" eq "$out" probe-via-proxy

before=$(connects "127.0.0.1:$PORT" plain)
out=$(HTTPS_PROXY=http://127.0.0.1:$PP "$Y" -n $NS list 2>"$T/err")
check "HTTPS_PROXY: a loopback server is not proxied (as Go does)" eq "$(echo "$out" | grep -c '^work ')/$(connects 127.0.0.1:$PORT plain)" "1/$before"

# The controller through the proxy: its lists, watches and writes all tunnel.
kill_controller TERM
sa_kubeconfig "$T/ctl-proxy.kubeconfig" || true
python3 - "$T/ctl-proxy.kubeconfig" "http://127.0.0.1:$PP" <<'PY'
import sys, yaml
kc = yaml.safe_load(open(sys.argv[1]))
kc["clusters"][0]["cluster"]["proxy-url"] = sys.argv[2]
yaml.safe_dump(kc, open(sys.argv[1], "w"))
PY
before=$(connects "127.0.0.1:$PORT" plain)
CONTROLLER_KUBECONFIG=$T/ctl-proxy.kubeconfig start_controller "$LOG" --namespace $NS --max-running 0
printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: proxied}\nspec: {userID: pat, chatID: c1, lifecycle: long-running}\n' |
    kubectl -n $NS apply -f - >/dev/null
check "controller through proxy-url: a new Sandbox (seen by its watch) runs" eventually 40 phase_is $NS proxied Running
check "controller through proxy-url: its connections went through the proxy" eval "[ \$(connects 127.0.0.1:$PORT plain) -ge $((before + 3)) ]"

# A server named "kubernetes": only the proxy can resolve it (the certificate has the name).
sed "s|https://127.0.0.1:$PORT|https://kubernetes:$PORT|" "$KUBECONFIG" > "$T/named.kubeconfig"
out=$(KUBECONFIG="$T/named.kubeconfig" HTTPS_PROXY=http://127.0.0.1:$PP "$Y" -n $NS list 2>"$T/err")
check "HTTPS_PROXY: list through the proxy" contains "$out" work
check "HTTPS_PROXY: the proxy's log shows CONNECT kubernetes:$PORT" eval "[ \$(connects kubernetes:$PORT plain) -ge 1 ]"
out=$(KUBECONFIG="$T/named.kubeconfig" https_proxy=http://127.0.0.1:$PP "$Y" -n $NS exec work -- echo env-proxy 2>"$T/err")
check "https_proxy (lower case): exec through the proxy" eq "$out" env-proxy
KUBECONFIG="$T/named.kubeconfig" HTTPS_PROXY=http://127.0.0.1:$PP NO_PROXY=example.com,kubernetes "$Y" -n $NS list \
    >/dev/null 2>"$T/err"; rc=$?
check "NO_PROXY: the server is reached directly (and cannot be resolved here)" eval \
    "[ $rc = 1 ] && grep -qi 'resolve' '$T/err'"
check "NO_PROXY: one line" one_line "$T/err"

# A proxy that wants a password.
start_proxy auth "BasicAuth yao s3cret-pass"; AP=$PROXY_PORT
sed "s|proxy-url: http://127.0.0.1:$PP|proxy-url: http://127.0.0.1:$AP|" "$T/proxy.kubeconfig" > "$T/noauth.kubeconfig"
sed "s|proxy-url: http://127.0.0.1:$PP|proxy-url: http://yao:s3cret-pass@127.0.0.1:$AP|" "$T/proxy.kubeconfig" > "$T/auth.kubeconfig"
KUBECONFIG="$T/noauth.kubeconfig" "$Y" -n $NS list >/dev/null 2>"$T/err"; rc=$?
check "proxy auth: without the password the proxy refuses (exit 1, one line)" eval "[ $rc = 1 ] && [ \$(wc -l < '$T/err') = 1 ]"
"$PROBE" --kubeconfig "$T/noauth.kubeconfig" -n $NS "$POD" -- true >/dev/null 2>"$T/err"; rc=$?
check "proxy auth: exec says 407" eval "[ $rc = 125 ] && grep -q 'refused CONNECT to 127.0.0.1:$PORT: HTTP 407' '$T/err'"
out=$(KUBECONFIG="$T/auth.kubeconfig" "$Y" -n $NS list 2>"$T/err")
check "proxy auth: with user:password in proxy-url, list" contains "$out" work
out=$(KUBECONFIG="$T/auth.kubeconfig" "$Y" -n $NS exec work -- echo authed 2>"$T/err")
check "proxy auth: and exec" eq "$out" authed
sed "s|proxy-url: http://127.0.0.1:$PP|proxy-url: http://127.0.0.1:$(free_port)|" "$T/proxy.kubeconfig" > "$T/dead.kubeconfig"
t0=$(now_ms)
KUBECONFIG="$T/dead.kubeconfig" "$Y" -n $NS --start-timeout 5s list >/dev/null 2>"$T/err"; rc=$?
check "a proxy that is not there: exit 1 within 30 s" eval "[ $rc = 1 ] && [ \$(( \$(now_ms) - t0 )) -lt 30000 ]"
check "no Forbidden in the controller log" eval "! grep -q 'status=403\|Forbidden' '$LOG'"
finish
