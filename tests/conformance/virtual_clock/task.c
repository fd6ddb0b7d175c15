/* A kernel of a known number of cycles: every tasklet runs the same loop; tasklet 0 reads
 * the cycle counter after all of them are done. */
#include <stdint.h>
#include <defs.h>
#include <barrier.h>
#include <perfcounter.h>

__host uint32_t iterations;
__host uint64_t cycles;
__host uint32_t clocks_per_sec;
__host uint32_t result[NR_TASKLETS];

BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0)
        perfcounter_config(COUNT_CYCLES, true);
    uint32_t x = t + 1;
    for (uint32_t i = 0; i < iterations; i++)
        x = (x ^ (x << 3)) + i;
    result[t] = x;
    barrier_wait(&bar);
    if (t == 0) {
        cycles = perfcounter_get();
        clocks_per_sec = CLOCKS_PER_SEC;
    }
    return 0;
}
