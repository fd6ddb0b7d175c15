/* Tiny kernel for the loading test: out[i] = in[i] ^ magic (WRAM __host arrays). */
#include <stdint.h>
#include <defs.h>

#define N 64

__host uint32_t magic;
__host uint32_t in[N];
__host uint32_t out[N];

int main(void)
{
    for (unsigned int i = me(); i < N; i += NR_TASKLETS)
        out[i] = in[i] ^ magic;
    return 0;
}
