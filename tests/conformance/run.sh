#!/usr/bin/env bash
# OpenPIM conformance suite: UPMEM-style programs (host + DPU), each built with
# the SDK's own commands and checked against a CPU reference computed by its
# host program.
#
#   tests/conformance/run.sh [NAME...]     run every test (or only NAME...)
#
# Needs target/release/libdpu.so (built by the top-level `make`) and the shims
# in sdk/bin, which this script puts on PATH. Prints one PASS/FAIL line per
# test, then "N passed, M failed"; exits non-zero if any test failed.
# Environment: CONFORMANCE_TIMEOUT (seconds per test, default 180),
#              CONFORMANCE_VERBOSE=1 (print every test's output).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$root/sdk/bin:$PATH"
export LD_LIBRARY_PATH="$root/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout_s=${CONFORMANCE_TIMEOUT:-180}

if [ ! -f "$root/target/release/libdpu.so" ]; then
    echo "note: $root/target/release/libdpu.so is missing (run 'make build' first)" >&2
fi

if [ $# -gt 0 ]; then
    tests=("$@")
else
    tests=()
    for d in "$here"/*/; do
        [ -f "$d/Makefile" ] && tests+=("$(basename "$d")")
    done
fi


passed=0
failed=0
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
for t in "${tests[@]}"; do
    dir="$here/$t"
    log="$logdir/$t.log"
    start=$(date +%s)
    if [ ! -f "$dir/Makefile" ]; then
        echo "FAIL $t (no such test)"
        failed=$((failed + 1))
        continue
    fi
    # (A test whose programs were built with another DPU toolchain is rebuilt.)
    "$root/scripts/dpu-toolchain.sh" fresh "$dir"
    if ! make -s -C "$dir" >"$log" 2>&1; then
        echo "FAIL $t (build failed)"
        sed 's/^/    /' "$log" | tail -n 30
        failed=$((failed + 1))
        continue
    fi
    (cd "$dir" && timeout "$timeout_s" ./bin/host) >>"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    if [ $rc -eq 0 ]; then
        echo "PASS $t (${secs}s)"
        passed=$((passed + 1))
        [ "${CONFORMANCE_VERBOSE:-0}" = 1 ] && sed 's/^/    /' "$log"
    else
        if [ $rc -eq 124 ]; then
            echo "FAIL $t (timed out after ${timeout_s}s)"
        else
            echo "FAIL $t (exit status $rc, ${secs}s)"
        fi
        "$here/../failure-excerpt.sh" "$log" 40
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
