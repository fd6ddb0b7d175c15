/* (c) WRAM bandwidth, STREAM-like, on 64-bit integers already in WRAM (no DMA at all). Each
 * tasklet owns three WRAM arrays a, b, c of `n` elements and runs the kernel over them `reps`
 * times: COPY c = a, ADD c = a + b, SCALE c = s * a, TRIAD c = a + s * b (`n` must be N_MAX).
 * The loops are unrolled over the whole block so that, as in the published measurement (which
 * counts the 2 instructions `ld` + `sd` per 8-byte element of COPY), loop control vanishes and
 * the loads, stores and the operation dominate. Bytes counted = bytes loaded + bytes stored.
 * Timing follows the published microbenchmark (PrIM STREAM on WRAM): every repetition starts
 * together behind a barrier, each tasklet times only its own kernel call and sums its times
 * (barriers are not timed); the result is the largest sum over the tasklets. */
#include <barrier.h>
#include <defs.h>
#include <perfcounter.h>
#include <stdint.h>

#include "../common.h"

#define N_MAX 64 /* elements per array and tasklet (3 x 512 B per tasklet) */

__host struct bench_args args;
__host struct bench_result result;
__host uint64_t sums[NR_TASKLETS];

static uint64_t arrays[NR_TASKLETS][3][N_MAX];
static uint64_t tasklet_cycles[NR_TASKLETS];

BARRIER_INIT(bar, NR_TASKLETS);

/* The whole block, fully unrolled (as the published kernel's `#pragma unroll` over its block):
 * per element only the loads, the operation and the store remain. */
#define UNROLL_ALL(STMT) \
    _Pragma("GCC unroll 64") for (uint32_t i = 0; i < N_MAX; i++) { STMT(i); }
#define COPY_AT(k) c[k] = a[k]
#define ADD_AT(k) c[k] = a[k] + b[k]
#define SCALE_AT(k) c[k] = s * a[k]
#define TRIAD_AT(k) c[k] = a[k] + s * b[k]

static void __attribute__((noinline)) k_copy(uint64_t *restrict c, const uint64_t *restrict a, uint32_t n)
{
    UNROLL_ALL(COPY_AT)
}
static void __attribute__((noinline)) k_add(uint64_t *restrict c, const uint64_t *restrict a,
    const uint64_t *restrict b, uint32_t n)
{
    UNROLL_ALL(ADD_AT)
}
static void __attribute__((noinline)) k_scale(uint64_t *restrict c, const uint64_t *restrict a, uint64_t s, uint32_t n)
{
    UNROLL_ALL(SCALE_AT)
}
static void __attribute__((noinline)) k_triad(uint64_t *restrict c, const uint64_t *restrict a,
    const uint64_t *restrict b, uint64_t s, uint32_t n)
{
    UNROLL_ALL(TRIAD_AT)
}

int main(void)
{
    uint32_t id = me();
    uint32_t n = args.n, op = args.op, reps = args.reps;
    uint64_t s = args.scalar;
    uint64_t *a = arrays[id][0], *b = arrays[id][1], *c = arrays[id][2];
    for (uint32_t i = 0; i < n; i++) {
        a[i] = i + id;
        b[i] = 3 * i + 1;
    }
    if (id == 0)
        perfcounter_config(COUNT_CYCLES, true);
    uint64_t mine = 0;
    for (uint32_t r = 0; r < reps; r++) {
        barrier_wait(&bar);
        uint64_t t0 = perfcounter_get();
        switch (op) {
        case S_COPY: k_copy(c, a, n); break;
        case S_ADD: k_add(c, a, b, n); break;
        case S_SCALE: k_scale(c, a, s, n); break;
        default: k_triad(c, a, b, s, n); break;
        }
        mine += perfcounter_get() - t0;
        barrier_wait(&bar);
    }
    tasklet_cycles[id] = mine;
    sums[id] = c[n - 1];
    barrier_wait(&bar);
    if (id == 0) {
        uint64_t most = 0;
        for (uint32_t t = 0; t < NR_TASKLETS; t++)
            most = tasklet_cycles[t] > most ? tasklet_cycles[t] : most;
        result.cycles = most;
        result.check = sums[0];
    }
    return 0;
}
