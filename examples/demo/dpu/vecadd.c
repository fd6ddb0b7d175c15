/* Vector addition c = a + b on one DPU: each tasklet streams blocks of a and b from MRAM
 * into WRAM with DMA, adds them and writes the sum back. a, b and c lie one after the other
 * in the MRAM heap. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>

#include "../common.h"

__host struct vecadd_args args;
__host struct vecadd_result result;

BARRIER_INIT(start_barrier, NR_TASKLETS);

int main(void)
{
    unsigned int id = me();
    if (id == 0) {
        mem_reset();
        perfcounter_config(COUNT_CYCLES, true);
    }
    barrier_wait(&start_barrier);

    uint32_t n = args.nr_elements;
    uint32_t bytes = n * sizeof(int32_t);
    __mram_ptr int32_t *a = (__mram_ptr int32_t *)DPU_MRAM_HEAP_POINTER;
    __mram_ptr int32_t *b = (__mram_ptr int32_t *)(DPU_MRAM_HEAP_POINTER + bytes);
    __mram_ptr int32_t *c = (__mram_ptr int32_t *)(DPU_MRAM_HEAP_POINTER + 2 * bytes);

    int32_t *wa = mem_alloc(BLOCK * sizeof(int32_t));
    int32_t *wb = mem_alloc(BLOCK * sizeof(int32_t));

    for (uint32_t first = id * BLOCK; first < n; first += NR_TASKLETS * BLOCK) {
        uint32_t count = n - first < BLOCK ? n - first : BLOCK;
        uint32_t size = (count * sizeof(int32_t) + 7) & ~7u;
        mram_read(a + first, wa, size);
        mram_read(b + first, wb, size);
        for (uint32_t i = 0; i < count; i++)
            wa[i] += wb[i];
        mram_write(wa, c + first, size);
    }

    barrier_wait(&start_barrier);
    if (id == 0)
        result.cycles = perfcounter_get();
    return 0;
}
