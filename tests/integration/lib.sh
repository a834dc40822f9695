# tests/integration/lib.sh — shared helpers for the integration suites: the kubeconfig of
# the running local plane, kubectl wrappers, polling with deadlines, and check() that counts
# results and prints the closing line "N passed, N failed". Sourced by test_*.sh.
set -uo pipefail
IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${YAO_SOURCE_DIR:-$(cd "$IT_DIR/../.." && pwd)}
BUILD_DIR=${YAO_BUILD_DIR:-$SRC_DIR/build}
. "$SRC_DIR/tests/cluster/common.sh"
export KUBECONFIG=$YAO_PLANE_DIR/kubeconfig
[ -f "$KUBECONFIG" ] || { echo "no local plane: run tests/cluster/up first" >&2; exit 1; }

PASSED=0
FAILED=0
CLEANUPS=()

# check NAME CMD... — run CMD; count and print the outcome.
check() {
    local name=$1; shift
    if "$@"; then
        PASSED=$((PASSED + 1)); echo "ok   $name"
    else
        FAILED=$((FAILED + 1)); echo "FAIL $name"
    fi
}

# eventually SECONDS CMD... — true once CMD succeeds within the deadline (polls every 0.1 s).
eventually() {
    local secs=$1; shift
    local deadline; deadline=$(($(date +%s%N) / 1000000 + secs * 1000))
    until "$@" >/dev/null 2>&1; do
        [ "$(($(date +%s%N) / 1000000))" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}

# eq A B — string equality with a message on mismatch.
eq() {
    if [ "$1" == "$2" ]; then return 0; fi
    echo "    expected [$2], got [$1]" >&2
    return 1
}

# contains HAYSTACK NEEDLE
contains() {
    case "$1" in *"$2"*) return 0 ;; esac
    echo "    [$1] does not contain [$2]" >&2
    return 1
}

on_exit() { CLEANUPS+=("$*"); }
finish() {
    local i
    for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do eval "${CLEANUPS[$i]}" >/dev/null 2>&1 || true; done
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" = 0 ]
}

# fresh_namespace NAME — (re)create a namespace and remove it at the end.
fresh_namespace() {
    kubectl delete namespace "$1" --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
    kubectl create namespace "$1" >/dev/null
    on_exit "kubectl delete namespace $1 --wait=false"
}
