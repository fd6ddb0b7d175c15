/* A kernel whose timing depends on everything the engine models: DMA contention between
 * tasklets, a contended mutex, multiply/divide calls, a barrier, and data-dependent control
 * flow. Each DPU gets different data, so DPUs finish at different cycles. */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <perfcounter.h>
#include <stdint.h>

#define WORDS 512 /* 64-bit words per DPU in MRAM */
#define CHUNK 32  /* words per DMA */

__mram_noinit uint64_t data[WORDS];
__host uint64_t total;
__host uint64_t cycles;
__host uint32_t mixed[NR_TASKLETS];

MUTEX_INIT(total_lock);
BARRIER_INIT(done, NR_TASKLETS);

int main(void)
{
    unsigned id = me();
    __dma_aligned uint64_t buf[CHUNK];
    if (id == 0) {
        total = 0;
        perfcounter_config(COUNT_CYCLES, true);
    }
    barrier_wait(&done);
    uint32_t mix = id * 2654435761u;
    for (unsigned c = id; c < WORDS / CHUNK; c += NR_TASKLETS) {
        mram_read(&data[c * CHUNK], buf, sizeof(buf));
        uint64_t local = 0;
        for (unsigned i = 0; i < CHUNK; i++) {
            uint64_t v = buf[i];
            if (v & 1)
                local += v / 7;
            else
                local += v * 3;
            mix = mix * 31u + (uint32_t)v % 1000u;
        }
        mutex_lock(total_lock);
        total += local;
        mutex_unlock(total_lock);
    }
    mixed[id] = mix;
    barrier_wait(&done);
    if (id == 0)
        cycles = perfcounter_get();
    return 0;
}
