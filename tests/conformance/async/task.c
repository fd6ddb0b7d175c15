/* Small kernel for the asynchronous test: out[k] = in[k] * mult + rank_param. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <attributes.h>

#define N 256
#define PER_TASKLET (N / NR_TASKLETS)

__host uint32_t rank_param;
__host uint32_t mult;
__mram uint32_t in[N];
__mram uint32_t out[N];

int main(void)
{
    __dma_aligned uint32_t buf[PER_TASKLET];
    unsigned int first = me() * PER_TASKLET;
    mram_read(&in[first], buf, sizeof(buf));
    for (int k = 0; k < PER_TASKLET; k++)
        buf[k] = buf[k] * mult + rank_param;
    mram_write(buf, &out[first], sizeof(buf));
    return 0;
}
