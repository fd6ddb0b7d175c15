#!/usr/bin/env python3
"""The MPI backend end to end (docs/scale-out.md): programs on `openpim run --mpi N` against
the same programs in process.

    tests/mpi/run.py           the `make test` cases (about a minute on 2 busy cores)
    tests/mpi/run.py --all     also PrIM's 16 at 256 DPUs on 1, 2 and 4 workers, PID-Comm's
                               collectives on 4 workers and the study's NTT at 2,048 DPUs on 4
                               workers (`make test-mpi`)
    tests/mpi/run.py --ntt     only the NTT case
    tests/mpi/run.py --trns 10 only PrIM TRNS at 64 DPUs on 4 workers (batches in flight),
                               10 times (5 without a number) against the local run
    tests/mpi/run.py --prim GEMV,SEL   only the PrIM matrix, for these benchmarks

Cases: PrIM VA (copied from ../shared/third_party, built by its own Makefile) and PID-Comm's
AllReduce and AlltoAll (relocation programs forced) at 256 DPUs on 2 workers (4 with --all),
each judged by its own check and compared with the local run (for the collectives and the NTT
also: their host steps ran in the workers — small `collective` requests, no more bytes through
the gateway than the program's own transfers and loads, the lines between the workers): phases.dpu_kernel_ns, cpu_dpu_ns, dpu_cpu_ns, inter_dpu_ns, every launch's cycles,
instructions and DMA fields, the transfers' counts, bytes and modeled bus times must be equal,
and the report's workers[] must list 2 workers of 2 rank slots; PrIM TRNS at 64 DPUs on 4
workers, twice, its 16 MiB write batches sent without waiting (the same comparison: neither
the MPI path's wall time nor an outlier of the interleaving's measurement may reach the
timing fields); VA with its reads written in place by the gateway (mpi_traffic's
bytes_in_place) and with OPENPIM_MPI_INPLACE=off (none); small reads read ahead
(tests/mpi/reads.c: values checked, fewer read messages than read calls); VA again with
OpenMPI's TCP transport forced (OMPI_MCA_btl=tcp,self); a DPU fault on a worker (same SDK code, same fault
line as in process); a worker killed with -9 (the program's next call fails with
DPU_ERR_SYSTEM naming the worker, within the bound, and no process is left); the refusals
(more workers than ranks, --mpi with --server). Prints PASS/FAIL lines and "N passed, M failed".
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "programs"))
import run as programs  # noqa: E402  (tests/programs/run.py: PrIM's table and the SDK env)

OPENPIM = ROOT / "target" / "release" / "openpim"
PHASES = ["dpu_kernel_ns", "cpu_dpu_ns", "dpu_cpu_ns", "inter_dpu_ns"]
TIMEOUT = 600
# The report's MPI traffic kind of the lines workers send each other for collectives.
BETWEEN_WORKERS = "collective: between workers"

passed = 0
failed = 0


def result(ok: bool, name: str, why: str = "", detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {name}", flush=True)
    else:
        failed += 1
        print(f"FAIL {name}: {why}", flush=True)
        if detail:
            print("\n".join(detail.splitlines()[-30:]), file=sys.stderr)


def env() -> dict[str, str]:
    e = programs.sdk_env()
    for k in ("OPENPIM_SERVER", "OPENPIM_MPI", "OPENPIM_REPORT", "OPENPIM_TRACE"):
        e.pop(k, None)
    return e


def run(cmd: list[str], cwd: Path, extra: dict[str, str] | None = None, timeout: int = TIMEOUT):
    e = env()
    e.update(extra or {})
    return subprocess.run(cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, errors="replace", timeout=timeout)


def timing(report: dict) -> dict:
    """The fields of a report that must not depend on the backend."""
    launches = []
    for l in report["launches"]:
        # (Ranks finish in any order, in process too.)
        per_rank = sorted(({k: r.get(k) for k in ("rank", "dpus", "cycles", "instructions",
                                                  "faults")} for r in l.get("per_rank", [])),
                          key=lambda r: r["rank"])
        launches.append({"fields": {k: l.get(k) for k in l if k not in (
            "issue_ns", "start_ns", "end_ns", "per_rank")}, "per_rank": per_rank})
    transfers = {k: v for k, v in report["transfers"].items() if k != "host_interleave_ns"}
    # An inter-DPU region the program marks counts its host code as measured (real host
    # time: two local runs differ there too); its bytes and the collectives' times do not.
    exchanges = report.get("inter_dpu", [])
    measured = any(x.get("path") == "host" for x in exchanges)
    phases = {k: report["phases"][k] for k in PHASES if not (measured and k == "inter_dpu_ns")}
    return {"phases": phases, "launches": launches, "transfers": transfers,
            "inter_dpu": [(x.get("primitive"), x.get("bytes"), x.get("path"),
                           None if x.get("path") == "host" else x["end_ns"] - x["start_ns"])
                          for x in exchanges]}


def measured_bound(mean: float, spread: float) -> float:
    """How far a phase that holds measured host time may be from the mean of two local runs
    on the workers: 10 % of it, four times the two local runs' difference, or 50 us, the
    largest (the program's host code competes with the workers for the cores)."""
    return max(0.1 * mean, 4 * spread, 50_000)


def first_difference(a, b, path="") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return first_difference(a.get(k), b.get(k), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: local {a!r}, MPI {b!r}"


def compare(name: str, cwd: Path, cmd: list[str], ranks: int, workers: int, ok_text: str,
            extra: dict[str, str] | None = None, label: str = "",
            kinds: tuple[str, ...] = (), collective_bytes: int | None = None,
            mpi_args: tuple[str, ...] = (), measured: bool = False,
            parts: list[list[tuple[int, int, int]]] | str | None = None,
            in_place: bool | None = None) -> dict | None:
    """Runs `cmd` in process and on `workers` MPI workers (`openpim run` given `mpi_args`
    too); checks both outputs and reports (and that the MPI run's traffic has messages of each
    of `kinds`; with `collective_bytes`, that its collectives ran in the workers: small
    requests over the gateway, no more bytes through it than the program's own transfers and
    loads, at least that many bytes between workers). With `measured`, for a program whose
    phases hold measured host time (asynchronous calls overlapping its host code: two local
    runs differ there too), it runs in process twice: a phase the two local runs disagree on
    must be within `measured_bound` of their mean on the workers, every other field equal.
    `parts`: the parts of split ranks each worker must list in workers[].rank_parts, as (slot,
    first DPU, DPUs) (none by default: every allocation of these cases spans the workers;
    "any": whatever the program's allocations split, each part listed once). `in_place`: whether
    the gateway must have written read data into the program's buffers itself (mpi_traffic's
    bytes_in_place), or must not have (None: either).
    Returns the MPI run's report when the case passed."""
    label = label or f"{name} at {ranks * 64} DPUs on {workers} workers"
    reports = []
    for mpi in ((None, None, workers) if measured else (None, workers)):
        rep = cwd / f"report-{mpi or 'local'}.json"
        args = [str(OPENPIM), "run", "--ranks", str(ranks), f"--report={rep}"]
        if mpi:
            args += ["--mpi", str(mpi), *mpi_args]
        start = time.monotonic()
        try:
            r = run(args + ["--", *cmd], cwd, extra)
        except subprocess.TimeoutExpired:
            return result(False, label, f"timed out ({'MPI' if mpi else 'local'})")
        wall = time.monotonic() - start
        out = r.stdout + r.stderr
        if r.returncode != 0 or ok_text not in r.stdout:
            return result(False, label, f"{'MPI' if mpi else 'local'} run: exit {r.returncode}, "
                          f"no '{ok_text}'", out)
        reports.append((json.loads(rep.read_text()), wall))
    (local, t_local), (dist, t_mpi) = reports[0], reports[-1]
    measured_note, varying = "", []
    if measured:
        again = reports[1][0]
        varying = [k for k in PHASES if local["phases"][k] != again["phases"][k]]
        for k in varying:
            mean = (local["phases"][k] + again["phases"][k]) / 2
            bound = measured_bound(mean, abs(local["phases"][k] - again["phases"][k]))
            if abs(dist["phases"][k] - mean) > bound:
                return result(False, label, f"phases.{k} (measured host time in it: the local "
                              f"runs gave {local['phases'][k]} and {again['phases'][k]}) is "
                              f"{dist['phases'][k]} on the workers, more than {bound:.0f} ns "
                              "from their mean")
        if varying:
            measured_note = f"; measured phases {', '.join(varying)} within their bound"
    try:
        import jsonschema  # noqa: PLC0415 (optional: the structure is checked without it too)

        schema = json.loads((ROOT / "docs" / "report.schema.json").read_text())
        jsonschema.validate(dist, schema)
    except ImportError:
        pass
    except Exception as e:  # noqa: BLE001 - any schema violation fails the case
        return result(False, label, f"the MPI report does not follow the schema: {e}")
    if not dist.get("mpi_traffic") or not any(t["kind"] == "open" for t in dist["mpi_traffic"]):
        return result(False, label, "the MPI report has no mpi_traffic")
    sent = {t["kind"] for t in dist["mpi_traffic"]}
    if missing := [k for k in kinds if k not in sent]:
        return result(False, label, f"no {missing} messages in mpi_traffic: {sorted(sent)}")
    if "workers" in local:
        return result(False, label, "the local report has workers[]")
    want = [[s for s in range(ranks) if s % workers == w] for w in range(workers)]
    got = [w["rank_slots"] for w in dist.get("workers", [])]
    if got != want or [w["mpi_rank"] for w in dist["workers"]] != list(range(1, workers + 1)):
        return result(False, label, f"workers[] holds {got}, expected {want}")
    held = [[(p["slot"], p["first_dpu"], p["dpus"]) for p in w.get("rank_parts", [])]
            for w in dist["workers"]]
    if parts == "any":
        if any(len(set(h)) != len(h) for h in held):
            return result(False, label, f"workers[] lists a part twice: {held}")
    elif held != (parts or [[] for _ in range(workers)]):
        return result(False, label, f"workers[] holds the parts {held}, expected {parts}")
    a, b = timing(local), timing(dist)
    for k in varying:
        # (Compared within its bound above.)
        a["phases"].pop(k)
        b["phases"].pop(k)
    if a != b:
        return result(False, label, "timing differs: " + first_difference(a, b))
    traffic = {t["kind"]: t for t in dist["mpi_traffic"]}
    placed = sum(t.get("bytes_in_place", 0) for t in dist["mpi_traffic"])
    if in_place is not None and (placed > 0) != in_place:
        return result(False, label, f"{placed} bytes of reads written in place by the gateway, "
                      f"expected {'some' if in_place else 'none'}")
    gateway = sum(t["bytes_to_workers"] + t["bytes_from_workers"]
                  for k, t in traffic.items() if k != BETWEEN_WORKERS)
    between = traffic.get(BETWEEN_WORKERS, {}).get("bytes_to_workers", 0)
    if collective_bytes is not None:
        # The collectives' host step runs in the workers: one small request per worker and
        # collective crosses the gateway, and the lines go worker to worker.
        c = traffic.get("collective")
        if not c:
            return result(False, label, f"no collective requests in mpi_traffic: {sorted(traffic)}")
        per = (c["bytes_to_workers"] + c["bytes_from_workers"]) / c["messages"]
        if per > 4096:
            return result(False, label, f"{per:.0f} bytes over the gateway per collective request")
        if workers > 1 and between < collective_bytes:
            return result(False, label, f"{between} bytes between workers, expected at least "
                          f"{collective_bytes}")
        moved = dist["transfers"]
        limit = moved.get("bytes_to_dpus", 0) + moved.get("bytes_from_dpus", 0)
        loads = sum(t["bytes_to_workers"] + t["bytes_from_workers"]
                    for k, t in traffic.items() if k.startswith("load"))
        if gateway > limit + loads + (1 << 20):
            return result(False, label, f"{gateway} bytes crossed the gateway, more than the "
                          f"program's transfers ({limit}), its loads ({loads}) and 1 MiB: the "
                          f"collectives' data went through it")
    split = f", parts {held}" if parts and parts != "any" else (
        f", {sum(map(len, held))} parts of split ranks" if any(held) else "")
    placed_note = f", {placed / 2**20:.1f} MiB of reads in place" if placed else ""
    result(True, f"{label}: equal timing fields{measured_note}, workers {got}{split} "
           f"(wall {t_local:.1f} s local, {t_mpi:.1f} s MPI; gateway {gateway / 2**20:.1f} MiB"
           f"{placed_note}, between workers {between / 2**20:.1f} MiB)")
    return dist


def build_prim(work: Path, bench: str, dpus: int = 256) -> Path:
    """A copy of PrIM `bench` built by its own Makefile for `dpus` DPUs."""
    make_vars, _ = programs.PRIM_64[bench]
    dest = work / f"{bench}-{dpus}"
    shutil.copytree(programs.THIRD_PARTY / "prim-benchmarks" / bench, dest, symlinks=True)
    r = run(["make", "-j2", f"NR_DPUS={dpus}", "NR_TASKLETS=16", *make_vars.split()], dest)
    if r.returncode != 0:
        raise RuntimeError(f"building PrIM {bench} failed:\n{r.stdout}{r.stderr}")
    return dest


def descendants(pid: int) -> list[int]:
    """Processes under `pid` (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def mpi_rank_of(pid: int) -> int | None:
    try:
        for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                return int(item.split(b"=", 1)[1])
    except (OSError, ValueError):
        return None
    return None


def kill_case(work: Path, sig: int = signal.SIGKILL, collectives: bool = False,
              mpi_args: tuple[str, ...] = (), extra: dict[str, str] | None = None,
              where: str = "", scope=descendants) -> None:
    """A worker killed (or stopped) while the program runs (`openpim run` given `mpi_args`
    too, `extra` in the environment; `where` is said in the case's name). `scope(pid)`: the
    job's processes, given `openpim run`'s (on other machines, mpirun's daemons are not its
    descendants)."""
    label = ("a worker killed with -9: the next call fails with DPU_ERR_SYSTEM naming it"
             if sig == signal.SIGKILL else
             "a worker stopped (SIGSTOP): DPU_ERR_SYSTEM naming it after OPENPIM_MPI_TIMEOUT")
    bound = 10 if sig == signal.SIGKILL else 3
    e = env()
    e.update(extra or {})
    e["OPENPIM_MPI_TIMEOUT"] = str(bound)
    if collectives:
        # A loop of collectives across the ranks: the other worker may be waiting for the
        # dead one's lines, and gives up within the bound.
        label = "a worker killed with -9 during collectives: DPU_ERR_SYSTEM naming it"
        cmd, ranks, cwd = ["./bin/collloop"], "4", HERE
    else:
        tenant = ROOT / "tests" / "remote" / "bin" / "tenant"
        cmd, ranks, cwd = [str(tenant), "loop"], "2", tenant.parent.parent
    label += where
    p = subprocess.Popen([str(OPENPIM), "run", "--mpi", "2", *mpi_args, "--ranks", ranks, "--",
                          *cmd], cwd=cwd, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, errors="replace")
    victim = None
    end = time.monotonic() + 30
    while victim is None and time.monotonic() < end:
        time.sleep(0.2)
        for c in scope(p.pid):
            if mpi_rank_of(c) == 1:
                victim = c
    if victim is None:
        p.kill()
        out, err = p.communicate()
        return result(False, label, "no worker of MPI rank 1 found", out + err)
    time.sleep(1.0)  # the program is in its loop
    under = scope(p.pid)
    try:
        os.kill(victim, sig)
    except ProcessLookupError:
        p.kill()
        out, err = p.communicate()
        return result(False, label, f"the worker {victim} ended before the kill", out + err)
    killed_at = time.monotonic()
    try:
        out, err = p.communicate(timeout=bound + 30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return result(False, label, "openpim run did not end (a hang)", out + err)
    took = time.monotonic() - killed_at
    time.sleep(0.5)
    left = [q for q in under if Path(f"/proc/{q}").exists()
            and "Z" not in Path(f"/proc/{q}/stat").read_text().rsplit(")", 1)[1].split()[0]]
    if p.returncode == 0:
        return result(False, label, "the program succeeded after its worker died", out + err)
    if "MPI worker 1" not in err or "DPU_ERR_SYSTEM" not in err and "system" not in err.lower():
        return result(False, label, "no error naming MPI worker 1", out + err)
    if sig != signal.SIGKILL and "stopped answering" not in err:
        return result(False, label, "no 'stopped answering' in the error", out + err)
    # (During collectives the gateway tells the other worker at once: no wait for the bound.)
    if took > (bound if collectives else bound + 15):
        return result(False, label, f"the program ended {took:.1f} s after the kill")
    if left:
        return result(False, label, f"processes left behind: {left}")
    line = next((l for l in err.splitlines() if "MPI worker 1" in l), "")
    result(True, f"{label} ({took:.1f} s; '{line.strip()[:110]}')")


def fault_case(work: Path, workers: int = 2) -> None:
    """DPUs 36 and 37 of rank 1 fault (tests/mpi/fault.c): on 2 workers each rank is whole on
    one; on 4 each of the 2 ranks is split in two and the faults are in a second part, which
    must name them as the whole rank does."""
    label = (f"a DPU fault on a worker ({'a part of a split rank' if workers > 2 else 'whole ranks'}, "
             f"{workers} workers): same SDK code and fault line as in process")
    outs = []
    for mpi in ([], ["--mpi", str(workers)]):
        r = run([str(OPENPIM), "run", "--ranks", str(max(2, workers)), *mpi, "--", "./bin/fault"],
                work)
        outs.append((r.returncode, r.stdout, [l for l in r.stderr.splitlines()
                                              if l.startswith("openpim:")]))
    if outs[0] != outs[1]:
        return result(False, label, f"local {outs[0]!r}, MPI {outs[1]!r}")
    if outs[0][0] != 0 or "DPU is in fault" not in outs[0][1] or not any(
            "DPU 36 of rank 1 faulted" in l and "1 more" in l for l in outs[0][2]):
        return result(False, label, f"unexpected outcome {outs[0]!r}")
    result(True, label)


def logs_case(work: Path) -> None:
    """One rank split in four parts on 4 workers: the logs of DPUs 5, 40 and 63 and a read of
    DPU 40 come from their parts' workers, as in process (tests/mpi/logs.c; DPU 40's log is
    over 64 KiB: a large reply that is not a read's)."""
    label = "DPU logs and a read in a split rank's parts (64 DPUs on 4 workers): as in process"
    outs = []
    for mpi in ([], ["--mpi", "4"]):
        r = run([str(OPENPIM), "run", "--ranks", "4", *mpi, "--", "./bin/logs"], work)
        outs.append((r.returncode, r.stdout))
    want = "hello from DPU 5\n"
    if outs[0] != outs[1]:
        return result(False, label, f"local {outs[0]!r}, MPI {outs[1]!r}")
    if outs[0][0] != 0 or want not in outs[0][1] or "hello from DPU 40" not in outs[0][1] \
            or "line 1999 of a log" not in outs[0][1] or "read back 40" not in outs[0][1]:
        return result(False, label, f"unexpected outcome {outs[0]!r}")
    result(True, label)


def refusal_cases(work: Path) -> None:
    r = run([str(OPENPIM), "run", "--mpi", "5", "--ranks", "4", "--", "true"], work)
    ok = r.returncode == 2 and "--mpi 5" in r.stderr and "(4)" in r.stderr
    result(ok, "more workers than ranks refused (exit 2, naming 5 and 4)",
           f"exit {r.returncode}", r.stderr)
    r = run([str(OPENPIM), "run", "--mpi", "2", "--server", "/tmp/none.sock", "--", "true"], work)
    ok = r.returncode == 2 and "--mpi" in r.stderr and "--server" in r.stderr
    result(ok, "--mpi with --server refused (exit 2, naming both)", f"exit {r.returncode}",
           r.stderr)
    r = run([str(OPENPIM), "run", "--mpi", "2", "--", "true"], work,
            {"OPENPIM_SERVER": "/tmp/none.sock"})
    ok = r.returncode == 2 and "OPENPIM_SERVER" in r.stderr
    result(ok, "--mpi with OPENPIM_SERVER refused (exit 2, naming both)", f"exit {r.returncode}",
           r.stderr)
    hosts = Path(tempfile.mkdtemp()) / "hosts"
    hosts.write_text("# another machine first\nno-such-node.invalid slots=1\n")
    r = run([str(OPENPIM), "run", "--mpi", "1", "--hostfile", str(hosts), "--", "true"], work)
    ok = r.returncode == 2 and "no-such-node.invalid" in r.stderr and "first" in r.stderr
    result(ok, "a hostfile that does not start with this machine refused (exit 2)",
           f"exit {r.returncode}", r.stderr)
    shutil.rmtree(hosts.parent, ignore_errors=True)
    r = run([str(OPENPIM), "info", "--ranks", "4", "--mpi", "2"], work)
    ok = r.returncode == 0 and "slots 0, 2" in r.stdout and "slots 1, 3" in r.stdout \
        and "splits each rank" in r.stdout
    result(ok, "openpim info --mpi 2 shows the assignment and the splitting rule",
           f"exit {r.returncode}", r.stdout + r.stderr)


def reads_case(work: Path) -> None:
    """Small synchronous reads in the patterns the backend reads ahead (tests/mpi/reads.c: a
    row-by-row scan of 64 DPUs, one-DPU reads across them; between them writes and launches
    that must drop what was fetched), on one rank split over 2 workers: the values the
    program checks, the timing fields of the local run, and far fewer read messages than
    read calls (each call on both parts would be two)."""
    label = ("small reads on 2 workers (read ahead: a scan of 64 DPUs, reads across them, "
             "writes and launches between)")
    # (Its asynchronous launch overlaps host code: measured time in the kernel phase.)
    dist = compare("reads", work, ["./bin/reads"], 4, 2, "reads OK", label=label,
                   parts=[[(0, 0, 32)], [(0, 32, 32)]], measured=True)
    if dist is None:
        return
    calls = 468
    sent = sum(t["messages"] for t in dist["mpi_traffic"]
               if t["kind"].split("+")[0] == "read")
    result(sent * 4 < calls, f"{label}: {sent} read messages for {calls} read calls",
           f"{sent} read messages for {calls} read calls: not read ahead")


def split_setting_case(work: Path) -> None:
    """A bad OPENPIM_MPI_SPLIT or OPENPIM_MPI_INPLACE fails the allocation with
    DPU_ERR_SYSTEM naming the variable and its valid values (tests/mpi/logs.c allocates 64
    DPUs)."""
    for name in ("OPENPIM_MPI_SPLIT", "OPENPIM_MPI_INPLACE"):
        r = run([str(OPENPIM), "run", "--ranks", "4", "--mpi", "2", "--", "./bin/logs"], work,
                {name: "maybe"})
        ok = r.returncode != 0 and f"{name}=maybe" in r.stderr and "`off`" in r.stderr \
            and "system error" in r.stderr
        result(ok, f"a bad {name} fails dpu_alloc with DPU_ERR_SYSTEM naming it",
               f"exit {r.returncode}", r.stderr)


def main() -> int:
    argv = sys.argv[1:]
    full = "--all" in argv
    only = None
    if "--prim" in argv and argv.index("--prim") + 1 < len(argv):
        only = argv[argv.index("--prim") + 1].split(",")
        full = True
    if subprocess.run([str(OPENPIM), "worker", "--socket", "/nonexistent/x"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                      env=env()).stderr.find("built without MPI") >= 0:
        print("FAIL this openpim has no MPI backend (make build with OpenMPI installed)")
        print("0 passed, 1 failed")
        return 1
    r = run(["make", "-s"], HERE)
    if r.returncode != 0:
        print(f"FAIL building tests/mpi\n{r.stdout}{r.stderr}")
        return 1
    r = run(["make", "-s"], ROOT / "tests" / "remote")
    if r.returncode != 0:
        print(f"FAIL building tests/remote\n{r.stdout}{r.stderr}")
        return 1
    work = Path(tempfile.mkdtemp(prefix="openpim-mpi-test-"))
    try:
        if "--ntt" in argv:
            ntt_case(work)
            only = []
        elif "--trns" in argv:
            at = argv.index("--trns") + 1
            trns_case(work, int(argv[at]) if at < len(argv) and argv[at].isdigit() else 5)
            only, full = [], False
        elif only is None:
            common_cases(work)
        if full and only is None:
            coll = work / "coll4"
            shutil.copytree(HERE / "bin", coll / "bin")
            compare("PID-Comm collectives", coll, ["./bin/allreduce"], 4, 4,
                    "AllGather y OK", {"OPENPIM_COLLECTIVES_PR": "always"},
                    collective_bytes=4 * 3 * (64 << 10))
            ntt_case(work)
        if full:
            for bench in only or list(programs.PRIM_64):
                prim_matrix(work, bench)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def conformance_errors_case(work: Path) -> None:
    """The conformance suite's error cases (faults, refusals, printf, the log budget) under
    `openpim run --mpi 2`: each must end as in process. Among them, the program sets
    OPENPIM_LOG_BUDGET itself before its first allocation, after the job started: the budget
    must reach the workers that hold the logs."""
    label = "the conformance suite's error cases on 2 workers (the program's own log budget too)"
    folder = work / "errors"
    shutil.copytree(ROOT / "tests" / "conformance" / "errors", folder,
                    ignore=shutil.ignore_patterns("bin"))
    r = run(["make", "-s"], folder)
    if r.returncode != 0:
        return result(False, label, "building tests/conformance/errors failed", r.stdout + r.stderr)
    r = run([str(OPENPIM), "run", "--mpi", "2", "--", "./bin/host"], folder)
    out = r.stdout + r.stderr
    failures = [line.strip() for line in r.stdout.splitlines() if line.strip().startswith("FAIL")]
    if r.returncode != 0 or failures or "cases passed, 0 failed" not in r.stdout:
        return result(False, label, f"exit {r.returncode}; {failures[:3]}", out)
    if "PASS printf logs of all DPUs bounded by OPENPIM_LOG_BUDGET" not in r.stdout:
        return result(False, label, "the log budget case did not run", out)
    passed_line = next(l for l in r.stdout.splitlines() if "cases passed" in l)
    result(True, f"{label}: {passed_line.strip()}")


def common_cases(work: Path) -> None:
    """The `make test` cases."""
    refusal_cases(HERE)
    conformance_errors_case(work)
    va = build_prim(work, "VA")
    va_cmd = ["./bin/host_code", "-w", "0", "-e", "1", "-i", "2621440", "-x", "1"]
    compare("PrIM VA", va, va_cmd, 4, 2, "OK", in_place=True,
            label="PrIM VA at 256 DPUs on 2 workers (its reads written in place by the gateway)")
    compare("PrIM VA", va, va_cmd, 4, 2, "OK", {"OPENPIM_MPI_INPLACE": "off"}, in_place=False,
            label="PrIM VA at 256 DPUs on 2 workers, OPENPIM_MPI_INPLACE=off (its reads through "
                  "the socket)")
    # BS pushes its whole sorted array (256 KiB) to every DPU: one buffer, broadcast to the
    # workers once.
    bs = build_prim(work, "BS")
    compare("PrIM BS", bs, ["./bin/bs_host", "-w", "0", "-e", "1", "-i", "32768"], 4, 2, "OK",
            kinds=("shared buffer",),
            label="PrIM BS at 256 DPUs on 2 workers (its array an MPI broadcast)")
    coll = work / "coll"
    shutil.copytree(HERE / "bin", coll / "bin")
    # (The AllReduce along y crosses the workers: each needs the other's 2 ranks' 64 KiB.)
    compare("PID-Comm collectives", coll, ["./bin/allreduce"], 4, 2, "AllGather y OK",
            {"OPENPIM_COLLECTIVES_PR": "always"}, collective_bytes=2 * 2 * (64 << 10))
    compare("PrIM VA", va, va_cmd, 4, 2, "OK", {"OMPI_MCA_btl": "tcp,self"},
            label="PrIM VA at 256 DPUs on 2 workers over TCP (OMPI_MCA_btl=tcp,self)")
    # One rank on 2 workers: split in two; its collectives' host step runs in the program.
    compare("PID-Comm collectives", coll, ["./bin/allreduce64"], 4, 2, "AllGather y OK",
            {"OPENPIM_COLLECTIVES_PR": "always"}, parts=[[(0, 0, 32)], [(0, 32, 32)]],
            label="PID-Comm collectives at 64 DPUs (one rank split over 2 workers)")
    trns_case(work, 2)
    fault_case(coll)
    fault_case(coll, 4)
    logs_case(coll)
    reads_case(coll)
    split_setting_case(coll)
    kill_case(work)
    kill_case(work, signal.SIGSTOP)
    kill_case(work, collectives=True)


def trns_case(work: Path, repeats: int) -> None:
    """PrIM TRNS at 64 DPUs (one rank, split in four: 16 DPUs per worker) on 4 workers,
    `repeats` times against as many local
    runs: 16,384 small writes of 4 KiB, sent in 4 batches of 16 MiB without waiting for the
    worker (one in flight) while the program measures the next writes' host-side
    interleaving. Its timing fields must be the local run's every time: no wall time of the
    MPI path, and no outlier of a measurement, may reach them."""
    trns = build_prim(work, "TRNS", 64)
    cmd = ["./bin/host_code", "-w", "0", "-e", "1", "-p", "64", "-o", "1024", "-x", "1"]
    for k in range(repeats):
        compare("PrIM TRNS", trns, cmd, 4, 4, "OK", kinds=("batched writes",),
                parts=[[(0, 16 * w, 16)] for w in range(4)], in_place=True,
                label=f"PrIM TRNS at 64 DPUs on 4 workers (one rank split in four, batches in "
                      f"flight), run {k + 1} of {repeats}")


def ntt_case(work: Path) -> None:
    """The study's NTT at 2,048 DPUs (16 instances of a 2D 65,536-point NTT, its transpose a
    PID-Comm all-to-all) on 4 workers against the local run."""
    label = "the study's NTT at 2,048 DPUs (PID-Comm all-to-all) on 4 workers"
    dest = work / "workloads"
    for part in ("ntt", "common"):
        shutil.copytree(ROOT / "workloads" / part, dest / part, symlinks=True,
                        ignore=shutil.ignore_patterns("bin"))
    r = run(["make", "-s", "bin/host", "bin/ntt_dpu_16"], dest / "ntt")
    if r.returncode != 0:
        return result(False, label, "build failed", r.stdout + r.stderr)
    cmd = ["./bin/host", "--n", "256", "--steps", "2", "--instances", "16", "--dpus", "2048",
           "--exchange", "pidcomm"]
    # (Its all-to-all moves 4 MiB between ranks, 3/4 of it across the 4 workers.)
    compare("NTT", dest / "ntt", cmd, 32, 4, "OK ntt", label=label, collective_bytes=2 << 20)


def prim_matrix(work: Path, bench: str) -> None:
    """One PrIM benchmark at 256 DPUs on 1, 2 and 4 workers against the local run."""
    make_vars, args = programs.PRIM_64[bench]
    dest = work / f"prim-{bench}"
    shutil.copytree(programs.THIRD_PARTY / "prim-benchmarks" / bench, dest, symlinks=True)
    r = run(["make", "-j2", "NR_DPUS=256", "NR_TASKLETS=16", *make_vars.split()], dest)
    if r.returncode != 0:
        return result(False, f"PrIM {bench} at 256 DPUs", "build failed", r.stdout + r.stderr)
    cmd = args.format(inputs=programs.INPUTS).split()
    ok = "" if bench in ("BFS", "SpMV") else "OK"
    for workers in (1, 2, 4):
        # (TRNS and NW allocate less than a rank: split over 2 and 4 workers.)
        compare(f"PrIM {bench}", dest, cmd, 4, workers, ok, parts="any")


if __name__ == "__main__":
    sys.exit(main())
