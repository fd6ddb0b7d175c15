/* Histogram with private per-tasklet bins merged in two levels:
 *  - tasklets form NR_GROUPS groups; each group synchronises on a barrier_t
 *    filled by hand (wait_queue = 0xff, count = initial_count = group size,
 *    lock = address of an atomic bit of ATOMIC_BIT_INIT(group_bits)[...]);
 *  - a global BARRIER_INIT barrier separates the phases;
 *  - a WRAM counter of processed elements is protected by ATOMIC_BIT_ACQUIRE /
 *    ATOMIC_BIT_RELEASE on its own atomic bit. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>
#include <atomic_bit.h>

#define NR_BINS 32
#define NR_GROUPS 4
#define BLOCK_BYTES 512

__host uint32_t nr_elems;
__host uint32_t histo[NR_BINS];
__host uint32_t processed;

static uint32_t *private_histo[NR_TASKLETS];
static uint32_t group_histo[NR_GROUPS][NR_BINS];
static barrier_t group_barriers[NR_GROUPS];

ATOMIC_BIT_INIT(group_bits)[NR_GROUPS];
ATOMIC_BIT_INIT(counter_bit);
BARRIER_INIT(global_barrier, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    unsigned int group = t % NR_GROUPS;
    unsigned int group_size = NR_TASKLETS / NR_GROUPS; /* NR_TASKLETS multiple of NR_GROUPS */
    unsigned int rank_in_group = t / NR_GROUPS;

    if (t == 0) {
        mem_reset();
        processed = 0;
        for (unsigned int g = 0; g < NR_GROUPS; g++) {
            group_barriers[g].wait_queue = 0xff;
            group_barriers[g].count = group_size;
            group_barriers[g].initial_count = group_size;
            group_barriers[g].lock = (uint8_t)&ATOMIC_BIT_GET(group_bits)[g];
        }
    }
    barrier_wait(&global_barrier);

    uint32_t *mine = (uint32_t *)mem_alloc(NR_BINS * sizeof(uint32_t));
    uint32_t *cache = (uint32_t *)mem_alloc(BLOCK_BYTES);
    private_histo[t] = mine;
    for (int b = 0; b < NR_BINS; b++)
        mine[b] = 0;

    __mram_ptr uint8_t *in = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    uint32_t bytes = nr_elems * 4;
    uint32_t local_count = 0;
    for (uint32_t off = t * BLOCK_BYTES; off < bytes; off += NR_TASKLETS * BLOCK_BYTES) {
        uint32_t len = bytes - off < BLOCK_BYTES ? bytes - off : BLOCK_BYTES;
        mram_read(in + off, cache, len);
        for (uint32_t i = 0; i < len / 4; i++)
            mine[cache[i] % NR_BINS]++;
        local_count += len / 4;
    }
    ATOMIC_BIT_ACQUIRE(counter_bit);
    processed += local_count;
    ATOMIC_BIT_RELEASE(counter_bit);

    /* Level 1: the group's members reduce into the group histogram, bins split by rank. */
    barrier_wait(&group_barriers[group]);
    for (unsigned int b = rank_in_group; b < NR_BINS; b += group_size) {
        uint32_t s = 0;
        for (unsigned int m = group; m < NR_TASKLETS; m += NR_GROUPS)
            s += private_histo[m][b];
        group_histo[group][b] = s;
    }
    barrier_wait(&group_barriers[group]); /* reuse: the barrier must re-arm itself */

    /* Level 2: all tasklets merge the group histograms. */
    barrier_wait(&global_barrier);
    for (unsigned int b = t; b < NR_BINS; b += NR_TASKLETS) {
        uint32_t s = 0;
        for (unsigned int g = 0; g < NR_GROUPS; g++)
            s += group_histo[g][b];
        histo[b] = s;
    }
    return 0;
}
