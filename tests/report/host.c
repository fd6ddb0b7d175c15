/* Report test host program: one scenario per run (argv[1]), each a small UPMEM program that
 * should trigger exactly one piece of advice of the run report (or none, for "good"):
 *
 *   good       1 rank, 16 tasklets, parallel transfers, 1 KiB DMA blocks: no advice
 *   idle       the rank stays allocated while the host works ~150 ms: idle_ranks
 *   serial     dpu_copy_to / dpu_copy_from in DPU_FOREACH loops: serial_transfers_in_loops
 *   small      many tiny broadcasts: small_transfers
 *   tasklets   a kernel built with 4 tasklets: few_tasklets
 *   dma        a kernel moving MRAM in 8-byte DMA transfers: small_mram_transfers
 *   exchange   as good, then 3 times a host-mediated exchange (each DPU's vector moves to the
 *              next DPU, through the host) marked as an inter-DPU region and a launch: the
 *              exchanges are inter-DPU time; host_mediated_exchange
 *
 * The host checks every result against the CPU, and exits non-zero on a mismatch. */
#define _POSIX_C_SOURCE 199309L
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The inter-DPU region markers where the SDK has them (OpenPIM), nothing elsewhere: the
 * pattern docs/report-schema.md recommends for programs that also build for real hardware. */
#if defined(__has_include)
#if __has_include(<openpim.h>)
#include <openpim.h>
#endif
#endif
#ifndef OPENPIM_H
#define openpim_interdpu_begin_named(label) ((void)0)
#define openpim_interdpu_end() ((void)0)
#endif

#define NR_DPUS 64
#define WORDS (4096) /* 32-bit words per DPU: 16 KiB */

static uint32_t in[NR_DPUS][WORDS];
static uint32_t out[NR_DPUS][WORDS];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Host work that is not PIM work (the program's own computation). */
static volatile uint64_t sink;
static void host_work(double seconds)
{
    double end = now_s() + seconds;
    uint64_t x = 1;
    while (now_s() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    sink = x;
}

/* After `rounds` exchanges, DPU d holds DPU d-rounds's vector, incremented by every launch. */
static int check(int rounds)
{
    for (int d = 0; d < NR_DPUS; d++) {
        int from = (d + NR_DPUS - rounds) % NR_DPUS;
        uint32_t add = 1 + (uint32_t)rounds;
        for (int i = 0; i < WORDS; i++)
            if (out[d][i] != in[from][i] + add) {
                fprintf(stderr, "DPU %d word %d: %u, expected %u\n", d, i, out[d][i], in[from][i] + add);
                return 1;
            }
    }
    return 0;
}

static uint32_t moved[NR_DPUS][WORDS];

/* Each DPU's vector moves to the next DPU, through the host. */
static void exchange(struct dpu_set_t set, uint32_t bytes)
{
    struct dpu_set_t dpu;
    uint32_t each;
    openpim_interdpu_begin_named("rotate");
    DPU_FOREACH (set, dpu, each)
        DPU_ASSERT(dpu_prepare_xfer(dpu, out[each]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, bytes, DPU_XFER_DEFAULT));
    for (int d = 0; d < NR_DPUS; d++)
        memcpy(moved[(d + 1) % NR_DPUS], out[d], bytes);
    DPU_FOREACH (set, dpu, each)
        DPU_ASSERT(dpu_prepare_xfer(dpu, moved[each]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, bytes, DPU_XFER_DEFAULT));
    openpim_interdpu_end();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "good";
    const char *binary = "./bin/task_1k";
    if (!strcmp(mode, "tasklets"))
        binary = "./bin/task_4t";
    else if (!strcmp(mode, "dma"))
        binary = "./bin/task_8b";
    else if (!strcmp(mode, "odd_dma"))
        binary = "./bin/task_odd";
    for (int d = 0; d < NR_DPUS; d++)
        for (int i = 0; i < WORDS; i++)
            in[d][i] = (uint32_t)(d * 7919 + i * 31);

    struct dpu_set_t set, dpu;
    uint32_t each;
    uint32_t bytes = WORDS * sizeof(uint32_t);
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    if (!strcmp(mode, "idle"))
        host_work(0.15);
    DPU_ASSERT(dpu_load(set, binary, NULL));

    if (!strcmp(mode, "small")) {
        /* 200 tiny broadcasts where one would do. */
        for (uint32_t k = 0; k < 200; k++)
            DPU_ASSERT(dpu_broadcast_to(set, "nr_bytes", 0, &bytes, sizeof(bytes), DPU_XFER_DEFAULT));
    } else {
        DPU_ASSERT(dpu_broadcast_to(set, "nr_bytes", 0, &bytes, sizeof(bytes), DPU_XFER_DEFAULT));
    }

    if (!strcmp(mode, "serial")) {
        DPU_FOREACH (set, dpu, each)
            DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, in[each], bytes));
    } else {
        DPU_FOREACH (set, dpu, each)
            DPU_ASSERT(dpu_prepare_xfer(dpu, in[each]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, bytes, DPU_XFER_DEFAULT));
    }

    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    int rounds = !strcmp(mode, "exchange") ? 3 : 0;
    for (int r = 0; r < rounds; r++) {
        exchange(set, bytes); /* reads every DPU, moves the vectors, writes them back */
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    }

    if (!strcmp(mode, "serial")) {
        DPU_FOREACH (set, dpu, each)
            DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, out[each], bytes));
    } else {
        DPU_FOREACH (set, dpu, each)
            DPU_ASSERT(dpu_prepare_xfer(dpu, out[each]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, bytes, DPU_XFER_DEFAULT));
    }
    DPU_ASSERT(dpu_free(set));
    return check(rounds);
}
