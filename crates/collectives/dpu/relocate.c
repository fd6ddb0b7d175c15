/* OpenPIM collectives: the relocation program (PIM-assisted reordering).
 *
 * Runs on every DPU of a collective, before or after the host step: moves the N chunks of C
 * bytes at MRAM address `src` to `dst` in the order the host step needs, so that at every
 * 64-byte line of an entangled group the 8 DPUs need the same rotation (docs/collectives.md).
 * Chunk i of the source goes to slot f(i) of the destination:
 *
 *   mode 0 (copy)     f(i) = i
 *   mode 1 (rotate)   f(i) = G*(i/G) + ((i - chip) mod G)      before the host step
 *   mode 2 (unrotate) f(i) = G*(i/G) + ((chip - i) mod G)      after it (its own inverse)
 *
 * with G = min(8, N) the DPUs of the group in one entangled group and `chip` this DPU's chip
 * (its position in the entangled group). Chunks are moved in blocks of at most 2 KiB by 16
 * tasklets; src and dst never overlap (the library checks). Byte-agnostic: the element type
 * does not matter. */
#include <defs.h>
#include <mram.h>
#include <stdint.h>
#include <barrier.h>
#include <alloc.h>

#define BLOCK 2048

struct relocate_args {
    uint32_t src;      /* MRAM address of chunk 0 of the source */
    uint32_t dst;      /* MRAM address of slot 0 of the destination */
    uint32_t chunk;    /* bytes per chunk, a multiple of 8 */
    uint32_t nr_chunks;
    uint32_t mode;     /* 0 copy, 1 rotate, 2 unrotate */
    uint32_t chip;     /* this DPU's position in its entangled group */
    uint32_t group;    /* G */
};

__host struct relocate_args relocate_args;

static uint32_t slot_of(uint32_t i, const struct relocate_args *a)
{
    uint32_t g = a->group;
    uint32_t base = (i / g) * g;
    uint32_t k = i % g;
    uint32_t c = a->chip % g;
    switch (a->mode) {
    case 1:
        return base + (k + g - c) % g;
    case 2:
        return base + (c + g - k) % g;
    default:
        return i;
    }
}

BARRIER_INIT(start, NR_TASKLETS);

int main(void)
{
    if (me() == 0)
        mem_reset();
    barrier_wait(&start);
    __dma_aligned uint8_t *buf = (uint8_t *)mem_alloc(BLOCK);
    struct relocate_args a = relocate_args;
    uint32_t per_chunk = (a.chunk + BLOCK - 1) / BLOCK;
    uint32_t pieces = per_chunk * a.nr_chunks;
    for (uint32_t p = me(); p < pieces; p += NR_TASKLETS) {
        uint32_t i = p / per_chunk;
        uint32_t at = (p % per_chunk) * BLOCK;
        uint32_t len = a.chunk - at < BLOCK ? a.chunk - at : BLOCK;
        uint32_t from = a.src + i * a.chunk + at;
        uint32_t to = a.dst + slot_of(i, &a) * a.chunk + at;
        mram_read((__mram_ptr void *)from, buf, len);
        mram_write(buf, (__mram_ptr void *)to, len);
    }
    return 0;
}
