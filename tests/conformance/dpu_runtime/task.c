/* DPU runtime odds and ends, one job per tasklet:
 *  0: <string.h> functions; 64-bit integer and floating-point arithmetic; float and double
 *     add/sub/mul/div of NF operand pairs (edge cases: zeros, subnormals, infinities, NaNs,
 *     overflow, rounding ties; the host compares every result bit for bit)
 *  1: a recursion that needs ~2 KiB of stack (only tasklet 1 gets 4 KiB through
 *     -DSTACK_SIZE_TASKLET_1; the default is set to 1024 bytes); check_stack()
 *  2: mram_read_unaligned / mram_write_unaligned
 *  3: direct dereference of __mram variables
 * then halt() from tasklet 0 once everyone is done. Built twice: with
 * NR_TASKLETS=4 and many compiler flags, and with no NR_TASKLETS (default 1). */
#include <stdint.h>
#include <string.h>
#include <defs.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <barrier.h>

__host uint32_t nr_tasklets_built;
__host uint32_t string_ok;
__host int64_t i64_in[2];
__host int64_t i64_out[4];
__host uint64_t u64_out[2];
__host double f64_in;
__host double f64_out[3];
__host float f32_out[2];
#define NF 256
__host float fa[NF], fb[NF], fr[4][NF];
__host double da[NF], db[NF], dr[4][NF];
__host uint32_t recursion_result;
__host int32_t stack_left[2];
__host uint8_t unaligned_read[24];
__host uint32_t mram_direct;
__host uint32_t after_halt;
__host uint32_t jobs_done;

__mram uint64_t counter64;
__mram uint32_t marr[16];

#if NR_TASKLETS > 1
BARRIER_INIT(bar, NR_TASKLETS);
#endif

static uint32_t deep(uint32_t n)
{
    volatile uint8_t frame[128];
    frame[n % 128] = (uint8_t)n;
    if (n == 0)
        return 1;
    return deep(n - 1) + frame[n % 128];
}

static void job_strings_and_math(void)
{
    char a[32], b[32];
    uint32_t ok = 0;
    memset(a, 'x', sizeof(a));
    a[5] = 0;
    ok |= (strlen(a) == 5) << 0;
    strcpy(b, "hello");
    ok |= (strcmp(a, b) > 0) << 1;
    memcpy(a, b, 6);
    ok |= (memcmp(a, b, 6) == 0) << 2;
    ok |= (strchr(b, 'l') == &b[2]) << 3;
    ok |= (strncmp("abcdef", "abcxyz", 3) == 0) << 4;
    memmove(a + 1, a, 5);
    ok |= (memcmp(a, "hhello", 6) == 0) << 5;
    string_ok = ok;

    int64_t x = i64_in[0], y = i64_in[1];
    i64_out[0] = x / y;
    i64_out[1] = x % y;
    i64_out[2] = x * y;
    i64_out[3] = (x >> 7) ^ (y << 3);
    u64_out[0] = (uint64_t)x / (uint64_t)(y < 0 ? -y : y);
    u64_out[1] = (uint64_t)x % 1000003u;
    double d = f64_in;
    f64_out[0] = d / 7.0 * 3.5;
    f64_out[1] = d * d - 1.0 / d;
    f64_out[2] = (double)x / (double)y;
    float f = (float)d;
    f32_out[0] = f / 3.0f + 0.1f;
    f32_out[1] = (float)(int32_t)(f * 1000.0f) / 1000.0f;

    for (int i = 0; i < NF; i++) {
        float p = fa[i], q = fb[i];
        fr[0][i] = p + q;
        fr[1][i] = p - q;
        fr[2][i] = p * q;
        fr[3][i] = p / q;
        double u = da[i], v = db[i];
        dr[0][i] = u + v;
        dr[1][i] = u - v;
        dr[2][i] = u * v;
        dr[3][i] = u / v;
    }
}

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        nr_tasklets_built = NR_TASKLETS;
        after_halt = 0;
        jobs_done = 0;
    }
#if NR_TASKLETS > 1
    barrier_wait(&bar);
#endif
    switch (t) {
    case 0:
        job_strings_and_math();
        break;
    case 1:
        stack_left[0] = check_stack();
        recursion_result = deep(12); /* ~13 frames of ~150 bytes */
        break;
    case 2: {
        uint8_t src[16], buf[40] __dma_aligned; /* mram_read_unaligned needs an 8-aligned buffer */
        for (int k = 0; k < 13; k++)
            src[k] = (uint8_t)(0xa0 + k);
        __mram_ptr uint8_t *heap = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
        mram_write_unaligned(src, heap + 3, 13);
        uint8_t *p = mram_read_unaligned(heap + 1, buf, 21);
        memcpy(unaligned_read, p, 21);
        stack_left[1] = check_stack();
        break;
    }
    case 3:
        counter64 += 5;
        marr[3] = marr[2] + 40;
        mram_direct = (uint32_t)counter64 + marr[3];
        break;
    default:
        break;
    }
#if NR_TASKLETS > 1
    barrier_wait(&bar);
#endif
    if (t == 0) {
        jobs_done = 1;
        halt();
        after_halt = 1; /* never reached */
    }
    return 0;
}
