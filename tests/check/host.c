/* Host of the checkers' test programs: runs the DPU program named on the command line on
 * one DPU, then prints its `result` (a uint32_t symbol). A launch that faults exits 1. */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DPU_BINARY\n", argv[0]);
        return 2;
    }
    struct dpu_set_t set;
    if (dpu_alloc(1, NULL, &set) != DPU_OK) {
        return 1;
    }
    DPU_ASSERT(dpu_load(set, argv[1], NULL));
    uint32_t seed = 7;
    DPU_ASSERT(dpu_broadcast_to(set, "seed", 0, &seed, sizeof(seed), DPU_XFER_DEFAULT));
    if (dpu_launch(set, DPU_SYNCHRONOUS) != DPU_OK) {
        dpu_free(set);
        return 1;
    }
    uint32_t result = 0;
    DPU_ASSERT(dpu_copy_from(set, "result", 0, &result, sizeof(result)));
    printf("result=%u\n", result);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
