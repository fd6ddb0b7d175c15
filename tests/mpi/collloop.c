/* A worker killed during collectives, for the MPI backend's test (tests/mpi/run.py): 256 DPUs
 * (4 ranks) on 2 workers run AllReduce along y, across the ranks, in a loop, so most of the
 * time a host step is in the workers. A failing call ends the program with the SDK's error
 * line (PID-Comm's default error mode). */
#include <dpu.h>
#include <pidcomm.h>
#include <stdint.h>
#include <stdio.h>

#define NR_DPUS 256

int main(void)
{
    struct dpu_set_t set;
    uint32_t axes[3] = { 16, NR_DPUS / 16, 1 };
    DPU_ASSERT(dpu_alloc_comm(NR_DPUS, NULL, &set, 1));
    DPU_ASSERT(dpu_load(set, "./bin/idle", NULL));
    hypercube_manager *hm = init_hypercube_manager(set, 3, axes);
    for (unsigned long i = 0;; i++) {
        pidcomm_all_reduce(hm, "010", 4096, 0, 0, 1 << 20, sizeof(int32_t), 0);
        if (i == 0)
            printf("looping\n"), fflush(stdout);
    }
    return 0;
}
