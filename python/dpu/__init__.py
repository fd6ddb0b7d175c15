"""The UPMEM SDK's Python API (``dpu``) for OpenPIM, over ``libdpu.so`` with ctypes.

Example::

    from dpu import DpuSet
    import sys

    with DpuSet(nr_dpus=4, binary='build/task.dpu', log=sys.stdout) as dpus:
        dpus.copy('input', bytearray(1024))          # the same bytes to every DPU
        dpus.exec()                                  # runs, then prints each DPU's printf output
        results = [bytearray(8) for _ in dpus]
        dpus.copy(results, 'output')                 # one buffer per DPU
"""

from . import compiler, ffi
from .driver import (
    ALLOCATE_ALL,
    DpuProgram,
    DpuSet,
    DpuSymbol,
    DpuVariable,
)
from .errors import DpuError, ErrorCode

__all__ = [
    "ALLOCATE_ALL",
    "DpuError",
    "DpuProgram",
    "DpuSet",
    "DpuSymbol",
    "DpuVariable",
    "ErrorCode",
    "compiler",
    "ffi",
]

__version__ = "0.1.0"
