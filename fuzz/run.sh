#!/usr/bin/env bash
# fuzz/run.sh — build and run the libFuzzer targets of fuzz/, one at a time.
#
#   fuzz/run.sh [SECONDS]   build every target with clang (-fsanitize=fuzzer,address,undefined),
#                           run each for SECONDS (default 20) from its seed corpus
#                           (fuzz/corpus/<t>/) and saved crashes (fuzz/regressions/<t>/);
#                           print execs, exec/s and coverage per target, then
#                           "N passed, N failed"; exit 1 if any target crashed.
#   fuzz/run.sh --replay    build fuzz/replay.c with each target using gcc + ASan/UBSan and
#                           replay fuzz/regressions/<t>/ and fuzz/corpus/<t>/ (no clang needed).
#
# Environment: FUZZ_TARGETS="ndjson spec" runs a subset; FUZZ_WORK (default
# /tmp/yao-fuzz-$UID) holds binaries, the growing corpora, logs and crash artifacts;
# CLANG (default clang, else clang-14); FUZZ_JOBS is not supported on purpose: one
# fuzzer at a time. Sources are compiled directly (the controller files each target needs
# plus the pkg-config libraries); nothing here uses or touches the CMake build.
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
work=${FUZZ_WORK:-/tmp/yao-fuzz-$(id -u)}
all_targets="ndjson kubeconfig spec exec_demux wsframe quantity naming cidr"
targets=${FUZZ_TARGETS:-$all_targets}

# Controller sources per target (relative to controller/). The targets that need the REST
# client take the whole client library (base/, kube/ and runtime/), so a new dependency of
# it never breaks this build; every target takes base/ (clock, errfmt, dynbuf), which any
# layer may use.
base_library() { (cd "$src/controller" && shopt -s nullglob && echo base/*.c); }
client_library() { (cd "$src/controller" && shopt -s nullglob && echo base/*.c kube/*.c runtime/*.c); }
sources() {
    case $1 in
    ndjson)     client_library ;;
    kubeconfig) client_library ;;
    spec)       echo $(base_library) kube/kjson.c sandbox/model/spec.c sandbox/model/builders.c sandbox/model/naming.c sandbox/model/quantity.c ;;
    exec_demux) client_library ;;
    wsframe)    echo $(base_library) kube/wsframe.c ;;
    quantity)   echo $(base_library) sandbox/model/quantity.c ;;
    naming)     echo $(base_library) sandbox/model/naming.c ;;
    cidr)       echo $(base_library) kube/kjson.c sandbox/model/netpol.c sandbox/model/spec.c sandbox/model/builders.c sandbox/model/naming.c sandbox/model/quantity.c ;;
    *) echo "run.sh: unknown target $1" >&2; return 1 ;;
    esac
}

# Longest input per target: enough for the formats, small enough to stay fast.
max_len() {
    case $1 in
    ndjson) echo 65536 ;; kubeconfig|spec) echo 16384 ;; exec_demux|wsframe) echo 8192 ;;
    quantity) echo 64 ;; naming) echo 1024 ;; cidr) echo 256 ;;
    esac
}

libs=$(pkg-config --cflags --libs libcurl libcjson yaml-0.1 openssl libwebsockets zlib) || {
    echo "run.sh: pkg-config failed (libcurl libcjson yaml-0.1 openssl libwebsockets zlib)" >&2
    exit 2
}
common=(-std=c11 -D_GNU_SOURCE '-DYAO_VERSION="0.1.0"' -I"$src/controller" -I"$here"
        -g -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter)

# build_one COMPILER SANFLAGS OUT MAIN TARGET
build_one() {
    local cc=$1 san=$2 out=$3 main=$4 t=$5 files=() f
    for f in $(sources "$t"); do files+=("$src/controller/$f"); done
    # shellcheck disable=SC2086
    "$cc" "${common[@]}" $san -o "$out" $main "$here/fuzz_$t.c" "${files[@]}" $libs -lpthread -lm \
        >"$out.build.log" 2>&1 || { cat "$out.build.log" >&2; return 1; }
}

mkdir -p "$work/bin"

if [ "${1:-}" = "--replay" ]; then
    passed=0 failed=0
    for t in $targets; do
        bin=$work/bin/replay_$t
        if ! build_one "${CC:-gcc}" "-O1 -fsanitize=address,undefined -fno-sanitize-recover=all" \
                "$bin" "$here/replay.c" "$t"; then
            echo "FAIL $t (build)"; failed=$((failed + 1)); continue
        fi
        if YAO_SOURCE_DIR=$src ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
                "$bin" "$here/regressions/$t" "$here/corpus/$t" >"$work/replay_$t.log" 2>&1; then
            echo "ok   $t ($(tail -1 "$work/replay_$t.log"))"; passed=$((passed + 1))
        else
            echo "FAIL $t"; tail -30 "$work/replay_$t.log"; failed=$((failed + 1))
        fi
    done
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
fi

secs=${1:-20}
case $secs in ''|*[!0-9]*) echo "usage: $0 [SECONDS] | --replay" >&2; exit 2 ;; esac
clang=${CLANG:-}
if [ -z "$clang" ]; then
    for c in clang clang-14; do command -v "$c" >/dev/null && { clang=$c; break; }; done
fi
[ -n "$clang" ] || { echo "run.sh: clang not found (apt-get install -y clang libclang-rt-14-dev)" >&2; exit 2; }

passed=0 failed=0 summary=()
for t in $targets; do
    bin=$work/bin/fuzz_$t
    mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
    if ! build_one "$clang" "-O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all" \
            "$bin" "" "$t"; then
        summary+=("FAIL $t: build failed"); failed=$((failed + 1)); continue
    fi
    dict=()
    [ -f "$here/dict/$t.dict" ] && dict=(-dict="$here/dict/$t.dict")
    seeds=("$here/corpus/$t")
    [ -d "$here/regressions/$t" ] && seeds+=("$here/regressions/$t")
    log=$work/fuzz_$t.log
    echo "== $t: ${secs}s, max_len $(max_len "$t")"
    YAO_SOURCE_DIR=$src "$bin" -max_total_time="$secs" -max_len="$(max_len "$t")" \
        -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/$t/" "${dict[@]}" \
        "$work/corpus/$t" "${seeds[@]}" </dev/null >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
    corp=$(grep -o 'corp: [0-9]*/[0-9a-zA-Z]*' "$log" | tail -1)
    line="$t: ${execs:-?} execs, ${rate:-?} exec/s, ${cov:-cov: ?}, ${corp:-corp: ?}"
    # A timeout is a wall-clock alarm: on a loaded CI machine a unit can be starved past it.
    # Replay the input alone: one that ends within the limit was not a hang (said so, and
    # kept in the artifacts); one that does not is a failure like any other.
    unit=$(sed -n 's/.*Test unit written to \(.*timeout-[0-9a-f]*\)$/\1/p' "$log" | tail -1)
    if [ $rc -ne 0 ] && grep -q 'SUMMARY: libFuzzer: timeout' "$log" && [ -f "$unit" ]; then
        t0=$(date +%s%N)
        if YAO_SOURCE_DIR=$src timeout 60 "$bin" -timeout=10 "$unit" >>"$log" 2>&1; then
            line="$line; a timeout under load, not reproduced: the unit ran alone in $((($(date +%s%N) - t0) / 1000000)) ms ($unit)"
            rc=0
        fi
    fi
    if [ $rc -eq 0 ]; then
        summary+=("ok   $line"); passed=$((passed + 1))
    else
        summary+=("FAIL $line (exit $rc; log $log)"); failed=$((failed + 1))
        grep -E 'ERROR: |SUMMARY: |property violated|Test unit written to' "$log" | head -8
    fi
done
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
