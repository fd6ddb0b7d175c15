/* Host side of sdk/dpu/test/compilers.sh: runs one DPU program (argv[1]) on one emulated DPU
 * and prints what the DPU printed, then the DPU's cycle count as "cycles=N".
 * (Not a test by itself: the script compares the output of each compiler's build.) */
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    struct dpu_set_t set, dpu;
    if (argc != 2) {
        fprintf(stderr, "usage: %s DPU_PROGRAM\n", argv[0]);
        return 2;
    }
    DPU_ASSERT(dpu_alloc(1, NULL, &set));
    DPU_ASSERT(dpu_load(set, argv[1], NULL));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu) {
        DPU_ASSERT(dpu_log_read(dpu, stdout));
    }
    DPU_ASSERT(dpu_free(set));
    return 0;
}
