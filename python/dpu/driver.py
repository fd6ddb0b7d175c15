"""Features to drive DPUs: :class:`DpuSet` and its companions (the SDK's ``dpu.driver``)."""

from __future__ import annotations

import array
import ctypes
import io
import itertools
import os
import subprocess
import sys
import tempfile
import threading
from ctypes import byref, c_char, c_uint32, c_void_p
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
    Union,
)

from . import compiler, ffi, vclock
from .errors import DpuError, ErrorCode
from .ffi import DPU_ALLOCATE_ALL

__all__ = [
    "ALLOCATE_ALL",
    "DpuError",
    "DpuSet",
    "DpuProgram",
    "DpuSymbol",
    "DpuVariable",
]

#: Allocate every available DPU (``nr_dpus``) or rank (``nr_ranks``): ``DPU_ALLOCATE_ALL``.
ALLOCATE_ALL: int = DPU_ALLOCATE_ALL

T = TypeVar("T")
OneOrMore = Union[T, List[T]]

#: Host memory accepted by :meth:`DpuSet.copy`: any object with the buffer protocol
#: (``bytes``, ``bytearray``, ``memoryview``, ``array.array``, NumPy arrays, ...).
Buffer = Union[bytes, bytearray, memoryview, array.array, Any]
DpuCopyBuffer = Union[str, "DpuSymbol", Buffer, Sequence[Optional[Buffer]]]
#: A writable text or binary stream: any object with a ``write`` method.
LogStream = Any
DpuConstructorLogObject = Union[LogStream, List[Optional[LogStream]]]
DpuExecLogObject = Union[LogStream, List[Optional[LogStream]], Mapping["DpuSet", LogStream]]
DpuBinaryProgram = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
DpuSourceFile = Union[str, "os.PathLike[str]", io.IOBase, Any]
DpuSourceProgram = OneOrMore[DpuSourceFile]
DpuCallbackFunction = Callable[["DpuSet", int, Any], None]

_E = ErrorCode


def _check(status: int, what: str) -> None:
    if status != 0:
        # libdpu's explanation, when it is this call's (the line names the C function).
        cause = ffi.last_error()
        function = what.split("(", 1)[0].strip()
        if cause is not None and not cause.startswith(function + ":"):
            cause = None
        raise DpuError(f"{what}: {ffi.error_to_string(status)} ({_name(status)})", status, cause)


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"status {code}"


def _lib() -> ctypes.CDLL:
    return ffi.lib()


# ----------------------------------------------------------------------------- symbols


class DpuSymbol:
    """A symbol of a DPU program (``struct dpu_symbol_t``).

    Attributes:
        name: the symbol's name.
        c_symbol: the C ``struct dpu_symbol_t`` (address, size).
    """

    def __init__(self, name: str, c_symbol: Union[ffi.DpuSymbolT, Tuple[int, int]]) -> None:
        self.name = name
        if isinstance(c_symbol, ffi.DpuSymbolT):
            self.c_symbol = ffi.DpuSymbolT(c_symbol.address, c_symbol.size)
        else:
            address, size = c_symbol
            self.c_symbol = ffi.DpuSymbolT(address, size)

    def value(self) -> int:
        """The symbol's value: the DPU address of the variable (0x08000000 bit: MRAM,
        0x80000000 bit: IRAM, otherwise WRAM)."""
        return int(self.c_symbol.address)

    def size(self) -> int:
        """The symbol's size in bytes."""
        return int(self.c_symbol.size)

    def __repr__(self) -> str:
        return f"DpuSymbol({self.name!r}, address=0x{self.value():08x}, size={self.size()})"


class DpuProgram:
    """A DPU program loaded by :meth:`DpuSet.load`.

    Attributes:
        symbols: the symbols looked up so far, by name.
    """

    def __init__(self, c_program: c_void_p, symbol_names: Optional[Set[str]] = None) -> None:
        self.c_program = c_program
        self.symbols: Dict[str, DpuSymbol] = {}
        self._names = symbol_names

    def get_symbol(self, symbol: str) -> Optional[DpuSymbol]:
        """The host-reachable symbol named ``symbol``, or None if the program has none.

        Raises:
            DpuError: the program is no longer loaded (its DPUs were freed or reloaded).
        """
        found = self.symbols.get(symbol)
        if found is not None:
            return found
        if self._names is not None and symbol not in self._names:
            return None
        c_symbol = ffi.DpuSymbolT()
        status = _lib().dpu_get_symbol(self.c_program, symbol.encode(), byref(c_symbol))
        if status == _E.DPU_ERR_UNKNOWN_SYMBOL:
            return None
        _check(status, f"dpu_get_symbol({symbol!r})")
        found = DpuSymbol(symbol, c_symbol)
        self.symbols[symbol] = found
        return found

    def _knows(self, name: str) -> bool:
        return name in self.symbols or (self._names is not None and name in self._names)

    def symbol_names(self) -> List[str]:
        """The names of the program's host-reachable symbols (sorted)."""
        return sorted(self._names or ())

    def fetch_all_symbols(self) -> Dict[str, DpuSymbol]:
        """Looks up every host-reachable symbol; returns :attr:`symbols`."""
        for name in self.symbol_names():
            self.get_symbol(name)
        return self.symbols

    def __repr__(self) -> str:
        n = "?" if self._names is None else len(self._names)
        return f"<DpuProgram with {n} host-reachable symbols>"


def _unwrap(seq: Sequence[T]) -> Union[T, Sequence[T]]:
    return seq[0] if len(seq) == 1 else seq


class DpuVariable:
    """The value of a DPU symbol read through a symbol attribute (``dpu_set.my_var``).

    One ``memoryview`` per DPU of the set (a copy taken when the attribute was read). The typed
    accessors return, as the SDK does, a single value when there is one DPU and one element,
    a sequence of elements for one DPU, and a list with one entry per DPU otherwise.

    Write a symbol by assigning to the attribute: ``dpu_set.my_var = buffer`` (one buffer for
    every DPU) or ``dpu_set.my_var = [buf0, buf1, ...]`` (one per DPU), as :meth:`DpuSet.copy`.
    """

    def __init__(self, contents: List[memoryview]) -> None:
        self.contents = contents

    def _typed(self, fmt: str) -> Any:
        views = []
        for view in self.contents:
            raw: Any = view
            try:
                views.append(_unwrap(raw.cast(fmt)))
            except TypeError as e:
                raise DpuError(
                    f"a symbol of {view.nbytes} bytes is not a whole number of "
                    f"'{fmt}' elements ({e})",
                    _E.DPU_ERR_INVALID_BUFFER_SIZE,
                ) from None
        return _unwrap(views)

    def data(self) -> Union[memoryview, Sequence[memoryview]]:
        """The raw bytes (a memoryview; a list of them, one per DPU, for several DPUs)."""
        return _unwrap(self.contents)

    def int8(self) -> Any:
        return self._typed("b")

    def uint8(self) -> Any:
        return self._typed("B")

    def int16(self) -> Any:
        return self._typed("h")

    def uint16(self) -> Any:
        return self._typed("H")

    def int32(self) -> Any:
        return self._typed("i")

    def uint32(self) -> Any:
        return self._typed("I")

    def int64(self) -> Any:
        return self._typed("q")

    def uint64(self) -> Any:
        return self._typed("Q")

    def float(self) -> Any:
        return self._typed("f")

    def double(self) -> Any:
        return self._typed("d")

    def __repr__(self) -> str:
        sizes = {v.nbytes for v in self.contents}
        size = sizes.pop() if len(sizes) == 1 else sorted(sizes)
        return f"<DpuVariable: {len(self.contents)} DPU(s) x {size} bytes>"


# ----------------------------------------------------------------------------- host buffers


class _HostBuffer:
    """A host buffer as C sees it: address, length, and what keeps the memory alive."""

    __slots__ = ("address", "nbytes", "keep")

    def __init__(self, obj: Any, writable: bool) -> None:
        try:
            view = memoryview(obj)
        except TypeError:
            raise DpuError(
                f"a {type(obj).__name__} is not a host buffer: pass bytes, bytearray, "
                "memoryview, array.array or a NumPy array (or a str / DpuSymbol for the DPU side)",
                _E.DPU_ERR_INVALID_MEMORY_TRANSFER,
            ) from None
        if writable and view.readonly:
            raise DpuError(
                f"the destination {type(obj).__name__} is read-only: copy from the DPUs into a "
                "bytearray, a writable memoryview, an array.array or a NumPy array",
                _E.DPU_ERR_INVALID_MEMORY_TRANSFER,
            )
        self.nbytes = view.nbytes
        if self.nbytes == 0:
            self.keep: Any = (c_char * 1)()
        elif view.c_contiguous and not view.readonly:
            flat = view if (view.ndim == 1 and view.format == "B") else view.cast("B")
            self.keep = (c_char * self.nbytes).from_buffer(flat)
        elif writable:
            raise DpuError(
                f"the destination {type(obj).__name__} is not contiguous in memory: copy into a "
                "C-contiguous buffer (e.g. numpy.ascontiguousarray)",
                _E.DPU_ERR_INVALID_MEMORY_TRANSFER,
            )
        else:
            # Read-only or strided source: one copy, in the buffer's logical (C) order.
            data = view.cast("B") if view.c_contiguous else view.tobytes()
            self.keep = (c_char * self.nbytes).from_buffer_copy(data)
        self.address = ctypes.addressof(self.keep)


def _is_device(obj: Any) -> bool:
    return isinstance(obj, (str, DpuSymbol))


def _check_uint32(value: Any, what: str, code: ErrorCode) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DpuError(f"{what} must be an int (got {type(value).__name__})", code)
    if value < 0 or value > 0xFFFFFFFF:
        raise DpuError(f"{what} must be in 0..2^32-1 (got {value})", code)
    return value


# ----------------------------------------------------------------------------- callbacks


class _CallbackContext:
    __slots__ = ("dpu_set", "fn", "arg", "single_call", "remaining", "errors", "key")

    def __init__(self, dpu_set: "DpuSet", fn: DpuCallbackFunction, arg: Any, single_call: bool):
        self.dpu_set = dpu_set
        self.fn = fn
        self.arg = arg
        self.single_call = single_call
        self.remaining = 1 if single_call else max(1, len(dpu_set._ranks))
        self.errors: List[BaseException] = []
        self.key = 0


_callbacks_lock = threading.Lock()
_callbacks: Dict[int, _CallbackContext] = {}
_callback_ids = itertools.count(1)


def _trampoline(c_set: ffi.DpuSetT, index: int, arg: Optional[int]) -> int:
    with _callbacks_lock:
        ctx = _callbacks.get(arg or 0)
    if ctx is None:
        return int(_E.DPU_ERR_INTERNAL)
    status = 0
    try:
        if ctx.single_call or c_set.kind == ffi.DPU_SET_DPU:
            target = ctx.dpu_set
        else:
            target = ctx.dpu_set._rank_of(c_set, index)
        ctx.fn(target, int(index), ctx.arg)
    except BaseException as e:  # reported to the caller by call() / sync()
        ctx.errors.append(e)
        status = int(_E.DPU_ERR_SYSTEM)
    with _callbacks_lock:
        ctx.remaining -= 1
    return status


_C_TRAMPOLINE = ffi.CallbackFn(_trampoline)


# ----------------------------------------------------------------------------- DPU sets


class _Allocation:
    """What every set of one allocation shares."""

    def __init__(self) -> None:
        self.freed = False
        self.pending: List[Any] = []  # host buffers of asynchronous transfers, until sync
        self.callbacks: List[_CallbackContext] = []
        self.lock = threading.Lock()


_INTERNAL = frozenset(
    {
        "_c_set",
        "_alloc",
        "_top",
        "_parent_rank",
        "_kind",
        "_index",
        "_dpus",
        "_ranks",
        "_log",
        "_async_mode",
        "_program",
    }
)


class DpuSet:
    """A set of DPUs.

    Args:
        nr_dpus: the number of DPUs to allocate (:data:`ALLOCATE_ALL`: every DPU).
        nr_ranks: the number of ranks to allocate (:data:`ALLOCATE_ALL`: every rank); not
            together with ``nr_dpus``. With neither, every DPU is allocated.
        profile: the SDK's profile string (``"key=value,..."``; OpenPIM also takes
            ``hardware=NAME`` and ``maxCycles=N``, see docs/profiles.md).
        binary: a DPU program to load after the allocation: a path, or the ELF image as bytes.
        c_source: DPU C source to compile (``dpu-upmem-dpurte-clang -O2``) and load: a path,
            an open file / ``io.StringIO``, source text (a str with a newline that names no
            file), or a list of these.
        asm_source: DPU assembly source (RV32I on OpenPIM), in the same forms.
        log: where :meth:`exec` writes the DPUs' printf output: an object with ``write``
            (``sys.stdout``, ``io.StringIO``, a file), or a list with one per DPU.
        async_mode: default mode of :meth:`copy`, :meth:`exec` and :meth:`call`: when True
            they queue their work and return; :meth:`sync` waits for it.

    Raises:
        DpuError: the allocation or the load failed.

    A set is a context manager (``with DpuSet(...) as dpus:`` frees it at the end), has a
    length (its number of DPUs) and iterates over its DPUs (single-DPU sets). After a program
    is loaded, its host-reachable symbols are attributes: ``dpus.my_var`` reads the symbol
    of every DPU (a :class:`DpuVariable`), ``dpus.my_var = buffer`` writes it.
    """

    def __init__(
        self,
        nr_dpus: Optional[int] = None,
        nr_ranks: Optional[int] = None,
        profile: Optional[str] = "",
        binary: Optional[DpuBinaryProgram] = None,
        c_source: Optional[DpuSourceProgram] = None,
        asm_source: Optional[DpuSourceProgram] = None,
        log: Optional[DpuConstructorLogObject] = None,
        async_mode: bool = False,
    ) -> None:
        self._setup(None, None, "set", 0, log if not isinstance(log, list) else None, async_mode)
        if nr_dpus is not None and nr_ranks is not None:
            raise DpuError("give nr_dpus or nr_ranks, not both")
        if nr_dpus is None and nr_ranks is None:
            nr_dpus = ALLOCATE_ALL
        if profile is None:
            profile = ""
        if not isinstance(profile, str):
            raise DpuError(
                f"profile must be a str (got {type(profile).__name__})", _E.DPU_ERR_INVALID_PROFILE
            )
        _check_log_object(log, allow_list=True)

        lib = _lib()
        c_set = ffi.DpuSetT()
        if nr_dpus is not None:
            count = _check_uint32(nr_dpus, "nr_dpus", _E.DPU_ERR_ALLOCATION)
            _check(
                lib.dpu_alloc(count, profile.encode(), byref(c_set)),
                f"dpu_alloc({_count_label(count)}, {profile!r})",
            )
        else:
            count = _check_uint32(nr_ranks, "nr_ranks", _E.DPU_ERR_ALLOCATION)
            _check(
                lib.dpu_alloc_ranks(count, profile.encode(), byref(c_set)),
                f"dpu_alloc_ranks({_count_label(count)}, {profile!r})",
            )
        self._c_set = c_set
        vclock.install(lib)
        self._alloc = _Allocation()
        try:
            self._enumerate(log)
            if binary is not None or c_source is not None or asm_source is not None:
                self.load(binary, c_source, asm_source)
        except BaseException:
            lib.dpu_free(c_set)
            self._alloc.freed = True
            raise

    # ------------------------------------------------------------------ construction

    def _setup(
        self,
        top: Optional["DpuSet"],
        parent_rank: Optional["DpuSet"],
        kind: str,
        index: int,
        log: Any,
        async_mode: bool,
    ) -> None:
        d = self.__dict__
        d["_c_set"] = None
        d["_alloc"] = None if top is None else top._alloc
        d["_top"] = self if top is None else top
        d["_parent_rank"] = parent_rank
        d["_kind"] = kind
        d["_index"] = index
        d["_dpus"] = []
        d["_ranks"] = []
        d["_log"] = log
        d["_async_mode"] = bool(async_mode)
        d["_program"] = None

    @classmethod
    def _sub(
        cls,
        top: "DpuSet",
        parent_rank: Optional["DpuSet"],
        kind: str,
        index: int,
        c_set: ffi.DpuSetT,
    ) -> "DpuSet":
        obj = cls.__new__(cls)
        obj._setup(top, parent_rank, kind, index, top._log, top._async_mode)
        obj.__dict__["_c_set"] = c_set
        return obj

    def _enumerate(self, log: Optional[DpuConstructorLogObject]) -> None:
        lib = _lib()
        it = lib.dpu_set_rank_iterator_from(byref(self._c_set))
        while it.has_next:
            rank = DpuSet._sub(self, None, "rank", len(self._ranks), _copy_set(it.next))
            rank._ranks.append(rank)
            self._ranks.append(rank)
            dit = lib.dpu_set_dpu_iterator_from(byref(rank._c_set))
            while dit.has_next:
                dpu = DpuSet._sub(self, rank, "dpu", len(self._dpus), _copy_set(dit.next))
                dpu._dpus.append(dpu)
                dpu._ranks.append(rank)
                rank._dpus.append(dpu)
                self._dpus.append(dpu)
                lib.dpu_set_dpu_iterator_next(byref(dit))
            lib.dpu_set_rank_iterator_next(byref(it))
        if isinstance(log, list):
            if len(log) != len(self._dpus):
                raise DpuError(
                    f"the log list has {len(log)} entries for {len(self._dpus)} DPUs",
                    _E.DPU_ERR_INVALID_DPU_SET,
                )
            for dpu, stream in zip(self._dpus, log):
                dpu.__dict__["_log"] = stream

    # ------------------------------------------------------------------ protocol

    def __enter__(self) -> "DpuSet":
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if self._top is self and self._alloc is not None and not self._alloc.freed:
            self.free()

    def __del__(self) -> None:
        # Unreferenced allocations give their DPUs back (the C SDK only frees on dpu_free).
        try:
            d = self.__dict__
            alloc = d.get("_alloc")
            if d.get("_top") is self and alloc is not None and not alloc.freed:
                alloc.freed = True
                ffi.lib().dpu_free(d["_c_set"])
        except Exception:
            pass

    def __iter__(self) -> Iterator["DpuSet"]:
        return iter(list(self._dpus))

    def __len__(self) -> int:
        return len(self._dpus)

    def __repr__(self) -> str:
        state = " (freed)" if self._alloc is not None and self._alloc.freed else ""
        if self._kind == "dpu":
            return f"<DpuSet: DPU {self._index} (in rank {self._parent_rank._index}){state}>"
        if self._kind == "rank":
            return f"<DpuSet: rank {self._index}, {len(self._dpus)} DPUs{state}>"
        return f"<DpuSet: {len(self._dpus)} DPUs in {len(self._ranks)} ranks{state}>"

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: methods and attributes win over symbols.
        if name in _INTERNAL or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        program = self.__dict__.get("_program")
        if program is not None and program._knows(name):
            self._alive(f"reading symbol {name!r}")
        symbol = program.get_symbol(name) if program is not None else None
        if symbol is None:
            hint = (
                ""
                if program is not None
                else " (this set has no single program: none loaded, or its DPUs run different ones)"
            )
            raise AttributeError(f"'DpuSet' object has no attribute or DPU symbol {name!r}{hint}")
        return self._read_symbol(symbol)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _INTERNAL or name in self.__dict__ or hasattr(type(self), name):
            object.__setattr__(self, name, value)
            return
        program = self.__dict__.get("_program")
        if program is not None and program._knows(name):
            self._alive(f"writing symbol {name!r}")
        symbol = program.get_symbol(name) if program is not None else None
        if symbol is None:
            object.__setattr__(self, name, value)
        else:
            self._write_symbol(symbol, value)

    def __dir__(self) -> Iterable[str]:
        names = set(super().__dir__())
        program = self.__dict__.get("_program")
        if program is not None:
            names.update(n for n in program.symbol_names() if n.isidentifier())
        return sorted(names)

    # ------------------------------------------------------------------ structure

    def dpus(self) -> List["DpuSet"]:
        """The DPUs of the set, each a single-DPU :class:`DpuSet`, in rank order."""
        return list(self._dpus)

    def ranks(self) -> List["DpuSet"]:
        """The ranks of the set, each a :class:`DpuSet` (for a DPU: the rank holding it)."""
        return list(self._ranks)

    @property
    def program(self) -> Optional[DpuProgram]:
        """The program loaded on every DPU of this set by the last :meth:`load`, or None."""
        return self.__dict__.get("_program")

    def _rank_of(self, c_set: ffi.DpuSetT, index: int) -> "DpuSet":
        if c_set.kind == ffi.DPU_SET_RANKS and c_set.list.nr_ranks >= 1 and c_set.list.ranks:
            handle = c_set.list.ranks[0]
            for rank in self._ranks:
                rs = rank._c_set
                if rs.kind == ffi.DPU_SET_RANKS and rs.list.ranks and rs.list.ranks[0] == handle:
                    return rank
        if 0 <= index < len(self._ranks):
            return self._ranks[index]
        return self

    def _alive(self, what: str) -> None:
        if self._alloc is None or self._alloc.freed:
            raise DpuError(
                f"{what}: the DPU set was freed (free() or the end of its with-block)",
                _E.DPU_ERR_INVALID_DPU_SET,
            )

    def free(self) -> None:
        """Releases the DPUs (the set made by ``DpuSet(...)``, not one of its ranks or DPUs).

        Raises:
            DpuError: ``DPU_ERR_INVALID_DPU_SET`` on a rank or DPU sub-set, or when already freed.
        """
        if self._top is not self:
            raise DpuError(
                "free(): only the set made by DpuSet(...) can be freed, not one of its ranks or DPUs",
                _E.DPU_ERR_INVALID_DPU_SET,
            )
        self._alive("free()")
        status = _lib().dpu_free(self._c_set)
        self._alloc.freed = True
        self._alloc.pending.clear()
        self._release_callbacks(all_of_them=True)
        _check(status, "dpu_free")

    # ------------------------------------------------------------------ checkpoints

    def checkpoint_save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Saves every DPU of the set (IRAM, WRAM, MRAM, fault flag) to one file (OpenPIM).

        Pages of MRAM never written are not stored; a page equal to the same page of an
        earlier DPU is stored once. ``openpim checkpoint inspect FILE`` describes the file.

        Raises:
            DpuError: the file cannot be written (``DPU_ERR_SYSTEM``).
        """
        self._alive("checkpoint_save()")
        status = _lib().openpim_checkpoint_save_file(self._c_set, os.fsencode(path))
        _check(status, "openpim_checkpoint_save_file")

    def checkpoint_restore(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Restores every DPU of the set from a file written by :meth:`checkpoint_save`, in
        this process or another, on the same or other ranks (the set must have as many DPUs;
        load the program first). The next launch gives the results and cycle counts the
        saved run would have.

        Raises:
            DpuError: the file is damaged, truncated or for another number of DPUs
                (``DPU_ERR_SYSTEM``, naming the file); nothing was changed then.
        """
        self._alive("checkpoint_restore()")
        status = _lib().openpim_checkpoint_restore_file(self._c_set, os.fsencode(path))
        _check(status, "openpim_checkpoint_restore_file")

    # ------------------------------------------------------------------ programs

    def load(
        self,
        binary: Optional[DpuBinaryProgram] = None,
        c_source: Optional[DpuSourceProgram] = None,
        asm_source: Optional[DpuSourceProgram] = None,
    ) -> DpuProgram:
        """Loads a program on every DPU of the set.

        Args:
            binary: the DPU program: a path, or the ELF image (bytes).
            c_source: C source to compile and load (a path, a file object, source text, or a
                list of these); compiled with ``dpu-upmem-dpurte-clang -O2`` (1 tasklet unless
                the source is compiled yourself with :mod:`dpu.compiler` and ``NR_TASKLETS``).
            asm_source: assembly source (RV32I on OpenPIM; define ``main``), same forms.

        Returns:
            the loaded program; its symbols become attributes of the set.

        Raises:
            DpuError: no or several programs given, compilation failed, the file is missing
                (``DPU_ERR_ELF_NO_SUCH_FILE``) or not a DPU program (``DPU_ERR_ELF_INVALID_FILE``),
                the program does not fit, ...
        """
        self._alive("load()")
        has_source = c_source is not None or asm_source is not None
        if (binary is None) == (not has_source):
            raise DpuError("load() takes one program: binary=, or c_source= and/or asm_source=")
        lib = _lib()
        c_program = c_void_p()
        with tempfile.TemporaryDirectory(prefix="openpim-dpu-") as tmp:
            if has_source:
                binary = _compile_sources(tmp, c_source, asm_source)
            if isinstance(binary, (str, os.PathLike)):
                path = os.fspath(binary)
                status = lib.dpu_load(self._c_set, os.fsencode(path), byref(c_program))
                _check(status, f"dpu_load({path!r})")
            else:
                raw_binary: Any = binary
                try:
                    image = bytes(memoryview(raw_binary))
                except TypeError:
                    raise DpuError(
                        f"binary must be a path or bytes (got {type(binary).__name__})",
                        _E.DPU_ERR_ELF_INVALID_FILE,
                    ) from None
                buf = (c_char * max(1, len(image))).from_buffer_copy(image or b"\0")
                status = lib.dpu_load_from_memory(
                    self._c_set, ctypes.addressof(buf), len(image), byref(c_program)
                )
                _check(status, "dpu_load_from_memory")
        program = DpuProgram(c_program, _program_symbols(c_program))
        self._set_program(program)
        return program

    def _set_program(self, program: DpuProgram) -> None:
        # Every set of the allocation whose DPUs all run the new program gets it; sets that
        # hold some of these DPUs and others no longer run one program.
        loaded = {id(d) for d in self._dpus}
        top = self._top
        for s in [top] + top._ranks + top._dpus:
            ids = {id(d) for d in s._dpus}
            if ids and ids <= loaded:
                s.__dict__["_program"] = program
            elif ids & loaded:
                s.__dict__["_program"] = None

    # ------------------------------------------------------------------ transfers

    def _xfer_flags(self, async_mode: Optional[bool]) -> int:
        if async_mode is None:
            async_mode = self._async_mode
        return ffi.DPU_XFER_ASYNC if async_mode else ffi.DPU_XFER_DEFAULT

    def copy(
        self,
        dst: DpuCopyBuffer,
        src: DpuCopyBuffer,
        size: Optional[int] = None,
        offset: int = 0,
        async_mode: Optional[bool] = None,
    ) -> None:
        """Copies between the host and the DPUs.

        One side is a DPU symbol (its name, or a :class:`DpuSymbol`), the other host memory:
        one buffer (to the DPUs: the same bytes to every DPU; from the DPUs: each DPU writes
        it, meaningful on a single DPU) or a list with one buffer per DPU (None skips a DPU).

        Args:
            dst: where to copy to.
            src: where to copy from.
            size: bytes to copy; default: the host buffer's size (all per-DPU buffers must
                then have the same size).
            offset: byte offset in the DPU symbol.
            async_mode: override the set's mode; asynchronous copies keep the host buffers
                until :meth:`sync` (do not modify or read them before).

        Raises:
            DpuError: unknown symbol (``DPU_ERR_UNKNOWN_SYMBOL``), offset + size past the symbol
                (``DPU_ERR_INVALID_SYMBOL_ACCESS``), host buffer smaller than ``size``
                (``DPU_ERR_INVALID_BUFFER_SIZE``), misaligned WRAM access, a list of the wrong
                length, a read-only destination, no program loaded, the set was freed, ...
        """
        self._alive("copy()")
        to_dpu = _is_device(dst)
        if to_dpu == _is_device(src):
            raise DpuError(
                "copy() is between the host and the DPUs: exactly one of dst and src must be a "
                "DPU symbol (a str or a DpuSymbol), the other host memory",
                _E.DPU_ERR_INVALID_MEMORY_TRANSFER,
            )
        device: Any
        host: Any
        device, host = (dst, src) if to_dpu else (src, dst)
        offset = _check_uint32(offset, "offset", _E.DPU_ERR_INVALID_SYMBOL_ACCESS)
        if size is not None:
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise DpuError(
                    f"size must be a non-negative int (got {size!r})", _E.DPU_ERR_INVALID_BUFFER_SIZE
                )
        flags = self._xfer_flags(async_mode)
        lib = _lib()
        if isinstance(device, DpuSymbol):
            sym_arg: Any = device.c_symbol
            label = device.name
            by_symbol = True
        else:
            sym_arg = device.encode()
            label = device
            by_symbol = False
        direction = ffi.DPU_XFER_TO_DPU if to_dpu else ffi.DPU_XFER_FROM_DPU

        per_dpu = isinstance(host, (list, tuple))
        if per_dpu and len(host) == 1 and len(self._dpus) == 1:
            per_dpu = False
            host = host[0]
            if host is None:
                return

        if per_dpu:
            if len(host) != len(self._dpus):
                raise DpuError(
                    f"copy(): {len(host)} host buffers for a set of {len(self._dpus)} DPUs",
                    _E.DPU_ERR_INVALID_DPU_SET,
                )
            buffers = [None if b is None else _HostBuffer(b, writable=not to_dpu) for b in host]
            sizes = {b.nbytes for b in buffers if b is not None}
            if not sizes:
                return
            if size is None:
                if len(sizes) > 1:
                    raise DpuError(
                        f"copy(): the host buffers have different sizes ({sorted(sizes)} bytes); "
                        "pass size=",
                        _E.DPU_ERR_INVALID_BUFFER_SIZE,
                    )
                size = sizes.pop()
            elif min(sizes) < size:
                raise DpuError(
                    f"copy(): a host buffer holds {min(sizes)} bytes, less than size={size}",
                    _E.DPU_ERR_INVALID_BUFFER_SIZE,
                )
            _check(lib.dpu_prepare_xfer(self._c_set, None), "dpu_prepare_xfer")
            for dpu, b in zip(self._dpus, buffers):
                if b is not None:
                    _check(lib.dpu_prepare_xfer(dpu._c_set, b.address), "dpu_prepare_xfer")
            keep: Any = buffers
            self._push(direction, by_symbol, sym_arg, label, offset, size, flags)
        else:
            b = _HostBuffer(host, writable=not to_dpu)
            if size is None:
                size = b.nbytes
            elif b.nbytes < size:
                raise DpuError(
                    f"copy(): the host buffer holds {b.nbytes} bytes, less than size={size}",
                    _E.DPU_ERR_INVALID_BUFFER_SIZE,
                )
            keep = b
            if to_dpu:
                fn = lib.dpu_broadcast_to_symbol if by_symbol else lib.dpu_broadcast_to
                _check(
                    fn(self._c_set, sym_arg, offset, b.address, size, flags),
                    f"dpu_broadcast_to({label!r}, offset={offset}, size={size})",
                )
            else:
                _check(lib.dpu_prepare_xfer(self._c_set, b.address), "dpu_prepare_xfer")
                self._push(direction, by_symbol, sym_arg, label, offset, size, flags)
        if flags & ffi.DPU_XFER_ASYNC:
            with self._alloc.lock:
                self._alloc.pending.append(keep)

    def _push(
        self,
        direction: int,
        by_symbol: bool,
        sym_arg: Any,
        label: str,
        offset: int,
        size: int,
        flags: int,
    ) -> None:
        lib = _lib()
        fn = lib.dpu_push_xfer_symbol if by_symbol else lib.dpu_push_xfer
        status = fn(self._c_set, direction, sym_arg, offset, size, flags)
        if status != 0:
            lib.dpu_prepare_xfer(self._c_set, None)  # forget our buffers
            way = "to" if direction == ffi.DPU_XFER_TO_DPU else "from"
            _check(status, f"dpu_push_xfer({way} {label!r}, offset={offset}, size={size})")

    def _read_symbol(self, symbol: DpuSymbol) -> DpuVariable:
        self._alive(f"reading symbol {symbol.name!r}")
        window, skip = _widened(symbol)
        bufs = [bytearray(window.size()) for _ in self._dpus]
        if bufs:
            self.copy(bufs if len(bufs) > 1 else bufs[0], window, async_mode=False)
        size = symbol.size()
        return DpuVariable([memoryview(b)[skip : skip + size] for b in bufs])

    def _write_symbol(self, symbol: DpuSymbol, value: Any) -> None:
        window, skip = _widened(symbol)
        align = _alignment(symbol)
        per_dpu = isinstance(value, (list, tuple))
        values = list(value) if per_dpu else [value]
        plain = window is symbol and all(
            v is None or _nbytes(v) % align == 0 for v in values
        )
        if plain:
            self.copy(symbol, value, async_mode=False)
            return
        # A WRAM (IRAM) write whose address or length is not a multiple of 4 (8) bytes: the C
        # API only moves whole words, so read the words around it, patch them, write them back.
        if not per_dpu:
            values = values * len(self._dpus)
        if len(values) != len(self._dpus):
            raise DpuError(
                f"{len(values)} host buffers for a set of {len(self._dpus)} DPUs",
                _E.DPU_ERR_INVALID_DPU_SET,
            )
        patches = [None if v is None else _HostBuffer(v, writable=False) for v in values]
        for p in patches:
            if p is not None and p.nbytes > symbol.size():
                raise DpuError(
                    f"{p.nbytes} bytes do not fit in symbol {symbol.name!r} ({symbol.size()} bytes)",
                    _E.DPU_ERR_INVALID_SYMBOL_ACCESS,
                )
        words = [None if p is None else bytearray(window.size()) for p in patches]
        self.copy(words, window, async_mode=False)
        for w, p in zip(words, patches):
            if w is not None and p is not None:
                w[skip : skip + p.nbytes] = ctypes.string_at(p.address, p.nbytes)
        self.copy(window, words, async_mode=False)

    # ------------------------------------------------------------------ execution

    def exec(
        self,
        log: Optional[DpuExecLogObject] = None,
        async_mode: Optional[bool] = None,
    ) -> None:
        """Runs the loaded program on every DPU of the set.

        Args:
            log: where to write the DPUs' printf output after the run (overrides the
                constructor's ``log``): a stream (any object with ``write``), a list with one
                stream (or None) per DPU, or a dict ``{dpu: stream}``. Each DPU's output is
                preceded by the SDK's ``=== DPU#0x<id> ===`` line. Without any log, nothing
                is written (:meth:`log` writes it later).
            async_mode: override the set's mode; asynchronous runs return at once (``log`` is
                ignored; :meth:`sync` waits, then :meth:`log` prints).

        Raises:
            DpuError: ``DPU_ERR_DPU_FAULT`` when a DPU faulted (the cause is on stderr; the
                output up to the fault can be read with :meth:`log`), ``DPU_ERR_NO_PROGRAM_LOADED``,
                a log object without ``write``, ...
        """
        self._alive("exec()")
        if async_mode is None:
            async_mode = self._async_mode
        lib = _lib()
        if async_mode:
            _check(lib.dpu_launch(self._c_set, ffi.DPU_ASYNCHRONOUS), "dpu_launch")
            return
        _check_log_object(log, allow_list=True, allow_dict=True)
        _check(lib.dpu_launch(self._c_set, ffi.DPU_SYNCHRONOUS), "dpu_launch")
        self._write_logs(log, None)

    def log(self, stream: Optional[DpuExecLogObject] = None) -> None:
        """Writes the DPUs' printf output of their last run.

        Args:
            stream: as ``log`` of :meth:`exec`; default: the constructor's ``log``, else
                ``sys.stdout``.
        """
        self._alive("log()")
        _check_log_object(stream, allow_list=True, allow_dict=True)
        self._write_logs(stream, sys.stdout)

    def _write_logs(self, log: Optional[DpuExecLogObject], default: Any) -> None:
        streams: Dict[int, Any] = {
            id(d): (d._log if d._log is not None else default) for d in self._dpus
        }
        if log is not None:
            if isinstance(log, list):
                if len(log) != len(self._dpus):
                    raise DpuError(
                        f"the log list has {len(log)} entries for {len(self._dpus)} DPUs",
                        _E.DPU_ERR_INVALID_DPU_SET,
                    )
                for d, s in zip(self._dpus, log):
                    if s is not None:
                        streams[id(d)] = s
            elif isinstance(log, Mapping):
                for d, s in log.items():
                    if not isinstance(d, DpuSet) or id(d) not in streams:
                        raise DpuError(
                            f"log dict key {d!r} is not a DPU of this set",
                            _E.DPU_ERR_INVALID_DPU_SET,
                        )
                    streams[id(d)] = s
            else:
                for d in self._dpus:
                    streams[id(d)] = log
        for d in self._dpus:
            stream = streams[id(d)]
            if stream is None:
                continue
            status, data = ffi.read_log(d._c_set)
            _check(status, "dpu_log_read")
            _write_stream(stream, data)

    def sync(self) -> None:
        """Waits for the set's asynchronous work (copies, runs, callbacks).

        Raises:
            DpuError: the first error of the asynchronous work (e.g. ``DPU_ERR_DPU_FAULT``);
                an exception raised by an asynchronous :meth:`call` callback is re-raised.
        """
        self._alive("sync()")
        status = _lib().dpu_sync(self._c_set)
        if self._top is self:
            with self._alloc.lock:
                self._alloc.pending.clear()
        errors = self._release_callbacks(all_of_them=self._top is self)
        if errors:
            raise errors[0]
        _check(status, "dpu_sync")

    def call(
        self,
        fn: DpuCallbackFunction,
        arg: Any = None,
        async_mode: Optional[bool] = None,
        is_blocking: bool = True,
        single_call: bool = False,
    ) -> None:
        """Calls ``fn(dpu_set, index, arg)`` on the set (``dpu_callback``).

        Args:
            fn: the function; it receives a rank of the set and the rank's index (once per
                rank), or the whole set and 0 with ``single_call``.
            arg: passed to ``fn``.
            async_mode: override the set's mode: queue the call after the set's pending work
                and return (:meth:`sync` waits for it).
            is_blocking: whether the ranks wait for ``fn`` before their next work (False is
                only valid with ``async_mode``: ``DPU_ERR_NONBLOCKING_SYNC_CALLBACK`` otherwise).
            single_call: call ``fn`` once for the whole set instead of once per rank.

        Raises:
            DpuError: the C call failed; an exception raised by ``fn`` is re-raised (by
                :meth:`sync` for asynchronous calls).
        """
        self._alive("call()")
        if not callable(fn):
            raise DpuError(f"call(): fn must be callable (got {type(fn).__name__})")
        if async_mode is None:
            async_mode = self._async_mode
        flags = ffi.DPU_CALLBACK_DEFAULT
        if async_mode:
            flags |= ffi.DPU_CALLBACK_ASYNC
        if not is_blocking:
            flags |= ffi.DPU_CALLBACK_NONBLOCKING
        if single_call:
            flags |= ffi.DPU_CALLBACK_SINGLE_CALL
        ctx = _CallbackContext(self, fn, arg, single_call)
        with _callbacks_lock:
            ctx.key = next(_callback_ids)
            _callbacks[ctx.key] = ctx
        status = _lib().dpu_callback(self._c_set, _C_TRAMPOLINE, c_void_p(ctx.key), flags)
        if async_mode and status == 0:
            with self._alloc.lock:
                self._alloc.callbacks.append(ctx)
            return
        with _callbacks_lock:
            _callbacks.pop(ctx.key, None)
        if ctx.errors:
            raise ctx.errors[0]
        _check(status, "dpu_callback")

    def _release_callbacks(self, all_of_them: bool) -> List[BaseException]:
        errors: List[BaseException] = []
        with self._alloc.lock:
            keep = []
            for ctx in self._alloc.callbacks:
                if all_of_them or ctx.remaining <= 0:
                    with _callbacks_lock:
                        _callbacks.pop(ctx.key, None)
                    errors.extend(ctx.errors)
                else:
                    keep.append(ctx)
            self._alloc.callbacks = keep
        return errors

    # ------------------------------------------------------------------ checkpoints

    def checkpoint(self, iram: bool = True, mram: bool = True, wram: bool = True) -> List[bytes]:
        """The state of every DPU of the set (``dpu_checkpoint_save``: the DPU's registers and
        flags, and IRAM, MRAM, WRAM as asked), serialized: one ``bytes`` per DPU, in
        :meth:`dpus` order. :meth:`restore` puts it back (also in another set or process)."""
        lib = _lib()
        flags = _checkpoint_flags(iram, mram, wram)
        out: List[bytes] = []
        for d in self.dpus():
            context = (c_char * _CONTEXT_BYTES)()
            _check(lib.dpu_checkpoint_save(d._c_set, flags, context), "dpu_checkpoint_save")
            try:
                data, size = c_void_p(), ctypes.c_uint32()
                _check(
                    lib.dpu_checkpoint_serialize(context, byref(data), byref(size)),
                    "dpu_checkpoint_serialize",
                )
                out.append(ctypes.string_at(data.value, size.value))
                ffi.libc().free(data)
            finally:
                lib.dpu_checkpoint_free(context)
        return out

    def restore(
        self, context: Sequence[bytes], iram: bool = True, mram: bool = True, wram: bool = True
    ) -> None:
        """Puts back what :meth:`checkpoint` saved: one serialized context per DPU of the set."""
        dpus = self.dpus()
        if len(context) != len(dpus):
            raise DpuError(
                f"restore: the checkpoint holds {len(context)} DPU(s), the set has {len(dpus)}",
                _E.DPU_ERR_INVALID_DPU_SET,
            )
        lib = _lib()
        flags = _checkpoint_flags(iram, mram, wram)
        for d, data in zip(dpus, context):
            raw = bytes(data)
            buf = (c_char * max(1, len(raw))).from_buffer_copy(raw or b"\0")
            ctx = (c_char * _CONTEXT_BYTES)()
            _check(
                lib.dpu_checkpoint_deserialize(buf, len(raw), ctx), "dpu_checkpoint_deserialize"
            )
            try:
                _check(lib.dpu_checkpoint_restore(d._c_set, flags, ctx), "dpu_checkpoint_restore")
            finally:
                lib.dpu_checkpoint_free(ctx)


# ----------------------------------------------------------------------------- helpers

#: Room for a ``struct dpu_context_t`` (dpu_types.h; under 200 bytes on 64-bit hosts).
_CONTEXT_BYTES = 512


def _checkpoint_flags(iram: bool, mram: bool, wram: bool) -> int:
    # dpu_checkpoint_flags_t: INTERNAL 0x1, IRAM 0x2, MRAM 0x8, WRAM 0x10
    return 0x1 | (0x2 if iram else 0) | (0x8 if mram else 0) | (0x10 if wram else 0)


def _program_symbols(c_program: c_void_p) -> Optional[Set[str]]:
    """The loaded program's host-reachable symbol names (``openpim_program_symbols``)."""
    names, count = c_void_p(), ctypes.c_uint32()
    if _lib().openpim_program_symbols(c_program, byref(names), byref(count)) != 0:
        return None
    try:
        found: Set[str] = set()
        offset = 0
        for _ in range(count.value):
            name = ctypes.string_at(names.value + offset)
            found.add(name.decode("utf-8", "replace"))
            offset += len(name) + 1
        return found
    finally:
        ffi.libc().free(names)


def _alignment(symbol: DpuSymbol) -> int:
    """Transfer granularity of a symbol's memory: IRAM 8, MRAM 1, WRAM 4 bytes."""
    address = symbol.value()
    if address & 0x8000_0000:
        return 8
    return 1 if address & 0x0800_0000 else 4


def _nbytes(obj: Any) -> int:
    try:
        return memoryview(obj).nbytes
    except TypeError:
        return 0  # not a buffer: copy() reports it


def _widened(symbol: DpuSymbol) -> Tuple[DpuSymbol, int]:
    """The symbol itself, or the word-aligned window around a WRAM (4) / IRAM (8) symbol
    whose address or size is not aligned, with the symbol's offset in it."""
    address, size = symbol.value(), symbol.size()
    align = _alignment(symbol)
    if align == 1:
        return symbol, 0
    start = address & ~(align - 1)
    end = (address + size + align - 1) & ~(align - 1)
    if start == address and end == address + size:
        return symbol, 0
    return DpuSymbol(symbol.name, (start, end - start)), address - start


def _count_label(count: int) -> str:
    return "ALLOCATE_ALL" if count == ALLOCATE_ALL else str(count)


def _copy_set(c_set: ffi.DpuSetT) -> ffi.DpuSetT:
    return ffi.DpuSetT.from_buffer_copy(c_set)


def _check_log_object(log: Any, allow_list: bool, allow_dict: bool = False) -> None:
    if log is None:
        return
    if isinstance(log, list) and allow_list:
        items: Iterable[Any] = log
    elif isinstance(log, Mapping) and allow_dict:
        items = log.values()
    else:
        items = [log]
    for s in items:
        if s is not None and not callable(getattr(s, "write", None)):
            raise DpuError(
                f"a log must be an object with a write() method (got {type(s).__name__})"
            )


def _write_stream(stream: Any, data: bytes) -> None:
    if not data:
        return
    if isinstance(stream, (io.RawIOBase, io.BufferedIOBase)):
        stream.write(data)
        return
    text = data.decode("utf-8", "replace")
    try:
        stream.write(text)
    except TypeError:
        stream.write(data)


def _source_path(tmp: str, src: Any, index: int, suffix: str) -> str:
    if isinstance(src, os.PathLike):
        return os.fspath(src)
    if isinstance(src, str):
        if os.path.isfile(src) or "\n" not in src:
            return src  # a path (a missing one is reported by the compiler)
        text = src
    elif isinstance(src, (bytes, bytearray)):
        text = bytes(src).decode("utf-8")
    elif callable(getattr(src, "read", None)):
        text = src.read()
        if isinstance(text, bytes):
            text = text.decode("utf-8")
    else:
        raise DpuError(
            f"a DPU source must be a path, a file object or source text (got {type(src).__name__})"
        )
    path = os.path.join(tmp, f"src{index}{suffix}")
    with open(path, "w") as f:
        f.write(text)
    return path


def _compile_sources(tmp: str, c_source: Any, asm_source: Any) -> str:
    sources: List[str] = []
    for group, suffix in ((c_source, ".c"), (asm_source, ".S")):
        if group is None:
            continue
        items = group if isinstance(group, list) else [group]
        for src in items:
            sources.append(_source_path(tmp, src, len(sources), suffix))
    output = os.path.join(tmp, "main.dpu")
    options = ["-nostartfiles"] if c_source is None else []
    try:
        compiler.DEFAULT_DPU_COMPILER.compile(
            sources, output=output, options=options, opt_lvl=compiler.O2
        )
    except subprocess.CalledProcessError as e:
        detail = (e.stderr or "").strip()
        raise DpuError(
            "compiling the DPU source failed"
            + (":\n" + detail if detail else f" (exit status {e.returncode})"),
        ) from None
    return output
