#!/usr/bin/env python3
"""A tiny, slow reference interpreter of the DPU binary interface (docs/internals/dpu-abi.md),
used only to test the DPU runtime functionally while the real engine (crates/engine) is being
written. RV32I + the environment calls; tasklets interleave one instruction at a time
(round robin, or a random interleaving with --seed), which exercises the runtime's
synchronisation code at every instruction boundary.
No timing model: cycles = instructions issued.

    mini_dpu.py ELF [--host NAME=HEXBYTES]... [--dump NAME:LEN]... [--max-steps N]

Prints the printf log, then "fault: ..." or "done", then the dumped symbols (hex).
"""
import argparse
import struct
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from elfcheck import Elf  # noqa: E402

WRAM_SIZE = 0x10000
MRAM_BASE = 0x08000000
MRAM_SIZE = 64 * 1024 * 1024
IRAM_BASE = 0x80000000
ATOMIC_BASE = 0xF0000000


class Fault(Exception):
    pass


def sx(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def float_call(nr, a0, a1, a2, a3):
    """FADD32..FDIV32 (26..29) and FADD64..FDIV64 (30..33): returns [a0, a1] after the call.
    Python floats are IEEE doubles; a float operation done in double and rounded once to float
    is correctly rounded (double has more than 2 * 24 + 2 bits)."""
    single = nr < 30
    if single:
        x, y = (struct.unpack("<f", struct.pack("<I", v))[0] for v in (a0, a1))
    else:
        x, y = (struct.unpack("<d", struct.pack("<Q", lo | (hi << 32)))[0] for lo, hi in ((a0, a1), (a2, a3)))
    op = (nr - 26) % 4
    if op == 3 and y == 0.0:
        if x != x or x == 0.0:
            z = float("nan")
        else:
            z = float("inf") if (struct.pack("<d", x)[7] >> 7) == (struct.pack("<d", y)[7] >> 7) else -float("inf")
    else:
        z = (x + y, x - y, x * y, x / y if op == 3 else 0.0)[op]
    if z != z:
        return [0x7FC00000, a1] if single else [0, 0x7FF80000]
    if single:
        try:
            return [struct.unpack("<I", struct.pack("<f", z))[0], a1]
        except OverflowError:  # finite double that rounds to infinity as a float
            return [0xFF800000 if z < 0 else 0x7F800000, a1]
    bits = struct.unpack("<Q", struct.pack("<d", z))[0]
    return [bits & 0xFFFFFFFF, bits >> 32]


class Dpu:
    def __init__(self, elf):
        self.elf = elf
        self.wram = bytearray(WRAM_SIZE)
        self.mram = bytearray()  # grown lazily
        self.text = {}
        for seg in elf.segments:
            if seg["type"] != 1:
                continue
            data = elf.data[seg["offset"]:seg["offset"] + seg["filesz"]] + bytes(seg["memsz"] - seg["filesz"])
            a = seg["vaddr"]
            if a >= IRAM_BASE:
                self.text_base = a
                self.text_bytes = data
            elif a >= MRAM_BASE:
                self.mram_store(a, data)
            else:
                if a + len(data) > WRAM_SIZE:
                    raise Fault("program larger than WRAM")
                self.wram[a:a + len(data)] = data
        sym = lambda n: elf.symbols[n][0]
        self.nr = self.w32(sym("__sys_nr_tasklets"))
        if self.nr > 24:
            raise Fault("too many tasklets")
        table = sym("__sys_stack_table")
        self.stacks = [(self.w32(table + 8 * i), self.w32(table + 8 * i + 4)) for i in range(self.nr)]
        self.sym = sym
        self.log = []

    # ------------------------------------------------------------------ memory
    def mram_store(self, addr, data):
        off = addr - MRAM_BASE
        if off + len(data) > len(self.mram):
            self.mram.extend(bytes(off + len(data) - len(self.mram)))
        self.mram[off:off + len(data)] = data

    def mram_load(self, addr, n):
        off = addr - MRAM_BASE
        if off + n > len(self.mram):
            self.mram.extend(bytes(off + n - len(self.mram)))
        return bytes(self.mram[off:off + n])

    def w32(self, a):
        return struct.unpack_from("<I", self.wram, a)[0]

    def load(self, addr, n):
        if addr % n:
            raise Fault(f"misaligned load {addr:#x}")
        if addr + n <= WRAM_SIZE:
            return int.from_bytes(self.wram[addr:addr + n], "little")
        if MRAM_BASE <= addr < MRAM_BASE + MRAM_SIZE:
            return int.from_bytes(self.mram_load(addr, n), "little")
        raise Fault(f"load from {addr:#x}")

    def store(self, addr, n, v):
        if addr % n:
            raise Fault(f"misaligned store {addr:#x}")
        b = (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")
        if addr + n <= WRAM_SIZE:
            self.wram[addr:addr + n] = b
        elif MRAM_BASE <= addr < MRAM_BASE + MRAM_SIZE:
            self.mram_store(addr, b)
        else:
            raise Fault(f"store to {addr:#x}")

    def cstr(self, a):
        end = self.wram.index(b"\0", a)
        return self.wram[a:end].decode("latin-1")

    # ------------------------------------------------------------------ printf
    def printf(self, fmt_addr, ap):
        fmt = self.cstr(fmt_addr)
        out = []
        i = 0

        def arg(size):
            nonlocal ap
            if size == 8:
                ap = (ap + 7) & ~7
            v = self.load(ap, 4) if size == 4 else self.load(ap, 4) | (self.load(ap + 4, 4) << 32)
            ap += size
            return v

        while i < len(fmt):
            c = fmt[i]
            if c != "%":
                out.append(c)
                i += 1
                continue
            j = i + 1
            flags = ""
            while j < len(fmt) and fmt[j] in "-+ #0":
                flags += fmt[j]
                j += 1
            width = ""
            if j < len(fmt) and fmt[j] == "*":
                width = str(sx(arg(4), 32))
                j += 1
            while j < len(fmt) and fmt[j].isdigit():
                width += fmt[j]
                j += 1
            prec = None
            if j < len(fmt) and fmt[j] == ".":
                j += 1
                prec = ""
                if fmt[j] == "*":
                    prec = str(sx(arg(4), 32))
                    j += 1
                while j < len(fmt) and fmt[j].isdigit():
                    prec += fmt[j]
                    j += 1
            length = ""
            while j < len(fmt) and fmt[j] in "hlzjt":
                length += fmt[j]
                j += 1
            conv = fmt[j]
            j += 1
            spec = "%" + flags + width + ("." + prec if prec is not None else "")
            if conv == "%":
                out.append("%")
            elif conv in "diuxXoc":
                size = 8 if length in ("ll", "j") else 4
                v = arg(size)
                if conv in "di":
                    v = sx(v, 8 * size)
                    if length == "hh":
                        v = sx(v, 8)
                    elif length == "h":
                        v = sx(v, 16)
                elif length == "hh":
                    v &= 0xFF
                elif length == "h":
                    v &= 0xFFFF
                if conv == "c":
                    out.append((spec + "s") % chr(v & 0xFF))
                else:
                    out.append((spec + ("d" if conv in "diu" else conv)) % v)
            elif conv in "fFeEgG":
                v = struct.unpack("<d", struct.pack("<Q", arg(8)))[0]
                out.append((spec + conv) % v)
            elif conv == "s":
                out.append((spec + "s") % self.cstr(arg(4)))
            elif conv == "p":
                out.append("0x%x" % arg(4))
            else:
                raise Fault(f"printf: unsupported %{conv}")
            i = j
        self.log.append("".join(out))

    # ------------------------------------------------------------------ run
    def run(self, max_steps, seed=None):
        import random
        rng = random.Random(seed) if seed is not None else None
        n = self.nr
        regs = [[0] * 32 for _ in range(n)]
        pc = [self.elf.e_entry] * n
        for t in range(n):
            regs[t][2] = self.stacks[t][1]
            regs[t][4] = t
            regs[t][10] = t
        state = ["run"] * n  # run, sleep, exit
        pending = [False] * n
        atomic = [0] * 256
        perf = 0
        steps = 0
        text = self.text_bytes
        tb = self.text_base
        while True:
            if all(s == "exit" for s in state):
                return "done", steps
            if all(s != "run" for s in state):
                raise Fault("Deadlock")
            if rng is None:
                order = range(n)
            else:  # random interleaving: a random runnable tasklet runs 1..8 instructions
                t0 = rng.choice([t for t in range(n) if state[t] == "run"])
                order = [t0] * rng.randint(1, 8)
            for t in order:
                if state[t] != "run":
                    continue
                steps += 1
                if steps > max_steps:
                    raise Fault("step limit")
                r = regs[t]
                p = pc[t]
                off = p - tb
                if off < 0 or off + 4 > len(text):
                    raise Fault(f"tasklet {t}: fetch outside text {p:#x}")
                ins = int.from_bytes(text[off:off + 4], "little")
                op = ins & 0x7F
                rd = (ins >> 7) & 31
                f3 = (ins >> 12) & 7
                rs1 = (ins >> 15) & 31
                rs2 = (ins >> 20) & 31
                f7 = ins >> 25
                a = r[rs1]
                b = r[rs2]
                npc = p + 4
                val = None
                if op == 0x37:
                    val = ins & 0xFFFFF000
                elif op == 0x17:
                    val = (p + (ins & 0xFFFFF000)) & 0xFFFFFFFF
                elif op == 0x6F:
                    imm = sx(((ins >> 31) << 20) | (((ins >> 12) & 0xFF) << 12) | (((ins >> 20) & 1) << 11)
                             | (((ins >> 21) & 0x3FF) << 1), 21)
                    val = npc
                    npc = (p + imm) & 0xFFFFFFFF
                elif op == 0x67:
                    val = npc
                    npc = (a + sx(ins >> 20, 12)) & 0xFFFFFFFE
                elif op == 0x63:
                    imm = sx(((ins >> 31) << 12) | (((ins >> 7) & 1) << 11) | (((ins >> 25) & 0x3F) << 5)
                             | (((ins >> 8) & 0xF) << 1), 13)
                    sa, sb = sx(a, 32), sx(b, 32)
                    take = [a == b, a != b, None, None, sa < sb, sa >= sb, a < b, a >= b][f3]
                    if take is None:
                        raise Fault("illegal branch")
                    if take:
                        npc = (p + imm) & 0xFFFFFFFF
                elif op == 0x03:
                    addr = (a + sx(ins >> 20, 12)) & 0xFFFFFFFF
                    size = [1, 2, 4, 0, 1, 2][f3]
                    v = self.load(addr, size)
                    val = sx(v, 8 * size) & 0xFFFFFFFF if f3 < 3 else v
                elif op == 0x23:
                    addr = (a + sx(((ins >> 25) << 5) | ((ins >> 7) & 31), 12)) & 0xFFFFFFFF
                    self.store(addr, [1, 2, 4][f3], b)
                elif op in (0x13, 0x33):
                    if op == 0x13:
                        b = sx(ins >> 20, 12) & 0xFFFFFFFF
                        if f3 in (1, 5):
                            b &= 31
                    elif f7 == 1:
                        raise Fault("M extension instruction")
                    if f3 == 0:
                        val = a - b if (op == 0x33 and f7 == 0x20) else a + b
                    elif f3 == 1:
                        val = a << (b & 31)
                    elif f3 == 2:
                        val = int(sx(a, 32) < sx(b, 32))
                    elif f3 == 3:
                        val = int(a < b)
                    elif f3 == 4:
                        val = a ^ b
                    elif f3 == 5:
                        val = (sx(a, 32) >> (b & 31)) if (f7 & 0x20) else (a >> (b & 31))
                    elif f3 == 6:
                        val = a | b
                    else:
                        val = a & b
                    val &= 0xFFFFFFFF
                elif op == 0x0F:
                    pass
                elif op == 0x73 and ins == 0x73:
                    nr = r[17]
                    a0, a1, a2, a3 = r[10], r[11], r[12], r[13]
                    if nr == 0:
                        state[t] = "exit"
                    elif nr == 1:
                        return "halt", steps
                    elif nr in (2, 3):
                        mram, wram = (a0, a1) if nr == 2 else (a1, a0)
                        if a2 % 8 or not 8 <= a2 <= 2048 or mram % 8 or wram % 8 or wram + a2 > WRAM_SIZE \
                                or not MRAM_BASE <= mram <= MRAM_BASE + MRAM_SIZE - a2:
                            raise Fault(f"tasklet {t}: bad DMA mram={mram:#x} wram={wram:#x} n={a2}")
                        if nr == 2:
                            self.wram[wram:wram + a2] = self.mram_load(mram, a2)
                        else:
                            self.mram_store(mram, bytes(self.wram[wram:wram + a2]))
                    elif nr in (4, 5, 14):  # acquire, release, lock (an acquire)
                        bit = a0 - ATOMIC_BASE if a0 >= ATOMIC_BASE else a0
                        if not 0 <= bit < 256:
                            raise Fault("bad atomic bit")
                        old = atomic[bit]
                        acquire = nr != 5
                        atomic[bit] = 1 if acquire else 0
                        r[10] = (1 - old) if acquire else old
                    elif nr == 6:
                        if pending[t]:
                            pending[t] = False
                        else:
                            state[t] = "sleep"
                    elif nr == 7:
                        if a0 >= n:
                            raise Fault("resume of a bad tasklet")
                        if state[a0] == "sleep":
                            state[a0] = "run"
                            r[10] = 1
                        else:
                            pending[a0] = True
                            r[10] = 0
                    elif nr in (8, 9, 13):
                        v = steps - (perf if nr != 13 else 0)
                        if nr == 8 and a1:
                            perf = steps
                        r[10], r[11] = v & 0xFFFFFFFF, v >> 32
                    elif nr == 10:
                        self.printf(a0, a1)
                    elif nr == 11:
                        raise Fault(f"tasklet {t}: program fault code {a0} detail {a1}")
                    elif nr == 12:
                        r[10] = (r[2] - self.stacks[t][0]) & 0xFFFFFFFF
                    elif nr in (20, 21, 22):
                        if nr == 20:
                            r[10] = (a0 * a1) & 0xFFFFFFFF
                        elif nr == 21:
                            r[10], r[11] = (0xFFFFFFFF, a0) if a1 == 0 else (a0 // a1, a0 % a1)
                        else:
                            x, y = sx(a0, 32), sx(a1, 32)
                            if y == 0:
                                q, m = -1, x
                            elif x == -(1 << 31) and y == -1:
                                q, m = x, 0
                            else:
                                q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                                m = x - q * y
                            r[10], r[11] = q & 0xFFFFFFFF, m & 0xFFFFFFFF
                    elif nr in (23, 24, 25):
                        x = a0 | (a1 << 32)
                        y = a2 | (a3 << 32)
                        M = (1 << 64) - 1
                        if nr == 23:
                            q, m = (x * y) & M, a2 | (a3 << 32)
                            r[10], r[11] = q & 0xFFFFFFFF, q >> 32
                        else:
                            if nr == 24:
                                q, m = (M, x) if y == 0 else (x // y, x % y)
                            else:
                                xs, ys = sx(x, 64), sx(y, 64)
                                if ys == 0:
                                    q, m = -1, xs
                                elif xs == -(1 << 63) and ys == -1:
                                    q, m = xs, 0
                                else:
                                    q = abs(xs) // abs(ys) * (1 if (xs < 0) == (ys < 0) else -1)
                                    m = xs - q * ys
                            q &= M
                            m &= M
                            r[10], r[11], r[12], r[13] = q & 0xFFFFFFFF, q >> 32, m & 0xFFFFFFFF, m >> 32
                    elif 26 <= nr <= 33:
                        r[10], r[11] = float_call(nr, a0, a1, a2, a3)
                    else:
                        raise Fault(f"unknown ecall {nr}")
                else:
                    raise Fault(f"tasklet {t}: illegal instruction {ins:#010x} at {p:#x}")
                if val is not None and rd:
                    r[rd] = val & 0xFFFFFFFF
                    if rd == 2 and r[2] < self.stacks[t][0]:
                        raise Fault(f"tasklet {t}: stack overflow")
                pc[t] = npc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("elf")
    ap.add_argument("--host", action="append", default=[], help="NAME=HEX bytes written before the run")
    ap.add_argument("--dump", action="append", default=[], help="NAME:LEN printed after the run")
    ap.add_argument("--max-steps", type=int, default=20_000_000)
    ap.add_argument("--seed", type=int, default=None, help="random interleaving instead of round robin")
    o = ap.parse_args()
    elf = Elf(o.elf)
    try:
        dpu = Dpu(elf)
    except Fault as f:
        print(f"load error: {f}")
        sys.exit(2)
    hp = dpu.sym("__sys_heap_pointer")
    dpu.wram[hp:hp + 4] = struct.pack("<I", dpu.sym("__sys_heap_start"))
    for h in o.host:
        name, hexdata = h.split("=", 1)
        a = dpu.sym(name)
        data = bytes.fromhex(hexdata)
        if a >= MRAM_BASE:
            dpu.mram_store(a, data)
        else:
            dpu.wram[a:a + len(data)] = data
    status = 0
    try:
        how, steps = dpu.run(o.max_steps, o.seed)
        result = f"{how} ({steps} instructions)"
    except Fault as f:
        result = f"fault: {f}"
        status = 1
    for line in dpu.log:
        sys.stdout.write(line)
    print()
    print(result)
    for d in o.dump:
        name, n = d.split(":")
        a = dpu.sym(name)
        n = int(n)
        data = dpu.mram_load(a, n) if a >= MRAM_BASE else bytes(dpu.wram[a:a + n])
        print(f"{name}={data.hex()}")
    sys.exit(status)


if __name__ == "__main__":
    main()
