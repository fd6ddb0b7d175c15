/* Each tasklet sums its block of the input, weighted by (tasklet + 1), into sums[me()].
 * Built with -g: tests/debug/run.sh debugs it with gdb-multiarch. The marked lines are
 * found by the test script by their comments. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>

#define BLOCK 64

__mram_noinit uint32_t input[BLOCK * NR_TASKLETS];
__host uint32_t sums[NR_TASKLETS];
__host uint32_t finished;

int main(void)
{
    unsigned id = me();
    __dma_aligned uint32_t buf[BLOCK];
    mram_read(&input[id * BLOCK], buf, sizeof(buf));
    uint32_t weight = id + 1;
    uint32_t sum = 0;
    for (unsigned i = 0; i < BLOCK; i++)
        sum += buf[i] * weight;
    sums[id] = sum; /* LINE_STORE */
    finished = id; /* LINE_FINISHED */
    return 0;
}
