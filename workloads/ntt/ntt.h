/* NTT workload, the part shared by the PIM host program and the CPU baseline: moduli and
 * roots of unity, the options, the inputs, the transforms the results are checked against
 * (a fast radix-2 NTT and the naive O(N^2) definition) and the checksum. */
#ifndef WORKLOADS_NTT_H
#define WORKLOADS_NTT_H

#include "../common/study.h"
#include "arith.h"

enum ntt_op { OP_NTT, OP_INTT, OP_ADD, OP_MUL };

#define NTT_MAX_STEP 4096 /* points per step: what one DPU's WRAM holds (dpu.c) */
#define NTT_MAX_STEPS 17 /* N <= 2^17 with steps of at least 2 points */

struct ntt_cfg {
    uint32_t n, steps, instances, dpus, radix, tasklets;
    uint32_t sizes[NTT_MAX_STEPS]; /* points of each step (all n unless --sizes) */
    int balanced;                   /* every step has the same size */
    uint64_t N;
    enum ntt_op op;
    const char *op_name;
    uint64_t seed;
};

static inline uint32_t pow_mod(uint32_t b, uint64_t e, uint32_t q)
{
    uint64_t r = 1, x = b;
    while (e) {
        if (e & 1)
            r = r * x % q;
        x = x * x % q;
        e >>= 1;
    }
    return (uint32_t)r;
}

static inline int is_prime_u32(uint32_t q)
{
    if (q < 2)
        return 0;
    for (uint32_t d = 2; (uint64_t)d * d <= q; d++)
        if (q % d == 0)
            return 0;
    return 1;
}

/* The first `count` primes below 2^31 with q = 1 mod 2^17 (an NTT of up to 2^17 points,
 * negacyclic of 2^16), from the largest down: one per limb. */
static inline void ntt_primes(uint32_t *out, uint32_t count)
{
    uint32_t step = 1u << 17, found = 0;
    for (uint32_t q = ((0x7FFFFFFFu - 1) / step) * step + 1; q > step && found < count; q -= step)
        if (is_prime_u32(q))
            out[found++] = q;
}

/* A primitive N-th root of unity mod q (N a power of two dividing q - 1). */
static inline uint32_t ntt_root(uint32_t q, uint64_t N)
{
    uint32_t m = q - 1, factors[32], nf = 0;
    for (uint32_t d = 2; (uint64_t)d * d <= m; d++)
        if (m % d == 0) {
            factors[nf++] = d;
            while (m % d == 0)
                m /= d;
        }
    if (m > 1)
        factors[nf++] = m;
    for (uint32_t g = 2;; g++) {
        int ok = 1;
        for (uint32_t f = 0; f < nf && ok; f++)
            ok = pow_mod(g, (q - 1) / factors[f], q) != 1;
        if (ok)
            return pow_mod(g, (q - 1) / N, q);
    }
}

static inline uint32_t shoup(uint32_t w, uint32_t q) { return (uint32_t)(((uint64_t)w << 32) / q); }
static inline uint32_t inv_mod(uint32_t a, uint32_t q) { return pow_mod(a, q - 2, q); }
static inline uint32_t mont_qneg(uint32_t q)
{
    uint32_t x = 1; /* Newton: x = q^-1 mod 2^32 */
    for (int i = 0; i < 5; i++)
        x *= 2 - q * x;
    return (uint32_t)(0u - x);
}

static inline uint32_t log2_u64(uint64_t x)
{
    return x <= 1 ? 0 : (uint32_t)(64 - __builtin_clzll(x - 1)); /* ceil(log2 x) */
}

static inline uint32_t bitrev(uint32_t x, uint32_t bits)
{
    uint32_t r = 0;
    for (uint32_t i = 0; i < bits; i++)
        r |= ((x >> i) & 1u) << (bits - 1 - i);
    return r;
}

/* Whether --NAME is on the command line (without noting it as a valid option twice). */
static inline int ntt_given(const struct study_opts *o, const char *name)
{
    for (int i = 1; i < o->argc; i++)
        if (strncmp(o->argv[i], "--", 2) == 0 && strcmp(o->argv[i] + 2, name) == 0)
            return 1;
    return 0;
}

static inline void ntt_parse(struct ntt_cfg *c, struct study_opts *o)
{
    memset(c, 0, sizeof(*c));
    c->n = (uint32_t)study_opt_u64(o, "n", 256);
    c->steps = (uint32_t)study_opt_u64(o, "steps", 1);
    c->instances = (uint32_t)study_opt_u64(o, "instances", 1);
    c->dpus = (uint32_t)study_opt_u64(o, "dpus", 1);
    c->radix = (uint32_t)study_opt_u64(o, "radix", 16);
    c->tasklets = (uint32_t)study_opt_u64(o, "tasklets", 16);
    c->seed = study_opt_u64(o, "seed", 1);
    c->op_name = study_opt_str(o, "op", "ntt");
    const char *names[] = { "ntt", "intt", "add", "mul" };
    c->op = (enum ntt_op)4;
    for (int i = 0; i < 4; i++)
        if (strcmp(c->op_name, names[i]) == 0)
            c->op = (enum ntt_op)i;
    if ((int)c->op == 4) {
        fprintf(stderr, "error: --op must be ntt, intt, add or mul, got '%s'\n", c->op_name);
        exit(2);
    }
    const char *sizes = study_opt_str(o, "sizes", NULL);
    if (sizes && (ntt_given(o, "n") || ntt_given(o, "steps"))) {
        fprintf(stderr, "error: --sizes gives every step's size: do not combine it with --n or --steps\n");
        exit(2);
    }
    if (sizes) { /* e.g. 64x1024: the steps' sizes, first step first */
        const char *p = sizes;
        c->steps = 0;
        for (;;) {
            char *end;
            unsigned long v = strtoul(p, &end, 10);
            if (c->steps == NTT_MAX_STEPS) {
                fprintf(stderr, "error: --sizes %s has more than %u steps\n", sizes, NTT_MAX_STEPS);
                exit(2);
            }
            if (end == p || (*end && *end != 'x')) {
                fprintf(stderr, "error: --sizes wants step sizes separated by 'x' (e.g. 64x1024), got '%s'\n", sizes);
                exit(2);
            }
            if (*p == '-' || v > NTT_MAX_STEP) { /* the step's own text: it may not fit 32 bits */
                fprintf(stderr,
                    "error: --sizes: step %u has %.*s points; each step must be a power of two from 2 to %u "
                    "(a DPU's WRAM holds a %u-point vector and its twiddles)\n",
                    c->steps + 1, (int)(end - p), p, NTT_MAX_STEP, NTT_MAX_STEP);
                exit(2);
            }
            c->sizes[c->steps++] = (uint32_t)v;
            if (!*end)
                break;
            p = end + 1;
        }
        c->n = c->sizes[0];
        if ((c->op == OP_ADD || c->op == OP_MUL)) {
            fprintf(stderr, "error: --sizes is for --op ntt|intt (add and mul work on slots of --n words)\n");
            exit(2);
        }
    }
    if (!sizes && (c->n < 2 || c->n > NTT_MAX_STEP || (c->n & (c->n - 1)))) {
        fprintf(stderr, "error: --n (points per step) must be a power of two from 2 to %u, got %u\n", NTT_MAX_STEP,
            c->n);
        exit(2);
    }
    if (!sizes) {
        if (c->steps < 1 || log2_u64(c->n) * c->steps > 17) {
            fprintf(stderr, "error: --steps %u with --n %u: N = n^steps must be at most 2^17 points\n", c->steps,
                c->n);
            exit(2);
        }
        for (uint32_t s = 0; s < c->steps; s++)
            c->sizes[s] = c->n;
    }
    uint32_t logN = 0;
    c->balanced = 1;
    for (uint32_t s = 0; s < c->steps; s++) {
        uint32_t v = c->sizes[s];
        if (v < 2 || v > NTT_MAX_STEP || (v & (v - 1))) {
            fprintf(stderr,
                "error: --sizes: step %u has %u points; each step must be a power of two from 2 to %u "
                "(a DPU's WRAM holds a %u-point vector and its twiddles)\n",
                s + 1, v, NTT_MAX_STEP, NTT_MAX_STEP);
            exit(2);
        }
        logN += log2_u64(v);
        c->balanced &= v == c->sizes[0];
    }
    if (logN > 17) {
        fprintf(stderr, "error: --sizes %s: N = %s = 2^%u points; at most 2^17\n", sizes, sizes, logN);
        exit(2);
    }
    c->N = 1ull << logN;
    if (c->radix != 2 && c->radix != 4 && c->radix != 16) {
        fprintf(stderr, "error: --radix must be 2, 4 or 16, got %u\n", c->radix);
        exit(2);
    }
    for (uint32_t s = 0; s < c->steps && (c->op == OP_NTT || c->op == OP_INTT); s++)
        if (log2_u64(c->sizes[s]) % log2_u64(c->radix)) {
            fprintf(stderr,
                "error: a %u-point step is not a power of radix %u (use --radix 2, or sizes 16, 256 or 4096 for 16)\n",
                c->sizes[s], c->radix);
            exit(2);
        }
    if (c->tasklets < 1 || c->tasklets > 24) {
        fprintf(stderr, "error: --tasklets must be 1..24, got %u\n", c->tasklets);
        exit(2);
    }
    if (c->instances < 1 || c->instances > 32 || c->dpus < 1) {
        fprintf(stderr, "error: --instances must be 1..32 (one prime each) and --dpus at least 1\n");
        exit(2);
    }
    if ((c->op == OP_ADD || c->op == OP_MUL) && c->n < 64) {
        fprintf(stderr, "error: --op %s works on slots of n words, moved 64 at a time: --n must be at least 64\n",
            c->op_name);
        exit(2);
    }
}

/* Inputs: instance i, coefficient x, below the instance's prime. Operand b (add, mul) too. */
static inline uint32_t ntt_input(const struct ntt_cfg *c, uint32_t i, uint64_t x, uint32_t which, uint32_t q)
{
    return (uint32_t)(study_hash3(c->seed * 4 + which, i, x) % q);
}

/* Instance i's operands: a (the input) and b (the second operand of add/mul, in Montgomery
 * form for mul). */
static inline void ntt_operands(const struct ntt_cfg *c, uint32_t i, uint32_t q, uint32_t *a, uint32_t *b)
{
    for (uint64_t x = 0; x < c->N; x++) {
        a[x] = ntt_input(c, i, x, 0, q);
        uint32_t bv = ntt_input(c, i, x, 1, q);
        b[x] = c->op == OP_MUL ? (uint32_t)(((uint64_t)bv << 32) % q) : bv;
    }
}

/* In-place radix-2 DIF NTT of N points (natural order in, natural order out). tw: w^i, i < N/2
 * and Shoup companions tw[2i], tw[2i+1]. */
static inline void ntt_fast(uint32_t *a, uint64_t N, const uint32_t *tw, uint32_t q, uint32_t *tmp)
{
    uint32_t logn = log2_u64(N);
    for (uint32_t s = 0; s < logn; s++) {
        uint64_t L = N >> s, half = L / 2;
        for (uint64_t blk = 0; blk < N; blk += L)
            for (uint64_t p = 0; p < half; p++) {
                uint64_t e = p << s;
                uint32_t u = a[blk + p], v = a[blk + p + half];
                a[blk + p] = mod_add(u, v, q);
                a[blk + p + half] = mod_mul_shoup(mod_sub(u, v, q), tw[2 * e], tw[2 * e + 1], q);
            }
    }
    for (uint64_t x = 0; x < N; x++)
        tmp[bitrev((uint32_t)x, logn)] = a[x];
    memcpy(a, tmp, N * 4);
}

/* The definition: X[k] = sum_j x[j] w^(jk). O(N^2): for tests at small sizes. */
static inline void ntt_naive(const uint32_t *x, uint32_t *X, uint64_t N, uint32_t w, uint32_t q)
{
    for (uint64_t k = 0; k < N; k++) {
        uint64_t acc = 0;
        uint32_t wk = pow_mod(w, k, q), p = 1;
        for (uint64_t j = 0; j < N; j++) {
            acc = (acc + (uint64_t)x[j] * p) % q;
            p = (uint32_t)((uint64_t)p * wk % q);
        }
        X[k] = (uint32_t)acc;
    }
}

/* Twiddle table w^i (i < N/2) with Shoup companions, for an N-point transform. */
static inline uint32_t *ntt_twiddles(uint32_t w, uint64_t N, uint32_t q)
{
    uint32_t *tw = (uint32_t *)study_xcalloc(N, 4, "twiddles");
    uint32_t p = 1;
    for (uint64_t i = 0; i < N / 2; i++) {
        tw[2 * i] = p;
        tw[2 * i + 1] = shoup(p, q);
        p = (uint32_t)((uint64_t)p * w % q);
    }
    return tw;
}

/* The CPU computation of op on instance i (result in a; b the second operand, Montgomery form
 * for mul). For the inverse NTT, the result is scaled by N^-1. */
static inline void ntt_cpu_op(const struct ntt_cfg *c, uint32_t *a, const uint32_t *b, const uint32_t *tw,
    uint32_t q, uint32_t *tmp)
{
    if (c->op == OP_ADD) {
        for (uint64_t x = 0; x < c->N; x++)
            a[x] = mod_add(a[x], b[x], q);
    } else if (c->op == OP_MUL) {
        uint32_t qn = mont_qneg(q);
        for (uint64_t x = 0; x < c->N; x++)
            a[x] = mod_mul_mont(a[x], b[x], q, qn);
    } else {
        ntt_fast(a, c->N, tw, q, tmp);
        if (c->op == OP_INTT) {
            uint32_t ninv = inv_mod((uint32_t)(c->N % q), q), np = shoup(ninv, q);
            for (uint64_t x = 0; x < c->N; x++)
                a[x] = mod_mul_shoup(a[x], ninv, np, q);
        }
    }
}

/* The root the op transforms with: w for ntt, w^-1 for intt. */
static inline uint32_t ntt_op_root(const struct ntt_cfg *c, uint32_t q)
{
    uint32_t w = ntt_root(q, c->N);
    return c->op == OP_INTT ? inv_mod(w, q) : w;
}

#endif
