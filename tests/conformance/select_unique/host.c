/* Select and unique on 6 DPUs with a different input size per DPU: inputs
 * sent with serial dpu_copy_to, the variable-size outputs read back with one
 * serial dpu_copy_from per DPU. */
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 6

static uint32_t st = 77;
static uint32_t rnd(void)
{
    st = st * 1103515245u + 12345u;
    return st >> 5;
}

static int run(struct dpu_set_t set, const char *binary, int unique)
{
    const char *name = unique ? "unique" : "select";
    uint32_t sizes[NR_DPUS];
    size_t total = 0;
    for (int d = 0; d < NR_DPUS; d++) {
        sizes[d] = 1500 + 517 * d + (d == 3 ? 1 : 0); /* odd sizes, partial last blocks */
        total += sizes[d];
    }
    int64_t *in = malloc(total * 8), *ref = malloc(total * 8), *out = malloc(total * 8);
    size_t nref = 0, pos = 0;
    int64_t v = -1000;
    for (size_t k = 0; k < total; k++) {
        if (unique)
            v += (rnd() % 4 == 0) ? (int64_t)(rnd() % 5) : 0; /* runs of equal values */
        else
            v = ((int64_t)rnd() << 20) - ((int64_t)1 << 40) + (int64_t)rnd();
        in[k] = v;
    }
    struct dpu_set_t dpu;
    uint32_t i;
    DPU_ASSERT(dpu_load(set, binary, NULL));
    DPU_FOREACH(set, dpu, i) {
        /* reference per DPU: compaction restarts on each DPU's slice */
        for (uint32_t k = 0; k < sizes[i]; k++) {
            int64_t x = in[pos + k];
            int keep = unique ? (k == 0 || x != in[pos + k - 1]) : (x % 3 != 0);
            if (keep)
                ref[nref++] = x;
        }
        DPU_ASSERT(dpu_copy_to(dpu, "nr_elems", 0, &sizes[i], 4));
        DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, &in[pos], sizes[i] * 8));
        pos += sizes[i];
    }
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    size_t nout = 0;
    DPU_FOREACH(set, dpu, i) {
        uint32_t kept;
        DPU_ASSERT(dpu_copy_from(dpu, "nr_out", 0, &kept, 4));
        if (nout + kept > total) {
            printf("%s: DPU %u reports %u kept elements (too many)\n", name, i, kept);
            return 1;
        }
        if (kept)
            DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, sizes[i] * 8, &out[nout], kept * 8));
        nout += kept;
    }
    int bad = nout != nref || memcmp(out, ref, nref * 8) != 0;
    printf("%s: %zu inputs, %zu kept (expected %zu)%s\n", name, total, nout, nref, bad ? " MISMATCH" : "");
    free(in);
    free(ref);
    free(out);
    return bad;
}

int main(void)
{
    struct dpu_set_t set;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    int bad = run(set, "./bin/dpu_select", 0);
    bad |= run(set, "./bin/dpu_unique", 1);
    DPU_ASSERT(dpu_free(set));
    printf("%s select_unique\n", bad ? "FAIL" : "OK");
    return bad;
}
