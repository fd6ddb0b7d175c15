/* DPU faults, one per mode (set by the host; mode 0 runs cleanly).
 * Only tasklet 0 misbehaves; the other tasklets just exit. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <alloc.h>
#include <attributes.h>

enum {
    OK = 0,
    WRAM_OUT_OF_RANGE = 1,
    MRAM_OUT_OF_RANGE = 2,
    DMA_MISALIGNED = 3,
    DMA_SIZE_NOT_MULTIPLE_OF_8 = 4,
    DMA_SIZE_TOO_LARGE = 5,
    STACK_OVERFLOW = 6,
    HEAP_EXHAUSTED = 7,
    DIVISION_BY_ZERO = 8,
    DIVISION_BY_ZERO_64 = 9,
};

__host uint32_t mode;
__host uint32_t param;  /* a run-time value so that nothing is caught at compile time */
__host uint32_t reached; /* 1 if tasklet 0 got past the faulting operation */

static __dma_aligned uint8_t buf[4096];

static uint32_t recurse(uint32_t depth)
{
    volatile uint32_t frame[32];
    frame[depth % 32] = depth;
    if (depth == 0)
        return frame[0];
    return recurse(depth - 1) + frame[depth % 32];
}

int main(void)
{
    if (me() != 0)
        return 0;
    reached = 0;
    __mram_ptr uint8_t *heap = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    switch (mode) {
    case WRAM_OUT_OF_RANGE: {
        volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)(0x10000u + param); /* WRAM is 64 KiB */
        *p = 1;
        break;
    }
    case MRAM_OUT_OF_RANGE: /* 8 bytes at 64 MiB + param from the start of MRAM */
        mram_read((__mram_ptr void *)(uintptr_t)(0x08000000u + (64u << 20) + param), buf, 8);
        break;
    case DMA_MISALIGNED: /* MRAM address 4 bytes past an 8-byte boundary */
        mram_read(heap + 4 + param, buf, 8);
        break;
    case DMA_SIZE_NOT_MULTIPLE_OF_8:
        mram_read(heap, buf, 12 + param);
        break;
    case DMA_SIZE_TOO_LARGE:
        mram_read(heap, buf, 4096 + param);
        break;
    case STACK_OVERFLOW: /* 1 KiB stack, ~140 bytes per frame */
        buf[0] = (uint8_t)recurse(10000 + param);
        break;
    case HEAP_EXHAUSTED:
        for (int i = 0; i < 100; i++) /* 100 KiB > 64 KiB of WRAM */
            ((volatile uint8_t *)mem_alloc(1024 + param))[0] = 1;
        break;
    case DIVISION_BY_ZERO: /* the DPU's division routine faults */
        buf[2] = (uint8_t)((100u + param) / param);
        break;
    case DIVISION_BY_ZERO_64:
        buf[3] = (uint8_t)((1000000000000ull + param) % (uint64_t)param);
        break;
    default: /* OK: the same operations, within the rules */
        mram_read(heap, buf, 2048 + param);
        buf[1] = (uint8_t)recurse(2 + param);
        buf[2] = (uint8_t)((100u + param) / (param + 7));
        ((volatile uint8_t *)mem_alloc(1024 + param))[0] = 1;
        break;
    }
    reached = 1;
    return 0;
}
