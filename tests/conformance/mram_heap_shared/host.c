/* The MRAM heap shared between programs, as SimplePIM uses it: the host scatters data to
 * DPU_MRAM_HEAP_POINTER_NAME while one program is loaded (each DPU its own chunk through
 * dpu_prepare_xfer + dpu_push_xfer, the last DPU's chunk shorter), then loads another program
 * that reads the data at DPU_MRAM_HEAP_POINTER. The second program links a file whose unused
 * function calls printf; the link drops it (the UPMEM SDK's clang compiles with
 * -ffunction-sections -fdata-sections and links with --gc-sections), so printf's MRAM variable
 * is not linked and both programs' heaps start at the same address. Checked for the kernel
 * built by clang -O2, -O3, -O2 -flto and gcc -O2: the DPU sums equal the CPU's. A kernel that
 * does call printf has its heap further (the SDK's printf buffer is in MRAM); data scattered
 * after loading it is read right. */
#include <dpu.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 5
#define NR_TASKLETS 12
#define TOTAL (NR_DPUS * 1000 - 37) /* chunks of 994 elements, the last DPU 987 */
#define HEAP "__sys_used_mram_end"

static int failures;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok)
        failures++;
}

static uint64_t cpu_sum(const uint32_t *e, uint32_t n)
{
    uint64_t s = 0;
    for (uint32_t j = 0; j < n; j++)
        s += (uint64_t)e[j] * ((j % 64) % 7 + 1);
    return s;
}

static uint32_t heap_address(const char *binary)
{
    struct dpu_set_t one;
    struct dpu_program_t *program;
    struct dpu_symbol_t symbol;
    DPU_ASSERT(dpu_alloc(1, NULL, &one));
    DPU_ASSERT(dpu_load(one, binary, &program));
    DPU_ASSERT(dpu_get_symbol(program, HEAP, &symbol));
    DPU_ASSERT(dpu_free(one));
    return symbol.address;
}

/* SimplePIM's simplepim_scatter: 8-byte aligned chunks of ceil(TOTAL / NR_DPUS) elements. */
static void scatter(struct dpu_set_t set, uint32_t *elems, uint32_t chunk, uint32_t *counts)
{
    struct dpu_set_t dpu;
    uint32_t i;
    DPU_FOREACH (set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, elems + (size_t)i * chunk));
        uint32_t first = i * chunk;
        counts[i] = first >= TOTAL ? 0 : (TOTAL - first < chunk ? TOTAL - first : chunk);
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0,
                             chunk * sizeof(uint32_t), DPU_XFER_DEFAULT));
}

/* Launch the loaded kernel on the data at heap offset 0; compare every DPU's sum. */
static void run_and_check(struct dpu_set_t set, const uint32_t *elems, uint32_t chunk,
                          uint32_t *counts, const char *what)
{
    struct dpu_set_t dpu;
    uint32_t i, zero = 0;
    uint64_t partial[NR_DPUS][NR_TASKLETS];
    DPU_ASSERT(dpu_broadcast_to(set, "offset", 0, &zero, sizeof(zero), DPU_XFER_DEFAULT));
    DPU_FOREACH (set, dpu, i)
        DPU_ASSERT(dpu_prepare_xfer(dpu, &counts[i]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "count", 0, sizeof(uint32_t), DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH (set, dpu, i)
        DPU_ASSERT(dpu_prepare_xfer(dpu, partial[i]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "partial", 0, sizeof(partial[0]),
                             DPU_XFER_DEFAULT));
    int ok = 1;
    for (i = 0; i < NR_DPUS; i++) {
        uint64_t got = 0, want = cpu_sum(elems + (size_t)i * chunk, counts[i]);
        for (uint32_t t = 0; t < NR_TASKLETS; t++)
            got += partial[i][t];
        if (got != want) {
            printf("  DPU %u (%u elements): sum %" PRIu64 ", CPU %" PRIu64 "\n", i, counts[i], got,
                   want);
            ok = 0;
        }
    }
    check(ok, what);
}

int main(void)
{
    static const char *kernels[] = {"bin/dpu_sum", "bin/dpu_sum_O3", "bin/dpu_sum_lto",
                                    "bin/dpu_sum_gcc"};
    uint32_t chunk = (TOTAL + NR_DPUS - 1) / NR_DPUS;
    chunk = (chunk + 1) & ~1u; /* 8-byte chunks */
    uint32_t *elems = calloc((size_t)chunk * NR_DPUS, sizeof(uint32_t));
    if (!elems)
        return 2;
    for (uint32_t k = 0; k < TOTAL; k++)
        elems[k] = (k * 2654435761u) ^ (k >> 3);
    uint32_t counts[NR_DPUS];
    char what[200];

    uint32_t init_heap = heap_address("bin/dpu_init");
    snprintf(what, sizeof(what), "the first program's MRAM heap starts at MRAM's start (%#x)",
             init_heap);
    check(init_heap == 0x08000000u, what);
    for (size_t k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
        uint32_t heap = heap_address(kernels[k]);
        snprintf(what, sizeof(what), "%s (an unused function calls printf): MRAM heap at %#x", kernels[k],
                 heap);
        check(heap == init_heap, what);
    }

    struct dpu_set_t set;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    for (size_t k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
        DPU_ASSERT(dpu_load(set, "bin/dpu_init", NULL));
        scatter(set, elems, chunk, counts);
        DPU_ASSERT(dpu_load(set, kernels[k], NULL));
        snprintf(what, sizeof(what), "%s reads the data scattered under bin/dpu_init", kernels[k]);
        run_and_check(set, elems, chunk, counts, what);
    }

    uint32_t printf_heap = heap_address("bin/dpu_sum_printf");
    snprintf(what, sizeof(what), "a kernel calling printf has its MRAM heap further (%#x)",
             printf_heap);
    check(printf_heap > init_heap, what);
    DPU_ASSERT(dpu_load(set, "bin/dpu_sum_printf", NULL));
    scatter(set, elems, chunk, counts);
    run_and_check(set, elems, chunk, counts, "bin/dpu_sum_printf reads the data scattered under it");

    DPU_ASSERT(dpu_free(set));
    free(elems);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
