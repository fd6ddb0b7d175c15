/* Report test kernel: each tasklet streams its share of a vector of 32-bit words MRAM ->
 * WRAM in blocks of BLOCK_BYTES (set with -DBLOCK_BYTES), adds 1 to every word and writes it
 * back. A barrier at the start gives the tasklets some synchronisation. With -DODD_DMA, one
 * tolerated-but-suspicious DMA (for the tolerated_dma advice). */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>

#ifndef BLOCK_BYTES
#define BLOCK_BYTES 1024
#endif

__host uint32_t nr_bytes; /* bytes of the vector on this DPU (multiple of BLOCK_BYTES) */

BARRIER_INIT(start_barrier, NR_TASKLETS);

int main(void)
{
    if (me() == 0)
        mem_reset();
    barrier_wait(&start_barrier);
    uint32_t *buf = (uint32_t *)mem_alloc(BLOCK_BYTES);
    __mram_ptr uint8_t *v = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    for (uint32_t at = me() * BLOCK_BYTES; at < nr_bytes; at += NR_TASKLETS * BLOCK_BYTES) {
        mram_read(v + at, buf, BLOCK_BYTES);
        for (uint32_t i = 0; i < BLOCK_BYTES / 4; i++)
            buf[i] += 1;
        mram_write(buf, v + at, BLOCK_BYTES);
    }
#ifdef ODD_DMA
    /* A read the DPU performs although it is almost certainly a bug: 4 bytes asked from an
     * unaligned address past the vector; the DMA moves 2,048 bytes from the aligned address. */
    if (me() == 0)
        mram_read(v + nr_bytes + 3, buf, 4);
#endif
    return 0;
}
