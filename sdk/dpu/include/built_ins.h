/* OpenPIM DPU: <built_ins.h> — the DPU instruction builtins of the SDK (built_ins_isa.h).
 * 8x8-bit multiplies: __builtin_mul_<x>_<y>_rrr(dc, a, b) and __builtin_mul_<x>_<y>(a, b) with
 * x, y in sl (signed low byte), ul (unsigned low byte), sh (signed high byte), uh (unsigned
 * high byte). */
#ifndef _OPENPIM_BUILT_INS_H
#define _OPENPIM_BUILT_INS_H
#include <stdint.h>

/* The DPU instruction builtins (__builtin_<op>_rrr/_rri/_rr/_rrri, __builtin_nop_), one issue
 * slot each. */
#include <built_ins_isa.h>

/* Two-operand forms of the 8x8-bit multiplies: the product of a byte of a and a byte of b. */
#define __OPENPIM_MUL8(p, q, a, b) ((int32_t)__openpim_mul_##p##_##q((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sl_sl(a, b) __OPENPIM_MUL8(sl, sl, a, b)
#define __builtin_mul_sl_ul(a, b) __OPENPIM_MUL8(sl, ul, a, b)
#define __builtin_mul_sl_sh(a, b) __OPENPIM_MUL8(sl, sh, a, b)
#define __builtin_mul_sl_uh(a, b) __OPENPIM_MUL8(sl, uh, a, b)
#define __builtin_mul_ul_sl(a, b) __OPENPIM_MUL8(ul, sl, a, b)
#define __builtin_mul_ul_ul(a, b) __OPENPIM_MUL8(ul, ul, a, b)
#define __builtin_mul_ul_sh(a, b) __OPENPIM_MUL8(ul, sh, a, b)
#define __builtin_mul_ul_uh(a, b) __OPENPIM_MUL8(ul, uh, a, b)
#define __builtin_mul_sh_sl(a, b) __OPENPIM_MUL8(sh, sl, a, b)
#define __builtin_mul_sh_ul(a, b) __OPENPIM_MUL8(sh, ul, a, b)
#define __builtin_mul_sh_sh(a, b) __OPENPIM_MUL8(sh, sh, a, b)
#define __builtin_mul_sh_uh(a, b) __OPENPIM_MUL8(sh, uh, a, b)
#define __builtin_mul_uh_sl(a, b) __OPENPIM_MUL8(uh, sl, a, b)
#define __builtin_mul_uh_ul(a, b) __OPENPIM_MUL8(uh, ul, a, b)
#define __builtin_mul_uh_sh(a, b) __OPENPIM_MUL8(uh, sh, a, b)
#define __builtin_mul_uh_uh(a, b) __OPENPIM_MUL8(uh, uh, a, b)

/* count trailing zeros (32-bit; ctz(0) = 32): not a DPU instruction, C. */
#define __builtin_ctz_rr(dst, x) ((dst) = ((uint32_t)(x) == 0u) ? 32 : __builtin_ctz((uint32_t)(x)))

/* Current cycle count since the start of the launch (64 bits). */
static __inline__ uint64_t __builtin_dpu_cycles(void)
{
    register unsigned int a0 __asm__("a0");
    register unsigned int a1 __asm__("a1");
    register unsigned int a7 __asm__("a7") = 13;
    __asm__ __volatile__("ecall" : "=r"(a0), "=r"(a1) : "r"(a7) : "memory");
    return ((uint64_t)a1 << 32) | a0;
}

#endif
