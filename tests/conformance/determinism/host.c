/* Determinism: the same program on the same inputs gives the same results and the same
 * cycle counts whatever the number of host threads simulating the DPUs. The program runs
 * itself with OPENPIM_THREADS=1 and =2 and compares everything the DPUs report; it also
 * checks the results against the CPU. */
#define _POSIX_C_SOURCE 200809L
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 130 /* three ranks, the last one partial */
#define NR_TASKLETS 13
#define WORDS 512

static uint64_t input(uint32_t dpu, uint32_t i)
{
    uint64_t x = ((uint64_t)dpu << 32) ^ (i * 0x9E3779B97F4A7C15ull);
    x ^= x >> 29;
    return x * 0xBF58476D1CE4E5B9ull >> (dpu % 7);
}

/* One run: prints one line per DPU (cycles, total, per-tasklet mix) to stdout. */
static int run_once(void)
{
    struct dpu_set_t set, dpu;
    uint32_t i;
    static uint64_t data[NR_DPUS][WORDS];
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "bin/dpu_mix", NULL));
    for (uint32_t d = 0; d < NR_DPUS; d++)
        for (uint32_t w = 0; w < WORDS; w++)
            data[d][w] = input(d, w);
    DPU_FOREACH (set, dpu, i)
        DPU_ASSERT(dpu_prepare_xfer(dpu, data[i]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "data", 0, sizeof(data[0]), DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    int bad = 0;
    DPU_FOREACH (set, dpu, i) {
        uint64_t total, cycles;
        uint32_t mixed[NR_TASKLETS];
        DPU_ASSERT(dpu_copy_from(dpu, "total", 0, &total, sizeof(total)));
        DPU_ASSERT(dpu_copy_from(dpu, "cycles", 0, &cycles, sizeof(cycles)));
        DPU_ASSERT(dpu_copy_from(dpu, "mixed", 0, mixed, sizeof(mixed)));
        uint64_t expect = 0;
        for (uint32_t w = 0; w < WORDS; w++)
            expect += (data[i][w] & 1) ? data[i][w] / 7 : data[i][w] * 3;
        if (total != expect) {
            fprintf(stderr, "DPU %u: total %" PRIu64 ", CPU says %" PRIu64 "\n", i, total, expect);
            bad = 1;
        }
        printf("%u %" PRIu64 " %" PRIu64, i, cycles, total);
        for (int t = 0; t < NR_TASKLETS; t++)
            printf(" %u", mixed[t]);
        printf("\n");
    }
    DPU_ASSERT(dpu_free(set));
    return bad;
}

static char *capture(const char *self, int threads)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "OPENPIM_THREADS=%d %s --once", threads, self);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    size_t n;
    while ((n = fread(out + len, 1, cap - len - 1, p)) > 0)
        len += n;
    out[len] = 0;
    if (pclose(p) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--once") == 0)
        return run_once();
    char *one = capture(argv[0], 1);
    char *two = capture(argv[0], 2);
    if (!one || !two) {
        printf("FAIL determinism: a run failed\n");
        return 1;
    }
    /* Cycle counts must differ between DPUs (the data differ), or the test proves little. */
    uint64_t first = 0, c;
    unsigned d;
    int varied = 0;
    for (char *line = one; *line; line = strchr(line, '\n') + 1) {
        if (sscanf(line, "%u %" SCNu64, &d, &c) != 2)
            break;
        if (d == 0)
            first = c;
        else if (c != first)
            varied = 1;
    }
    int same = strcmp(one, two) == 0 && strlen(one) > 0;
    printf("%s determinism: 1-thread and 2-thread runs %s; cycle counts %s between DPUs\n",
        same && varied ? "OK" : "FAIL", same ? "identical" : "DIFFER", varied ? "vary" : "do not vary");
    free(one);
    free(two);
    return same && varied ? 0 : 1;
}
