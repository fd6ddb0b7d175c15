/* A correct program: a mutex-protected counter, then a barrier between two phases (each
 * tasklet writes its partial sum; after the barrier tasklet 0 adds them up). */
#include <stdint.h>
#include <defs.h>
#include <attributes.h>
#include <mutex.h>
#include <barrier.h>
#include <alloc.h>

__host uint32_t seed;
uint32_t counter;
uint32_t partial[NR_TASKLETS];
__host uint32_t result;
MUTEX_INIT(counter_mutex);
BARRIER_INIT(phase, NR_TASKLETS);

int main(void)
{
    uint32_t id = me();
    if (id == 0) {
        mem_reset();
    }
    barrier_wait(&phase);
    uint32_t *scratch = mem_alloc(8 * sizeof(uint32_t));
    for (uint32_t i = 0; i < 8; i++) {
        scratch[i] = seed + i + id;
    }
    uint32_t mine = 0;
    for (uint32_t i = 0; i < 8; i++) {
        mine += scratch[i];
        mutex_lock(counter_mutex);
        counter++;
        mutex_unlock(counter_mutex);
    }
    partial[id] = mine;
    barrier_wait(&phase);
    if (id == 0) {
        uint32_t sum = 0;
        for (uint32_t i = 0; i < NR_TASKLETS; i++) {
            sum += partial[i];
        }
        result = sum + counter;
    }
    return 0;
}
