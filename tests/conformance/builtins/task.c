/* Every DPU instruction builtin of built_ins.h on NR_PAIRS operand pairs; the host checks the
 * results against its own computation of the DPU's semantics. Then what they cost: a loop of
 * 8x8 multiplies (the longest RV32I bodies) and the same loop with an add, counted in instructions by the
 * performance counter. */
#include <built_ins.h>
#include <defs.h>
#include <perfcounter.h>
#include <stdint.h>
#include "ops.h"

__host uint32_t a[NR_PAIRS];
__host uint32_t b[NR_PAIRS];
__host uint32_t results[NR_PAIRS][NR_RESULTS];
__host uint32_t mul_loop_instructions;
__host uint32_t add_loop_instructions;
__host uint32_t add_loop_sum;
__host uint32_t mul_loop_sum;

#define LOOP 256

int main(void)
{
    for (int p = 0; p < NR_PAIRS; p++) {
        uint32_t *r = results[p];
        uint32_t x = a[p], y = b[p];
        int k = 0;
#define DO_RRR(op) __builtin_##op##_rrr(r[k], x, y); k++;
        RRR_OPS(DO_RRR)
#define DO_RRI(op) __builtin_##op##_rri(r[k], x, IMM_A); k++; __builtin_##op##_rri(r[k], x, IMM_B); k++;
        RRI_OPS(DO_RRI)
#define DO_RR(op) __builtin_##op##_rr(r[k], x); k++;
        RR_OPS(DO_RR)
#define DO_RRRI(op) __builtin_##op##_rrri(r[k], x, y, SHIFT_A); k++; __builtin_##op##_rrri(r[k], x, y, SHIFT_B); k++;
        RRRI_OPS(DO_RRRI)
    }

    /* Cost: the same loop with a multiply and with a nop in its body. */
    uint32_t sum = 0;
    perfcounter_config(COUNT_INSTRUCTIONS, true);
    for (int i = 0; i < LOOP; i++) {
        int32_t m;
        __builtin_mul_sh_ul_rrr(m, a[i % NR_PAIRS], b[i % NR_PAIRS]);
        sum += (uint32_t)m;
    }
    mul_loop_instructions = (uint32_t)perfcounter_get();
    mul_loop_sum = sum;
    uint32_t add_sum = 0;
    perfcounter_config(COUNT_INSTRUCTIONS, true);
    for (int i = 0; i < LOOP; i++) {
        uint32_t m;
        __builtin_add_rrr(m, a[i % NR_PAIRS], b[i % NR_PAIRS]);
        add_sum += m;
    }
    add_loop_instructions = (uint32_t)perfcounter_get();
    add_loop_sum = add_sum;
    __builtin_nop_();
    return 0;
}
