/* Checksum on 4 DPUs: the same buffer goes to every DPU with one dpu_copy_to
 * on the whole set (into a __mram_noinit array); per-DPU keys with
 * dpu_copy_to on single DPUs. Checks the performance counter values too. */
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define NR_DPUS 4
#define NR_BYTES (48 * 1024)

int main(void)
{
    uint8_t *buf = malloc(NR_BYTES);
    uint32_t x = 5;
    for (uint32_t k = 0; k < NR_BYTES; k++) {
        x = x * 1103515245u + 12345u;
        buf[k] = (uint8_t)(x >> 16);
    }
    struct dpu_set_t set, dpu;
    uint32_t i;
    int bad = 0;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_checksum", NULL));
    DPU_ASSERT(dpu_copy_to(set, "buffer", 0, buf, NR_BYTES));
    uint32_t nb = NR_BYTES;
    DPU_ASSERT(dpu_copy_to(set, "nr_bytes", 0, &nb, 4));
    DPU_FOREACH(set, dpu, i) {
        uint32_t key = 0x9e3779b9u * (i + 1);
        DPU_ASSERT(dpu_copy_to(dpu, "key", 0, &key, 4));
    }
    uint64_t cycles[NR_DPUS] = { 0 }, instructions[NR_DPUS] = { 0 };
    for (uint32_t mode = 0; mode < 2; mode++) {
        DPU_ASSERT(dpu_copy_to(set, "mode", 0, &mode, 4));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        DPU_FOREACH(set, dpu, i) {
            uint32_t key = 0x9e3779b9u * (i + 1), got, ref = key, cps;
            for (uint32_t k = 0; k < NR_BYTES; k++)
                ref += (uint32_t)(buf[k] ^ (uint8_t)key) * (k + 1);
            uint64_t c;
            DPU_ASSERT(dpu_copy_from(dpu, "checksum", 0, &got, 4));
            DPU_ASSERT(dpu_copy_from(dpu, "counted", 0, &c, 8));
            DPU_ASSERT(dpu_copy_from(dpu, "clocks_per_sec", 0, &cps, 4));
            if (got != ref) {
                printf("DPU %u mode %u: checksum %08x expected %08x\n", i, mode, got, ref);
                bad = 1;
            }
            if (cps < 100000000u) {
                printf("DPU %u: CLOCKS_PER_SEC = %u, expected the DPU frequency (hundreds of MHz)\n", i, cps);
                bad = 1;
            }
            if (mode == 0)
                cycles[i] = c;
            else
                instructions[i] = c;
        }
    }
    for (i = 0; i < NR_DPUS; i++) {
        /* at least one instruction per byte; a 16-tasklet DPU issues at most one
         * instruction per cycle, so cycles >= instructions */
        if (instructions[i] < NR_BYTES || cycles[i] < instructions[i]) {
            printf("DPU %u: implausible counters: %" PRIu64 " cycles, %" PRIu64 " instructions\n", i,
                cycles[i], instructions[i]);
            bad = 1;
        }
    }
    printf("checksum: %" PRIu64 " cycles, %" PRIu64 " instructions on DPU 0\n", cycles[0], instructions[0]);
    DPU_ASSERT(dpu_free(set));
    printf("%s checksum\n", bad ? "FAIL" : "OK");
    free(buf);
    return bad;
}
