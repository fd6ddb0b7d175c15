/* Seeded bug: the barrier between the two phases is missing, so tasklet 0 sums partial sums
 * the other tasklets may not have written yet. */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>

__host uint32_t seed;
uint32_t partial[NR_TASKLETS];
__host uint32_t result;

int main(void)
{
    uint32_t id = me();
    partial[id] = seed * (id + 1); // check: race
    /* barrier_wait(&phase) belongs here. */
    if (id == 0) {
        uint32_t sum = 0;
        for (uint32_t i = 0; i < NR_TASKLETS; i++) {
            sum += partial[i]; // check: race
        }
        result = sum;
    }
    return 0;
}
