#!/usr/bin/env bash
# Hostile and bad input through the real API server: odd IDs (unicode, control
# characters, 500 chars, ../../etc, shell metacharacters), invalid env names, a huge
# run.command, absurd quantities and requests, a kubelet writing an 80 KB message or an
# invalid reason. Each one is refused by the schema with a clear message or reported as
# Ready=False; the controller never crashes, never creates an invalid object, never fails
# a status write and never loops hot (its reconcile counter stays flat while nothing changes).
. "$(dirname "$0")/lib.sh"
NS=yao-it
LOG=$BUILD_DIR/test-hostile.log
: > "$LOG"
install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --metrics-addr 127.0.0.1:0
CTL=${CONTROLLER_PIDS[-1]}
port() { sed -n 's/.*msg="serving probes and metrics".* port=\([0-9]*\).*/\1/p' "$LOG" | head -n 1; }
eventually 10 eval '[ -n "$(port)" ]'
P=$(port)

apply_json() { kubectl -n $NS apply -f - 2>&1 <<<"$1"; }
sb_json() { # name userID chatID [extra spec json]
    python3 -c 'import json,sys
spec={"userID":sys.argv[2],"chatID":sys.argv[3]}
spec.update(json.loads(sys.argv[4]) if len(sys.argv)>4 and sys.argv[4] else {})
print(json.dumps({"apiVersion":"sandbox.yaoapps.com/v1alpha1","kind":"Sandbox","metadata":{"name":sys.argv[1]},"spec":spec}))' "$@"
}
pod_of() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.status.podName}'; }
valid_pod() { # the Sandbox runs and its pod name is a DNS label
    local p; p=$(pod_of "$1")
    phase_is $NS "$1" Running && [[ "$p" =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]]
}

# --- odd IDs are accepted and sanitised into valid names ---------------------------------------
apply_json "$(sb_json unicode '用户-Ünïcödé' '聊天 💬 #1')" >/dev/null
apply_json "$(sb_json long "$(printf 'u%.0s' $(seq 128))" "$(printf 'C%.0s' $(seq 128))")" >/dev/null
apply_json "$(sb_json dotdot '../../etc' '../passwd')" >/dev/null
apply_json "$(sb_json shell '$(rm -rf /); `id`' 'a;b&&c|d>e')" >/dev/null
check "unicode IDs: running, pod name is a DNS label" eventually 30 valid_pod unicode
check "128-char IDs: running, pod name is a DNS label" eventually 30 valid_pod long
check "../../etc IDs: running, pod name is a DNS label" eventually 30 valid_pod dotdot
check "shell metacharacters: running, pod name is a DNS label" eventually 30 valid_pod shell
check "raw IDs are kept exactly in annotations" eq "$(kubectl -n $NS get pod "$(pod_of shell)" -o jsonpath='{.metadata.annotations.sandbox\.yaoapps\.com/user-id}')" '$(rm -rf /); `id`'
check "four distinct pods for four distinct pairs" eq "$(for s in unicode long dotdot shell; do pod_of $s; echo; done | sort -u | wc -l)" 4

# --- refused by the schema with a message naming the field ---------------------------------------
check "500-char userID refused" contains "$(apply_json "$(sb_json x500 "$(printf 'u%.0s' $(seq 500))" c)")" "spec.userID: Too long"
check "control character in chatID refused" contains "$(apply_json "$(sb_json ctl u $'a\x01b')")" "spec.chatID"
check "empty userID refused" contains "$(apply_json "$(sb_json empty '' c)")" "spec.userID"
check "invalid env name refused" contains "$(apply_json "$(sb_json envbad u c '{"env":[{"name":"1BAD-NAME=","value":"x"}]}')")" "spec.env[0].name"
check "reserved env name refused" contains "$(apply_json "$(sb_json envres u c '{"env":[{"name":"YAO_USER_ID","value":"x"}]}')")" "cannot be overridden"
check "malformed memory refused" contains "$(apply_json "$(sb_json mem u c '{"resources":{"memory":"lots"}}')")" "spec.resources.memory"
check "negative ttl refused" contains "$(apply_json "$(sb_json ttl u c '{"lifecycle":"one-shot","run":{"command":["true"]},"ttlSecondsAfterFinished":-5}')")" "ttlSecondsAfterFinished"
huge=$(python3 -c 'import json; print(json.dumps({"lifecycle":"one-shot","run":{"command":["sh","-c","x"*40000]}}))')
check "huge run.command refused" contains "$(apply_json "$(sb_json huge u c "$huge")")" "spec.run.command[2]"
many=$(python3 -c 'import json; print(json.dumps({"lifecycle":"one-shot","run":{"command":["echo"]+["a"]*2000}}))')
check "2000-element run.command refused" contains "$(apply_json "$(sb_json many u c "$many")")" "spec.run.command"
check "mountPath with .. refused" contains "$(apply_json "$(sb_json mp u c '{"workspace":{"mountPath":"/work/../etc"}}')")" "mountPath"

# --- accepted by the schema, refused by the controller: Ready=False/InvalidSpec, no pod -----------
apply_json "$(sb_json absurdmem u1 c '{"resources":{"memory":"900Pi"}}')" >/dev/null
apply_json "$(sb_json absurdcpu u2 c '{"resources":{"cpu":"100000"}}')" >/dev/null
apply_json "$(sb_json tinyws u3 c '{"workspace":{"size":"1k"}}')" >/dev/null
apply_json "$(sb_json absurdreq u5 c '{"resources":{"requests":{"memory":"900Pi"}}}')" >/dev/null
for s in absurdmem absurdcpu tinyws absurdreq; do
    check "$s: Ready=False/InvalidSpec" eventually 20 reason_is $NS $s InvalidSpec
done
check "absurd quantities create no pod" eq "$(kubectl -n $NS get pods -l 'sandbox.yaoapps.com/user in (u1,u2,u3,u5)' --no-headers 2>/dev/null | wc -l)" 0
check "malformed request refused" contains "$(apply_json "$(sb_json req u c '{"resources":{"requests":{"cpu":"1 core"}}}')")" "spec.resources.requests.cpu"

# --- a hostile pod status (what a broken kubelet could write) ------------------------------------
# An 80 KB waiting message is cut to fit; a reason the Sandbox schema would refuse is not
# passed on; either way the status write succeeds.
apply_json "$(sb_json kubelet u6 c)" >/dev/null
eventually 30 phase_is $NS kubelet Running
PATCH=$(mktemp)
on_exit "rm -f $PATCH"
pod_status() { # reason message-repeat-count: the status patch, in $PATCH
    python3 -c 'import json,sys
json.dump({"status":{"conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady"}],
  "containerStatuses":[{"name":"sandbox","image":"x","imageID":"","ready":False,"restartCount":0,
  "state":{"running":None,"waiting":{"reason":sys.argv[1],"message":"\u00e9" * int(sys.argv[2])}}}]}},
  open(sys.argv[3], "w"), ensure_ascii=False)' "$1" "$2" "$PATCH"
    kubectl -n $NS patch pod "$(pod_of kubelet)" --subresource=status --type=strategic --patch-file "$PATCH" >/dev/null
}
pod_status ErrImagePull 40000
check "an 80 KB kubelet message: Ready=False/ErrImagePull" eventually 20 reason_is $NS kubelet ErrImagePull
msg_bytes=$(kubectl -n $NS get sandbox kubelet -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}' | wc -c)
check "  the message is cut to at most 1 KiB (got $msg_bytes bytes)" test "$msg_bytes" -le 1024 -a "$msg_bytes" -ge 1000
pod_status 'Not A Reason; rm -rf /' 1
check "a reason the schema would refuse becomes PodNotReady" eventually 20 reason_is $NS kubelet PodNotReady
check "the InvalidSpec message is readable and names the field" contains "$(kubectl -n $NS get sandbox absurdcpu -o jsonpath='{.status.conditions[0].message}')" "spec.resources.cpu"

# --- the controller stays up and quiet ------------------------------------------------------------
reconciles() { curl -s "http://127.0.0.1:$P/metrics" | awk '$1 == "yao_sandbox_reconcile_total" { print $2 }'; }
sleep 2
r1=$(reconciles); sleep 10; r2=$(reconciles)
echo "    reconciles in 10 s of quiet: $((r2 - r1))"
check "no hot loop: at most a handful of reconciles in 10 quiet seconds" test $((r2 - r1)) -le 5
check "the controller is still running" kill -0 "$CTL"
check "no reconcile failures logged" eq "$(grep -c 'reconcile failed' "$LOG")" 0
finish
