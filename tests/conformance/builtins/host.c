/* The DPU instruction builtins (built_ins.h) against the host's own computation of the DPU's
 * semantics (the DPU ISA: shift amounts use the low 5 bits; lsl1/lsr1 shift in ones;
 * lslx/lsrx give the bits the shift drops (0 for a shift of 0); cmpb4 sets each byte to 1
 * where the bytes are equal; mul_<x>_<y> multiplies byte x of ra by byte y of rb, s/u =
 * signed/unsigned, l/h = low/high byte; clz/clo/cls count leading zeros/ones/sign bits, cao
 * all ones; lsl_add/lsl_sub/lsr_add/rol_add combine ra with a shifted rb). Then their cost: a
 * loop of 8x8 multiplies costs about what the same loop with a nop costs (one issue slot per
 * builtin, as the DPU instruction), not the ~50 RV32I instructions of the body. */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "ops.h"

#define LOOP 256

static uint32_t shl(uint32_t x, uint32_t s) { return x << (s & 31); }
static uint32_t shr(uint32_t x, uint32_t s) { return x >> (s & 31); }
static uint32_t rol(uint32_t x, uint32_t s) { s &= 31; return s ? (x << s) | (x >> (32 - s)) : x; }
static uint32_t ror(uint32_t x, uint32_t s) { s &= 31; return s ? (x >> s) | (x << (32 - s)) : x; }
static int32_t byte_of(uint32_t x, char sign, char half)
{
    uint32_t v = half == 'l' ? (x & 0xff) : ((x >> 8) & 0xff);
    return sign == 's' ? (int32_t)(int8_t)v : (int32_t)v;
}
static uint32_t mul8(const char *xy, uint32_t x, uint32_t y)
{
    return (uint32_t)(byte_of(x, xy[0], xy[1]) * byte_of(y, xy[3], xy[4]));
}
static uint32_t count_leading(uint32_t x, int bit)
{
    uint32_t n = 0;
    for (int i = 31; i >= 0 && (int)((x >> i) & 1) == bit; i--)
        n++;
    return n;
}

static uint32_t ref_add(uint32_t x, uint32_t y) { return x + y; }
static uint32_t ref_sub(uint32_t x, uint32_t y) { return x - y; }
static uint32_t ref_rsub(uint32_t x, uint32_t y) { return y - x; }
static uint32_t ref_and(uint32_t x, uint32_t y) { return x & y; }
static uint32_t ref_or(uint32_t x, uint32_t y) { return x | y; }
static uint32_t ref_xor(uint32_t x, uint32_t y) { return x ^ y; }
static uint32_t ref_nand(uint32_t x, uint32_t y) { return ~(x & y); }
static uint32_t ref_nor(uint32_t x, uint32_t y) { return ~(x | y); }
static uint32_t ref_nxor(uint32_t x, uint32_t y) { return ~(x ^ y); }
static uint32_t ref_andn(uint32_t x, uint32_t y) { return ~x & y; }
static uint32_t ref_orn(uint32_t x, uint32_t y) { return ~x | y; }
static uint32_t ref_lsl(uint32_t x, uint32_t y) { return shl(x, y); }
static uint32_t ref_lsr(uint32_t x, uint32_t y) { return shr(x, y); }
static uint32_t ref_asr(uint32_t x, uint32_t y) { return (uint32_t)((int32_t)x >> (y & 31)); }
static uint32_t ref_rol(uint32_t x, uint32_t y) { return rol(x, y); }
static uint32_t ref_ror(uint32_t x, uint32_t y) { return ror(x, y); }
static uint32_t ref_lsl1(uint32_t x, uint32_t y) { return shl(x, y) | (shl(1, y) - 1); }
static uint32_t ref_lsr1(uint32_t x, uint32_t y) { return shr(x, y) | ~shr(0xffffffffu, y); }
static uint32_t ref_lslx(uint32_t x, uint32_t y) { return (y & 31) ? x >> (32 - (y & 31)) : 0; }
static uint32_t ref_lsrx(uint32_t x, uint32_t y) { return (y & 31) ? x << (32 - (y & 31)) : 0; }
static uint32_t ref_cmpb4(uint32_t x, uint32_t y)
{
    uint32_t r = 0;
    for (int i = 0; i < 4; i++)
        if (((x >> (8 * i)) & 0xff) == ((y >> (8 * i)) & 0xff))
            r |= 1u << (8 * i);
    return r;
}
#define MUL_REF(xy) static uint32_t ref_mul_##xy(uint32_t x, uint32_t y) { return mul8(#xy, x, y); }
MUL_REF(sl_sl) MUL_REF(sl_ul) MUL_REF(sl_sh) MUL_REF(sl_uh) MUL_REF(ul_sl) MUL_REF(ul_ul) MUL_REF(ul_sh)
MUL_REF(ul_uh) MUL_REF(sh_sl) MUL_REF(sh_ul) MUL_REF(sh_sh) MUL_REF(sh_uh) MUL_REF(uh_sl) MUL_REF(uh_ul)
MUL_REF(uh_sh) MUL_REF(uh_uh)
static uint32_t ref_clz(uint32_t x) { return count_leading(x, 0); }
static uint32_t ref_clo(uint32_t x) { return count_leading(x, 1); }
static uint32_t ref_cls(uint32_t x) { return count_leading(x, (int)(x >> 31)); }
static uint32_t ref_cao(uint32_t x) { uint32_t n = 0; for (; x; x &= x - 1) n++; return n; }
static uint32_t ref_extsb(uint32_t x) { return (uint32_t)(int32_t)(int8_t)(x & 0xff); }
static uint32_t ref_extub(uint32_t x) { return x & 0xff; }
static uint32_t ref_extsh(uint32_t x) { return (uint32_t)(int32_t)(int16_t)(x & 0xffff); }
static uint32_t ref_extuh(uint32_t x) { return x & 0xffff; }
static uint32_t ref_move(uint32_t x) { return x; }
static uint32_t ref_lsl_add(uint32_t x, uint32_t y, uint32_t s) { return x + shl(y, s); }
static uint32_t ref_lsl_sub(uint32_t x, uint32_t y, uint32_t s) { return x - shl(y, s); }
static uint32_t ref_lsr_add(uint32_t x, uint32_t y, uint32_t s) { return x + shr(y, s); }
static uint32_t ref_rol_add(uint32_t x, uint32_t y, uint32_t s) { return x + rol(y, s); }

static uint32_t a[NR_PAIRS], b[NR_PAIRS], results[NR_PAIRS][NR_RESULTS];
static int failures, checked;

static void expect(const char *what, uint32_t p, uint32_t got, uint32_t want)
{
    checked++;
    if (got != want) {
        if (failures < 20)
            printf("  FAIL %s(0x%08x, 0x%08x) = 0x%08x, expected 0x%08x\n", what, a[p], b[p], got, want);
        failures++;
    }
}

int main(void)
{
    static const uint32_t edges[] = { 0, 1, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0xff, 0x80, 0x7f,
        0xff00, 0x8000, 0x7f80, 0x12345678u, 0xdeadbeefu, 31, 32, 33, 0x0101ff01u, 0x00ff00ffu };
    const uint32_t nr_edges = sizeof(edges) / sizeof(edges[0]);
    uint32_t seed = 12345;
    for (uint32_t p = 0; p < NR_PAIRS; p++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t r1 = seed;
        seed = seed * 1103515245u + 12345u;
        a[p] = p < nr_edges ? edges[p] : r1;
        b[p] = p < nr_edges ? edges[(p * 7 + 3) % nr_edges] : (p % 3 == 0 ? (a[p] & 0xffff00ffu) | (seed & 0xff00) : seed);
    }

    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(1, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_builtins", NULL));
    DPU_ASSERT(dpu_copy_to(set, "a", 0, a, sizeof(a)));
    DPU_ASSERT(dpu_copy_to(set, "b", 0, b, sizeof(b)));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    uint32_t mul_instr = 0, add_instr = 0, mul_sum = 0, add_sum = 0;
    DPU_FOREACH(set, dpu) {
        DPU_ASSERT(dpu_copy_from(dpu, "results", 0, results, sizeof(results)));
        DPU_ASSERT(dpu_copy_from(dpu, "mul_loop_instructions", 0, &mul_instr, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "add_loop_instructions", 0, &add_instr, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "add_loop_sum", 0, &add_sum, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "mul_loop_sum", 0, &mul_sum, 4));
    }
    DPU_ASSERT(dpu_free(set));

    for (uint32_t p = 0; p < NR_PAIRS; p++) {
        uint32_t *r = results[p], x = a[p], y = b[p];
        int k = 0;
#define CHECK_RRR(op) expect(#op "_rrr", p, r[k++], ref_##op(x, y));
        RRR_OPS(CHECK_RRR)
#define CHECK_RRI(op) expect(#op "_rri(13)", p, r[k++], ref_##op(x, (uint32_t)IMM_A)); \
        expect(#op "_rri(-0x12345)", p, r[k++], ref_##op(x, (uint32_t)IMM_B));
        RRI_OPS(CHECK_RRI)
#define CHECK_RR(op) expect(#op "_rr", p, r[k++], ref_##op(x));
        RR_OPS(CHECK_RR)
#define CHECK_RRRI(op) expect(#op "_rrri(5)", p, r[k++], ref_##op(x, y, SHIFT_A)); \
        expect(#op "_rrri(0)", p, r[k++], ref_##op(x, y, SHIFT_B));
        RRRI_OPS(CHECK_RRRI)
    }
    printf("%s %d results of %d builtins (%d rrr, %d rri, %d rr, %d rrri) on %d operand pairs\n",
        failures ? "FAIL" : "ok  ", checked, NR_RRR + NR_RRI + NR_RR + NR_RRRI, NR_RRR, NR_RRI, NR_RR, NR_RRRI,
        NR_PAIRS);

    uint32_t want_sum = 0, want_add = 0;
    for (int i = 0; i < LOOP; i++) {
        want_sum += ref_mul_sh_ul(a[i % NR_PAIRS], b[i % NR_PAIRS]);
        want_add += a[i % NR_PAIRS] + b[i % NR_PAIRS];
    }
    int sum_ok = mul_sum == want_sum && add_sum == want_add;
    printf("%s the loops' sums 0x%08x, 0x%08x (expected 0x%08x, 0x%08x)\n", sum_ok ? "ok  " : "FAIL", mul_sum, add_sum,
        want_sum, want_add);
    /* One slot per multiply: the multiply loop costs what the same loop with an add (one
     * RV32I instruction) costs, give or take the register moves around the builtin; its RV32I
     * body alone is 50 instructions. */
    double per_iter_extra = ((double)mul_instr - (double)add_instr) / LOOP;
    int cost_ok = per_iter_extra < 4.0 && per_iter_extra > -4.0;
    printf("%s instructions: %u for %d multiplies, %u for %d adds (%.2f more per iteration)\n", cost_ok ? "ok  " : "FAIL",
        mul_instr, LOOP, add_instr, LOOP, per_iter_extra);
    return failures != 0 || !sum_ok || !cost_ok;
}
