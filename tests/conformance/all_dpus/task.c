/* Tiny kernel for the full-server run: out = in * 3 + 1. */
#include <stdint.h>
#include <defs.h>

__host uint32_t in;
__host uint32_t out;

int main(void)
{
    if (me() == 0)
        out = in * 3 + 1;
    return 0;
}
