/*
 * Integer multiply/divide helpers that GCC calls on RV32I (no M extension).
 * They use the DPU's arithmetic environment calls (MUL32, DIVU32, ... see
 * docs/internals/dpu-abi.md) so that the engine charges the DPU's mul_step/div_step cost.
 * All of libgcc's integer mul/div entry points are defined here; the shim links a copy of
 * libgcc without its own versions (build/dpu/libgcc-dpu.a), so libgcc is used only for
 * soft-float and bit operations.
 *
 * Register footprint: libgcc's soft-float code calls __mulsi3 from inline assembly that
 * assumes only a0-a3 and ra change (longlong.h), so every helper here preserves a4-a7 and
 * t1-t6: a7 (the call number) is saved in a2/a3 (32-bit helpers) or t0 (64-bit helpers).
 */
#define FUNC(name)  .section .text.name, "ax", @progbits; .globl name; .type name, @function; .balign 4; name:
#define END(name)   .size name, . - name

FUNC(__mulsi3)
    mv      a3, a7
    li      a7, 20
    ecall
    mv      a7, a3
    ret
END(__mulsi3)

FUNC(__udivsi3)
    mv      a3, a7
    li      a7, 21
    ecall
    mv      a7, a3
    ret
END(__udivsi3)

FUNC(__umodsi3)
    mv      a3, a7
    li      a7, 21
    ecall
    mv      a7, a3
    mv      a0, a1
    ret
END(__umodsi3)

FUNC(__divsi3)
    mv      a3, a7
    li      a7, 22
    ecall
    mv      a7, a3
    ret
END(__divsi3)

FUNC(__modsi3)
    mv      a3, a7
    li      a7, 22
    ecall
    mv      a7, a3
    mv      a0, a1
    ret
END(__modsi3)

FUNC(__muldi3)
    mv      t0, a7
    li      a7, 23
    ecall
    mv      a7, t0
    ret
END(__muldi3)

FUNC(__udivdi3)
    mv      t0, a7
    li      a7, 24
    ecall
    mv      a7, t0
    ret
END(__udivdi3)

FUNC(__umoddi3)
    mv      t0, a7
    li      a7, 24
    ecall
    mv      a7, t0
    mv      a0, a2
    mv      a1, a3
    ret
END(__umoddi3)

FUNC(__divdi3)
    mv      t0, a7
    li      a7, 25
    ecall
    mv      a7, t0
    ret
END(__divdi3)

FUNC(__moddi3)
    mv      t0, a7
    li      a7, 25
    ecall
    mv      a7, t0
    mv      a0, a2
    mv      a1, a3
    ret
END(__moddi3)

/* uint64_t __udivmoddi4(uint64_t a, uint64_t b, uint64_t *rem) */
FUNC(__udivmoddi4)
    mv      t0, a7
    li      a7, 24
    ecall
    mv      a7, t0
    beqz    a4, 1f
    sw      a2, 0(a4)
    sw      a3, 4(a4)
1:  ret
END(__udivmoddi4)

/* int64_t __divmoddi4(int64_t a, int64_t b, int64_t *rem) */
FUNC(__divmoddi4)
    mv      t0, a7
    li      a7, 25
    ecall
    mv      a7, t0
    beqz    a4, 1f
    sw      a2, 0(a4)
    sw      a3, 4(a4)
1:  ret
END(__divmoddi4)

/* unsigned __udivmodsi4(unsigned a, unsigned b, unsigned *rem) */
FUNC(__udivmodsi4)
    mv      a3, a7
    li      a7, 21
    ecall
    mv      a7, a3
    beqz    a2, 1f
    sw      a1, 0(a2)
1:  ret
END(__udivmodsi4)

/* int __divmodsi4(int a, int b, int *rem) */
FUNC(__divmodsi4)
    mv      a3, a7
    li      a7, 22
    ecall
    mv      a7, a3
    beqz    a2, 1f
    sw      a1, 0(a2)
1:  ret
END(__divmodsi4)
