#!/usr/bin/env bash
# The fuzz targets' smoke test (`make fuzz-smoke`, run by .ci/run): installs cargo-fuzz when
# missing, builds every target, replays each target's regression inputs (fuzz/regressions/),
# then fuzzes each target for SECONDS (default 60) from its committed corpus
# (corpus/TARGET.tar.xz) and seeds, writing new inputs to a temporary folder only. Any crash fails it (the input is kept in
# fuzz/artifacts/TARGET/). Prints "N passed, M failed" over the targets.
#
# The smoke run is seeded (FUZZ_SMOKE_SEED, default 1), so CI follows the same sequence of
# mutations every time and a failure replays with the same seed: CI keeps the harnesses
# building and the known bugs fixed, and new findings come from fuzz/run.sh's long runs
# (each a fresh random seed), which go to fuzz/regressions/ once fixed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
secs=${1:-60}
export PATH="$HOME/.cargo/bin:$PATH"
./tools.sh fuzz-smoke || exit 1
targets=$(cargo +nightly fuzz list) || exit 1
cargo +nightly fuzz build >/dev/null 2>&1 || cargo +nightly fuzz build || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
for t in $targets; do
    bin="target/x86_64-unknown-linux-gnu/release/$t"
    mkdir -p "$work/$t" "artifacts/$t"
    ok=1
    if [ -d "regressions/$t" ] && ls "regressions/$t"/* >/dev/null 2>&1; then
        if ! "$bin" "regressions/$t"/* >"$work/$t.replay.log" 2>&1; then
            echo "FAIL $t: a regression input crashes it again"
            grep -m1 -A5 "panicked\|ERROR" "$work/$t.replay.log" | sed 's/^/    /'
            ok=0
        fi
    fi
    dirs=("$work/$t")
    if [ -f "corpus/$t.tar.xz" ]; then
        mkdir -p "$work/$t.corpus"
        tar -C "$work/$t.corpus" -xJf "corpus/$t.tar.xz"
        dirs+=("$work/$t.corpus")
    fi
    [ -d "seeds/$t" ] && dirs+=("seeds/$t")
    if [ $ok = 1 ] && ! "$bin" "${dirs[@]}" -max_total_time="$secs" -seed="${FUZZ_SMOKE_SEED:-1}" \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$work/$t.log" 2>&1; then
        echo "FAIL $t: crash (input in fuzz/artifacts/$t/)"
        grep -m1 -A8 "panicked\|ERROR" "$work/$t.log" | sed 's/^/    /'
        ok=0
    fi
    if [ $ok = 1 ]; then
        runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/$t.log" | awk '{print $2}')
        cov=$(grep -o 'cov: [0-9]*' "$work/$t.log" | tail -1 | awk '{print $2}')
        echo "PASS $t (${secs}s, ${runs:-?} runs, coverage ${cov:-?})"
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
