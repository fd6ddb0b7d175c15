#!/usr/bin/env bash
# Both DPU compilers (docs/usage.md, "The DPU compiler"): builds the same DPU programs with
# OPENPIM_DPU_COMPILER=clang and =gcc, checks each binary (RV32I only, the expected linker) and
# runs it on the reference interpreter (mini_dpu.py) and, when target/release/libdpu.so is
# built, on the engine through a tiny host program (progs/run_host.c). Both compilers' builds
# must print the expected results. Called by check.sh; also runs alone:
#   sdk/dpu/test/compilers.sh        (exit status 0 when every check passes)
set -u
# Each compiler with its default command (an OPENPIM_DPU_CC meant for one would break the other).
unset OPENPIM_DPU_CC OPENPIM_DPU_LD
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh" compilers

# name|flags|source|expected first line (a shell pattern)
programs=(
    "arith|-O2|arith.c|i=-21 u=1333333333 l=-1272750402189 ul=350628 f=-0.375000 d=-7.853982e+10 x=0000beef s=str c=z"
    "sync16|-O2 -DNR_TASKLETS=16|sync_stress.c|sync ok *"
    "headers_lto|-O3 -flto -DNR_TASKLETS=16|all_headers.c|counter=16 checksum=0 n=153 cycles=* done"
    "seqread_thin|-O2 -flto=thin|seqread_test.c|seqread ok*"
)

engine=0
host=$out/run_host
if [[ -f $root/target/release/libdpu.so ]] && command -v gcc >/dev/null 2>&1; then
    # shellcheck disable=SC2046
    if gcc -std=c11 -O2 "$progs/run_host.c" -o "$host" $("$root/sdk/bin/dpu-pkg-config" --cflags --libs dpu) 2>"$out/host.log"; then
        engine=1
    else
        ko "host program builds" "$(cat "$out/host.log")"
    fi
else
    echo "note: target/release/libdpu.so is missing: runs on mini_dpu.py only (make build for the engine runs)"
fi

for compiler in clang gcc; do
    echo "== $compiler"
    for p in "${programs[@]}"; do
        IFS='|' read -r name flags src expect <<<"$p"
        f=$out/${name}_$compiler
        # shellcheck disable=SC2086
        if ! log=$(OPENPIM_DPU_COMPILER=$compiler "$shim" $flags -Wall -Wextra -Werror "$progs/$src" -o "$f" 2>&1); then
            ko "$compiler: $name builds ($flags)" "$log"
            continue
        fi
        ok "$compiler: $name builds ($flags)"
        linker=$(riscv64-unknown-elf-readelf -p .comment "$f" 2>/dev/null | grep -c 'LLD')
        if [[ $compiler == clang ]]; then want=1; else want=0; fi
        if ((linker == want)); then ok "$compiler: $name linked by $([[ $want == 1 ]] && echo lld || echo 'GNU ld')"; else ko "$compiler: $name linker"; fi
        bad=$(riscv64-unknown-elf-objdump -d -M no-aliases "$f" | awk -F'\t' '
            /^ *[0-9a-f]+:\t/ {
                enc = $2; gsub(/ /, "", enc); op = $3; sub(/ .*/, "", op)
                if (length(enc) != 8 || op ~ /^(mul|mulh|mulhsu|mulhu|div|divu|rem|remu)$/ || op ~ /^c\./) print $0
            }' | head -n 3)
        if [[ -z $bad ]]; then ok "$compiler: $name is RV32I only"; else ko "$compiler: $name is RV32I only" "$bad"; fi
        r=$(timeout 300 python3 "$here/mini_dpu.py" "$f" 2>&1 | sed -n 1p)
        # shellcheck disable=SC2053
        if [[ $r == $expect ]]; then ok "$compiler: $name on mini_dpu.py"; else ko "$compiler: $name on mini_dpu.py" "$r"; fi
        if ((engine)); then
            r=$(cd "$out" && LD_LIBRARY_PATH=$root/target/release timeout 300 "$host" "$f" 2>&1 | grep -v '^=== DPU' | sed -n 1p)
            # shellcheck disable=SC2053
            if [[ $r == $expect ]]; then ok "$compiler: $name on the engine"; else ko "$compiler: $name on the engine" "$r"; fi
        fi
    done
done

echo
echo "compilers: passed: $pass, failed: $fail"
((fail == 0))
