/* Tasklet 2 stores outside WRAM and MRAM: the DPU faults at the marked line (the core-dump
 * and attach-on-fault tests look for it). The others finish their sums. */
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
    uint32_t sum = 0;
    for (unsigned i = 0; i < BLOCK; i++)
        sum += (i + 1) * (id + 1);
    if (id == 2) {
        volatile uint32_t *p = (volatile uint32_t *)bad_address;
        *p = sum; /* LINE_FAULT */
    }
    sums[id] = sum;
    return 0;
}
