/* The host-side cost of the SDK calls a program makes most often around small transfers, in
 * the shape of PrIM TRNS's step 1 (196,608 rounds of 64 dpu_prepare_xfer and one
 * dpu_push_xfer of a few bytes per DPU): CPU time of the process (getrusage, which the
 * virtual clock leaves alone) per call, on one rank of 64 DPUs of the program given.
 * Prints key=value pairs: ns per DPU_FOREACH step, per dpu_prepare_xfer (with its step), and
 * per dpu_push_xfer of 8 bytes to each of the 64 DPUs (rounds of 64 prepares and the push, less
 * the prepares). Usage: calls_host DPU_PROGRAM ROUNDS */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec
        + 1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) <= 0) {
        fprintf(stderr, "usage: %s DPU_PROGRAM ROUNDS\n", argv[0]);
        return 2;
    }
    unsigned rounds = (unsigned)atoi(argv[2]);
    struct dpu_set_t set, dpu;
    uint32_t nr, i;
    DPU_ASSERT(dpu_alloc(64, NULL, &set));
    DPU_ASSERT(dpu_load(set, argv[1], NULL));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr));
    uint64_t *buf = calloc((size_t)nr * rounds, sizeof(uint64_t));
    if (buf == NULL)
        return 1;
    unsigned long steps = 0;
    double t0 = cpu_seconds();
    for (unsigned r = 0; r < rounds; r++)
        DPU_FOREACH (set, dpu)
            steps++;
    double t1 = cpu_seconds();
    for (unsigned r = 0; r < rounds; r++)
        DPU_FOREACH (set, dpu, i)
            DPU_ASSERT(dpu_prepare_xfer(dpu, &buf[(size_t)r * nr + i]));
    double t2 = cpu_seconds();
    for (unsigned r = 0; r < rounds; r++) {
        DPU_FOREACH (set, dpu, i)
            DPU_ASSERT(dpu_prepare_xfer(dpu, &buf[(size_t)r * nr + i]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 8 * (r % 4096), 8,
            DPU_XFER_DEFAULT));
    }
    double t3 = cpu_seconds();
    double n = (double)rounds * nr;
    printf("dpus=%u steps=%lu step_ns=%.1f prepare_ns=%.1f push_ns=%.1f\n", nr, steps, 1e9 * (t1 - t0) / n,
        1e9 * (t2 - t1) / n, 1e9 * ((t3 - t2) - (t2 - t1)) / rounds);
    DPU_ASSERT(dpu_free(set));
    free(buf);
    return 0;
}
