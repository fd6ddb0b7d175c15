#!/usr/bin/env bash
# The shim's scheduling rule (clang; docs/usage.md, "The DPU compiler"; docs/fidelity.md, "The
# compiler's schedule"): LLVM's machine scheduler runs only in a translation unit where it
# removes register spills. Checks, on a fully unrolled 64-bit reduction (progs/unrolled_sum.c,
# the shape of PrIM's SCAN-RSS kernel) and on programs that do not spill:
#   - the reduction is scheduled in every way of building it (one command, -c then link, -S,
#     -flto), its stack traffic drops from hundreds of sp-relative loads and stores to a few,
#     and it prints the sum a CPU computes, on mini_dpu.py and on the engine;
#   - OPENPIM_DPU_SCHEDULE=off keeps the spills (and the same sum, given the stack they need);
#   - programs that do not spill get exactly the code of OPENPIM_DPU_SCHEDULE=off;
#   - a bad OPENPIM_DPU_SCHEDULE is refused with a message naming it; gcc still builds.
# Called by check.sh; also runs alone: sdk/dpu/test/schedule.sh (exit status 0 when all pass)
set -u
unset OPENPIM_DPU_CC OPENPIM_DPU_LD OPENPIM_DPU_SCHEDULE
export OPENPIM_DPU_COMPILER=clang
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh" schedule

objdump=$(command -v llvm-objdump-13 || command -v riscv64-unknown-elf-objdump) ||
    { echo "FAIL no objdump (llvm-objdump-13 or riscv64-unknown-elf-objdump)"; exit 1; }

# sp_traffic FILE FUNCTION -> the loads and stores relative to sp in FUNCTION's code
sp_traffic() {
    "$objdump" -d "$1" | awk -v fn="<$2>:" '$2 == fn { f = 1; next } /^$/ { f = 0 } f' |
        grep -cE $'\t(sw|lw)\t.*\\(sp\\)'
}

# The CPU's sum: the same 64-bit sequence as the DPU program.
want=$(python3 -c '
x, t = 42, 0
for _ in range(1024):
    x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
    t = (t + (x >> 7)) % 2**64
print(f"sum={t}")')

engine=0
host=$out/run_host
if [[ -f $root/target/release/libdpu.so ]] && command -v gcc >/dev/null 2>&1; then
    # shellcheck disable=SC2046
    gcc -std=c11 -O2 "$progs/run_host.c" -o "$host" $("$root/sdk/bin/dpu-pkg-config" --cflags --libs dpu) \
        2>"$out/host.log" && engine=1
    ((engine)) || ko "host program builds" "$(cat "$out/host.log")"
fi

runs_right() { # NAME ELF: prints the CPU's sum on mini_dpu.py and the engine
    local r
    r=$(timeout 300 python3 "$here/mini_dpu.py" "$2" 2>&1 | sed -n 1p)
    if [[ $r == "$want" ]]; then ok "$1: $want on mini_dpu.py"; else ko "$1: $want on mini_dpu.py" "$r"; fi
    if ((engine)); then
        r=$(cd "$out" && LD_LIBRARY_PATH=$root/target/release timeout 300 "$host" "$2" 2>&1 | grep -v '^=== DPU' | sed -n 1p)
        if [[ $r == "$want" ]]; then ok "$1: $want on the engine"; else ko "$1: $want on the engine" "$r"; fi
    fi
}

flags=(-O2 -Wall -Wextra -Werror)
src=$progs/unrolled_sum.c

echo "== a reduction that spills without the scheduler"
# off: the spills stay (a frame near 1 KiB: more stack than the default 1024 bytes)
if log=$(OPENPIM_DPU_SCHEDULE=off "$shim" "${flags[@]}" -DSTACK_SIZE_DEFAULT=4096 "$src" -o "$out/off" 2>&1); then
    off=$(sp_traffic "$out/off" main)
    if ((off >= 200)); then ok "off: $off sp-relative loads and stores"; else ko "off: spills (got $off sp-relative loads and stores)"; fi
    runs_right off "$out/off"
else
    ko "off builds" "$log"
fi
# the default: one command, then -c and a link, then -flto
build_ways() {
    local w=$1
    case $w in
        link) OPENPIM_SHIM_VERBOSE=1 "$shim" "${flags[@]}" "$src" -o "$out/$w" ;;
        c) OPENPIM_SHIM_VERBOSE=1 "$shim" "${flags[@]}" -c "$src" -o "$out/$w.o" &&
            "$shim" "${flags[@]}" "$out/$w.o" -o "$out/$w" ;;
        flto) OPENPIM_SHIM_VERBOSE=1 "$shim" "${flags[@]}" -flto "$src" -o "$out/$w" ;;
    esac
}
for w in link c flto; do
    if ! log=$(build_ways "$w" 2>&1); then
        ko "$w: builds" "$log"
        continue
    fi
    if grep -q ': scheduled (' <<<"$log"; then ok "$w: scheduled $(grep -o '([0-9]* spills.*)' <<<"$log")"; else ko "$w: scheduled" "$(grep -v '^clang' <<<"$log")"; fi
    n=$(sp_traffic "$out/$w" main)
    if ((n <= 32)); then ok "$w: $n sp-relative loads and stores"; else ko "$w: no spills (got $n sp-relative loads and stores)"; fi
    runs_right "$w" "$out/$w"
done
# -S writes the code it would compile: scheduled too
if "$shim" "${flags[@]}" -S "$src" -o "$out/s.s" 2>"$out/s.log"; then
    n=$(grep -cE $'^\t(sw|lw)\t.*\\(sp\\)' "$out/s.s")
    if ((n <= 32)); then ok "-S: $n sp-relative loads and stores"; else ko "-S: no spills (got $n)"; fi
else
    ko "-S builds" "$(cat "$out/s.log")"
fi

# what a user sees of the counting: nothing (no remarks, no debug sections without -g), and
# the program's own warnings once
if "$shim" "${flags[@]}" -c "$src" -o "$out/quiet.o" 2>"$out/quiet.log"; then
    if [[ -s $out/quiet.log ]]; then ko "the counting prints nothing" "$(head -n 3 "$out/quiet.log")"; else ok "the counting prints nothing"; fi
    n=$(riscv64-unknown-elf-readelf -S "$out/quiet.o" | grep -c '\.debug_')
    if ((n == 0)); then ok "no debug sections without -g"; else ko "no debug sections without -g (got $n)"; fi
else
    ko "-c builds" "$(cat "$out/quiet.log")"
fi
{ cat "$src"; printf 'int unused_warning(int x)\n{\n    int y;\n    return x;\n}\n'; } >"$out/warn.c"
"$shim" -O2 -Wall -c "$out/warn.c" -o "$out/warn.o" 2>"$out/warn.log"
w=$(grep -c "unused variable 'y'" "$out/warn.log")
r=$(grep -c 'remark' "$out/warn.log")
if ((w == 1 && r == 0)); then ok "a warning is shown once, no remark"; else ko "a warning is shown once, no remark" "$(cat "$out/warn.log")"; fi

echo "== programs that do not spill: the code of OPENPIM_DPU_SCHEDULE=off"
for p in "arith|-O2|arith.c" "sync16|-O2 -DNR_TASKLETS=16|sync_stress.c" "seqread|-O3|seqread_test.c" \
    "headers_lto|-O3 -flto -DNR_TASKLETS=16|all_headers.c"; do
    IFS='|' read -r name fl s <<<"$p"
    # shellcheck disable=SC2086
    if "$shim" $fl "$progs/$s" -o "$out/$name.auto" 2>"$out/err" &&
        OPENPIM_DPU_SCHEDULE=off "$shim" $fl "$progs/$s" -o "$out/$name.off" 2>>"$out/err"; then
        if cmp -s <("$objdump" -d "$out/$name.auto" | tail -n +3) <("$objdump" -d "$out/$name.off" | tail -n +3); then
            ok "$name: same code as off"
        else
            ko "$name: same code as off" "the default build differs from OPENPIM_DPU_SCHEDULE=off"
        fi
    else
        ko "$name builds" "$(cat "$out/err")"
    fi
done

echo "== errors and the other compiler"
if log=$(OPENPIM_DPU_SCHEDULE=sometimes "$shim" -O2 "$src" -o "$out/bad" 2>&1); then
    ko "a bad OPENPIM_DPU_SCHEDULE is refused"
elif grep -q "OPENPIM_DPU_SCHEDULE must be auto.*off or on (got 'sometimes')" <<<"$log"; then
    ok "a bad OPENPIM_DPU_SCHEDULE is refused: $log"
else
    ko "a bad OPENPIM_DPU_SCHEDULE's message" "$log"
fi
if command -v riscv64-unknown-elf-gcc >/dev/null 2>&1; then
    if log=$(OPENPIM_DPU_COMPILER=gcc "$shim" -O2 -DSTACK_SIZE_DEFAULT=4096 "$src" -o "$out/gcc" 2>&1); then
        runs_right gcc "$out/gcc"
    else
        ko "gcc builds" "$log"
    fi
fi

echo
echo "schedule: passed: $pass, failed: $fail"
((fail == 0))
