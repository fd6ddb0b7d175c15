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

# The tests' Makefiles do not know that their DPU programs depend on the SDK's headers, DPU
# runtime and compiler shim: a test whose binaries were built with another toolchain is rebuilt
# (a stamp in its bin/ names the toolchain's contents and the DPU compiler chosen).
toolchain=$( (echo "compiler=${OPENPIM_DPU_COMPILER:-default}"
    cd "$root" && find sdk/bin sdk/include sdk/dpu -type f \( -path 'sdk/dpu/build/*' -prune -o -print \) |
        LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16)

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
    if [ -d "$dir/bin" ] && [ "$(cat "$dir/bin/.toolchain" 2>/dev/null)" != "$toolchain" ]; then
        rm -rf "$dir/bin"
    fi
    if make -s -C "$dir" >"$log" 2>&1; then
        [ -d "$dir/bin" ] && echo "$toolchain" >"$dir/bin/.toolchain"
    else
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
