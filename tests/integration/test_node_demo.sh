#!/usr/bin/env bash
# The first of the README's two commands, as a user runs it: `make demo` in the repository
# (the very tests/cluster/demo it runs), on the plane the suites share. The demo finds the
# plane running, so it reuses it and leaves it as it found it. Checked: it exits 0, the
# sample Sandbox ran as a real container on the real node with the image from the plane's
# registry (not the built-in default nobody serves), the command's output came back from
# that container, and afterwards the plane is still up, the demo's namespace goes and the
# real node is cordoned again. Then the same demo once more (a user's second run).
. "$(dirname "$0")/lib.sh"
use_real_node --whole-node
LOG=$BUILD_DIR/test-node-demo.log
: > "$LOG"

# As the README writes it; a build directory other than build/ is named as make takes it.
make_demo() {
    local args=(demo)
    [ "$(cd "$BUILD_DIR" && pwd)" = "$(cd "$SRC_DIR" && pwd)/build" ] || args+=("BUILD=$BUILD_DIR")
    (cd "$SRC_DIR" && env -u YAO_SANDBOX_IMAGE -u YAO_SANDBOX_STORAGE_CLASS timeout 600 make "${args[@]}")
}

for run in first second; do
    t0=$(now_ms)
    make_demo > "$LOG.$run" 2>&1
    rc=$?
    echo "    make demo ($run run): exit $rc in $(( ($(now_ms) - t0) / 1000 )) s"
    out=$(cat "$LOG.$run")
    [ "$rc" = 0 ] || tail -n 60 "$LOG.$run" | cut -c1-300 | sed 's/^/    | /'
    check "make demo ($run run) exits 0" eq "$rc" 0
    check "  it says it reused the running plane" contains "$out" "reusing the running plane"
    check "  the controller took the image from the plane's registry" \
        contains "$out" "sandbox image: $NODE_REGISTRY/yao-sandbox/sandbox:$IMAGE_TAG"
    check "  the command ran in the sandbox's own container (its hostname is the pod's)" eval \
        "grep -qE '^hello from yao-sb-alice-chat-42(-[0-9a-f]+)?: uid=1000, ' <<<\"\$out\""
    check "  on the image's Debian" contains "$out" "image: Debian GNU/Linux 12 (bookworm)"
    check "  the workspace is writable" eval "grep -q 'hello.txt' <<<\"\$out\""
    check "  exit code 0 and the closing line" eval "grep -qx 'exit code: 0' <<<\"\$out\" && grep -qx 'demo finished' <<<\"\$out\""
    check "  the controller never fell back to its built-in image" eval "! grep -q 'built-in' <<<\"\$out\""
    check "  the plane is still up" eval "kubectl get --raw /readyz >/dev/null"
    gone() { ! kubectl get namespace yao-demo >/dev/null 2>&1; }
    check "  the demo's namespace goes" eventually 120 gone
    check "  yao-node is cordoned again (kwok nodes stay the default)" \
        eq "$(kubectl get node "$REAL_NODE" -o jsonpath='{.spec.unschedulable}')" true
    # use_real_node's own cordons for what follows
    kubectl uncordon "$REAL_NODE" >/dev/null
    kubectl cordon $(kubectl get nodes -l type=kwok -o name) >/dev/null
done
finish
