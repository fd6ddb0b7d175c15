/* Sparse matrix-vector product y = A x, A in CSR (uint32 values, wrapping
 * arithmetic). Row pointers, column indices and values are streamed from MRAM
 * with seqread; x is staged in WRAM by tasklet 0. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <attributes.h>
#include <alloc.h>
#include <barrier.h>
#include <seqread.h>

#define MAX_COLS 2048

struct spmv_args {
    uint32_t nr_rows;    /* rows of this DPU (even) */
    uint32_t nr_cols;    /* length of x (even, <= MAX_COLS) */
    uint32_t row_ptr_off; /* byte offsets in the MRAM heap, 8-aligned */
    uint32_t col_off;
    uint32_t val_off;
    uint32_t x_off;
    uint32_t y_off;
    uint32_t pad;
};

__host struct spmv_args args;
__host uint32_t nnz_seen;

static uint32_t x_wram[MAX_COLS];
static uint32_t nnz_per_tasklet[NR_TASKLETS];

BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    __mram_ptr uint8_t *heap = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    if (t == 0) {
        mem_reset();
        for (uint32_t off = 0; off < args.nr_cols * 4; off += 2048) {
            uint32_t len = args.nr_cols * 4 - off < 2048 ? args.nr_cols * 4 - off : 2048;
            mram_read(heap + args.x_off + off, (uint8_t *)x_wram + off, len);
        }
    }
    barrier_wait(&bar);

    /* Rows are dealt in pairs so that every y write is 8 bytes, 8-aligned. */
    uint32_t nr_pairs = args.nr_rows / 2;
    uint32_t per = (nr_pairs + NR_TASKLETS - 1) / NR_TASKLETS;
    uint32_t first = t * per * 2;
    uint32_t last = (t + 1) * per * 2;
    if (last > args.nr_rows)
        last = args.nr_rows;
    uint32_t nnz = 0;

    if (first < last) {
        seqreader_buffer_t cache_rp = seqread_alloc();
        seqreader_buffer_t cache_col = seqread_alloc();
        seqreader_buffer_t cache_val = seqread_alloc();
        seqreader_t sr_rp, sr_col, sr_val;

        uint32_t *rp = seqread_init(cache_rp, heap + args.row_ptr_off + first * 4, &sr_rp);
        uint32_t start = *rp;
        uint32_t *col = seqread_init(cache_col, heap + args.col_off + start * 4, &sr_col);
        uint32_t *val = seqread_init(cache_val, heap + args.val_off + start * 4, &sr_val);
        __dma_aligned uint32_t pair[2];

        for (uint32_t r = first; r < last; r++) {
            rp = seqread_get(rp, sizeof(uint32_t), &sr_rp);
            uint32_t end = *rp;
            uint32_t acc = 0;
            for (uint32_t k = start; k < end; k++) {
                acc += *val * x_wram[*col];
                col = seqread_get(col, sizeof(uint32_t), &sr_col);
                val = seqread_get(val, sizeof(uint32_t), &sr_val);
            }
            nnz += end - start;
            start = end;
            pair[r & 1] = acc;
            if (r & 1)
                mram_write(pair, heap + args.y_off + (r - 1) * 4, 8);
        }
    }
    nnz_per_tasklet[t] = nnz;
    barrier_wait(&bar);
    if (t == 0) {
        uint32_t s = 0;
        for (int i = 0; i < NR_TASKLETS; i++)
            s += nnz_per_tasklet[i];
        nnz_seen = s;
    }
    return 0;
}
