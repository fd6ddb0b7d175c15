"""The virtual clock for Python hosts.

C hosts see the virtual timeline through ``libopenpim_vclock.so`` (``docs/usage.md``, "The
virtual clock"); the Python interpreter reads the C library's clocks directly, so this module
puts the same readings behind the ``time`` module: from the first DPU allocation on,
``time.time``, ``time.perf_counter``, ``time.monotonic`` (and their ``_ns`` forms) return
libdpu's virtual time (``openpim_virtual_clock``), which is the real clock under
``OPENPIM_CLOCK=real`` / ``clock=real``. Code that took a reference before the first allocation
(``from time import perf_counter``) keeps the real clock.
"""

import ctypes
import threading
import time
from typing import Callable, Optional

CLOCK_REALTIME = 0
CLOCK_MONOTONIC = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_installed = False
_lock = threading.Lock()
#: The ``time`` module's own functions, kept for the real clock.
REAL = {
    name: getattr(time, name)
    for name in (
        "time",
        "time_ns",
        "perf_counter",
        "perf_counter_ns",
        "monotonic",
        "monotonic_ns",
    )
}


def _reader(lib: ctypes.CDLL, clock: int, real_ns: Callable[[], int]) -> Callable[[], int]:
    fn = lib.openpim_virtual_clock
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_Timespec)]

    def read_ns() -> int:
        ts = _Timespec()
        if fn(clock, ctypes.byref(ts)):
            return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
        return real_ns()

    return read_ns


def install(lib: Optional[ctypes.CDLL]) -> None:
    """Puts the virtual clock behind the ``time`` module (once; libdpu without the virtual
    clock leaves it alone)."""
    global _installed
    if _installed or lib is None or not hasattr(lib, "openpim_virtual_clock"):
        return
    with _lock:
        if _installed:
            return
        # perf_counter and monotonic are CLOCK_MONOTONIC in CPython on Linux.
        mono_ns = _reader(lib, CLOCK_MONOTONIC, REAL["monotonic_ns"])
        real_ns = _reader(lib, CLOCK_REALTIME, REAL["time_ns"])
        time.time_ns = real_ns
        time.time = lambda: real_ns() / 1e9
        time.monotonic_ns = mono_ns
        time.monotonic = lambda: mono_ns() / 1e9
        time.perf_counter_ns = mono_ns
        time.perf_counter = lambda: mono_ns() / 1e9
        _installed = True
