"""Compiling DPU programs with ``dpu-upmem-dpurte-clang`` (as the SDK's ``dpu.compiler``).

The compiler is looked for on ``PATH``, then in ``$OPENPIM_ROOT/sdk/bin``, then in
``<this package>/../../sdk/bin`` (the package inside an OpenPIM checkout).

Example::

    from dpu import DpuSet, compiler
    compiler.DEFAULT_DPU_COMPILER.compile(['task.c'], output='task.dpu',
                                          defines={'NR_TASKLETS': 16}, opt_lvl=compiler.O2)
    with DpuSet(4, binary='task.dpu') as dpus:
        ...
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Union

from .errors import DpuError

__all__ = [
    "O0",
    "O1",
    "O2",
    "O3",
    "Os",
    "Oz",
    "COMPILER_NAME",
    "Compiler",
    "CompilerNotFound",
    "find_compiler",
    "DEFAULT_DPU_COMPILER",
]

#: Optimisation levels (the flag passed to the compiler).
O0 = "-O0"
O1 = "-O1"
O2 = "-O2"
O3 = "-O3"
Os = "-Os"
Oz = "-Oz"

COMPILER_NAME = "dpu-upmem-dpurte-clang"


class CompilerNotFound(DpuError):
    """``dpu-upmem-dpurte-clang`` is neither on PATH nor in an OpenPIM checkout."""


def _candidates() -> List[str]:
    out = []
    root = os.environ.get("OPENPIM_ROOT")
    if root:
        out.append(os.path.join(root, "sdk", "bin", COMPILER_NAME))
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out.append(os.path.normpath(os.path.join(pkg_root, os.pardir, "sdk", "bin", COMPILER_NAME)))
    return out


def find_compiler() -> str:
    """The path of ``dpu-upmem-dpurte-clang`` (raises :class:`CompilerNotFound`)."""
    found = shutil.which(COMPILER_NAME)
    if found:
        return found
    for path in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise CompilerNotFound(
        f"{COMPILER_NAME} not found on PATH nor in "
        + ", ".join(_candidates())
        + '; run `eval "$(target/release/openpim env)"` in the OpenPIM checkout or set OPENPIM_ROOT'
    )


class Compiler:
    """A DPU C compiler command.

    Attributes:
        path: the compiler executable, or None to look it up (:func:`find_compiler`) at each
            compilation.
        verbose: print the command line and the compiler's output.
    """

    def __init__(self, path: Optional[str] = None, verbose: bool = False) -> None:
        self.path = path
        self.verbose = verbose

    def command(
        self,
        sources: Union[str, Sequence[str]],
        output: Optional[str] = None,
        includes: Sequence[str] = (),
        defines: Optional[Dict[str, Optional[object]]] = None,
        options: Sequence[str] = (),
        opt_lvl: Optional[str] = None,
        debug: bool = True,
    ) -> List[str]:
        """The command line :meth:`compile` runs."""
        args = [self.path or find_compiler()]
        if opt_lvl is not None:
            args.append(opt_lvl)
        if not debug:
            args.append("-g0")
        for name, value in (defines or {}).items():
            args.append(f"-D{name}" if value is None else f"-D{name}={value}")
        for inc in includes:
            args += ["-I", inc]
        args += [sources] if isinstance(sources, (str, os.PathLike)) else [os.fspath(s) for s in sources]
        args += list(options)
        if output is not None:
            args += ["-o", os.fspath(output)]
        return [os.fspath(a) for a in args]

    def compile(
        self,
        sources: Union[str, Sequence[str]],
        output: Optional[str] = None,
        includes: Sequence[str] = (),
        defines: Optional[Dict[str, Optional[object]]] = None,
        options: Sequence[str] = (),
        opt_lvl: Optional[str] = None,
        debug: bool = True,
        verbose: bool = False,
    ) -> "subprocess.CompletedProcess[str]":
        """Compiles (and links) DPU sources.

        Args:
            sources: the source files (C ``.c``, assembly ``.S``/``.s``).
            output: the output file (``-o``).
            includes: include directories (``-I``).
            defines: preprocessor macros (``-D``); ``{'NR_TASKLETS': 16}`` sets the number of
                tasklets; a None value defines the macro without a value.
            options: further compiler options.
            opt_lvl: one of :data:`O0` ... :data:`Oz`.
            debug: keep debug information (False adds ``-g0``).
            verbose: print the command line and the compiler's output.

        Raises:
            subprocess.CalledProcessError: the compiler failed (its output is in ``stderr``).
            CompilerNotFound: no compiler.
        """
        args = self.command(sources, output, includes, defines, options, opt_lvl, debug)
        loud = verbose or self.verbose
        if loud:
            print(" ".join(args), file=sys.stderr)
        result = subprocess.run(
            args,
            check=False,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        if loud:
            sys.stderr.write(result.stdout)
            sys.stderr.write(result.stderr)
        result.check_returncode()
        return result


#: The compiler found on PATH / in OpenPIM (looked up when it first compiles).
DEFAULT_DPU_COMPILER = Compiler()
