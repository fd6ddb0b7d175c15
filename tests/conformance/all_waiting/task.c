/* Every tasklet ends up waiting: mode 0, tasklet 3 finishes without reaching the barrier the
 * others wait at; mode 1, every tasklet takes a semaphore nobody gives. */
#include <barrier.h>
#include <defs.h>
#include <sem.h>
#include <stdint.h>

BARRIER_INIT(barrier, NR_TASKLETS);
SEMAPHORE_INIT(never_given, 0);

__host uint32_t mode;
__host uint32_t before[NR_TASKLETS];
__host uint32_t after[NR_TASKLETS];

int main(void)
{
    before[me()] = 10 + me();
    if (mode == 0) {
        if (me() == NR_TASKLETS - 1)
            return 0;
        barrier_wait(&barrier);
    } else {
        sem_take(&never_given);
    }
    after[me()] = 20 + me();
    return 0;
}
