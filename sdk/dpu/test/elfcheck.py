#!/usr/bin/env python3
"""Inspect an OpenPIM DPU ELF (ELF32 RISC-V) for the checks of check.sh.

    elfcheck.py ELF sym NAME            -> value of symbol NAME (hex), exit 1 if absent
    elfcheck.py ELF word ADDR|SYMBOL[+OFF] [COUNT]  -> COUNT 32-bit words stored at the address
    elfcheck.py ELF bytes ADDR|SYMBOL[+OFF] COUNT   -> COUNT bytes (hex)
    elfcheck.py ELF layout              -> checks the address map of docs/internals/dpu-abi.md
"""
import struct
import sys

WRAM = (0x0, 0x10000)
MRAM = (0x08000000, 0x08000000 + 64 * 1024 * 1024)
IRAM = (0x80000000, 0x80000000 + 24 * 1024)
ATOMIC = (0xF0000000, 0xF0000000 + 256)


class Elf:
    def __init__(self, path):
        self.data = open(path, "rb").read()
        d = self.data
        if d[:4] != b"\x7fELF" or d[4] != 1 or d[5] != 1:
            raise SystemExit(f"{path}: not a little-endian ELF32 file")
        (self.e_type, self.e_machine, _, self.e_entry, e_phoff, e_shoff, _, _, e_phentsize, e_phnum,
         e_shentsize, e_shnum, e_shstrndx) = struct.unpack_from("<HHIIIIIHHHHHH", d, 16)
        self.sections = []
        for i in range(e_shnum):
            f = struct.unpack_from("<IIIIIIIIII", d, e_shoff + i * e_shentsize)
            self.sections.append(dict(name_off=f[0], type=f[1], flags=f[2], addr=f[3], offset=f[4],
                                      size=f[5], link=f[6], entsize=f[9]))
        shstr = self.sections[e_shstrndx]
        for s in self.sections:
            s["name"] = self._str(shstr["offset"], s["name_off"])
        self.segments = []
        for i in range(e_phnum):
            f = struct.unpack_from("<IIIIIIII", d, e_phoff + i * e_phentsize)
            self.segments.append(dict(type=f[0], offset=f[1], vaddr=f[2], paddr=f[3], filesz=f[4],
                                      memsz=f[5], flags=f[6]))
        self.symbols = {}
        for s in self.sections:
            if s["type"] == 2:  # SHT_SYMTAB
                strtab = self.sections[s["link"]]
                for j in range(s["size"] // 16):
                    name, value, size, info, other, shndx = struct.unpack_from("<IIIBBH", d, s["offset"] + j * 16)
                    n = self._str(strtab["offset"], name)
                    if n:
                        self.symbols[n] = (value, size, shndx)

    def _str(self, base, off):
        end = self.data.index(b"\0", base + off)
        return self.data[base + off:end].decode()

    def section(self, name):
        for s in self.sections:
            if s["name"] == name:
                return s
        return None

    def read(self, addr, n):
        for seg in self.segments:
            if seg["type"] == 1 and seg["vaddr"] <= addr and addr + n <= seg["vaddr"] + seg["memsz"]:
                out = bytearray(n)
                for k in range(n):
                    a = addr + k - seg["vaddr"]
                    out[k] = self.data[seg["offset"] + a] if a < seg["filesz"] else 0
                return bytes(out)
        raise SystemExit(f"address {addr:#x} (+{n}) is not in a loaded segment")

    def addr(self, spec):
        off = 0
        if "+" in spec:
            spec, o = spec.split("+", 1)
            off = int(o, 0)
        if spec in self.symbols:
            return self.symbols[spec][0] + off
        try:
            return int(spec, 0) + off
        except ValueError:
            raise SystemExit(f"unknown symbol {spec}")


def within(lo, hi, rng):
    return rng[0] <= lo and hi <= rng[1]


def layout(e):
    errors = []
    need = ["_start", "__sys_nr_tasklets", "__sys_stack_table", "__sys_heap_start", "__sys_heap_pointer",
            "__sys_used_mram_end", "__stdout_buffer_size", "__sys_wram_end", "__sys_iram_end",
            "__global_pointer$"]
    for n in need:
        if n not in e.symbols:
            errors.append(f"missing symbol {n}")
    if errors:
        return errors
    if e.e_machine != 243:
        errors.append("not a RISC-V ELF")
    if e.e_entry != e.symbols["_start"][0] or e.e_entry != IRAM[0]:
        errors.append(f"entry {e.e_entry:#x} is not _start at the IRAM base")
    placement = {".text": "iram", ".data": "wram", ".rodata": "wram", ".sdata": "wram", ".sbss": "wram",
                 ".bss": "wram", ".dpu_host": "wram", ".stacks": "wram", ".mram": "mram",
                 ".mram.noinit": "mram", ".atomic": "atomic"}
    bases = {"iram": (IRAM[0], 0xFFFFFFFF), "wram": (0, MRAM[0]), "mram": (MRAM[0], 0x80000000),
             "atomic": ATOMIC}
    for s in e.sections:
        if not (s["flags"] & 2):  # SHF_ALLOC
            continue
        where = placement.get(s["name"])
        if where is None:
            errors.append(f"unexpected allocated section {s['name']} at {s['addr']:#x}")
            continue
        if s["size"] and not within(s["addr"], s["addr"] + s["size"], bases[where]):
            errors.append(f"section {s['name']} at {s['addr']:#x} is not in {where}")
    if e.section(".stacks") is None:
        errors.append("no .stacks section")
    loads = [p for p in e.segments if p["type"] == 1]
    for p in loads:
        if p["vaddr"] != p["paddr"]:
            errors.append(f"segment at {p['vaddr']:#x}: physical address differs")
        lo, hi = p["vaddr"], p["vaddr"] + p["memsz"]
        if not (within(lo, hi, (0, MRAM[0])) or within(lo, hi, (MRAM[0], MRAM[1])) or lo >= IRAM[0] and hi < ATOMIC[0]):
            errors.append(f"PT_LOAD segment {lo:#x}..{hi:#x} crosses memories")
        for name in (".mram.noinit", ".atomic"):
            s = e.section(name)
            if s and s["size"] and lo <= s["addr"] < hi:
                errors.append(f"{name} is inside a PT_LOAD segment (must not be loaded)")
    sym = lambda n: e.symbols[n][0]
    if sym("__sys_used_mram_end") % 8:
        errors.append("__sys_used_mram_end is not 8-aligned")
    for name in (".mram", ".mram.noinit"):
        s = e.section(name)
        if s and s["addr"] + s["size"] > sym("__sys_used_mram_end"):
            errors.append(f"{name} ends after __sys_used_mram_end")
    if sym("__sys_heap_start") % 8:
        errors.append("__sys_heap_start is not 8-aligned")
    for s in e.sections:
        if s["flags"] & 2 and s["size"] and placement.get(s["name"]) == "wram":
            if s["addr"] + s["size"] > sym("__sys_heap_start"):
                errors.append(f"{s['name']} ends after __sys_heap_start")
    text = e.section(".text")
    if sym("__sys_iram_end") != text["addr"] + text["size"]:
        errors.append("__sys_iram_end is not the end of .text")
    n = struct.unpack("<I", e.read(sym("__sys_nr_tasklets"), 4))[0]
    if e.symbols["__sys_stack_table"][1] != 8 * n:
        errors.append("__sys_stack_table size is not 8 * NR_TASKLETS")
    table = struct.unpack(f"<{2 * n}I", e.read(sym("__sys_stack_table"), 8 * n))
    st = e.section(".stacks")
    for i in range(n):
        lo, hi = table[2 * i], table[2 * i + 1]
        if lo % 8 or hi % 8 or lo >= hi:
            errors.append(f"tasklet {i}: bad stack {lo:#x}..{hi:#x}")
        if not (st["addr"] <= lo and hi <= st["addr"] + st["size"]):
            errors.append(f"tasklet {i}: stack outside .stacks")
    hp = struct.unpack("<I", e.read(sym("__sys_heap_pointer"), 4))[0]
    if hp != sym("__sys_heap_start"):
        errors.append("__sys_heap_pointer does not start at __sys_heap_start")
    return errors


def main():
    e = Elf(sys.argv[1])
    cmd = sys.argv[2]
    if cmd == "sym":
        if sys.argv[3] not in e.symbols:
            sys.exit(1)
        print(f"{e.symbols[sys.argv[3]][0]:#x}")
    elif cmd == "word":
        count = int(sys.argv[4]) if len(sys.argv) > 4 else 1
        a = e.addr(sys.argv[3])
        print(" ".join(str(w) for w in struct.unpack(f"<{count}I", e.read(a, 4 * count))))
    elif cmd == "bytes":
        a = e.addr(sys.argv[3])
        print(e.read(a, int(sys.argv[4])).hex())
    elif cmd == "layout":
        errs = layout(e)
        for x in errs:
            print(x)
        sys.exit(1 if errs else 0)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
