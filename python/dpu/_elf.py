"""Names of the host-reachable symbols of a DPU program, read from its ELF file.

libdpu has no function that lists a program's symbols, so the package reads the ELF symbol
table itself and applies the loader's rule (docs/internals/dpu-abi.md): objects in
``.dpu_host``, in ``.mram``/``.mram.noinit`` (or ``.mram.*``), ``__sys_used_mram_end``, and
symbols at IRAM addresses. Addresses and sizes still come from ``dpu_get_symbol``.
"""

from __future__ import annotations

import struct
from typing import Optional, Set, Tuple

_IRAM_BASE = 0x8000_0000
_ATOMIC_BASE = 0xF000_0000
_MRAM_HEAP = "__sys_used_mram_end"

_SHT_SYMTAB = 2
_STT_SECTION = 3
_STT_FILE = 4
_SHN_UNDEF = 0
_SHN_LORESERVE = 0xFF00
_SHN_ABS = 0xFFF1


def _cstr(data: bytes, offset: int) -> str:
    end = data.find(b"\0", offset)
    if end < 0:
        end = len(data)
    return data[offset:end].decode("utf-8", "replace")


def reachable_symbols(data: bytes) -> Optional[Set[str]]:
    """The host-reachable symbol names of a DPU ELF image, or None if it cannot be read."""
    try:
        if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
            return None
        shoff = struct.unpack_from("<I", data, 0x20)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
        if shoff == 0 or shnum == 0 or shentsize < 40:
            return None

        def section(i: int) -> Tuple[int, int, int, int, int, int, int]:
            # name, type, addr, offset, size, link, entsize
            f = struct.unpack_from("<IIIIIIIIII", data, shoff + i * shentsize)
            return f[0], f[1], f[3], f[4], f[5], f[6], f[9]

        shstr = section(shstrndx)
        shstr_data = data[shstr[3] : shstr[3] + shstr[4]]
        section_names = [_cstr(shstr_data, section(i)[0]) for i in range(shnum)]

        names: Set[str] = set()
        for i in range(shnum):
            _, sh_type, _, off, size, link, entsize = section(i)
            if sh_type != _SHT_SYMTAB:
                continue
            entsize = entsize or 16
            strtab = section(link)
            strtab_data = data[strtab[3] : strtab[3] + strtab[4]]
            for at in range(off, off + size - entsize + 1, entsize):
                st_name, st_value, _st_size, st_info, _other, shndx = struct.unpack_from(
                    "<IIIBBH", data, at
                )
                if st_name == 0:
                    continue
                st_type = st_info & 0xF
                if st_type in (_STT_SECTION, _STT_FILE):
                    continue
                name = _cstr(strtab_data, st_name)
                if not name or name.startswith("$"):  # RISC-V mapping symbols ($x...)
                    continue
                if shndx == _SHN_ABS:
                    if name == _MRAM_HEAP:
                        names.add(name)
                    continue
                if shndx == _SHN_UNDEF or shndx >= _SHN_LORESERVE or shndx >= shnum:
                    continue
                sname = section_names[shndx]
                if (
                    sname == ".dpu_host"
                    or sname == ".mram"
                    or sname == ".mram.noinit"
                    or sname.startswith(".mram.")
                    or _IRAM_BASE <= st_value < _ATOMIC_BASE
                    or name == _MRAM_HEAP
                ):
                    names.add(name)
        return names
    except (struct.error, IndexError):
        return None
