#!/usr/bin/env bash
# bench/collectives: the PID-Comm-compatible collectives, optimized path vs host-mediated
# baseline — each primitive at 1, 4 and 16 ranks (x axis of a 32 x 2R x 1 hypercube), per-DPU
# sizes 2 KiB to 2 MiB (at most 256 MiB per call: 1 MiB at 4 ranks, 256 KiB at 16), int8 and
# int32: virtual time of one call on
# each path, the speed-up, the wall time; the geomean; the ablation (PR, IM, CM off in turn).
#   bench/collectives/run.sh [--quick]      (after `make build`; docs/collectives.md)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
exec cargo run --release -q -p openpim-collectives --example bench -- "$@"
