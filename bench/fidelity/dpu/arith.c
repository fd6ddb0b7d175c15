/* (d) Arithmetic throughput. Each tasklet owns a 1 KiB WRAM array (256 x 32-bit or 128 x
 * 64-bit elements) and runs, `reps` times, a loop that for every element loads it, applies one
 * operation with a scalar operand and stores the result back:  x = a[i]; x = x OP s; a[i] = x.
 * That is the whole per-element work: load, operation, store and loop control (the published
 * microbenchmark's structure). Integer multiply/divide and all floating point go through the
 * DPU runtime's software routines, as on the DPU.
 * Timing follows the published microbenchmark (PrIM, Arithmetic-Throughput): every repetition
 * is one block, started together behind a barrier; each tasklet times only its own loop over
 * the block with the performance counter and sums its times (barriers are not timed); the
 * result is the largest sum over the tasklets. throughput = NR_TASKLETS x elements x reps /
 * that time.
 * Operands are the published benchmark's: every element a fresh pseudo-random value in
 * [0, 2^31) (the host's rand() there; here a xorshift generator, reseeded before every timed
 * pass so that each pass sees the same fresh values: the published kernel updates every
 * element once), the scalar 1048576 (its input size per DPU, 2^20) for every type. The cost of
 * integer multiplication and division depends on the operands (mul_step per bit of the smaller
 * factor, div_step per bit of difference), so the operands matter. */
#include <barrier.h>
#include <defs.h>
#include <perfcounter.h>
#include <stdint.h>

#include "../common.h"

#define BYTES 1024

__host struct bench_args args;
__host struct bench_result result;
__host uint64_t sums[NR_TASKLETS];
static uint64_t tasklet_cycles[NR_TASKLETS];

static uint64_t buffers[NR_TASKLETS][BYTES / 8];

BARRIER_INIT(bar, NR_TASKLETS);

#define KERNEL(NAME, T, OP)                                                                  \
    static void __attribute__((noinline)) NAME(T *a, uint32_t n, T s)                         \
    {                                                                                        \
        for (uint32_t i = 0; i < n; i++) {                                                   \
            T x = a[i];                                                                      \
            x = x OP s;                                                                      \
            a[i] = x;                                                                        \
        }                                                                                    \
    }
#define KERNELS(TN, T)                                                                       \
    KERNEL(TN##_add, T, +) KERNEL(TN##_sub, T, -) KERNEL(TN##_mul, T, *) KERNEL(TN##_div, T, /)

KERNELS(i32, int32_t)
KERNELS(i64, int64_t)
KERNELS(f32, float)
KERNELS(f64, double)

#define DISPATCH(TN, T, OPN, BUF, S)                                                         \
    switch (OPN) {                                                                           \
    case O_ADD: TN##_add((T *)(BUF), n, (S)); break;                                          \
    case O_SUB: TN##_sub((T *)(BUF), n, (S)); break;                                          \
    case O_MUL: TN##_mul((T *)(BUF), n, (S)); break;                                          \
    default: TN##_div((T *)(BUF), n, (S)); break;                                             \
    }

/* Fresh operands, untimed: pseudo-random values in [0, 2^31) (xorshift32, seeded by the
 * tasklet; shifts only, no multiplication), converted to the element type. */
static void fill(void *buf, uint32_t type, uint32_t n, uint32_t id)
{
    uint32_t x = 0x9e3779b9u ^ (id << 8);
    for (uint32_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        uint32_t v = x >> 1;
        switch (type) {
        case T_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
        case T_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
        case T_FLOAT: ((float *)buf)[i] = (float)v; break;
        default: ((double *)buf)[i] = (double)v; break;
        }
    }
}

int main(void)
{
    uint32_t id = me();
    uint32_t type = args.op / 4, opn = args.op % 4, reps = args.reps;
    void *buf = buffers[id];
    /* The scalar comes from the host (1048576, as the published benchmark's), so that the
     * compiler cannot specialise the kernels for a constant (e.g. turn a division into a
     * shift). */
    int32_t s32 = (int32_t)args.scalar;
    int64_t s64 = (int64_t)args.scalar;
    float sf = (float)s32;
    double sd = (double)s32;
    uint32_t n = (type == T_INT32 || type == T_FLOAT) ? BYTES / 4 : BYTES / 8;
    if (id == 0)
        perfcounter_config(COUNT_CYCLES, true);
    uint64_t mine = 0;
    for (uint32_t r = 0; r < reps; r++) {
        fill(buf, type, n, id);
        barrier_wait(&bar);
        uint64_t t0 = perfcounter_get();
        switch (type) {
        case T_INT32: DISPATCH(i32, int32_t, opn, buf, s32) break;
        case T_INT64: DISPATCH(i64, int64_t, opn, buf, s64) break;
        case T_FLOAT: DISPATCH(f32, float, opn, buf, sf) break;
        default: DISPATCH(f64, double, opn, buf, sd) break;
        }
        mine += perfcounter_get() - t0;
        barrier_wait(&bar);
    }
    tasklet_cycles[id] = mine;
    sums[id] = buffers[id][0];
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
