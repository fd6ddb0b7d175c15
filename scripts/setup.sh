#!/usr/bin/env bash
# Installs what OpenPIM needs on a fresh Debian/Ubuntu machine (idempotent):
#  - the DPU compilers (docs/usage.md, "The DPU compiler"): Debian's clang-13 and lld-13 (LLVM 13,
#    the closest Debian has to the UPMEM SDK's clang, LLVM 12), and gcc-riscv64-unknown-elf
#    (RV32I multilib, see DESIGN.md §3), whose libgcc both compilers link and which
#    OPENPIM_DPU_COMPILER=gcc selects
#  - a host C compiler and make (for users' host programs and the conformance suite)
#  - a Rust toolchain (cargo) if none is on PATH
#  - matplotlib for the phase plots (optional: a warning if it cannot be installed)
set -euo pipefail

need_apt=()
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || need_apt+=(gcc-riscv64-unknown-elf)
command -v clang-13 >/dev/null 2>&1 || need_apt+=(clang-13)
command -v ld.lld-13 >/dev/null 2>&1 || need_apt+=(lld-13)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: need root (or sudo) to install ${need_apt[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The rv32i/ilp32 multilib is what the DPU programs are built for.
if ! riscv64-unknown-elf-gcc -march=rv32i -mabi=ilp32 -print-libgcc-file-name | grep -q rv32i; then
  echo "setup: riscv64-unknown-elf-gcc lacks the rv32i/ilp32 multilib" >&2
  exit 1
fi

# clang must target RV32I (Debian's LLVM has every backend; check anyway).
if ! echo 'int f(int a) { return a + 1; }' |
  clang-13 --target=riscv32-unknown-elf -march=rv32i -mabi=ilp32 -x c -c - -o /dev/null 2>/dev/null; then
  echo "setup: clang-13 cannot compile for riscv32 (rv32i)" >&2
  exit 1
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    echo "setup: cargo is in ~/.cargo/bin; add it to PATH"
  else
    echo "setup: installing Rust (Debian's cargo)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get install -y -qq cargo rustc >/dev/null
  fi
fi
# matplotlib draws the phase plots (openpim plot); never fail setup because of it.
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import matplotlib' >/dev/null 2>&1; then
  echo "setup: installing matplotlib (for openpim plot)"
  if ! python3 -m pip install --quiet matplotlib >/dev/null 2>&1; then
    # PEP 668: Debian's Python is "externally managed"; install beside it.
    python3 -m pip install --quiet --break-system-packages matplotlib >/dev/null 2>&1 \
      || echo "setup: warning: could not install matplotlib; 'openpim plot' will not work (python3 -m pip install matplotlib)" >&2
  fi
fi
# Python: the `dpu` package (python/, installed in editable mode so `import dpu` finds this
# checkout), numpy (buffers of the Python API, the programs' input generators) and pytest (the
# Python API's tests).
pip_install() {
  python3 -m pip install --quiet "$@" >/dev/null 2>&1 ||
    python3 -m pip install --quiet --break-system-packages "$@" >/dev/null 2>&1
}
if command -v python3 >/dev/null 2>&1; then
  for mod in numpy pytest; do
    if ! python3 -c "import $mod" >/dev/null 2>&1; then
      echo "setup: installing $mod"
      pip_install "$mod" || { echo "setup: could not install $mod (python3 -m pip install $mod)" >&2; exit 1; }
    fi
  done
  # scikit-build-core: the build backend of the test package that compiles its DPU kernel
  # through UPMEM_HOME's CMake files (python/tests/test_sdk_package.py).
  if ! python3 -c "import scikit_build_core" >/dev/null 2>&1; then
    echo "setup: installing scikit-build-core"
    pip_install scikit-build-core || { echo "setup: could not install scikit-build-core (python3 -m pip install scikit-build-core)" >&2; exit 1; }
  fi
  here=$(cd "$(dirname "$0")/.." && pwd)
  installed=$(python3 -c 'import dpu, os; print(os.path.dirname(os.path.dirname(os.path.realpath(dpu.__file__))))' 2>/dev/null || true)
  if [ "$installed" != "$here/python" ]; then
    echo "setup: installing the Python dpu package (editable, from $here/python)"
    pip_install --no-deps -e "$here/python" ||
      echo "setup: warning: could not pip-install python/; use PYTHONPATH=$here/python (openpim env sets it)" >&2
  fi
fi
echo "setup: ok"
