/* The DPU engines conformance kernel: register work, 32-bit multiplications, WRAM shared under a
 * mutex, DMA round trips and a barrier, so that translated code, the interpreter's events and
 * the arithmetic calls all take part. Each tasklet mixes its part of the input (MRAM) and adds
 * its result into a shared sum; tasklet 0 records the launch's cycles. */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <perfcounter.h>
#include <stdint.h>

#define WORDS_PER_TASKLET 256

__mram_noinit uint32_t input[NR_TASKLETS * WORDS_PER_TASKLET];
__mram_noinit uint32_t output[NR_TASKLETS * WORDS_PER_TASKLET];
__host uint32_t sum;
__host uint64_t cycles;
__host uint32_t rounds;

MUTEX_INIT(sum_mutex);
BARRIER_INIT(start, NR_TASKLETS);

static uint32_t buffer[NR_TASKLETS][64];

int main(void)
{
    unsigned id = me();
    if (id == 0) {
        perfcounter_config(COUNT_CYCLES, true);
        sum = 0;
    }
    barrier_wait(&start);
    uint32_t acc = 0;
    for (uint32_t r = 0; r < rounds; r++) {
        for (unsigned block = 0; block < WORDS_PER_TASKLET / 64; block++) {
            uint32_t at = id * WORDS_PER_TASKLET + block * 64;
            mram_read(&input[at], buffer[id], sizeof(buffer[id]));
            for (unsigned i = 0; i < 64; i++) {
                uint32_t x = buffer[id][i] ^ (r * 0x9e3779b9u);
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x = x * 2654435761u + i;
                buffer[id][i] = x;
                acc += x >> 7;
            }
            mram_write(buffer[id], &output[at], sizeof(buffer[id]));
        }
        mutex_lock(sum_mutex);
        sum += acc;
        mutex_unlock(sum_mutex);
    }
    barrier_wait(&start);
    if (id == 0)
        cycles = perfcounter_get();
    return 0;
}
