/* task.c behind a gate: every tasklet spins until `go` is set, which only a debugger does
 * (tests/debug/run.sh interrupts the spinning DPU with Ctrl-C and sets it). */
#include <stdint.h>
#include <defs.h>
#include <mram.h>

#define BLOCK 64

__mram_noinit uint32_t input[BLOCK * NR_TASKLETS];
__host uint32_t sums[NR_TASKLETS];
__host volatile uint32_t go;

int main(void)
{
    unsigned id = me();
    while (!go) /* LINE_SPIN */
        ;
    __dma_aligned uint32_t buf[BLOCK];
    mram_read(&input[id * BLOCK], buf, sizeof(buf));
    uint32_t sum = 0;
    for (unsigned i = 0; i < BLOCK; i++)
        sum += buf[i] * (id + 1);
    sums[id] = sum;
    return 0;
}
