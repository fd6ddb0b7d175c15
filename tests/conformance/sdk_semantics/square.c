/* A second program with different symbols: squares[i] = (base + i)^2. */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>

__host uint32_t base;
__host uint32_t squares[8];

int main(void)
{
    for (uint32_t i = me(); i < 8; i += NR_TASKLETS)
        squares[i] = (base + i) * (base + i);
    return 0;
}
