#!/usr/bin/env bash
# The yao-sandbox CLI on the real plane, with the controller running on its ServiceAccount
# token: exec (exit codes, stdout/stderr kept apart, argv passed exactly, stdin, output not
# held up while a piped stdin is quiet, -w, -e, --timeout), touch, stop/start and exec
# waking a stopped sandbox with the same workspace claim, get/list with filters, the file
# helpers (write/read, ls, stat, mkdir, rm, cp in and out of files and trees, 5 MB
# binaries compared by sha256, names with spaces and unicode, an escaping symlink rejected
# on the way out), the error contract (one line, exit 1 for runtime errors, 2 for usage
# errors), and what a real kubelet showed: exec -t's terminal size and SIGWINCH, the exit
# code of a command that never reads its stdin (20 runs), cp's destination checked first
# and tar's own reason, awkward names through ls/stat, touches while a command runs, and
# exit 75 with the sandbox left stopped when it is paused under a command.
#
# kwok runs exec'd commands on this host in $YAO_PLANE_DIR/exec-home, not in a container,
# so there is no /workspace: every file helper gets --root $WS, a directory relative to
# that working directory (unique per run).
. "$(dirname "$0")/lib.sh"
NS=yao-it-3
LOG=$BUILD_DIR/test-cli.log
: > "$LOG"
Y=$BUILD_DIR/bin/yao-sandbox
WS=cli-it-$$
T=$(mktemp -d)
on_exit "rm -rf '$T'"
on_exit "rm -rf '$YAO_PLANE_DIR/exec-home/$WS'"
ysb() { "$Y" -n $NS --root "$WS" --start-timeout 60s "$@"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
quiet() { "$@" >/dev/null; }
one_line() { [ "$(wc -l < "$1")" = 1 ] || { echo "    not one line: $(cat "$1")" >&2; return 1; }; }

check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0

kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: work}
spec: {userID: alice, chatID: c1, lifecycle: long-running}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: chat}
spec: {userID: bob, chatID: c2, lifecycle: session}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: odd}
spec: {userID: "Odd User@example.com", chatID: c3, lifecycle: persistent}
YAML
check "the Sandbox reaches phase Running" eventually 30 phase_is $NS work Running

# ---- exec --------------------------------------------------------------------------------
out=$("$Y" -n $NS exec work -- sh -c 'echo to-stdout; echo to-stderr >&2' 2>"$T/err")
check "exec: stdout is ours" eq "$out" to-stdout
check "exec: stderr is ours, separately" eq "$(cat "$T/err")" to-stderr
"$Y" -n $NS exec work -- true; check "exec: exit code 0" eq $? 0
"$Y" -n $NS exec work -- sh -c 'exit 3'; check "exec: exit code 3" eq $? 3
"$Y" -n $NS exec work -- sh -c 'exit 42'; check "exec: exit code 42" eq $? 42
out=$("$Y" -n $NS exec work -- printf '[%s]' 'a b' "it's" '&&' '$HOME' '"q"' 'é ✓' '' '*' ';' '%20')
check "exec: argv reaches the command exactly" eq "$out" "[a b][it's][&&][\$HOME][\"q\"][é ✓][][*][;][%20]"
# the first word after SANDBOX starts the command even without --, and its flags stay its own
check "exec: flags after the command belong to it" eq "$("$Y" -n $NS exec work printf '%s' -n)" "-n"
head -c 3000000 /dev/urandom > "$T/stdin.bin"
"$Y" -n $NS exec -i work -- cat < "$T/stdin.bin" > "$T/stdout.bin"
check "exec -i: 3 MB of binary stdin come back unchanged" eq "$(sha "$T/stdout.bin")" "$(sha "$T/stdin.bin")"
check "exec -i: the command sees EOF" eq "$(printf 'a\nb\nc\n' | "$Y" -n $NS exec -i work -- wc -l)" 3
# A pipe that goes quiet: the answer to the first line must come while we still wait for
# the second (stdin is read off exec's event loop), not once the next input arrives.
t0=$(now_ms)
(echo first; sleep 2; now_ms > "$T/second_at"; echo second) |
    "$Y" -n $NS exec -i work -- sh -c 'read a; echo "got $a"; read b; echo "got $b"' |
    while IFS= read -r line; do echo "$(now_ms) $line"; done > "$T/stamped"
first_at=$(awk '$2 == "got" && $3 == "first" { print $1 }' "$T/stamped")
answered_early() {
    [ -n "$first_at" ] && [ "$first_at" -lt "$(cat "$T/second_at")" ] && [ $((first_at - t0)) -lt 1500 ] && return 0
    echo "    start $t0, \"second\" written at $(cat "$T/second_at"), output: $(tr '\n' '|' < "$T/stamped")" >&2
    return 1
}
check "exec -i: output comes while stdin is quiet (\"got first\" < 1.5 s, before \"second\" is written)" answered_early
check "exec -i: a quiet pipe's later input still arrives" eq "$(cut -d' ' -f2- "$T/stamped" | tr '\n' '|')" "got first|got second|"
ysb exec work -- mkdir -p "$WS/a dir"
out=$("$Y" -n $NS exec -w "$WS/a dir" -e A=1 -e 'B=x y' -e 'C=' work -- sh -c 'pwd; printf "%s|%s|%s" "$A" "$B" "${C-unset}"')
check "exec -w: runs in the directory (spaces kept)" eq "$(echo "$out" | head -1)" "$YAO_PLANE_DIR/exec-home/$WS/a dir"
check "exec -e: variables set exactly" eq "$(echo "$out" | tail -1)" "1|x y|"
t0=$(now_ms)
"$Y" -n $NS exec --timeout 1s work -- sleep 10 2>"$T/err"; rc=$?
check "exec --timeout: gives up with exit 1" eq $rc 1
check "exec --timeout: within 5 s" test $(( $(now_ms) - t0 )) -lt 5000
check "exec --timeout: says so in one line" one_line "$T/err"

# ---- touch -------------------------------------------------------------------------------
ann() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.metadata.annotations.sandbox\.yaoapps\.com/last-used-at}'; }
before=$(ann work)
sleep 1.1
"$Y" -n $NS touch work; check "touch: exit 0" eq $? 0
after=$(ann work)
check "touch: last-used-at changes" test "$before" != "$after"
within() { local t; t=$(date -d "$1" +%s) && [ $(( $(date +%s) - t )) -le 5 ] && [ $(( t - $(date +%s) )) -le 5 ]; }
check "touch: last-used-at is now (RFC 3339)" within "$after"
sleep 1.1
"$Y" -n $NS exec work -- true
check "exec marks the sandbox used" test "$(ann work)" != "$after"

# ---- stop / start / exec wakes it ----------------------------------------------------------
CLAIM=$(kubectl -n $NS get sandbox work -o jsonpath='{.status.workspaceClaim}')
PV=$(kubectl -n $NS get pvc "$CLAIM" -o jsonpath='{.spec.volumeName}')
check "stop --wait: exit 0" quiet "$Y" -n $NS stop work --wait
check "stop: phase Stopped" phase_is $NS work Stopped
no_pod() { [ "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/name=work --no-headers 2>/dev/null | wc -l)" = 0 ]; }
check "stop: no pod" eventually 20 no_pod
check "stop: spec.paused is true" eq "$(kubectl -n $NS get sandbox work -o jsonpath='{.spec.paused}')" true
out=$("$Y" -n $NS --start-timeout 60s exec work -- echo woke-up)
check "exec on a stopped sandbox starts it and runs" eq "$out" woke-up
check "and it is Running, unpaused" eq "$(sandbox_phase $NS work)/$(kubectl -n $NS get sandbox work -o jsonpath='{.spec.paused}')" Running/false
check "the workspace claim is reused" eq "$(kubectl -n $NS get sandbox work -o jsonpath='{.status.workspaceClaim}')" "$CLAIM"
check "and bound to the same volume" eq "$(kubectl -n $NS get pvc "$CLAIM" -o jsonpath='{.spec.volumeName}')" "$PV"
"$Y" -n $NS stop work >/dev/null
check "stop (no wait) then start --wait: Running" quiet "$Y" -n $NS --start-timeout 60s start work --wait
check "start: the claim is still the same" eq "$(kubectl -n $NS get sandbox work -o jsonpath='{.status.workspaceClaim}')" "$CLAIM"

# ---- get / list --------------------------------------------------------------------------
check "other sandboxes Running" eventually 30 phase_is $NS chat Running
check "the persistent one too" eventually 30 phase_is $NS odd Running
out=$("$Y" -n $NS get work)
check "get: user" contains "$out" "User:         alice"
check "get: lifecycle" contains "$out" "Lifecycle:    long-running"
check "get: phase" contains "$out" "Phase:        Running"
check "get: pod" contains "$out" "Pod:          $(kubectl -n $NS get sandbox work -o jsonpath='{.status.podName}')"
check "get -o json is the object" eq "$("$Y" -n $NS get work -o json | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["kind"], o["spec"]["userID"])')" "Sandbox alice"
check "get -o yaml is the object" eq "$("$Y" -n $NS get work -o yaml | python3 -c 'import yaml,sys; o=yaml.safe_load(sys.stdin); print(o["metadata"]["name"], o["status"]["phase"])' 2>&1)" "work Running"
names() { "$Y" -n $NS list "$@" | awk 'NR > 1 {print $1}' | sort | tr '\n' ' '; }
check "list: header" eq "$("$Y" -n $NS list | head -1 | tr -s ' ')" "NAME USER CHAT LIFECYCLE PHASE POD READY REASON AGE"
check "list: all three" eq "$(names)" "chat odd work "
check "list --user alice" eq "$(names --user alice)" "work "
check "list --user with a non-label user ID" eq "$(names --user 'Odd User@example.com')" "odd "
check "list --lifecycle session" eq "$(names --lifecycle session)" "chat "
"$Y" -n $NS stop chat --wait >/dev/null
check "list --phase Stopped" eq "$(names --phase Stopped)" "chat "
check "list --phase running (any case) --lifecycle persistent" eq "$(names --phase running --lifecycle persistent)" "odd "
check "list -A has a NAMESPACE column" eq "$("$Y" list -A --user alice | awk -v ns=$NS 'NR == 1 {h = $1} $1 == ns {print h ":" $1 "/" $2}')" "NAMESPACE:$NS/work"
# READY and REASON as kubectl get ysb shows them (the Ready condition), for every Sandbox
ready_cols() { "$Y" -n $NS list | awk 'NR > 1 {print $1, $(NF - 2), $(NF - 1)}' | sort; }   # USER may hold spaces
kubectl_ready() { kubectl -n $NS get ysb --no-headers -o custom-columns='N:.metadata.name,R:.status.conditions[?(@.type=="Ready")].status,W:.status.conditions[?(@.type=="Ready")].reason' | awk '{print $1, $2, $3}' | sort; }
check "list: READY and REASON are the Ready condition's, as kubectl shows them" eq "$(ready_cols)" "$(kubectl_ready)"
check "list: a stopped one reads False with its reason" eq "$(ready_cols | awk '$1 == "chat" {print $2, $3}')" \
    "False $(sandbox_reason $NS chat)"
check "list -o name: as kubectl -o name" eq "$("$Y" -n $NS list -o name | sort)" "$(kubectl -n $NS get ysb -o name | sort)"
check "get -o name" eq "$("$Y" -n $NS get work -o name)" "sandbox.sandbox.yaoapps.com/work"
check "list --no-headers: the rows only" eq "$("$Y" -n $NS list --no-headers | awk '{print $1}' | sort | tr '\n' ' ')" "chat odd work "
kubectl -n $NS label ysb work team=alpha tier=web >/dev/null && kubectl -n $NS label ysb odd team=beta >/dev/null
check "list -l team=alpha" eq "$(names -l team=alpha)" "work "
check "list -l 'team in (alpha,beta)'" eq "$(names -l 'team in (alpha,beta)')" "odd work "
check "list -l '!team' (combined with --lifecycle)" eq "$(names -l '!team' --lifecycle session)" "chat "
check "list -l team,tier!=web: none (stderr says so)" eq "$("$Y" -n $NS list -l 'team,tier!=web' --user alice 2>&1)" "No sandboxes found in namespace $NS."
"$Y" -n $NS list -l 'team in (' >/dev/null 2>"$T/err"; rc=$?
check "list -l with a bad selector: exit 1, the API server's reason in one line" eval \
    "[ $rc = 1 ] && grep -q 'with -l' '$T/err' && [ \$(wc -l < '$T/err') = 1 ]"
check "list -o json is a List" eq "$("$Y" -n $NS list -o json --user bob | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["kind"], [i["metadata"]["name"] for i in o["items"]])')" "List ['chat']"

# ---- create (get-or-create by user and chat), list by user and chat ------------------------
# As a client would be: a ServiceAccount with the editor role in $NS and nothing more. It
# lives in yao-sandbox-system, whose ServiceAccounts the plane's audit log records, so the
# requests the CLI sent can be read back.
AUDIT=$YAO_PLANE_DIR/logs/audit.log
kubectl -n yao-sandbox-system create serviceaccount yao-cli-it >/dev/null
on_exit "kubectl -n yao-sandbox-system delete serviceaccount yao-cli-it --ignore-not-found >/dev/null 2>&1"
kubectl -n $NS create rolebinding yao-cli-it --clusterrole=yao-sandbox-editor \
    --serviceaccount=yao-sandbox-system:yao-cli-it >/dev/null
check "editor kubeconfig for the CLI" sa_kubeconfig "$T/editor.kubeconfig" yao-cli-it yao-sandbox-system
ye() { "$Y" --kubeconfig "$T/editor.kubeconfig" -n $NS --start-timeout 60s "$@"; }
editor_bound() { [ "$(kubectl --kubeconfig "$T/editor.kubeconfig" -n $NS auth can-i create sandboxes.sandbox.yaoapps.com)" = yes ]; }
eventually 10 editor_bound
check "editor role: may read Events in its namespace (get, list, watch)" \
    eq "$(for v in get list watch; do kubectl --kubeconfig "$T/editor.kubeconfig" -n $NS auth can-i $v events; done | tr '\n' /)" "yes/yes/yes/"
check "editor role: kubectl get events works with its token" quiet kubectl --kubeconfig "$T/editor.kubeconfig" -n $NS get events
check "editor role: but may not write Events" eq "$(kubectl --kubeconfig "$T/editor.kubeconfig" -n $NS auth can-i create events)" no

CU="Carol Ng $$" CC="Chat #1 / ünïcode"
pids=()
for i in 1 2 3 4 5 6 7 8; do ( ye create --user "$CU" --chat "$CC" > "$T/create.$i" 2>"$T/create-err.$i"; echo $? > "$T/create-rc.$i" ) & pids+=($!); done
wait "${pids[@]}"   # not a bare wait: the controller runs in the background too
CN=$(cat "$T/create.1")
check "create: 8 concurrent calls all exit 0" eq "$(cat "$T"/create-rc.* | sort -u | tr '\n' ' ')" "0 "
check "create: and all print the same one name" eq "$(cat "$T"/create.[1-8] | sort -u | wc -l)/$(wc -l < "$T/create.1")" "1/1"
check "create: the name is a hashed yao-sb- name (the IDs are not plain)" eval '[[ "$CN" =~ ^yao-sb-carol-ng-[0-9]+-chat-1-n-code-[0-9a-f]{8}$ ]]'
check "create: nothing on stderr (not a terminal)" eq "$(cat "$T"/create-err.*)" ""
check "create: one Sandbox for the pair" eq "$(kubectl -n $NS get ysb --field-selector "spec.userID=$CU" -o name)" "sandbox.sandbox.yaoapps.com/$CN"
UID1=$(kubectl -n $NS get ysb "$CN" -o jsonpath='{.metadata.uid}')
sleep 2.5   # the audit log is written in 1 s batches
posts() { # NAME: the status codes of the editor's POSTs of Sandboxes that created NAME or collided with it
    python3 - "$AUDIT" "$1" <<'PY'
import json, sys
codes = []
for line in open(sys.argv[1]):
    e = json.loads(line)
    o = e.get("objectRef") or {}
    if (e.get("user", {}).get("username") == "system:serviceaccount:yao-sandbox-system:yao-cli-it"
            and e.get("verb") == "create" and o.get("resource") == "sandboxes" and o.get("name") == sys.argv[2]):
        codes.append(e.get("responseStatus", {}).get("code"))
print(" ".join(str(c) for c in sorted(codes)))
PY
}
one_201() { local p; p=$(posts "$CN"); [[ "$p" =~ ^201( 409)*$ ]] || { echo "    POST codes: '$p'" >&2; return 1; }; }
check "create: the audit log shows one POST that created it (201), any other one refused (409)" one_201
out=$(ye create --user "$CU" --chat "$CC" --lifecycle persistent --idle-timeout 5m); rc=$?
check "create again: exit 0, the same name" eq "$rc/$out" "0/$CN"
check "create again: the same Sandbox (UID), left as it was" \
    eq "$(kubectl -n $NS get ysb "$CN" -o jsonpath='{.metadata.uid}/{.spec.lifecycle}/{.spec.idleTimeout}')" "$UID1//"
out=$(ye create --user "$CU" --chat "$CC" --wait); rc=$?
check "create --wait: exit 0 once Running" eq "$rc/$out/$(sandbox_phase $NS "$CN")" "0/$CN/Running"
check "create: no lifecycle given, the controller's default is in force (status.lifecycle)" \
    eq "$(kubectl -n $NS get ysb "$CN" -o jsonpath='{.status.lifecycle}')" "session"
check "get: shows the lifecycle in force" contains "$(ye get "$CN")" "Lifecycle:    session"
check "create: the Sandbox has the name of its pod" eq "$(kubectl -n $NS get ysb "$CN" -o jsonpath='{.status.podName}')" "$CN"
out=$(ye create --user frank --chat c1 --lifecycle long-running --image busybox:1.36 --idle-timeout 90s)
check "create: a plain pair gets the plain name yao-sb-USER-CHAT" eq "$out" yao-sb-frank-c1
check "create: the flags shape the new Sandbox" \
    eq "$(kubectl -n $NS get ysb yao-sb-frank-c1 -o jsonpath='{.spec.userID}/{.spec.chatID}/{.spec.lifecycle}/{.spec.image}/{.spec.idleTimeout}')" \
    "frank/c1/long-running/busybox:1.36/90s"

# list --user / --chat: selected by the API server (the audit log shows the field selector)
enames() { ye list "$@" | awk 'NR > 1 {print $1}' | sort | tr '\n' ' '; }
check "kubectl: spec.userID is a selectable field" eq "$(kubectl -n $NS get ysb --field-selector spec.userID=alice -o name)" "sandbox.sandbox.yaoapps.com/work"
check "list --user (editor)" eq "$(enames --user "$CU")" "$CN "
check "list --chat" eq "$(enames --chat c1)" "work yao-sb-frank-c1 "
check "list --user --chat" eq "$(enames --user frank --chat c1)" "yao-sb-frank-c1 "
check "list --user of nobody: no rows" eq "$(enames --user "nobody,=\\x")" ""
sleep 2.5
selectors() { # the field selectors of the editor's lists of Sandboxes, decoded, one a line
    python3 - "$AUDIT" <<'PY'
import json, sys, urllib.parse
for line in open(sys.argv[1]):
    e = json.loads(line)
    if (e.get("user", {}).get("username") == "system:serviceaccount:yao-sandbox-system:yao-cli-it"
            and e.get("verb") == "list" and (e.get("objectRef") or {}).get("resource") == "sandboxes"):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(e["requestURI"]).query)
        print(q.get("fieldSelector", ["<none>"])[0])
PY
}
sels=$(selectors)
check "list --user sends fieldSelector spec.userID=U" contains "$sels" "spec.userID=$CU"
check "list --chat sends fieldSelector spec.chatID=C" contains "$sels" "spec.chatID=c1"
check "list --user --chat sends both" contains "$sels" "spec.userID=frank,spec.chatID=c1"
check "a selector value with , = \\ is escaped" contains "$sels" 'spec.userID=nobody\,\=\\x'

# A Sandbox of the canonical name that belongs to another pair: NameConflict naming both.
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: yao-sb-gina-c7}
spec: {userID: mallory, chatID: c7, lifecycle: persistent}
YAML
ye create --user gina --chat c7 >"$T/out" 2>"$T/err"; rc=$?
check "create on a name taken by another pair: exit 1, nothing on stdout" eq "$rc/$(cat "$T/out")" "1/"
check "  one line" one_line "$T/err"
check "  NameConflict naming both pairs" eq "$(cat "$T/err")" \
    "yao-sandbox: NameConflict: sandbox \"yao-sb-gina-c7\" in namespace \"$NS\" belongs to (user \"mallory\", chat \"c7\"), not to (user \"gina\", chat \"c7\")"
check "  and the other pair's Sandbox is untouched" eq "$(kubectl -n $NS get ysb yao-sb-gina-c7 -o jsonpath='{.spec.userID}')" mallory

# A hand-made Sandbox of the pair (another name, e.g. applied from a manifest) is the pair's
# Sandbox: create finds it by spec.userID/spec.chatID and makes no second one.
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: by-hand}
spec: {userID: hank, chatID: c8, lifecycle: persistent}
YAML
check "a hand-made Sandbox owns pod yao-sb-hank-c8" eventually 30 eval '[ "$(kubectl -n $NS get ysb by-hand -o jsonpath={.status.podName})" = yao-sb-hank-c8 ]'
ye create --user hank --chat c8 --wait >"$T/out" 2>"$T/err"; rc=$?
check "create of that pair finds it: exit 0, its name" eq "$rc/$(cat "$T/out")" "0/by-hand"
check "  and makes no second Sandbox" eq "$(kubectl -n $NS get ysb -o name | grep -c 'hank-c8\|by-hand')" 1

# --wait that does not get there says why: a stranger's pod already has the pod name, so
# the controller cannot make the Sandbox's (Ready=False, NameConflict).
kubectl -n $NS run yao-sb-hank-c9 --image=busybox --restart=Never >/dev/null
ye create --user hank --chat c9 --wait >"$T/out" 2>"$T/err"; rc=$?
check "create --wait that cannot start: exit 1, the name printed all the same" eq "$rc/$(cat "$T/out")" "1/yao-sb-hank-c9"
check "  one line with the Ready reason and message" contains "$(cat "$T/err")" "cannot start: NameConflict: "
check "  one line" one_line "$T/err"

# A Sandbox being deleted is waited out and created anew (a finalizer holds it meanwhile).
kubectl -n $NS patch ysb yao-sb-frank-c1 --type merge -p '{"metadata":{"finalizers":["yao-it/hold"]}}' >/dev/null
OLD=$(kubectl -n $NS get ysb yao-sb-frank-c1 -o jsonpath='{.metadata.uid}')
kubectl -n $NS delete ysb yao-sb-frank-c1 --wait=false >/dev/null
( sleep 2; kubectl -n $NS patch ysb yao-sb-frank-c1 --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null ) &
releaser=$!
t0=$(now_ms)
out=$(ye create --user frank --chat c1); rc=$?
wait $releaser
check "create while the Sandbox is being deleted: exit 0, the same name" eq "$rc/$out" "0/yao-sb-frank-c1"
check "  after the old one was gone (>= 2 s)" test $(( $(now_ms) - t0 )) -ge 1900
NEW=$(kubectl -n $NS get ysb yao-sb-frank-c1 -o jsonpath='{.metadata.uid}')
check "  a new Sandbox (another UID), not being deleted" eq "$([ -n "$NEW" ] && [ "$NEW" != "$OLD" ] && echo new)/$(kubectl -n $NS get ysb yao-sb-frank-c1 -o jsonpath='{.metadata.deletionTimestamp}')" "new/"
lc_in_force() { [ "$(kubectl -n $NS get ysb yao-sb-frank-c1 -o jsonpath='{.spec.lifecycle}/{.status.lifecycle}')" = "/session" ]; }
check "  with the flags' defaults again (none written; session in force)" eventually 20 lc_in_force

ye create --chat c1 2>"$T/err"; rc=$?
check "create without --user: exit 2, one line" eq "$rc/$(wc -l < "$T/err")" "2/1"
ye create --user u --chat c --lifecycle forever 2>"$T/err"; rc=$?
check "create with an unknown lifecycle: exit 2" eq $rc 2
ye create --user u --chat c --idle-timeout soon 2>"$T/err"; rc=$?
check "create with a bad --idle-timeout: exit 2" eq $rc 2
for n in "$CN" yao-sb-frank-c1 yao-sb-hank-c8 yao-sb-gina-c7 by-hand; do kubectl -n $NS delete ysb "$n" --wait=false >/dev/null 2>&1; done

# ---- file helpers ------------------------------------------------------------------------
NAME="dir one/file with spaces ✓.txt"
printf 'hello\nworld ✓\n' | ysb write work "$NAME" -p
check "write -p: exit 0" eq $? 0
check "read gives back what write wrote" eq "$(ysb read work "$NAME")" "$(printf 'hello\nworld ✓')"
head -c 5242880 /dev/urandom > "$T/big.bin"
ysb write work big.bin < "$T/big.bin"
ysb read work big.bin > "$T/big.read"
check "write/read: 5 MB binary round trip (sha256)" eq "$(sha "$T/big.read")" "$(sha "$T/big.bin")"
check "cp in: 5 MB file" ysb cp "$T/big.bin" work:big-cp.bin
check "cp in: same bytes in the sandbox" eq "$(ysb read work big-cp.bin | sha256sum | cut -d' ' -f1)" "$(sha "$T/big.bin")"
check "cp out: 5 MB file" ysb cp work:big-cp.bin "$T/big.out"
check "cp out: same bytes here (sha256)" eq "$(sha "$T/big.out")" "$(sha "$T/big.bin")"

out=$(ysb ls work)
check "ls: names, one per line, sorted" eq "$(echo "$out" | tr '\n' '|')" "a dir|big-cp.bin|big.bin|dir one|"
check "ls -l: mode and size" contains "$(ysb ls work -l)" "-rw-r--r--      5242880"
check "ls PATH" eq "$(ysb ls work "dir one")" "file with spaces ✓.txt"
check "ls -o json: FileInfo objects" eq "$(ysb ls work -o json | python3 -c 'import json,sys; print([(f["name"], f["isDir"], f["size"] if not f["isDir"] else 0) for f in json.load(sys.stdin)])')" "[('a dir', True, 0), ('big-cp.bin', False, 5242880), ('big.bin', False, 5242880), ('dir one', True, 0)]"
check "stat: type and size" eq "$(ysb stat work big.bin | grep -E '^(Type|Size):' | tr -s ' ' | tr '\n' '|')" "Type: file|Size: 5242880|"
check "stat -o json" eq "$(ysb stat work "$NAME" -o json | python3 -c 'import json,sys; f=json.load(sys.stdin); print(f["name"], f["size"], f["type"], f["mode"])')" "file with spaces ✓.txt 16 file 0644"
check "mkdir" ysb mkdir work "new dir"
check "mkdir: it is a directory" eq "$(ysb stat work "new dir" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["isDir"])')" True
ysb mkdir work "new dir" 2>"$T/err"; rc=$?
check "mkdir of an existing directory fails (exit 1)" eq $rc 1
check "mkdir: the error is one line" one_line "$T/err"
check "mkdir -p of an existing directory succeeds" ysb mkdir -p work "new dir/a/b"
ysb rm work "new dir" 2>"$T/err"; rc=$?
check "rm of a directory without -r fails" eq $rc 1
check "rm -r removes a tree" ysb rm -r work "new dir"
ysb stat work "new dir" 2>"$T/err"; rc=$?
check "stat of a removed path: exit 1" eq $rc 1
check "stat of a removed path: one line naming it" eq "$(grep -c "new dir.*No such file or directory" "$T/err")" 1
check "rm -f of a missing file succeeds" ysb rm -f work "never existed"

# a tree: nested directories, unicode and spaces, an executable, a symlink, an empty dir
mkdir -p "$T/tree/sub dir/deeper" "$T/tree/empty"
echo one > "$T/tree/sub dir/deeper/héllo wörld.txt"
printf '#!/bin/sh\necho hi\n' > "$T/tree/run.sh"; chmod 755 "$T/tree/run.sh"
head -c 100000 /dev/urandom > "$T/tree/sub dir/data.bin"
ln -s "sub dir/data.bin" "$T/tree/link"
check "cp in: a directory tree" ysb cp "$T/tree" work:tree-copy
check "cp in: tree lands under the new name" eq "$(ysb ls work tree-copy | tr '\n' '|')" "empty|link|run.sh|sub dir|"
check "cp out: the tree back" ysb cp work:tree-copy "$T/tree-back"
check "cp out: identical tree (content, links)" diff -r --no-dereference "$T/tree" "$T/tree-back"
check "cp out: the executable keeps its mode" test -x "$T/tree-back/run.sh"
mkdir "$T/into"
check "cp out into an existing directory" ysb cp work:tree-copy "$T/into"
check "  lands as DIR/NAME" test -f "$T/into/tree-copy/sub dir/deeper/héllo wörld.txt"
check "cp in into an existing sandbox directory" ysb cp "$T/tree" "work:a dir"
check "  lands as DIR/NAME" eq "$(ysb read work "a dir/tree/sub dir/deeper/héllo wörld.txt")" one

# an escaping symlink in the sandbox is refused on the way out
ysb exec work -- sh -c "mkdir -p '$WS/trap' && ln -sfn /etc '$WS/trap/etc-link' && echo ok > '$WS/trap/fine.txt'" >/dev/null
ysb cp work:trap "$T/trap" 2>"$T/err"; rc=$?
check "cp out of an escaping symlink fails (exit 1)" eq $rc 1
check "  the entry is reported" contains "$(cat "$T/err")" 'rejected entry "trap/etc-link"'
check "  and not created" test ! -e "$T/trap/etc-link" -a ! -L "$T/trap/etc-link"
check "  the safe entries are extracted" eq "$(cat "$T/trap/fine.txt")" ok

# ---- errors ------------------------------------------------------------------------------
"$Y" -n $NS exec no-such-sandbox -- true 2>"$T/err"; rc=$?
check "unknown sandbox: exit 1" eq $rc 1
check "unknown sandbox: one line" one_line "$T/err"
check "unknown sandbox: names it" contains "$(cat "$T/err")" '"no-such-sandbox" not found'
"$Y" -n $NS exec 2>"$T/err"; rc=$?
check "exec without arguments: exit 2" eq $rc 2
check "  one line with a usage hint" contains "$(cat "$T/err")" "yao-sandbox exec --help"
"$Y" -n $NS exec work 2>"$T/err"; rc=$?
check "exec without a command: exit 2" eq $rc 2
ysb read work 2>"$T/err"; rc=$?
check "read without PATH: exit 2" eq $rc 2
check "  one line" one_line "$T/err"
ysb read work missing.txt 2>"$T/err"; rc=$?
check "read of a missing file: exit 1" eq $rc 1
check "  one line naming it" contains "$(cat "$T/err")" "missing.txt: No such file or directory"
"$Y" -n $NS frobnicate 2>"$T/err"; rc=$?
check "unknown command: exit 2" eq $rc 2
"$Y" -n $NS list --bogus 2>"$T/err"; rc=$?
check "unknown flag: exit 2" eq $rc 2
# ---- what a real kubelet showed (kwok had hidden it) ------------------------------------
# exec -t: the program sees our terminal's size, and a new one after a SIGWINCH. The CLI
# runs on a pseudo-terminal of a known size (pty_run.py); the short sleeps let the server
# apply the size as the command starts.
out=$(python3 "$IT_DIR/pty_run.py" 33 120 --timeout 30 -- "$Y" -n $NS exec -i -t work -- sh -c 'sleep 0.3; stty size; sleep 0.3'); rc=$?
check "exec -t: the program sees our terminal's size (stty size: 33 120)" eq "$rc/$out" "0/33 120"
out=$(python3 "$IT_DIR/pty_run.py" 33 120 --resize-after 1.2 50 200 --timeout 30 -- "$Y" -n $NS exec -i -t work -- sh -c 'sleep 0.3; stty size; sleep 1.8; stty size; sleep 0.3'); rc=$?
check "exec -t: after a SIGWINCH it sees the new size (33 120, then 50 200)" eq "$rc/$(echo "$out" | tr '\n' ' ')" "0/33 120 50 200 "
out=$(COLUMNS=91 LINES=17 "$Y" -n $NS exec -i -t work -- sh -c 'sleep 0.3; stty size; sleep 0.3' </dev/null | tr -d '\r')
check "exec -t without a terminal: the size of \$COLUMNS x \$LINES" eq "$out" "17 91"

# A command that exits without reading its stdin: exit code at once, every time.
head -c 5000000 /dev/urandom > "$T/in5"
exit3_runs() {
    local i rc t0 t1
    for i in $(seq 20); do
        t0=$(now_ms)
        timeout 30 "$Y" -n $NS exec -i work -- sh -c 'exit 3' < "$T/in5" 2>"$T/exit3.err"; rc=$?
        t1=$(now_ms)
        if [ "$rc" != 3 ] || [ $((t1 - t0)) -ge 3000 ]; then
            echo "    run $i: exit $rc after $((t1 - t0)) ms: $(cat "$T/exit3.err")" >&2
            return 1
        fi
    done
}
check "exec -i, 5 MB the command never reads: exit 3 within 3 s, 20 runs in a row" exit3_runs

# cp checks the destination first: a missing directory is named before anything is sent.
head -c 300000 /dev/urandom > "$T/300k.bin"
t0=$(now_ms)
ysb cp "$T/300k.bin" "work:no such dir/sub/x.bin" 2>"$T/err"; rc=$?
check "cp into a missing directory: exit 1 within 3 s" eq "$rc/$([ $(( $(now_ms) - t0 )) -lt 3000 ] && echo fast)" "1/fast"
check "  one line naming the missing directory" eq "$(cat "$T/err")" "yao-sandbox: cp: $WS/no such dir/sub: no such directory in the sandbox"
ysb cp "$T/300k.bin" "work:not-a-dir/" 2>"$T/err"; rc=$?
check "cp into DIR/ that does not exist: exit 1, named" eq "$rc/$(cat "$T/err")" "1/yao-sandbox: cp: $WS/not-a-dir/: no such directory in the sandbox"
check "  and nothing was created" eq "$(ysb ls work | grep -c -e '^no such dir$' -e '^not-a-dir$')" 0
ysb cp "work:never there" "$T/never" 2>"$T/err"; rc=$?
check "cp out of a missing path: exit 1, named" eq "$rc/$(cat "$T/err")" "1/yao-sandbox: cp: $WS/never there: no such file or directory in the sandbox"
ysb exec work -- sh -c "mkdir -p '$WS/locked' && chmod 555 '$WS/locked'"
ysb cp "$T/300k.bin" work:locked/x.bin 2>"$T/err"; rc=$?
check "cp where tar cannot write: exit 1 with tar's own reason" eq "$rc/$(cat "$T/err")" "1/yao-sandbox: cp: x.bin: Cannot open: Permission denied"
ysb exec work -- chmod 755 "$WS/locked"

# ls and stat through the portable listing: awkward names come back exactly.
ysb exec work -- sh -c "mkdir -p '$WS/odd' && cd '$WS/odd' && touch \"\$(printf 'new\\nline')\" \"q'uote\\\"dq\" ./-dash .hidden && ln -s -- -dash link"
check "ls: names with a newline, quotes, a leading dash, hidden ones, a link" \
    eq "$(ysb ls work odd -o json | python3 -c 'import json,sys; print(sorted((f["name"], f["type"], f.get("linkTarget", "")) for f in json.load(sys.stdin)))')" \
    "[('-dash', 'file', ''), ('.hidden', 'file', ''), ('link', 'symlink', '-dash'), ('new\\nline', 'file', ''), ('q\\'uote\"dq', 'file', '')]"
check "stat of a symlink describes the link" eq "$(ysb stat work odd/link -o json | python3 -c 'import json,sys; f=json.load(sys.stdin); print(f["type"], f["linkTarget"])')" "symlink -dash"

# An exec marks the sandbox used while it runs: a session Sandbox idle after 3 s survives
# an 8 s command (it used to be deleted under it) and is still Running right after.
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: brief}
spec: {userID: carol, chatID: c4, lifecycle: session, idleTimeout: 3s}
YAML
check "a session Sandbox with idleTimeout 3s is Running" eventually 30 phase_is $NS brief Running
"$Y" -n $NS exec brief -- sleep 8; rc=$?
check "  an 8 s exec in it: exit 0" eq $rc 0
check "  and the sandbox is still there, Running (touched while the command ran)" eq "$(sandbox_phase $NS brief)" Running

# No touch once the command has ended (it would wake a sandbox stopped meanwhile): after a
# 3 s exec (idleTimeout 30m: the next touch would come after 60 s) last-used-at is the
# time the command started, not the time it ended.
t_start=$(date +%s)
"$Y" -n $NS exec work -- sleep 3
touched=$(date -d "$(ann work)" +%s)
check "exec marks the sandbox used as the command starts, not after it ended" test "$touched" -le $((t_start + 1))

# A sandbox stopped while a command runs: one line, exit 75 (not 137), and no touch after
# the command that would start it again. (A kwok pod's deletion does not kill the command,
# so it exits 137 itself, as a kubelet reports the command it killed.)
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: held}
spec: {userID: dave, chatID: c5, lifecycle: long-running}
YAML
check "a long-running Sandbox is Running" eventually 30 phase_is $NS held Running
( sleep 1; "$Y" -n $NS stop held >/dev/null ) &
stopper=$!
"$Y" -n $NS exec held -- sh -c 'sleep 4; exit 137' >/dev/null 2>"$T/err"; rc=$?
wait $stopper
check "exec while the sandbox is paused: exit 75" eq $rc 75
check "  and one line saying why" eq "$(cat "$T/err")" "yao-sandbox: sandbox held was stopped while the command ran (reason: Paused)"
sleep 3
check "  the sandbox stays stopped afterwards" eq "$(sandbox_phase $NS held)/$(kubectl -n $NS get sandbox held -o jsonpath='{.spec.paused}')" "Stopped/true"
no_held_pod() { [ "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/name=held --no-headers 2>/dev/null | wc -l)" = 0 ]; }
check "  with no pod" no_held_pod
"$Y" -n $NS exec work -- sh -c 'exit 137' 2>"$T/err"; rc=$?
check "a command that exits 137 while the sandbox runs: exit 137, nothing said" eq "$rc/$(cat "$T/err")" "137/"

helps() { local c; for c in exec create get list start stop touch read write ls stat mkdir rm cp; do "$Y" $c --help | grep -q "^Usage: yao-sandbox $c" || return 1; done; }
check "every command has --help" helps
check "--version" contains "$("$Y" --version)" "yao-sandbox "
check "the controller logged no reconcile failures" eq "$(grep -c 'reconcile failed' "$LOG")" 0
# ---- delete ----------------------------------------------------------------------------------
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: doomed}
spec: {userID: dora, chatID: d1, lifecycle: long-running}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: doomed-too}
spec: {userID: dora, chatID: d2, lifecycle: long-running}
YAML
check "delete: the Sandboxes to delete run" eventually 30 eval "phase_is $NS doomed Running && phase_is $NS doomed-too Running"
DCLAIM=$(kubectl -n $NS get ysb doomed -o jsonpath='{.status.workspaceClaim}')
out=$("$Y" -n $NS --start-timeout 60s delete doomed --wait 2>"$T/err"); rc=$?
check "delete --wait: exit 0, says so" eq "$rc/$out" '0/sandbox "doomed" deleted'
check "delete --wait: the Sandbox is gone when it returns" eval "! kubectl -n $NS get ysb doomed >/dev/null 2>&1"
check "delete: its pod and workspace claim go with it" eventually 30 eval \
    "[ -z \"\$(kubectl -n $NS get pod,pvc -l sandbox.yaoapps.com/name=doomed -o name 2>/dev/null)\" ] && ! kubectl -n $NS get pvc '$DCLAIM' >/dev/null 2>&1"
out=$("$Y" -n $NS delete no-such-sandbox doomed-too 2>"$T/err"); rc=$?
check "delete: a missing name is exit 1 (one line naming it)" eval \
    "[ $rc = 1 ] && grep -q 'sandbox \"no-such-sandbox\" not found' '$T/err' && [ \$(wc -l < '$T/err') = 1 ]"
check "delete: the other one is deleted all the same" eq "$out" 'sandbox "doomed-too" deleted'
check "delete: without --wait it returns at once, and the Sandbox goes" eventually 30 eval "! kubectl -n $NS get ysb doomed-too >/dev/null 2>&1"
"$Y" -n $NS delete 'Bad_Name' >/dev/null 2>&1; rc=$?
check "delete: an invalid name is a usage error" eq "$rc" 2
finish
