#!/usr/bin/env bash
# Compile-level checks of the DPU toolchain shim and runtime (no engine needed), for the
# compiler OPENPIM_DPU_COMPILER selects (clang or gcc; compilers.sh also builds and runs
# programs with both):
# builds sample DPU programs and inspects the ELF files (section placement, ABI symbols,
# tasklet configuration, no libgcc integer mul/div, error handling of the shim).
#   sdk/dpu/test/check.sh            (exit status 0 when every check passes)
set -u
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh" check
clang=$shim
pkg=$root/sdk/bin/dpu-pkg-config
elf() { python3 "$here/elfcheck.py" "$@"; }
check() { # check NAME COMMAND...
    local name=$1 log
    shift
    if log=$("$@" 2>&1); then ok "$name"; else ko "$name" "$log"; fi
}
expect_fail() { # expect_fail NAME PATTERN COMMAND...
    local name=$1 pattern=$2 log
    shift 2
    if log=$("$@" 2>&1); then
        ko "$name" "succeeded but should have failed"
    elif grep -q -- "$pattern" <<<"$log"; then
        ok "$name"
    else
        ko "$name" "wrong message:" "$log"
    fi
}
eq() { # eq NAME ACTUAL EXPECTED
    if [[ $2 == "$3" ]]; then ok "$1"; else ko "$1" "got '$2', expected '$3'"; fi
}

# Every integer mul/div helper present must be the runtime's (environment call), never libgcc's.
no_libgcc_intdiv() { # ELF
    local f=$1 s dis
    if riscv64-unknown-elf-nm "$f" | grep -q -E ' __hidden___udivsi3$|__udiv_w_sdiv'; then
        echo "libgcc's div.o is linked"
        return 1
    fi
    for s in __mulsi3 __divsi3 __udivsi3 __modsi3 __umodsi3 __muldi3 __divdi3 __udivdi3 __moddi3 __umoddi3; do
        elf "$f" sym "$s" >/dev/null || continue
        dis=$(riscv64-unknown-elf-objdump -d --disassemble="$s" "$f")
        grep -q ecall <<<"$dis" || { echo "$s is not the runtime's"; return 1; }
    done
}

# The float/double add, sub, mul, div present must be the runtime's (environment call, charged
# the DPU's soft-float cost), never libgcc's.
float_ops_ours() { # ELF
    local f=$1 s dis
    for s in __addsf3 __subsf3 __mulsf3 __divsf3 __adddf3 __subdf3 __muldf3 __divdf3; do
        elf "$f" sym "$s" >/dev/null || continue
        dis=$(riscv64-unknown-elf-objdump -d --disassemble="$s" "$f")
        grep -q ecall <<<"$dis" || { echo "$s is not the runtime's (libgcc's soft-float linked)"; return 1; }
    done
}

# The compiler the shim uses (OPENPIM_DPU_COMPILER, else the one OPENPIM_DPU_CC names, else clang).
compiler=${OPENPIM_DPU_COMPILER:-}
if [[ -z $compiler ]]; then
    case ${OPENPIM_DPU_CC:-} in
        '') compiler=$(sed -n 's/^default_compiler=//p' "$clang") ;;
        *clang*) compiler=clang ;;
        *) compiler=gcc ;;
    esac
fi
echo "== compiler: $compiler"
rtdir=${OPENPIM_DPU_BUILD:-$root/build/dpu}/$compiler

# Only RV32I: no M-extension instruction (mul/div/rem...), no compressed (16-bit) encoding.
rv32i_only() { # ELF
    local bad
    bad=$(riscv64-unknown-elf-objdump -d -M no-aliases "$1" | awk -F'\t' '
        /^ *[0-9a-f]+:\t/ {
            enc = $2; gsub(/ /, "", enc); op = $3; sub(/ .*/, "", op)
            if (length(enc) != 8 || op ~ /^(mul|mulh|mulhsu|mulhu|div|divu|rem|remu)$/ || op ~ /^c\./) print $0
        }' | head -n 3)
    [[ -z $bad ]] || { echo "not RV32I:"; echo "$bad"; return 1; }
}

echo "== runtime library"
check "make -C sdk/dpu" make -s -C "$root/sdk/dpu" COMPILER="$compiler" BUILD="$rtdir" \
    ${OPENPIM_DPU_CC:+DPU_CC="$OPENPIM_DPU_CC"}
lib=$rtdir/libdpurt.a
for s in __mulsi3 __divsi3 __udivsi3 __modsi3 __umodsi3 __muldi3 __divdi3 __udivdi3 __moddi3 __umoddi3 \
    __addsf3 __subsf3 __mulsf3 __divsf3 __adddf3 __subdf3 __muldf3 __divdf3 \
    memcpy memset memmove memcmp strlen printf mem_alloc barrier_wait handshake_notify sem_take; do
    # C library functions are weak (W): a program's own definition wins, as with a C library
    # built one function per object; the arithmetic helpers (__*si3, __*di3, __*sf3, __*df3)
    # stay strong (T) so that they win over libgcc's.
    case $s in __*) kind=T ;; *) kind=W ;; esac
    if riscv64-unknown-elf-nm --defined-only "$lib" 2>/dev/null | grep -q " $kind $s\$"; then ok "libdpurt defines $s ($kind)"; else ko "libdpurt defines $s ($kind)"; fi
done
for s in __addsf3 __subsf3 __mulsf3 __divsf3 __adddf3 __subdf3 __muldf3 __divdf3 __mulsi3 __udivdi3; do
    if riscv64-unknown-elf-nm --defined-only "$rtdir/libgcc-dpu.a" 2>/dev/null | grep -q " T $s\$"; then
        ko "libgcc-dpu.a does not define $s"
    else ok "libgcc-dpu.a does not define $s"; fi
done

echo "== arithmetic (int, long long, float, double)"
for opt in -O0 -O2 -Os; do
    check "arith $opt links" "$clang" $opt -Wall -Wextra -Werror "$progs/arith.c" -o "$out/arith$opt"
    [[ -f $out/arith$opt ]] || continue
    check "arith $opt layout" elf "$out/arith$opt" layout
    check "arith $opt: mul/div through environment calls" no_libgcc_intdiv "$out/arith$opt"
    check "arith $opt: float/double add/sub/mul/div through environment calls" float_ops_ours "$out/arith$opt"
    check "arith $opt: RV32I only (no M or C instructions)" rv32i_only "$out/arith$opt"
    # clang computes a % b from a / b when it has both (-O1 and up): no __moddi3 then.
    moddi3=__moddi3
    [[ $compiler == clang && $opt != -O0 ]] && moddi3=
    for s in __mulsi3 __divsi3 $moddi3 __udivdi3 __addsf3 __subsf3 __mulsf3 __divsf3 __adddf3 __subdf3 __muldf3 \
        __divdf3 __fixsfsi __floatsisf __extendsfdf2 __gtdf2; do
        if elf "$out/arith$opt" sym $s >/dev/null; then ok "arith $opt has $s"; else ko "arith $opt has $s"; fi
    done
    eq "arith $opt NR_TASKLETS default" "$(elf "$out/arith$opt" word __sys_nr_tasklets)" 1
    eq "arith $opt printf buffer default" "$(elf "$out/arith$opt" sym __stdout_buffer_size)" 0x100000
done

echo "== every header, 16 tasklets"
for flags in "-O2" "-O0 -g" "-O3 -flto" "-O2 -flto=thin -std=c99" "-Os -std=c11 -ffunction-sections" "-O2 -std=gnu99"; do
    name="all_headers $flags"
    f=$out/all_$(tr -c 'a-zA-Z0-9' _ <<<"$flags")
    # shellcheck disable=SC2086
    check "$name builds (-Wall -Wextra -Werror)" "$clang" $flags -Wall -Wextra -Werror -DNR_TASKLETS=16 \
        "$progs/all_headers.c" -o "$f"
    [[ -f $f ]] || continue
    check "$name layout" elf "$f" layout
    check "$name no libgcc mul/div" no_libgcc_intdiv "$f"
    check "$name no libgcc float add/sub/mul/div" float_ops_ours "$f"
    check "$name RV32I only" rv32i_only "$f"
    eq "$name NR_TASKLETS" "$(elf "$f" word __sys_nr_tasklets)" 16
    eq "$name STDOUT_BUFFER_INIT" "$(elf "$f" sym __stdout_buffer_size)" 0x1000
    for b in my_barrier second_barrier; do
        bit=$(($(elf "$f" sym "__atomic_bit___barrier_$b") - 0xF0000000))
        eq "$name $b = {0xff, 16, 16, bit $bit}" "$(elf "$f" bytes $b 4)" "$(printf 'ff1010%02x' $bit)"
    done
    bit=$(($(elf "$f" sym __atomic_bit___semaphore_my_sem) - 0xF0000000))
    eq "$name my_sem = {0xff, 2, 2, bit $bit}" "$(elf "$f" bytes my_sem 4)" "$(printf 'ff0202%02x' $bit)"
    for s in counter checksum mram_in mram_out kept_symbol; do
        if elf "$f" sym $s >/dev/null; then ok "$name keeps $s"; else ko "$name keeps $s"; fi
    done
    mi=$(elf "$f" sym mram_in)
    mo=$(elf "$f" sym mram_out)
    end=$(elf "$f" sym __sys_used_mram_end)
    if ((mi >= 0x08000000 && mo >= 0x08000000 && end >= mo + 16 * 256 * 8)); then ok "$name MRAM variables"; else ko "$name MRAM variables" "$mi $mo $end"; fi
    c=$(elf "$f" sym counter)
    if ((c < 0x10000)); then ok "$name __host in WRAM"; else ko "$name __host in WRAM"; fi
done

echo "== tasklet configuration"
f=$out/stacks
check "STACK_SIZE overrides" "$clang" -O2 -DNR_TASKLETS=4 -DSTACK_SIZE_DEFAULT=512 -DSTACK_SIZE_TASKLET_2=2056 \
    "$progs/arith.c" -o "$f"
if [[ -f $f ]]; then
    check "stacks layout" elf "$f" layout
    read -r -a t <<<"$(elf "$f" word __sys_stack_table 8)"
    eq "tasklet 0 stack size" $((t[1] - t[0])) 512
    eq "tasklet 1 stack size" $((t[3] - t[2])) 512
    eq "tasklet 2 stack size" $((t[5] - t[4])) 2056
    eq "tasklet 3 stack size" $((t[7] - t[6])) 512
    eq "stack tops 16-aligned" $(((t[1] | t[3] | t[5] | t[7]) % 16)) 0
fi
f=$out/default_stacks
check "default stack size" "$clang" -DNR_TASKLETS=3 "$progs/arith.c" -o "$f"
[[ -f $f ]] && read -r -a t <<<"$(elf "$f" word __sys_stack_table 6)" &&
    eq "default stack = 1024" "$((t[1] - t[0])) $((t[3] - t[2])) $((t[5] - t[4]))" "1024 1024 1024"
f=$out/many
check "NR_TASKLETS=32 links (the loader rejects it)" "$clang" -DNR_TASKLETS=32 "$progs/arith.c" -o "$f"
[[ -f $f ]] && eq "NR_TASKLETS=32 recorded" "$(elf "$f" word __sys_nr_tasklets)" 32
check "-D NR_TASKLETS=8 (separate argument)" "$clang" -D NR_TASKLETS=8 "$progs/arith.c" -o "$out/sep"
[[ -f $out/sep ]] && eq "-D NR_TASKLETS=8 recorded" "$(elf "$out/sep" word __sys_nr_tasklets)" 8
expect_fail "STACK_SIZE_DEFAULT=100 rejected" "multiple of 8" "$clang" -DSTACK_SIZE_DEFAULT=100 "$progs/arith.c" -o "$out/x"
expect_fail "STACK_SIZE_TASKLET_1=1001 rejected" "multiple of 8" "$clang" -DNR_TASKLETS=2 -DSTACK_SIZE_TASKLET_1=1001 "$progs/arith.c" -o "$out/x"
expect_fail "NR_TASKLETS=abc rejected" "NR_TASKLETS must be an integer" "$clang" -DNR_TASKLETS=abc "$progs/arith.c" -o "$out/x"

echo "== build modes"
check "-c then link (multi-source)" bash -c "'$clang' -O2 -DNR_TASKLETS=4 -c '$progs/multi_a.c' -o '$out/a.o' &&
    '$clang' -c -O2 -DNR_TASKLETS=4 -o '$out/b.o' '$progs/multi_b.c' &&
    '$clang' -DNR_TASKLETS=4 '$out/a.o' '$out/b.o' -o '$out/multi1'"
check "multi-source in one call, -o first" "$clang" -o "$out/multi2" -DNR_TASKLETS=4 -O2 "$progs/multi_a.c" "$progs/multi_b.c"
for f in "$out/multi1" "$out/multi2"; do
    [[ -f $f ]] || continue
    check "${f##*/} layout" elf "$f" layout
    bit=$(($(elf "$f" sym __atomic_bit___barrier_shared_barrier) - 0xF0000000))
    eq "${f##*/} barrier lock = its atomic bit ($bit)" "$(elf "$f" bytes shared_barrier 4)" "$(printf 'ff0404%02x' $bit)"
done
check "clang-only flags ignored" "$clang" --target=dpu-upmem-dpurte -mcpu=v1A -fcolor-diagnostics -Weverything \
    -Wno-unknown-warning-option -mllvm -some-llvm-flag -Wthis-warning-does-not-exist -O2 -g -w -DNR_TASKLETS=2 \
    "$progs/arith.c" -o "$out/clangflags"
check "-S and -E" bash -c "'$clang' -S -O2 '$progs/arith.c' -o '$out/arith.s' && '$clang' -E '$progs/arith.c' -o '$out/arith.i'"
check "dependency files (-MD -MF)" bash -c "'$clang' -c -MD -MF '$out/a.d' '$progs/multi_a.c' -o '$out/dep.o' && grep -q barrier.h '$out/a.d'"
check "symlinked shim" bash -c "ln -s '$clang' '$out/clang-link' && '$out/clang-link' '$progs/arith.c' -o '$out/vialink'"
check "constant odd mram_read size compiles (the DPU encodes it; the engine advises)" \
    "$clang" -O2 "$progs/bad_mram.c" -o "$out/bad"
expect_fail "no input files" "no input files" "$clang" -o "$out/none"

echo "== oversized programs still link"
f=$out/big_iram
check "IRAM overflow links" "$clang" -O2 "$progs/big_iram.c" -o "$f"
[[ -f $f ]] && { e=$(elf "$f" sym __sys_iram_end); if ((e > 0x80006000)); then ok "__sys_iram_end > IRAM end"; else ko "__sys_iram_end > IRAM end" "$e"; fi; }
f=$out/big_wram
check "WRAM overflow links" "$clang" -O2 "$progs/big_wram.c" -o "$f"
[[ -f $f ]] && { e=$(elf "$f" sym __sys_wram_end); if ((e > 0x10000)); then ok "__sys_wram_end > WRAM end"; else ko "__sys_wram_end > WRAM end" "$e"; fi; }

echo "== parallel first use (runtime built once under a lock)"
pb=$out/build
pids=()
for i in 1 2 3; do
    OPENPIM_DPU_BUILD=$pb "$clang" -O2 "$progs/arith.c" -o "$out/par$i" >"$out/par$i.log" 2>&1 &
    pids+=($!)
done
allok=1
for p in "${pids[@]}"; do wait "$p" || allok=0; done
if ((allok)) && [[ -f $out/par1 && -f $out/par2 && -f $out/par3 ]]; then ok "3 parallel builds with a fresh runtime"; else ko "3 parallel builds with a fresh runtime" "$(cat "$out"/par*.log)"; fi

echo "== functional runs on the reference interpreter (mini_dpu.py; not the engine)"
run_dpu() { python3 "$here/mini_dpu.py" "$@"; }
f=$out/fn_arith
if "$clang" -O2 "$progs/arith.c" -o "$f" 2>/dev/null; then
    eq "arith results and printf" "$(run_dpu "$f" | sed -n 1p)" \
        "i=-21 u=1333333333 l=-1272750402189 ul=350628 f=-0.375000 d=-7.853982e+10 x=0000beef s=str c=z"
else ko "arith builds"; fi
for n in 1 5 16 24; do
    f=$out/fn_sync$n
    if "$clang" -O2 -DNR_TASKLETS=$n "$progs/sync_stress.c" -o "$f" 2>/dev/null; then
        for seed in "" 7 11; do
            r=$(run_dpu "$f" ${seed:+--seed $seed} | tr '\n' ' ')
            if [[ $r == "sync ok "*" done "* ]]; then ok "sync_stress NR_TASKLETS=$n seed=${seed:-rr}"; else ko "sync_stress NR_TASKLETS=$n seed=${seed:-rr}" "$r"; fi
        done
    else ko "sync_stress NR_TASKLETS=$n builds"; fi
done
for cs in 32 256 1024; do
    f=$out/fn_seq$cs
    if "$clang" -O2 -DSEQREAD_CACHE_SIZE=$cs "$progs/seqread_test.c" -o "$f" 2>/dev/null; then
        r=$(run_dpu "$f" | tr '\n' ' ')
        if [[ $r == "seqread ok "*" done "* ]]; then ok "seqread/unaligned SEQREAD_CACHE_SIZE=$cs"; else ko "seqread/unaligned SEQREAD_CACHE_SIZE=$cs" "$r"; fi
    else ko "seqread_test builds"; fi
done
expect_fail "SEQREAD_CACHE_SIZE=48 rejected" "power of two" "$clang" -DSEQREAD_CACHE_SIZE=48 "$progs/seqread_test.c" -o "$out/x"
f=$out/fn_all
if "$clang" -O2 -DNR_TASKLETS=16 "$progs/all_headers.c" -o "$f" 2>/dev/null; then
    r=$(run_dpu "$f" | sed -n 1p)
    if [[ $r == "counter=16 checksum=0 n=153 cycles="*" done" ]]; then ok "all_headers runs"; else ko "all_headers runs" "$r"; fi
fi
for w in "1:program fault code 1 detail 1024" "2:program fault code 2 detail 16" "3:bad DMA"; do
    f=$out/fn_fault${w%%:*}
    if "$clang" -O2 -DWHICH=${w%%:*} "$progs/faults.c" -o "$f" 2>/dev/null; then
        r=$(run_dpu "$f" | tail -1)
        if [[ $r == *"${w#*:}"* ]]; then ok "fault ${w#*:}"; else ko "fault ${w#*:}" "$r"; fi
    fi
done

echo "== both compilers build and run (compilers.sh)"
if log=$("$here/compilers.sh" 2>&1); then
    ok "clang and gcc builds run ($(grep -c '^ok' <<<"$log") checks)"
else
    ko "clang and gcc builds run" "$(grep -E '^(FAIL|     )' <<<"$log")"
fi

echo "== the scheduler where it removes spills (schedule.sh)"
if log=$("$here/schedule.sh" 2>&1); then
    ok "clang's scheduling rule ($(grep -c '^ok' <<<"$log") checks)"
else
    ko "clang's scheduling rule" "$(grep -E '^(FAIL|     )' <<<"$log")"
fi

echo "== dpu-pkg-config"
# libdpu, then the virtual-clock library when it is built (docs/usage.md, "The virtual clock")
libs="-L$root/target/release -Wl,-rpath,$root/target/release -ldpu"
vclock=${OPENPIM_VCLOCKDIR:-$root/build/host}
[[ -f $vclock/libopenpim_vclock.so ]] && libs+=" -L$vclock -Wl,-rpath,$vclock -lopenpim_vclock"
eq "--cflags --libs dpu" "$("$pkg" --cflags --libs dpu)" "-I$root/sdk/include $libs"
eq "--cflags dpu" "$("$pkg" --cflags dpu)" "-I$root/sdk/include"
eq "--libs dpu" "$("$pkg" --libs dpu)" "$libs"
check "--modversion dpu" "$pkg" --modversion dpu
eq "--variable=libdir dpu" "$("$pkg" --variable=libdir dpu)" "$root/target/release"
expect_fail "unknown package" "was not found" "$pkg" --cflags --libs nosuchpkg

echo
echo "passed: $pass, failed: $fail"
((fail == 0))
