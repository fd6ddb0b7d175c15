#!/usr/bin/env bash
# Runs one fuzz target in the background-friendly way fuzz/README.md describes:
#
#   fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
#
# at the lowest CPU priority (nice 19: it only takes idle CPU), with libFuzzer's default
# memory and time limits, growing fuzz/corpus/TARGET from the seeds in fuzz/seeds/TARGET
# (when present). libFuzzer runs in fork mode and goes on after a crash; every crash is saved
# in fuzz/artifacts/TARGET/. The CPU time used is appended to fuzz/stats/TARGET.tsv (date,
# wall seconds, CPU seconds, executions, coverage), for the hours on record in fuzz/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
target=${1:?usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags...]}
secs=${2:?usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags...]}
shift 2
# The committed corpus (pack_corpus.sh) is unpacked on first use.
if [ ! -d "corpus/$target" ] && [ -f "corpus/$target.tar.xz" ]; then
    mkdir -p "corpus/$target"
    tar -C "corpus/$target" -xJf "corpus/$target.tar.xz"
fi
mkdir -p "corpus/$target" "artifacts/$target" stats
export PATH="$HOME/.cargo/bin:$PATH"
./tools.sh "fuzz $target"
seeds=()
[ -d "seeds/$target" ] && seeds=("seeds/$target")
log="stats/$target.log"
start=$(date +%s)
# Crash inputs saved during this run (the fork-mode counter misses one found as the run ends).
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT
# Built first, so that the compiler's CPU time is not counted as fuzzing.
nice -n 19 cargo +nightly fuzz build "$target" >"$log" 2>&1 || {
    echo "fuzz $target: the build failed (log: fuzz/$log)"
    exit 1
}
# CPU seconds of this process's children (the fuzzer), before and after.
cpu() { awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat; }
before=$(cpu)
set +e
nice -n 19 cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$secs" -print_final_stats=1 "$@" >"$log" 2>&1
rc=$?
set -e
after=$(cpu)
ticks=$(getconf CLK_TCK)
cpu_s=$(( (after - before) / ticks ))
wall=$(( $(date +%s) - start ))
cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}' || true)
crashes=$(find "artifacts/$target" -type f -name 'crash-*' -newer "$marker" | wc -l)
printf '%s\t%s\twall_s=%s\tcpu_s=%s\tcov=%s\tcrashes=%s\trc=%s\n' "$(date -u +%FT%TZ)" "$target" "$wall" "$cpu_s" "${cov:-?}" "${crashes:-0}" "$rc" >>"stats/$target.tsv"
echo "fuzz $target: ${wall}s wall, ${cpu_s}s CPU, coverage ${cov:-?}, exit $rc (log: fuzz/$log)"
