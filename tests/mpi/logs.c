/* DPU logs and reads of DPUs in every part of a split rank, for the MPI backend's test
 * (tests/mpi/run.py): 64 DPUs (one rank; on 4 workers, 4 parts of 16), each told its number;
 * the logs of DPUs 5, 40 and 63 and a read of DPU 40's number are printed. */
#include <dpu.h>
#include <stdio.h>

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t i, v = 0;
    DPU_ASSERT(dpu_alloc(64, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/logs_dpu", NULL));
    DPU_FOREACH(set, dpu, i)
    {
        DPU_ASSERT(dpu_copy_to(dpu, "id", 0, &i, 4));
    }
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu, i)
    {
        if (i == 5 || i == 40 || i == 63)
            DPU_ASSERT(dpu_log_read(dpu, stdout));
        if (i == 40)
            DPU_ASSERT(dpu_copy_from(dpu, "id", 0, &v, 4));
    }
    printf("read back %u\n", v);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
