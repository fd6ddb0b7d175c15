/* The DPU runtime library as a C library archive, and CLOCKS_PER_SEC seen from the host.
 *  - A DPU program defining rand(), srand() and strcmp() and calling atoi(), strtol(), qsort()
 *    and strstr() (their neighbours in the runtime) links with clang (-O2, -O0 -flto) and gcc,
 *    and its own definitions are the ones called: the host recomputes its rand() sequence,
 *    the parsed numbers, the sorted values and how many times its strcmp() ran.
 *  - CLOCKS_PER_SEC is in every program (also one that does not use it), readable with
 *    dpu_copy_from and dpu_get_symbol: the DPU frequency of the hardware profile (350 MHz for
 *    upmem-v1a, 400 MHz for upmem-v1b), equal to the value the DPU reads. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_RANDS 8
#define NR_SORT 6

static int failed, passed;

static void check(const char *what, int ok)
{
    printf("  %s %s\n", ok ? "ok  " : "FAIL", what);
    if (ok)
        passed++;
    else
        failed++;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void override(const char *binary)
{
    struct dpu_set_t set;
    char what[200];
    DPU_ASSERT(dpu_alloc(1, NULL, &set));
    dpu_error_t e = dpu_load(set, binary, NULL);
    snprintf(what, sizeof(what), "%s loads", binary);
    check(what, e == DPU_OK);
    if (e != DPU_OK) {
        dpu_free(set);
        return;
    }
    uint32_t seed = 20240611u;
    char text[32] = "1234ffee tail";
    DPU_ASSERT(dpu_copy_to(set, "seed", 0, &seed, sizeof(seed)));
    DPU_ASSERT(dpu_copy_to(set, "text", 0, text, sizeof(text)));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));

    int32_t rands[NR_RANDS], sorted[NR_SORT], atoi_value, strtol_value;
    uint32_t strlen_value, strcmp_calls, found_at;
    int32_t strcmp_value;
    DPU_ASSERT(dpu_copy_from(set, "rands", 0, rands, sizeof(rands)));
    DPU_ASSERT(dpu_copy_from(set, "sorted", 0, sorted, sizeof(sorted)));
    DPU_ASSERT(dpu_copy_from(set, "atoi_value", 0, &atoi_value, 4));
    DPU_ASSERT(dpu_copy_from(set, "strtol_value", 0, &strtol_value, 4));
    DPU_ASSERT(dpu_copy_from(set, "strlen_value", 0, &strlen_value, 4));
    DPU_ASSERT(dpu_copy_from(set, "strcmp_calls_seen", 0, &strcmp_calls, 4));
    DPU_ASSERT(dpu_copy_from(set, "strcmp_value", 0, &strcmp_value, 4));
    DPU_ASSERT(dpu_copy_from(set, "found_at", 0, &found_at, 4));

    /* The program's rand(): its own LCG, seeded by its own srand(). */
    uint32_t state = seed ^ 0x5a5a5a5au;
    int32_t expect[NR_RANDS], expect_sorted[NR_SORT];
    for (int i = 0; i < NR_RANDS; i++) {
        state = state * 1664525u + 1013904223u;
        expect[i] = (int32_t)(state >> 1);
    }
    for (int i = 0; i < NR_SORT; i++)
        expect_sorted[i] = expect[i] % 1000;
    qsort(expect_sorted, NR_SORT, sizeof(int32_t), cmp_int);
    snprintf(what, sizeof(what), "%s: the program's own rand()/srand() ran (8 values)", binary);
    check(what, memcmp(rands, expect, sizeof(rands)) == 0);
    if (memcmp(rands, expect, sizeof(rands)) != 0)
        printf("    first value %d, expected %d\n", rands[0], expect[0]);
    snprintf(what, sizeof(what), "%s: the runtime's atoi = %d, strtol(.., 16) = %d, strstr = %u, strlen = %u, qsort",
        binary, atoi_value, strtol_value, found_at, strlen_value);
    check(what, atoi_value == 1234 && strtol_value == 0xffee && found_at == 4 && strlen_value == strlen(text) &&
        memcmp(sorted, expect_sorted, sizeof(sorted)) == 0);
    snprintf(what, sizeof(what), "%s: the program's own strcmp() ran (%u call(s))", binary, strcmp_calls);
    check(what, strcmp_calls == 1 && strcmp_value == 1);
    DPU_ASSERT(dpu_free(set));
}

/* CLOCKS_PER_SEC of `binary` under `profile`, read by the host before and after a launch. */
static void clocks(const char *binary, const char *profile, uint32_t expected, int dpu_reads_it)
{
    struct dpu_set_t set, dpu;
    struct dpu_program_t *program = NULL;
    struct dpu_symbol_t symbol;
    char what[200];
    DPU_ASSERT(dpu_alloc(2, profile, &set));
    DPU_ASSERT(dpu_load(set, binary, &program));
    dpu_error_t e = dpu_get_symbol(program, "CLOCKS_PER_SEC", &symbol);
    snprintf(what, sizeof(what), "%s under \"%s\": dpu_get_symbol(CLOCKS_PER_SEC) finds 4 bytes", binary, profile);
    check(what, e == DPU_OK && symbol.size == 4);
    uint32_t before = 0, after[2] = { 0, 0 }, seen = 0;
    DPU_FOREACH(set, dpu) {
        e = dpu_copy_from(dpu, "CLOCKS_PER_SEC", 0, &before, sizeof(before));
        break;
    }
    snprintf(what, sizeof(what), "%s under \"%s\": dpu_copy_from reads CLOCKS_PER_SEC = %u before a launch (expected %u)",
        binary, profile, before, expected);
    check(what, e == DPU_OK && before == expected);
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    uint32_t i;
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_copy_from(dpu, "CLOCKS_PER_SEC", 0, &after[i], sizeof(after[i])));
    }
    snprintf(what, sizeof(what), "%s under \"%s\": every DPU's CLOCKS_PER_SEC after the launch = %u", binary, profile,
        expected);
    check(what, after[0] == expected && after[1] == expected);
    if (dpu_reads_it) {
        DPU_FOREACH(set, dpu) {
            DPU_ASSERT(dpu_copy_from(dpu, "clocks_seen", 0, &seen, sizeof(seen)));
        }
        snprintf(what, sizeof(what), "%s under \"%s\": the DPU read the same value (%u)", binary, profile, seen);
        check(what, seen == expected);
    }
    DPU_ASSERT(dpu_free(set));
}

int main(void)
{
    printf("a program's own C library functions win:\n");
    override("./bin/dpu_override");
    override("./bin/dpu_override_O0");
    override("./bin/dpu_override_gcc");

    printf("CLOCKS_PER_SEC from the host:\n");
    clocks("./bin/dpu_plain", "", 350000000u, 0);
    clocks("./bin/dpu_plain", "hardware=upmem-v1b", 400000000u, 0);
    clocks("./bin/dpu_override", "", 350000000u, 1);
    clocks("./bin/dpu_override", "hardware=upmem-v1b", 400000000u, 1);

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
