/* Host side of the demo: splits two vectors over NR_DPUS DPUs, adds them on the DPUs and
 * checks the sum against the CPU. Uses only the UPMEM SDK API. */
#define _POSIX_C_SOURCE 199309L
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common.h"

#ifndef NR_DPUS
#define NR_DPUS 256
#endif
#define DPU_BINARY "./bin/dpu_vecadd"

int main(int argc, char **argv)
{
    uint32_t per_dpu = 65536; /* 256 KiB per vector per DPU */
    if (argc > 2 && strcmp(argv[1], "-n") == 0)
        per_dpu = (uint32_t)strtoul(argv[2], NULL, 0) & ~1u;

    struct dpu_set_t set, dpu;
    uint32_t nr_dpus, nr_ranks;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    printf("allocated %u DPUs in %u ranks; %u elements per DPU\n", nr_dpus, nr_ranks, per_dpu);

    size_t total = (size_t)per_dpu * nr_dpus;
    int32_t *a = malloc(total * sizeof(int32_t));
    int32_t *b = malloc(total * sizeof(int32_t));
    int32_t *c = malloc(total * sizeof(int32_t));
    if (!a || !b || !c) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    srand(42);
    for (size_t i = 0; i < total; i++) {
        a[i] = rand() - RAND_MAX / 2;
        b[i] = rand() - RAND_MAX / 2;
    }

    struct vecadd_args args = { .nr_elements = per_dpu };
    size_t bytes = (size_t)per_dpu * sizeof(int32_t);
    DPU_ASSERT(dpu_broadcast_to(set, "args", 0, &args, sizeof(args), DPU_XFER_DEFAULT));
    uint32_t i;
    DPU_FOREACH (set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, &a[i * (size_t)per_dpu]));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, bytes, DPU_XFER_DEFAULT));
    DPU_FOREACH (set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, &b[i * (size_t)per_dpu]));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, bytes, bytes, DPU_XFER_DEFAULT));

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    clock_gettime(CLOCK_MONOTONIC, &t1);

    DPU_FOREACH (set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, &c[i * (size_t)per_dpu]));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 2 * bytes, bytes, DPU_XFER_DEFAULT));

    struct vecadd_result result;
    DPU_FOREACH (set, dpu) {
        DPU_ASSERT(dpu_copy_from(dpu, "result", 0, &result, sizeof(result)));
        break;
    }

    size_t wrong = 0;
    for (size_t k = 0; k < total; k++)
        if (c[k] != (int32_t)((uint32_t)a[k] + (uint32_t)b[k]))
            wrong++;

    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("DPU 0 kernel: %llu cycles (%.3f ms at 350 MHz)\n", (unsigned long long)result.cycles,
        (double)result.cycles / 350e3);
    /* The program's clock is the virtual timeline's (docs/usage.md, "The virtual clock"): the
     * launch took the DPUs' modeled time, not the emulator's. */
    printf("%zu additions on %u DPUs: the launch took %.3f ms on the program's clock\n", total, nr_dpus,
        wall * 1e3);
    printf("%s: %zu of %zu elements differ from the CPU result\n", wrong ? "FAILED" : "OK", wrong, total);

    free(a);
    free(b);
    free(c);
    DPU_ASSERT(dpu_free(set));
    return wrong ? 1 : 0;
}
