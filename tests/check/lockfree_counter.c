/* Seeded bug: every tasklet increments a shared counter without the mutex. */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>

__host uint32_t seed;
__host volatile uint32_t result;

int main(void)
{
    for (uint32_t i = 0; i < seed; i++) {
        result = result + 1; // check: race
    }
    return 0;
}
