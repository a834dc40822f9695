#!/usr/bin/env bash
# Exec and the CLI's file helpers against real containers on the real node: stdout and
# stderr apart, exit codes, stdin EOF, 50 MB byte-exact each way; `exec -t` gives the
# program the terminal's size at start and after a resize (SIGWINCH); a command still
# running when its Sandbox stops is killed with its container (no process left on the node)
# and the CLI says the sandbox was stopped instead of passing on 137, without starting it
# again; no stdin hang when the command exits without reading; read/write/ls/stat/mkdir/
# rm/cp with spaces in names and a 5 MB binary file on the project's sandbox image and on a
# busybox-only image; clear errors for a missing directory and an image without tar; the
# sandbox image ships ps, kill, tar and GNU find.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-exec
LOG=$BUILD_DIR/test-node-exec.log
: > "$LOG"
CLI=$BUILD_DIR/bin/yao-sandbox
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

# A busybox-only image (no GNU tools, no tar): FROM scratch + static busybox.
bb=$(buildah from scratch)
buildah copy "$bb" /bin/busybox /bin/busybox >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox mkdir -p /usr/bin /sbin /usr/sbin /tmp /workspace >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox --install -s >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/rm -f /bin/tar >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/sh -c 'chmod 1777 /tmp; chown 1000:1000 /workspace' >/dev/null
buildah commit -q "$bb" localhost/yao-sandbox/busybox-test:1 >/dev/null
buildah rm "$bb" >/dev/null
check "a busybox-only image is pushed to the plane's registry" node_image yao-sandbox/busybox-test:1 localhost/yao-sandbox/busybox-test:1

kubectl -n $NS apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: box}
spec: {userID: exec-user, chatID: box, lifecycle: persistent}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: bb}
spec: {userID: exec-user, chatID: bb, lifecycle: persistent, image: "$NODE_REGISTRY/yao-sandbox/busybox-test:1"}
YAML
check "the sandbox runs on the real node" eventually 90 phase_is $NS box Running
check "the busybox sandbox runs on the real node" eventually 90 phase_is $NS bb Running
sx() { "$CLI" -n $NS exec "$@"; }

# --- streams and exit codes -------------------------------------------------------------------
sx box -- sh -c 'echo out; echo err >&2; exit 3' >"$WORK/o" 2>"$WORK/e"; rc=$?
check "exit code 3 comes back" eq "$rc" 3
check "stdout carries only stdout" eq "$(cat "$WORK/o")" out
check "stderr carries only stderr" eq "$(cat "$WORK/e")" err
check "stdin EOF reaches the command (wc -l counts 2 and ends)" eq "$(printf 'a\nb\n' | sx -i box -- wc -l | tr -d ' ')" 2
head -c 50000000 /dev/urandom > "$WORK/big"
sx -i box -- sh -c 'cat > /tmp/big' < "$WORK/big"
check "50 MB through stdin arrive byte-exact" eq "$(sx box -- sha256sum /tmp/big | cut -c1-64)" "$(sha256sum < "$WORK/big" | cut -c1-64)"
sx box -- cat /tmp/big > "$WORK/big.back"
check "50 MB through stdout arrive byte-exact" cmp "$WORK/big" "$WORK/big.back"
rm -f "$WORK/big.back"

# --- a terminal: its size at start and after a resize ----------------------------------------------
# (The runtime applies a terminal size after the command has started — for kubectl as for
# us — so the command reads it a moment later.)
check "exec -t: the program sees the terminal's size (stty size)" eq \
    "$(python3 "$IT_DIR/pty_run.py" 37 111 --timeout 30 -- "$CLI" -n $NS exec -i -t box -- sh -c 'sleep 1; stty size' | tr -d '\r' | tail -n1)" "37 111"
check "exec -t: a resize reaches the program (SIGWINCH)" eq \
    "$(python3 "$IT_DIR/pty_run.py" 24 80 --resize-after 2 50 132 --timeout 30 -- "$CLI" -n $NS exec -i -t box -- sh -c 'sleep 4; stty size' | tr -d '\r' | tail -n1)" "50 132"

# --- no stdin hang when the command exits without reading it ----------------------------------------
# 100 KB of stdin the command never reads: the exit code comes back at once, every time
# (the CLI stops sending when the status arrives instead of flushing stdin for seconds).
# With more unread stdin, the runtime itself sometimes never sends the status (containerd
# 1.6 keeps the exec's stdin open after the process exits): kubectl — WebSocket and SPDY —
# hangs as we do. Shown below next to kubectl, not asserted; see docs/local-control-plane.md.
head -c 100000 /dev/urandom > "$WORK/100k"
bad=0
for i in $(seq 10); do
    t0=$(now_ms)
    timeout 30 "$CLI" -n $NS exec -i box -- sh -c 'exit 3' < "$WORK/100k" >/dev/null 2>&1
    rc=$? ms=$(($(now_ms) - t0))
    [ $rc = 3 ] && [ $ms -lt 3000 ] || { bad=$((bad + 1)); echo "    run $i: rc $rc in $ms ms"; }
done
check "exec -i with 100 KB unread stdin: exit code 3 within 3 s, 10 of 10 times" eq "$bad" 0
head -c 1000000 /dev/urandom > "$WORK/1m"
POD=$(kubectl -n $NS get sandbox box -o jsonpath='{.status.podName}')
ours=0 theirs=0
for i in 1 2 3 4 5; do
    timeout 10 "$CLI" -n $NS exec -i box -- sh -c 'exit 3' < "$WORK/1m" >/dev/null 2>&1; [ $? = 3 ] && ours=$((ours + 1))
    timeout 10 kubectl -n $NS exec -i "$POD" -- sh -c 'exit 3' < "$WORK/1m" >/dev/null 2>&1; [ $? = 3 ] && theirs=$((theirs + 1))
done
echo "    1 MB of unread stdin: exit code within 10 s for yao-sandbox $ours of 5, kubectl $theirs of 5"

# --- file helpers, on both images ----------------------------------------------------------------
head -c 5000000 /dev/urandom > "$WORK/bin 5m.dat"
for sb in box bb; do
    f() { "$CLI" -n $NS "$@"; }
    check "$sb: mkdir -p a path with spaces" f mkdir "$sb" "/workspace/my dir/sub dir" -p
    # (three times: a stdin cut short shows up at random, see CLI_STDIN_CHILD)
    for i in 1 2 3; do
        check "$sb: write a 5 MB binary file ($i)" f write "$sb" "/workspace/my dir/bin 5m.dat" < "$WORK/bin 5m.dat"
        f read "$sb" "/workspace/my dir/bin 5m.dat" > "$WORK/back"
        check "$sb: read it back byte-exact ($i)" cmp "$WORK/bin 5m.dat" "$WORK/back"
    done
    check "$sb: ls lists it with its size" contains "$(f ls "$sb" "/workspace/my dir" -l 2>&1)" "5000000"
    check "$sb: ls -o json names it" contains "$(f ls "$sb" "/workspace/my dir" -o json 2>&1)" '"bin 5m.dat"'
    check "$sb: stat gives size and type" contains "$(f stat "$sb" "/workspace/my dir/bin 5m.dat" -o json 2>&1)" '5000000'
    check "$sb: rm -r removes the tree" f rm "$sb" "/workspace/my dir" -r
    check "$sb: and it is gone" test -n "$(f stat "$sb" "/workspace/my dir" 2>&1 >/dev/null)"
done
# cp needs tar in the sandbox: the project's image has it.
mkdir -p "$WORK/tree/a b"; cp "$WORK/bin 5m.dat" "$WORK/tree/a b/"; echo hi > "$WORK/tree/x y.txt"
check "cp a directory with spaces in" "$CLI" -n $NS cp "$WORK/tree" "box:/workspace/tree"
check "cp it back out" "$CLI" -n $NS cp "box:/workspace/tree" "$WORK/tree.back"
check "  byte-exact" diff -r "$WORK/tree" "$WORK/tree.back"
t0=$(now_ms)
out=$(timeout 30 "$CLI" -n $NS cp "$WORK/bin 5m.dat" "box:/workspace/no/such/dir/" 2>&1); rc=$?
check "cp into a missing directory fails at once (no hang) with a clear error" test "$rc" -ne 0 -a "$rc" -ne 124
check "  naming the directory" contains "$out" "/workspace/no/such/dir"
echo "    cp into a missing directory: rc $rc in $(($(now_ms) - t0)) ms: $out"
out=$(timeout 30 "$CLI" -n $NS cp "$WORK/tree" "bb:/workspace/tree" 2>&1); rc=$?
check "cp into an image without tar: a clear error naming tar" contains "$out" "tar"
check "  and a failure exit" test "$rc" -ne 0 -a "$rc" -ne 124
check "the sandbox image ships ps, kill, tar and GNU find" eq \
    "$(sx box -- sh -c 'for t in ps kill tar; do command -v $t >/dev/null && echo $t; done; find --version | head -n1 | cut -d" " -f1-3' | tr '\n' ' ')" \
    "ps kill tar find (GNU findutils) "

# --- a command running when its Sandbox stops ----------------------------------------------------------
POD=$(kubectl -n $NS get sandbox box -o jsonpath='{.status.podName}')
marker="yao-orphan-check-$$"
"$CLI" -n $NS exec box -- sh -c "sleep 3600; : $marker" >"$WORK/long.out" 2>"$WORK/long.err" &
long=$!
# (anchored: the CLI's own command line holds the marker too)
check "the long command is running in the container (seen on the node)" eventually 20 pgrep -f "^sh -c sleep 3600; : $marker"
"$CLI" -n $NS stop box >/dev/null
ended() { ! kill -0 $long 2>/dev/null; }
check "stopping the sandbox ends the exec" eventually 60 ended
wait $long; rc=$?
check "the process is killed with its container, none left on the node" eventually 30 sh -c "! pgrep -f '^sh -c sleep 3600; : $marker'"
check "the CLI reports the stop instead of exit 137" test "$rc" -ne 137 -a "$rc" -ne 0
check "  in one clear line naming the sandbox" contains "$(cat "$WORK/long.err")" "box"
echo "    exec ended with rc $rc: $(cat "$WORK/long.err")"
sleep 3
check "and the sandbox stays stopped (the CLI did not start it again)" eq "$(kubectl -n $NS get sandbox box -o jsonpath='{.spec.paused}/{.status.phase}')" "true/Stopped"
finish
