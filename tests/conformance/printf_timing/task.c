/* printf's cost on the DPU: the first `printing` tasklets each print `calls` messages (kind 0:
 * PrIM BS's "%lld NOT found\n"; kind 1: a one-letter message; kind 2: a 200-character
 * string); tasklet 0 reads the cycle counter once all are done. */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>
#include <barrier.h>
#include <perfcounter.h>

__host uint32_t printing;
__host uint32_t calls;
__host uint32_t kind;
__host uint64_t cycles;

BARRIER_INIT(all, NR_TASKLETS);

static const char long_text[] =
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789";

int main(void)
{
    if (me() == 0)
        perfcounter_config(COUNT_CYCLES, true);
    barrier_wait(&all);
    if (me() < printing)
        for (uint32_t i = 0; i < calls; i++) {
            if (kind == 0)
                printf("%lld NOT found\n", (long long)i + 2048577LL);
            else if (kind == 1)
                printf("x");
            else
                printf("%s", long_text);
        }
    barrier_wait(&all);
    if (me() == 0)
        cycles = perfcounter_get();
    return 0;
}
