#!/usr/bin/env bash
# Docs that run: the README's first CLI session (the ```sh block after the marker
# "<!-- docs-test: runs as written -->") is run as written, top to bottom, with bash -e, in
# an empty directory beside the repository's manifests, as a user with the plane's
# kubeconfig and the built yao-sandbox on PATH, against the controller as the README runs
# it and the default image on the real node. Then what it printed is checked: the command's
# output, the script from stdin, the file kept across the stop, the list, and that the
# delete took the Sandbox, then its pod and its workspace.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-demo
LOG=$BUILD_DIR/test-node-docs.log
: > "$LOG"
install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0

block=$(python3 - "$SRC_DIR/README.md" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
i = lines.index("<!-- docs-test: runs as written -->")
assert lines[i + 1] == "```sh", "the marker is not followed by a ```sh block"
end = lines.index("```", i + 2)
print("\n".join(lines[i + 2:end]))
PY
)
check "the README has the marked block" test -n "$block"
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
ln -s "$SRC_DIR/manifests" "$WORK/manifests"
printf '%s\n' "$block" > "$WORK/readme-session.sh"
out=$(cd "$WORK" && PATH="$BUILD_DIR/bin:$PATH" timeout 300 bash -euo pipefail readme-session.sh 2>"$WORK/stderr")
rc=$?
echo "$out" | sed 's/^/    | /'
[ "$rc" = 0 ] || sed 's/^/    ! /' "$WORK/stderr"
check "the block runs as written (exit 0)" eq "$rc" 0
check "  create prints the sample's name (get-or-create found it)" eval "grep -qx alice-chat42 <<<\"\$out\""
check "  exec prints the command's output" eval "grep -qx 42 <<<\"\$out\""
check "  the script from stdin ran in the sandbox's pod, in /workspace" eval \
    "grep -qx 'hello from yao-sb-alice-chat-42[-0-9a-f]* in /workspace' <<<\"\$out\""
check "  the file written before the stop is read after it (started again on use)" eval "grep -qx 'buy milk' <<<\"\$out\""
check "  list shows the sandbox" eval "grep -q '^alice-chat42 *alice *chat-42 ' <<<\"\$out\""
check "  delete --wait took the Sandbox" eval "! kubectl -n $NS get sandbox alice-chat42 >/dev/null 2>&1"
no_owned() { [ "$(kubectl -n $NS get pods,pvc -l sandbox.yaoapps.com/user=alice --no-headers 2>/dev/null | wc -l)" = 0 ]; }
check "  and its pod and workspace go after it (the garbage collector, the pod's grace period)" eventually 90 no_owned
finish
