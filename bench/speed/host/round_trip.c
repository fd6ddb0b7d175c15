/* The wall time of one small synchronous SDK call, the round trip a distributed run pays for
 * every call that is not a batched write (bench/mpi/run.py, docs/scale-out.md): a
 * dpu_copy_from of 8 bytes from one DPU, and a dpu_launch of the given (tiny) program on all
 * the DPUs of one rank. Run with OPENPIM_CLOCK=real so that the clock is the host's.
 * Prints key=value pairs: copy_us and launch_us, each the mean over ROUNDS calls after 50
 * warm-up calls. Usage: round_trip_host DPU_PROGRAM ROUNDS */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under --std=c11 */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) <= 0) {
        fprintf(stderr, "usage: %s DPU_PROGRAM ROUNDS\n", argv[0]);
        return 2;
    }
    int rounds = atoi(argv[2]);
    struct dpu_set_t set, dpu, first;
    DPU_ASSERT(dpu_alloc(64, NULL, &set));
    DPU_ASSERT(dpu_load(set, argv[1], NULL));
    DPU_FOREACH (set, dpu) {
        first = dpu;
        break;
    }
    uint64_t word = 0;
    for (int i = 0; i < 50; i++)
        DPU_ASSERT(dpu_copy_from(first, DPU_MRAM_HEAP_POINTER_NAME, 0, &word, sizeof(word)));
    double t0 = now();
    for (int i = 0; i < rounds; i++)
        DPU_ASSERT(dpu_copy_from(first, DPU_MRAM_HEAP_POINTER_NAME, 0, &word, sizeof(word)));
    double t1 = now();
    for (int i = 0; i < 50; i++)
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    double t2 = now();
    for (int i = 0; i < rounds; i++)
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    double t3 = now();
    printf("copy_us=%.1f launch_us=%.1f\n", (t1 - t0) / rounds * 1e6, (t3 - t2) / rounds * 1e6);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
