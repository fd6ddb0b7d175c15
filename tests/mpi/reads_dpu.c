/* The DPU side of tests/mpi/reads.c: fills `data` with values that depend on the DPU's
 * number and the round, sets `result`, and counts the round up (a launch the host writes
 * nothing before is the next round). */
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#define WORDS 2048

__host uint32_t id;
__host uint32_t round_nr;
__host uint32_t result;
__mram_noinit uint32_t data[WORDS];

int main(void)
{
    __dma_aligned uint32_t buf[64];
    for (uint32_t b = 0; b < WORDS; b += 64) {
        for (uint32_t k = 0; k < 64; k++)
            buf[k] = round_nr * 1000003u + id * 10007u + b + k;
        mram_write(buf, &data[b], sizeof(buf));
    }
    result = id * 7 + round_nr;
    round_nr++;
    return 0;
}
