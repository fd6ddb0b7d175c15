/* Small synchronous reads in the patterns the MPI backend reads ahead (tests/mpi/run.py):
 * a row-by-row scan of MRAM on all 64 DPUs of a rank (PrIM NW's), one-DPU reads of one
 * place across the DPUs (DPU_FOREACH with dpu_copy_from), each checked against the values
 * the DPUs wrote; between them, what must drop what was read ahead (rows and results already
 * fetched): a write into the next rows in the middle of a scan, an asynchronous launch
 * before a read of the last rows, a write of one DPU's result, a launch with no write before
 * it (the DPUs count the round up themselves). Prints "reads OK" and the number of read
 * calls made. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>

#define DPUS 64
#define ROW 168
#define ROWS 48

static unsigned reads;
static unsigned bad;

static uint32_t expected(uint32_t round, uint32_t dpu, uint32_t word)
{
    return round * 1000003u + dpu * 10007u + word;
}

static void check(const char *what, uint32_t got, uint32_t want)
{
    if (got != want && bad++ < 10)
        printf("%s: read %u, expected %u\n", what, got, want);
}

/* Word `word` of DPU 3 set to `value`. */
static void poke_word(struct dpu_set_t set, int word, uint32_t value)
{
    struct dpu_set_t dpu;
    uint32_t i;
    DPU_FOREACH(set, dpu, i)
    {
        if (i == 3)
            DPU_ASSERT(dpu_copy_to(dpu, "data", (uint32_t)word * 4, &value, 4));
    }
}

/* Rows `from`.. of every DPU, one push per row; word `poked` of DPU 3, if set, holds `poke`,
 * written after the scan's tenth row when `poke_midway`. */
static void scan(struct dpu_set_t set, uint32_t round, uint32_t from, int poked, uint32_t poke,
                 int poke_midway)
{
    static uint32_t rows[DPUS][ROW / 4];
    struct dpu_set_t dpu;
    uint32_t i;
    for (uint32_t r = from; r < ROWS; r++) {
        if (poke_midway && r == from + 10)
            poke_word(set, poked, poke);
        DPU_FOREACH(set, dpu, i)
        {
            DPU_ASSERT(dpu_prepare_xfer(dpu, rows[i]));
        }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "data", r * ROW, ROW, DPU_XFER_DEFAULT));
        reads++;
        for (uint32_t d = 0; d < DPUS; d++)
            for (uint32_t k = 0; k < ROW / 4; k++) {
                uint32_t word = r * ROW / 4 + k;
                uint32_t want = (d == 3 && (int)word == poked) ? poke : expected(round, d, word);
                check("scan", rows[d][k], want);
            }
    }
}

/* Each DPU's result, one DPU after another. */
static void across(struct dpu_set_t set, uint32_t round, int poked, uint32_t poke)
{
    struct dpu_set_t dpu;
    uint32_t i, v;
    DPU_FOREACH(set, dpu, i)
    {
        DPU_ASSERT(dpu_copy_from(dpu, "result", 0, &v, 4));
        reads++;
        check("across", v, (int)i == poked ? poke : i * 7 + round);
    }
}

static void run_round(struct dpu_set_t set, uint32_t round, dpu_launch_policy_t policy)
{
    struct dpu_set_t dpu;
    DPU_FOREACH(set, dpu)
    {
        DPU_ASSERT(dpu_prepare_xfer(dpu, &round));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "round_nr", 0, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, policy));
}

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t i;
    DPU_ASSERT(dpu_alloc(DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/reads_dpu", NULL));
    DPU_FOREACH(set, dpu, i)
    {
        DPU_ASSERT(dpu_copy_to(dpu, "id", 0, &i, 4));
    }
    run_round(set, 1, DPU_SYNCHRONOUS);
    scan(set, 1, 0, -1, 0, 0);
    across(set, 1, -1, 0);
    /* A write into the rows just ahead of the scan (row 11 of DPU 3, fetched with row 10). */
    uint32_t poke = 0xabcdef;
    scan(set, 1, 0, 11 * ROW / 4 + 5, poke, 1);
    /* A launch not waited for, then a read of the last rows (fetched by the scan before). */
    run_round(set, 2, DPU_ASYNCHRONOUS);
    scan(set, 2, ROWS - 2, -1, 0, 0);
    scan(set, 2, 0, -1, 0, 0);
    /* A synchronous launch right after reads, nothing written: round 3. */
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    scan(set, 3, ROWS - 2, -1, 0, 0);
    across(set, 3, -1, 0);
    across(set, 3, -1, 0);
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    across(set, 4, -1, 0);
    /* One DPU's result written between two reads across the DPUs. */
    DPU_FOREACH(set, dpu, i)
    {
        if (i == 10)
            DPU_ASSERT(dpu_copy_to(dpu, "result", 0, &poke, 4));
    }
    across(set, 4, 10, poke);
    DPU_ASSERT(dpu_free(set));
    printf("%u read calls\n", reads);
    if (bad) {
        printf("%u values wrong\n", bad);
        return 1;
    }
    printf("reads OK\n");
    return 0;
}
