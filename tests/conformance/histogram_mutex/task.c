/* Histogram of 12-bit values into 64 bins shared by all tasklets, each
 * increment protected by a mutex (MUTEX_INIT / mutex_lock / mutex_unlock);
 * odd tasklets take the lock by spinning on mutex_trylock. */
#include <stdint.h>
#include <stdbool.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>
#include <mutex.h>

#define NR_BINS 64
#define BLOCK_BYTES 256

__host uint32_t nr_elems;
__host uint32_t histo[NR_BINS];
__host uint32_t trylock_ok; /* 1 if mutex_trylock behaved as documented */

MUTEX_INIT(histo_mutex);
BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        mem_reset();
        for (int i = 0; i < NR_BINS; i++)
            histo[i] = 0;
    }
    barrier_wait(&bar);

    uint32_t *cache = (uint32_t *)mem_alloc(BLOCK_BYTES);
    __mram_ptr uint8_t *in = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    uint32_t bytes = nr_elems * 4;
    for (uint32_t off = t * BLOCK_BYTES; off < bytes; off += NR_TASKLETS * BLOCK_BYTES) {
        uint32_t len = bytes - off < BLOCK_BYTES ? bytes - off : BLOCK_BYTES;
        mram_read(in + off, cache, len);
        for (uint32_t i = 0; i < len / 4; i++) {
            uint32_t bin = (cache[i] & 0xfff) * NR_BINS >> 12;
            if (t & 1) {
                while (!mutex_trylock(histo_mutex)) {
                }
            } else {
                mutex_lock(histo_mutex);
            }
            histo[bin]++;
            mutex_unlock(histo_mutex);
        }
    }
    barrier_wait(&bar);
    if (t == 0) {
        bool first = mutex_trylock(histo_mutex);  /* free: must succeed */
        bool second = mutex_trylock(histo_mutex); /* held: must fail */
        mutex_unlock(histo_mutex);
        trylock_ok = first && !second;
    }
    return 0;
}
