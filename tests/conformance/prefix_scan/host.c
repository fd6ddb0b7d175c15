/* Two-kernel prefix scan over 8 DPUs with a host step between the launches. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 8
#define ELEMS_PER_DPU (16 * 2 * 160) /* 5120 */

int main(void)
{
    size_t n = (size_t)NR_DPUS * ELEMS_PER_DPU;
    uint32_t *in = malloc(n * 4), *out = malloc(n * 4), *ref = malloc(n * 4);
    uint32_t x = 1, acc = 0;
    for (size_t k = 0; k < n; k++) {
        x = x * 22695477u + 1u;
        in[k] = x;
        acc += x;
        ref[k] = acc;
    }
    struct dpu_set_t set, dpu;
    uint32_t i;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_scan", NULL));
    uint32_t count = ELEMS_PER_DPU, kernel = 0;
    DPU_ASSERT(dpu_broadcast_to(set, "nr_elems", 0, &count, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_broadcast_to(set, "kernel", 0, &kernel, 4, DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &in[(size_t)i * ELEMS_PER_DPU])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, ELEMS_PER_DPU * 4,
        DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));

    /* Host step: exclusive scan of the DPU totals. */
    uint32_t totals[NR_DPUS], bases[NR_DPUS], running = 0;
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &totals[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "dpu_total", 0, 4, DPU_XFER_DEFAULT));
    for (i = 0; i < NR_DPUS; i++) {
        bases[i] = running;
        running += totals[i];
    }
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &bases[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "dpu_base", 0, 4, DPU_XFER_DEFAULT));
    kernel = 1;
    DPU_ASSERT(dpu_broadcast_to(set, "kernel", 0, &kernel, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));

    memset(out, 0, n * 4);
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &out[(size_t)i * ELEMS_PER_DPU])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, ELEMS_PER_DPU * 4,
        ELEMS_PER_DPU * 4, DPU_XFER_DEFAULT));
    size_t wrong = 0;
    for (size_t k = 0; k < n; k++)
        if (out[k] != ref[k]) {
            if (wrong < 5)
                printf("element %zu: got %u expected %u\n", k, out[k], ref[k]);
            wrong++;
        }
    DPU_ASSERT(dpu_free(set));
    printf("prefix_scan: %zu elements, %zu wrong\n", n, wrong);
    printf("%s prefix_scan\n", wrong ? "FAIL" : "OK");
    free(in);
    free(out);
    free(ref);
    return wrong != 0;
}
