/* (b) Sustained MRAM bandwidth, STREAM-like, on 64-bit integers. Three MRAM arrays A, B, C of
 * `n` bytes each lie one after the other in the MRAM heap. Each tasklet takes blocks of `size`
 * bytes in turn (block b goes to tasklet b mod NR_TASKLETS), brings them into WRAM with DMA,
 * computes in WRAM and writes the block of C back with DMA:
 *   COPY-DMA  C = A (DMA in, DMA out, no WRAM pass)   COPY  C = A (through a WRAM loop)
 *   ADD       C = A + B                                SCALE C = s * A
 *   TRIAD     C = A + s * B
 * Timing follows the published microbenchmark (PrIM STREAM on MRAM): the tasklets start
 * together behind a barrier and each times its own whole streaming loop; the result is the
 * longest of these times. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>

#include "../common.h"

__host struct bench_args args;
__host struct bench_result result;
__host uint64_t sums[NR_TASKLETS];

BARRIER_INIT(bar, NR_TASKLETS);
static uint64_t tasklet_cycles[NR_TASKLETS];

typedef __mram_ptr uint64_t *mptr;

static uint64_t stream(uint32_t id, uint64_t *wa, uint64_t *wb, uint32_t op, uint32_t size,
    uint32_t n, uint64_t s)
{
    __mram_ptr uint8_t *A = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    __mram_ptr uint8_t *B = A + n;
    __mram_ptr uint8_t *C = B + n;
    uint32_t count = size / sizeof(uint64_t);
    uint32_t step = NR_TASKLETS * size;
    for (uint32_t off = id * size; off < n; off += step) {
        switch (op) {
        case S_COPY_DMA:
            mram_read(A + off, wa, size);
            mram_write(wa, C + off, size);
            break;
        case S_COPY:
            mram_read(A + off, wa, size);
            for (uint32_t i = 0; i < count; i++)
                wb[i] = wa[i];
            mram_write(wb, C + off, size);
            break;
        case S_ADD:
            mram_read(A + off, wa, size);
            mram_read(B + off, wb, size);
            for (uint32_t i = 0; i < count; i++)
                wa[i] += wb[i];
            mram_write(wa, C + off, size);
            break;
        case S_SCALE:
            mram_read(A + off, wa, size);
            for (uint32_t i = 0; i < count; i++)
                wb[i] = s * wa[i];
            mram_write(wb, C + off, size);
            break;
        default: /* S_TRIAD */
            mram_read(A + off, wa, size);
            mram_read(B + off, wb, size);
            for (uint32_t i = 0; i < count; i++)
                wa[i] += s * wb[i];
            mram_write(wa, C + off, size);
            break;
        }
    }
    return wa[0] + wb[0];
}

int main(void)
{
    uint32_t id = me();
    if (id == 0)
        mem_reset();
    barrier_wait(&bar);
    uint64_t *wa = mem_alloc(args.size); /* this tasklet's two WRAM blocks */
    uint64_t *wb = mem_alloc(args.size);
    barrier_wait(&bar);
    if (id == 0)
        perfcounter_config(COUNT_CYCLES, true);
    barrier_wait(&bar);
    uint64_t t0 = perfcounter_get();
    sums[id] = stream(id, wa, wb, args.op, args.size, args.n, args.scalar);
    tasklet_cycles[id] = perfcounter_get() - t0;
    barrier_wait(&bar);
    if (id == 0) {
        uint64_t most = 0;
        for (uint32_t t = 0; t < NR_TASKLETS; t++)
            most = tasklet_cycles[t] > most ? tasklet_cycles[t] : most;
        result.cycles = most;
        result.check = sums[0];
    }
    return 0;
}
