/*
 * IEEE-754 add/sub/mul/div helpers that GCC calls on RV32I (no F/D extension). They use the
 * DPU's floating-point environment calls (FADD32 ... FDIV64, see docs/internals/dpu-abi.md),
 * so that the engine computes the correctly rounded result and charges the issue slots of the
 * real DPU's soft-float routine (profile keys cost.fadd32 ... cost.fdiv64). The shim links a
 * copy of libgcc without its own versions of these eight (build/dpu/libgcc-dpu.a); libgcc
 * still provides conversions, comparisons and negation.
 *
 * Registers changed: the result (a0, or a0:a1) and the scratch register that keeps a7 (the
 * call number) across the call: a3 for the float helpers (arguments a0 and a1), t0 for the
 * double helpers (arguments a0:a1 and a2:a3); both are caller-saved in the RISC-V ABI.
 */
#define FUNC(name)  .section .text.name, "ax", @progbits; .globl name; .type name, @function; .balign 4; name:
#define END(name)   .size name, . - name

#define FLOAT_OP(name, nr) \
    FUNC(name)             \
    mv      a3, a7;        \
    li      a7, nr;        \
    ecall;                 \
    mv      a7, a3;        \
    ret;                   \
    END(name)

#define DOUBLE_OP(name, nr) \
    FUNC(name)              \
    mv      t0, a7;         \
    li      a7, nr;         \
    ecall;                  \
    mv      a7, t0;         \
    ret;                    \
    END(name)

FLOAT_OP(__addsf3, 26)
FLOAT_OP(__subsf3, 27)
FLOAT_OP(__mulsf3, 28)
FLOAT_OP(__divsf3, 29)
DOUBLE_OP(__adddf3, 30)
DOUBLE_OP(__subdf3, 31)
DOUBLE_OP(__muldf3, 32)
DOUBLE_OP(__divdf3, 33)
