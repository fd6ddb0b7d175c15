/* Collectives conformance (<pidcomm.h>), written like PID-Comm's tutorial:
 *  1. AllReduce (sum) along x of a 32x32x1 hypercube of 1,024 DPUs, 2 KiB of int32 per DPU,
 *     pushed and read in entangled order, checked against the CPU, on the optimized path and
 *     on the baseline (OPENPIM_COLLECTIVES_PATH);
 *  2. AlltoAll along x, with the relocation programs (OPENPIM_COLLECTIVES_PR=always: the
 *     library loads them, then the user's program back) and as the cost model chooses (the
 *     default), then the user's kernel launched again without dpu_load: it must still be
 *     loaded, its heap where it was;
 *  3. bad input: with openpim_pidcomm_error_mode(OPENPIM_PIDCOMM_RETURN_ERRORS) a wrong
 *     comm string returns DPU_ERR_INVALID_MEMORY_TRANSFER and leaves the data alone; in the
 *     default mode the same call ends the program with status 1 (checked in a child). */
#define _POSIX_C_SOURCE 200809L
#include <dpu.h>
#include <pidcomm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR_DPUS 1024
#define WORDS 512 /* 2 KiB of int32 per DPU */

static int32_t data[NR_DPUS][WORDS], back[NR_DPUS][WORDS], want[NR_DPUS][WORDS];

static void push(struct dpu_set_t set, int32_t (*buf)[WORDS], uint32_t offset)
{
    struct dpu_set_t dpu;
    uint32_t i;
    DPU_FOREACH_ENTANGLED_GROUP(set, dpu, i, NR_DPUS) { DPU_ASSERT(dpu_prepare_xfer(dpu, buf[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, offset, sizeof(buf[0]), DPU_XFER_DEFAULT));
}

static void pull(struct dpu_set_t set, int32_t (*buf)[WORDS], uint32_t offset)
{
    struct dpu_set_t dpu;
    uint32_t i;
    DPU_FOREACH_ENTANGLED_GROUP(set, dpu, i, NR_DPUS) { DPU_ASSERT(dpu_prepare_xfer(dpu, buf[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, offset, sizeof(buf[0]), DPU_XFER_DEFAULT));
}

static int compare(const char *what)
{
    for (int d = 0; d < NR_DPUS; d++)
        for (int j = 0; j < WORDS; j++)
            if (back[d][j] != want[d][j]) {
                printf("%s: DPU %d word %d: %d, expected %d\n", what, d, j, back[d][j], want[d][j]);
                return 1;
            }
    printf("%s: ok\n", what);
    return 0;
}

int main(void)
{
    struct dpu_set_t set;
    uint32_t axes[3] = {32, 32, 1};
    uint32_t buffer = 32 << 20, bytes = WORDS * 4;
    int failed = 0;
    DPU_ASSERT(dpu_alloc_comm(NR_DPUS, NULL, &set, 1));
    DPU_ASSERT(dpu_load(set, "./bin/add_one", NULL));
    hypercube_manager *m = init_hypercube_manager(set, 3, axes);
    srand(7);
    for (int d = 0; d < NR_DPUS; d++)
        for (int j = 0; j < WORDS; j++)
            data[d][j] = rand() % 1000 - 500;
    /* 1. AllReduce along x: DPU d gets the sum over its 32 x neighbours 32*(d/32)+k. */
    memset(want, 0, sizeof(want));
    for (int d = 0; d < NR_DPUS; d++)
        for (int k = 0; k < 32; k++)
            for (int j = 0; j < WORDS; j++)
                want[d][j] += data[32 * (d / 32) + k][j];
    const char *paths[2] = {"optimized", "baseline"};
    for (int p = 0; p < 2; p++) {
        setenv("OPENPIM_COLLECTIVES_PATH", paths[p], 1);
        push(set, data, 0);
        pidcomm_all_reduce(m, "100", bytes, 0, 0, buffer, sizeof(int32_t), 0);
        pull(set, back, 0);
        failed |= compare(p == 0 ? "all_reduce optimized" : "all_reduce baseline");
    }
    unsetenv("OPENPIM_COLLECTIVES_PATH");
    /* 2. AlltoAll along x (16 words per chunk), then the user's kernel adds 1: with the
     *    relocation programs, then as the cost model chooses. */
    const char *reordering[2] = {"always", "auto"};
    for (int p = 0; p < 2; p++) {
        setenv("OPENPIM_COLLECTIVES_PR", reordering[p], 1);
        push(set, data, 0);
        pidcomm_alltoall(m, "100", bytes, 0, 1 << 20, buffer);
        uint32_t words = WORDS;
        DPU_ASSERT(dpu_broadcast_to(set, "words", 0, &words, sizeof(words), DPU_XFER_DEFAULT));
        /* The kernel works on heap offset 0: move the result there first. */
        pull(set, back, 1 << 20);
        push(set, back, 0);
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        pull(set, back, 0);
        for (int d = 0; d < NR_DPUS; d++) {
            int r = d % 32, g = 32 * (d / 32);
            for (int j = 0; j < 32; j++)
                for (int k = 0; k < 16; k++)
                    want[d][16 * j + k] = data[g + j][16 * r + k] + 1;
        }
        failed |= compare(p == 0 ? "alltoall (relocation programs), then the user's kernel"
                                 : "alltoall (the model's choice), then the user's kernel");
    }
    unsetenv("OPENPIM_COLLECTIVES_PR");
    /* 3. Bad input. */
    openpim_pidcomm_error_mode(OPENPIM_PIDCOMM_RETURN_ERRORS);
    push(set, data, 0);
    pidcomm_all_reduce(m, "1a0", bytes, 0, 0, buffer, sizeof(int32_t), 0);
    dpu_error_t code = openpim_pidcomm_last_error();
    pull(set, back, 0);
    memcpy(want, data, sizeof(want));
    if (code != DPU_ERR_INVALID_MEMORY_TRANSFER) {
        printf("bad comm: code %d, expected DPU_ERR_INVALID_MEMORY_TRANSFER\n", (int)code);
        failed = 1;
    }
    failed |= compare("bad comm returns and changes nothing");
    pidcomm_all_reduce(m, "100", bytes, 0, 0, buffer, sizeof(int32_t), 0);
    if (openpim_pidcomm_last_error() != DPU_OK) {
        printf("a good call after a bad one: %d\n", (int)openpim_pidcomm_last_error());
        failed = 1;
    }
    openpim_pidcomm_error_mode(OPENPIM_PIDCOMM_EXIT_ON_ERROR);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        pidcomm_all_reduce(m, "100", bytes + 4, 0, 0, buffer, sizeof(int32_t), 0);
        _exit(0); /* not reached: the call ends the program */
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 1) {
        printf("default error mode: child status %d, expected exit(1)\n", status);
        failed = 1;
    } else {
        printf("default error mode ends the program: ok\n");
    }
    free(m);
    DPU_ASSERT(dpu_free(set));
    return failed;
}
