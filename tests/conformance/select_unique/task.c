/* Stream compaction on int64 values, PrIM SEL/UNI style.
 *   default:    select  - keep x when x % 3 != 0 (64-bit signed modulo)
 *   -DUNIQUE:   unique  - keep x when it differs from the element before it
 * Blocks are handed out round-robin; within a round the output offsets are
 * chained from tasklet to tasklet with handshakes, so the output keeps the
 * input order. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <attributes.h>
#include <alloc.h>
#include <barrier.h>
#include <handshake.h>

#define BLOCK_ELEMS 32
#define BLOCK_BYTES (BLOCK_ELEMS * 8)

__host uint32_t nr_elems; /* input elements on this DPU */
__host uint32_t nr_out;   /* kept elements */

static uint32_t offset_msg[NR_TASKLETS];
static uint32_t carry;

BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        mem_reset();
        carry = 0;
    }
    barrier_wait(&bar);
    int64_t *in_cache = (int64_t *)mem_alloc(BLOCK_BYTES);
    int64_t *out_cache = (int64_t *)mem_alloc(BLOCK_BYTES);
    __mram_ptr uint8_t *in = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    __mram_ptr uint8_t *out = in + nr_elems * 8;
    uint32_t nr_blocks = (nr_elems + BLOCK_ELEMS - 1) / BLOCK_ELEMS;
    uint32_t nr_rounds = (nr_blocks + NR_TASKLETS - 1) / NR_TASKLETS;

    for (uint32_t r = 0; r < nr_rounds; r++) {
        uint32_t b = r * NR_TASKLETS + t;
        uint32_t kept = 0;
        if (b < nr_blocks) {
            uint32_t first = b * BLOCK_ELEMS;
            uint32_t n = nr_elems - first < BLOCK_ELEMS ? nr_elems - first : BLOCK_ELEMS;
            mram_read(in + first * 8, in_cache, n * 8);
#ifdef UNIQUE
            int64_t prev;
            if (first == 0) {
                prev = in_cache[0] + 1; /* the very first element is always kept */
            } else {
                __dma_aligned int64_t tmp[1];
                mram_read(in + (first - 1) * 8, tmp, 8);
                prev = tmp[0];
            }
            for (uint32_t i = 0; i < n; i++) {
                if (in_cache[i] != prev)
                    out_cache[kept++] = in_cache[i];
                prev = in_cache[i];
            }
#else
            for (uint32_t i = 0; i < n; i++)
                if (in_cache[i] % 3 != 0)
                    out_cache[kept++] = in_cache[i];
#endif
        }
        uint32_t base;
        if (t == 0) {
            base = carry;
        } else {
            handshake_wait_for(t - 1);
            base = offset_msg[t];
        }
        if (t < NR_TASKLETS - 1) {
            offset_msg[t + 1] = base + kept;
            handshake_notify();
        } else {
            carry = base + kept;
        }
        if (kept)
            mram_write(out_cache, out + base * 8, kept * 8);
        barrier_wait(&bar);
    }
    if (t == 0)
        nr_out = carry;
    return 0;
}
