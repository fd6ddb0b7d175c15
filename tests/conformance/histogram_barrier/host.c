/* Histogram with hand-filled barriers and atomic bits: 4 DPUs x 16 tasklets.
 * Launched twice to check that barriers and counters are re-initialised. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>

#define NR_DPUS 4
#define ELEMS_PER_DPU 6144
#define NR_BINS 32

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t i;
    size_t n = (size_t)NR_DPUS * ELEMS_PER_DPU;
    uint32_t *data = malloc(n * sizeof(uint32_t));
    uint32_t x = 4242;
    int bad = 0;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_histogram", NULL));
    uint32_t count = ELEMS_PER_DPU;
    DPU_ASSERT(dpu_broadcast_to(set, "nr_elems", 0, &count, sizeof(count), DPU_XFER_DEFAULT));
    for (int round = 0; round < 2; round++) {
        uint32_t ref[NR_BINS] = { 0 }, got[NR_BINS] = { 0 };
        for (size_t k = 0; k < n; k++) {
            x = x * 1103515245u + 12345u;
            data[k] = x >> 7;
            ref[data[k] % NR_BINS]++;
        }
        DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &data[(size_t)i * ELEMS_PER_DPU])); }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0,
            ELEMS_PER_DPU * sizeof(uint32_t), DPU_XFER_DEFAULT));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        DPU_FOREACH(set, dpu, i) {
            uint32_t h[NR_BINS], processed;
            DPU_ASSERT(dpu_copy_from(dpu, "histo", 0, h, sizeof(h)));
            DPU_ASSERT(dpu_copy_from(dpu, "processed", 0, &processed, sizeof(processed)));
            if (processed != ELEMS_PER_DPU) {
                printf("round %d DPU %u: processed %u expected %u\n", round, i, processed, ELEMS_PER_DPU);
                bad = 1;
            }
            for (int b = 0; b < NR_BINS; b++)
                got[b] += h[b];
        }
        for (int b = 0; b < NR_BINS; b++)
            if (got[b] != ref[b]) {
                printf("round %d bin %d: got %u expected %u\n", round, b, got[b], ref[b]);
                bad = 1;
            }
    }
    DPU_ASSERT(dpu_free(set));
    printf("%s histogram_barrier\n", bad ? "FAIL" : "OK");
    free(data);
    return bad;
}
