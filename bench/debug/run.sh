#!/usr/bin/env bash
# What the debugging tools cost (docs/debugging.md): the conformance checksum program (4 DPUs,
# 16 tasklets, 48 KiB each, two launches) run plainly, on the interpreter, with core dumps on
# (every DPU probed), with an instruction trace of one DPU, and under the GDB server with a
# debugger that only continues. Prints one row per mode: wall time, the launches' cycles and
# instructions from the report (identical in every mode), and the trace's size.
#
#   bench/debug/run.sh [REPEATS]    (default 3; the best wall time is shown)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$root/sdk/bin:$PATH"
export LD_LIBRARY_PATH="$root/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPENPIM_QUIET=1
prog="$root/tests/conformance/checksum"
repeats=${1:-3}
make -s -C "$prog" >/dev/null 2>&1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$((23000 + ($$ % 2000)))

now() { date +%s.%N; }
# run MODE ENV...: best wall time of $repeats runs; the last run's report in $tmp/MODE.json
run() {
    local mode=$1 best=
    shift
    for _ in $(seq 1 "$repeats"); do
        rm -rf "$tmp/out"
        local t0 t1
        t0=$(now)
        (cd "$prog" && env "$@" OPENPIM_REPORT="$tmp/$mode.json" ./bin/host >/dev/null)
        t1=$(now)
        best=$(python3 -c "import sys; a=float(sys.argv[1]); b=sys.argv[2]; print(a if b=='' else min(a,float(b)))" "$(echo "$t1 - $t0" | bc)" "$best")
    done
    echo "$best"
}
gdb_run() {
    local best=
    for _ in $(seq 1 "$repeats"); do
        port=$((port + 1))
        local t0 t1
        t0=$(now)
        (cd "$prog" && OPENPIM_GDB="127.0.0.1:$port" OPENPIM_REPORT="$tmp/gdb.json" ./bin/host >/dev/null 2>"$tmp/gdb.err") &
        local pid=$!
        until grep -q "waiting for a debugger" "$tmp/gdb.err" 2>/dev/null; do sleep 0.01; done
        gdb-multiarch -batch -nx -ex "target remote 127.0.0.1:$port" -ex continue "$prog/bin/dpu_checksum" >/dev/null 2>&1
        wait "$pid"
        t1=$(now)
        best=$(python3 -c "import sys; a=float(sys.argv[1]); b=sys.argv[2]; print(a if b=='' else min(a,float(b)))" "$(echo "$t1 - $t0" | bc)" "$best")
    done
    echo "$best"
}
timing() { python3 -c "
import json,sys; r=json.load(open(sys.argv[1]))
print(' '.join(f\"{l['cycles']}/{l['instructions']}\" for l in r['launches']))" "$1"; }

printf "%-34s %9s %30s %s\n" "mode" "wall (s)" "cycles/instructions per launch" "output"
t=$(run plain X=1); printf "%-34s %9.3f %30s\n" "plain (default engine)" "$t" "$(timing "$tmp/plain.json")"
t=$(run interp OPENPIM_ENGINE=interp); printf "%-34s %9.3f %30s\n" "interpreter" "$t" "$(timing "$tmp/interp.json")"
t=$(run core OPENPIM_CORE_DIR="$tmp/cores"); printf "%-34s %9.3f %30s\n" "core dumps on (all DPUs probed)" "$t" "$(timing "$tmp/core.json")"
t=$(run trace OPENPIM_DPU_TRACE="$tmp/trace" OPENPIM_DPU_TRACE_DPUS=0.0)
lines=$(cat "$tmp"/trace/trace.0.0.* | wc -l); bytes=$(cat "$tmp"/trace/trace.0.0.* | wc -c)
printf "%-34s %9.3f %30s %s\n" "trace of DPU 0.0" "$t" "$(timing "$tmp/trace.json")" "$lines lines, $bytes bytes"
if command -v gdb-multiarch >/dev/null; then
    t=$(gdb_run); printf "%-34s %9.3f %30s %s\n" "GDB server, continue only" "$t" "$(timing "$tmp/gdb.json")" "(includes starting gdb)"
fi
