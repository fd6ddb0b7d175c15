/* SDK surface that real programs use beyond dpu.h (dpu_demo's checksum host, PrIM's NUMA-aware
 * forks): dpu_management.h rank and DPU queries, dpu_target_macros.h, one-rank allocation and
 * STRUCT_DPU_FOREACH; and on the DPU side the *_INIT macros in both forms and CLOCKS_PER_SEC,
 * which must follow the hardware profile the program runs under. One line per check. */
#define _DEFAULT_SOURCE
#include <dpu.h>
#include <dpu_management.h>
#include <dpu_target_macros.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_TASKLETS 8

static int failed, passed;

static void check(const char *what, int ok)
{
    printf("  %s %s\n", ok ? "PASS" : "FAIL", what);
    if (ok)
        passed++;
    else
        failed++;
}

/* Runs `binary` on 2 DPUs under `profile`; checks the tasklets' count and CLOCKS_PER_SEC. */
static void run_kernel(const char *binary, const char *profile, uint32_t expected_clocks)
{
    struct dpu_set_t set, dpu;
    char what[300];
    int ok = 1;
    DPU_ASSERT(dpu_alloc(2, profile, &set));
    DPU_ASSERT(dpu_load(set, binary, NULL));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu) {
        uint32_t counts[4] = { 0, 0, 0, 0 }, clocks = 0;
        uint64_t cycles = 0;
        DPU_ASSERT(dpu_copy_from(dpu, "counts", 0, counts, sizeof(counts)));
        DPU_ASSERT(dpu_copy_from(dpu, "clocks_per_sec", 0, &clocks, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "cycles", 0, &cycles, 8));
        int counts_ok = counts[0] == NR_TASKLETS && counts[1] == NR_TASKLETS && counts[2] == NR_TASKLETS &&
            counts[3] == NR_TASKLETS;
        if (!counts_ok || clocks != expected_clocks || cycles == 0) {
            printf("    counts %u %u %u %u (expected %u each), CLOCKS_PER_SEC %u (expected %u), cycles %llu\n",
                counts[0], counts[1], counts[2], counts[3], NR_TASKLETS, clocks, expected_clocks,
                (unsigned long long)cycles);
            ok = 0;
        }
    }
    snprintf(what, sizeof(what), "%s under \"%s\": every object taken by %d tasklets, CLOCKS_PER_SEC = %u", binary,
        profile ? profile : "(default)", NR_TASKLETS, expected_clocks);
    check(what, ok);
    DPU_ASSERT(dpu_free(set));
}

static void kernels(void)
{
    printf("DPU side (*_INIT macros with and without ';', CLOCKS_PER_SEC):\n");
    const char *binaries[] = { "./bin/dpu_surface", "./bin/dpu_surface_semicolons" };
    for (int b = 0; b < 2; b++) {
        run_kernel(binaries[b], NULL, 350000000u);
        run_kernel(binaries[b], "hardware=upmem-v1a", 350000000u);
        run_kernel(binaries[b], "hardware=upmem-v1b", 400000000u);
    }
    /* A program reloaded under another profile gets that profile's frequency. */
    setenv("UPMEM_PROFILE_BASE", "hardware=upmem-v1b", 1);
    run_kernel("./bin/dpu_surface", NULL, 400000000u);
    unsetenv("UPMEM_PROFILE_BASE");
}

static void management(void)
{
    struct dpu_set_t set, dpu, rank;
    uint32_t i, r, nr_ranks;
    int ids_ok = 1, slices_ok = 1, get_ok = 1, numa_ok = 1, rank_ok = 1;
    dpu_id_t rank_ids[2] = { 0, 0 };

    printf("dpu_management.h and dpu_target_macros.h:\n");
    /* 70 DPUs: a full rank of 64 and a rank of 6 */
    DPU_ASSERT(dpu_alloc(70, "nrRanks=3", &set));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    check("70 DPUs take 2 ranks", nr_ranks == 2);
    DPU_RANK_FOREACH(set, rank, r) {
        struct dpu_rank_t *rk = dpu_rank_from_set(rank);
        dpu_id_t rid = dpu_get_rank_id(rk);
        rank_ids[r] = rid;
        if ((rid >> DPU_TARGET_SHIFT) != HW || (rid & DPU_TARGET_MASK) != r)
            ids_ok = 0;
        if (dpu_get_rank_numa_node(rk) != 0)
            numa_ok = 0;
        if (dpu_get_description(rk) == NULL)
            rank_ok = 0;
        DPU_FOREACH(rank, dpu, i) {
            struct dpu_t *d = dpu_from_set(dpu);
            dpu_slice_id_t slice = dpu_get_slice_id(d);
            dpu_member_id_t member = dpu_get_member_id(d);
            if (dpu_get_rank(d) != rk)
                rank_ok = 0;
            if (slice != i / 8 || member != i % 8)
                slices_ok = 0;
            if (dpu_get(rk, slice, member) != d || !dpu_is_enabled(d))
                get_ok = 0;
            if (dpu_get_id(d) != (((dpu_id_t)rid << 16) | ((dpu_id_t)slice << 8) | member))
                ids_ok = 0;
        }
        {
            struct dpu_t *d;
            uint32_t k = 0, count = 0;
            STRUCT_DPU_FOREACH(rk, d, k) {
                if (d != dpu_get(rk, (dpu_slice_id_t)(k / 8), (dpu_member_id_t)(k % 8)))
                    get_ok = 0;
                count++;
            }
            if (count != (r == 0 ? 64u : 6u) || k != count)
                get_ok = 0;
        }
    }
    check("dpu_get_rank_id: HW << DPU_TARGET_SHIFT | the rank's index (0, 1)", ids_ok && rank_ids[0] != rank_ids[1]);
    check("dpu_get_rank_numa_node is 0 for every rank", numa_ok);
    check("dpu_get_rank(dpu) is the rank's dpu_rank_from_set; dpu_get_description", rank_ok);
    check("slice = index / 8, member = index % 8; dpu_get_id = rank id << 16 | slice << 8 | member",
        slices_ok);
    check("dpu_get(rank, slice, member) finds each DPU; STRUCT_DPU_FOREACH walks the rank", get_ok);
    {
        struct dpu_rank_t *rk = NULL;
        DPU_RANK_FOREACH(set, rank, r) {
            if (r == 1)
                rk = dpu_rank_from_set(rank);
        }
        check("dpu_get outside the rank is NULL (member 8, DPU 6 of a 6-DPU rank)",
            dpu_get(rk, 0, 8) == NULL && dpu_get(rk, 0, 6) == NULL && dpu_get(rk, 0, 5) != NULL);
        check("dpu_trylock_rank is recursive (0), dpu_unlock_rank releases it",
            (dpu_lock_rank(rk), dpu_trylock_rank(rk) == 0) && (dpu_unlock_rank(rk), dpu_unlock_rank(rk), 1));
    }
    DPU_ASSERT(dpu_free(set));

    DPU_ASSERT(dpu_alloc(1, "backend=simulator", &set));
    DPU_FOREACH(set, dpu) {
        dpu_id_t rid = dpu_get_rank_id(dpu_get_rank(dpu_from_set(dpu)));
        check("backend=simulator ranks report FUNCTIONAL_SIMULATOR", (rid >> DPU_TARGET_SHIFT) == FUNCTIONAL_SIMULATOR);
    }
    DPU_ASSERT(dpu_free(set));

    {
        struct dpu_rank_t *rk = NULL;
        uint32_t n = 0, clocks = 0;
        struct dpu_t *d;
        check("dpu_get_rank_of_type(\"hardware=upmem-v1b\")", dpu_get_rank_of_type("hardware=upmem-v1b", &rk) == DPU_OK);
        struct dpu_set_t one = dpu_set_from_rank(&rk);
        DPU_ASSERT(dpu_get_nr_dpus(one, &n));
        check("... a set of 64 DPUs through dpu_set_from_rank", n == 64);
        DPU_ASSERT(dpu_load(one, "./bin/dpu_surface", NULL));
        DPU_ASSERT(dpu_launch(one, DPU_SYNCHRONOUS));
        d = dpu_get(rk, 7, 7);
        DPU_ASSERT(dpu_copy_from(dpu_set_from_dpu(d), "clocks_per_sec", 0, &clocks, 4));
        check("... that runs programs (CLOCKS_PER_SEC 400 MHz)", clocks == 400000000u);
        check("dpu_free_rank", dpu_free_rank(rk) == DPU_OK);
        check("dpu_free_rank of a freed rank -> DPU_ERR_INVALID_DPU_SET", dpu_free_rank(rk) == DPU_ERR_INVALID_DPU_SET);
        check("dpu_get_rank_numa_node of a freed rank is -1", dpu_get_rank_numa_node(rk) == -1);
    }
    {
        dpu_type_t t = FUNCTIONAL_SIMULATOR;
        check("dpu_target.h: dpu_type_from_profile_string / dpu_type_to_string",
            dpu_type_from_profile_string("hw", &t) && t == HW && strcmp(dpu_type_to_string(t), "HW") == 0 &&
                !dpu_type_from_profile_string("fpga", &t));
    }
}

int main(void)
{
    kernels();
    management();
    printf("sdk_surface: %d passed, %d failed\n", passed, failed);
    printf("%s sdk_surface\n", failed ? "FAIL" : "OK");
    return failed ? 1 : 0;
}
