/* A DPU fault for the MPI backend's test (tests/mpi/run.py): 128 DPUs on 2 ranks, DPUs 100
 * and 101 (DPUs 36 and 37 of rank 1: in the second half of the rank, which a split rank's
 * second part holds) fault. Prints the launch's error code and the fault line on stderr. */
#include <dpu.h>
#include <stdio.h>

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t i, zero = 0, one = 1, where = 0x00100000;
    DPU_ASSERT(dpu_alloc(128, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/fault_dpu", NULL));
    DPU_ASSERT(dpu_broadcast_to(set, "where", 0, &where, 4, DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i)
    {
        DPU_ASSERT(dpu_copy_to(dpu, "bad", 0, (i == 100 || i == 101) ? &one : &zero, 4));
    }
    dpu_error_t e = dpu_launch(set, DPU_SYNCHRONOUS);
    printf("launch: %s\n", dpu_error_to_string(e));
    DPU_ASSERT(dpu_free(set));
    return e == DPU_ERR_DPU_FAULT ? 0 : 1;
}
