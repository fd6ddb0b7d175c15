/* An OpenMP host calling the SDK from several threads:
 *  1. one set of 16 DPUs; per-DPU dpu_copy_to / dpu_copy_from issued from an
 *     `omp parallel for` over the DPUs;
 *  2. four threads that each allocate their own 2-DPU set, load, launch,
 *     check and free it concurrently. */
#include <dpu.h>
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define NR_DPUS 16
#define N 2048

static uint64_t reference(const uint32_t *d, uint32_t key)
{
    uint64_t s = key;
    for (int k = 0; k < N; k++)
        s += (uint64_t)d[k] * d[k];
    return s;
}

int main(void)
{
    static uint32_t data[NR_DPUS][N];
    struct dpu_set_t set, dpu;
    struct dpu_set_t dpus[NR_DPUS];
    uint32_t i;
    int bad = 0;
    for (i = 0; i < NR_DPUS; i++)
        for (int k = 0; k < N; k++)
            data[i][k] = (i + 1) * 2654435761u ^ (uint32_t)k * 40503u;

    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_omp", NULL));
    DPU_FOREACH(set, dpu, i) { dpus[i] = dpu; }

    int errors = 0;
#pragma omp parallel for num_threads(4) schedule(dynamic, 1) reduction(+ : errors)
    for (int d = 0; d < NR_DPUS; d++) {
        uint32_t key = (uint32_t)d * 11;
        if (dpu_copy_to(dpus[d], "data", 0, data[d], sizeof(data[d])) != DPU_OK)
            errors++;
        if (dpu_copy_to(dpus[d], "key", 0, &key, 4) != DPU_OK)
            errors++;
    }
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
#pragma omp parallel for num_threads(4) schedule(dynamic, 1) reduction(+ : errors)
    for (int d = 0; d < NR_DPUS; d++) {
        uint64_t r = 0;
        if (dpu_copy_from(dpus[d], "result", 0, &r, 8) != DPU_OK || r != reference(data[d], (uint32_t)d * 11))
            errors++;
    }
    if (errors) {
        printf("shared set: %d errors from parallel per-DPU calls\n", errors);
        bad = 1;
    }
    DPU_ASSERT(dpu_free(set));

    int thread_errors = 0, threads_run = 0;
#pragma omp parallel num_threads(4) reduction(+ : thread_errors, threads_run)
    {
        int tid = omp_get_thread_num();
        struct dpu_set_t own, d;
        uint32_t j;
        threads_run++;
        if (dpu_alloc(2, NULL, &own) != DPU_OK) {
            thread_errors++;
        } else {
            uint32_t nr = 0;
            if (dpu_get_nr_dpus(own, &nr) != DPU_OK || nr != 2)
                thread_errors++;
            if (dpu_load(own, "./bin/dpu_omp", NULL) != DPU_OK)
                thread_errors++;
            DPU_FOREACH(own, d, j) {
                uint32_t key = 1000u * (uint32_t)tid + j;
                if (dpu_copy_to(d, "data", 0, data[(tid * 2 + (int)j) % NR_DPUS], sizeof(data[0])) != DPU_OK ||
                    dpu_copy_to(d, "key", 0, &key, 4) != DPU_OK)
                    thread_errors++;
            }
            if (dpu_launch(own, DPU_SYNCHRONOUS) != DPU_OK)
                thread_errors++;
            DPU_FOREACH(own, d, j) {
                uint64_t r = 0;
                if (dpu_copy_from(d, "result", 0, &r, 8) != DPU_OK ||
                    r != reference(data[(tid * 2 + (int)j) % NR_DPUS], 1000u * (uint32_t)tid + j))
                    thread_errors++;
            }
            if (dpu_free(own) != DPU_OK)
                thread_errors++;
        }
    }
    if (thread_errors) {
        printf("per-thread sets: %d errors over %d threads\n", thread_errors, threads_run);
        bad = 1;
    }
    printf("openmp: %d threads with their own sets\n", threads_run);
    printf("%s openmp\n", bad ? "FAIL" : "OK");
    return bad;
}
