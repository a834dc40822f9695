#!/usr/bin/env bash
# The CLI's logs and waits against real containers on the real node: a one-shot whose
# output is far beyond the 1,400 bytes status.run keeps is read whole with `logs` after it
# finished (its pod is kept until the Sandbox goes; both streams, as kubectl logs shows
# them), --tail, `logs -f` on a run still starting (waited for by watch, then
# streamed line by line as the container writes, ending with it), the kept pod going with
# its Sandbox, and an image that cannot be pulled ending `create --wait` at once with the
# kubelet's reason instead of waiting out the timeout.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-cli
LOG=$BUILD_DIR/test-node-cli.log
: > "$LOG"
CLI=$BUILD_DIR/bin/yao-sandbox
T=$(mktemp -d)
on_exit "rm -rf '$T'"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

sandbox() { # name lifecycle [extra spec yaml lines...]
    local name=$1 lc=$2; shift 2
    {
        printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\n' "$name"
        printf 'spec:\n  userID: node-cli\n  chatID: %s\n  lifecycle: %s\n' "$name" "$lc"
        printf '  %s\n' "$@"
    } | kubectl -n $NS apply -f - >/dev/null
}
y() { "$CLI" -n $NS --start-timeout 120s "$@"; }
# The sandbox image as the node's store has it: the controller's default reference, else the
# same image under the plane's registry name.
VER=$(sed -n 's/^project(yao-sandbox VERSION \([0-9.]*\).*/\1/p' "$SRC_DIR/CMakeLists.txt")
IMG=yao-sandbox/sandbox:$VER
node_refs=$(ctr --address "$YAO_PLANE_DIR/node/containerd/containerd.sock" -n k8s.io images ls -q 2>/dev/null)
grep -qx "docker.io/$IMG" <<<"$node_refs" || IMG=$(grep -m1 "/yao-sandbox/sandbox:$VER\$" <<<"$node_refs" || echo "$IMG")
echo "    sandbox image: $IMG"
field() { kubectl -n $NS get sandbox "$1" -o jsonpath="{$2}" 2>/dev/null; }

# ---- a finished one-shot's whole output ------------------------------------------------------
sandbox big one-shot "image: $IMG" 'run: {command: ["sh", "-c", "seq 1 20000; echo the-end; echo err-line >&2"]}'
check "a one-shot with ~110 KB of output succeeds (wait --for=phase=Succeeded)" eq \
    "$(y wait big --for=phase=Succeeded --timeout 120s)" "sandbox.sandbox.yaoapps.com/big condition met"
check "  status.run keeps only the tails" eq "$(field big .status.run.truncated)" true
POD=$(field big .status.podName)
check "  its finished pod is kept (Succeeded)" eventually 30 eval '[ "$(kubectl -n $NS get pod "$POD" -o jsonpath={.status.phase})" = Succeeded ]'
{ seq 1 20000; echo the-end; } > "$T/want"
y logs big > "$T/got" 2>"$T/err"
# both streams, in the order the runtime read them (stderr's one line may come anywhere)
check "logs: the whole output: every stdout line in order" eq "$?|$(grep -vx err-line "$T/got" | sha256sum)" "0|$(sha256sum < "$T/want")"
check "  and the stderr line" eq "$(grep -cx err-line "$T/got")" 1
check "  nothing on stderr" eq "$(cat "$T/err")" ""
check "  the same as kubectl logs" eq "$(kubectl -n $NS logs "$POD" | sha256sum)" "$(sha256sum < "$T/got")"
check "logs --tail 3: the last lines" eq "$(y logs big --tail 3 | grep -vx err-line | tail -n 2 | tr '\n' ,)" "20000,the-end,"
sleep 2
check "  still readable later (no controller deletes the pod)" eq "$(y logs big | wc -l)" 20002

# ---- logs -f: from a run still starting, to its end ------------------------------------------
# (a one-shot's output reaches the log when its command ends: the wrapper keeps the streams
# apart in files first; a sandbox's own main process is streamed as it writes, below)
sandbox ticks one-shot "image: $IMG" 'run: {command: ["sh", "-c", "for i in 1 2 3 4; do echo tick-$i; sleep 1; done"]}'
y logs ticks -f > "$T/follow" 2>"$T/ferr"
check "logs -f on a one-shot still starting: waited for, every line, ending with the container" eq \
    "$?|$(tr '\n' , < "$T/follow")" "0|tick-1,tick-2,tick-3,tick-4,"
check "  the one-shot finished" eventually 30 phase_is $NS ticks Succeeded
sandbox ticker persistent "image: $IMG" 'command: ["sh", "-c", "i=0; while :; do i=$((i+1)); echo tick-$i; sleep 1; done"]'
t0=$(now_ms)
y logs ticker -f 2>"$T/ferr" | { for i in 1 2 3 4 5 6; do IFS= read -r line; echo "$(( $(now_ms) - t0 )) $line"; done; } > "$T/follow"
rc=${PIPESTATUS[0]}
check "logs -f on a sandbox's main process: its lines as written" eq "$(awk '{print $2}' "$T/follow" | tr '\n' ,)" "tick-1,tick-2,tick-3,tick-4,tick-5,tick-6,"
first=$(awk 'NR == 1 {print $1}' "$T/follow") last=$(awk 'END {print $1}' "$T/follow")
check "  streamed: the 6th line came >= 1.9 s after the 1st (${first} ms, ${last} ms)" test $((last - first)) -ge 1900
check "  and the CLI ended quietly (exit 0) when its reader went away" eq "$rc|$(cat "$T/ferr")" "0|"
y delete ticker >/dev/null

# ---- the kept pod goes with its Sandbox ---------------------------------------------------------
y delete big --wait >/dev/null
check "deleting the Sandbox takes its kept pod" eventually 60 eval '! kubectl -n $NS get pod "$POD" >/dev/null 2>&1'
y logs big 2>"$T/err"
check "  logs then: not found (exit 1)" eq "$?|$(cat "$T/err")" "1|yao-sandbox: sandbox \"big\" not found in namespace \"$NS\""

# ---- a pull that keeps failing ends create --wait at once, with the kubelet's reason ---------------
t0=$(now_ms)
name=$(y create --user node-cli --chat nopull --image registry.invalid/yao/nope:1 --wait 2>"$T/err")
rc=$? t=$(( $(now_ms) - t0 ))
check "create --wait with an image that cannot be pulled: exit 1 (after ${t} ms, timeout 120 s)" eq "$rc/$((t < 60000))" "1/1"
check "  naming the pull failure" eval "grep -Eq 'sandbox \"$name\" cannot start: (ErrImagePull|ImagePullBackOff)' '$T/err'"
y delete "$name" >/dev/null

finish
