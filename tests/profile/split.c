/* Profiler test kernel: the work splits 15 % / 85 % between light() and heavy() by
 * construction (the same loop, 15 and 85 iterations per unit), then tasklet 0 alone runs
 * extra() while the others wait at a barrier, then every tasklet reads its MRAM block in
 * small DMA transfers (waits for its DMA). Each tasklet writes its checksum for the host.
 * With -DFAULT, tasklet 3 faults before the barrier. */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#define UNITS 40
#define BLOCK 64

BARRIER_INIT(phase, NR_TASKLETS);

__host uint32_t seed;
__host uint32_t result[NR_TASKLETS];
__mram_noinit uint32_t data[NR_TASKLETS * 1024];
__dma_aligned uint32_t cache[NR_TASKLETS][BLOCK / 4];

/* Identical loop bodies (the constants differ so that the two are not merged). */
__attribute__((noinline)) uint32_t light(uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        x = (x << 3) ^ (x >> 2) ^ (i + 0x1234u);
    return x;
}

__attribute__((noinline)) uint32_t heavy(uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        x = (x << 3) ^ (x >> 2) ^ (i + 0x4321u);
    return x;
}

__attribute__((noinline)) uint32_t extra(uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        x = x * 3u + i;
    return x;
}

int main(void)
{
    uint32_t id = me();
    uint32_t x = seed + id;
    for (uint32_t u = 0; u < UNITS; u++) {
        x = light(15, x);
        x = heavy(85, x);
    }
    if (id == 0)
        x = extra(2000, x);
#ifdef FAULT
    /* (The fault test: tasklet 3 stores outside every memory.) */
    if (id == 3)
        *(volatile uint32_t *)0x7000000u = 1; /* FAULT LINE */
#endif
    barrier_wait(&phase);
    uint32_t sum = 0;
    for (uint32_t off = 0; off < 1024 * 4; off += BLOCK) {
        mram_read(&data[id * 1024] + off / 4, cache[id], BLOCK);
        sum += cache[id][0];
    }
    result[id] = x + sum;
    return 0;
}
