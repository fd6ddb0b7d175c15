/* (a) MRAM latency: perfcounter cycles around one mram_read or mram_write of `size` bytes by
 * a single tasklet. op 0 = read, 1 = write, 2 = nothing (the cost of the measurement itself,
 * subtracted by the driver). The result is the mean over `reps` transfers to consecutive MRAM
 * blocks. */
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>

#include "../common.h"

__host struct bench_args args;
__host struct bench_result result;

static __dma_aligned uint8_t buffer[2048];

int main(void)
{
    __mram_ptr uint8_t *mram = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    uint32_t size = args.size, reps = args.reps;
    uint64_t total = 0;
    perfcounter_config(COUNT_CYCLES, true);
    /* One loop per case, so that nothing but the transfer lies between the two reads of the
     * counter. */
    if (args.op == 0) {
        for (uint32_t r = 0; r < reps; r++) {
            __mram_ptr uint8_t *at = mram + r * 2048u;
            perfcounter_t t0 = perfcounter_get();
            mram_read(at, buffer, size);
            total += perfcounter_get() - t0;
        }
    } else if (args.op == 1) {
        for (uint32_t r = 0; r < reps; r++) {
            __mram_ptr uint8_t *at = mram + r * 2048u;
            perfcounter_t t0 = perfcounter_get();
            mram_write(buffer, at, size);
            total += perfcounter_get() - t0;
        }
    } else {
        for (uint32_t r = 0; r < reps; r++) {
            perfcounter_t t0 = perfcounter_get();
            total += perfcounter_get() - t0;
        }
    }
    result.cycles = total / reps;
    result.check = buffer[0];
    return 0;
}
