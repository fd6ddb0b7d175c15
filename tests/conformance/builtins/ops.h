/* The builtins under test, shared by the DPU program and the host: X(name) per form. */
#define NR_PAIRS 40

#define RRR_OPS(X) \
    X(add) X(sub) X(rsub) X(and) X(or) X(xor) X(nand) X(nor) X(nxor) X(andn) X(orn) \
    X(lsl) X(lsr) X(asr) X(rol) X(ror) X(lsl1) X(lsr1) X(lslx) X(lsrx) X(cmpb4) \
    X(mul_sl_sl) X(mul_sl_ul) X(mul_sl_sh) X(mul_sl_uh) X(mul_ul_sl) X(mul_ul_ul) X(mul_ul_sh) \
    X(mul_ul_uh) X(mul_sh_sl) X(mul_sh_ul) X(mul_sh_sh) X(mul_sh_uh) X(mul_uh_sl) X(mul_uh_ul) \
    X(mul_uh_sh) X(mul_uh_uh)

#define RRI_OPS(X) \
    X(add) X(sub) X(rsub) X(and) X(or) X(xor) X(nand) X(nor) X(nxor) X(andn) X(orn) \
    X(lsl) X(lsr) X(asr) X(rol) X(ror) X(lsl1) X(lsr1) X(lslx) X(lsrx)

#define RR_OPS(X) X(clz) X(clo) X(cls) X(cao) X(extsb) X(extub) X(extsh) X(extuh) X(move)

#define RRRI_OPS(X) X(lsl_add) X(lsl_sub) X(lsr_add) X(rol_add)

#define COUNT1(n) +1
#define NR_RRR (0 RRR_OPS(COUNT1))
#define NR_RRI (0 RRI_OPS(COUNT1))
#define NR_RR (0 RR_OPS(COUNT1))
#define NR_RRRI (0 RRRI_OPS(COUNT1))
/* Each pair: every rrr op, every rri op with IMM_A and IMM_B, every rr op on a, every rrri op
 * with SHIFT_A and SHIFT_B. */
#define NR_RESULTS (NR_RRR + 2 * NR_RRI + NR_RR + 2 * NR_RRRI)
#define IMM_A 13
#define IMM_B (-0x12345)
#define SHIFT_A 5
#define SHIFT_B 0
