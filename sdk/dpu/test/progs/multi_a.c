#include <stdint.h>
#include <defs.h>
#include <barrier.h>
#include <attributes.h>
BARRIER_EXTERN(shared_barrier);
uint32_t helper(uint32_t x);
__host uint32_t results[NR_TASKLETS];
int main(void)
{
    results[me()] = helper(me());
    barrier_wait(&shared_barrier);
    return 0;
}
