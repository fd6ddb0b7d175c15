/* Reduction (sum) of int32 values over 16 DPUs with 12 tasklets each (a
 * tasklet count that is not a power of two exercises uneven tree steps). */
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define NR_DPUS 16
#define ELEMS_PER_DPU 10000
#define NR_TASKLETS 12

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t i;
    size_t n = (size_t)NR_DPUS * ELEMS_PER_DPU;
    int32_t *data = malloc(n * sizeof(int32_t));
    int64_t results[NR_DPUS], expected[NR_DPUS] = { 0 };
    uint32_t steps[NR_DPUS];
    uint32_t x = 7;
    for (size_t k = 0; k < n; k++) {
        x = x * 1664525u + 1013904223u;
        data[k] = (int32_t)x;
        expected[k / ELEMS_PER_DPU] += data[k];
    }

    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_reduction", NULL));
    uint32_t count = ELEMS_PER_DPU;
    DPU_ASSERT(dpu_broadcast_to(set, "nr_elems", 0, &count, sizeof(count), DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &data[(size_t)i * ELEMS_PER_DPU])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0,
        ELEMS_PER_DPU * sizeof(int32_t), DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &results[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "dpu_sum", 0, sizeof(int64_t), DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_copy_from(dpu, "tree_steps", 0, &steps[i], sizeof(uint32_t))); }

    int bad = 0;
    int64_t total = 0, total_ref = 0;
    for (i = 0; i < NR_DPUS; i++) {
        total += results[i];
        total_ref += expected[i];
        /* tasklet 0 of 12 receives at steps s = 1, 2, 4, 8: 4 handshakes */
        if (results[i] != expected[i] || steps[i] != 4) {
            printf("DPU %u: sum %" PRId64 " expected %" PRId64 ", tree steps %u expected 4\n", i,
                results[i], expected[i], steps[i]);
            bad = 1;
        }
    }
    DPU_ASSERT(dpu_free(set));
    printf("reduction: total %" PRId64 " (expected %" PRId64 ")\n", total, total_ref);
    printf("%s reduction\n", bad ? "FAIL" : "OK");
    free(data);
    return bad;
}
