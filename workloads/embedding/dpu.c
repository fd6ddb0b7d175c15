/* Embedding lookup on one DPU: pooled sums of table rows.
 *
 * MRAM (from DPU_MRAM_HEAP_POINTER): the DPU's shards of `nt` tables (nr rows x ncp words
 * each, ncp = its columns rounded up to an even count so that every row is a multiple of 8
 * bytes), then the queries (written per batch): one (start, count) pair per (table, sample)
 * item followed by the local row numbers, then the output: one pooled row of ncp words per
 * item. Tasklets take items round-robin; each row is one DMA of ncp * 4 bytes (the small
 * accesses of column-wise partitioning are what they are on the hardware). */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <attributes.h>

#define MAX_COLS 128 /* per column block: WRAM holds a row and an accumulator per tasklet */
#define IDX_CHUNK 64

struct emb_params {
    uint32_t nt, nr, ncp, batch, is_fp;
    uint32_t queries_off; /* byte offsets from the heap pointer */
    uint32_t index_off;
    uint32_t out_off;
};

__host struct emb_params params;

static uint32_t __dma_aligned rowbuf[NR_TASKLETS][MAX_COLS];
static uint32_t __dma_aligned acc[NR_TASKLETS][MAX_COLS];
static uint32_t __dma_aligned idxbuf[NR_TASKLETS][IDX_CHUNK + 2];

int main(void)
{
    unsigned t = me();
    __mram_ptr uint8_t *heap = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    uint32_t ncp = params.ncp, row_bytes = ncp * 4, items = params.nt * params.batch;
    uint32_t *row = rowbuf[t], *a = acc[t], *ib = idxbuf[t];
    for (uint32_t item = t; item < items; item += NR_TASKLETS) {
        uint64_t hdr; /* (start, count) as the host wrote them: little-endian words */
        mram_read(heap + params.queries_off + item * 8, &hdr, 8);
        uint32_t start = (uint32_t)hdr, count = (uint32_t)(hdr >> 32);
        uint32_t table = item / params.batch;
        __mram_ptr uint8_t *shard = heap + table * params.nr * row_bytes;
        for (uint32_t d = 0; d < ncp; d++)
            a[d] = 0;
        for (uint32_t k = 0; k < count; k += IDX_CHUNK) {
            uint32_t n = count - k < IDX_CHUNK ? count - k : IDX_CHUNK;
            uint32_t first = start + k, base = first & ~1u, skip = first - base;
            uint32_t words = (skip + n + 1) & ~1u;
            mram_read(heap + params.index_off + base * 4, ib, words * 4);
            for (uint32_t i = 0; i < n; i++) {
                mram_read(shard + ib[skip + i] * row_bytes, row, row_bytes);
                if (params.is_fp) {
                    float *fa = (float *)a, *fr = (float *)row;
                    for (uint32_t d = 0; d < ncp; d++)
                        fa[d] += fr[d];
                } else {
                    for (uint32_t d = 0; d < ncp; d++)
                        a[d] += row[d];
                }
            }
        }
        mram_write(a, heap + params.out_off + item * row_bytes, row_bytes);
    }
    return 0;
}
