/* A small GEMV kernel for deriving the launch's fixed cost from published launch timings
 * (launch_cost.py): each DPU holds `rows` rows of `cols` 32-bit elements and the `cols`
 * elements of the vector (after the rows, in the MRAM heap); the tasklets split the rows;
 * a row is read in blocks of at most 1 KiB; each tasklet writes its rows' results after the
 * vector. This is the shape of the GEMV baseline whose launches were timed on real hardware
 * (GitHub yongwonshin/atim, pim_test/upmem/baseline/GEMV_SAMSUNG), written here from its
 * description so that the model can give the kernel's cycles for each published run. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

typedef struct {
    uint32_t cols;
    uint32_t rows;
} gemv_args_t;

__host gemv_args_t GEMV_ARGS;

BARRIER_INIT(start, NR_TASKLETS);

int main(void)
{
    unsigned id = me();
    if (id == 0)
        mem_reset();
    barrier_wait(&start);

    uint32_t cols = GEMV_ARGS.cols;
    uint32_t rows = GEMV_ARGS.rows / NR_TASKLETS;
    uint32_t first = id * rows;
    uint32_t row_bytes = cols * sizeof(uint32_t);
    uint32_t block = row_bytes, blocks = 1;
    if (block > 1024) {
        block = 1024;
        blocks = row_bytes / 1024;
    }
    uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;
    uint32_t matrix = heap + first * row_bytes;
    uint32_t vector = heap + GEMV_ARGS.rows * row_bytes;
    uint32_t result = vector + row_bytes + first * sizeof(uint32_t);
    uint32_t out_bytes = rows * sizeof(uint32_t) < 8 ? 8 : rows * sizeof(uint32_t);

    uint32_t *a = mem_alloc(block);
    uint32_t *x = mem_alloc(block);
    uint32_t *y = mem_alloc(out_bytes);
    for (uint32_t r = 0; r < rows; r++)
        y[r] = 0;
    for (uint32_t b = 0; b < blocks; b++) {
        mram_read((__mram_ptr const void *)(vector + b * block), x, block);
        for (uint32_t r = 0; r < rows; r++) {
            mram_read((__mram_ptr const void *)(matrix + (r * blocks + b) * block), a, block);
            for (uint32_t i = 0; i < block / sizeof(uint32_t); i++)
                y[r] += a[i] * x[i];
        }
    }
    if (rows != 0)
        mram_write(y, (__mram_ptr void *)result, out_bytes);
    return 0;
}
