/* The smallest useful program: each tasklet writes its id into an MRAM word. */
#include <defs.h>
#include <mram.h>
#include <stdint.h>

__mram_noinit uint64_t ids[NR_TASKLETS];
__dma_aligned uint64_t scratch[NR_TASKLETS];

int main(void)
{
    unsigned id = me();
    scratch[id] = id;
    mram_write(&scratch[id], &ids[id], sizeof(uint64_t));
    return 0;
}
