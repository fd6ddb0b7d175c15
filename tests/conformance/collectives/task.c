/* Adds 1 to each of the first `words` 32-bit words of the MRAM heap (proves that the user's
 * program, with its heap, is loaded again after the collectives ran their own programs). */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>

__host uint32_t words;
BARRIER_INIT(start, NR_TASKLETS);

int main(void)
{
    if (me() == 0)
        mem_reset();
    barrier_wait(&start);
    uint32_t *buf = (uint32_t *)mem_alloc(256);
    __mram_ptr uint8_t *heap = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    for (uint32_t at = me() * 256; at < words * 4; at += NR_TASKLETS * 256) {
        mram_read(heap + at, buf, 256);
        for (int i = 0; i < 64; i++)
            buf[i] += 1;
        mram_write(buf, heap + at, 256);
    }
    return 0;
}
