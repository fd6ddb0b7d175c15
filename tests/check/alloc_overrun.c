/* Seeded bug: an off-by-one loop writes one element past a mem_alloc block, into the next
 * block. */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>
#include <alloc.h>

__host uint32_t seed;
__host uint32_t result;
__host uint32_t elements = 8;

int main(void)
{
    if (me() != 0) {
        return 0;
    }
    uint32_t *a = mem_alloc(elements * sizeof(uint32_t));
    uint32_t *b = mem_alloc(elements * sizeof(uint32_t));
    for (uint32_t i = 0; i < elements; i++) {
        b[i] = 0;
    }
    for (uint32_t i = 0; i <= elements; i++) {
        a[i] = seed + i; // check: allocation-overrun
    }
    result = a[0] + b[0];
    return 0;
}
