/* OpenPIM DPU: <built_ins.h> — a few of the DPU instruction wrappers, written in C.
 * 8x8-bit multiplies: __builtin_mul_<x>_<y>(a, b) with x, y in
 *   sl (signed low byte), ul (unsigned low byte), sh (signed high byte), uh (unsigned high byte). */
#ifndef _OPENPIM_BUILT_INS_H
#define _OPENPIM_BUILT_INS_H
#include <stdint.h>

#define __OPENPIM_B_sl(x) ((int32_t)(int8_t)((uint32_t)(x) & 0xff))
#define __OPENPIM_B_ul(x) ((int32_t)((uint32_t)(x) & 0xff))
#define __OPENPIM_B_sh(x) ((int32_t)(int8_t)(((uint32_t)(x) >> 8) & 0xff))
#define __OPENPIM_B_uh(x) ((int32_t)(((uint32_t)(x) >> 8) & 0xff))
#define __OPENPIM_MUL8(p, q, a, b) (__OPENPIM_B_##p(a) * __OPENPIM_B_##q(b))

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

/* count leading zeros / ones population / count trailing zeros (32-bit; clz(0) = 32). */
#define __builtin_clz_rr(dst, x) ((dst) = ((uint32_t)(x) == 0u) ? 32 : __builtin_clz((uint32_t)(x)))
#define __builtin_cao_rr(dst, x) ((dst) = __builtin_popcount((uint32_t)(x)))
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
