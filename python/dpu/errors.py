"""The ``DpuError`` exception and the SDK's status codes."""

from __future__ import annotations

import enum
from typing import Optional, Union

__all__ = ["ErrorCode", "DpuError"]


class ErrorCode(enum.IntEnum):
    """``dpu_error_t``: the SDK's status codes (same values as ``dpu_error.h``)."""

    DPU_OK = 0
    DPU_ERR_INTERNAL = 1
    DPU_ERR_SYSTEM = 2
    DPU_ERR_DRIVER = 3
    DPU_ERR_ALLOCATION = 4
    DPU_ERR_INVALID_DPU_SET = 5
    DPU_ERR_INVALID_THREAD_ID = 6
    DPU_ERR_INVALID_NOTIFY_ID = 7
    DPU_ERR_INVALID_WRAM_ACCESS = 8
    DPU_ERR_INVALID_IRAM_ACCESS = 9
    DPU_ERR_INVALID_MRAM_ACCESS = 10
    DPU_ERR_INVALID_SYMBOL_ACCESS = 11
    DPU_ERR_MRAM_BUSY = 12
    DPU_ERR_TRANSFER_ALREADY_SET = 13
    DPU_ERR_NO_PROGRAM_LOADED = 14
    DPU_ERR_DIFFERENT_DPU_PROGRAMS = 15
    DPU_ERR_CORRUPTED_MEMORY = 16
    DPU_ERR_DPU_DISABLED = 17
    DPU_ERR_DPU_ALREADY_RUNNING = 18
    DPU_ERR_INVALID_MEMORY_TRANSFER = 19
    DPU_ERR_INVALID_LAUNCH_POLICY = 20
    DPU_ERR_DPU_FAULT = 21
    DPU_ERR_ELF_INVALID_FILE = 22
    DPU_ERR_ELF_NO_SUCH_FILE = 23
    DPU_ERR_ELF_NO_SUCH_SECTION = 24
    DPU_ERR_TIMEOUT = 25
    DPU_ERR_INVALID_PROFILE = 26
    DPU_ERR_UNKNOWN_SYMBOL = 27
    DPU_ERR_LOG_FORMAT = 28
    DPU_ERR_LOG_CONTEXT_MISSING = 29
    DPU_ERR_LOG_BUFFER_TOO_SMALL = 30
    DPU_ERR_VPD_INVALID_FILE = 31
    DPU_ERR_VPD_NO_REPAIR = 32
    DPU_ERR_NO_THREAD_PER_RANK = 33
    DPU_ERR_INVALID_BUFFER_SIZE = 34
    DPU_ERR_NONBLOCKING_SYNC_CALLBACK = 35
    DPU_ERR_TOO_MANY_TASKLETS = 36
    DPU_ERR_SG_TOO_MANY_BLOCKS = 37
    DPU_ERR_SG_LENGTH_MISMATCH = 38
    DPU_ERR_SG_NOT_ACTIVATED = 39
    DPU_ERR_SG_NOT_MRAM_SYMBOL = 40
    DPU_ERR_ASYNC_JOBS = 1 << 31


class DpuError(Exception):
    """Error raised by the API.

    Attributes:
        code: the SDK status (:class:`ErrorCode`) the C library returned, or the one that
            describes an error the Python layer detected itself (a host buffer too small is
            ``DPU_ERR_INVALID_BUFFER_SIZE``, a freed set ``DPU_ERR_INVALID_DPU_SET``...);
            None for misuse with no SDK counterpart (e.g. both ``nr_dpus`` and ``nr_ranks``).

        cause: when libdpu detected the error, its explanation naming the cause and the fix
            (``"dpu_alloc: unknown profile key 'nrRank' (valid keys: ...)"``, the line it
            prints on stderr, also under ``OPENPIM_QUIET=1``); else None.

    ``str(error)`` is the message. When libdpu detects the error it also prints one line on
    stderr naming the cause and the fix (``OPENPIM_QUIET=1`` silences it).
    """

    def __init__(
        self, message: str, code: Union[ErrorCode, int, None] = None, cause: Optional[str] = None
    ) -> None:
        super().__init__(message)
        self.cause: Optional[str] = cause
        if code is not None:
            try:
                code = ErrorCode(code)
            except ValueError:
                code = int(code)
        self.code: Optional[Union[ErrorCode, int]] = code

    @property
    def name(self) -> Optional[str]:
        """The status name (``'DPU_ERR_UNKNOWN_SYMBOL'``...), or None."""
        if isinstance(self.code, ErrorCode):
            return self.code.name
        return None if self.code is None else str(self.code)
