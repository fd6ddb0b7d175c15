/* Vector addition over int32, int64, float and double on 8 DPUs.
 * Inputs go out with dpu_prepare_xfer/dpu_push_xfer, the size with
 * dpu_broadcast_to, the result comes back with dpu_push_xfer FROM_DPU. */
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 8
#define ELEMS_PER_DPU 6000 /* 6000 * 4 and 6000 * 8 bytes are multiples of 8 */

static uint32_t seed = 12345;
static uint32_t next_rand(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 8;
}

#define DEFINE_RUN(NAME, T, GEN)                                                               \
    static int run_##NAME(struct dpu_set_t set, const char *binary)                            \
    {                                                                                          \
        size_t n = (size_t)NR_DPUS * ELEMS_PER_DPU;                                            \
        T *a = malloc(n * sizeof(T)), *b = malloc(n * sizeof(T)), *c = malloc(n * sizeof(T));  \
        T *ref = malloc(n * sizeof(T));                                                        \
        struct dpu_set_t dpu;                                                                  \
        uint32_t i;                                                                            \
        for (size_t k = 0; k < n; k++) {                                                       \
            a[k] = GEN;                                                                        \
            b[k] = GEN;                                                                        \
            ref[k] = a[k] + b[k];                                                              \
        }                                                                                      \
        uint32_t bytes = ELEMS_PER_DPU * sizeof(T);                                            \
        DPU_ASSERT(dpu_load(set, binary, NULL));                                               \
        DPU_ASSERT(dpu_broadcast_to(set, "nr_bytes", 0, &bytes, sizeof(bytes), DPU_XFER_DEFAULT)); \
        DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &a[i * ELEMS_PER_DPU])); } \
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, bytes,    \
            DPU_XFER_DEFAULT));                                                                \
        DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &b[i * ELEMS_PER_DPU])); } \
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, bytes, bytes, \
            DPU_XFER_DEFAULT));                                                                \
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));                                          \
        memset(c, 0, n * sizeof(T));                                                           \
        DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &c[i * ELEMS_PER_DPU])); } \
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 2 * bytes, \
            bytes, DPU_XFER_DEFAULT));                                                         \
        size_t bad = 0;                                                                        \
        for (size_t k = 0; k < n; k++)                                                         \
            if (memcmp(&c[k], &ref[k], sizeof(T)) != 0) {                                      \
                if (bad < 5)                                                                   \
                    fprintf(stderr, #NAME ": element %zu differs\n", k);                       \
                bad++;                                                                         \
            }                                                                                  \
        printf("vector_add %-6s: %zu elements, %zu mismatches\n", #NAME, n, bad);              \
        free(a);                                                                               \
        free(b);                                                                               \
        free(c);                                                                               \
        free(ref);                                                                             \
        return bad != 0;                                                                       \
    }

DEFINE_RUN(int32, int32_t, (int32_t)next_rand() - (1 << 22))
DEFINE_RUN(int64, int64_t, ((int64_t)next_rand() << 24) - (int64_t)next_rand())
DEFINE_RUN(float, float, (float)((int32_t)next_rand() - (1 << 22)) / 1024.0f)
DEFINE_RUN(double, double, (double)next_rand() / 3.0 - (double)next_rand() * 1e-3)

int main(void)
{
    struct dpu_set_t set;
    uint32_t nr_dpus;
    int failures = 0;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    if (nr_dpus != NR_DPUS) {
        printf("FAIL: dpu_get_nr_dpus gave %u, expected %u\n", nr_dpus, NR_DPUS);
        return 1;
    }
    failures += run_int32(set, "./bin/dpu_va_int32");
    failures += run_int64(set, "./bin/dpu_va_int64");
    failures += run_float(set, "./bin/dpu_va_float");
    failures += run_double(set, "./bin/dpu_va_double");
    DPU_ASSERT(dpu_free(set));
    printf("%s vector_add\n", failures ? "FAIL" : "OK");
    return failures ? 1 : 0;
}
