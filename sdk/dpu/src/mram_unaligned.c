/* OpenPIM DPU runtime: MRAM transfers of any alignment. */
#include <stdint.h>
#include <string.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <openpim_ecall.h>

static inline void dma_read(uint32_t mram, void *wram, uint32_t n)
{
    __ecall3(__ECALL_DMA_MRAM_TO_WRAM, mram, (unsigned int)(uintptr_t)wram, n);
}

static inline void dma_write(const void *wram, uint32_t mram, uint32_t n)
{
    __ecall3(__ECALL_DMA_WRAM_TO_MRAM, (unsigned int)(uintptr_t)wram, mram, n);
}

void *mram_read_unaligned(const __mram_ptr void *from, void *buffer, unsigned int nb_of_bytes)
{
    uint32_t src = (uint32_t)(uintptr_t)from;
    uint32_t offset = src & 7u;
    uint32_t total = (offset + nb_of_bytes + 7u) & ~7u;
    uint8_t *dst = buffer;
    src &= ~7u;
    while (total) {
        uint32_t chunk = total > 2048u ? 2048u : total;
        dma_read(src, dst, chunk);
        src += chunk;
        dst += chunk;
        total -= chunk;
    }
    return (uint8_t *)buffer + offset;
}

void mram_write_unaligned(const void *from, __mram_ptr void *dest, unsigned int nb_of_bytes)
{
    const uint8_t *s = from;
    uint32_t d = (uint32_t)(uintptr_t)dest;
    uint32_t n = nb_of_bytes;
    uint64_t block;
    uint64_t bounce[8];

    if (n == 0) {
        return;
    }
    if (d & 7u) {
        uint32_t offset = d & 7u;
        uint32_t k = 8u - offset;
        if (k > n) {
            k = n;
        }
        dma_read(d & ~7u, &block, 8);
        memcpy((uint8_t *)&block + offset, s, k);
        dma_write(&block, d & ~7u, 8);
        d += k;
        s += k;
        n -= k;
    }
    while (n >= 8u) {
        uint32_t chunk = n & ~7u;
        if (((uintptr_t)s & 7u) == 0) {
            if (chunk > 2048u) {
                chunk = 2048u;
            }
            dma_write(s, d, chunk);
        } else {
            if (chunk > sizeof(bounce)) {
                chunk = sizeof(bounce);
            }
            memcpy(bounce, s, chunk);
            dma_write(bounce, d, chunk);
        }
        d += chunk;
        s += chunk;
        n -= chunk;
    }
    if (n) {
        dma_read(d, &block, 8);
        memcpy(&block, s, n);
        dma_write(&block, d, 8);
    }
}
