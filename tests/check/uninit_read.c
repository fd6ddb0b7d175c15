/* Seeded bug: half of a heap buffer is filled, all of it is summed. */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>
#include <alloc.h>

__host uint32_t seed;
__host uint32_t result;

int main(void)
{
    if (me() != 0) {
        return 0;
    }
    volatile uint32_t *buf = mem_alloc(16 * sizeof(uint32_t));
    for (uint32_t i = 0; i < 8; i++) {
        buf[i] = seed + i;
    }
    uint32_t sum = 0;
    for (uint32_t i = 0; i < 16; i++) {
        sum += buf[i]; // check: uninitialised-read
    }
    result = sum;
    return 0;
}
