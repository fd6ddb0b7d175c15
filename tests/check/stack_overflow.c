/* Seeded bug: a recursion deeper than tasklet 1's stack (256 bytes) can hold. */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>

__host uint32_t seed;
__host uint32_t result;

__attribute__((noinline)) uint32_t depth(uint32_t n) { // check: stack-overflow
    volatile uint32_t frame[6];
    frame[0] = n;
    if (n == 0) {
        return 0;
    }
    return depth(n - 1) + frame[0];
}

int main(void)
{
    if (me() == 1) {
        result = depth(seed * 10);
    }
    return 0;
}
