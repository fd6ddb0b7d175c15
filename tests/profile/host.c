/* Profiler test host: NR_DPUS DPUs run bin/split (argv[1]: the kernel to load) LAUNCHES times;
 * each DPU's checksums are checked against the same computation on the CPU. */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NR_DPUS 4
#define LAUNCHES 2
#define NR_TASKLETS 16
#define UNITS 40
#define BLOCK 64

static uint32_t mram[NR_TASKLETS * 1024];

static uint32_t light(uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        x = (x << 3) ^ (x >> 2) ^ (i + 0x1234u);
    return x;
}

static uint32_t heavy(uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        x = (x << 3) ^ (x >> 2) ^ (i + 0x4321u);
    return x;
}

static uint32_t extra(uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        x = x * 3u + i;
    return x;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: host KERNEL\n");
        return 2;
    }
    for (uint32_t i = 0; i < NR_TASKLETS * 1024; i++)
        mram[i] = i * 2654435761u;
    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, argv[1], NULL));
    DPU_ASSERT(dpu_broadcast_to(set, "data", 0, mram, sizeof(mram), DPU_XFER_DEFAULT));
    int bad = 0;
    for (uint32_t l = 0; l < LAUNCHES; l++) {
        uint32_t seed = 7 + l;
        DPU_ASSERT(dpu_broadcast_to(set, "seed", 0, &seed, sizeof(seed), DPU_XFER_DEFAULT));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        DPU_FOREACH (set, dpu) {
            uint32_t result[NR_TASKLETS];
            DPU_ASSERT(dpu_copy_from(dpu, "result", 0, result, sizeof(result)));
            for (uint32_t t = 0; t < NR_TASKLETS; t++) {
                uint32_t x = seed + t;
                for (uint32_t u = 0; u < UNITS; u++) {
                    x = light(15, x);
                    x = heavy(85, x);
                }
                if (t == 0)
                    x = extra(2000, x);
                uint32_t sum = 0;
                for (uint32_t off = 0; off < 1024 * 4; off += BLOCK)
                    sum += mram[t * 1024 + off / 4];
                if (result[t] != x + sum) {
                    fprintf(stderr, "launch %u tasklet %u: %u, expected %u\n", l, t, result[t], x + sum);
                    bad = 1;
                }
            }
        }
    }
    DPU_ASSERT(dpu_free(set));
    if (bad)
        return 1;
    printf("OK\n");
    return 0;
}
