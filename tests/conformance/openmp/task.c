/* Kernel for the OpenMP test: sum of squares of uint32 words, plus the DPU's key. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <barrier.h>
#include <attributes.h>

#define N 2048
#define CH 128

__mram uint32_t data[N];
__host uint32_t key;
__host uint64_t result;

static uint64_t partial[NR_TASKLETS];
static __dma_aligned uint32_t buf[NR_TASKLETS][CH];
BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    uint64_t s = 0;
    for (unsigned int c = t * CH; c < N; c += NR_TASKLETS * CH) {
        mram_read(&data[c], buf[t], sizeof(buf[t]));
        for (int k = 0; k < CH; k++)
            s += (uint64_t)buf[t][k] * buf[t][k];
    }
    partial[t] = s;
    barrier_wait(&bar);
    if (t == 0) {
        uint64_t total = key;
        for (int k = 0; k < NR_TASKLETS; k++)
            total += partial[k];
        result = total;
    }
    return 0;
}
