"""A Python package that compiles its DPU kernel through the SDK's CMake files at install time
(scikit-build-core; the kernel an ExternalProject with $UPMEM_HOME/share/upmem/cmake/dpu.cmake),
pip-installed, then imported and run: its result against the CPU."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
UPMEM_HOME = ROOT / "sdk" / "upmem-home"

FILES = {
    "pyproject.toml": """
        [build-system]
        requires = ["scikit-build-core"]
        build-backend = "scikit_build_core.build"

        [project]
        name = "pimsum"
        version = "0.1.0"

        [tool.scikit-build]
        wheel.packages = ["pimsum"]
        """,
    "CMakeLists.txt": """
        cmake_minimum_required(VERSION 3.15)
        project(pimsum LANGUAGES NONE)
        if(NOT DEFINED UPMEM_HOME)
            set(UPMEM_HOME $ENV{UPMEM_HOME})
        endif()
        include(ExternalProject)
        ExternalProject_Add(kernel
            SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/kernel
            BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR}/kernel
            CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${UPMEM_HOME}/share/upmem/cmake/dpu.cmake
            INSTALL_COMMAND "")
        install(PROGRAMS ${CMAKE_CURRENT_BINARY_DIR}/kernel/sum_kernel DESTINATION pimsum)
        """,
    "kernel/CMakeLists.txt": """
        cmake_minimum_required(VERSION 3.15)
        project(kernel C)
        add_executable(sum_kernel sum.c)
        target_compile_definitions(sum_kernel PUBLIC NR_TASKLETS=4)
        target_link_options(sum_kernel PUBLIC -DNR_TASKLETS=4)
        """,
    "kernel/sum.c": """
        #include <defs.h>
        #include <stdint.h>
        #include <barrier.h>
        __host uint32_t input[64];
        __host uint64_t total;
        uint64_t part[NR_TASKLETS];
        BARRIER_INIT(b, NR_TASKLETS);
        int main(void) {
            uint64_t s = 0;
            for (unsigned i = me(); i < 64; i += NR_TASKLETS)
                s += (uint64_t)input[i] * input[i];
            part[me()] = s;
            barrier_wait(&b);
            if (me() == 0) {
                total = 0;
                for (unsigned t = 0; t < NR_TASKLETS; t++)
                    total += part[t];
            }
            return 0;
        }
        """,
    "pimsum/__init__.py": """
        import os
        import struct

        from dpu import DpuSet

        KERNEL = os.path.join(os.path.dirname(__file__), "sum_kernel")

        def sum_of_squares(values):
            with DpuSet(nr_dpus=1, binary=KERNEL) as dpus:
                dpus.input = struct.pack("<64I", *values)
                dpus.exec()
                return struct.unpack("<Q", bytes(dpus.total.data()))[0]
        """,
}


def test_pip_installed_package_builds_its_kernel_through_upmem_home(tmp_path):
    pytest.importorskip("scikit_build_core")
    src = tmp_path / "pimsum-src"
    for name, text in FILES.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    target = tmp_path / "site"
    env = dict(os.environ)
    env["UPMEM_HOME"] = str(UPMEM_HOME)
    env["PATH"] = f"{ROOT / 'sdk' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--quiet",
         "--target", str(target), str(src)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    kernel = target / "pimsum" / "sum_kernel"
    assert kernel.is_file()
    assert b"\x7fELF" == kernel.read_bytes()[:4]
    values = [(i * 2654435761) % 100000 for i in range(64)]
    env["PYTHONPATH"] = f"{target}{os.pathsep}{ROOT / 'python'}"
    r = subprocess.run(
        [sys.executable, "-c", f"import pimsum; print(pimsum.sum_of_squares({values!r}))"],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert int(r.stdout.strip()) == sum(v * v for v in values)
