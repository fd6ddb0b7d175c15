/* Vector addition C = A + B over one element type (chosen with -DDATA_*).
 * Each tasklet streams 1 KiB blocks MRAM -> WRAM, adds, and writes back. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>

#if defined(DATA_INT32)
typedef int32_t T;
#elif defined(DATA_INT64)
typedef int64_t T;
#elif defined(DATA_FLOAT)
typedef float T;
#elif defined(DATA_DOUBLE)
typedef double T;
#else
#error "define one of DATA_INT32, DATA_INT64, DATA_FLOAT, DATA_DOUBLE"
#endif

#define BLOCK_BYTES 1024

/* Set by the host before the launch. */
__host uint32_t nr_bytes; /* bytes of one vector on this DPU (multiple of 8) */
__host uint32_t nr_blocks_done;

BARRIER_INIT(start_barrier, NR_TASKLETS);

int main(void)
{
    unsigned int tasklet = me();
    if (tasklet == 0) {
        mem_reset();
        nr_blocks_done = 0;
    }
    barrier_wait(&start_barrier);

    T *a = (T *)mem_alloc(BLOCK_BYTES);
    T *b = (T *)mem_alloc(BLOCK_BYTES);
    __mram_ptr uint8_t *va = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    __mram_ptr uint8_t *vb = va + nr_bytes;
    __mram_ptr uint8_t *vc = vb + nr_bytes;

    for (uint32_t off = tasklet * BLOCK_BYTES; off < nr_bytes; off += NR_TASKLETS * BLOCK_BYTES) {
        uint32_t len = nr_bytes - off < BLOCK_BYTES ? nr_bytes - off : BLOCK_BYTES;
        mram_read(va + off, a, len);
        mram_read(vb + off, b, len);
        for (uint32_t i = 0; i < len / sizeof(T); i++)
            a[i] += b[i];
        mram_write(a, vc + off, len);
    }
    return 0;
}
