#!/usr/bin/env bash
# MRAM backing stores (docs/memory.md): every store under the conformance suite, dedup,
# persistence, crash safety, bad stores, host memory, and a 4 GiB run under a 512 MiB budget.
#
#   tests/memory/run.sh            everything below (part of `make test`)
#   tests/memory/run.sh NAME...    only some: errors persist crash dedup checkpoint oversubscribe timeline
#                                  budget conformance
#   tests/memory/run.sh huge       MRAM larger than the host's memory (make test-memory-huge)
#
# Prints PASS/FAIL per check and "N passed, M failed"; exits non-zero on a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$root/sdk/bin:$PATH"
export LD_LIBRARY_PATH="$root/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset UPMEM_PROFILE_BASE OPENPIM_REPORT
tmp=$(mktemp -d "${TMPDIR:-/tmp}/openpim-memory.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { echo "PASS $1"; passed=$((passed + 1)); }
bad() {
    echo "FAIL $1"
    [ -f "$tmp/out" ] && sed 's/^/    /' "$tmp/out" | tail -n 20
    failed=$((failed + 1))
}
host() { (cd "$here" && ./bin/host "$@"); }

"$root/scripts/dpu-toolchain.sh" fresh "$here"
make -s -C "$here" >"$tmp/out" 2>&1 || { bad build; exit 1; }

# Runs the host with a profile; output in $tmp/out.
run() {
    local profile=$1
    shift
    # The wall clock in the host's own timings (the virtual timeline's would show modeled time).
    OPENPIM_CLOCK=real UPMEM_PROFILE_BASE="$profile" host "$@" >"$tmp/out" 2>&1
}

t_conformance() {
    local store t
    for store in file cached; do
        local fails=0
        for d in "$root"/tests/conformance/*/; do
            t=$(basename "$d")
            [ -f "$d/Makefile" ] || continue
            # {pid}: a store per process (some tests start copies of themselves).
            local profile="memory=$store:$tmp/conf-$store-$t/{pid}"
            [ "$store" = cached ] && profile="$profile,memoryBudget=1G"
            if ! UPMEM_PROFILE_BASE="$profile" "$root"/tests/conformance/run.sh "$t" >"$tmp/out" 2>&1; then
                echo "    $store: $(grep -m1 FAIL "$tmp/out")"
                fails=$((fails + 1))
            fi
            rm -rf "$tmp/conf-$store-$t"
        done
        if [ "$fails" = 0 ]; then ok "conformance suite with memory=$store"; else bad "conformance suite with memory=$store ($fails tests)"; fi
    done
}

t_dedup() {
    # 8 MiB broadcast to 2,560 DPUs: about 8 MiB of host memory (PSS: shared pages counted
    # once), every DPU reads back the right bytes, copy-on-write keeps DPUs apart.
    if run "" bcast 2560 8 && grep -q '^OK' "$tmp/out"; then
        local b r
        b=$(sed -n 's/.*bcast_pss_kib=\([-0-9]*\).*/\1/p' "$tmp/out")
        r=$(sed -n 's/.*read_pss_kib=\([-0-9]*\).*/\1/p' "$tmp/out")
        if [ "$b" -le $((2 * 8192)) ] && [ "$r" -le $((2 * 8192)) ]; then
            ok "dedup: $(head -n1 "$tmp/out" | grep broadcast)"
        else
            bad "dedup: broadcast memory above 2x the buffer (PSS +$b KiB, +$r KiB after reading back)"
        fi
    else
        bad "dedup: broadcast to 2560 DPUs"
    fi
}

t_persist() {
    local store
    for store in "file:$tmp/p-file" "cached:$tmp/p-cached,memoryBudget=128M"; do
        local p="memory=$store"
        if run "$p" fill 11 8 24 && run "$p" verify 11 8 24; then
            # The check can fail: other contents must be seen as different.
            if run "$p" verify 12 8 24; then
                bad "persistence ($store): a wrong pattern verified"
            else
                ok "persistence: written, process exited, reopened and verified ($p)"
            fi
        else
            bad "persistence ($store)"
        fi
    done
}

t_crash() {
    # persist=transfer + kill -9 at random points: every completed call's bytes are there.
    local i
    for i in 1 2 3; do
        local dir="$tmp/crash$i" p
        p="memory=file:$dir,persist=transfer"
        (cd "$here" && UPMEM_PROFILE_BASE="$p" exec ./bin/host crash 16 >"$tmp/crash.out" 2>&1) &
        local pid=$!
        sleep "$(python3 -c 'import random; print(round(random.uniform(0.8, 2.5), 2))')"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        local last
        last=$(grep -E '^[0-9]+$' "$tmp/crash.out" | tail -n 1)
        if [ -z "$last" ]; then
            echo "no completed write before the kill" >"$tmp/out"
            bad "crash $i"
            continue
        fi
        if run "$p" crashcheck 16 "$last"; then
            ok "crash $i: killed after $((last + 1)) completed writes, all there"
        else
            bad "crash $i"
        fi
    done
}

expect_error() { # name, pattern, profile, host args...
    local name=$1 pattern=$2 profile=$3
    shift 3
    if run "$profile" "$@"; then
        bad "$name: succeeded"
    elif grep -q -- "$pattern" "$tmp/out" && ! grep -qiE 'panick|segmentation|core dumped|Killed' "$tmp/out"; then
        ok "$name: $(grep -m1 -o -- "$pattern.*" "$tmp/out" | cut -c1-150)"
    else
        bad "$name (expected '$pattern')"
    fi
}

t_errors() {
    local dir="$tmp/e" p
    p="memory=file:$dir"
    run "$p" fill 1 4 1 >/dev/null
    # Another geometry.
    expect_error "geometry" "was created for ranks of 64 DPUs" "$p,nrDpusPerRank=32" fill 1 4 1
    # Locked by a running process.
    (cd "$here" && UPMEM_PROFILE_BASE="$p" exec ./bin/host crash 4 >/dev/null 2>&1) &
    local pid=$!
    sleep 0.5
    expect_error "lock" "is in use by another process (pid $pid)" "$p" fill 1 4 1
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    # Damaged header and truncated rank file.
    cp "$dir/store.openpim" "$tmp/header"
    sed -i 's/dpus_per_rank=64/dpus_per_rank=65/' "$dir/store.openpim"
    expect_error "corrupt header" "store.openpim is damaged: checksum" "$p" fill 1 4 1
    cp "$tmp/header" "$dir/store.openpim"
    truncate -s 1G "$dir/rank-0000.mram"
    expect_error "truncated rank file" "rank-0000.mram is damaged" "$p" fill 1 4 1
    # Bad keys.
    expect_error "budget without cached" "memoryBudget is only for memory=cached" "memoryBudget=1G" fill 1 1 1
    expect_error "cached without budget" "memory=cached:DIR needs memoryBudget" "memory=cached:$tmp/c" fill 1 1 1
    expect_error "persist with anon" "persist= needs a file-backed store" "persist=end" fill 1 1 1
    # Anonymous MRAM beyond what the host can give: an SDK error, not the OOM killer.
    OPENPIM_HOST_MEMORY=600M expect_error "host out of memory" "the host is out of memory for MRAM" "" fill 1 64 16
}

t_checkpoint() {
    # A multi-launch program (with a faulting launch) checkpointed mid-way to a file, resumed
    # in another process on other rank numbers: every later step gives the same results and
    # cycle counts as the uninterrupted run. The same through the SDK's dpu_checkpoint_* API.
    local f="$tmp/ckpt.openpim"
    run "" ckpt 9 8 6 3 "$f" run && cp "$tmp/out" "$tmp/run.txt" || { bad "checkpoint: uninterrupted run"; return; }
    run "" ckpt 9 8 6 3 "$f" save && cp "$tmp/out" "$tmp/save.txt" || { bad "checkpoint: save"; return; }
    run "" ckpt 9 8 6 3 "$f" resume && cp "$tmp/out" "$tmp/resume.txt" || { bad "checkpoint: resume"; return; }
    grep '^step' "$tmp/run.txt" >"$tmp/a"
    cat "$tmp/save.txt" "$tmp/resume.txt" | grep '^step' >"$tmp/b"
    if [ "$(wc -l <"$tmp/a")" = 48 ] && cmp -s "$tmp/a" "$tmp/b"; then
        ok "checkpoint: saved after launch 3 (and a faulting launch), resumed in another process on another rank: 48 step results and cycle counts identical"
    else
        diff "$tmp/a" "$tmp/b" >"$tmp/out"
        bad "checkpoint: resumed run differs from the uninterrupted one"
    fi
    if run "" ckpt 9 8 6 3 "$f" sdk && grep '^step' "$tmp/out" | cmp -s - "$tmp/a"; then
        ok "checkpoint (SDK API): dpu_checkpoint_save/serialize/deserialize/restore per DPU, then identical steps ($(grep -m1 '^serialized' "$tmp/out"))"
    else
        bad "checkpoint (SDK API)"
    fi
    if "$root/target/release/openpim" checkpoint inspect "$f" >"$tmp/out" 2>&1 && grep -q 'checksums OK' "$tmp/out"; then
        ok "checkpoint inspect: $(sed -n 3,4p "$tmp/out" | tr '\n' ' ')"
    else
        bad "checkpoint inspect"
    fi
    # Damaged and truncated files are refused, naming the file, before any DPU changes.
    cp "$f" "$tmp/bad.openpim"
    printf '\x55' | dd of="$tmp/bad.openpim" bs=1 seek=$(( $(stat -c %s "$f") / 2 )) conv=notrunc 2>/dev/null
    expect_error "checkpoint damaged" "bad.openpim is damaged or not a checkpoint" "" ckpt 9 8 6 3 "$tmp/bad.openpim" resume
    head -c $(( $(stat -c %s "$f") - 100 )) "$f" >"$tmp/short.openpim"
    expect_error "checkpoint truncated" "short.openpim is damaged or not a checkpoint: truncated" "" ckpt 9 8 6 3 "$tmp/short.openpim" resume
}

t_timeline() {
    # The store changes wall time, never modeled time: the same run under anon and under a
    # tight cached budget (evictions, flushes) has the same bus times and launch cycles.
    local a="$tmp/anon.json" c="$tmp/cached.json"
    OPENPIM_REPORT="$a" run "" fill 4 16 8 || { bad "timeline: anon run"; return; }
    OPENPIM_REPORT="$c" run "memory=cached:$tmp/tl,memoryBudget=64M,persist=transfer" fill 4 16 8 || {
        bad "timeline: cached run"
        return
    }
    if python3 - "$a" "$c" >"$tmp/out" 2>&1 <<'PY'
import json, sys
a, c = (json.load(open(p)) for p in sys.argv[1:])
model = lambda r: (r["transfers"]["bus_to_dpu_ns"], r["transfers"]["bus_from_dpu_ns"],
                   [(l["cycles"], l["instructions"], l["dma_bytes"]) for l in r["launches"]])
assert model(a) == model(c), (model(a), model(c))
m = c["memory"]
assert m["store"].startswith("cached:") and m["flushes"] > 0 and m["evictions"] > 0, m
print(f"{m['flushes']} flushes ({m['flush_ns'] / 1e6:.0f} ms wall), {m['evictions']} evictions: same bus time and launch cycles as anon")
PY
    then
        ok "timeline: $(cat "$tmp/out")"
    else
        bad "timeline: the store changed modeled time"
    fi
}

t_budget() {
    # 4 GiB of MRAM (64 DPUs x 64 MiB) under a 512 MiB budget: resident MRAM within the
    # budget, peak RSS of the process within the budget + 10 % + its own buffers.
    local p="memory=cached:$tmp/big,memoryBudget=512M"
    if OPENPIM_REPORT="$tmp/report.json" run "$p" big 3 64 64; then
        local peak rss
        peak=$(python3 -c "import json; print(json.load(open('$tmp/report.json'))['memory']['peak_resident_bytes'] >> 20)")
        rss=$(sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p' "$tmp/out")
        # Host-side: the test's own transfer buffers (32 MiB) and the process (~30 MiB).
        if [ "$peak" -le 512 ] && [ "$rss" -le $((512 * 110 / 100 + 64)) ]; then
            ok "budget: 4 GiB under 512 MiB: resident MRAM peak $peak MiB, process peak RSS $rss MiB ($(head -n1 "$tmp/out" | cut -d: -f2 | cut -d, -f1-2))"
        else
            bad "budget: resident MRAM peak $peak MiB, process peak RSS $rss MiB over 512 MiB (+10 %)"
        fi
    else
        bad "budget: 4 GiB under 512 MiB"
    fi
    rm -rf "$tmp/big"
}

t_oversubscribe() {
    # The daemon oversubscribing one rank (docs/sharing.md): two tenants run the same
    # multi-launch program (a faulting launch after step 3, a pause after every step) on a
    # daemon with a single rank. Each is suspended while idle so that the other can run, and
    # resumed when it calls again; both must print exactly what they print alone in process
    # (per-DPU results and cycle counts of every step, the fault), and the second must get
    # the rank within the policy's bound.
    local openpim="$root/target/release/openpim" d="$tmp/over" a b
    mkdir -p "$d"
    for seed in 21 22; do
        OPENPIM_REPORT="$d/ref-$seed.json" run "" ckpt "$seed" 8 6 3 - run &&
            grep -E '^(step|fault)' "$tmp/out" >"$d/ref-$seed" || { bad "oversubscription: reference run"; return; }
    done
    printf 'suspend_idle_ms = 200\nsuspend_min_run_ms = 500\nalloc_timeout_s = 60\n' >"$d/daemon.toml"
    "$openpim" daemon --socket "$d/s" --ranks 1 --config "$d/daemon.toml" --suspend-dir "$d/suspended" \
        --metrics "$d/metrics.prom" >"$d/daemon.log" 2>&1 &
    local daemon=$!
    for _ in $(seq 100); do [ -S "$d/s" ] && break; sleep 0.1; done
    (cd "$here" && OPENPIM_REPORT="$d/21.json" OPENPIM_SERVER="$d/s" STEP_PAUSE_MS=1200 ./bin/host ckpt 21 8 6 3 - run >"$d/a.out" 2>&1) &
    a=$!
    for _ in $(seq 300); do grep -q '^step 1' "$d/a.out" && break; sleep 0.05; done
    local t0 susp=0 waited=-1
    t0=$(date +%s%N)
    (cd "$here" && OPENPIM_REPORT="$d/22.json" OPENPIM_SERVER="$d/s" STEP_PAUSE_MS=1200 ./bin/host ckpt 22 8 6 3 - run >"$d/b.out" 2>&1) &
    b=$!
    # The pool view while both run: the suspended tenant's rank shows as SUSP.
    while kill -0 "$b" 2>/dev/null || kill -0 "$a" 2>/dev/null; do
        [ "$waited" -lt 0 ] && grep -qs '^step 1' "$d/b.out" && waited=$((($(date +%s%N) - t0) / 1000000))
        "$openpim" pool --socket "$d/s" 2>/dev/null | grep -q ' SUSP ' && susp=1
        sleep 0.1
    done
    wait "$a"
    local ra=$?
    wait "$b"
    local rb=$?
    sleep 1.2 # a metrics rewrite
    kill "$daemon"
    wait "$daemon" 2>/dev/null
    local suspends resumes
    suspends=$(sed -n 's/^openpim_suspend_seconds_count \([0-9]*\).*/\1/p' "$d/metrics.prom")
    resumes=$(sed -n 's/^openpim_resume_seconds_count \([0-9]*\).*/\1/p' "$d/metrics.prom")
    cp "$d/daemon.log" "$tmp/out"
    # Virtual time: every launch of each tenant's report takes the modeled time (and cycles,
    # instructions, DMA) of the same launch alone in process. (Host time is measured for real,
    # the pauses included, and the remote path adds its own measured CPU time.)
    local modeled
    modeled=$(python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
def launches(path):
    return [(l["end_ns"] - l["start_ns"], l["cycles"], l["instructions"], l["dma_bytes"], l["faults"])
            for l in json.load(open(path))["launches"]]
total = 0
for seed in ("21", "22"):
    ref, got = launches(f"{d}/ref-{seed}.json"), launches(f"{d}/{seed}.json")
    if ref != got:
        print("differ:", seed, ref, got)
        sys.exit(1)
    total += sum(l[0] for l in ref)
print("%d launches, %.1f ms of modeled launch time" % (len(ref) * 2, total / 1e6))
PY
    ) || { echo "$modeled" >>"$tmp/out"; modeled=""; }
    if [ "$ra" = 0 ] && [ "$rb" = 0 ] && [ -n "$modeled" ] &&
        grep -E '^(step|fault)' "$d/a.out" | cmp -s - "$d/ref-21" &&
        grep -E '^(step|fault)' "$d/b.out" | cmp -s - "$d/ref-22"; then
        ok "oversubscription: two tenants on one rank, each suspended and resumed between launches (${suspends:-?} suspensions, ${resumes:-?} resumptions): both print the in-process results and cycle counts of all 6 steps (2 x $(wc -l <"$d/ref-21") lines) and the fault; the same virtual time for every launch ($modeled)"
    else
        { diff "$d/ref-21" <(grep -E '^(step|fault)' "$d/a.out"); diff "$d/ref-22" <(grep -E '^(step|fault)' "$d/b.out"); tail -n 5 "$d/a.out" "$d/b.out"; } >>"$tmp/out" 2>&1
        bad "oversubscription: tenants' results differ from the in-process runs (exit $ra, $rb)"
    fi
    # The bound: the second tenant waits for the first to be idle 200 ms after running
    # 500 ms, plus the suspension; a loaded machine gets generous slack.
    if [ "$waited" -ge 0 ] && [ "$waited" -lt 10000 ] && [ "${suspends:-0}" -ge 2 ] && [ "${resumes:-0}" -ge 1 ]; then
        ok "oversubscription: the waiting tenant ran its first step $waited ms after asking for the only rank (policy: idle 200 ms, minimum run 500 ms)"
    else
        bad "oversubscription: waiting tenant's first step after $waited ms, ${suspends:-?} suspensions, ${resumes:-?} resumptions"
    fi
    if [ "$susp" = 1 ] && grep -q '^openpim_ranks{state="SUSP"}' "$d/metrics.prom" && [ -z "$(ls -A "$d/suspended")" ]; then
        ok "oversubscription: the pool view showed the suspended rank (SUSP), metrics count it, no suspension file is left"
    else
        ls -la "$d/suspended" >>"$tmp/out" 2>&1
        bad "oversubscription: pool view SUSP seen=$susp, metrics, files left"
    fi
}

t_huge() {
    # MRAM data larger than the host's memory: 40 ranks x 64 DPUs x 13 MiB = 32.5 GiB
    # written and checked under a 2 GiB budget, when the disk has room.
    local mem_kib disk_kib need_kib=$((40 * 64 * 13 * 1024 + 4 * 1024 * 1024))
    mem_kib=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
    disk_kib=$(df -Pk "$tmp" | awk 'NR == 2 {print $4}')
    if [ "$disk_kib" -lt "$need_kib" ]; then
        echo "SKIP huge: the disk under $tmp has $((disk_kib >> 20)) GiB free, needs $((need_kib >> 20)) GiB"
        return
    fi
    local p="memory=cached:$tmp/huge,memoryBudget=2G"
    if OPENPIM_REPORT="$tmp/report.json" run "$p" big 5 2560 13; then
        ok "huge: 32.5 GiB of MRAM on a host with $((mem_kib >> 20)) GiB: $(head -n1 "$tmp/out")"
    else
        bad "huge"
    fi
    rm -rf "$tmp/huge"
}

tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(errors persist crash dedup checkpoint oversubscribe timeline budget conformance)
for t in "${tests[@]}"; do
    start=$(date +%s)
    "t_$t"
    echo "    ($t: $(($(date +%s) - start)) s)"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
