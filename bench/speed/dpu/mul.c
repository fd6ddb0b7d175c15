/* A multiply-heavy kernel: every tasklet runs a loop of 32-bit multiplications in registers
 * (each a call of the runtime's __mulsi3, which the engine charges as the DPU's mul_step
 * sequence: one environment call plus its issue slots), with no DMA after the start. */
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
        x = x * 2654435761u + i;
        y = (y ^ (x >> 7)) * 0x85ebca6bu;
        acc += (x >> 16) * (y & 0xffffu);
    }
    checksum[id] = acc;
    barrier_wait(&b);
    if (id == 0)
        instructions = perfcounter_get();
    return 0;
}
