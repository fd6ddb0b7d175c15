#!/usr/bin/env bash
# Report tests: small UPMEM programs (host.c, task.c) that each trigger one piece of advice of
# the run report (or none), run with OPENPIM_REPORT / OPENPIM_TRACE as `openpim run --report
# --trace` sets them. Checks the advice, validates the JSON report against
# docs/report.schema.json (with python's jsonschema when installed, else a structural check),
# the trace's tracks, and the text table. Prints one PASS/FAIL line per check and
# "N passed, M failed"; exits non-zero on any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$root/sdk/bin:$PATH"
export LD_LIBRARY_PATH="$root/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPENPIM_QUIET=1
unset OPENPIM_REPORT OPENPIM_TRACE

passed=0
failed=0
ok() { echo "PASS $1"; passed=$((passed + 1)); }
ko() { echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/    /' <<<"$2"; failed=$((failed + 1)); }

"$root/scripts/dpu-toolchain.sh" fresh "$here"
if ! out=$(make -s -C "$here" 2>&1); then
    ko "build" "$out"
    echo "$passed passed, $failed failed"
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# scenario -> the advice ids it must produce (space separated, sorted)
declare -A expect=(
    [good]=""
    [idle]="idle_ranks"
    # 16 KiB per DPU one DPU at a time: each copy's fixed cost (72 us CPU-DPU on one rank) is
    # also most of its time
    [serial]="serial_transfers_in_loops small_transfers"
    [small]="small_transfers"
    [tasklets]="few_tasklets"
    [dma]="small_mram_transfers"
    [odd_dma]="tolerated_dma"
    [exchange]="host_mediated_exchange"
)
for scenario in good idle serial small tasklets dma odd_dma exchange; do
    json="$tmp/$scenario.json"
    trace="$tmp/$scenario.trace.json"
    if ! out=$(cd "$here" && OPENPIM_REPORT="$json" OPENPIM_TRACE="$trace" ./bin/host "$scenario" 2>&1); then
        ko "$scenario (program failed)" "$out"
        continue
    fi
    if ! out=$(python3 "$here/check_report.py" "$root/docs/report.schema.json" "$json" "$trace" "${expect[$scenario]}" 2>&1); then
        ko "$scenario" "$out"
    else
        ok "$scenario ($out)"
    fi
done

# The exchanges marked with openpim_interdpu_begin_named/end: one inter-DPU entry each with the
# region's transfers (64 DPUs x 16 KiB, read and written back), which are inter-DPU time and
# not CPU-DPU / DPU-CPU time, on the host and on the rank; the trace has the exchanges' track.
if got=$(python3 - "$tmp/exchange.json" "$tmp/exchange.trace.json" "$tmp/good.json" 2>&1 <<'PY'
import json, sys
r, t, good = (json.load(open(p)) for p in sys.argv[1:4])
x = r["inter_dpu"]
assert len(x) == 3, x
for e in x:
    assert (e["primitive"], e["label"], e["path"], e["axes"]) == ("region", "rotate", "host", ""), e
    assert e["bytes"] == 2 * 64 * 16384, e
p, g = r["phases"], good["phases"]
assert p["inter_dpu_ns"] > 0 and g["inter_dpu_ns"] == 0 and good["inter_dpu"] == [], (p, g)
# Outside the region the program moves what "good" moves: one push, one read.
for k in ("cpu_dpu_ns", "dpu_cpu_ns"):
    assert abs(p[k] - g[k]) <= 0.5 * g[k], (k, p[k], g[k])
assert sum(e["end_ns"] - e["start_ns"] for e in x) >= p["inter_dpu_ns"] * 0.99, (x, p)
assert r["ranks"][0]["busy"]["inter_dpu_ns"] > 0, r["ranks"]
track = [ev for ev in t["traceEvents"] if ev["ph"] == "X" and ev["tid"] == 1_000_000]
assert len(track) == 3 and all(t["name"] == "region (rotate)" and t["args"]["path"] == "host" for t in track), track
print(f"inter-DPU {p['inter_dpu_ns'] / 1e6:.3f} ms, {len(x)} regions of {x[0]['bytes']} bytes")
PY
); then
    ok "inter-DPU region ($got)"
else
    ko "inter-DPU region" "$got"
fi
if out=$(cd "$here" && OPENPIM_REPORT=1 ./bin/host exchange 2>&1 >/dev/null) \
    && grep -q "^inter-DPU exchanges (3 in total" <<<"$out" && grep -q "^region .* host .* 3 .* 6291456" <<<"$out"; then
    ok "inter-DPU table"
else
    ko "inter-DPU table" "$out"
fi

# OPENPIM_XFER_LOG: one line per rank operation of a transfer, as the bus model charged it
# (bench/fidelity/transfer_floor.py replays them); their count and bytes are the report's, and
# what they charged adds up to the bus time the report gives.
if out=$(cd "$here" && OPENPIM_REPORT="$tmp/xlog.json" OPENPIM_XFER_LOG="$tmp/xfer.log" ./bin/host serial 2>&1) \
    && got=$(python3 - "$tmp/xlog.json" "$tmp/xfer.log" 2>&1 <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))["transfers"]
lines = [l.split() for l in open(sys.argv[2]) if not l.startswith("#")]
assert all(len(f) == 14 for f in lines), lines[:3]
ops = sum(x[k] for k in ("serial_to_dpu", "parallel_to_dpu", "broadcast_to_dpu", "serial_from_dpu", "parallel_from_dpu"))
assert len(lines) == ops, (len(lines), ops)
for d, key, bus in (("to", "bytes_to_dpus", "bus_to_dpu_ns"), ("from", "bytes_from_dpus", "bus_from_dpu_ns")):
    mine = [f for f in lines if f[3] == d]
    assert sum(int(f[5]) * int(f[6]) for f in mine) == x[key], d
    assert sum(int(f[11]) for f in mine) == x[bus], d
serial = [f for f in lines if f[4] == "serial"]
assert serial and all(f[6] == "1" for f in serial), serial[:3]
print(f"{len(lines)} rank operations, {len(serial)} serial")
PY
); then
    ok "transfer log ($got)"
else
    ko "transfer log" "${got:-$out}"
fi

# strictDma=true: the same tolerated DMA is a DPU fault that names the request.
if out=$(cd "$here" && OPENPIM_QUIET=0 UPMEM_PROFILE_BASE=strictDma=true ./bin/host odd_dma 2>&1); then
    ko "strictDma=true makes the tolerated DMA a fault (the program succeeded)" "$out"
elif grep -q "DMA of 4 bytes" <<<"$out" && grep -q "strictDma" <<<"$out"; then
    ok "strictDma=true makes the tolerated DMA a fault"
else
    ko "strictDma=true makes the tolerated DMA a fault (wrong message)" "$out"
fi

# What counts as host time (timing.c): "check" is a python condition on the report's phases
# (seconds: host, kernel) and the program's printed values, measured on the real clock
# (OPENPIM_CLOCK=real: the emulator's time, which the host time must leave out).
declare -A timing=(
    [async]="host < 1.3 * baseline and kernel > 0"
    [cb_nested]="host < 0.5 * nested_launch and kernel > 0"
    [cb_parallel]="0.09 < host < 0.25"
)
for scenario in async cb_nested cb_parallel; do
    json="$tmp/timing-$scenario.json"
    if ! out=$(cd "$here" && OPENPIM_CLOCK=real OPENPIM_REPORT="$json" ./bin/timing "$scenario" 2>&1); then
        ko "timing $scenario (program failed)" "$out"
        continue
    fi
    if got=$(OUT="$out" python3 - "$json" "${timing[$scenario]}" 2>&1 <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
v = {k: float(x) for k, x in (line.split() for line in os.environ["OUT"].splitlines() if line)}
v["host"] = r["phases"]["host_ns"] / 1e9
v["kernel"] = r["phases"]["dpu_kernel_ns"] / 1e9
print(", ".join(f"{k} {x:.3f}" for k, x in sorted(v.items())))
sys.exit(0 if eval(sys.argv[2], {}, v) else 1)
PY
    ); then
        ok "timing $scenario ($got)"
    else
        ko "timing $scenario: want ${timing[$scenario]}" "$got"
    fi
done

# The text table on stderr, program output untouched on stdout.
if out=$(cd "$here" && OPENPIM_REPORT=1 ./bin/host good 2>"$tmp/table.txt") \
    && grep -q "^DPU kernel" "$tmp/table.txt" && grep -q "^advice: none" "$tmp/table.txt"; then
    ok "text table"
else
    ko "text table" "$(cat "$tmp/table.txt")"
fi

# The CLI sets the variables.
if [ -x "$root/target/release/openpim" ] \
    && (cd "$here" && "$root/target/release/openpim" run --report="$tmp/cli.json" --trace="$tmp/cli.trace.json" -- ./bin/host tasklets) \
    && python3 "$here/check_report.py" "$root/docs/report.schema.json" "$tmp/cli.json" "$tmp/cli.trace.json" "few_tasklets" >/dev/null; then
    ok "openpim run --report --trace"
else
    ko "openpim run --report --trace"
fi

# The phase plot (only where matplotlib is installed; scripts/setup.sh installs it).
if python3 -c 'import matplotlib' >/dev/null 2>&1 && [ -f "$tmp/cli.json" ]; then
    if "$root/target/release/openpim" plot "$tmp/cli.json" -o "$tmp/cli.png" >/dev/null \
        && [ "$(head -c 4 "$tmp/cli.png" | od -An -c | tr -d ' ')" = "211PNG" ]; then
        ok "openpim plot"
    else
        ko "openpim plot"
    fi
else
    echo "note: matplotlib missing: openpim plot not checked"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
