/* Symbols for the host-side error cases; also built with NR_TASKLETS=25. */
#include <stdint.h>
#include <defs.h>

__host uint64_t small;     /* 8 bytes, WRAM */
__host uint32_t words[4];  /* 16 bytes, WRAM */
__mram uint64_t mwords[4]; /* 32 bytes, MRAM */
uint32_t hidden;           /* plain WRAM global: not reachable by name */

int main(void)
{
    if (me() == 0) {
        hidden++;
        small += hidden;
    }
    return 0;
}
