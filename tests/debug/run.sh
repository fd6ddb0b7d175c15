#!/usr/bin/env bash
# Debugging tests (docs/debugging.md): scripted `gdb-multiarch -batch` sessions against the
# programs of tests/debug/weighted (built with -g), instruction traces and core dumps.
#
#   tests/debug/run.sh
#
# Each check prints PASS/FAIL; then "N passed, M failed"; exits non-zero on any failure.
# Needs target/release/{libdpu.so,openpim} (make build) and gdb-multiarch (scripts/setup.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$root/sdk/bin:$PATH"
export LD_LIBRARY_PATH="$root/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset OPENPIM_REPORT OPENPIM_TRACE OPENPIM_GDB OPENPIM_GDB_DPU OPENPIM_GDB_ON_FAULT \
    OPENPIM_CORE_DIR OPENPIM_DPU_TRACE OPENPIM_DPU_TRACE_DPUS OPENPIM_DPU_TRACE_TASKLETS \
    OPENPIM_DPU_TRACE_LIMIT
openpim="$root/target/release/openpim"
prog="$here/weighted"

passed=0
failed=0
ok() { echo "PASS $1"; passed=$((passed + 1)); }
ko() { echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/    /' <<<"$2" | head -60; failed=$((failed + 1)); }
check() { # check NAME CONDITION-EXIT-STATUS DETAILS
    if [ "$2" -eq 0 ]; then ok "$1"; else ko "$1" "${3:-}"; fi
}
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

if ! command -v gdb-multiarch >/dev/null; then
    ko "gdb-multiarch is installed" "gdb-multiarch is missing: run scripts/setup.sh (Debian package gdb-multiarch)"
    finish
fi
"$root/scripts/dpu-toolchain.sh" fresh "$prog"
if ! out=$(make -s -C "$prog" 2>&1); then
    ko "build" "$out"
    finish
fi

tmp=$(mktemp -d)
host_pid=
cleanup() {
    [ -n "$host_pid" ] && kill "$host_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# A free port per session (the kernel's choice, released at once for the server to take).
port=
next_port() {
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
}

# The line of the marker comment MARK in FILE.
line_of() { grep -n "$2" "$prog/$1" | head -1 | cut -d: -f1; }
store_line=$(line_of task.c LINE_STORE)
finished_line=$(line_of task.c LINE_FINISHED)
fault_line=$(line_of fault.c LINE_FAULT)

# start_host NAME CMD...: runs CMD in $prog in the background (stdout/stderr into
# $tmp/NAME.out/.err) and waits until the DPU stopped for the debugger.
start_host() {
    local name=$1
    shift
    (cd "$prog" && exec "$@") >"$tmp/$name.out" 2>"$tmp/$name.err" &
    host_pid=$!
    for _ in $(seq 1 300); do
        grep -qs "waiting for a debugger" "$tmp/$name.err" && return 0
        kill -0 "$host_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# wait_host: the host's exit status (after the debugger is done); a host still running after
# 120 s is killed (a failed session may leave a DPU that never ends) and fails.
wait_host() {
    local rc=0
    for _ in $(seq 1 1200); do
        kill -0 "$host_pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$host_pid" 2>/dev/null; then
        kill "$host_pid"
        rc=124
        wait "$host_pid"
    else
        wait "$host_pid" || rc=$?
    fi
    host_pid=
    return $rc
}

# gdb_session NAME PROGRAM: runs $tmp/NAME.gdb against the server on $port.
gdb_session() {
    (cd "$prog" && timeout 120 gdb-multiarch -batch -nx \
        -ex "target remote 127.0.0.1:$port" -x "$tmp/$1.gdb" "$2") >"$tmp/$1.gdb.out" 2>&1
}

json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }

# --- reference run, no debugger ----------------------------------------------------------
(cd "$prog" && OPENPIM_REPORT="$tmp/ref.json" ./bin/host) >"$tmp/ref.out" 2>&1
check "reference run is correct" $? "$(cat "$tmp/ref.out")"
ref_cycles=$(json "$tmp/ref.json" "r['launches'][0]['cycles']")
ref_insns=$(json "$tmp/ref.json" "r['launches'][0]['instructions']")
ref_kernel=$(json "$tmp/ref.json" "r['phases']['dpu_kernel_ns']")

# same_timing NAME REPORT: cycles, instructions and the kernel phase equal the reference.
same_timing() {
    local c i k
    c=$(json "$2" "r['launches'][0]['cycles']")
    i=$(json "$2" "r['launches'][0]['instructions']")
    k=$(json "$2" "r['phases']['dpu_kernel_ns']")
    [ "$c $i $k" = "$ref_cycles $ref_insns $ref_kernel" ]
    check "$1: same cycles, instructions, phases.dpu_kernel_ns as without the debugger" $? \
        "with the debugger: $c $i $k; without: $ref_cycles $ref_insns $ref_kernel"
}

# --- 1. a debugger that only continues ---------------------------------------------------
next_port
if start_host cont "$openpim" run "--gdb=127.0.0.1:$port" "--report=$tmp/cont.json" -- ./bin/host; then
    echo "continue" >"$tmp/cont.gdb"
    gdb_session cont bin/dpu_weighted
    wait_host
    check "continue only: the host program exits 0" $? "$(cat "$tmp/cont.out" "$tmp/cont.err")"
    grep -q "exited normally" "$tmp/cont.gdb.out"
    check "continue only: GDB is told the DPU's launch ended" $? "$(cat "$tmp/cont.gdb.out")"
    cmp -s "$tmp/ref.out" "$tmp/cont.out"
    check "continue only: same results" $? "$(diff "$tmp/ref.out" "$tmp/cont.out")"
    same_timing "continue only" "$tmp/cont.json"
else
    ko "continue only: the DPU stops and waits for a debugger" "$(cat "$tmp/cont.err")"
    wait_host
fi

# --- 2. breakpoint at a source line, threads, registers, memory -------------------------
next_port
cat >"$tmp/brk.gdb" <<EOF
info threads
break task.c:$store_line
continue
info threads
monitor info
printf "MRAM input[5]=%u\n", input[5]
printf "PC=%#x\n", \$pc
printf "STOP tp=%d id=%u sum=%u\n", \$tp, id, sum
continue
printf "STOP tp=%d id=%u sum=%u\n", \$tp, id, sum
continue
printf "STOP tp=%d id=%u sum=%u\n", \$tp, id, sum
continue
printf "STOP tp=%d id=%u sum=%u\n", \$tp, id, sum
delete
continue
EOF
if start_host brk env OPENPIM_REPORT="$tmp/brk.json" OPENPIM_GDB="127.0.0.1:$port" ./bin/host; then
    gdb_session brk bin/dpu_weighted
    wait_host
    check "breakpoints: the host program exits 0 with correct results" $? "$(cat "$tmp/brk.out" "$tmp/brk.err")"
    n=$(grep -c "hit Breakpoint 1, main () at task.c:$store_line" "$tmp/brk.gdb.out")
    [ "$n" -eq 4 ]
    check "breakpoint at task.c:$store_line stops each of the 4 tasklets" $? "$(cat "$tmp/brk.gdb.out")"
    tps=$(grep -o "^STOP tp=[0-9]*" "$tmp/brk.gdb.out" | cut -d= -f2 | sort -n | tr '\n' ' ')
    [ "$tps" = "0 1 2 3 " ]
    check "each tasklet stops once, with its own me() (\$tp)" $? "tasklets stopped: $tps"
    bad=0
    while read -r _ tp id sum; do
        tp=${tp#tp=}; id=${id#id=}; sum=${sum#sum=}
        [ "$tp" = "$id" ] || bad=1
        grep -qx "sum\[$tp\] = $sum" "$tmp/brk.out" || bad=1
    done < <(grep "^STOP" "$tmp/brk.gdb.out")
    check "a variable's value at the breakpoint equals the CPU reference" $bad \
        "$(grep "^STOP" "$tmp/brk.gdb.out"; cat "$tmp/brk.out")"
    n=$(grep -cE "Thread 1\.[1-4] \(tasklet [0-3] (running|sleeping|exited), DPU 0\.0\)" "$tmp/brk.gdb.out")
    [ "$n" -ge 8 ]
    check "info threads lists the 4 tasklets" $? "$(cat "$tmp/brk.gdb.out")"
    n=$(grep -cE "^tasklet [0-3]: (running|sleeping|exited).*, pc 0x800[0-9a-f]{5} .*, [0-9]+ instructions issued$" "$tmp/brk.gdb.out")
    grep -qE "^DPU 0\.0 \(\./bin/dpu_weighted\), cycle [0-9]+, 4 tasklets$" "$tmp/brk.gdb.out" && [ "$n" -eq 4 ]
    check "monitor info shows the DPU's cycle and each tasklet" $? "$(cat "$tmp/brk.gdb.out")"
    grep -qx "MRAM input\[5\]=38" "$tmp/brk.gdb.out"
    check "MRAM reads at the linker script's address (input[5] = 5*7+3)" $? "$(cat "$tmp/brk.gdb.out")"
    grep -q "exited normally" "$tmp/brk.gdb.out"
    check "breakpoints: GDB is told the launch ended" $? "$(tail -5 "$tmp/brk.gdb.out")"
    same_timing "breakpoints and continue" "$tmp/brk.json"
else
    ko "breakpoints: the DPU stops and waits" "$(cat "$tmp/brk.err")"
    wait_host
fi

# --- 3. watchpoint on a WRAM variable -----------------------------------------------------
next_port
cat >"$tmp/watch.gdb" <<EOF
watch finished
continue
printf "WATCH tp=%d finished=%u\n", \$tp, finished
continue
printf "WATCH tp=%d finished=%u\n", \$tp, finished
delete
continue
EOF
if start_host watch env OPENPIM_REPORT="$tmp/watch.json" OPENPIM_GDB="127.0.0.1:$port" ./bin/host; then
    gdb_session watch bin/dpu_weighted
    wait_host
    check "watchpoint: the host program exits 0" $? "$(cat "$tmp/watch.err")"
    # finished = id: tasklet 0 writes 0 over 0 (no change, GDB goes on); tasklets 1 and 2
    # change it. GDB shows the statement after the write, as on any target.
    w=$(grep "^WATCH" "$tmp/watch.gdb.out" | tr '\n' ' ')
    [ "$w" = "WATCH tp=1 finished=1 WATCH tp=2 finished=2 " ]
    check "watchpoint stops the tasklet that wrote, with the new value" $? "$(cat "$tmp/watch.gdb.out")"
    n=$(grep -c "^main () at task.c:$((finished_line + 1))" "$tmp/watch.gdb.out")
    o=$(grep -c "^New value = " "$tmp/watch.gdb.out")
    [ "$n" -eq 2 ] && [ "$o" -eq 2 ]
    check "watchpoint stops right after the writing line (task.c:$finished_line)" $? "$(cat "$tmp/watch.gdb.out")"
    same_timing "watchpoints" "$tmp/watch.json"
else
    ko "watchpoint: the DPU stops and waits" "$(cat "$tmp/watch.err")"
    wait_host
fi

# A read watchpoint on MRAM, hit by a DMA (mram_read of tasklet 1's block).
next_port
printf 'rwatch input[64]\ncontinue\nprintf "RWATCH tp=%%d\\n", $tp\ndelete\ncontinue\n' >"$tmp/rwatch.gdb"
if start_host rwatch env OPENPIM_REPORT="$tmp/rwatch.json" OPENPIM_GDB="127.0.0.1:$port" ./bin/host; then
    gdb_session rwatch bin/dpu_weighted
    wait_host
    check "MRAM watchpoint: the host program exits 0" $? "$(cat "$tmp/rwatch.err")"
    grep -q "hit Hardware read watchpoint 1: input\[64\]" "$tmp/rwatch.gdb.out" &&
        grep -qx "Value = 451" "$tmp/rwatch.gdb.out" && grep -qx "RWATCH tp=1" "$tmp/rwatch.gdb.out"
    check "MRAM read watchpoint stops the tasklet whose DMA reads it (input[64] = 451)" $? "$(cat "$tmp/rwatch.gdb.out")"
    same_timing "MRAM watchpoint" "$tmp/rwatch.json"
else
    ko "MRAM watchpoint: the DPU stops and waits" "$(cat "$tmp/rwatch.err")"
    wait_host
fi

# --- 4. stepping one tasklet with the others frozen ---------------------------------------
next_port
cat >"$tmp/step.gdb" <<EOF
break task.c:$store_line
continue
delete
thread 1
printf "BEFORE 1 %#x\n", \$pc
thread 2
printf "BEFORE 2 %#x\n", \$pc
thread 3
printf "BEFORE 3 %#x\n", \$pc
thread 4
printf "BEFORE 4 %#x\n", \$pc
set scheduler-locking on
thread 2
stepi
stepi
stepi
thread 1
printf "AFTER 1 %#x\n", \$pc
thread 2
printf "AFTER 2 %#x\n", \$pc
thread 3
printf "AFTER 3 %#x\n", \$pc
thread 4
printf "AFTER 4 %#x\n", \$pc
set scheduler-locking off
continue
EOF
if start_host step env OPENPIM_REPORT="$tmp/step.json" OPENPIM_GDB="127.0.0.1:$port" ./bin/host; then
    gdb_session step bin/dpu_weighted
    wait_host
    check "stepping: the host program exits 0 with correct results" $? "$(cat "$tmp/step.out" "$tmp/step.err")"
    bad=0
    for t in 1 3 4; do
        b=$(grep "^BEFORE $t " "$tmp/step.gdb.out" | cut -d' ' -f3)
        a=$(grep "^AFTER $t " "$tmp/step.gdb.out" | cut -d' ' -f3)
        { [ -n "$b" ] && [ "$b" = "$a" ]; } || bad=1
    done
    b=$(grep "^BEFORE 2 " "$tmp/step.gdb.out" | cut -d' ' -f3)
    a=$(grep "^AFTER 2 " "$tmp/step.gdb.out" | cut -d' ' -f3)
    { [ -n "$b" ] && [ "$b" != "$a" ]; } || bad=1
    check "stepping one tasklet (scheduler-locking) leaves the others' PCs unchanged" $bad \
        "$(grep -E "^(BEFORE|AFTER)" "$tmp/step.gdb.out"; tail -20 "$tmp/step.gdb.out")"
    [ "$(json "$tmp/step.json" "r['launches'][0].get('stepped')")" = "True" ]
    check "the report marks the stepped launch" $? "$(json "$tmp/step.json" "r['launches'][0]")"
    [ "$(json "$tmp/brk.json" "r['launches'][0].get('stepped')")" = "None" ]
    check "a launch only stopped and continued is not marked stepped" $?
else
    ko "stepping: the DPU stops and waits" "$(cat "$tmp/step.err")"
    wait_host
fi

# --- 4b. source-level stepping while the other tasklets run --------------------------------
next_port
cat >"$tmp/next.gdb" <<EOF
break task.c:$store_line
continue
delete
printf "NEXT FROM tp=%d\n", \$tp
next
printf "NEXT TO tp=%d\n", \$tp
continue
EOF
if start_host next env OPENPIM_REPORT="$tmp/next.json" OPENPIM_GDB="127.0.0.1:$port" ./bin/host; then
    gdb_session next bin/dpu_weighted
    wait_host
    check "next: the host program exits 0 with correct results" $? "$(cat "$tmp/next.out" "$tmp/next.err")"
    from=$(grep "^NEXT FROM" "$tmp/next.gdb.out" | cut -d= -f2)
    to=$(grep "^NEXT TO" "$tmp/next.gdb.out" | cut -d= -f2)
    grep -q "^$finished_line[[:space:]]" "$tmp/next.gdb.out" && [ -n "$from" ] && [ "$from" = "$to" ]
    check "next moves the stopped tasklet to the following line (task.c:$finished_line)" $? "$(cat "$tmp/next.gdb.out")"
    same_timing "next (no scheduler-locking)" "$tmp/next.json"
else
    ko "next: the DPU stops and waits" "$(cat "$tmp/next.err")"
    wait_host
fi

# --- 5. attach on fault -------------------------------------------------------------------
(cd "$prog" && ./bin/host ./bin/dpu_fault) >"$tmp/fref.out" 2>&1
fault_rc=$?
next_port
cat >"$tmp/fault.gdb" <<EOF
info program
printf "FAULT tp=%d\n", \$tp
frame
continue
EOF
if start_host fault "$openpim" run "--gdb=127.0.0.1:$port" --gdb-on-fault -- ./bin/host ./bin/dpu_fault; then
    grep -q "stopped at a fault (SIGSEGV.*) of tasklet 2" "$tmp/fault.err"
    check "on fault: the faulting DPU stops and says so" $? "$(cat "$tmp/fault.err")"
    gdb_session fault bin/dpu_fault
    rc=0
    wait_host || rc=$?
    [ "$rc" -eq "$fault_rc" ] && [ "$fault_rc" -ne 0 ]
    check "on fault: openpim run exits with the program's status ($fault_rc)" $? "got $rc; $(cat "$tmp/fault.err")"
    grep -qx "FAULT tp=2" "$tmp/fault.gdb.out" && grep -q "main () at fault.c:$fault_line" "$tmp/fault.gdb.out"
    check "on fault: GDB shows the faulting tasklet at fault.c:$fault_line" $? "$(cat "$tmp/fault.gdb.out")"
    grep -q "It stopped with signal SIGSEGV" "$tmp/fault.gdb.out"
    check "on fault: the stop reason GDB gets is the fault's signal" $? "$(cat "$tmp/fault.gdb.out")"
    grep -q "signal SIGSEGV" "$tmp/fault.gdb.out"
    check "on fault: continuing ends the launch with the fault" $? "$(tail -5 "$tmp/fault.gdb.out")"
else
    ko "on fault: the DPU stops and waits" "$(cat "$tmp/fault.err")"
    wait_host
fi

# --- 5b. Ctrl-C stops a running DPU; memory writes ---------------------------------------
next_port
spin_line=$(line_of spin.c LINE_SPIN)
cat >"$tmp/spin.gdb" <<EOF
continue
printf "INT tp=%d\n", \$tp
set var go = 1
continue
EOF
if start_host spin env OPENPIM_GDB="127.0.0.1:$port" ./bin/host ./bin/dpu_spin; then
    # (not under timeout(1): it would pass the SIGINT on to GDB's whole process group, and
    # a second Ctrl-C makes GDB give up on the target)
    # (`set debug remote` shows when GDB has sent its continue)
    (cd "$prog" && exec gdb-multiarch -batch -nx -ex "target remote 127.0.0.1:$port" \
        -ex "set debug remote 1" -x "$tmp/spin.gdb" bin/dpu_spin) >"$tmp/spin.gdb.out" 2>&1 &
    gdb_pid=$!
    # Once GDB has resumed the DPU (which spins until `go` is set), interrupt it as Ctrl-C does.
    for _ in $(seq 1 300); do
        grep -q 'Sending packet: \$vCont;c' "$tmp/spin.gdb.out" && break
        sleep 0.1
    done
    sleep 0.5
    kill -INT "$gdb_pid"
    for _ in $(seq 1 600); do
        kill -0 "$gdb_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$gdb_pid" 2>/dev/null
    wait "$gdb_pid"
    wait_host
    check "Ctrl-C: the host program ends with correct results after the debugger set the gate" $? "$(cat "$tmp/spin.out" "$tmp/spin.err")"
    grep -q "received signal SIGINT" "$tmp/spin.gdb.out" && grep -q "spin.c:$spin_line" "$tmp/spin.gdb.out" &&
        grep -q "exited normally" "$tmp/spin.gdb.out"
    check "Ctrl-C stops the running DPU in its loop; writing WRAM (set var) lets it go on" $? "$(cat "$tmp/spin.gdb.out")"
else
    ko "Ctrl-C: the DPU stops and waits" "$(cat "$tmp/spin.err")"
    wait_host
fi

# --- 6. port probes, bind errors, refused combinations, a DPU never launched -------------
next_port
if start_host probe env OPENPIM_GDB="127.0.0.1:$port" ./bin/host; then
    # A connection closed before any packet changes nothing.
    (exec 3<>"/dev/tcp/127.0.0.1/$port" && exec 3>&-) 2>/dev/null
    out=$("$openpim" run "--gdb=127.0.0.1:$port" -- ./bin/host 2>&1)
    rc=$?
    [ "$rc" -eq 2 ] && ! grep -q "sum\[" <<<"$out" && grep -q "cannot listen" <<<"$out"
    check "an address in use: exit status 2 before the program starts" $? "rc=$rc: $out"
    echo "continue" >"$tmp/probe.gdb"
    gdb_session probe bin/dpu_weighted
    wait_host
    check "after a port probe a debugger still gets the DPU" $? "$(cat "$tmp/probe.err")"
    grep -q "exited normally" "$tmp/probe.gdb.out"
    check "after a port probe the session works" $? "$(cat "$tmp/probe.gdb.out")"
else
    ko "port probe: the DPU stops and waits" "$(cat "$tmp/probe.err")"
    wait_host
fi
out=$("$openpim" run --gdb --server /tmp/openpim-none.sock -- true 2>&1)
rc=$?
[ "$rc" -ne 0 ] && grep -q "cannot be combined" <<<"$out"
check "--gdb with --server is refused" $? "rc=$rc: $out"
next_port
out=$(cd "$prog" && OPENPIM_GDB="127.0.0.1:$port" OPENPIM_GDB_DPU=3.7 timeout 60 ./bin/host 2>&1)
rc=$?
[ "$rc" -eq 0 ] && grep -q "OPENPIM_GDB_DPU=3.7: that DPU never launched" <<<"$out"
check "a named DPU that never launched: the program runs, a message at exit" $? "rc=$rc: $out"
out=$(cd "$prog" && OPENPIM_GDB=1 OPENPIM_GDB_DPU=x ./bin/host 2>&1)
rc=$?
[ "$rc" -ne 0 ] && grep -q "OPENPIM_GDB_DPU=x" <<<"$out"
check "a bad OPENPIM_GDB_DPU fails dpu_alloc with a message naming it" $? "rc=$rc: $out"

# --- 6b. detach and kill resume the DPU ---------------------------------------------------
for how in detach kill; do
    next_port
    printf 'break task.c:%s\ncontinue\n%s\n' "$store_line" "$how" >"$tmp/$how.gdb"
    if start_host "$how" env OPENPIM_REPORT="$tmp/$how.json" OPENPIM_GDB="127.0.0.1:$port" ./bin/host; then
        gdb_session "$how" bin/dpu_weighted
        wait_host
        check "$how: the DPU runs on, the host program exits 0" $? "$(cat "$tmp/$how.out" "$tmp/$how.err" "$tmp/$how.gdb.out")"
        cmp -s "$tmp/ref.out" "$tmp/$how.out"
        check "$how: same results" $? "$(diff "$tmp/ref.out" "$tmp/$how.out")"
        same_timing "$how" "$tmp/$how.json"
    else
        ko "$how: the DPU stops and waits" "$(cat "$tmp/$how.err")"
        wait_host
    fi
done

# A connection dropped while the DPU is stopped (GDB killed) resumes it too.
next_port
if start_host drop env OPENPIM_REPORT="$tmp/drop.json" OPENPIM_GDB="127.0.0.1:$port" ./bin/host; then
    (cd "$prog" && exec gdb-multiarch -batch -nx -ex "target remote 127.0.0.1:$port" \
        -ex "break task.c:$store_line" -ex continue -ex "shell sleep 5" bin/dpu_weighted) >"$tmp/drop.gdb.out" 2>&1 &
    gdb_pid=$!
    for _ in $(seq 1 300); do
        grep -q "hit Breakpoint 1" "$tmp/drop.gdb.out" && break
        sleep 0.1
    done
    kill -KILL "$gdb_pid"
    wait "$gdb_pid" 2>/dev/null
    wait_host
    check "dropped connection: the DPU runs on, the host program exits 0" $? "$(cat "$tmp/drop.err" "$tmp/drop.gdb.out")"
    cmp -s "$tmp/ref.out" "$tmp/drop.out"
    check "dropped connection: same results" $? "$(diff "$tmp/ref.out" "$tmp/drop.out")"
else
    ko "dropped connection: the DPU stops and waits" "$(cat "$tmp/drop.err")"
    wait_host
fi

# --- 7. instruction traces ----------------------------------------------------------------
(cd "$prog" && OPENPIM_DPU_TRACE="$tmp/trace" OPENPIM_REPORT="$tmp/trace.json" ./bin/host) >"$tmp/trace.out" 2>&1
check "trace: the program runs" $? "$(cat "$tmp/trace.out")"
slots=$(awk -F'slots=' '/^cycle=/ { split($2, a, " "); s += a[1] } END { print s + 0 }' "$tmp/trace/trace.0.0.0")
insns=$(json "$tmp/trace.json" "r['launches'][0]['instructions']")
[ "$slots" -eq "$insns" ] && [ "$insns" -gt 0 ]
check "trace: slots in the trace ($slots) == the report's instructions ($insns)" $?
grep -qE "^cycle=[0-9]+ t=[0-3] pc=0x800[0-9a-f]{5} main\+0x[0-9a-f]+ slots=1 \| lui a0, 0x0 ; sw s2, 64\(a0\) \| a0=0x00000000 \| W wram 0x00000040 4$" "$tmp/trace/trace.0.0.0"
check "trace: a fused pair on one line with its registers and memory" $? "$(grep -m3 "sw s2" "$tmp/trace/trace.0.0.0")"
grep -qE "^cycle=[0-9]+ t=[0-3] .* slots=[2-9][0-9]* \| arith routine" "$tmp/trace/trace.0.0.0"
check "trace: an arithmetic routine's further slots on one line with their count" $?
(cd "$prog" && OPENPIM_DPU_TRACE="$tmp/trace1" OPENPIM_DPU_TRACE_TASKLETS=1 OPENPIM_DPU_TRACE_LIMIT=100 ./bin/host) >"$tmp/trace1.out" 2>&1
check "trace: filtered and bounded run is correct" $? "$(cat "$tmp/trace1.out")"
others=$(grep -cE "^cycle=[0-9]+ t=[^1] " "$tmp/trace1/trace.0.0.0")
lines=$(wc -l <"$tmp/trace1/trace.0.0.0")
[ "$others" -eq 0 ] && [ "$lines" -le 101 ] && grep -q "^# trace cut at 100 lines" "$tmp/trace1/trace.0.0.0" &&
    grep -q "stopped at OPENPIM_DPU_TRACE_LIMIT" "$tmp/trace1.out"
check "trace: tasklet filter, line limit, and a clear message when cut" $? "others=$others lines=$lines $(tail -2 "$tmp/trace1/trace.0.0.0"; cat "$tmp/trace1.out")"

# --- 8. core dumps ------------------------------------------------------------------------
if [ -f "$here/core.sh" ]; then
    # shellcheck source=tests/debug/core.sh
    . "$here/core.sh"
fi

finish
