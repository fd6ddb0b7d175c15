/* Allocators and semaphores on 2 DPUs x 12 tasklets, launched twice. */
#include <dpu.h>
#include <stdio.h>

#define NR_DPUS 2
#define NR_TASKLETS 12
#define ROUNDS 4

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t i, expected[NR_TASKLETS];
    int bad = 0;
    for (uint32_t t = 0; t < NR_TASKLETS; t++) {
        uint32_t s = 0;
        for (uint32_t round = 0; round < ROUNDS; round++) {
            uint32_t words = (64u << (round % 3)) / 4;
            for (uint32_t k = 0; k < words; k++)
                s += t * 100000 + round * 1000 + k;
            for (uint32_t k = 0; k < 8; k++)
                s += t + round * 7 + k;
        }
        expected[t] = s;
    }
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_alloc", NULL));
    for (int run = 0; run < 2; run++) {
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        DPU_FOREACH(set, dpu, i) {
            uint32_t results[NR_TASKLETS], errors, max_inside, checks;
            DPU_ASSERT(dpu_copy_from(dpu, "results", 0, results, sizeof(results)));
            DPU_ASSERT(dpu_copy_from(dpu, "errors", 0, &errors, 4));
            DPU_ASSERT(dpu_copy_from(dpu, "max_inside", 0, &max_inside, 4));
            DPU_ASSERT(dpu_copy_from(dpu, "checks_done", 0, &checks, 4));
            for (int t = 0; t < NR_TASKLETS; t++)
                if (results[t] != expected[t]) {
                    printf("run %d DPU %u tasklet %d: sum %u expected %u\n", run, i, t, results[t], expected[t]);
                    bad = 1;
                }
            if (errors != 0 || checks != 5 || max_inside < 1 || max_inside > 3) {
                printf("run %d DPU %u: %u allocator errors, %u/5 checks done, semaphore max occupancy %u (limit 3)\n",
                    run, i, errors, checks, max_inside);
                bad = 1;
            }
        }
    }
    DPU_ASSERT(dpu_free(set));
    printf("%s allocators\n", bad ? "FAIL" : "OK");
    return bad;
}
