"""Low-level ctypes bindings to OpenPIM's ``libdpu.so`` (the UPMEM SDK's C host API).

Most programs use :class:`dpu.DpuSet`; this module is the thin layer under it. The C
functions keep their SDK names (``dpu_alloc``, ``dpu_push_xfer``, ...) and are reached through
:func:`lib`, which finds and loads ``libdpu.so`` on first use:

1. ``$OPENPIM_ROOT/target/release/libdpu.so`` (``openpim env`` sets ``OPENPIM_ROOT``),
2. every directory of ``$LD_LIBRARY_PATH``,
3. ``<this package>/../../target/release/libdpu.so`` (the package inside an OpenPIM checkout).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    Union,
    c_bool,
    c_char_p,
    c_size_t,
    c_uint32,
    c_void_p,
)
from typing import List, Optional, Tuple

from .errors import DpuError, ErrorCode

__all__ = [
    "DPU_ALLOCATE_ALL",
    "DPU_MRAM_HEAP_POINTER_NAME",
    "ErrorCode",
    "LibraryNotFound",
    "DpuSetT",
    "DpuSymbolT",
    "RankIterator",
    "DpuIterator",
    "CallbackFn",
    "lib",
    "libc",
    "library_candidates",
    "error_to_string",
]

#: ``DPU_ALLOCATE_ALL``: allocate every available DPU (or rank).
DPU_ALLOCATE_ALL = 0xFFFFFFFF
#: Name of the symbol marking the start of the free MRAM.
DPU_MRAM_HEAP_POINTER_NAME = "__sys_used_mram_end"

LIBRARY_NAME = "libdpu.so"

# dpu_set_kind_t
DPU_SET_RANKS = 0
DPU_SET_DPU = 1
# dpu_launch_policy_t
DPU_ASYNCHRONOUS = 0
DPU_SYNCHRONOUS = 1
# dpu_xfer_t
DPU_XFER_TO_DPU = 0
DPU_XFER_FROM_DPU = 1
# dpu_xfer_flags_t
DPU_XFER_DEFAULT = 0
DPU_XFER_NO_RESET = 1
DPU_XFER_ASYNC = 2
DPU_XFER_PARALLEL = 4
# dpu_callback_flags_t
DPU_CALLBACK_DEFAULT = 0
DPU_CALLBACK_ASYNC = 1
DPU_CALLBACK_NONBLOCKING = 2
DPU_CALLBACK_SINGLE_CALL = 4
DPU_CALLBACK_PARALLEL = 8


# ----------------------------------------------------------------------------- C types


class _DpuSetList(Structure):
    _fields_ = [("nr_ranks", c_uint32), ("ranks", POINTER(c_void_p))]


class _DpuSetUnion(Union):
    _fields_ = [("list", _DpuSetList), ("dpu", c_void_p)]


class DpuSetT(Structure):
    """``struct dpu_set_t`` (24 bytes on LP64, passed by value)."""

    _anonymous_ = ("u",)
    _fields_ = [("kind", c_uint32), ("u", _DpuSetUnion)]


class DpuSymbolT(Structure):
    """``struct dpu_symbol_t``."""

    _fields_ = [("address", c_uint32), ("size", c_uint32)]


class RankIterator(Structure):
    """``struct dpu_set_rank_iterator_t``."""

    _fields_ = [
        ("set", DpuSetT),
        ("count", c_uint32),
        ("has_next", c_bool),
        ("next", DpuSetT),
    ]


class DpuIterator(Structure):
    """``struct dpu_set_dpu_iterator_t``."""

    _fields_ = [
        ("rank_iterator", RankIterator),
        ("rank", DpuSetT),
        ("count", c_uint32),
        ("has_next", c_bool),
        ("next", DpuSetT),
    ]


#: ``dpu_error_t (*)(struct dpu_set_t, uint32_t, void *)``
CallbackFn = CFUNCTYPE(c_uint32, DpuSetT, c_uint32, c_void_p)

# (name, restype, argtypes)
_PROTOTYPES = [
    ("dpu_alloc", c_uint32, [c_uint32, c_char_p, POINTER(DpuSetT)]),
    ("dpu_alloc_ranks", c_uint32, [c_uint32, c_char_p, POINTER(DpuSetT)]),
    ("dpu_free", c_uint32, [DpuSetT]),
    ("openpim_checkpoint_save_file", c_uint32, [DpuSetT, c_char_p]),
    ("openpim_checkpoint_restore_file", c_uint32, [DpuSetT, c_char_p]),
    ("dpu_get_nr_dpus", c_uint32, [DpuSetT, POINTER(c_uint32)]),
    ("dpu_get_nr_ranks", c_uint32, [DpuSetT, POINTER(c_uint32)]),
    ("dpu_load", c_uint32, [DpuSetT, c_char_p, POINTER(c_void_p)]),
    ("dpu_load_from_memory", c_uint32, [DpuSetT, c_void_p, c_size_t, POINTER(c_void_p)]),
    ("dpu_get_symbol", c_uint32, [c_void_p, c_char_p, POINTER(DpuSymbolT)]),
    ("dpu_launch", c_uint32, [DpuSetT, c_uint32]),
    ("dpu_status", c_uint32, [DpuSetT, POINTER(c_bool), POINTER(c_bool)]),
    ("dpu_sync", c_uint32, [DpuSetT]),
    ("dpu_copy_to", c_uint32, [DpuSetT, c_char_p, c_uint32, c_void_p, c_size_t]),
    ("dpu_copy_from", c_uint32, [DpuSetT, c_char_p, c_uint32, c_void_p, c_size_t]),
    ("dpu_copy_to_symbol", c_uint32, [DpuSetT, DpuSymbolT, c_uint32, c_void_p, c_size_t]),
    ("dpu_copy_from_symbol", c_uint32, [DpuSetT, DpuSymbolT, c_uint32, c_void_p, c_size_t]),
    ("dpu_prepare_xfer", c_uint32, [DpuSetT, c_void_p]),
    ("dpu_push_xfer", c_uint32, [DpuSetT, c_uint32, c_char_p, c_uint32, c_size_t, c_uint32]),
    (
        "dpu_push_xfer_symbol",
        c_uint32,
        [DpuSetT, c_uint32, DpuSymbolT, c_uint32, c_size_t, c_uint32],
    ),
    ("dpu_broadcast_to", c_uint32, [DpuSetT, c_char_p, c_uint32, c_void_p, c_size_t, c_uint32]),
    (
        "dpu_broadcast_to_symbol",
        c_uint32,
        [DpuSetT, DpuSymbolT, c_uint32, c_void_p, c_size_t, c_uint32],
    ),
    ("dpu_callback", c_uint32, [DpuSetT, CallbackFn, c_void_p, c_uint32]),
    ("dpu_log_read", c_uint32, [DpuSetT, c_void_p]),
    ("dpu_error_to_string", c_void_p, [c_uint32]),
    ("dpu_set_rank_iterator_from", RankIterator, [POINTER(DpuSetT)]),
    ("dpu_set_rank_iterator_next", None, [POINTER(RankIterator)]),
    ("dpu_set_dpu_iterator_from", DpuIterator, [POINTER(DpuSetT)]),
    ("dpu_set_dpu_iterator_next", None, [POINTER(DpuIterator)]),
    ("dpu_checkpoint_save", c_uint32, [DpuSetT, c_uint32, c_void_p]),
    ("dpu_checkpoint_restore", c_uint32, [DpuSetT, c_uint32, c_void_p]),
    ("dpu_checkpoint_serialize", c_uint32, [c_void_p, POINTER(c_void_p), POINTER(c_uint32)]),
    ("dpu_checkpoint_deserialize", c_uint32, [c_void_p, c_uint32, c_void_p]),
    ("dpu_checkpoint_free", c_uint32, [c_void_p]),
    ("openpim_program_symbols", c_uint32, [c_void_p, POINTER(c_void_p), POINTER(c_uint32)]),
    ("openpim_last_error", c_char_p, []),
]


def last_error() -> Optional[str]:
    """libdpu's explanation of this thread's last error (``FUNC: CAUSE``), or None."""
    raw = lib().openpim_last_error()
    return raw.decode("utf-8", "replace") if raw else None


class LibraryNotFound(DpuError):
    """``libdpu.so`` could not be found or loaded."""


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_libc: Optional[ctypes.CDLL] = None


def _package_root() -> str:
    """The directory holding the ``dpu`` package (``<openpim>/python``)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def library_candidates() -> List[str]:
    """The paths where ``libdpu.so`` is looked for, in order."""
    out: List[str] = []
    root = os.environ.get("OPENPIM_ROOT")
    if root:
        out.append(os.path.join(root, "target", "release", LIBRARY_NAME))
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if d:
            out.append(os.path.join(d, LIBRARY_NAME))
    out.append(
        os.path.normpath(
            os.path.join(_package_root(), os.pardir, "target", "release", LIBRARY_NAME)
        )
    )
    seen = set()
    unique = []
    for p in out:
        if p not in seen:
            seen.add(p)
            unique.append(p)
    return unique


def _load() -> ctypes.CDLL:
    tried = library_candidates()
    errors = []
    for path in tried:
        if not os.path.isfile(path):
            continue
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:  # present but not loadable
            errors.append(f"{path}: {e}")
            continue
        for name, restype, argtypes in _PROTOTYPES:
            fn = getattr(handle, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return handle
    detail = ("; ".join(errors) + "; ") if errors else ""
    raise LibraryNotFound(
        f"OpenPIM's {LIBRARY_NAME} was not found ({detail}looked for "
        + ", ".join(tried)
        + "). Build OpenPIM (`make build` in the OpenPIM checkout) and run "
        + '`eval "$(target/release/openpim env)"`, or set OPENPIM_ROOT to the checkout.',
        ErrorCode.DPU_ERR_SYSTEM,
    )


def lib() -> ctypes.CDLL:
    """``libdpu.so``, loaded on first use (raises :class:`LibraryNotFound`)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = _load()
    return _lib


def libc() -> ctypes.CDLL:
    """The C library (for ``open_memstream``, ``fclose``, ``free``)."""
    global _libc
    if _libc is None:
        with _lock:
            if _libc is None:
                try:
                    handle = ctypes.CDLL(None)
                    handle.open_memstream  # noqa: B018 - probe
                except (OSError, AttributeError):
                    name = ctypes.util.find_library("c")
                    handle = ctypes.CDLL(name)
                handle.open_memstream.restype = c_void_p
                handle.open_memstream.argtypes = [POINTER(c_void_p), POINTER(c_size_t)]
                handle.fclose.restype = ctypes.c_int
                handle.fclose.argtypes = [c_void_p]
                handle.free.restype = None
                handle.free.argtypes = [c_void_p]
                _libc = handle
    return _libc


def error_to_string(code: int) -> str:
    """``dpu_error_to_string``: the SDK's description of a status code."""
    p = lib().dpu_error_to_string(code)
    if not p:
        return "unknown error"
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        libc().free(p)


def read_log(c_set: DpuSetT) -> Tuple[int, bytes]:
    """``dpu_log_read`` into memory: (status, bytes written)."""
    c = libc()
    buf = c_void_p()
    size = c_size_t()
    stream = c.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not stream:
        return int(ErrorCode.DPU_ERR_SYSTEM), b""
    try:
        status = lib().dpu_log_read(c_set, stream)
    finally:
        c.fclose(stream)
    try:
        data = ctypes.string_at(buf.value, size.value) if buf.value and size.value else b""
    finally:
        if buf.value:
            c.free(buf)
    return status, data


__all__ += [
    "read_log",
    "DPU_SET_RANKS",
    "DPU_SET_DPU",
    "DPU_ASYNCHRONOUS",
    "DPU_SYNCHRONOUS",
    "DPU_XFER_TO_DPU",
    "DPU_XFER_FROM_DPU",
    "DPU_XFER_DEFAULT",
    "DPU_XFER_NO_RESET",
    "DPU_XFER_ASYNC",
    "DPU_XFER_PARALLEL",
    "DPU_CALLBACK_DEFAULT",
    "DPU_CALLBACK_ASYNC",
    "DPU_CALLBACK_NONBLOCKING",
    "DPU_CALLBACK_SINGLE_CALL",
    "DPU_CALLBACK_PARALLEL",
]
