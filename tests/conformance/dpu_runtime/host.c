/* Checks the DPU runtime test (see task.c) for both builds. */
#include <dpu.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Operand pairs for the float/double add/sub/mul/div check: every pair of EDGE values, then
 * pseudo-random ones (random bit patterns, and moderate values with close exponents). */
#define NF 256
static float fa[NF], fb[NF];
static double da[NF], db[NF];

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static float f_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static double d_of(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static void make_operands(void)
{
    static const uint32_t fedge[] = {
        0x00000000, 0x80000000, /* +0, -0 */
        0x00000001, 0x807fffff, /* smallest subnormal, -largest subnormal */
        0x00800000, 0x7f7fffff, /* FLT_MIN, FLT_MAX */
        0x7f800000, 0xff800000, /* +inf, -inf */
        0x7fc00000, 0x7fa00001, /* quiet NaN, signalling NaN */
        0x3f800000, 0xbfc00000, /* 1, -1.5 */
        0x3dcccccd, 0x4b800001, /* 0.1f, 2^24 + 2 */
    };
    static const uint64_t dedge[] = {
        0x0000000000000000ull, 0x8000000000000000ull, 0x0000000000000001ull, 0x800fffffffffffffull,
        0x0010000000000000ull, 0x7fefffffffffffffull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
        0x7ff8000000000000ull, 0x7ff4000000000001ull, 0x3ff0000000000000ull, 0xbff8000000000000ull,
        0x3fb999999999999aull, 0x4340000000000001ull,
    };
    const int ne = (int)(sizeof(fedge) / sizeof(fedge[0]));
    int i = 0;
    for (int x = 0; x < ne; x++) {
        for (int y = 0; y < ne; y++, i++) {
            fa[i] = f_of(fedge[x]);
            fb[i] = f_of(fedge[y]);
            da[i] = d_of(dedge[x]);
            db[i] = d_of(dedge[y]);
        }
    }
    for (; i < NF; i++) {
        uint64_t r1 = next_random(), r2 = next_random();
        if (i % 2) { /* any bit pattern */
            fa[i] = f_of((uint32_t)r1);
            fb[i] = f_of((uint32_t)(r1 >> 32));
            da[i] = d_of(r1);
            db[i] = d_of(r2);
        } else { /* moderate values: cancellation in sub, rounding ties in add */
            fa[i] = (float)((int32_t)(uint32_t)r1) / (float)(1 << 20);
            fb[i] = (float)((int32_t)(uint32_t)(r1 >> 32)) / (float)(1 << (int)(r2 % 24));
            da[i] = (double)(int64_t)r1 / 1099511627776.0;
            db[i] = (double)(int64_t)r2 / (double)(1ull << (r1 % 50));
        }
    }
}

/* Same bits, or both NaN (the DPU gives one canonical NaN; NaN payloads are host-specific). */
static int same_float(float got, float want)
{
    return (isnan(got) && isnan(want)) || memcmp(&got, &want, 4) == 0;
}

static int same_double(double got, double want)
{
    return (isnan(got) && isnan(want)) || memcmp(&got, &want, 8) == 0;
}

static int check_ieee(const char *binary, struct dpu_set_t dpu)
{
    static float fr[4][NF];
    static double dr[4][NF];
    static const char op[4] = { '+', '-', '*', '/' };
    int wrong = 0;
    DPU_ASSERT(dpu_copy_from(dpu, "fr", 0, fr, sizeof(fr)));
    DPU_ASSERT(dpu_copy_from(dpu, "dr", 0, dr, sizeof(dr)));
    for (int i = 0; i < NF; i++) {
        volatile float p = fa[i], q = fb[i];
        volatile double u = da[i], v = db[i];
        float rf[4] = { p + q, p - q, p * q, p / q };
        double rd[4] = { u + v, u - v, u * v, u / v };
        for (int k = 0; k < 4; k++) {
            if (!same_float(fr[k][i], rf[k])) {
                uint32_t g, w, x, y;
                memcpy(&g, &fr[k][i], 4);
                memcpy(&w, &rf[k], 4);
                memcpy(&x, &fa[i], 4);
                memcpy(&y, &fb[i], 4);
                if (wrong++ < 8)
                    printf("%s: float %08x %c %08x = %08x, expected %08x\n", binary, x, op[k], y, g, w);
            }
            if (!same_double(dr[k][i], rd[k])) {
                uint64_t g, w, x, y;
                memcpy(&g, &dr[k][i], 8);
                memcpy(&w, &rd[k], 8);
                memcpy(&x, &da[i], 8);
                memcpy(&y, &db[i], 8);
                if (wrong++ < 8)
                    printf("%s: double %016" PRIx64 " %c %016" PRIx64 " = %016" PRIx64 ", expected %016" PRIx64 "\n",
                        binary, x, op[k], y, g, w);
            }
        }
    }
    if (wrong)
        printf("%s: %d of %d float/double results differ from the host's\n", binary, wrong, 8 * NF);
    return wrong != 0;
}

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
    DPU_ASSERT(dpu_copy_to(set, "fa", 0, fa, sizeof(fa)));
    DPU_ASSERT(dpu_copy_to(set, "fb", 0, fb, sizeof(fb)));
    DPU_ASSERT(dpu_copy_to(set, "da", 0, da, sizeof(da)));
    DPU_ASSERT(dpu_copy_to(set, "db", 0, db, sizeof(db)));
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
        bad |= check_ieee(binary, dpu);
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
    make_operands();
    int bad = check("./bin/dpu_runtime", 4);
    bad |= check("./bin/dpu_runtime_default", 1);
    printf("%s dpu_runtime\n", bad ? "FAIL" : "OK");
    return bad;
}
