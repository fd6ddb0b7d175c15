/* Inclusive prefix sum (uint32, wrapping) in two kernels, PrIM SCAN-SSA style:
 *   kernel 0: each tasklet sums its contiguous chunk; the per-tasklet sums are
 *             scanned (kept in WRAM for kernel 1) and the DPU total published;
 *   host:     scans the DPU totals and sends each DPU its base;
 *   kernel 1: each tasklet rescans its chunk from base + its tasklet prefix.
 * WRAM globals keep their values between the two launches. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>

#define BLOCK_BYTES 256

__host uint32_t kernel;   /* 0 or 1 */
__host uint32_t nr_elems; /* per DPU, multiple of 2 * NR_TASKLETS */
__host uint32_t dpu_total;
__host uint32_t dpu_base;

static uint32_t tasklet_sum[NR_TASKLETS];
static uint32_t tasklet_prefix[NR_TASKLETS];

BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0)
        mem_reset();
    barrier_wait(&bar);
    uint32_t *cache = (uint32_t *)mem_alloc(BLOCK_BYTES);
    __mram_ptr uint8_t *in = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    __mram_ptr uint8_t *out = in + nr_elems * 4;
    uint32_t chunk = nr_elems / NR_TASKLETS * 4;
    uint32_t begin = t * chunk, end = begin + chunk;

    if (kernel == 0) {
        uint32_t s = 0;
        for (uint32_t off = begin; off < end; off += BLOCK_BYTES) {
            uint32_t len = end - off < BLOCK_BYTES ? end - off : BLOCK_BYTES;
            mram_read(in + off, cache, len);
            for (uint32_t i = 0; i < len / 4; i++)
                s += cache[i];
        }
        tasklet_sum[t] = s;
        barrier_wait(&bar);
        if (t == 0) {
            uint32_t acc = 0;
            for (int i = 0; i < NR_TASKLETS; i++) {
                tasklet_prefix[i] = acc;
                acc += tasklet_sum[i];
            }
            dpu_total = acc;
        }
    } else {
        uint32_t acc = dpu_base + tasklet_prefix[t];
        for (uint32_t off = begin; off < end; off += BLOCK_BYTES) {
            uint32_t len = end - off < BLOCK_BYTES ? end - off : BLOCK_BYTES;
            mram_read(in + off, cache, len);
            for (uint32_t i = 0; i < len / 4; i++) {
                acc += cache[i];
                cache[i] = acc;
            }
            mram_write(cache, out + off, len);
        }
    }
    return 0;
}
