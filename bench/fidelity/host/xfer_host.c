/* Host side of the transfer benchmarks (e): REPS transfers of SIZE bytes per DPU between the
 * host and the MRAM heap of NR_DPUS DPUs, and nothing else, so that the run's CPU-DPU or
 * DPU-CPU phase total (OPENPIM_REPORT=file.json) divided by REPS is the time of one transfer.
 *
 *   xfer_host serial|parallel|broadcast to|from NR_DPUS SIZE REPS
 *
 * serial:    DPU_FOREACH + dpu_copy_to / dpu_copy_from, one DPU at a time
 * parallel:  DPU_FOREACH + dpu_prepare_xfer, then one dpu_push_xfer for the whole set
 * broadcast: dpu_broadcast_to of one buffer to every DPU of the set (to only) */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s serial|parallel|broadcast to|from NR_DPUS SIZE REPS\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    int to = strcmp(argv[2], "to") == 0;
    uint32_t nr_dpus = (uint32_t)strtoul(argv[3], NULL, 0);
    size_t size = (size_t)strtoull(argv[4], NULL, 0);
    uint32_t reps = (uint32_t)strtoul(argv[5], NULL, 0);
    int broadcast = strcmp(mode, "broadcast") == 0;

    struct dpu_set_t set, dpu;
    uint32_t i, nr_ranks;
    DPU_ASSERT(dpu_alloc(nr_dpus, NULL, &set));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    DPU_ASSERT(dpu_load(set, "bin/xfer_dpu", NULL));

    size_t buffers = broadcast ? 1 : nr_dpus;
    uint8_t *host = malloc(size * buffers);
    if (!host) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    for (size_t k = 0; k < size * buffers; k++)
        host[k] = (uint8_t)(k * 131u + 7u);

    for (uint32_t r = 0; r < reps; r++) {
        if (broadcast) {
            DPU_ASSERT(dpu_broadcast_to(set, DPU_MRAM_HEAP_POINTER_NAME, 0, host, size, DPU_XFER_DEFAULT));
        } else if (strcmp(mode, "serial") == 0) {
            DPU_FOREACH (set, dpu, i) {
                if (to)
                    DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, host + i * size, size));
                else
                    DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, host + i * size, size));
            }
        } else {
            DPU_FOREACH (set, dpu, i) {
                DPU_ASSERT(dpu_prepare_xfer(dpu, host + i * size));
            }
            DPU_ASSERT(dpu_push_xfer(set, to ? DPU_XFER_TO_DPU : DPU_XFER_FROM_DPU,
                DPU_MRAM_HEAP_POINTER_NAME, 0, size, DPU_XFER_DEFAULT));
        }
    }
    printf("mode=%s dir=%s dpus=%u ranks=%u size=%zu reps=%u\n", mode, to ? "to" : "from", nr_dpus,
        nr_ranks, size, reps);
    free(host);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
