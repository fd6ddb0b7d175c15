/* A tenant of the rank-manager daemon, for tests/remote/run.sh.
 *   tenant short          alloc 1 DPU, write, launch, read back, check, free (a short tenant)
 *   tenant secret         write a pattern into every DPU's MRAM of all ranks, then free
 *   tenant zeros          allocate all ranks and check that MRAM reads as zeros
 *   tenant hold S         allocate 1 rank and hold it S seconds, then free
 *   tenant loop           write/launch/read forever (until the daemon or a signal stops it)
 *   tenant spin N         one long launch of N rounds (to be killed in the middle)
 *   tenant print N S      1 DPU prints N lines of 32 bytes; its log is read to stdout, then
 *                         held S seconds (the log stays charged to the printf budget)
 * Exits 0 on success, 1 on a wrong result, 2 on an SDK error (message on stderr). */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORDS 256
#define CHECK(call)                                                                                \
    do {                                                                                           \
        dpu_error_t e_ = (call);                                                                   \
        if (e_ != DPU_OK) {                                                                        \
            fprintf(stderr, "tenant: %s: %s\n", #call, dpu_error_to_string(e_));                   \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static uint32_t data[WORDS];
/* The last 8 bytes of MRAM, outside every symbol of the program. */
static const struct dpu_symbol_t last_mram_word = { .address = 0x08000000u + (64u << 20) - 8, .size = 8 };

static int roundtrip(struct dpu_set_t set, uint32_t add, uint32_t spins)
{
    for (uint32_t i = 0; i < WORDS; i++)
        data[i] = i * 7u;
    CHECK(dpu_copy_to(set, "data", 0, data, sizeof(data)));
    CHECK(dpu_copy_to(set, "add", 0, &add, 4));
    CHECK(dpu_copy_to(set, "spins", 0, &spins, 4));
    CHECK(dpu_launch(set, DPU_SYNCHRONOUS));
    struct dpu_set_t dpu;
    uint32_t d;
    DPU_FOREACH(set, dpu, d) {
        uint32_t got[WORDS];
        CHECK(dpu_copy_from(dpu, "data", 0, got, sizeof(got)));
        for (uint32_t i = 0; i < WORDS; i++)
            if (got[i] != i * 7u + add * spins) {
                fprintf(stderr, "tenant: DPU %u word %u: %u, expected %u\n", d, i, got[i], i * 7u + add * spins);
                return 1;
            }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "short";
    struct dpu_set_t set;
    if (!strcmp(mode, "short")) {
        CHECK(dpu_alloc(1, NULL, &set));
        CHECK(dpu_load(set, "./bin/dpu_tenant", NULL));
        int r = roundtrip(set, (uint32_t)getpid(), 1);
        CHECK(dpu_free(set));
        return r;
    }
    if (!strcmp(mode, "secret") || !strcmp(mode, "zeros")) {
        CHECK(dpu_alloc(DPU_ALLOCATE_ALL, NULL, &set));
        CHECK(dpu_load(set, "./bin/dpu_tenant", NULL));
        struct dpu_set_t dpu;
        uint32_t d, n = 0;
        DPU_FOREACH(set, dpu, d) {
            uint32_t buf[WORDS];
            if (mode[0] == 's') {
                for (uint32_t i = 0; i < WORDS; i++)
                    buf[i] = 0x5ec2e700u + i;
                CHECK(dpu_copy_to(dpu, "data", 0, buf, sizeof(buf)));
                /* And beyond the program's symbols: the last word of MRAM. */
                CHECK(dpu_copy_to_symbol(dpu, last_mram_word, 0, buf, 8));
            } else {
                uint64_t tail = 1;
                CHECK(dpu_copy_from(dpu, "data", 0, buf, sizeof(buf)));
                CHECK(dpu_copy_from_symbol(dpu, last_mram_word, 0, &tail, 8));
                for (uint32_t i = 0; i < WORDS; i++)
                    if (buf[i] != 0) {
                        fprintf(stderr, "tenant: DPU %u word %u reads %#x after another tenant\n", d, i, buf[i]);
                        return 1;
                    }
                if (tail != 0) {
                    fprintf(stderr, "tenant: DPU %u: the end of MRAM reads %#llx\n", d, (unsigned long long)tail);
                    return 1;
                }
            }
            n++;
        }
        printf("%s: %u DPUs\n", mode, n);
        CHECK(dpu_free(set));
        return 0;
    }
    if (!strcmp(mode, "hold")) {
        CHECK(dpu_alloc_ranks(1, NULL, &set));
        printf("holding\n");
        fflush(stdout);
        sleep(argc > 2 ? (unsigned)atoi(argv[2]) : 1);
        CHECK(dpu_free(set));
        return 0;
    }
    if (!strcmp(mode, "loop")) {
        CHECK(dpu_alloc(64, NULL, &set));
        CHECK(dpu_load(set, "./bin/dpu_tenant", NULL));
        printf("looping\n");
        fflush(stdout);
        for (;;)
            if (roundtrip(set, 3, 1))
                return 1;
    }
    if (!strcmp(mode, "spin")) {
        CHECK(dpu_alloc(64, NULL, &set));
        CHECK(dpu_load(set, "./bin/dpu_tenant", NULL));
        printf("spinning\n");
        fflush(stdout);
        return roundtrip(set, 1, argc > 2 ? (uint32_t)atoi(argv[2]) : 1000);
    }
    if (!strcmp(mode, "print")) {
        uint32_t lines = argc > 2 ? (uint32_t)atoi(argv[2]) : 10;
        CHECK(dpu_alloc(1, NULL, &set));
        CHECK(dpu_load(set, "./bin/dpu_printer", NULL));
        CHECK(dpu_copy_to(set, "lines", 0, &lines, 4));
        CHECK(dpu_launch(set, DPU_SYNCHRONOUS));
        struct dpu_set_t dpu;
        DPU_FOREACH(set, dpu) { CHECK(dpu_log_read(dpu, stdout)); }
        printf("printed\n");
        fflush(stdout);
        sleep(argc > 3 ? (unsigned)atoi(argv[3]) : 0);
        CHECK(dpu_free(set));
        return 0;
    }
    if (!strcmp(mode, "print-wrapped")) {
        /* More lines than the 1 MiB printf buffer holds (40 bytes each): the launch succeeds,
         * and the log cannot be shown, through the daemon as without it. */
        uint32_t lines = 30000;
        CHECK(dpu_alloc(1, NULL, &set));
        CHECK(dpu_load(set, "./bin/dpu_printer", NULL));
        CHECK(dpu_copy_to(set, "lines", 0, &lines, 4));
        CHECK(dpu_launch(set, DPU_SYNCHRONOUS));
        dpu_error_t e = dpu_log_read(set, stdout);
        printf("\nlog read: %s\n", dpu_error_to_string(e));
        CHECK(dpu_free(set));
        return e == DPU_ERR_LOG_BUFFER_TOO_SMALL ? 0 : 1;
    }
    fprintf(stderr, "tenant: unknown mode %s\n", mode);
    return 2;
}
