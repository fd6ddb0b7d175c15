#!/usr/bin/env bash
# Profiler tests (docs/profiling.md): the split kernel (light() 15 %, heavy() 85 % of the loop
# work by construction, a barrier, DMA) profiled by `openpim profile` on all DPUs and on one,
# built with -g and without, and by OPENPIM_PROFILE for a program run directly; check.py reads
# each profile. Bad options. Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero
# on any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$root/sdk/bin:$PATH"
export LD_LIBRARY_PATH="$root/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPENPIM_QUIET=1
unset OPENPIM_PROFILE OPENPIM_PROFILE_DPU OPENPIM_REPORT OPENPIM_TRACE
openpim="$root/target/release/openpim"

passed=0
failed=0
ok() { echo "PASS $1"; passed=$((passed + 1)); }
ko() { echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/    /' <<<"$2"; failed=$((failed + 1)); }
tally() {
    while read -r line; do
        echo "$line"
        case "$line" in PASS*) passed=$((passed + 1)) ;; FAIL*) failed=$((failed + 1)) ;; esac
    done
}

"$root/scripts/dpu-toolchain.sh" fresh "$here"
if ! out=$(make -s -C "$here" 2>&1); then
    ko "build" "$out"
    echo "$passed passed, $failed failed"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$here"

# A run without the profiler: the cycles the profiled runs must reproduce.
if out=$("$openpim" run --report="$tmp/base.json" -- ./bin/host bin/split 2>&1); then
    ok "unprofiled run"
else
    ko "unprofiled run" "$out"
fi

# name, dpus, kernel, kind
while read -r name dpus kernel kind; do
    if out=$("$openpim" profile --dpu "$dpus" --out "$tmp/$name" --report="$tmp/$name.json" \
        -- ./bin/host "$kernel" 2>&1) && grep -q '^OK$' <<<"$out"; then
        ok "[$name] openpim profile --dpu $dpus: the program's results are right"
    else
        ko "[$name] openpim profile --dpu $dpus" "$out"
        continue
    fi
    tally < <(python3 "$here/check.py" "$tmp/$name" "$kind" "$tmp/$name.json" "$tmp/base.json")
    if python3 -c 'import matplotlib' 2>/dev/null; then
        if [ "$(head -c 4 "$tmp/$name/run.png" 2>/dev/null | tail -c 3)" = PNG ] \
            && [ -s "$tmp/$name/launch-2.png" ]; then
            ok "[$name] flame graph PNGs"
        else
            ko "[$name] flame graph PNGs" "$(ls "$tmp/$name")"
        fi
    else
        echo "SKIP [$name] flame graph PNGs (no matplotlib: scripts/setup.sh installs it)"
    fi
done <<'EOF2'
all all bin/split lines
one 0.1 bin/split lines
nog 0.1 bin/split_nog functions
EOF2

# One DPU's profile is that DPU's only.
if python3 -c "
import json,sys; p=json.load(open('$tmp/one/profile.json'))
sys.exit(0 if {(r['rank'],r['dpu']) for r in p['run']['dpu_runs']}=={(0,1)} else 1)"; then
    ok "[one] --dpu 0.1 profiles DPU 0.1 only"
else
    ko "[one] --dpu 0.1 profiles DPU 0.1 only"
fi

# A program run directly, with the environment variable.
if out=$(OPENPIM_PROFILE="$tmp/env/sub" ./bin/host bin/split 2>&1) \
    && [ -s "$tmp/env/sub/profile.txt" ] && [ -s "$tmp/env/sub/run.folded" ]; then
    ok "OPENPIM_PROFILE=DIR on a program run directly (directory created)"
else
    ko "OPENPIM_PROFILE=DIR on a program run directly" "$out"
fi

# A launch that faults: still every cycle charged, the faulting slot's to the faulting line.
out=$(OPENPIM_PROFILE="$tmp/fault" ./bin/host bin/split_fault 2>&1)
rc=$?
line=$(grep -n 'FAULT LINE' split.c | cut -d: -f1)
if [ $rc != 0 ] && python3 -c "
import json, sys
p = json.load(open('$tmp/fault/profile.json'))['run']
runs = p['dpu_runs']
at = [l for l in p['lines'] if l['location'] == 'split.c:$line']
ok = runs and all(r['charged_cycles'] == r['cycles'] for r in runs) and at and at[0]['cycles'] == len(runs) and at[0]['instructions'] == 0
sys.exit(0 if ok else 1)"; then
    ok "a faulting launch: every cycle charged, the fault's to split.c:$line"
else
    ko "a faulting launch: every cycle charged, the fault's to split.c:$line" "$out"
fi

# Bad values: a clear error naming the option or variable.
out=$("$openpim" profile --dpu 3 --out "$tmp/bad" -- ./bin/host bin/split 2>&1)
if [ $? = 2 ] && grep -q -- '--dpu 3: not a DPU' <<<"$out"; then
    ok "openpim profile --dpu 3: refused, named"
else
    ko "openpim profile --dpu 3: refused, named" "$out"
fi
out=$(OPENPIM_PROFILE="$tmp/bad2" OPENPIM_PROFILE_DPU=x.y OPENPIM_QUIET=0 ./bin/host bin/split 2>&1)
if [ $? != 0 ] && grep -q 'OPENPIM_PROFILE_DPU=x.y: not a DPU' <<<"$out" && grep -q "system error" <<<"$out"; then
    ok "OPENPIM_PROFILE_DPU=x.y: dpu_alloc fails, named"
else
    ko "OPENPIM_PROFILE_DPU=x.y: dpu_alloc fails, named" "$out"
fi
touch "$tmp/file"
out=$(OPENPIM_PROFILE="$tmp/file/dir" OPENPIM_QUIET=0 ./bin/host bin/split 2>&1)
if [ $? != 0 ] && grep -q 'cannot create the directory' <<<"$out"; then
    ok "OPENPIM_PROFILE on a path that cannot be a directory: dpu_alloc fails, named"
else
    ko "OPENPIM_PROFILE on a path that cannot be a directory" "$out"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
