#!/usr/bin/env bash
# Sanitizers on the C side (docs/security.md, "Sanitizers"), on conformance programs:
#  - the host programs, using the SDK headers as the conformance hosts do, built with
#    AddressSanitizer + UndefinedBehaviorSanitizer (any report stops the program: it fails);
#  - the DPU runtime (sdk/dpu) and the DPU programs built with -fsanitize=undefined
#    -fsanitize-trap=undefined (there is no sanitizer runtime on a DPU: undefined behaviour
#    executes a trap, which the emulator reports as a DPU fault, and the test fails).
# Builds in a temporary copy (the conformance binaries are left alone); prints one PASS/FAIL
# line per program, then "N passed, M failed"; exits non-zero if any failed.
#
#   tests/sanitizers/run.sh [NAME...]     (default: the list below)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$root/sdk/bin:$PATH"
export LD_LIBRARY_PATH="$root/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:exitcode=86"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87"
timeout_s=${SANITIZER_TIMEOUT:-300}

if [ $# -gt 0 ]; then
    tests=("$@")
else
    # Host code paths: every transfer kind, async, callbacks, logs, errors, incbin; DPU runtime:
    # allocators, printf, mutexes, barriers, seqread, perfcounter, arithmetic helpers.
    tests=(transfers async printf errors sdk_surface incbin dpu_runtime allocators
        histogram_mutex reduction)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
compiler=${OPENPIM_DPU_COMPILER:-clang}
export OPENPIM_DPU_BUILD="$work/dpu-runtime"
ub="-fsanitize=undefined -fsanitize-trap=undefined"
if ! make -s -C "$root/sdk/dpu" COMPILER="$compiler" BUILD="$OPENPIM_DPU_BUILD/$compiler" \
    EXTRA_CFLAGS="$ub" >"$work/runtime.log" 2>&1; then
    echo "FAIL building the DPU runtime with $ub"
    sed 's/^/    /' "$work/runtime.log" | tail -n 20
    echo "0 passed, 1 failed"
    exit 1
fi
host_flags="$(dpu-pkg-config --cflags --libs dpu) -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"

passed=0
failed=0
for t in "${tests[@]}"; do
    src="$root/tests/conformance/$t"
    dir="$work/$t"
    if [ ! -f "$src/Makefile" ]; then
        echo "FAIL $t (no such conformance test)"
        failed=$((failed + 1))
        continue
    fi
    cp -r "$src" "$dir"
    rm -rf "$dir/bin"
    log="$work/$t.log"
    if ! make -s -C "$dir" DPU_CC="dpu-upmem-dpurte-clang $ub" HOST_FLAGS="$host_flags" >"$log" 2>&1; then
        echo "FAIL $t (build failed)"
        sed 's/^/    /' "$log" | tail -n 20
        failed=$((failed + 1))
        continue
    fi
    (cd "$dir" && timeout "$timeout_s" ./bin/host) >>"$log" 2>&1
    rc=$?
    # SANITIZER_KEEP=DIR keeps each program's output there.
    if [ -n "${SANITIZER_KEEP:-}" ]; then cp "$log" "$SANITIZER_KEEP"/; fi
    if [ $rc -eq 0 ] && ! grep -q "runtime error:\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer" "$log"; then
        echo "PASS $t"
        passed=$((passed + 1))
    else
        echo "FAIL $t (exit $rc)"
        "$here/../failure-excerpt.sh" "$log" 30
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
