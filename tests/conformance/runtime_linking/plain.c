/* A DPU program that does not mention CLOCKS_PER_SEC: the host still reads it. */
#include <stdint.h>
#include <defs.h>

__host uint32_t out;

int main(void)
{
    out = 42;
    return 0;
}
