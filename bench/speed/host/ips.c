/* Simulated instructions per second of host time on the compute-bound kernel.
 * Usage: ips_host NR_DPUS ITERATIONS  (set OPENPIM_THREADS to choose the host cores). */
#define _POSIX_C_SOURCE 199309L
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    uint32_t nr_dpus = argc > 1 ? (uint32_t)atoi(argv[1]) : 64;
    uint32_t iterations = argc > 2 ? (uint32_t)atoi(argv[2]) : 20000;
    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(nr_dpus, NULL, &set));
    DPU_ASSERT(dpu_load(set, "bin/ips_dpu", NULL));
    DPU_ASSERT(dpu_broadcast_to(set, "iterations", 0, &iterations, sizeof(iterations), DPU_XFER_DEFAULT));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double total = 0;
    DPU_FOREACH (set, dpu) {
        uint64_t n;
        DPU_ASSERT(dpu_copy_from(dpu, "instructions", 0, &n, sizeof(n)));
        total += (double)n;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("dpus=%u instructions=%.0f seconds=%.4f ips=%.0f\n", nr_dpus, total, secs, total / secs);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
