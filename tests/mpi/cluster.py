#!/usr/bin/env python3
"""The MPI backend on a small cluster made on this machine (docs/scale-out.md, "A cluster on
one machine"): each worker in a network namespace of its own, with its own host name, joined to
this machine's by a veth link through a bridge, the links shaped with `tc` (bandwidth, and
delay where the kernel has netem). OpenMPI starts the workers through its remote launcher as it would over ssh (a launch
agent enters the namespace instead), its daemons and the MPI traffic use TCP over the links
only, and the program runs here as with any hostfile.

    tests/mpi/cluster.py                 the cases below (`make test` and `make test-mpi`; root)
    tests/mpi/cluster.py --rate 100mbit [--delay 1ms]    other link shapes (the delay needs
                                         the kernel's netem)
    tests/mpi/cluster.py --keep          leave the namespaces up after the run (to look around)
    tests/mpi/cluster.py --if-root       as `make test` runs it: skipped unless run as root

Cases, each against the same program in process (the timing fields of tests/mpi/run.py must be
equal): PrIM VA at 256 DPUs on 2 workers in 2 namespaces; PID-Comm's collectives at 256 DPUs
on 2 workers (their host step in the workers, lines exchanged between them over the links). Each also checks that `workers[]` names the namespaces' host names, and
prints the wall times with the links' shape; and a worker killed with -9 (the program's next
call fails with DPU_ERR_SYSTEM naming it, nothing left behind). Prints PASS/FAIL lines and "N passed, M failed".
The namespaces, links and bridge are removed at the end, and any left by an earlier run that
was killed are removed at the start.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BRIDGE = "opnbr0"
SUBNET = "10.231.0"
PREFIX = "opn"  # namespaces opn1, opn2, ...; their veth ends opnv1, ...


def load_mpi_tests():
    """tests/mpi/run.py as a module (its comparison of a local and an MPI run)."""
    spec = importlib.util.spec_from_file_location("mpi_run", HERE / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mpi_run"] = mod
    spec.loader.exec_module(mod)
    return mod


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def teardown(n: int = 8) -> None:
    """Removes what `setup` made (and what a killed earlier run left)."""
    listed = sh("ip", "netns", "list", check=False).stdout.split()
    for i in range(1, n + 1):
        if f"{PREFIX}{i}" in listed:
            sh("ip", "netns", "del", f"{PREFIX}{i}", check=False)
    if sh("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        sh("ip", "link", "del", BRIDGE, check=False)


def setup(n: int, rate: str, delay: str | None) -> list[str]:
    """`n` namespaces on a bridge with this machine at SUBNET.1; each link shaped both ways:
    a token bucket of `rate` (tbf), or with `delay` netem's delay and rate (kernels built
    without netem, as some VMs' are, cannot add a delay). Returns the namespaces' names."""
    teardown()
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    names = []
    for i in range(1, n + 1):
        ns, veth = f"{PREFIX}{i}", f"{PREFIX}v{i}"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "link", "set", veth, "master", BRIDGE, "up")
        sh("ip", "-n", ns, "addr", "add", f"{SUBNET}.{10 + i}/24", "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        # Towards the namespace (on the bridge's end) and from it (inside).
        if delay:
            shape = ["root", "netem", "delay", delay, "rate", rate, "limit", "100000"]
        else:
            shape = ["root", "tbf", "rate", rate, "burst", "256kb", "latency", "100ms"]
        sh("tc", "qdisc", "add", "dev", veth, *shape)
        sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", *shape)
        names.append(ns)
    return names


def namespace_pids(names: list[str]) -> list[int]:
    """The processes in the namespaces (mpirun's daemons there detach from their launcher, as
    they do on other machines)."""
    return [int(p) for n in names
            for p in sh("ip", "netns", "pids", n, check=False).stdout.split()]


def launch_agent(folder: Path) -> Path:
    """OpenMPI's remote launcher for the namespaces: called as `agent [OPTIONS] HOST COMMAND`
    (as ssh would be), it runs COMMAND in namespace HOST under the host name HOST."""
    agent = folder / "netns-agent"
    agent.write_text(
        "#!/bin/sh\n"
        "# OpenMPI calls its launch agent as it calls ssh: options, the host, the command.\n"
        'while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done\n'
        'host=$1; shift\n'
        'exec ip netns exec "$host" unshare --uts /bin/sh -c "hostname $host; $*"\n'
    )
    agent.chmod(0o755)
    return agent


def this_host() -> str:
    return os.uname().nodename


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", default="1gbit", help="each link's bandwidth (tc syntax)")
    ap.add_argument("--delay", default=None,
                    help="each link's one-way delay (tc syntax; needs the kernel's netem)")
    ap.add_argument("--keep", action="store_true", help="leave the namespaces up")
    ap.add_argument("--if-root", action="store_true",
                    help="not root: say so and pass (for `make test`, run by developers too)")
    a = ap.parse_args()
    if os.geteuid() != 0 and a.if_root:
        print("SKIP the cluster test makes network namespaces: it runs as root only "
              "(make test-mpi as root runs it)")
        return 0
    if os.geteuid() != 0:
        print("FAIL the cluster test makes network namespaces: run it as root (sudo)")
        print("0 passed, 1 failed")
        return 1
    missing = [t for t in ("ip", "tc", "unshare", "mpirun") if shutil.which(t) is None]
    if missing:
        print(f"FAIL missing {', '.join(missing)}: scripts/setup.sh installs iproute2, "
              "util-linux and openmpi-bin")
        print("0 passed, 1 failed")
        return 1
    mpi = load_mpi_tests()
    for folder in (HERE, HERE.parents[1] / "tests" / "remote"):
        r = mpi.run(["make", "-s"], folder)
        if r.returncode != 0:
            print(f"FAIL building {folder}\n{r.stdout}{r.stderr}")
            print("0 passed, 1 failed")
            return 1
    work = Path(tempfile.mkdtemp(prefix="openpim-mpi-cluster-"))
    try:
        names = setup(2, a.rate, a.delay)
        hostfile = work / "hosts"
        hostfile.write_text(f"{this_host()} slots=1\n" +
                            "".join(f"{n} slots=1\n" for n in names))
        # The daemons and the MPI traffic over the links only (TCP; no shared memory between
        # the namespaces' processes); the workers started by the launch agent.
        extra = {
            "OMPI_MCA_plm_rsh_agent": str(launch_agent(work)),
            "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
            "OMPI_MCA_oob_tcp_if_include": f"{SUBNET}.0/24",
            "OMPI_MCA_btl_tcp_if_include": f"{SUBNET}.0/24",
            "OMPI_MCA_btl": "tcp,self",
        }
        shape = f"links of {a.rate}" + (f", {a.delay} each way" if a.delay else "")
        va = mpi.build_prim(work, "VA")
        va_cmd = ["./bin/host_code", "-w", "0", "-e", "1", "-i", "2621440", "-x", "1"]
        # (The collectives' lines that cross workers go worker to worker over the links: the
        # AllReduce along y needs the other worker's 2 ranks' 64 KiB.)
        cases = [
            ("PrIM VA", va, va_cmd, "OK", {}, None),
            ("PID-Comm collectives", work / "coll", ["./bin/allreduce"], "AllGather y OK",
             {"OPENPIM_COLLECTIVES_PR": "always"}, 2 * 2 * (64 << 10)),
        ]
        shutil.copytree(HERE / "bin", work / "coll" / "bin")
        for name, cwd, cmd, ok, env, between in cases:
            label = f"{name} at 256 DPUs on 2 workers in 2 network namespaces ({shape})"
            report = mpi.compare(name, cwd, cmd, 4, 2, ok, {**extra, **env}, label=label,
                                 collective_bytes=between,
                                 mpi_args=("--hostfile", str(hostfile)))
            if report is None:
                continue
            hosts = [w.get("host") for w in report.get("workers", [])]
            if hosts != names:
                mpi.result(False, f"{label}: host names",
                           f"workers[] ran on {hosts}, expected {names}")
            else:
                mpi.result(True, f"{label}: workers[] on {hosts}")
        # A worker on another "machine" killed: the program's next call fails naming it, and
        # nothing is left behind in any namespace.
        mpi.kill_case(work, mpi_args=("--hostfile", str(hostfile)), extra=extra,
                      where=" (workers in network namespaces)",
                      scope=lambda pid: mpi.descendants(pid) + namespace_pids(names))
    except (subprocess.CalledProcessError, RuntimeError) as e:
        detail = getattr(e, "stderr", "") or ""
        mpi.result(False, "setting up the cluster", str(e), detail)
    finally:
        if not a.keep:
            teardown()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{mpi.passed} passed, {mpi.failed} failed")
    return 0 if mpi.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
