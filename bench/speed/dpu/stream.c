/* A streaming DMA kernel shaped like PrIM's VA: every tasklet walks its blocks of three MRAM
 * arrays, reads 1 KiB blocks of two of them into WRAM, adds them element by element (and the
 * round number) and writes the sums back to the third. No locks: the tasklets only wait for
 * the DMA engine, and every issue slot between those waits executes loads, stores and
 * arithmetic (a compute-bound loop over WRAM buffers). */
#include <defs.h>
#include <mram.h>
#include <barrier.h>
#include <perfcounter.h>
#include <stdint.h>

#define BLOCK_BYTES 1024
#define BLOCK_WORDS (BLOCK_BYTES / 4)
#define ELEMENTS (1 << 16) /* per array: 256 KiB of MRAM each */

__host uint32_t iterations;
__host uint64_t instructions;
__host uint32_t checksum[NR_TASKLETS];

__mram_noinit uint32_t in_a[ELEMENTS];
__mram_noinit uint32_t in_b[ELEMENTS];
__mram_noinit uint32_t out[ELEMENTS];

__dma_aligned uint32_t block_a[NR_TASKLETS][BLOCK_WORDS];
__dma_aligned uint32_t block_b[NR_TASKLETS][BLOCK_WORDS];

BARRIER_INIT(b, NR_TASKLETS);

int main(void)
{
    unsigned id = me();
    if (id == 0) {
        perfcounter_config(COUNT_INSTRUCTIONS, true);
    }
    barrier_wait(&b);
    uint32_t *x = block_a[id], *y = block_b[id];
    uint32_t acc = 0;
    for (uint32_t round = 0; round < iterations; round++) {
        for (uint32_t at = id * BLOCK_WORDS; at < ELEMENTS; at += NR_TASKLETS * BLOCK_WORDS) {
            mram_read(&in_a[at], x, BLOCK_BYTES);
            mram_read(&in_b[at], y, BLOCK_BYTES);
            for (uint32_t i = 0; i < BLOCK_WORDS; i++) {
                uint32_t sum = x[i] + y[i] + round;
                y[i] = sum;
                acc += sum;
            }
            mram_write(y, &out[at], BLOCK_BYTES);
        }
    }
    checksum[id] = acc;
    barrier_wait(&b);
    if (id == 0)
        instructions = perfcounter_get();
    return 0;
}
