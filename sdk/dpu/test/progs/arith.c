/* Integer (32/64-bit), float and double arithmetic: must link the runtime's integer mul/div
 * and float/double add/sub/mul/div (environment calls) and libgcc's other soft-float routines
 * (conversions, comparisons) only, with no duplicate symbols. */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>
#include <attributes.h>

__host int32_t in_i[4] = { 7, -3, 100000, -2147483647 };
__host uint32_t in_u[4] = { 7, 3, 4000000000u, 13 };
__host int64_t in_l[2] = { -123456789012345ll, 97 };
__host uint64_t in_ul[2] = { 18446744073709551557ull, 1000003 };
__host float in_f[2] = { 1.5f, -0.25f };
__host double in_d[2] = { 3.141592653589793, -2.5e10 };
__host int32_t out_i[8];
__host uint32_t out_u[8];
__host int64_t out_l[8];
__host uint64_t out_ul[8];
__host float out_f[8];
__host double out_d[8];

int main(void)
{
    if (me() != 0) {
        return 0;
    }
    out_i[0] = in_i[0] * in_i[1];
    out_i[1] = in_i[2] / in_i[1];
    out_i[2] = in_i[2] % in_i[1];
    out_i[3] = in_i[3] / in_i[0];
    out_u[0] = in_u[0] * in_u[2];
    out_u[1] = in_u[2] / in_u[1];
    out_u[2] = in_u[2] % in_u[3];
    out_l[0] = in_l[0] * in_l[1];
    out_l[1] = in_l[0] / in_l[1];
    out_l[2] = in_l[0] % in_l[1];
    out_ul[0] = in_ul[0] * in_ul[1];
    out_ul[1] = in_ul[0] / in_ul[1];
    out_ul[2] = in_ul[0] % in_ul[1];
    out_f[0] = in_f[0] * in_f[1];
    out_f[1] = in_f[0] / in_f[1];
    out_f[2] = in_f[0] + in_f[1];
    out_f[3] = (float)in_i[2];
    out_f[4] = in_f[0] - in_f[1];
    out_i[4] = (int32_t)(in_f[0] * 1000.0f);
    out_d[0] = in_d[0] * in_d[1];
    out_d[1] = in_d[0] / in_d[1];
    out_d[2] = in_d[0] - in_d[1];
    out_d[3] = (double)in_l[0];
    out_d[4] = (double)in_f[1];
    out_d[5] = in_d[0] + in_d[1];
    out_l[3] = (int64_t)in_d[1];
    out_ul[3] = (uint64_t)(in_d[0] * 1e9);
    out_i[5] = in_d[0] > in_d[1];
    printf("i=%d u=%u l=%lld ul=%llu f=%f d=%.6e x=%08x s=%s c=%c\n", out_i[0], out_u[1], out_l[1], out_ul[2],
           (double)out_f[0], out_d[0], 0xbeefu, "str", 'z');
    return 0;
}
