#!/usr/bin/env bash
# kube_exec against the real local plane, driven by tests/integration/exec_probe.c with the
# plane's admin kubeconfig (token, CA file): stdout/stderr kept apart, exit codes 0/3/255,
# argv with spaces, quotes, &, %, + and UTF-8 arriving exactly, a 5 MB binary stdin round
# trip closed with the v5 signal, the v4 fallback, 50 MB of output in flat memory, clear
# errors (missing container or pod, RBAC refusal, timeout) with exit 125, four sessions at
# once in threads, a tty with stdin, the terminal size at start and after a SIGWINCH, and
# the exit code of a command that exits without reading 5 MB of stdin, 20 runs in a row. Prints the latency of `true` and the 100 MB throughput
# next to kubectl exec's (informational, not asserted).
. "$(dirname "$0")/lib.sh"
NS=${YAO_EXEC_NS:-yao-it-2}     # kwok runs exec'd commands only in the ClusterExec namespaces
POD=exec-probe-target
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"

# The probe: built by CMake (bin/exec_probe), else compiled here from the sources.
PROBE=${EXEC_PROBE:-$BUILD_DIR/bin/exec_probe}
if [ ! -x "$PROBE" ]; then
    PROBE=$WORK/exec_probe
    echo "    (building exec_probe by hand: $BUILD_DIR/bin/exec_probe not found)"
    # shellcheck disable=SC2046
    cc -std=c11 -O2 -D_GNU_SOURCE -DYAO_VERSION='"test"' -I"$SRC_DIR/controller" \
        "$SRC_DIR/tests/integration/exec_probe.c" "$SRC_DIR"/controller/base/*.c "$SRC_DIR"/controller/kube/*.c \
        "$SRC_DIR"/controller/runtime/*.c "$SRC_DIR"/controller/sandbox/*/*.c \
        $(pkg-config --cflags --libs libcurl libcjson yaml-0.1 openssl libwebsockets) -lpthread -lm \
        -o "$PROBE" || { echo "cannot build exec_probe"; FAILED=1; finish; exit 1; }
fi
probe() { "$PROBE" --kubeconfig "$KUBECONFIG" -n "$NS" "$POD" "$@"; }

# A plain pod in a namespace others may share: create the namespace only if missing, and
# remove only what this suite made (an earlier suite's namespace may still be going away).
ns_gone() { ! kubectl get namespace "$NS" >/dev/null 2>&1; }
[ "$(kubectl get namespace "$NS" -o jsonpath='{.status.phase}' 2>/dev/null)" = Terminating ] && eventually 120 ns_gone
if ns_gone; then
    kubectl create namespace "$NS" >/dev/null
    on_exit "kubectl delete namespace $NS --wait=false"
fi
kubectl -n "$NS" delete pod "$POD" --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
kubectl -n "$NS" run "$POD" --image=busybox --restart=Never \
    --overrides='{"spec":{"automountServiceAccountToken":false}}' >/dev/null
on_exit "kubectl -n $NS delete pod $POD --wait=false"
check "target pod becomes Ready" kubectl -n "$NS" wait --for=condition=Ready "pod/$POD" --timeout=60s

# stdout and stderr apart, the exit code, the subprotocol.
YAO_EXEC_PROBE_VERBOSE=1 probe -- sh -c 'echo out; echo err >&2; exit 3' >"$WORK/o" 2>"$WORK/e"; rc=$?
check "exit code 3 comes back" eq "$rc" 3
check "stdout carries only stdout" eq "$(cat "$WORK/o")" out
check "stderr carries only stderr" eq "$(grep -v -e '^protocol:' -e '^session_ms:' -e '^ssl_ex_index:' "$WORK/e")" err
check "v5.channel.k8s.io is negotiated" eq "$(sed -n 's/^protocol: //p' "$WORK/e")" v5.channel.k8s.io
probe -- true; rc=$?
check "exit code 0 comes back" eq "$rc" 0
probe -- sh -c 'exit 255'; rc=$?
check "exit code 255 comes back" eq "$rc" 255

# argv exactly: one command= per element, nothing split or re-quoted.
args=("two words" "quote\"s 'single'" 'a&b=c?d#e' '100% + plus' 'ünï€ode ✓' '' 'tab	and
newline' '$(not expanded) `either` *' ';semi' '/slash\back')
probe -- printf '%s\n' "${args[@]}" >"$WORK/argv.got"; rc=$?
printf '%s\n' "${args[@]}" >"$WORK/argv.want"
check "argv with spaces, quotes, &, %, +, UTF-8 arrives exactly" cmp "$WORK/argv.got" "$WORK/argv.want"
check "  (and the probe exited 0)" eq "$rc" 0

# stdin: 5 MB of random bytes through cat, closed with the v5 signal so cat ends.
head -c 5000000 /dev/urandom >"$WORK/in"
probe --stdin --timeout 60000 -- cat <"$WORK/in" >"$WORK/in.back"; rc=$?
check "5 MB binary stdin round-trips through cat (exit 0)" eq "$rc" 0
check "  byte for byte (sha256)" eq "$(sha256sum <"$WORK/in.back" | cut -c1-64)" "$(sha256sum <"$WORK/in" | cut -c1-64)"
printf 'line one\nline two\n' | probe --stdin -- wc -l >"$WORK/wc"
check "the command sees EOF on stdin (wc -l ends and counts 2)" eq "$(tr -d ' ' <"$WORK/wc")" 2

# v4 fallback: offered alone, it is negotiated; output, exit codes and stdin still work
# (stdin without EOF: head stops by itself).
YAO_EXEC_PROBE_VERBOSE=1 probe --protocols v4.channel.k8s.io -- sh -c 'echo out4; echo err4 >&2; exit 4' \
    >"$WORK/o4" 2>"$WORK/e4"; rc=$?
check "v4.channel.k8s.io when only v4 is offered" eq "$(sed -n 's/^protocol: //p' "$WORK/e4")" v4.channel.k8s.io
check "v4: exit code and both streams" eq "$rc/$(cat "$WORK/o4")/$(grep -c '^err4$' "$WORK/e4")" "4/out4/1"
head -c 100000 /dev/urandom >"$WORK/in4"
probe --stdin --protocols v4.channel.k8s.io --timeout 30000 -- head -c 100000 <"$WORK/in4" >"$WORK/in4.back"
check "v4: stdin streams (no EOF needed)" cmp "$WORK/in4" "$WORK/in4.back"

# 50 MB of output in flat memory.
YAO_EXEC_PROBE_RSS=1 probe --timeout 120000 -- head -c 50000000 /dev/zero 2>"$WORK/rss" | wc -c >"$WORK/n50"
check "50 MB of stdout arrives complete" eq "$(tr -d ' ' <"$WORK/n50")" 50000000
hwm=$(sed -n 's/^VmHWM: \([0-9]*\) kB/\1/p' "$WORK/rss")
echo "    probe peak RSS while streaming 50 MB: ${hwm:-?} kB"
check "  with peak RSS below 30 MB" test "${hwm:-999999}" -lt 30720
# A reader that stalls for 3 s: the probe blocks in its callback, lws stops reading, TCP
# pushes back on the server — nothing piles up in memory.
YAO_EXEC_PROBE_RSS=1 probe --timeout 120000 -- head -c 30000000 /dev/urandom 2>"$WORK/rss2" | (sleep 3; wc -c) >"$WORK/n30"
hwm2=$(sed -n 's/^VmHWM: \([0-9]*\) kB/\1/p' "$WORK/rss2")
check "a stalled reader: 30 MB complete, peak RSS still below 30 MB (${hwm2:-?} kB)" \
    eq "$(tr -d ' ' <"$WORK/n30")/$([ "${hwm2:-999999}" -lt 30720 ] && echo flat)" "30000000/flat"

# Errors are clear, and the probe exits 125.
probe -c nope -- true 2>"$WORK/e"; rc=$?
check "a missing container: exit 125" eq "$rc" 125
check "  and the server's message" contains "$(cat "$WORK/e")" "container nope is not valid for pod $POD"
"$PROBE" --kubeconfig "$KUBECONFIG" -n "$NS" no-such-pod -- true 2>"$WORK/e"; rc=$?
check "a missing pod: exit 125 with 404 and its message" contains "$rc $(cat "$WORK/e")" "125 exec_probe: exec: upgrade refused: HTTP 404: pods \"no-such-pod\" not found"
if [ -f "$YAO_PLANE_DIR/kubeconfig-unprivileged" ]; then
    "$PROBE" --kubeconfig "$YAO_PLANE_DIR/kubeconfig-unprivileged" -n "$NS" "$POD" -- true 2>"$WORK/e"; rc=$?
    check "no RBAC for pods/exec: exit 125, 403 and the reason" contains "$rc $(cat "$WORK/e")" "125 exec_probe: exec: upgrade refused: HTTP 403: pods \"$POD\" is forbidden"
fi
t0=$(now_ms)
probe --timeout 1000 -- sleep 30 2>"$WORK/e"; rc=$?
t1=$(now_ms)
check "a timeout: exit 125 and says so" contains "$rc $(cat "$WORK/e")" "125 exec_probe: exec: timed out after 1000 ms"
check "  within a second or two" test $((t1 - t0)) -lt 5000

# Four sessions at once, in threads of one process: each stream is its own.
probe --parallel 4 --timeout 60000 -- sh -c \
    'f=$(mktemp); head -c 3000000 /dev/urandom >"$f"; sha256sum <"$f" | cut -c1-64 >&2; cat "$f"; rm -f "$f"' \
    >"$WORK/par"; rc=$?
check "4 concurrent sessions all succeed" eq "$rc/$(grep -c 'rc=0 exit=0 stdout_bytes=3000000 ' "$WORK/par")" "0/4"
par_ok() {
    local line sha err
    while read -r line; do
        sha=${line#*stdout_sha256=}; sha=${sha%% *}
        err=${line#*stderr=}
        [ "$sha" = "$err" ] || { echo "    $line" >&2; return 1; }
    done <"$WORK/par"
    [ "$(sed 's/.*stdout_sha256=\([0-9a-f]*\).*/\1/' "$WORK/par" | sort -u | wc -l)" = 4 ]
}
check "  each one's stdout matches the hash it printed on stderr" par_ok

# Many sessions in one process: OpenSSL's ex-data index must not grow with them (see
# "TLS and libwebsockets 4.1" in controller/kube/exec.c), and none may fail.
YAO_EXEC_PROBE_VERBOSE=1 probe --repeat 30 -- true 2>"$WORK/rep"; rc=$?
check "30 sessions in a row in one process" eq "$rc" 0
idx=$(sed -n 's/^ssl_ex_index: \([0-9]*\) -> \([0-9]*\)$/\1 \2/p' "$WORK/rep")
check "  leave OpenSSL's ex-data index where it was ($idx)" test "${idx#* }" -le "$(( ${idx% *} + 1 ))"
echo "    exec of 'true', one session inside the probe (mean of 30): $(sed -n 's/^session_ms: //p' "$WORK/rep") ms"

# A terminal (with stdin): stderr arrives merged into stdout. (The short sleep is for kwok,
# which stops copying the pty's output as soon as the command exits.)
probe --stdin --tty -- sh -c 'echo to-out; echo to-err >&2; sleep 0.3' </dev/null >"$WORK/tty" 2>"$WORK/tty.e"; rc=$?
check "tty: exit 0, stderr merged into stdout" eq "$rc/$(tr -d '\r' <"$WORK/tty" | sort | tr '\n' ' ')" "0/to-err to-out "

# The terminal's size reaches the program: sent on the resize channel as the session opens
# (the server applies it while the command starts, hence the short sleep first), and again
# at each SIGWINCH the probe gets (--size's next value).
probe --stdin --tty --size 80x24 -- sh -c 'sleep 0.3; stty size; sleep 0.3' </dev/null >"$WORK/size"; rc=$?
check "tty: the program sees the size that was sent (stty size: 24 80)" eq "$rc/$(tr -d '\r' <"$WORK/size")" "0/24 80"
"$PROBE" --kubeconfig "$KUBECONFIG" -n "$NS" "$POD" --stdin --tty --size 80x24,132x43 -- \
    sh -c 'sleep 0.3; stty size; sleep 1.7; stty size; sleep 0.3' </dev/null >"$WORK/winch" &
pid=$!
sleep 1
kill -WINCH "$pid"
wait "$pid"; rc=$?
check "tty: a SIGWINCH sends the new size (24 80, then 43 132)" eq "$rc/$(tr -d '\r' <"$WORK/winch" | tr '\n' ' ')" "0/24 80 43 132 "

# A command that exits without reading its stdin: the server stops reading, sends the
# status and closes at once, so a reset lands right behind the status. The exit code must
# come back every time, quickly (it used to: "sending stdin failed", exit 125, 11 runs in
# 20), with stdin from the fd (reader thread) and from the callback.
head -c 5000000 /dev/urandom >"$WORK/in5"
exit3_runs() {
    local i rc t0 t1
    for i in $(seq 20); do
        t0=$(now_ms)
        timeout 30 "$PROBE" --kubeconfig "$KUBECONFIG" -n "$NS" "$POD" "$1" -- sh -c 'exit 3' \
            <"$WORK/in5" 2>"$WORK/exit3.err"; rc=$?
        t1=$(now_ms)
        if [ "$rc" != 3 ] || [ $((t1 - t0)) -ge 3000 ]; then
            echo "    run $i: exit $rc after $((t1 - t0)) ms: $(tail -1 "$WORK/exit3.err")" >&2
            return 1
        fi
    done
}
check "exit without reading 5 MB of stdin (fd): exit 3 within 3 s, 20 runs in a row" exit3_runs --stdin
check "exit without reading 5 MB of stdin (callback): exit 3 within 3 s, 20 runs in a row" exit3_runs --stdin-callback

# Informational: latency of `true` and 100 MB throughput, ours and kubectl's.
n=10
t0=$(now_ms); for _ in $(seq $n); do probe -- true; done; t1=$(now_ms)
k0=$(now_ms); for _ in $(seq $n); do kubectl -n "$NS" exec "$POD" -- true; done; k1=$(now_ms)
echo "    exec of 'true', per call incl. process start: exec_probe $(((t1 - t0) / n)) ms, kubectl $(((k1 - k0) / n)) ms"
t0=$(now_ms); probe --timeout 300000 -- head -c 100000000 /dev/zero | wc -c >"$WORK/n100"; t1=$(now_ms)
k0=$(now_ms); kubectl -n "$NS" exec "$POD" -- head -c 100000000 /dev/zero | wc -c >"$WORK/k100"; k1=$(now_ms)
echo "    100 MB of stdout: exec_probe $((t1 - t0)) ms ($((100000 / (t1 - t0 + 1))) MB/s, $(tr -d ' ' <"$WORK/n100") bytes)," \
    "kubectl exec $((k1 - k0)) ms ($((100000 / (k1 - k0 + 1))) MB/s, $(tr -d ' ' <"$WORK/k100") bytes)"

finish
