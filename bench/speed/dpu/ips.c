/* A compute-bound kernel: every tasklet runs an integer mixing loop in registers and WRAM
 * (no DMA after the start), so simulated time is dominated by instruction issue. The
 * instruction counter gives the number of simulated instructions. */
#include <defs.h>
#include <perfcounter.h>
#include <stdint.h>
#include <barrier.h>

__host uint32_t iterations;
__host uint64_t instructions;
__host uint32_t checksum[NR_TASKLETS];

BARRIER_INIT(b, NR_TASKLETS);

int main(void)
{
    unsigned id = me();
    if (id == 0)
        perfcounter_config(COUNT_INSTRUCTIONS, true);
    barrier_wait(&b);
    uint32_t x = 0x9e3779b9u ^ id, y = id + 1, acc = 0;
    for (uint32_t i = 0; i < iterations; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        y = (y + x) ^ (y >> 3);
        acc += (x & 0xff) + (y | 1);
    }
    checksum[id] = acc;
    barrier_wait(&b);
    if (id == 0)
        instructions = perfcounter_get();
    return 0;
}
