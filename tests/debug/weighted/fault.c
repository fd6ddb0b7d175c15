/* Tasklet 2 stores outside WRAM and MRAM: the DPU faults at the marked line (the core-dump
 * and attach-on-fault tests look for it). The others finish their sums. Each first reads
 * its block's first words from MRAM, so that a core holds MRAM pages. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>

#define BLOCK 64

__mram_noinit uint32_t input[BLOCK * NR_TASKLETS];
__host uint32_t sums[NR_TASKLETS];
__host uint32_t finished;
__host uint32_t bad_address = 0x00200000;

int main(void)
{
    unsigned id = me();
    __dma_aligned uint32_t buf[8];
    mram_read(&input[id * BLOCK], buf, sizeof(buf));
    uint32_t sum = buf[0];
    for (unsigned i = 0; i < BLOCK; i++)
        sum += (i + 1) * (id + 1);
    if (id == 2) {
        volatile uint32_t *p = (volatile uint32_t *)bad_address;
        *p = sum; /* LINE_FAULT */
    }
    sums[id] = sum;
    return 0;
}
