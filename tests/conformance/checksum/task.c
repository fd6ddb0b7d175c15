/* Checksum of a buffer held in a __mram_noinit array (written by the host
 * with dpu_copy_to on the whole set), mixed with a per-DPU key. The kernel is
 * timed with the performance counter: cycles in one launch, instructions in
 * the next (COUNT_CYCLES / COUNT_INSTRUCTIONS). */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <barrier.h>
#include <perfcounter.h>

#define BUFFER_BYTES (256 * 1024)
#define BLOCK_BYTES 2048

__mram_noinit uint8_t buffer[BUFFER_BYTES];

__host uint32_t key;
__host uint32_t nr_bytes;  /* bytes of buffer to check (multiple of 8) */
__host uint32_t mode;      /* 0: count cycles, 1: count instructions */
__host uint32_t checksum;
__host uint64_t counted;   /* perfcounter value at the end */
__host uint32_t clocks_per_sec;

static uint32_t partial[NR_TASKLETS];

BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        mem_reset();
        perfcounter_config(mode == 0 ? COUNT_CYCLES : COUNT_INSTRUCTIONS, true);
    }
    barrier_wait(&bar);
    uint8_t *cache = (uint8_t *)mem_alloc(BLOCK_BYTES);
    uint32_t sum = 0;
    for (uint32_t off = t * BLOCK_BYTES; off < nr_bytes; off += NR_TASKLETS * BLOCK_BYTES) {
        uint32_t len = nr_bytes - off < BLOCK_BYTES ? nr_bytes - off : BLOCK_BYTES;
        mram_read(&buffer[off], cache, len);
        for (uint32_t i = 0; i < len; i++)
            sum += (uint32_t)(cache[i] ^ (uint8_t)key) * (off + i + 1);
    }
    partial[t] = sum;
    barrier_wait(&bar);
    if (t == 0) {
        uint32_t s = key;
        for (int i = 0; i < NR_TASKLETS; i++)
            s += partial[i];
        checksum = s;
        counted = perfcounter_get();
        clocks_per_sec = CLOCKS_PER_SEC;
    }
    return 0;
}
