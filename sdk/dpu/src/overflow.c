/* Multiplication with overflow detection, as compiler-rt provides it: clang calls these for
 * checked multiplications (__builtin_mul_overflow on 64-bit operands, and every signed
 * multiplication under -fsanitize=signed-integer-overflow), and Debian's RV32 libgcc lacks
 * them. Unsigned arithmetic only (no undefined behaviour here, whatever the operands); the
 * multiply and divide go through the runtime's environment-call helpers. */
#include <stdint.h>

static uint64_t magnitude64(int64_t v)
{
    return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

int64_t __mulodi4(int64_t a, int64_t b, int *overflow)
{
    uint64_t ua = magnitude64(a), ub = magnitude64(b);
    /* |a * b| may reach 2^63 when the result is negative, 2^63 - 1 otherwise. */
    uint64_t limit = ((a < 0) != (b < 0)) ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
    *overflow = ua != 0 && ub > limit / ua;
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

int32_t __mulosi4(int32_t a, int32_t b, int *overflow)
{
    int64_t p = (int64_t)a * (int64_t)b;
    *overflow = p < INT32_MIN || p > INT32_MAX;
    return (int32_t)(uint32_t)(uint64_t)p;
}
