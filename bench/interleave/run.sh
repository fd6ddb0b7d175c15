#!/usr/bin/env bash
# The host-side byte interleaving of transfers (crates/runtime/src/exec/local/interleave.rs): GB/s per
# rank (bytes of all the transfer's DPUs / the thread CPU time the runtime charges), median of
# 3, for 1 / 8 / 64 DPUs of one rank at 1 MiB and 32 MiB per DPU (and broadcasts), for the
# implementation before the SIMD kernels ("before") and each kernel this CPU has; then what a
# tiny transfer (8 B to one DPU) is charged per call. Needs about 2.2 GB of memory.
# Prints one table; run from anywhere.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cargo test -q --release -p openpim-runtime --lib exec::local::interleave::tests::bench_table \
    -- --ignored --exact --nocapture --test-threads=1 2>/dev/null \
    | grep -Ev '^(running|test |\.*$)|test result'
