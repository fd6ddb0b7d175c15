/* Sums the `count` uint32 elements the host put at DPU_MRAM_HEAP_POINTER + offset while another
 * program was loaded, element j weighted by (j % 64) % 7 + 1 (so that a shifted read cannot
 * give the right sum). Tasklets take 256-byte blocks in turn; the last, shorter block is read
 * whole (as SimplePIM's gen_red reads a full copy block past the data) and only its first
 * elements are counted. Each tasklet leaves its sum in partial[me()]. */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>
#include <mram.h>
#include <attributes.h>

#define BLOCK_ELEMS 64

uint64_t add_block(const uint32_t *block, uint32_t count);

__host uint32_t offset;
__host uint32_t count;
__host uint64_t partial[NR_TASKLETS];
static __dma_aligned uint32_t blocks[NR_TASKLETS][BLOCK_ELEMS];

int main(void)
{
    uint32_t id = me();
    uint64_t mine = 0;
    __mram_ptr uint8_t *data = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER + offset;
    for (uint32_t first = id * BLOCK_ELEMS; first < count; first += NR_TASKLETS * BLOCK_ELEMS) {
        mram_read(data + first * sizeof(uint32_t), blocks[id], sizeof(blocks[id]));
        uint32_t n = count - first < BLOCK_ELEMS ? count - first : BLOCK_ELEMS;
        mine += add_block(blocks[id], n);
    }
    partial[id] = mine;
#ifdef PRINT_SUM
    printf("tasklet %u: %llu\n", id, (unsigned long long)mine);
#endif
    return 0;
}
