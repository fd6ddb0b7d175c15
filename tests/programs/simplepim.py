"""Inputs and result checks for the six SimplePIM examples (benchmarks/<example>).

Used by run.py: prepare(example, workdir) before make, judge(example, workdir, output) after a
clean exit. workdir is the copied benchmarks/<example> folder (the copy, never the original).

Inputs. va, red and hist build their data in host.c. linear_reg, log_reg and kmeans read
data/input.csv, written by their own scripts (linear_reg.py, logistic_reg.py, kmeans.py). Those
scripts import torch, pandas, sklearn and joblib (between them) only to time a CPU model after
writing the file, and torch cannot be installed here (no CPU wheel on the reachable registries),
so the scripts are not run: prepare() follows each script's data recipe with the standard
library and numpy (the same random.seed(10), the same sequence of random draws, the same
formulas and np.savetxt formats), after checking that the sizes hard-coded in the script are the
sizes the host reads from Param.h. (Checked: the files are byte-identical to those the scripts
write when run with torch, pandas, sklearn and joblib stubbed out.) prepare() also removes the
copy's bin/: the published tree carries build outputs, among them DPU binaries built by the
UPMEM SDK in va/bin, and the hosts compile their DPU programs at run time through system()
without checking the result, so a failed compile would otherwise load a stale binary.

Checks, per example:
  va          its own element-by-element comparison with a CPU vector addition
              ("the result is correct", never "result mismatch"). Its DPU side reads an
              uninitialised variable (lib/processing/map/MapProcessing.h lines 40 and 172,
              `unroll_block_rest = copy_block_size-unroll_block_rest`, the count of a loop after
              the unrolled one in zip_map_dpu), so whether it passes depends on the DPU
              compiler's code for that undefined value. Seen here: built by gcc, va reports a
              mismatch (and passes once that line is corrected in a scratch copy); built by
              clang, it passes.
  red         its own comparison with a CPU sum ("the result is correct", never "does not
              match"). The program prints no sum, and its test is loose: it accepts a DPU sum
              from 1% below the CPU sum up to the CPU sum (unsigned difference / sum < 0.01).
  hist        the DPU histogram it prints must equal the host histogram it prints and the
              histogram computed here from the same input (A[i] = i % 4096, bin (d*bins)>>DEPTH).
  linear_reg  the DPU gradients ("the gradients of linear model:") must equal the host's ("the
              gradients on host:") and the ones computed here from data/input.csv as both do it
              (int64, per-element arithmetic right shift). (host.c stores the dim int64 DPU
              gradients in a buffer of dim*sizeof(int): a heap overflow that corrupts glibc's
              bookkeeping, and about one run in ten then crashes in a later malloc, at exit
              in OpenPIM's report writer; run.py runs it again after such a crash,
              SIMPLEPIM_OWN_CRASH there.)
  kmeans      the centroids printed after one iteration must equal one Lloyd iteration computed
              here the way the program does it: the host opens data/input.csv but ignores its
              values (read_csv_to_int_arr has its fscanf calls commented out and fills point i
              with (i+j)%1000, last coordinate i%1000), initial centroids are the first k
              points, the DPU assigns by the first smallest sum of int32 squared differences (as
              uint64) and the host averages with divRoundClosest.
  log_reg     its printed weights carry no information: host.c passes an int (weights[i]) to
              printf's %4.3e, so printf reads a double the call never passed (undefined
              behaviour; here the values look like 4.6e-310, a stack address as a double, and
              change from run to run with address randomisation). The check is that it printed
              dim values, plus a replay of the DPU reduction it ran: the program's own DPU binary
              (bin/dpu_genred_log_reg_funcs, built by the run) is loaded on as many DPUs, with the
              MRAM image and GEN_RED_INPUT_ARGUMENTS that host.c and lib/ give each DPU, and each
              DPU's table must equal the one computed here from its share of data/input.csv (see
              _log_reg_table: each component is 0x80000000 times the number of rows with y = 1).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

EXAMPLES = ("va", "red", "hist", "linear_reg", "log_reg", "kmeans")
ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------------------------
# Param.h and the scripts' sizes


def _param_h(workdir: Path) -> dict[str, float]:
    """The integer/float constants of the example's Param.h (globals and #defines), evaluated."""
    path = workdir / "Param.h"
    try:
        text = path.read_text()
    except OSError as e:
        raise RuntimeError(f"cannot read {path}: {e}") from e
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    defs: list[tuple[str, str]]
    defs = re.findall(r"^[ \t]*#define[ \t]+(\w+)[ \t]+([^\n]+?)[ \t]*$", text, re.M)
    defs += re.findall(r"^[ \t]*(?:const[ \t]+)?\w+[ \t]+(\w+)[ \t]*=[ \t]*([^;\n]+);", text, re.M)
    values: dict[str, float] = {}
    for name, expr in defs:
        values[name] = _eval(expr, values, f"{path}: {name}")
    return values


def _eval(expr: str, names: dict[str, float], what: str) -> float:
    """A C constant expression of numbers, names already known, + - * / ( )."""
    expr = expr.strip()
    if not re.fullmatch(r"[\w\s.+\-*/()]+", expr):
        raise RuntimeError(f"{what}: cannot evaluate {expr!r}")

    def name(m: re.Match[str]) -> str:
        if m.group(0) not in names:
            raise RuntimeError(f"{what}: unknown name {m.group(0)!r} in {expr!r}")
        return repr(names[m.group(0)])

    py = re.sub(r"(?<![\w.])[A-Za-z_]\w*", name, expr)
    if "/" in py and "." not in py:
        py = py.replace("/", "//")  # integer division, as C does on integers
    return eval(py, {"__builtins__": {}}, {})  # noqa: S307 - digits and operators only


def _script_sizes(workdir: Path, script: str) -> dict[str, float]:
    """The sizes assigned in the data script's main(): num_dpus = N and the tuple line
    (k, )dim, num_elements, iter(, lr) = ..."""
    path = workdir / script
    try:
        text = path.read_text()
    except OSError as e:
        raise RuntimeError(f"cannot read {path}: {e}") from e
    names: dict[str, float] = {}
    m = re.search(r"^\s*num_dpus\s*=\s*([^\n#]+)$", text, re.M)
    if not m:
        raise RuntimeError(f"{path}: no 'num_dpus = ...' line")
    names["num_dpus"] = _eval(m.group(1), names, str(path))
    m = re.search(r"^\s*((?:\w+\s*,\s*)+\w+)\s*=\s*([^\n#]+)$", text[m.end():], re.M)
    if not m:
        raise RuntimeError(f"{path}: no 'dim, num_elements, ... = ...' line")
    lhs = [s.strip() for s in m.group(1).split(",")]
    rhs = [s.strip() for s in m.group(2).split(",")]
    if len(lhs) != len(rhs):
        raise RuntimeError(f"{path}: cannot read {m.group(0).strip()!r}")
    for n, e in zip(lhs, rhs):
        names[n] = _eval(e, names, str(path))
    return names


def _sizes(workdir: Path, script: str, pairs: dict[str, str]) -> dict[str, int]:
    """The script's sizes, checked equal to Param.h's (pairs: script name -> Param.h name)."""
    sc = _script_sizes(workdir, script)
    ph = _param_h(workdir)
    out = {}
    for s_name, p_name in pairs.items():
        if s_name not in sc or p_name not in ph:
            raise RuntimeError(f"{script} or Param.h lacks {s_name}/{p_name}")
        if sc[s_name] != ph[p_name]:
            raise RuntimeError(
                f"{script} writes data for {s_name} = {sc[s_name]:g} but Param.h has "
                f"{p_name} = {ph[p_name]:g}: the host would misread the file"
            )
        out[s_name] = int(sc[s_name])
    return out


# ---------------------------------------------------------------------------------------------
# Inputs


def _regression_input(n: int, dim: int, logistic: bool) -> np.ndarray:
    """linear_reg.py / logistic_reg.py main(), up to np.savetxt("data/input.csv", ...)."""
    random.seed(10)
    hi = 0.1 if logistic else 1  # logistic_reg.py: uniform(0, 0.1); linear_reg.py: uniform(0, 1)
    data = np.zeros((n, dim + 1), dtype=np.float32)
    truth = np.zeros((dim), dtype=np.float32)
    for i in range(dim):
        truth[i] = random.randint(-2, 2)
    row = np.zeros((dim), dtype=np.float32)
    for i in range(n):
        for j in range(dim):
            r1, r2 = random.uniform(0, hi), random.uniform(0, hi) / dim
            if j % 2 == 0:
                row[j] = (int)((i - n / 2) * r1 + j * r2) % 10
            else:
                row[j] = (int)(-1 * ((i - n / 2) * r1 + j * r2)) % 10
        data[i, :dim] = row
        if logistic:
            data[i][dim] = 1 if truth.dot(row) > 0 else 0
        else:
            data[i][dim] = truth.dot(row)
    return data


def _kmeans_input(n: int, dim: int) -> np.ndarray:
    """kmeans.py main(), up to np.savetxt("data/input.csv", ...)."""
    random.seed(10)
    data = np.zeros((n, dim), dtype=np.int32)
    for i in range(n):
        for j in range(dim):
            r1, r2 = random.uniform(10, 100), random.uniform(0, 100)
            if i % 2 == 0:
                data[i][j] = (int)((i % 100) * r1 + j * r2)
            else:
                data[i][j] = (int)(-1 * ((i % 100) * r1 + j * r2))
    return data


def prepare(example: str, workdir: Path) -> None:
    """Create the example's input files in workdir (the copied benchmarks/<example>)."""
    workdir = Path(workdir)
    if example not in EXAMPLES:
        raise RuntimeError(f"unknown SimplePIM example {example!r}")
    if not (workdir / "host.c").is_file():
        raise RuntimeError(f"{workdir} is not a SimplePIM example folder (no host.c)")
    shared = Path(os.environ.get("OPENPIM_SHARED", ROOT.parent / "shared")).resolve()
    if workdir.resolve().is_relative_to(shared):
        raise RuntimeError(f"{workdir} is inside {shared}: prepare() works on a copy only")
    _param_h(workdir)  # readable; the judges need it
    # Stale build outputs of the published tree (see the module docstring).
    bin_dir = workdir / "bin"
    if bin_dir.is_dir():
        try:
            shutil.rmtree(bin_dir)
        except OSError as e:
            raise RuntimeError(f"cannot remove the stale build outputs in {bin_dir}: {e}") from e
    if example in ("va", "red", "hist"):
        return  # host.c builds its input
    data_dir = workdir / "data"
    data_dir.mkdir(exist_ok=True)
    try:
        if example == "linear_reg":
            s = _sizes(workdir, "linear_reg.py", {"num_elements": "num_elements", "dim": "dim"})
            data = _regression_input(s["num_elements"], s["dim"], logistic=False)
            # (the script's data/args.csv line is commented out)
            np.savetxt(data_dir / "input.csv", data, delimiter=",", fmt="%f")
        elif example == "log_reg":
            s = _sizes(workdir, "logistic_reg.py", {"num_elements": "num_elements", "dim": "dim"})
            sc = _script_sizes(workdir, "logistic_reg.py")
            data = _regression_input(s["num_elements"], s["dim"], logistic=True)
            args = np.array([sc["dim"], sc["num_elements"], sc["iter"], sc["lr"]])
            np.savetxt(data_dir / "args.csv", args, delimiter=",", fmt="%s")
            np.savetxt(data_dir / "input.csv", data, delimiter=",", fmt="%f")
        else:
            s = _sizes(workdir, "kmeans.py", dict(num_elements="num_elements", dim="dim", k="k"))
            sc = _script_sizes(workdir, "kmeans.py")
            data = _kmeans_input(s["num_elements"], s["dim"])
            args = np.array([sc["k"], sc["dim"], sc["num_elements"], sc["iter"]], dtype=np.intc)
            args = args.astype(int)
            np.savetxt(data_dir / "args.csv", args, delimiter=",", fmt="%s")
            np.savetxt(data_dir / "input.csv", data, delimiter=",", fmt="%d")
    except OSError as e:
        raise RuntimeError(f"cannot write the input of {example} in {data_dir}: {e}") from e


# ---------------------------------------------------------------------------------------------
# Output parsing and C integer helpers


def _ints_after(output: str, header: str, count: int) -> list[int] | str:
    """The first `count` integers printed after the last line containing `header`."""
    pos = output.rfind(header)
    if pos < 0:
        return f"no {header.strip()!r} line in the output"
    nums = re.findall(r"-?\d+", output[pos + len(header):])
    if len(nums) < count:
        return f"fewer than {count} numbers after {header.strip()!r}"
    return [int(x) for x in nums[:count]]


def _wrap(x: int, bits: int) -> int:
    """x as a signed two's-complement integer of `bits` bits."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def _cdiv(n: int, d: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(n) // abs(d)
    return q if (n < 0) == (d < 0) else -q


def _read_csv_as_host(path: Path, n: int, cols: int) -> np.ndarray:
    """data/input.csv as read_csv_to_arr reads it: fscanf "%f" into a float, then (int)tmp."""
    rows = [line for line in path.read_text().splitlines() if line.strip()]
    if len(rows) < n:
        raise ValueError(f"{path} has {len(rows)} rows, the host reads {n}")
    vals = np.array([[float(v) for v in r.split(",")[:cols]] for r in rows[:n]], dtype=np.float32)
    if vals.shape != (n, cols):
        raise ValueError(f"{path} has rows of fewer than {cols} values")
    return np.trunc(vals).astype(np.int64)


def _fmt(xs) -> str:
    xs = list(xs)
    s = " ".join(str(int(x)) for x in xs[:12])
    return s + (" ..." if len(xs) > 12 else "")


# ---------------------------------------------------------------------------------------------
# Judges


def _judge_va(workdir: Path, output: str) -> str | None:
    m = re.search(r"result mismatch at position[^\n]*", output)
    if m:
        return f"its check failed: {m.group(0).strip()!r}"
    if "the result is correct" not in output:
        return "no 'the result is correct' line"
    return None


def _judge_red(workdir: Path, output: str) -> str | None:
    if re.search(r"does not match", output):
        m = re.search(r"correct res[^\n]*", output)
        detail = f" ({m.group(0).strip()})" if m else ""
        return "its check failed: cpu result does not match" + detail
    if "the result is correct" not in output:
        return "no 'the result is correct' line"
    return None


def _judge_hist(workdir: Path, output: str) -> str | None:
    p = _param_h(workdir)
    n, bins, depth = int(p["nr_elements"]), int(p["bins"]), int(p["DEPTH"])
    expected = [0] * bins
    for i in range(n):
        d = i % 4096  # init_data
        expected[((d * bins) & 0xFFFFFFFF) >> depth] += 1
    if "dpu results:" not in output:
        return "no 'dpu results:' line"
    host_part, dpu_part = output.rsplit("dpu results:", 1)
    host = _ints_after(host_part, "the bins :", bins)
    dpu = _ints_after(dpu_part, "the bins :", bins)
    for h in (host, dpu):
        if isinstance(h, str):
            return h
    if host != expected:
        return (
            f"the host histogram it printed differs from the CPU reference: "
            f"{_fmt(host)} vs {_fmt(expected)}"
        )
    if dpu != expected:
        bad = [i for i in range(bins) if dpu[i] != expected[i]]
        return (
            f"the DPU histogram differs from the host's (and the CPU reference's) in "
            f"{len(bad)} bins, first bin {bad[0]}: got {dpu[bad[0]]}, expected {expected[bad[0]]}"
        )
    return None


def _judge_linear_reg(workdir: Path, output: str) -> str | None:
    p = _param_h(workdir)
    n, dim = int(p["num_elements"]), int(p["dim"])
    shift, ovf = int(p["shift_amount"]), int(p["prevent_overflow_shift_amount"])
    if int(p["iter"]) != 1:
        return f"the check computes one iteration; Param.h has iter = {int(p['iter'])}"
    try:
        arr = _read_csv_as_host(workdir / "data" / "input.csv", n, dim + 1)
    except (OSError, ValueError) as e:
        return f"cannot read the input: {e}"
    x, y = arr[:, :dim], arr[:, dim]
    # weights are all 0 (host.c), so dot_product = 0 and e = 0 - (Y << shift) (an int shift).
    e = np.array([-_wrap(int(v) << shift, 32) for v in y], dtype=np.int64)
    expected = [int(v) for v in ((x * e[:, None]) >> ovf).sum(axis=0)]  # int64, arithmetic >>
    host = _ints_after(output, "the gradients on host:", dim)
    dpu = _ints_after(output, "the gradients of linear model:", dim)
    for h in (host, dpu):
        if isinstance(h, str):
            return h
    if host != expected:
        return f"the host gradients differ from the CPU reference: {_fmt(host)} vs {_fmt(expected)}"
    if dpu != expected:
        return f"the DPU gradients differ from the host's: {_fmt(dpu)} vs {_fmt(host)}"
    return None


def _kmeans_expected(n: int, dim: int, k: int) -> list[list[int]]:
    """One iteration as host.c + kmeans_funcs do it (see the module docstring)."""
    i = np.arange(n, dtype=np.int64)[:, None]
    j = np.arange(dim, dtype=np.int64)[None, :]
    pts = ((i + j) % 1000).astype(np.int32)  # read_csv_to_int_arr, j < dim-1
    pts[:, dim - 1] = (np.arange(n) % 1000).astype(np.int32)  # ... and the last coordinate
    cents = pts[:k].copy()
    with np.errstate(over="ignore"):
        # int32 tmp = a - c; int32 tmp*tmp; added to a uint64 sum (sign-extended)
        diff = pts[:, None, :] - cents[None, :, :]
        sq = (diff * diff).astype(np.int64).astype(np.uint64)
        dist = sq.sum(axis=2, dtype=np.uint64)
    assign = dist.argmin(axis=1)  # first smallest: the DPU replaces only on '<'
    out = []
    for c in range(k):
        members = pts[assign == c]
        times = len(members)
        sums = [_wrap(int(s), 32) for s in members.astype(np.int64).sum(axis=0)]
        row = []
        for s in sums:
            if times == 0:
                row.append(0)
            elif (s < 0) ^ (times < 0):  # divRoundClosest
                row.append(_cdiv(_wrap(s - _cdiv(times, 2), 32), times))
            else:
                row.append(_cdiv(_wrap(s + _cdiv(times, 2), 32), times))
        out.append(row)
    return out


def _judge_kmeans(workdir: Path, output: str) -> str | None:
    p = _param_h(workdir)
    n, dim, k = int(p["num_elements"]), int(p["dim"]), int(p["k"])
    if int(p["iter"]) != 1:
        return f"the check computes one iteration; Param.h has iter = {int(p['iter'])}"
    rows = re.findall(r"^[ \t]*((?:-?\d+[ \t]+){%d})[ \t]*$" % dim, output, re.M)
    if len(rows) < k:
        return f"fewer than {k} lines of {dim} centroid coordinates in the output"
    got = [[int(v) for v in r.split()] for r in rows[-k:]]
    expected = _kmeans_expected(n, dim, k)
    for c in range(k):
        if got[c] != expected[c]:
            return f"centroid {c} is {_fmt(got[c])}, expected {_fmt(expected[c])}"
    return None


# log_reg ---------------------------------------------------------------------------------------

_REPLAY_C = r"""
/* Replays one gen_red launch: per DPU, an MRAM heap image at offset 0 and a
 * GEN_RED_INPUT_ARGUMENTS block; prints each DPU's output table as hex. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc != 8) return 2;
    const char *bin = argv[1];
    uint32_t nr = atoi(argv[2]), image_size = atoi(argv[5]);
    uint32_t out_off = atoi(argv[6]), out_size = atoi(argv[7]);
    FILE *fi = fopen(argv[3], "rb"), *fa = fopen(argv[4], "rb");
    if (!fi || !fa) return 3;
    uint8_t *image = malloc((size_t)nr * image_size), *args = malloc(nr * 28);
    uint8_t *out = malloc(out_size);
    if (fread(image, image_size, nr, fi) != nr || fread(args, 28, nr, fa) != nr) return 4;
    struct dpu_set_t set, dpu;
    uint32_t i;
    DPU_ASSERT(dpu_alloc(nr, NULL, &set));
    DPU_ASSERT(dpu_load(set, bin, NULL));
    DPU_FOREACH(set, dpu, i) {
        uint8_t *mine = image + (size_t)i * image_size;
        DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, mine, image_size));
        DPU_ASSERT(dpu_copy_to(dpu, "GEN_RED_INPUT_ARGUMENTS", 0, args + i * 28, 28));
    }
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, out_off, out, out_size));
        for (uint32_t b = 0; b < out_size; b++) printf("%02x", out[b]);
        printf("\n");
    }
    DPU_ASSERT(dpu_free(set));
    return 0;
}
"""


def _pad_len(length: int, type_size: int, ndpus: int) -> int:
    """lib/communication/CommHelper.c calculate_pad_len."""
    lcm = max(type_size, 8)
    while lcm % type_size or lcm % 8:
        lcm += 1
    padded = length * type_size
    while padded % ndpus or (padded // ndpus) % lcm:
        padded += 1
    return padded - length * type_size


def _log_reg_table(elements: np.ndarray, dim: int) -> list[int]:
    """The gradient table (dim int32) that log_reg's DPU reduction yields over `elements`.

    The host stores the CSV values as int (T = int) and the weights as int 0; map_to_val_func
    reads both as float. So x_i and y are denormal floats (bit patterns 0..9, 0..1), the
    weights are +0.0, dot = +0.0, sigmoid_dpu((int)0.0) returns (int)0.5 = 0, and
    e = 0.0f - y_float is +0.0 (y = 0) or -2^-149 (y = 1). grads[i] = e * x_i then rounds to
    +0.0 (y = 0) or -0.0 (y = 1, bits 0x80000000) for every x_i in 0..9 (|e * x_i| <= 9 * 2^-298).
    combine_func adds these bit patterns as ints: each component is the int32 sum of
    0x80000000 over the elements with y = 1.
    """
    if len(elements) == 0:
        return [0] * dim
    if elements.min() < 0 or elements[:, :dim].max() > 9 or elements[:, dim].max() > 1:
        raise ValueError("log_reg input outside what _log_reg_table covers (x in 0..9, y in 0..1)")
    ones = int((elements[:, dim] == 1).sum())
    return [_wrap(ones * -(1 << 31), 32)] * dim


def _sdk_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{ROOT}/sdk/bin:{ROOT}/target/release:{env.get('PATH', '')}"
    ld = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{ROOT}/target/release" + (f":{ld}" if ld else "")
    env["OPENPIM_ROOT"] = str(ROOT)
    return env


def _replay_gen_red(
    dpu_bin: Path, images: list[bytes], args: list[bytes], out_off: int, out_size: int
) -> list[bytes]:
    """Run the DPU binary once on len(images) DPUs; each DPU's out_size bytes at out_off."""
    size = len(images[0])
    with tempfile.TemporaryDirectory(prefix="simplepim-replay-") as tmp:
        t = Path(tmp)
        (t / "replay.c").write_text(_REPLAY_C)
        (t / "image.bin").write_bytes(b"".join(images))
        (t / "args.bin").write_bytes(b"".join(args))
        env = _sdk_env()

        def run(cmd: list[str]) -> str:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                msg = (r.stderr or r.stdout).strip()[-300:]
                raise RuntimeError(f"{Path(cmd[0]).name} exited with {r.returncode}: {msg}")
            return r.stdout

        flags = run(["dpu-pkg-config", "--cflags", "--libs", "dpu"]).split()
        run(["gcc", "-O1", "-o", str(t / "replay"), str(t / "replay.c"), *flags])
        out = run(
            [str(t / "replay"), str(dpu_bin), str(len(images)), str(t / "image.bin"),
             str(t / "args.bin"), str(size), str(out_off), str(out_size)]
        )
        lines = out.split()
        if len(lines) != len(images):
            raise RuntimeError(f"unexpected replay output {out[:200]!r}")
        return [bytes.fromhex(x) for x in lines]


def _judge_log_reg(workdir: Path, output: str) -> str | None:
    p = _param_h(workdir)
    n, dim, ndpus = int(p["num_elements"]), int(p["dim"]), int(p["dpu_number"])
    pos = output.rfind("the weights of linear model:")
    if pos < 0:
        return "no 'the weights of linear model:' line"
    printed = re.findall(r"\S+", output[pos:].split(":", 1)[1])[:dim]
    number = re.compile(r"-?(\d\.\d{3}e[+-]\d+|inf|nan)")
    if len(printed) < dim or not all(number.fullmatch(v) for v in printed):
        return f"fewer than {dim} %4.3e values after 'the weights of linear model:'"
    # Its printed values are undefined behaviour (see the module docstring): check the DPU
    # reduction itself by replaying it with the program's DPU binary.
    try:
        arr = _read_csv_as_host(workdir / "data" / "input.csv", n, dim + 1)
    except (OSError, ValueError) as e:
        return f"cannot read the input: {e}"
    dpu_bin = workdir / "bin" / "dpu_genred_log_reg_funcs"
    if not dpu_bin.is_file():
        return f"no {dpu_bin.name} (the DPU binary the run builds) to replay"
    # The MRAM layout host.c + lib give each DPU: t1 (scatter of n elements of dim+1 ints) at
    # 0, t2 (broadcast of dim int weights, all 0, 8-byte padded) at t1's end = the 'info'
    # argument, the output table t3 at t2's end.
    elem = (dim + 1) * 4
    pad = _pad_len(n, elem, ndpus)
    per_dpu = (n * elem + pad) // ndpus  # simplepim_scatter's len_per_dpu_in_byte
    per_elems = (n + pad // elem) // ndpus  # ... and num_transfered_elem_per_dpu
    flat = np.zeros(per_dpu * ndpus // 4, dtype="<i4")
    flat[: n * (dim + 1)] = arr.astype("<i4").reshape(-1)
    raw = flat.tobytes()
    w_size = dim * 4 + 8 - (dim * 4) % 8
    out_off, out_type = per_dpu + w_size, dim * 4
    out_size = out_type + out_type % 8  # gather_tables_to_host's aligned_table_size
    images, args, expected = [], [], []
    for d in range(ndpus):
        length = per_elems if (d + 1) * per_elems < n else max(0, n - d * per_elems)  # lens[]
        images.append(raw[d * per_dpu:(d + 1) * per_dpu] + bytes(w_size))
        args.append(struct.pack("<7I", 0, elem, out_off, out_type, length, 1, per_dpu))
        try:
            expected.append(_log_reg_table(arr[d * per_elems:d * per_elems + length], dim))
        except ValueError as e:
            return str(e)
    try:
        tables = _replay_gen_red(dpu_bin, images, args, out_off, out_size)
    except (OSError, subprocess.SubprocessError, RuntimeError) as e:
        return f"the replay of its DPU reduction failed: {e}"
    for d, t in enumerate(tables):
        got = list(struct.unpack(f"<{dim}i", t[: dim * 4]))
        if got != expected[d]:
            return (
                f"its DPU reduction (replayed) gives on DPU {d} {_fmt(got)}, "
                f"expected {_fmt(expected[d])}"
            )
    return None


_JUDGES = {
    "va": _judge_va,
    "red": _judge_red,
    "hist": _judge_hist,
    "linear_reg": _judge_linear_reg,
    "log_reg": _judge_log_reg,
    "kmeans": _judge_kmeans,
}


def judge(example: str, workdir: Path, output: str) -> str | None:
    """None when the run's result is correct, else why not."""
    if example not in _JUDGES:
        return f"unknown SimplePIM example {example!r}"
    try:
        return _JUDGES[example](Path(workdir), output)
    except RuntimeError as e:
        return str(e)
