#!/usr/bin/env bash
# OpenPIM benchmarks: simulation speed (bench/speed/run.py), the wall time of the 16 PrIM runs at
# 64 DPUs (bench/speed/prim_compare.py; BENCH_SKIP_PRIM=1 skips it), host memory, conformance-suite wall
# time, and the interleaving benchmark (bench/interleave; BENCH_SKIP_INTERLEAVE=1 skips it) and the
# fidelity suite (bench/fidelity, about 1 minute; skipped with BENCH_SKIP_FIDELITY=1), and the
# profiler's slowdown on PrIM at 64 DPUs (bench/profile/run.py; BENCH_SKIP_PROFILE=1 skips it).
# Prints one table; run from anywhere after `make build` (or via `make bench`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
eval "$("$root/target/release/openpim" env)"
cd "$root/bench/speed"
"$root/scripts/dpu-toolchain.sh" fresh .
make -s >/dev/null

calc() { awk "BEGIN { print $1 }"; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

# 1. Speed: DPU instructions per second per host core on three compute-bound kernels (its own
#    table; bench/speed/run.py, docs/performance.md). BENCH_BASELINE=<git revision> also runs
#    that revision's engine in the same run and prints the speed-up.
"$root/bench/speed/run.py" ${BENCH_BASELINE:+--baseline "$BENCH_BASELINE"}

# 1b. PrIM-16: wall time of the 16 PrIM runs at 64 DPUs of shared/calibration/prim-64dpu-runs.md
#     (PrIM's own sizes; each verified by its own check), one by one and in all (its own table;
#     the issue's target: under 2 minutes). BENCH_SKIP_PRIM=1 skips it.
if [ "${BENCH_SKIP_PRIM:-0}" != 1 ]; then
  printf '\nPrIM-16 at 64 DPUs, wall time (bench/speed/prim_compare.py)\n'
  PRIM_COMPARE_DIR="${PRIM_COMPARE_DIR:-$root/bench/speed/bin/prim64}" "$root/bench/speed/prim_compare.py" \
    || echo "PrIM-16: a program failed or did not verify (NO above)"
fi
# 1c. The profiler's cost: PrIM programs at 64 DPUs without and with OPENPIM_PROFILE (its own
#     table; bench/profile/run.py, docs/profiling.md). BENCH_SKIP_PROFILE=1 skips it.
if [ "${BENCH_SKIP_PROFILE:-0}" != 1 ]; then
  printf '\nProfiler slowdown, PrIM at 64 DPUs (bench/profile/run.py)\n'
  "$root/bench/profile/run.py" || echo "profiler bench: a program failed, did not verify or was not charged exactly (NO above)"
fi
printf '\n%-58s %s\n' "benchmark" "result"
printf '%-58s %s\n' "----------------------------------------------------------" "------------------"

# 2. Memory: the whole 2,560-DPU server allocated, loaded and launched.
mem=$(./bin/mem_host)
dpus=$(echo "$mem" | field dpus)
b=$(echo "$mem" | field rss_before_kib)
a=$(echo "$mem" | field rss_allocated_kib)
l=$(echo "$mem" | field rss_loaded_kib)
r=$(echo "$mem" | field rss_launched_kib)
printf '%-58s %8.1f KiB\n' "host memory per allocated DPU (before MRAM is written)" "$(calc "($a-$b)/$dpus")"
printf '%-58s %8.1f MiB\n' "full server ($dpus DPUs) allocated + loaded, resident" "$(calc "$l/1024")"
printf '%-58s %8.1f MiB\n' "full server after one launch, resident" "$(calc "$r/1024")"

# 3. Wall time of the conformance suite (skipped with BENCH_SKIP_SUITE=1).
if [ "${BENCH_SKIP_SUITE:-0}" != 1 ]; then
  t0=$(date +%s.%N)
  "$root/tests/conformance/run.sh" >/tmp/openpim-bench-suite.log 2>&1 || true
  t1=$(date +%s.%N)
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' /tmp/openpim-bench-suite.log | tail -1)
  printf '%-58s %8.1f s  (%s)\n' "conformance suite wall time" "$(calc "$t1-$t0")" "$summary"
fi

# 3b. The host side of small SDK calls, CPU ns each (bench/speed/host/calls.c: PrIM TRNS's step
#     1 makes 12.6 M dpu_prepare_xfer and 196,608 small dpu_push_xfer at 64 DPUs).
calls=$(./bin/calls_host bin/tiny_dpu 20000)
printf '%-58s %8.1f ns\n' "host side: one DPU_FOREACH step" "$(echo "$calls" | field step_ns)"
printf '%-58s %8.1f ns\n' "host side: dpu_prepare_xfer (with its DPU_FOREACH step)" "$(echo "$calls" | field prepare_ns)"
printf '%-58s %8.1f ns\n' "host side: dpu_push_xfer of 8 bytes to each of 64 DPUs" "$(echo "$calls" | field push_ns)"

# 4. The host-side byte interleaving of transfers, GB/s per rank (its own table; ~2.2 GB).
if [ "${BENCH_SKIP_INTERLEAVE:-0}" != 1 ]; then
  printf '\n'
  "$root/bench/interleave/run.sh"
fi

# 5. Fidelity: emulated vs published measurements of real UPMEM hardware (its own table).
if [ "${BENCH_SKIP_FIDELITY:-0}" != 1 ]; then
  printf '\n'
  "$root/bench/fidelity/run.py"
fi
