/* Timing test kernel: every tasklet runs `iters` iterations of a multiply-add (pure compute,
 * so the modeled kernel time is long while the data is tiny). */
#include <stdint.h>
#include <defs.h>

__host uint32_t iters;
__host uint32_t result;

int main(void)
{
    uint32_t x = me();
    for (uint32_t i = 0; i < iters; i++)
        x = x * 1103515245u + 12345u;
    if (me() == 0)
        result = x;
    return 0;
}
