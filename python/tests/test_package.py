"""The package: exports, error codes, finding libdpu.so and the compiler, the UPMEM demo."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dpu
from conftest import OPENPIM_ROOT, PACKAGE_ROOT
from dpu import DpuError, ErrorCode, compiler, ffi

CHECKSUM_DEMO = Path("/work/shared/third_party/dpu_demo/checksum")


def test_exports():
    for name in ("DpuSet", "DpuError", "ALLOCATE_ALL", "DpuProgram", "DpuSymbol", "DpuVariable"):
        assert hasattr(dpu, name)
    from dpu.driver import ALLOCATE_ALL, DpuSet  # the SDK's module layout

    assert DpuSet is dpu.DpuSet and ALLOCATE_ALL == dpu.ALLOCATE_ALL


def test_error_codes_match_header():
    header = (OPENPIM_ROOT / "sdk" / "include" / "dpu_error.h").read_text()
    body = header[header.index("typedef enum _dpu_error_t") :]
    names = re.findall(r"^\s*(DPU_(?:OK|ERR_\w+))\b", body, re.M)
    assert names[0] == "DPU_OK"
    value = 0
    for name in names:
        if name == "DPU_ERR_ASYNC_JOBS":
            assert ErrorCode[name] == 1 << 31
            continue
        assert ErrorCode[name] == value, name
        value += 1


def test_error_strings_and_attributes():
    assert ffi.error_to_string(ErrorCode.DPU_ERR_UNKNOWN_SYMBOL) == "unknown symbol"
    e = DpuError("x", 27)
    assert e.code is ErrorCode.DPU_ERR_UNKNOWN_SYMBOL and e.name == "DPU_ERR_UNKNOWN_SYMBOL"
    assert DpuError("y").code is None and DpuError("y").name is None
    assert DpuError("z", 999).code == 999


def test_library_candidates(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENPIM_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{tmp_path}/a:{tmp_path}/b")
    found = ffi.library_candidates()
    assert found[0] == str(tmp_path / "root" / "target" / "release" / "libdpu.so")
    assert found[1:3] == [f"{tmp_path}/a/libdpu.so", f"{tmp_path}/b/libdpu.so"]
    assert found[-1] == str(OPENPIM_ROOT / "target" / "release" / "libdpu.so")


def _run_isolated(tmp_path, code, env_extra=None):
    """Runs `code` with a copy of the package outside the checkout and a bare environment."""
    shutil.copytree(PACKAGE_ROOT / "dpu", tmp_path / "pkg" / "dpu")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "pkg"), "OPENPIM_QUIET": "1"}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
        cwd=tmp_path,
    )


def test_library_not_found(tmp_path):
    code = (
        "import dpu\n"
        "try:\n"
        "    dpu.DpuSet(1)\n"
        "except dpu.DpuError as e:\n"
        "    print('CODE', e.name)\n"
        "    print(e)\n"
    )
    r = _run_isolated(tmp_path, code)
    assert r.returncode == 0, r.stderr
    assert "CODE DPU_ERR_SYSTEM" in r.stdout
    assert "libdpu.so was not found" in r.stdout and "OPENPIM_ROOT" in r.stdout


def test_found_through_openpim_root_and_ld_library_path(tmp_path):
    code = (
        "import dpu\n"
        "with dpu.DpuSet(2, c_source='int main() { return 0; }\\n') as d:\n"
        "    d.exec()\n"
        "    print('OK', len(d))\n"
    )
    r = _run_isolated(tmp_path, code, {"OPENPIM_ROOT": str(OPENPIM_ROOT)})
    assert r.returncode == 0, r.stderr
    assert "OK 2" in r.stdout
    lib_dir = str(OPENPIM_ROOT / "target" / "release")
    bin_dir = str(OPENPIM_ROOT / "sdk" / "bin")
    r = _run_isolated(
        tmp_path / "2", code, {"LD_LIBRARY_PATH": lib_dir, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    )
    assert r.returncode == 0, r.stderr
    assert "OK 2" in r.stdout


def test_compiler_lookup(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("OPENPIM_ROOT", raising=False)
    # Found next to the package (the checkout's sdk/bin).
    assert compiler.find_compiler() == str(OPENPIM_ROOT / "sdk" / "bin" / compiler.COMPILER_NAME)
    code = (
        "import dpu\n"
        "try:\n"
        "    dpu.compiler.find_compiler()\n"
        "except dpu.DpuError as e:\n"
        "    print('MISSING', type(e).__name__)\n"
    )
    r = _run_isolated(tmp_path, code)
    assert "MISSING CompilerNotFound" in r.stdout, r.stderr


def test_compiler_options_and_failure(tmp_path):
    c = compiler.Compiler()
    cmd = c.command(["a.c", "b.c"], output="x", includes=["inc"], defines={"A": None, "B": 2},
                    options=["-Wall"], opt_lvl=compiler.O3, debug=False)
    assert cmd[1:] == ["-O3", "-g0", "-DA", "-DB=2", "-I", "inc", "a.c", "b.c", "-Wall", "-o", "x"]
    bad = tmp_path / "bad.c"
    bad.write_text("this is not C\n")
    with pytest.raises(subprocess.CalledProcessError) as e:
        c.compile([str(bad)], output=str(tmp_path / "bad.dpu"))
    assert "error" in e.value.stderr


@pytest.mark.skipif(not CHECKSUM_DEMO.is_dir(), reason="the UPMEM dpu_demo copy is not present")
@pytest.mark.parametrize("nr_dpus", [1, 3])
def test_upmem_checksum_demo(tmp_path, nr_dpus):
    """UPMEM's dpu_demo/checksum host.py, unmodified, from a copy of its folder."""
    work = tmp_path / "checksum"
    shutil.copytree(CHECKSUM_DEMO, work)
    env = dict(os.environ)
    env["PATH"] = f"{OPENPIM_ROOT / 'sdk' / 'bin'}:{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(PACKAGE_ROOT)
    env.pop("OPENPIM_QUIET", None)
    subprocess.run(["make", "build/checksum_dpu"], cwd=work, env=env, check=True,
                   capture_output=True, timeout=120)
    r = subprocess.run([sys.executable, "host/host.py", str(nr_dpus), "16"], cwd=work, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Allocated {nr_dpus} DPU(s)" in r.stdout
    assert r.stdout.count("checksums are equal") == nr_dpus
    assert "differ" not in r.stdout
    for i in range(nr_dpus):
        assert f"=== DPU#0x{0x3000_0000 | (i // 8) << 8 | i % 8:x} ===" in r.stdout
    assert r.stdout.count("] Checksum = 0x") == 16 * nr_dpus


def test_usage_doc_example(capsys):
    """The example of the "Python API" section of docs/usage.md runs and checks itself."""
    text = (OPENPIM_ROOT / "docs" / "usage.md").read_text()
    section = text[text.index("## Python API") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "usage.md", "exec"), {"__name__": "usage_example"})
    out = capsys.readouterr().out
    assert "=== DPU#0x30000003 ===" in out and "[524800, 1048576, 1572352, 2096128]" in out
