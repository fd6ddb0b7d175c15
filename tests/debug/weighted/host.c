/* Runs the weighted block sums on one DPU and checks them against the CPU; prints each
 * tasklet's sum (the debugger test compares a variable's value at a breakpoint with it). */
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>

#define NR_TASKLETS 4
#define BLOCK 64

int main(int argc, char **argv)
{
    const char *binary = argc > 1 ? argv[1] : "./bin/dpu_weighted";
    uint32_t input[BLOCK * NR_TASKLETS], sums[NR_TASKLETS];
    for (uint32_t k = 0; k < BLOCK * NR_TASKLETS; k++)
        input[k] = k * 7 + 3;
    struct dpu_set_t set;
    DPU_ASSERT(dpu_alloc(1, NULL, &set));
    DPU_ASSERT(dpu_load(set, binary, NULL));
    DPU_ASSERT(dpu_copy_to(set, "input", 0, input, sizeof(input)));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_ASSERT(dpu_copy_from(set, "sums", 0, sums, sizeof(sums)));
    int bad = 0;
    for (uint32_t t = 0; t < NR_TASKLETS; t++) {
        uint32_t ref = 0;
        for (uint32_t i = 0; i < BLOCK; i++)
            ref += input[t * BLOCK + i] * (t + 1);
        printf("sum[%u] = %u\n", t, sums[t]);
        if (sums[t] != ref) {
            printf("tasklet %u: sum %u, expected %u\n", t, sums[t], ref);
            bad = 1;
        }
    }
    printf(bad ? "FAIL\n" : "OK\n");
    DPU_ASSERT(dpu_free(set));
    return bad;
}
