#!/usr/bin/env python3
"""Writes sdk/dpu/include/built_ins_isa.h: the SDK's DPU instruction builtins
(`__builtin_<op>_<form>(dc, ra, ...)`, as the UPMEM SDK's built_ins.h names them) as RV32I
inline assembly.

Each builtin is one DPU instruction. Its RV32I body (straight line, register-only ops) ends
with the hint `slti zero, zero, 1024 + k` (k = the body's instruction count), which the
engine's decoder turns into one issue slot for the whole body (docs/internals/dpu-abi.md,
"Issue-slot corrections", rule 10): the builtin costs what the DPU instruction costs.
The semantics are the DPU's (shift amounts use the low 5 bits; 8x8 multiplies take the low
(l) or high (h) byte of each operand, signed (s) or unsigned (u)).

    python3 sdk/dpu/tools/gen_built_ins.py > sdk/dpu/include/built_ins_isa.h
"""

HINT_BASE = 1024


def body(lines):
    return [l.strip() for l in lines if l.strip()]


# --- bodies: operands %[a], %[b] (registers), %[d] the result, %[t], %[u] scratch ----------
def mul8(x, y):
    """DPU mul_<x>_<y>: byte x of a times byte y of b."""
    out = []
    ext = {
        "sl": ["slli %[t], %[a], 24", "srai %[t], %[t], 24"],
        "ul": ["andi %[t], %[a], 255"],
        "sh": ["slli %[t], %[a], 16", "srai %[t], %[t], 24"],
        "uh": ["srli %[t], %[a], 8", "andi %[t], %[t], 255"],
    }
    out += ext[x]
    out += ["mv %[u], %[b]"] if y[1] == "l" else ["srli %[u], %[b], 8"]
    out += ["li %[d], 0"]
    # shift-and-add over the 8 bits of the multiplier byte; bit 7 of a signed byte weighs -128
    for j in range(8):
        last = j == 7
        out += [
            "andi %[v], %[u], 1",
            "neg %[v], %[v]",
            "and %[v], %[v], %[t]",
            ("sub" if (last and y[0] == "s") else "add") + " %[d], %[d], %[v]",
        ]
        if not last:
            out += ["slli %[t], %[t], 1", "srli %[u], %[u], 1"]
    return out


CLZ_STEPS = []
for bits in (16, 8, 4, 2, 1):
    CLZ_STEPS += [
        f"srli %[v], %[t], {32 - bits}",
        "seqz %[v], %[v]",
        f"slli %[v], %[v], {bits.bit_length() - 1}",
        "sll %[t], %[t], %[v]",
        "add %[d], %[d], %[v]",
    ]
CLZ_TAIL = ["srli %[v], %[t], 31", "xori %[v], %[v], 1", "add %[d], %[d], %[v]"]


def clz_of(prep):
    return prep + ["li %[d], 0"] + CLZ_STEPS + CLZ_TAIL


def const(reg, value):
    return [f"lui {reg}, %%hi({value})", f"addi {reg}, {reg}, %%lo({value})"]


CAO = (
    ["srli %[v], %[a], 1"] + const("%[u]", "0x55555555") + [
        "and %[v], %[v], %[u]",
        "sub %[t], %[a], %[v]",
    ] + const("%[u]", "0x33333333") + [
        "srli %[v], %[t], 2",
        "and %[v], %[v], %[u]",
        "and %[t], %[t], %[u]",
        "add %[t], %[t], %[v]",
        "srli %[v], %[t], 4",
        "add %[t], %[t], %[v]",
    ] + const("%[u]", "0x0f0f0f0f") + [
        "and %[t], %[t], %[u]",
        "srli %[v], %[t], 8",
        "add %[t], %[t], %[v]",
        "srli %[v], %[t], 16",
        "add %[t], %[t], %[v]",
        "andi %[d], %[t], 63",
    ]
)

CMPB4 = ["xor %[t], %[a], %[b]", "li %[d], 0"]
for i in range(4):
    CMPB4 += [
        f"srli %[v], %[t], {8 * i}" if i else "mv %[v], %[t]",
        "andi %[v], %[v], 255",
        "seqz %[v], %[v]",
    ] + ([f"slli %[v], %[v], {8 * i}"] if i else []) + ["or %[d], %[d], %[v]"]

# Two-operand ops (dc = op(ra, rb)); the rri form loads the immediate into %[b] first.
BINARY = {
    "add": ["add %[d], %[a], %[b]"],
    "sub": ["sub %[d], %[a], %[b]"],
    "rsub": ["sub %[d], %[b], %[a]"],
    "and": ["and %[d], %[a], %[b]"],
    "or": ["or %[d], %[a], %[b]"],
    "xor": ["xor %[d], %[a], %[b]"],
    "nand": ["and %[d], %[a], %[b]", "not %[d], %[d]"],
    "nor": ["or %[d], %[a], %[b]", "not %[d], %[d]"],
    "nxor": ["xor %[d], %[a], %[b]", "not %[d], %[d]"],
    "andn": ["not %[d], %[a]", "and %[d], %[d], %[b]"],
    "orn": ["not %[d], %[a]", "or %[d], %[d], %[b]"],
    "lsl": ["sll %[d], %[a], %[b]"],
    "lsr": ["srl %[d], %[a], %[b]"],
    "asr": ["sra %[d], %[a], %[b]"],
    "rol": ["sll %[t], %[a], %[b]", "neg %[u], %[b]", "srl %[u], %[a], %[u]", "or %[d], %[t], %[u]"],
    "ror": ["srl %[t], %[a], %[b]", "neg %[u], %[b]", "sll %[u], %[a], %[u]", "or %[d], %[t], %[u]"],
    "lsl1": ["li %[t], 1", "sll %[t], %[t], %[b]", "addi %[t], %[t], -1", "sll %[d], %[a], %[b]", "or %[d], %[d], %[t]"],
    "lsr1": ["li %[t], -1", "srl %[t], %[t], %[b]", "not %[t], %[t]", "srl %[d], %[a], %[b]", "or %[d], %[d], %[t]"],
    "lslx": ["andi %[t], %[b], 31", "li %[u], 31", "sub %[u], %[u], %[t]", "srli %[d], %[a], 1", "srl %[d], %[d], %[u]"],
    "lsrx": ["andi %[t], %[b], 31", "li %[u], 31", "sub %[u], %[u], %[t]", "slli %[d], %[a], 1", "sll %[d], %[d], %[u]"],
    "cmpb4": CMPB4,
}
for x in ("sl", "ul", "sh", "uh"):
    for y in ("sl", "ul", "sh", "uh"):
        BINARY[f"mul_{x}_{y}"] = mul8(x, y)
RRI = [k for k in BINARY if not k.startswith("mul_") and k != "cmpb4"]

# One-operand ops (dc = op(ra)).
UNARY = {
    "clz": clz_of(["mv %[t], %[a]"]),
    "clo": clz_of(["not %[t], %[a]"]),
    "cls": clz_of(["srai %[t], %[a], 31", "xor %[t], %[t], %[a]"]),
    "cao": CAO,
    "extsb": ["slli %[d], %[a], 24", "srai %[d], %[d], 24"],
    "extub": ["andi %[d], %[a], 255"],
    "extsh": ["slli %[d], %[a], 16", "srai %[d], %[d], 16"],
    "extuh": ["slli %[d], %[a], 16", "srli %[d], %[d], 16"],
    "move": ["mv %[d], %[a]"],
}

# Shift-and-add with an immediate shift (dc = ra op (rb shift imm)).
SHIFT_ADD = {
    "lsl_add": ["slli %[t], %[b], %[s]", "add %[d], %[a], %[t]"],
    "lsl_sub": ["slli %[t], %[b], %[s]", "sub %[d], %[a], %[t]"],
    "lsr_add": ["srli %[t], %[b], %[s]", "add %[d], %[a], %[t]"],
    "rol_add": ["slli %[t], %[b], %[s]", "srli %[u], %[b], (32 - %[s]) & 31", "or %[t], %[t], %[u]",
                "add %[d], %[a], %[t]"],
}


def asm_text(lines):
    lines = body(lines)
    text = "".join(f'"{l}\\n\\t" ' for l in lines)
    return text + '"slti zero, zero, %[k]"', len(lines)


OUT_REGS = '[d] "=&r"(__d), [t] "=&r"(__t), [u] "=&r"(__u), [v] "=&r"(__v)'


def emit_binary(name, lines):
    text, k = asm_text(lines)
    return f"""static __inline__ uint32_t __openpim_{name}(uint32_t __a, uint32_t __b)
{{
    uint32_t __d, __t, __u, __v;
    __asm__({text}
            : {OUT_REGS}
            : [a] "r"(__a), [b] "r"(__b), [k] "i"({HINT_BASE + k}));
    return __d;
}}
"""


def emit_unary(name, lines):
    text, k = asm_text(lines)
    return f"""static __inline__ uint32_t __openpim_{name}(uint32_t __a)
{{
    uint32_t __d, __t, __u, __v;
    __asm__({text}
            : {OUT_REGS}
            : [a] "r"(__a), [k] "i"({HINT_BASE + k}));
    return __d;
}}
"""


def main():
    print("""/* OpenPIM DPU: the DPU instruction builtins of the UPMEM SDK's built_ins.h,
 * __builtin_<op>_<form>(dc, ra, ...), as RV32I inline assembly (generated by
 * sdk/dpu/tools/gen_built_ins.py; do not edit). Each stands for one DPU instruction and
 * costs one issue slot: its body ends with the hint `slti zero, zero, 1024 + k` that makes
 * the engine issue the k ops of the body as one (docs/internals/dpu-abi.md, rule 10).
 * Forms: _rrr(dc, ra, rb), _rri(dc, ra, imm), _rr(dc, ra), _rrri(dc, ra, rb, shift). */
#ifndef _OPENPIM_BUILT_INS_ISA_H
#define _OPENPIM_BUILT_INS_ISA_H
#include <stdint.h>

/* The immediate of an _rri form: a 32-bit constant, loaded by lui + addi inside the body. */
#define __OPENPIM_RRI(op, dc, ra, imm) \\
    ((dc) = __openpim_##op##_rri((uint32_t)(ra), (int32_t)(imm)))
""")
    for name, lines in BINARY.items():
        print(emit_binary(name, lines))
        print(f"#define __builtin_{name}_rrr(dc, ra, rb) ((dc) = __openpim_{name}((uint32_t)(ra), (uint32_t)(rb)))\n")
    for name in RRI:
        lines = const("%[b]", "%[i]") + BINARY[name]
        text, k = asm_text(lines)
        print(f"""#define __openpim_{name}_rri(__a, __imm) __extension__({{ \\
    uint32_t __d, __t, __u, __v, __b; \\
    __asm__({text} \\
            : {OUT_REGS}, [b] "=&r"(__b) \\
            : [a] "r"(__a), [i] "i"(__imm), [k] "i"({HINT_BASE + k})); \\
    __d; \\
}})
#define __builtin_{name}_rri(dc, ra, imm) __OPENPIM_RRI({name}, dc, ra, imm)
""")
    for name, lines in UNARY.items():
        print(emit_unary(name, lines))
        print(f"#define __builtin_{name}_rr(dc, ra) ((dc) = __openpim_{name}((uint32_t)(ra)))\n")
    for name, lines in SHIFT_ADD.items():
        text, k = asm_text(lines)
        print(f"""#define __builtin_{name}_rrri(dc, ra, rb, shift) __extension__({{ \\
    uint32_t __d, __t, __u, __v; \\
    __asm__({text} \\
            : {OUT_REGS} \\
            : [a] "r"((uint32_t)(ra)), [b] "r"((uint32_t)(rb)), [s] "i"((shift) & 31), [k] "i"({HINT_BASE + k})); \\
    (dc) = __d; \\
}})
""")
    print("""/* nop: one issue slot, as the DPU's nop. */
#define __builtin_nop_() __asm__ __volatile__("nop")

#endif""")


if __name__ == "__main__":
    main()
