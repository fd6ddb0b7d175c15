/* Simulation speed of one bench kernel: loads bin/KERNEL_dpu on NR_DPUS DPUs, sets its
 * iteration variable, and times one launch (host wall time around dpu_launch).
 * Usage: speed_host KERNEL NR_DPUS N
 *   KERNEL  ips (ALU loop; N = iterations), mul (multiply loop; N = iterations),
 *           stream (VA-like DMA + add loop; N = iterations) or
 *           dma (TRNS-like DMA/mutex/barrier loop; N = rounds)
 * Prints the wall time and the process's CPU time of the launch, the instructions the DPUs
 * counted themselves (perfcounter, between the kernel's barriers) and a digest of every DPU's results (checksums and, for dma, its MRAM
 * tiles), so that two engines can be compared for identical results. The engine's own count
 * of instructions and cycles is in the run report (OPENPIM_REPORT). OPENPIM_THREADS chooses
 * the host cores. */
#define _GNU_SOURCE
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/resource.h>

#define NR_TASKLETS 16
#define DMA_TILE_WORDS (512 * 256 / 8)

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

/* The real wall clock: the emulator shows host programs a virtual clock (the emulated
 * machine's timeline), which the system call bypasses. */
static void wall_clock(struct timespec *ts)
{
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ts);
}

/* CPU time of the process (all threads), seconds: less sensitive than wall time to other
 * programs sharing the host. */
static double cpu_seconds(void)
{
    struct rusage ru;
    syscall(SYS_getrusage, RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
        + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s ips|mul|dma|stream NR_DPUS N\n", argv[0]);
        return 2;
    }
    const char *kernel = argv[1];
    uint32_t nr_dpus = (uint32_t)atoi(argv[2]);
    uint32_t n = (uint32_t)atoi(argv[3]);
    int dma = strcmp(kernel, "dma") == 0;
    char path[256];
    snprintf(path, sizeof path, "bin/%s_dpu", kernel);
    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(nr_dpus, NULL, &set));
    DPU_ASSERT(dpu_load(set, path, NULL));
    DPU_ASSERT(dpu_broadcast_to(set, dma ? "rounds" : "iterations", 0, &n, sizeof(n), DPU_XFER_DEFAULT));
    struct timespec t0, t1;
    double c0 = cpu_seconds();
    wall_clock(&t0);
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    wall_clock(&t1);
    double cpu = cpu_seconds() - c0;
    double counted = 0;
    uint64_t digest = 0;
    static uint64_t tiles[DMA_TILE_WORDS];
    DPU_FOREACH (set, dpu) {
        uint64_t instr;
        uint32_t sums[NR_TASKLETS];
        DPU_ASSERT(dpu_copy_from(dpu, "instructions", 0, &instr, sizeof(instr)));
        DPU_ASSERT(dpu_copy_from(dpu, "checksum", 0, sums, sizeof(sums)));
        counted += (double)instr;
        digest = mix(digest, instr);
        for (int i = 0; i < NR_TASKLETS; i++)
            digest = mix(digest, sums[i]);
        if (dma) {
            DPU_ASSERT(dpu_copy_from(dpu, "tiles", 0, tiles, sizeof(tiles)));
            for (uint32_t i = 0; i < DMA_TILE_WORDS; i++)
                digest = mix(digest, tiles[i]);
        }
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("kernel=%s dpus=%u seconds=%.4f cpu_seconds=%.4f counted=%.0f digest=%016llx\n", kernel,
        nr_dpus, secs, cpu, counted, (unsigned long long)digest);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
