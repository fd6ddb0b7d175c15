/* Timing test host program: the virtual timeline counts the program's host code, and only
 * it, however the emulator's own work overlaps it (argv[1] picks the scenario):
 *
 *   async        host code runs while an asynchronous launch is being simulated on the same
 *                cores: the host phase is the host code's own time, not inflated by the
 *                simulation competing for the cores
 *   cb_nested    a callback makes a synchronous launch: the callback's host time excludes the
 *                launch's simulation (the launch counts as modeled kernel time)
 *   cb_parallel  a DPU_CALLBACK_PARALLEL callback sleeps 100 ms on each of 4 ranks: the host
 *                waits 100 ms, not 400 ms
 *
 * Prints "key seconds" lines that run.sh compares with the report. */
#define _POSIX_C_SOURCE 199309L
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static volatile uint64_t sink;
static void host_compute(void)
{
    uint64_t x = 1;
    for (long i = 0; i < 100000000; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    sink = x;
}

static double nested_launch_s;
static dpu_error_t launch_inside(struct dpu_set_t set, uint32_t i, void *arg)
{
    (void)i;
    (void)arg;
    double t = now_s();
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    nested_launch_s = now_s() - t;
    return DPU_OK;
}

static dpu_error_t sleep_100ms(struct dpu_set_t set, uint32_t i, void *arg)
{
    (void)set;
    (void)i;
    (void)arg;
    struct timespec t = { 0, 100000000 };
    nanosleep(&t, NULL);
    return DPU_OK;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "async";
    struct dpu_set_t set;
    uint32_t nr_dpus = strcmp(mode, "cb_parallel") ? 64 : 256;
    uint32_t iters = strcmp(mode, "async") ? 5000 : 400000;

    /* The same host code alone, before any SDK call (not on the timeline). */
    double t = now_s();
    host_compute();
    printf("baseline %.6f\n", now_s() - t);

    DPU_ASSERT(dpu_alloc(nr_dpus, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/spin", NULL));
    DPU_ASSERT(dpu_broadcast_to(set, "iters", 0, &iters, sizeof(iters), DPU_XFER_DEFAULT));
    if (!strcmp(mode, "async")) {
        DPU_ASSERT(dpu_launch(set, DPU_ASYNCHRONOUS));
        host_compute();
        DPU_ASSERT(dpu_sync(set));
    } else if (!strcmp(mode, "cb_nested")) {
        DPU_ASSERT(dpu_callback(set, launch_inside, NULL, DPU_CALLBACK_SINGLE_CALL));
        printf("nested_launch %.6f\n", nested_launch_s);
    } else {
        DPU_ASSERT(dpu_callback(set, sleep_100ms, NULL, DPU_CALLBACK_PARALLEL));
    }
    DPU_ASSERT(dpu_free(set));
    return 0;
}
