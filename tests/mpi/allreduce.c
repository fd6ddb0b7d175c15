/* Collectives for the MPI backend's test (tests/mpi/run.py): PID-Comm's AllReduce (sum) and
 * AlltoAll along x of a 16x16x1 hypercube of 256 DPUs (16x4x1 of 64 in bin/allreduce64), then
 * AllReduce, ReduceScatter and AllGather along y (across the ranks), 1 KiB of int32 per DPU, pushed and read back in
 * entangled order and checked against the CPU. Prints "AllReduce OK", "AlltoAll OK", "AllReduce
 * y OK", "ReduceScatter y OK" and "AllGather y OK", or the first mismatch. */
#include <dpu.h>
#include <pidcomm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef NR_DPUS
#define NR_DPUS 256 /* bin/allreduce64: 64, one rank (split over the workers) */
#endif
#define X 16
#define WORDS 256

static int32_t data[NR_DPUS][WORDS], want[NR_DPUS][WORDS], orig[NR_DPUS][WORDS];

static void push(struct dpu_set_t set, int32_t (*buf)[WORDS], uint32_t offset, int to_dpu)
{
    struct dpu_set_t dpu;
    uint32_t each;
    DPU_FOREACH_ENTANGLED_GROUP(set, dpu, each, NR_DPUS)
    {
        DPU_ASSERT(dpu_prepare_xfer(dpu, buf[each]));
    }
    DPU_ASSERT(dpu_push_xfer(set, to_dpu ? DPU_XFER_TO_DPU : DPU_XFER_FROM_DPU,
                             DPU_MRAM_HEAP_POINTER_NAME, offset, sizeof(buf[0]), DPU_XFER_DEFAULT));
}

int main(void)
{
    struct dpu_set_t set;
    uint32_t i;
    uint32_t axes[3] = { X, NR_DPUS / X, 1 };
    srand(28);
    for (i = 0; i < NR_DPUS; i++)
        for (uint32_t w = 0; w < WORDS; w++)
            orig[i][w] = data[i][w] = rand() % 1000 - 500;
    for (i = 0; i < NR_DPUS; i++)
        for (uint32_t w = 0; w < WORDS; w++) {
            int32_t sum = 0;
            for (uint32_t k = 0; k < X; k++)
                sum += data[(i / X) * X + k][w];
            want[i][w] = sum;
        }
    DPU_ASSERT(dpu_alloc_comm(NR_DPUS, NULL, &set, 1));
    DPU_ASSERT(dpu_load(set, "./bin/idle", NULL));
    hypercube_manager *hm = init_hypercube_manager(set, 3, axes);
    push(set, data, 0, 1);
    pidcomm_all_reduce(hm, "100", sizeof(data[0]), 0, 0, 1 << 20, sizeof(int32_t), 0);
    push(set, data, 0, 0);
    for (i = 0; i < NR_DPUS; i++)
        for (uint32_t w = 0; w < WORDS; w++)
            if (data[i][w] != want[i][w]) {
                printf("mismatch at DPU %u word %u: %d, expected %d\n", i, w, data[i][w], want[i][w]);
                return 1;
            }
    printf("AllReduce OK\n");
    /* AlltoAll: chunk j of member r's result is chunk r of member j (16 chunks of 16 words). */
    push(set, orig, 0, 1);
    pidcomm_alltoall(hm, "100", sizeof(data[0]), 0, 64 << 10, 1 << 20);
    push(set, data, 64 << 10, 0);
    for (i = 0; i < NR_DPUS; i++)
        for (uint32_t w = 0; w < WORDS; w++) {
            uint32_t chunk = w / (WORDS / X), r = i % X, base = i - r;
            int32_t expect = orig[base + chunk][r * (WORDS / X) + w % (WORDS / X)];
            if (data[i][w] != expect) {
                printf("AlltoAll mismatch at DPU %u word %u: %d, expected %d\n", i, w, data[i][w], expect);
                return 1;
            }
        }
    printf("AlltoAll OK\n");
    /* AllReduce along y: its groups span the 4 ranks, so on several workers the lines cross
     * between them. */
    push(set, orig, 0, 1);
    pidcomm_all_reduce(hm, "010", sizeof(data[0]), 0, 0, 1 << 20, sizeof(int32_t), 0);
    push(set, data, 0, 0);
    for (i = 0; i < NR_DPUS; i++)
        for (uint32_t w = 0; w < WORDS; w++) {
            int32_t sum = 0;
            for (uint32_t k = 0; k < NR_DPUS / X; k++)
                sum += orig[i % X + k * X][w];
            if (data[i][w] != sum) {
                printf("AllReduce y mismatch at DPU %u word %u: %d, expected %d\n", i, w, data[i][w], sum);
                return 1;
            }
        }
    printf("AllReduce y OK\n");
    /* ReduceScatter along y: member r (its y coordinate) gets the sum of chunk r (16 words) of
     * its group's sources. */
    const uint32_t chunk = WORDS / (NR_DPUS / X);
    push(set, orig, 0, 1);
    pidcomm_reduce_scatter(hm, "010", sizeof(data[0]), 0, 64 << 10, 1 << 20, sizeof(int32_t));
    push(set, data, 64 << 10, 0);
    for (i = 0; i < NR_DPUS; i++)
        for (uint32_t w = 0; w < chunk; w++) {
            int32_t sum = 0;
            for (uint32_t k = 0; k < NR_DPUS / X; k++)
                sum += orig[i % X + k * X][(i / X) * chunk + w];
            if (data[i][w] != sum) {
                printf("ReduceScatter y mismatch at DPU %u word %u: %d, expected %d\n", i, w, data[i][w], sum);
                return 1;
            }
        }
    printf("ReduceScatter y OK\n");
    /* AllGather along y: every member gets its group's first chunks, by y coordinate. */
    pidcomm_allgather(hm, "010", sizeof(data[0]), 0, 64 << 10, 1 << 20);
    push(set, data, 64 << 10, 0);
    for (i = 0; i < NR_DPUS; i++)
        for (uint32_t w = 0; w < WORDS; w++) {
            int32_t expect = orig[i % X + (w / chunk) * X][w % chunk];
            if (data[i][w] != expect) {
                printf("AllGather y mismatch at DPU %u word %u: %d, expected %d\n", i, w, data[i][w], expect);
                return 1;
            }
        }
    printf("AllGather y OK\n");
    free(hm);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
