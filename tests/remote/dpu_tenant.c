/* The tenant's kernel: adds `add` to each word of `data` (MRAM), `spins` times over. */
#include <mram.h>
#include <stdint.h>

#define WORDS 256
__mram_noinit uint32_t data[WORDS];
__host uint32_t add;
__host uint32_t spins;
__dma_aligned uint32_t buf[WORDS];

int main(void)
{
    mram_read(data, buf, sizeof(buf));
    for (uint32_t s = 0; s < spins; s++)
        for (uint32_t i = 0; i < WORDS; i++)
            buf[i] += add;
    mram_write(buf, data, sizeof(buf));
    return 0;
}
