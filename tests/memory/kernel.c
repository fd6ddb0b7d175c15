/* Kernels over MRAM arrays for the memory-store tests and bench/memory.
 * Arrays a, b, c of n_bytes each from the MRAM heap; 1 KiB blocks spread over tasklets.
 *   mode 0: sums[t] = sum of the words of every stride-th block of a (sampled checksum)
 *   mode 1..4: STREAM copy c=a, scale b=3c, add c=a+b, triad a=b+3c (uint32 words)
 *   mode 5: step: a = 5a + 1 (one step of a multi-launch program), sums[t] as in mode 0 over
 *           all of a; launches += 1
 *   mode 6: faults (a DMA past the end of MRAM) after tasklet 0 wrote launches = 1000
 * cycles: the cycle counter at the end of the launch (tasklet 0). */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>
#include <perfcounter.h>

#define BLOCK 1024
#define WORDS (BLOCK / 4)

__host uint32_t mode;
__host uint32_t n_bytes;
__host uint32_t stride = BLOCK;
__host uint64_t sums[NR_TASKLETS];
__host uint32_t launches;
__host uint64_t cycles;

static __dma_aligned uint32_t x[NR_TASKLETS][WORDS];
static __dma_aligned uint32_t y[NR_TASKLETS][WORDS];

BARRIER_INIT(done, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0)
        perfcounter_config(COUNT_CYCLES, true);
    if (mode == 6) {
        if (t == 0) {
            launches = 1000;
            mram_read((__mram_ptr void *)(DPU_MRAM_HEAP_POINTER + (64u << 20)), x[0], 8);
        }
        return 0;
    }
    __mram_ptr uint8_t *a = DPU_MRAM_HEAP_POINTER;
    __mram_ptr uint8_t *b = a + n_bytes;
    __mram_ptr uint8_t *c = b + n_bytes;
    uint32_t *xt = x[t], *yt = y[t];
    uint64_t sum = 0;
    uint32_t step = mode == 0 ? stride : BLOCK;
    for (uint32_t off = t * step; off < n_bytes; off += NR_TASKLETS * step) {
        switch (mode) {
        case 0:
            mram_read(a + off, xt, BLOCK);
            for (int k = 0; k < WORDS; k++)
                sum += xt[k];
            break;
        case 1:
            mram_read(a + off, xt, BLOCK);
            mram_write(xt, c + off, BLOCK);
            break;
        case 2:
            mram_read(c + off, xt, BLOCK);
            for (int k = 0; k < WORDS; k++)
                xt[k] = xt[k] * 3;
            mram_write(xt, b + off, BLOCK);
            break;
        case 3:
            mram_read(a + off, xt, BLOCK);
            mram_read(b + off, yt, BLOCK);
            for (int k = 0; k < WORDS; k++)
                xt[k] += yt[k];
            mram_write(xt, c + off, BLOCK);
            break;
        case 4:
            mram_read(b + off, xt, BLOCK);
            mram_read(c + off, yt, BLOCK);
            for (int k = 0; k < WORDS; k++)
                xt[k] += yt[k] * 3;
            mram_write(xt, a + off, BLOCK);
            break;
        case 5:
            mram_read(a + off, xt, BLOCK);
            /* data-dependent work, so that cycle counts depend on MRAM contents too */
            for (uint32_t r = 0; r < (xt[0] & 15); r++)
                xt[1] = xt[1] * 3 + r;
            for (int k = 0; k < WORDS; k++) {
                xt[k] = xt[k] * 5 + 1;
                sum += xt[k];
            }
            mram_write(xt, a + off, BLOCK);
            break;
        }
    }
    sums[t] = sum;
    barrier_wait(&done);
    if (t == 0) {
        launches++;
        cycles = perfcounter_get();
    }
    return 0;
}
