# Core dump checks of tests/debug/run.sh (sourced: uses its helpers and variables).

# A faulting DPU: one core file, and nothing else, in a directory created for it.
rm -rf "$tmp/cores"
(cd "$prog" && OPENPIM_CORE_DIR="$tmp/cores/sub" ./bin/host ./bin/dpu_fault) >"$tmp/core.out" 2>&1
rc=$?
[ "$rc" -eq "$fault_rc" ]
check "core: the program's exit status is unchanged ($fault_rc)" $? "got $rc: $(cat "$tmp/core.out")"
files=$(ls -A "$tmp/cores/sub" 2>/dev/null | tr '\n' ' ')
[ "$files" = "core.0.0 " ]
check "core: one file core.RANK.DPU per faulting DPU and nothing else" $? "files: $files; $(cat "$tmp/core.out")"
core="$tmp/cores/sub/core.0.0"
if [ -f "$core" ]; then
    (cd "$prog" && timeout 60 gdb-multiarch -batch -nx \
        -ex 'info threads' \
        -ex 'printf "TP %d\n", $tp' \
        -ex 'printf "MRAM %u\n", input[64 * 2]' \
        -ex 'printf "WRAM %#x\n", bad_address' \
        -ex 'thread 2' -ex 'printf "OTHER TP %d\n", $tp' \
        bin/dpu_fault "$core") >"$tmp/core.gdb.out" 2>&1
    grep -q "^#0  main () at fault.c:$fault_line" "$tmp/core.gdb.out" &&
        grep -q "Program terminated with signal SIGSEGV" "$tmp/core.gdb.out"
    check "core: gdb-multiarch PROGRAM CORE opens at the fault line (fault.c:$fault_line)" $? "$(cat "$tmp/core.gdb.out")"
    n=$(grep -cE "^[* ] [1-4] +LWP [1-4] " "$tmp/core.gdb.out")
    grep -qx "TP 2" "$tmp/core.gdb.out" && [ "$n" -eq 4 ] && grep -qE "^OTHER TP [013]$" "$tmp/core.gdb.out"
    check "core: every tasklet is a thread with its registers, the faulting one selected" $? "$(cat "$tmp/core.gdb.out")"
    # input[128] = 128 * 7 + 3, read by tasklet 2's DMA; bad_address is the WRAM variable.
    grep -qx "MRAM 899" "$tmp/core.gdb.out" && grep -qx "WRAM 0x200000" "$tmp/core.gdb.out"
    check "core: WRAM and the touched MRAM pages hold the values at the fault" $? "$(cat "$tmp/core.gdb.out")"
    out=$(cd "$prog" && "$openpim" core inspect "$core" 2>&1)
    grep -q "tasklet 2: running, pc 0x[0-9a-f]* main (fault.c:$fault_line)" <<<"$out" &&
        grep -q "fault: tasklet 2 at pc" <<<"$out" && grep -q "MRAM 0x08000000" <<<"$out"
    check "core: openpim core inspect summarises the fault, tasklets and memories" $? "$out"
fi
out=$("$openpim" core inspect "$prog/task.c" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && grep -q "not a 32-bit little-endian ELF file" <<<"$out"
check "core inspect: a file that is not a core is refused by name" $? "rc=$rc: $out"

# No fault: no core.
(cd "$prog" && OPENPIM_CORE_DIR="$tmp/cores/none" ./bin/host) >/dev/null 2>&1
[ -z "$(ls -A "$tmp/cores/none" 2>/dev/null)" ]
check "core: a run without a fault writes no core" $?

# An unwritable directory: said once, the program runs on.
touch "$tmp/not-a-dir"
(cd "$prog" && OPENPIM_CORE_DIR="$tmp/not-a-dir/cores" ./bin/host ./bin/dpu_fault) >"$tmp/core-bad.out" 2>&1
rc=$?
n=$(grep -c "OPENPIM_CORE_DIR" "$tmp/core-bad.out")
[ "$rc" -eq "$fault_rc" ] && [ "$n" -eq 1 ]
check "core: an unwritable directory is reported once and the program runs on" $? "rc=$rc: $(cat "$tmp/core-bad.out")"

# The profile key coreDir= does the same.
(cd "$prog" && UPMEM_PROFILE_BASE="coreDir=$tmp/cores/profile" ./bin/host ./bin/dpu_fault) >"$tmp/core-prof.out" 2>&1
[ -f "$tmp/cores/profile/core.0.0" ]
check "core: the profile key coreDir=DIR writes the core too" $? "$(cat "$tmp/core-prof.out")"
