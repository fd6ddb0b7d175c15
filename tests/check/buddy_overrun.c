/* Seeded bug: a loop writes one element past a buddy_alloc block (and a second block, used
 * correctly and freed, reports nothing). */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>
#include <alloc.h>

__host uint32_t seed;
__host uint32_t result;
__host uint32_t elements = 12;

int main(void)
{
    if (me() != 0) {
        return 0;
    }
    buddy_init(1024);
    uint32_t *scratch = buddy_alloc(elements * sizeof(uint32_t));
    for (uint32_t i = 0; i < elements; i++) {
        scratch[i] = i;
    }
    uint32_t *a = buddy_alloc(elements * sizeof(uint32_t));
    for (uint32_t i = 0; i <= elements; i++) {
        a[i] = seed + i + scratch[i % elements]; // check: allocation-overrun
    }
    buddy_free(scratch);
    result = a[0];
    return 0;
}
