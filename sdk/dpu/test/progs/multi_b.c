#include <stdint.h>
#include <defs.h>
#include <barrier.h>
#include <atomic_bit.h>
ATOMIC_BIT_INIT(padding_bits)[5];
BARRIER_INIT(shared_barrier, NR_TASKLETS);
uint32_t helper(uint32_t x)
{
    return x * x + 1;
}
