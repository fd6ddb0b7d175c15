/* Sum reduction of int32 values into an int64. Each tasklet sums its blocks,
 * then the partial sums are combined along a binary tree whose steps are
 * synchronised with handshake_wait_for / handshake_notify. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>
#include <handshake.h>

#define BLOCK_BYTES 512

__host uint32_t nr_elems;   /* int32 elements on this DPU (even) */
__host int64_t dpu_sum;     /* result */
__host uint32_t tree_steps; /* number of handshakes tasklet 0 performed */

static int64_t partial[NR_TASKLETS];

BARRIER_INIT(start_barrier, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0)
        mem_reset();
    barrier_wait(&start_barrier);

    int32_t *cache = (int32_t *)mem_alloc(BLOCK_BYTES);
    __mram_ptr uint8_t *in = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    uint32_t bytes = nr_elems * sizeof(int32_t);
    int64_t sum = 0;
    for (uint32_t off = t * BLOCK_BYTES; off < bytes; off += NR_TASKLETS * BLOCK_BYTES) {
        uint32_t len = bytes - off < BLOCK_BYTES ? bytes - off : BLOCK_BYTES;
        mram_read(in + off, cache, len);
        for (uint32_t i = 0; i < len / 4; i++)
            sum += cache[i];
    }
    partial[t] = sum;

    uint32_t steps = 0;
    for (unsigned int s = 1; s < NR_TASKLETS; s *= 2) {
        if (t % (2 * s) == 0) {
            if (t + s < NR_TASKLETS) {
                handshake_wait_for(t + s);
                partial[t] += partial[t + s];
                steps++;
            }
        } else {
            /* t % (2 * s) == s: hand the partial sum to tasklet t - s and stop. */
            handshake_notify();
            break;
        }
    }
    if (t == 0) {
        dpu_sum = partial[0];
        tree_steps = steps;
    }
    return 0;
}
