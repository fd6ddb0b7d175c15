/* Every DPU of the default server: dpu_alloc(DPU_ALLOCATE_ALL, NULL) must give
 * 2,560 DPUs in 40 ranks of 64; a tiny kernel runs on all of them. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPECTED_DPUS 2560
#define EXPECTED_RANKS 40

int main(void)
{
    struct dpu_set_t set, rank, dpu;
    uint32_t nr_dpus, nr_ranks, i, r;
    int bad = 0;
    DPU_ASSERT(dpu_alloc(DPU_ALLOCATE_ALL, NULL, &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    if (nr_dpus != EXPECTED_DPUS || nr_ranks != EXPECTED_RANKS) {
        printf("DPU_ALLOCATE_ALL: %u DPUs in %u ranks, expected %u in %u\n", nr_dpus, nr_ranks, EXPECTED_DPUS,
            EXPECTED_RANKS);
        bad = 1;
    }
    uint32_t ranks_seen = 0, dpus_seen = 0;
    DPU_RANK_FOREACH(set, rank, r) {
        uint32_t n, j = 0;
        DPU_ASSERT(dpu_get_nr_dpus(rank, &n));
        DPU_FOREACH(rank, dpu) { j++; }
        if (n != 64 || j != 64 || r != ranks_seen) {
            printf("rank %u: %u DPUs (%u iterated)\n", r, n, j);
            bad = 1;
        }
        ranks_seen++;
        dpus_seen += j;
    }
    if (ranks_seen != nr_ranks || dpus_seen != nr_dpus) {
        printf("iteration saw %u ranks / %u DPUs\n", ranks_seen, dpus_seen);
        bad = 1;
    }
    uint32_t *in = malloc(nr_dpus * 4), *out = calloc(nr_dpus, 4);
    DPU_ASSERT(dpu_load(set, "./bin/dpu_tiny", NULL));
    DPU_FOREACH(set, dpu, i) {
        in[i] = i * 7 + 5;
        DPU_ASSERT(dpu_prepare_xfer(dpu, &in[i]));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "in", 0, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &out[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "out", 0, 4, DPU_XFER_DEFAULT));
    uint32_t wrong = 0;
    for (i = 0; i < nr_dpus; i++)
        if (out[i] != in[i] * 3 + 1)
            wrong++;
    if (wrong) {
        printf("%u DPUs returned a wrong value\n", wrong);
        bad = 1;
    }
    DPU_ASSERT(dpu_free(set));
    printf("all_dpus: %u DPUs, %u ranks\n", nr_dpus, nr_ranks);
    printf("%s all_dpus\n", bad ? "FAIL" : "OK");
    free(in);
    free(out);
    return bad;
}
