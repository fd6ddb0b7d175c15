/* Faults on the DPUs whose `bad` is set: tasklet 0 reads WRAM past its end. */
#include <stdint.h>
#include <defs.h>

__host uint32_t bad;
__host uint32_t where;

int main(void)
{
    if (me() == 0 && bad) {
        volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)where;
        return (int)*p;
    }
    return 0;
}
