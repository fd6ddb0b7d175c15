/* Seeded bug: an off-by-one loop writes one element past a global array. */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>

__host uint32_t seed;
__host uint32_t result;
__host uint32_t elements = 8;
uint32_t table[8];
uint32_t after[8];

int main(void)
{
    if (me() != 0) {
        return 0;
    }
    for (uint32_t i = 0; i <= elements; i++) {
        table[i] = seed + i; // check: symbol-overrun
    }
    result = table[0] + after[0];
    return 0;
}
