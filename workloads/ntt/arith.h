/* 32-bit modular arithmetic of the NTT workload, one copy for the DPU kernel, the PIM host
 * program and the CPU baseline. Moduli are primes q < 2^31 (so a + b never overflows).
 * Multiplication by a constant w uses Shoup's method (w' = floor(w * 2^32 / q) precomputed):
 * one high and two low 32-bit products. Multiplication of two variables uses Montgomery's
 * (b given as b * 2^32 mod q). On the DPU, which has no multiplier, every product is the
 * compiler's multiply routine built of the DPU's multiply steps. */
#ifndef WORKLOADS_NTT_ARITH_H
#define WORKLOADS_NTT_ARITH_H

#include <stdint.h>

static inline uint32_t mod_add(uint32_t a, uint32_t b, uint32_t q)
{
    uint32_t r = a + b;
    return r >= q ? r - q : r;
}

static inline uint32_t mod_sub(uint32_t a, uint32_t b, uint32_t q)
{
    return a >= b ? a - b : a + q - b;
}

/* a * w mod q, with wp = floor(w * 2^32 / q) (Shoup). */
static inline uint32_t mod_mul_shoup(uint32_t a, uint32_t w, uint32_t wp, uint32_t q)
{
    uint32_t hi = (uint32_t)(((uint64_t)a * wp) >> 32);
    uint32_t r = a * w - hi * q;
    return r >= q ? r - q : r;
}

/* a * b * 2^-32 mod q, with qneg = -q^-1 mod 2^32 (Montgomery; b in Montgomery form gives
 * a * b mod q). */
static inline uint32_t mod_mul_mont(uint32_t a, uint32_t b, uint32_t q, uint32_t qneg)
{
    uint64_t t = (uint64_t)a * b;
    uint32_t m = (uint32_t)t * qneg;
    uint32_t u = (uint32_t)((t + (uint64_t)m * q) >> 32);
    return u >= q ? u - q : u;
}

/* One radix-2^k DIF butterfly group of an n-point NTT held in buf: the r = 2^k elements
 * base + i * st (i < r), through the radix-2 stages s0 .. s0 + k - 1. tw[2 * i], tw[2 * i + 1]
 * are w^i and its Shoup companion, w a primitive n-th root of unity, i < n / 2. */
static inline void ntt_group(uint32_t *buf, uint32_t base, uint32_t st, uint32_t k, uint32_t s0,
    uint32_t log2n, const uint32_t *tw, uint32_t q)
{
    uint32_t x[16];
    uint32_t r = 1u << k;
    for (uint32_t i = 0; i < r; i++)
        x[i] = buf[base + i * st];
    for (uint32_t ls = 0; ls < k; ls++) {
        uint32_t s = s0 + ls, half = r >> (ls + 1);
        uint32_t lmask = (1u << (log2n - s)) - 1; /* position inside the stage's block */
        for (uint32_t a = 0; a < r; a++) {
            if (a & half)
                continue;
            uint32_t u = x[a], v = x[a + half];
            uint32_t p = (base + a * st) & lmask;
            uint32_t e = p << s;
            x[a] = mod_add(u, v, q);
            x[a + half] = mod_mul_shoup(mod_sub(u, v, q), tw[2 * e], tw[2 * e + 1], q);
        }
    }
    for (uint32_t i = 0; i < r; i++)
        buf[base + i * st] = x[i];
}

#endif
