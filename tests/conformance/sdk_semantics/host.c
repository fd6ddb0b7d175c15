/* SDK semantics that real programs rely on, each checked against the value the UPMEM SDK
 * documents (or the CPU computes):
 *  - the SDK's profile property spellings (nrJobsPerRank, ...) are accepted, unknown keys not;
 *  - UPMEM_PROFILE_BASE is honoured by dpu_alloc(..., NULL, ...) and overridden key by key
 *    by the program's own profile string;
 *  - DPU_ALLOCATE_ALL takes every rank; dpu_alloc(0) is DPU_ERR_ALLOCATION;
 *  - DPU_FOREACH / DPU_RANK_FOREACH indices run across ranks, and after a complete loop the
 *    index equals the number of DPUs / ranks (the SDK assigns it before the end test);
 *  - a single DPU set has 1 DPU and 1 rank; dpu_free only frees what dpu_alloc returned
 *    (not one rank of a multi-rank set, nor a DPU) and the set stays usable;
 *  - WRAM __host variables keep their values across launches;
 *  - dpu_copy_from right after a DPU_ASYNCHRONOUS launch waits for the launch;
 *  - dpu_load of a second program: its symbols replace the first program's. */
#define _POSIX_C_SOURCE 200809L
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(const char *what, int ok)
{
    printf("  %s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok)
        failures++;
}

static void check_code(const char *what, dpu_error_t expected, dpu_error_t got)
{
    char line[256];
    snprintf(line, sizeof(line), "%s (expected code %d, got %d)", what, (int)expected, (int)got);
    check(line, expected == got);
}

int main(void)
{
    struct dpu_set_t set, dpu, rank;
    uint32_t nr_dpus = 0, nr_ranks = 0, i = 0, r = 0, j = 0;

    printf("profiles and allocation:\n");
    if (setenv("UPMEM_PROFILE_BASE", "nrRanks=2,nrDpusPerRank=4", 1) != 0) {
        perror("setenv");
        return 1;
    }
    check_code("dpu_alloc(0) fails", DPU_ERR_ALLOCATION, dpu_alloc(0, NULL, &set));
    /* The SDK takes nrThreadsPerRank=0 as "the default number of threads". */
    check_code("nrThreadsPerRank=0 is accepted", DPU_OK, dpu_alloc(1, "nrThreadsPerRank=0", &set));
    DPU_ASSERT(dpu_free(set));
    /* The SDK's property list spells it nrJobsPerRank (public programs use both spellings);
     * the list's other properties (driver, simulator, profiling) are accepted too. */
    static const char *const sdk_profiles[] = {
        "nrJobsPerRank=256,sgXferEnable=true",
        "cycleAccurate=true,nrJobsPerRank=64",
        "nrJobPerRank=64,dispatchOnAllRanks=true,cycleAccurate=true",
        "backend=simulator,nrJobsPerRank=256,sgXferEnable=true",
        "chipId=0x42,ignoreVpd=true,disableResetOnAlloc=false,regionMode=perf,clockDivision=2",
        "enableProfiling=statistics,mramAccessByDpuOnly=false,sgXferMaxBlocksPerDpu=64",
    };
    for (size_t p = 0; p < sizeof(sdk_profiles) / sizeof(sdk_profiles[0]); p++) {
        char what[160];
        snprintf(what, sizeof(what), "profile \"%s\" is accepted", sdk_profiles[p]);
        dpu_error_t e = dpu_alloc(1, sdk_profiles[p], &set);
        check_code(what, DPU_OK, e);
        if (e == DPU_OK)
            DPU_ASSERT(dpu_free(set));
    }
    check_code("a misspelt key (nrJobsPerRanks) is still refused", DPU_ERR_INVALID_PROFILE,
        dpu_alloc(1, "nrJobsPerRanks=4", &set));
    check_code("a bad value of an SDK property (ignoreVpd=maybe) is refused", DPU_ERR_INVALID_PROFILE,
        dpu_alloc(1, "ignoreVpd=maybe", &set));
    DPU_ASSERT(dpu_alloc(DPU_ALLOCATE_ALL, NULL, &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    check("DPU_ALLOCATE_ALL with UPMEM_PROFILE_BASE=nrRanks=2,nrDpusPerRank=4 gives 2 ranks", nr_ranks == 2);
    check("... and 8 DPUs", nr_dpus == 8);

    printf("iteration:\n");
    int indices_ok = 1;
    uint32_t expected = 0;
    DPU_FOREACH(set, dpu, i) {
        uint32_t n = 0, nr = 0;
        DPU_ASSERT(dpu_get_nr_dpus(dpu, &n));
        DPU_ASSERT(dpu_get_nr_ranks(dpu, &nr));
        if (i != expected++ || n != 1 || nr != 1)
            indices_ok = 0;
    }
    check("DPU_FOREACH index runs 0..7 across both ranks; each DPU is a set of 1 DPU, 1 rank", indices_ok && expected == 8);
    check("DPU_FOREACH index after the loop is the number of DPUs", i == 8);
    uint32_t per_rank_ok = 1;
    DPU_RANK_FOREACH(set, rank, r) {
        uint32_t n = 0;
        DPU_ASSERT(dpu_get_nr_dpus(rank, &n));
        DPU_FOREACH(rank, dpu, j) {
        }
        if (n != 4 || j != 4)
            per_rank_ok = 0;
    }
    check("each rank has 4 DPUs (nested DPU_FOREACH index ends at 4)", per_rank_ok);
    check("DPU_RANK_FOREACH index after the loop is the number of ranks", r == 2);

    printf("dpu_free of parts of a set:\n");
    DPU_RANK_FOREACH(set, rank) {
        check_code("dpu_free of the first rank of a 2-rank set is refused", DPU_ERR_INVALID_DPU_SET, dpu_free(rank));
        break;
    }
    DPU_FOREACH(set, dpu) {
        check_code("dpu_free of a DPU is refused", DPU_ERR_INVALID_DPU_SET, dpu_free(dpu));
        break;
    }
    check_code("the set is still usable (dpu_load)", DPU_OK, dpu_load(set, "./bin/dpu_counter", NULL));

    printf("launches:\n");
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_copy_to(dpu, "dpu_id", 0, &i, sizeof(i)));
    }
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_ASSERT(dpu_launch(set, DPU_ASYNCHRONOUS));
    int async_ok = 1;
    DPU_FOREACH(set, dpu, i) {
        uint64_t result = 0;
        /* no dpu_sync: the SDK waits for the DPU before reading it */
        DPU_ASSERT(dpu_copy_from(dpu, "result", 0, &result, sizeof(result)));
        if (result != 3 * 1000 + i)
            async_ok = 0;
    }
    check("WRAM variables persist across launches, and dpu_copy_from waits for an async launch", async_ok);
    DPU_ASSERT(dpu_launch(set, DPU_ASYNCHRONOUS));
    DPU_ASSERT(dpu_launch(set, DPU_ASYNCHRONOUS));
    DPU_ASSERT(dpu_sync(set));
    uint32_t launches = 0;
    DPU_FOREACH(set, dpu) {
        DPU_ASSERT(dpu_copy_from(dpu, "launches", 0, &launches, sizeof(launches)));
        break;
    }
    check("two queued async launches both run", launches == 5);

    printf("loading a second program:\n");
    DPU_ASSERT(dpu_load(set, "./bin/dpu_square", NULL));
    DPU_FOREACH(set, dpu) {
        check_code("a symbol of the first program is gone", DPU_ERR_UNKNOWN_SYMBOL,
            dpu_copy_from(dpu, "launches", 0, &launches, sizeof(launches)));
        break;
    }
    uint32_t base = 7;
    DPU_ASSERT(dpu_broadcast_to(set, "base", 0, &base, sizeof(base), DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    int squares_ok = 1;
    DPU_FOREACH(set, dpu) {
        uint32_t squares[8];
        DPU_ASSERT(dpu_copy_from(dpu, "squares", 0, squares, sizeof(squares)));
        for (uint32_t k = 0; k < 8; k++)
            if (squares[k] != (base + k) * (base + k))
                squares_ok = 0;
    }
    check("the second program runs with its own symbols", squares_ok);
    DPU_ASSERT(dpu_free(set));

    printf("profile override:\n");
    DPU_ASSERT(dpu_alloc(DPU_ALLOCATE_ALL, "nrDpusPerRank=2", &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    check("the program's nrDpusPerRank=2 overrides the base, nrRanks=2 is kept (4 DPUs)", nr_ranks == 2 && nr_dpus == 4);
    DPU_ASSERT(dpu_free(set));

    printf("%s sdk_semantics\n", failures ? "FAIL" : "OK");
    return failures ? 1 : 0;
}
