/* Counts its launches in a WRAM __host variable (kept across launches) and adds the
 * DPU's id (set by the host) to it, so that every DPU's result is distinct. */
#include <stdint.h>
#include <defs.h>
#include <barrier.h>
#include <attributes.h>

BARRIER_INIT(all_tasklets, NR_TASKLETS);

__host uint32_t dpu_id;
__host uint32_t launches;
__host uint64_t result;

int main(void)
{
    if (me() == 0)
        launches++;
    barrier_wait(&all_tasklets);
    if (me() == 0)
        result = (uint64_t)launches * 1000 + dpu_id;
    return 0;
}
