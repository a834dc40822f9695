#!/usr/bin/env bash
# The CLI's kubectl-shaped verbs on the plane, with the controller running: create with
# --class/--image/--memory/--cpu/--workspace-size/--idle-timeout (the spec they write, and
# bad values refused), -o jsonpath on get and list (and a clear error on a bad template),
# wait --for=condition/phase/delete (met, timed out on time, and ended at once with the
# reason on what will not heal: no node for it, a paused sandbox, a finished one-shot),
# waiting by WATCH (the audit log shows one watch and no GET polling while a wait lasts),
# the progress line on a terminal, get -w and list -w printing each change, describe
# (spec, status, conditions, Events), logs of a finished one-shot whose pod is gone
# (status.run's tails, with a note), and the completion scripts (bash sources it and
# `complete -p` shows it; zsh too when installed). Logs from a real container are in
# test_node_cli.sh.
. "$(dirname "$0")/lib.sh"
NS=yao-it-verbs
LOG=$BUILD_DIR/test-cli-verbs.log
: > "$LOG"
Y=$BUILD_DIR/bin/yao-sandbox
T=$(mktemp -d)
on_exit "rm -rf '$T'"
ysb() { "$Y" -n $NS --start-timeout 60s "$@"; }
AUDIT=$YAO_PLANE_DIR/logs/audit.log

check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0

# ---- create with the spec flags ----------------------------------------------------------------
name=$(ysb create --user ann --chat c1 --lifecycle persistent --image busybox:1.36 --memory 256Mi --cpu 250m \
    --workspace-size 2Gi --idle-timeout 10m --wait 2>"$T/err")
check "create with every spec flag and --wait: Running, its name printed" eq "$?/$(sandbox_phase $NS "$name")" "0/Running"
check "  the spec it wrote" eq "$(kubectl -n $NS get sandbox "$name" -o jsonpath='{.spec.image}|{.spec.resources.memory}|{.spec.resources.cpu}|{.spec.workspace.size}|{.spec.idleTimeout}|{.spec.lifecycle}')" \
    "busybox:1.36|256Mi|250m|2Gi|10m|persistent"
out=$(ysb create --user ann --chat c2 --class no-such-class 2>&1)
check "create --class writes spec.className" eq "$(kubectl -n $NS get sandbox "$out" -o jsonpath='{.spec.className}')" no-such-class
for bad in "--memory lots" "--cpu -1" "--workspace-size 0" "--class Bad_Name" "--idle-timeout never"; do
    # shellcheck disable=SC2086
    ysb create --user ann --chat c3 $bad >/dev/null 2>"$T/err"
    check "create $bad: a usage error (exit 2), nothing created" eq "$?/$(kubectl -n $NS get sandboxes -o name | grep -c . )" "2/2"
done
check "  naming the flag" contains "$(cat "$T/err")" 'invalid --idle-timeout "never"'

# ---- -o jsonpath ---------------------------------------------------------------------------------
check "get -o jsonpath: one field" eq "$(ysb get "$name" -o 'jsonpath={.spec.resources.memory}')" 256Mi
check "get -o jsonpath: text, filters and several fields" eq \
    "$(ysb get "$name" -o 'jsonpath=phase={.status.phase} ready={.status.conditions[?(@.type=="Ready")].status}')" "phase=Running ready=True"
check "list -o jsonpath with range over the List" eq \
    "$(ysb list -o 'jsonpath={range .items[*]}{.spec.chatID}{"\n"}{end}' | sort | tr '\n' ,)" "c1,c2,"
check "list -o jsonpath: items[*]" eq "$(ysb list --chat c1 -o 'jsonpath={.items[*].metadata.name}')" "$name"
ysb get "$name" -o 'jsonpath={.status.phase' >/dev/null 2>"$T/err"
check "a bad template: exit 2" eq $? 2
check "  saying what and where" contains "$(cat "$T/err")" "jsonpath: unclosed { at offset 0"
ysb list -o 'jsonpath={.items[?(@.x==)]}' >/dev/null 2>"$T/err"
check "  a bad filter too" contains "$(cat "$T/err")" "expected a string, number, true or false"

# ---- wait ----------------------------------------------------------------------------------------
out=$(ysb wait "$name" --for=condition=Ready)
check "wait --for=condition=Ready: met" eq "$?|$out" "0|sandbox.sandbox.yaoapps.com/$name condition met"
check "wait --for=phase=running (any case): met" eq "$(ysb wait "$name" --for=phase=running; echo $?)" \
    "sandbox.sandbox.yaoapps.com/$name condition met
0"
t0=$(now_ms)
ysb wait "$name" --for=phase=Stopped --timeout 2s 2>"$T/err"
rc=$? t=$(( $(now_ms) - t0 ))
check "wait that is not met: exit 1 after its timeout" eq "$rc" 1
check "  on time (2 s, took ${t} ms)" test "$t" -ge 1900 -a "$t" -lt 4000
check "  saying what it waited for and what it saw" contains "$(cat "$T/err")" \
    "timed out after 2s waiting for sandbox \"$name\" (phase Stopped); last seen: Running, Ready=True (PodReady"
ysb wait "$name" --for=bogus 2>"$T/err"
check "wait --for=bogus: a usage error" eq "$?" 2

# Waiting watches: over a 3 s wait the CLI's requests are one LIST and watches, no GET poll.
# (The plane's audit policy records the yao-sandbox-system ServiceAccounts: the CLI runs on
# one's token here, told apart from the controller by its User-Agent.)
sa_kubeconfig "$T/sa.kubeconfig"
sleep 1.5   # let earlier requests reach the audit log
before=$(wc -l < "$AUDIT")
"$Y" --kubeconfig "$T/sa.kubeconfig" -n $NS wait "$name" --for=phase=Stopped --timeout 3s 2>/dev/null
sleep 1.5
cli_requests() { tail -n +"$((before + 1))" "$AUDIT" | python3 -c '
import json, sys, collections
n = collections.Counter()
for line in sys.stdin:
    e = json.loads(line)
    if not e.get("userAgent", "").startswith("yao-sandbox/") or e.get("stage") != "ResponseComplete":
        continue
    if (e.get("objectRef") or {}).get("namespace") != sys.argv[1]:
        continue
    n[e["verb"]] += 1
print(" ".join("%s=%d" % kv for kv in sorted(n.items())))' $NS; }
check "a 3 s wait is one list and one watch, no polling" eq "$(cli_requests)" "list=1 watch=1"

# What will not heal ends the wait at once, with the reason: no node for it (a class whose
# nodeSelector matches none), an invalid spec.
CLASS=yao-it-verbs-nowhere
on_exit "kubectl delete sandboxclass $CLASS --ignore-not-found --wait=false"
kubectl apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: $CLASS}
spec: {nodeSelector: {yao-it/nowhere: "true"}}
YAML
t0=$(now_ms)
huge=$(ysb create --user ann --chat nowhere --class $CLASS --wait 2>"$T/err")
rc=$? t=$(( $(now_ms) - t0 ))
check "create --wait on a Sandbox no node can take: exit 1 once the refusal held 10 s, long before the timeout (${t} ms)" eq "$rc/$((t >= 10000 && t < 30000))" "1/1"
check "  with the reason" contains "$(cat "$T/err")" "sandbox \"$huge\" cannot start: Unschedulable"
check "  its name still printed first" test -n "$huge"
t0=$(now_ms)
ysb wait "$huge" --for=condition=Ready --timeout 60s 2>"$T/err"
rc=$? t=$(( $(now_ms) - t0 ))
check "wait on it ends the same way after the grace (${t} ms)" eq "$rc/$((t >= 10000 && t < 30000))" "1/1"
check "  with the reason" contains "$(cat "$T/err")" "cannot start: Unschedulable"
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: toobig}
spec: {userID: ann, chatID: toobig, lifecycle: persistent, resources: {memory: 900Ti}}
YAML
t0=$(now_ms)
ysb wait toobig --for=condition=Ready --timeout 60s 2>"$T/err"
rc=$? t=$(( $(now_ms) - t0 ))
check "wait on an invalid spec: exit 1 at once (${t} ms)" eq "$rc/$((t < 10000))" "1/1"
check "  with the reason" contains "$(cat "$T/err")" "sandbox \"toobig\" cannot start: InvalidSpec: spec.resources.memory"
ysb stop "$name" --wait >/dev/null
check "stop --wait: Stopped (by watch)" phase_is $NS "$name" Stopped
ysb wait "$name" --for=condition=Ready --timeout 30s 2>"$T/err"
check "wait for Ready on a paused sandbox: exit 1 at once" eq "$?" 1
check "  saying how to start it" contains "$(cat "$T/err")" "is paused (spec.paused); start it with 'yao-sandbox start $name'"
ysb start "$name" --wait >/dev/null
check "start --wait: Running again" phase_is $NS "$name" Running

# The progress line on a terminal: rewritten in place as phase and reason change.
out=$(python3 "$SRC_DIR/tests/integration/pty_run.py" 24 200 --timeout 30 -- "$Y" -n $NS wait "$huge" --for=phase=Stopped --timeout 2s 2>&1)
check "on a terminal a progress line shows phase and reason" contains "$out" "waiting for sandbox \"$huge\" (phase Stopped): Creating, Ready=False (Unschedulable"
check "  drawn in place (carriage return, erase line)" contains "$(printf '%s' "$out" | od -c | tr -s ' ')" '\r 033 [ K'
ysb wait "$huge" --for=phase=Stopped --timeout 1s 2>"$T/err" >/dev/null
check "  and none when stderr is no terminal" eq "$(grep -c 'yao-sandbox: waiting for sandbox' "$T/err")" 0

# --for=delete: waits until the Sandbox is gone; met at once when there is none.
ysb wait "$huge" --for=delete --timeout 30s > "$T/waitdel" 2>&1 &
wpid=$!
sleep 1
check "  (still waiting while it exists)" kill -0 $wpid
kubectl -n $NS delete sandbox "$huge" --wait=false >/dev/null
wait $wpid
check "wait --for=delete: met once it is gone" eq "$?|$(cat "$T/waitdel")" "0|sandbox.sandbox.yaoapps.com/$huge condition met"
check "  and at once for one that does not exist" eq "$(ysb wait nothing-here --for=delete)" "sandbox.sandbox.yaoapps.com/nothing-here condition met"
ysb wait nothing-here --for=condition=Ready --timeout 10s 2>"$T/err"
check "wait for Ready on one that does not exist: exit 1 at once" eq "$?|$(cat "$T/err")" "1|yao-sandbox: sandbox \"nothing-here\" was deleted"

# ---- get -w / list -w ---------------------------------------------------------------------------
timeout 20 "$Y" -n $NS get "$name" -w > "$T/getw" 2>&1 &
gpid=$!
timeout 20 "$Y" -n $NS list -w --no-headers -o 'jsonpath={.metadata.name}/{.status.phase}{"\n"}' > "$T/listw" 2>&1 &
lpid=$!
sleep 2
ysb stop "$name" --wait >/dev/null
ysb start "$name" --wait >/dev/null
sleep 1
kill $gpid $lpid 2>/dev/null
wait $gpid $lpid 2>/dev/null
check "get -w: a header and a row now" eq "$(head -n 2 "$T/getw" | awk '{print $1, $5}' | tr '\n' ,)" "NAME PHASE,$name Running,"
check "  then a row for each change: it stopped and ran again" eval \
    "awk '{print \$5}' '$T/getw' | tr '\n' ' ' | grep -Eq 'Running .*Stopped .*Running'"
check "  columns line up with the first rows" eq "$(awk '{print index($0, $5)}' "$T/getw" | sort -u | wc -l)" 1
check "list -w -o jsonpath: one line per Sandbox, then per change" eval \
    "grep -q '^$name/Running$' '$T/listw' && grep -q '^$name/Stopped$' '$T/listw' && [ \$(grep -c '^$name/' '$T/listw') -ge 4 ]"

# ---- describe ------------------------------------------------------------------------------------
ysb describe "$name" > "$T/desc"
check "describe: exit 0" eq $? 0
desc=$(cat "$T/desc")
check "describe: name, namespace and kind" eval "grep -Eq '^Name: +$name\$' '$T/desc' && grep -Eq '^Namespace: +$NS\$' '$T/desc' && grep -Eq '^Kind: +Sandbox\$' '$T/desc'"
check "  the spec" eval "grep -Eq '^  Resources: +memory 256Mi, cpu 250m\$' '$T/desc' && grep -Eq '^  Image: +busybox:1.36\$' '$T/desc' && grep -Eq '^  Workspace: +size 2Gi' '$T/desc'"
check "  the status" eval "grep -Eq '^  Phase: +Running\$' '$T/desc' && grep -Eq '^  Pod: +$name' '$T/desc'"
check "  the conditions as a table" eval "grep -Eq '^  Ready +True +PodReady ' '$T/desc'"
check "  the Sandbox's Events, with their source" eval "sed -n '/^Events:/,\$p' '$T/desc' | grep -Eq '^  Normal +[A-Za-z]+ +[0-9].* +yao-sandbox'"
ysb describe nothing-here 2>"$T/err"
check "describe of a missing one: exit 1, one line" eq "$?|$(cat "$T/err")" "1|yao-sandbox: sandbox \"nothing-here\" not found in namespace \"$NS\""

# ---- logs of a finished one-shot whose pod is gone: status.run's tails --------------------------------
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: job}
spec: {userID: ann, chatID: job, lifecycle: one-shot, run: {command: ["sh", "-c", "echo hello; echo oops >&2; exit 3"]}}
YAML
check "the one-shot's pod runs" eventually 30 eval '[ "$(kubectl -n $NS get pods -l sandbox.yaoapps.com/chat=job -o jsonpath={.items[0].status.phase} 2>/dev/null)" = Running ]'
JPOD=$(kubectl -n $NS get pods -l sandbox.yaoapps.com/chat=job -o jsonpath='{.items[0].metadata.name}')
# kwok runs no containers: report what the kubelet would (the wrapper's termination message)
msg=$(printf 'yao-run/1 6 5\n%s\n.\n%s\n' "$(printf 'hello\n' | base64)" "$(printf 'oops\n' | base64)")
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kubectl -n $NS patch pod "$JPOD" --subresource=status --type=strategic -p "$(python3 -c '
import json, sys
print(json.dumps({"status": {"phase": "Failed", "containerStatuses": [{"name": "sandbox", "image": "x", "imageID": "",
    "ready": False, "restartCount": 0, "state": {"running": None, "terminated": {"exitCode": 3, "reason": "Error",
    "message": sys.argv[1], "startedAt": sys.argv[2], "finishedAt": sys.argv[2]}}}]}}))' "$msg" "$now")" >/dev/null
check "the one-shot ends Failed" eventually 30 phase_is $NS job Failed
out=$(ysb wait job --for=condition=Ready --timeout 30s 2>&1)
check "wait for Ready on a finished one-shot: ends at once with why" contains "$out" "has finished (phase Failed): the command exited with code 3"
check "wait --for=phase=Failed on it: met" eq "$(ysb wait job --for=phase=Failed)" "sandbox.sandbox.yaoapps.com/job condition met"
check "the finished pod is kept for its log" eq "$(kubectl -n $NS get pod "$JPOD" -o jsonpath='{.status.phase}')" Failed
kubectl -n $NS delete pod "$JPOD" --grace-period=0 --force >/dev/null 2>&1
check "its pod is gone" eventually 30 eval '! kubectl -n $NS get pod "$JPOD" >/dev/null 2>&1'
out=$(ysb logs job 2>"$T/err")
check "logs: the run's stdout from status.run" eq "$?|$out" "0|hello"
check "  its stderr on stderr, after a note" eq "$(cat "$T/err")" "yao-sandbox: the run's pod is gone; its output as kept in status.run
oops"
ysb logs "$name" --tail x 2>/dev/null
check "logs --tail x: a usage error" eq $? 2

# ---- completion ----------------------------------------------------------------------------------
"$Y" completion bash > "$T/comp.bash"
check "completion bash: bash sources it and complete -p shows it" eq \
    "$(bash -c "source '$T/comp.bash' && complete -p yao-sandbox")" "complete -F _yao_sandbox yao-sandbox"
complete_words() { bash -c "source '$T/comp.bash'; PATH='$BUILD_DIR/bin':\$PATH; COMP_WORDS=($*); COMP_CWORD=\$((\${#COMP_WORDS[@]}-1)); _yao_sandbox; echo \"\${COMPREPLY[*]}\""; }
check "  completes commands" eq "$(complete_words yao-sandbox de)" "describe delete"
check "  a command's flags" eq "$(complete_words yao-sandbox logs --f)" "--follow"
check "  the values of --for" contains "$(complete_words yao-sandbox wait x --for "''")" "condition=Ready"
check "  Sandbox names of the namespace given by -n" eq "$(complete_words yao-sandbox -n $NS logs jo)" "job"
"$Y" completion zsh > "$T/comp.zsh"
if command -v zsh >/dev/null; then
    check "completion zsh: zsh sources it and registers the function" eq \
        "$(zsh -c "autoload -U compinit && compinit -u; source '$T/comp.zsh'; print \${_comps[yao-sandbox]}")" "_bash_complete -F _yao_sandbox"
else
    echo "  (zsh not installed: completion zsh only checked to start with #compdef)"
    check "completion zsh: a #compdef script" eq "$(head -n 1 "$T/comp.zsh")" "#compdef yao-sandbox"
fi

finish
