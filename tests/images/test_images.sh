#!/usr/bin/env bash
# Container image tests: build both images with images/build.sh (idempotent; a warm run
# takes seconds), then look inside them with `buildah run --isolation=chroot` — the only
# way to run an image on machines where `podman run` cannot (crun, no cgroups/rlimits).
#
#   tests/images/test_images.sh            build (if needed) and test
#   YAO_IMAGES_SKIP_BUILD=1 ...            test the images already in the store
#
# Prints one line per check and "N passed, N failed"; exits non-zero when any failed.
# Needs root (rootful image store, chroot isolation).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VERSION=$(sed -n 's/^project(yao-sandbox VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
TAG=${YAO_IMAGE_TAG:-$VERSION}
CONTROLLER=yao-sandbox/controller:$TAG
SANDBOX=yao-sandbox/sandbox:$TAG
PASSED=0
FAILED=0
CONTAINERS=()
WORK=$(mktemp -d)

cleanup() {
    local c
    for c in "${CONTAINERS[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

pass() { PASSED=$((PASSED + 1)); printf 'ok   %s\n' "$1"; }
fail() { FAILED=$((FAILED + 1)); printf 'FAIL %s\n' "$1"; [ $# -gt 1 ] && printf '     %s\n' "${@:2}"; return 0; }
# expect NAME EXPECTED ACTUAL
expect() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected: $2" "actual:   $3"; fi; }
# expect_match NAME ERE ACTUAL
expect_match() { if [[ $3 =~ $2 ]]; then pass "$1"; else fail "$1" "expected to match: $2" "actual: $3"; fi; }

finish() {
    printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
    [ "$FAILED" -eq 0 ]
    exit $?
}

# new_container IMAGE : a working container in $c (not via $(...): the list of containers
# to remove at exit must be updated in this shell)
new_container() {
    c=$(buildah from --pull=never --quiet "$1") || return 1
    CONTAINERS+=("$c")
}
# run CONTAINER CMD... : stdout+stderr of CMD inside the container, buildah's exit status
run() { local c=$1; shift; buildah run --isolation=chroot "$c" -- "$@" 2>&1; }
# run_sh CONTAINER SCRIPT : like run, with sh -c; buildah's own error lines are dropped
# Under heavy load buildah run has (rarely) returned nothing at all, not even its own error:
# the image is what is tested, so a run that printed nothing is tried once more (noted).
run_sh() {
    local out
    out=$(buildah run --isolation=chroot "$1" -- /bin/sh -c "$2" 2>&1)
    if [ -z "$out" ]; then
        echo "     (buildah run printed nothing; running it again)" >&2
        out=$(buildah run --isolation=chroot "$1" -- /bin/sh -c "$2" 2>&1)
    fi
    [ -z "$out" ] || grep -v -E '^(subprocess exited with status|Error: exit status) ' <<<"$out"
}
# cfg IMAGE JQ-FILTER : a field of the image's OCI config (buildah's --format has no json)
cfg() { buildah inspect --type image "$1" 2>/dev/null | jq -c -r ".OCIv1.config | $2"; }

if [ "$(id -u)" != 0 ]; then echo "tests/images: needs root"; echo "0 passed, 1 failed"; exit 1; fi
command -v jq >/dev/null || { echo "tests/images: needs jq"; echo "0 passed, 1 failed"; exit 1; }

# --- build ------------------------------------------------------------------------
if [ "${YAO_IMAGES_SKIP_BUILD:-0}" != 1 ]; then
    start=$(date +%s)
    if "$ROOT/images/build.sh" >"$WORK/build.log" 2>&1; then
        pass "images/build.sh built both images ($(($(date +%s) - start))s)"
        grep -E 'built in|debootstrap|size ' "$WORK/build.log" | sed 's/^\[images\]/    /'
    else
        fail "images/build.sh" "$(tail -25 "$WORK/build.log")"
        finish
    fi
fi
for img in "$CONTROLLER" "$SANDBOX"; do
    if buildah inspect --type image "$img" >/dev/null 2>&1; then pass "image $img exists"
    else fail "image $img exists"; finish; fi
done

# --- controller image ----------------------------------------------------------------
user=$(cfg "$CONTROLLER" .User)
expect "controller: image USER is 65532:65532" "65532:65532" "$user"
expect "controller: ENTRYPOINT is the controller binary" \
    '["/usr/local/bin/yao-sandbox-controller"]' "$(cfg "$CONTROLLER" .Entrypoint)"
expect "controller: version label" "$VERSION" \
    "$(cfg "$CONTROLLER" '.Labels["org.opencontainers.image.version"]')"

new_container "$CONTROLLER" || { fail "buildah from $CONTROLLER"; finish; }
expect "controller: yao-sandbox-controller --version" \
    "yao-sandbox-controller $VERSION" "$(run "$c" yao-sandbox-controller --version)"
expect "controller: runs as uid 65532 (non-root)" "65532" "$(run "$c" id -u)"
# With no kubeconfig and no in-cluster service account the entrypoint must fail cleanly:
# status 1 and one error line, not a crash from a missing library or bad path.
out=$(run_sh "$c" '/usr/local/bin/yao-sandbox-controller >/tmp/o 2>/tmp/e </dev/null; echo "rc=$? lines=$(wc -l </tmp/e)"; head -1 /tmp/e')
expect_match "controller: entrypoint without a cluster exits 1 with one error line" \
    '^rc=1 lines=1'$'\n''yao-sandbox-controller: ' "$out"
if [ -f "$ROOT/cli/main.c" ]; then
    out=$(run "$c" yao-sandbox --version)
    expect_match "controller: yao-sandbox (CLI) --version" "^yao-sandbox .*$VERSION" "$out"
else
    echo "skip controller: yao-sandbox CLI (cli/main.c does not exist yet)"
fi
out=$(run_sh "$c" 'for b in /usr/local/bin/*; do ldd "$b" | grep "not found" | sed "s|^|$b: |"; done; echo done')
expect "controller: every shared library of the binaries is present" "done" "$out"
out=$(run_sh "$c" 'for t in cc gcc cmake make pkg-config; do command -v $t; done; ls /usr/include 2>/dev/null | head -3; echo done')
expect "controller: no toolchain or headers in the runtime image" "done" "$out"
expect "controller: CA certificates present" "yes" "$(run_sh "$c" 'test -s /etc/ssl/certs/ca-certificates.crt && echo yes')"

# --- sandbox image -------------------------------------------------------------------
expect "sandbox: image USER is 1000:1000" "1000:1000" "$(cfg "$SANDBOX" .User)"
expect "sandbox: WORKDIR is /workspace" "/workspace" "$(cfg "$SANDBOX" .WorkingDir)"
entrypoint=$(cfg "$SANDBOX" .Entrypoint)
# The image idles with the same script the controller puts into the pod's command.
idle=$(sed -n 's/^#define SBX_IDLE_SCRIPT "\(.*\)"$/\1/p' "$ROOT/controller/sandbox/model/spec.h" 2>/dev/null)
if [ -n "$idle" ]; then
    expect "sandbox: ENTRYPOINT idles with the controller's SBX_IDLE_SCRIPT" \
        "$(jq -cn --arg s "$idle" '["/bin/sh","-c",$s]')" "$entrypoint"
fi

new_container "$SANDBOX" || { fail "buildah from $SANDBOX"; finish; }
expect "sandbox: runs as uid 1000, gid 1000, user sandbox" \
    "uid=1000(sandbox) gid=1000(sandbox) groups=1000(sandbox)" "$(run "$c" id)"
expect "sandbox: starts in /workspace" "/workspace" "$(run "$c" pwd)"
expect "sandbox: /workspace owned by 1000:1000" "1000:1000 755" "$(run "$c" stat -c '%u:%g %a' /workspace)"
expect "sandbox: /workspace writable by the sandbox user" "hello" \
    "$(run_sh "$c" 'echo hello >/workspace/t && cat /workspace/t && rm /workspace/t')"
expect "sandbox: HOME is /home/sandbox and writable" "/home/sandbox ok" \
    "$(run_sh "$c" 'touch "$HOME/.t" && rm "$HOME/.t" && echo "$HOME ok"')"
for tool in git curl tar; do
    out=$(run "$c" "$tool" --version | head -1)
    expect_match "sandbox: $tool present" "^($tool|curl [0-9]|tar \(GNU tar\))" "$out"
done
# tar over exec is how `yao-sandbox cp` moves files: pack and unpack through a pipe.
out=$(run_sh "$c" 'mkdir -p /workspace/d && printf x >/workspace/d/f && tar -C /workspace -cf - d | tar -C /tmp -xf - && cat /tmp/d/f && rm -rf /workspace/d /tmp/d')
expect "sandbox: tar round trip as the sandbox user" "x" "$out"
expect "sandbox: curl has CA certificates" "yes" "$(run_sh "$c" 'test -s /etc/ssl/certs/ca-certificates.crt && echo yes')"

out=$(run "$c" yao-bridge --version)
expect_match "sandbox: yao-bridge --version" "^yao-bridge $VERSION \\(OpenSSL 3" "$out"
expect "sandbox: yao-bridge is /usr/local/bin/yao-bridge" "/usr/local/bin/yao-bridge" "$(run_sh "$c" 'command -v yao-bridge')"
out=$(run_sh "$c" 'for b in /usr/local/bin/*; do ldd "$b" | grep "not found" | sed "s|^|$b: |"; done; echo done')
expect "sandbox: every shared library of yao-bridge is present" "done" "$out"
out=$(run_sh "$c" 'yao-bridge /nonexistent/mcp.sock >/tmp/o 2>/tmp/e </dev/null; echo "rc=$? out=$(wc -c </tmp/o) lines=$(wc -l </tmp/e)"; cat /tmp/e')
expect_match "sandbox: yao-bridge to a missing socket: exit 1, one error line, no output" \
    '^rc=1 out=0 lines=1'$'\n''yao-bridge: .*/nonexistent/mcp.sock' "$out"

# A real round trip inside the image: a Unix-socket echo peer (perl-base is part of every
# Debian image) and the bridge between a pipe and it. The request stream is MCP
# JSON-RPC lines plus 1 MiB of random bytes; what comes back must be byte-identical, and
# the bridge must exit 0 once the peer has echoed everything after stdin's half-close.
# Both socket-path forms are exercised: the argument and YAO_IPC_MODE/YAO_IPC_ADDR.
roundtrip='
peer() {
  rm -f /tmp/mcp.sock
  timeout 30 perl -MIO::Socket::UNIX -e "
    my \$s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => \"/tmp/mcp.sock\", Listen => 1) or die \"listen: \$!\";
    my \$c = \$s->accept or die \"accept: \$!\";
    while (1) { my \$n = sysread(\$c, my \$b, 65536); die \"read: \$!\" unless defined \$n; last if \$n == 0;
                my \$o = 0; while (\$o < \$n) { my \$w = syswrite(\$c, \$b, \$n - \$o, \$o); die \"write: \$!\" unless \$w; \$o += \$w } }
    close \$c;" &
  i=0; while [ ! -S /tmp/mcp.sock ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}
{ printf "%s\n" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}" \
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}" \
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}"
  head -c 1048576 /dev/urandom; } >/tmp/req
peer; timeout 30 yao-bridge /tmp/mcp.sock </tmp/req >/tmp/resp1 2>/tmp/err1; rc1=$?; wait
peer; YAO_IPC_MODE=socket YAO_IPC_ADDR=/tmp/mcp.sock timeout 30 yao-bridge </tmp/req >/tmp/resp2 2>/tmp/err2; rc2=$?; wait
want=$(sha256sum </tmp/req)
for n in 1 2; do
  eval rc=\$rc$n
  if [ "$(sha256sum </tmp/resp$n)" = "$want" ]; then same=yes; else same=no; fi
  echo "run$n rc=$rc identical=$same bytes=$(wc -c </tmp/resp$n) stderr=$(wc -c </tmp/err$n)"
done
rm -f /tmp/req /tmp/resp? /tmp/err? /tmp/mcp.sock'
out=$(run_sh "$c" "$roundtrip")
size=$((1048576 + $(printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | wc -c)))
expect "sandbox: yao-bridge round trip (MCP lines + 1 MiB) via SOCKET_PATH and via YAO_IPC_*" \
    "run1 rc=0 identical=yes bytes=$size stderr=0"$'\n'"run2 rc=0 identical=yes bytes=$size stderr=0" "$out"

# The idle main process: SIGTERM must end it at once and cleanly. `timeout
# --preserve-status -s TERM 2` sends SIGTERM after 2 s and returns the child's own
# status, so 0 proves the trap ran (an unhandled TERM would give 143; plain `timeout`
# would say 124 either way and prove nothing). Elapsed must be >= 2 s (it idled, did not
# just exit); promptness is `-k 3`: still running 3 s after the signal, it is killed and
# the status is 137 (`sleep 3600 & wait` keeps the shell interruptible). The wall clock
# has no upper bound: it includes buildah's own start, seconds on a loaded machine. chroot isolation has no PID namespace, so `unshare --pid --fork` gives
# the run one, as in a pod: its background `sleep` dies with it instead of lingering.
mapfile -t ep < <(jq -r '.[]' <<<"$entrypoint")
wrap=()
unshare --pid --fork --kill-child true 2>/dev/null && wrap=(unshare --pid --fork --kill-child --)
t0=$(date +%s%N)
"${wrap[@]}" buildah run --isolation=chroot "$c" -- timeout --preserve-status -k 3 -s TERM 2 "${ep[@]}" >/dev/null 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$rc" = 0 ] && [ "$ms" -ge 1900 ]; then
    pass "sandbox: idle entrypoint exits 0 on SIGTERM (${ms} ms incl. 2 s idle)"
else
    fail "sandbox: idle entrypoint exits 0 on SIGTERM" "rc=$rc after ${ms} ms (want rc=0 within 3 s of the signal, >= 1900 ms in all)"
fi
t0=$(date +%s%N)
"${wrap[@]}" buildah run --isolation=chroot "$c" -- timeout --preserve-status -k 3 -s INT 1 "${ep[@]}" >/dev/null 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$rc" = 0 ]; then pass "sandbox: idle entrypoint exits 0 on SIGINT (${ms} ms)"
else fail "sandbox: idle entrypoint exits 0 on SIGINT" "rc=$rc after ${ms} ms"; fi

# --- sizes ---------------------------------------------------------------------------
buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' \
    | grep -E "(yao-sandbox/(controller|sandbox):$TAG|debian:bookworm-slim) " | sed 's/^/size /'

finish
