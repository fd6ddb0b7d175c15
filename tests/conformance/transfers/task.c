/* Kernel for the transfer test: m_out[k] = m_in[k] + w_in[k % 32] + id,
 * w_out[k] = w_in[k] * 2 + id, where id is a per-DPU __host value. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <attributes.h>

#define NW 32
#define NM 512
#define CH 64

__host uint64_t w_in[NW];
__host uint64_t w_out[NW];
__host uint64_t id;
__mram uint64_t m_in[NM];
__mram uint64_t m_out[NM];

static __dma_aligned uint64_t buf[NR_TASKLETS][CH];

int main(void)
{
    unsigned int t = me();
    for (unsigned int c = t * CH; c < NM; c += NR_TASKLETS * CH) {
        mram_read(&m_in[c], buf[t], sizeof(buf[t]));
        for (int k = 0; k < CH; k++)
            buf[t][k] += w_in[(c + k) % NW] + id;
        mram_write(buf[t], &m_out[c], sizeof(buf[t]));
    }
    for (unsigned int k = t; k < NW; k += NR_TASKLETS)
        w_out[k] = w_in[k] * 2 + id;
    return 0;
}
