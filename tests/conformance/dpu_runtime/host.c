/* Checks the DPU runtime test (see task.c) for both builds. */
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check(const char *binary, uint32_t nr_tasklets)
{
    struct dpu_set_t set, dpu;
    int bad = 0;
    int64_t in[2] = { -98765432109876ll, 12345 };
    double f64 = 2.718281828459045;
    uint8_t pattern[64];
    for (int k = 0; k < 64; k++)
        pattern[k] = (uint8_t)k;
    uint64_t c0 = 37;
    uint32_t marr[16] = { 0 };
    marr[2] = 2;

    DPU_ASSERT(dpu_alloc(1, NULL, &set));
    DPU_ASSERT(dpu_load(set, binary, NULL));
    DPU_ASSERT(dpu_copy_to(set, "i64_in", 0, in, sizeof(in)));
    DPU_ASSERT(dpu_copy_to(set, "f64_in", 0, &f64, 8));
    DPU_ASSERT(dpu_copy_to(set, DPU_MRAM_HEAP_POINTER_NAME, 0, pattern, sizeof(pattern)));
    DPU_ASSERT(dpu_copy_to(set, "counter64", 0, &c0, 8));
    DPU_ASSERT(dpu_copy_to(set, "marr", 0, marr, sizeof(marr)));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));

    DPU_FOREACH(set, dpu) {
        uint32_t built, jobs, halted;
        DPU_ASSERT(dpu_copy_from(dpu, "nr_tasklets_built", 0, &built, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "jobs_done", 0, &jobs, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "after_halt", 0, &halted, 4));
        if (built != nr_tasklets || jobs != 1 || halted != 0) {
            printf("%s: NR_TASKLETS %u (expected %u), jobs_done %u, code after halt() ran: %u\n", binary, built,
                nr_tasklets, jobs, halted);
            bad = 1;
        }
        /* tasklet 0's job runs in both builds */
        uint32_t sok;
        int64_t i64[4];
        uint64_t u64[2];
        double f64o[3];
        float f32o[2];
        DPU_ASSERT(dpu_copy_from(dpu, "string_ok", 0, &sok, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "i64_out", 0, i64, sizeof(i64)));
        DPU_ASSERT(dpu_copy_from(dpu, "u64_out", 0, u64, sizeof(u64)));
        DPU_ASSERT(dpu_copy_from(dpu, "f64_out", 0, f64o, sizeof(f64o)));
        DPU_ASSERT(dpu_copy_from(dpu, "f32_out", 0, f32o, sizeof(f32o)));
        int64_t x = in[0], y = in[1];
        int64_t ri[4] = { x / y, x % y, x * y, (x >> 7) ^ (int64_t)((uint64_t)y << 3) };
        uint64_t ru[2] = { (uint64_t)x / (uint64_t)(y < 0 ? -y : y), (uint64_t)x % 1000003u };
        volatile double d = f64;
        double rd[3] = { d / 7.0 * 3.5, d * d - 1.0 / d, (double)x / (double)y };
        volatile float f = (float)d;
        float rf[2] = { f / 3.0f + 0.1f, (float)(int32_t)(f * 1000.0f) / 1000.0f };
        if (sok != 0x3f) {
            printf("%s: string functions: result mask %#x, expected 0x3f\n", binary, sok);
            bad = 1;
        }
        if (memcmp(i64, ri, sizeof(ri)) || memcmp(u64, ru, sizeof(ru))) {
            printf("%s: 64-bit integer arithmetic differs: %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
                   " / %" PRIu64 " %" PRIu64 "\n", binary, i64[0], i64[1], i64[2], i64[3], u64[0], u64[1]);
            bad = 1;
        }
        if (memcmp(f64o, rd, sizeof(rd)) || memcmp(f32o, rf, sizeof(rf))) {
            printf("%s: floating point differs: %.17g %.17g %.17g %.9g %.9g (expected %.17g %.17g %.17g %.9g %.9g)\n",
                binary, f64o[0], f64o[1], f64o[2], f32o[0], f32o[1], rd[0], rd[1], rd[2], rf[0], rf[1]);
            bad = 1;
        }
        if (nr_tasklets < 4)
            continue;
        uint32_t rec, direct;
        int32_t left[2];
        uint8_t unal[24], heap[64];
        uint64_t c;
        DPU_ASSERT(dpu_copy_from(dpu, "recursion_result", 0, &rec, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "stack_left", 0, left, 8));
        DPU_ASSERT(dpu_copy_from(dpu, "unaligned_read", 0, unal, 24));
        DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, heap, 64));
        DPU_ASSERT(dpu_copy_from(dpu, "mram_direct", 0, &direct, 4));
        DPU_ASSERT(dpu_copy_from(dpu, "counter64", 0, &c, 8));
        uint32_t rrec = 1;
        for (uint32_t n = 1; n <= 12; n++)
            rrec += n % 128;
        if (rec != rrec) {
            printf("%s: recursion gave %u, expected %u\n", binary, rec, rrec);
            bad = 1;
        }
        /* tasklet 1 has 4096 bytes of stack, tasklet 2 the default 1024 */
        if (left[0] <= 2048 || left[0] > 4096 || left[1] <= 0 || left[1] > 1024) {
            printf("%s: check_stack() gave %d (tasklet 1, 4 KiB stack) and %d (tasklet 2, 1 KiB stack)\n", binary,
                left[0], left[1]);
            bad = 1;
        }
        uint8_t ref_heap[64];
        memcpy(ref_heap, pattern, 64);
        for (int k = 0; k < 13; k++)
            ref_heap[3 + k] = (uint8_t)(0xa0 + k);
        if (memcmp(heap, ref_heap, 64) != 0 || memcmp(unal, ref_heap + 1, 21) != 0) {
            printf("%s: mram_write_unaligned / mram_read_unaligned wrong\n", binary);
            bad = 1;
        }
        if (c != 42 || direct != 42 + 42) {
            printf("%s: direct __mram access: counter64 %" PRIu64 " (expected 42), result %u (expected 84)\n", binary,
                c, direct);
            bad = 1;
        }
    }
    DPU_ASSERT(dpu_free(set));
    printf("%s: %s\n", binary, bad ? "wrong" : "ok");
    return bad;
}

int main(void)
{
    int bad = check("./bin/dpu_runtime", 4);
    bad |= check("./bin/dpu_runtime_default", 1);
    printf("%s dpu_runtime\n", bad ? "FAIL" : "OK");
    return bad;
}
