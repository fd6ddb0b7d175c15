/* SpMV over 8 DPUs: each DPU gets a block of rows as a local CSR matrix plus
 * the whole x vector; per-DPU sizes differ, so inputs are sent with serial
 * dpu_copy_to on each DPU and the row blocks come back with dpu_push_xfer. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 8
#define NR_ROWS 1024
#define NR_COLS 1024
#define ROWS_PER_DPU (NR_ROWS / NR_DPUS)

struct spmv_args {
    uint32_t nr_rows, nr_cols, row_ptr_off, col_off, val_off, x_off, y_off, pad;
};

static uint32_t rnd_state = 2024;
static uint32_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 17;
    rnd_state ^= rnd_state << 5;
    return rnd_state;
}
static uint32_t align8(uint32_t v) { return (v + 7) & ~7u; }

int main(void)
{
    uint32_t *row_ptr = malloc((NR_ROWS + 1) * sizeof(uint32_t));
    uint32_t cap = NR_ROWS * 24, nnz = 0;
    uint32_t *col = malloc(cap * sizeof(uint32_t)), *val = malloc(cap * sizeof(uint32_t));
    uint32_t x[NR_COLS], y_ref[NR_ROWS], y[NR_ROWS];

    for (int c = 0; c < NR_COLS; c++)
        x[c] = rnd();
    row_ptr[0] = 0;
    for (int r = 0; r < NR_ROWS; r++) {
        uint32_t k = rnd() % 17; /* 0..16 non-zeros; some rows are empty */
        if (r % 97 == 5)
            k = 0;
        uint32_t c = rnd() % 64;
        for (uint32_t j = 0; j < k && c < NR_COLS; j++) {
            col[nnz] = c;
            val[nnz] = rnd() % 1000;
            nnz++;
            c += 1 + rnd() % 120;
        }
        row_ptr[r + 1] = nnz;
    }
    for (int r = 0; r < NR_ROWS; r++) {
        uint32_t acc = 0;
        for (uint32_t k = row_ptr[r]; k < row_ptr[r + 1]; k++)
            acc += val[k] * x[col[k]];
        y_ref[r] = acc;
    }

    struct dpu_set_t set, dpu;
    uint32_t i;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_spmv", NULL));
    uint32_t expected_nnz[NR_DPUS];
    uint32_t y_off_common = 0;
    /* y_off must be identical on every DPU for the parallel read-back: put it first. */
    y_off_common = 0;
    DPU_FOREACH(set, dpu, i) {
        uint32_t r0 = i * ROWS_PER_DPU, base = row_ptr[r0];
        uint32_t local_nnz = row_ptr[r0 + ROWS_PER_DPU] - base;
        uint32_t rp_local[ROWS_PER_DPU + 2];
        for (uint32_t r = 0; r <= ROWS_PER_DPU; r++)
            rp_local[r] = row_ptr[r0 + r] - base;
        struct spmv_args a;
        a.nr_rows = ROWS_PER_DPU;
        a.nr_cols = NR_COLS;
        a.y_off = y_off_common;
        a.row_ptr_off = align8(ROWS_PER_DPU * 4);
        a.col_off = a.row_ptr_off + align8((ROWS_PER_DPU + 1) * 4);
        a.val_off = a.col_off + align8(local_nnz * 4 + 4);
        a.x_off = a.val_off + align8(local_nnz * 4 + 4);
        a.pad = 0;
        expected_nnz[i] = local_nnz;
        /* MRAM symbols accept any length: the row pointer array is (rows+1)*4 bytes. */
        DPU_ASSERT(dpu_copy_to(dpu, "args", 0, &a, sizeof(a)));
        DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, a.row_ptr_off, rp_local, (ROWS_PER_DPU + 1) * 4));
        if (local_nnz) {
            DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, a.col_off, &col[base], local_nnz * 4));
            DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, a.val_off, &val[base], local_nnz * 4));
        }
        DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, a.x_off, x, sizeof(x)));
    }
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    memset(y, 0, sizeof(y));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &y[i * ROWS_PER_DPU])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, y_off_common,
        ROWS_PER_DPU * sizeof(uint32_t), DPU_XFER_DEFAULT));
    int bad = 0;
    DPU_FOREACH(set, dpu, i) {
        uint32_t seen;
        DPU_ASSERT(dpu_copy_from(dpu, "nnz_seen", 0, &seen, sizeof(seen)));
        if (seen != expected_nnz[i]) {
            printf("DPU %u: saw %u non-zeros, expected %u\n", i, seen, expected_nnz[i]);
            bad = 1;
        }
    }
    uint32_t wrong = 0;
    for (int r = 0; r < NR_ROWS; r++)
        if (y[r] != y_ref[r]) {
            if (wrong < 5)
                printf("row %d: got %u expected %u\n", r, y[r], y_ref[r]);
            wrong++;
        }
    DPU_ASSERT(dpu_free(set));
    printf("spmv: %d rows, %u non-zeros, %u wrong rows\n", NR_ROWS, nnz, wrong);
    bad |= wrong != 0;
    printf("%s spmv\n", bad ? "FAIL" : "OK");
    free(row_ptr);
    free(col);
    free(val);
    return bad;
}
