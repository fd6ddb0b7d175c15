/* Every synchronisation object declared with the SDK's *_INIT macros, written as programs
 * write them: BARRIER_INIT, SEMAPHORE_INIT, MUTEX_POOL_INIT, VMUTEX_INIT and
 * STDOUT_BUFFER_INIT carry their own semicolon in the SDK, so programs write them with or
 * without one (-DWITH_SEMICOLONS builds the second form); MUTEX_INIT does not, so it is
 * always followed by one. Each tasklet takes every object once; the host checks the count and
 * CLOCKS_PER_SEC, which the loader sets from the hardware profile. */
#include <atomic_bit.h>
#include <attributes.h>
#include <barrier.h>
#include <defs.h>
#include <mutex.h>
#include <mutex_pool.h>
#include <perfcounter.h>
#include <sem.h>
#include <stdint.h>
#include <stdio.h>
#include <vmutex.h>

#ifdef WITH_SEMICOLONS
BARRIER_INIT(my_barrier, NR_TASKLETS);
SEMAPHORE_INIT(my_sem, 2);
MUTEX_POOL_INIT(my_pool, 4);
VMUTEX_INIT(my_vmutex, 64, 4);
STDOUT_BUFFER_INIT(4096);
#else
BARRIER_INIT(my_barrier, NR_TASKLETS)
SEMAPHORE_INIT(my_sem, 2)
MUTEX_POOL_INIT(my_pool, 4)
VMUTEX_INIT(my_vmutex, 64, 4)
STDOUT_BUFFER_INIT(4096)
#endif
MUTEX_INIT(my_mutex);
ATOMIC_BIT_INIT(counter_bit);

__host uint32_t clocks_per_sec;
/* one count per object: mutex, semaphore + atomic bit, mutex pool, virtual mutex */
__host uint32_t counts[4];
__host uint64_t cycles;

/* The SDK's types by their struct names. */
static void count_under_pool(struct mutex_pool *pool, uint32_t key)
{
    mutex_pool_lock(pool, key);
    counts[2]++;
    mutex_pool_unlock(pool, key);
}

static void count_under_vmutex(struct vmutex *v, uint32_t id)
{
    vmutex_lock(v, id);
    counts[3]++;
    vmutex_unlock(v, id);
}

int main(void)
{
    uint32_t id = me();
    if (id == 0) {
        for (int i = 0; i < 4; i++)
            counts[i] = 0;
        clocks_per_sec = CLOCKS_PER_SEC;
        perfcounter_config(COUNT_CYCLES, true);
    }
    barrier_wait(&my_barrier);

    mutex_lock(my_mutex);
    counts[0]++;
    mutex_unlock(my_mutex);

    sem_take(&my_sem);
    ATOMIC_BIT_ACQUIRE(counter_bit);
    counts[1]++;
    ATOMIC_BIT_RELEASE(counter_bit);
    sem_give(&my_sem);

    count_under_pool(&my_pool, 0);
    count_under_vmutex(&my_vmutex, 3);

    barrier_wait(&my_barrier);
    if (id == 0) {
        cycles = perfcounter_get();
        printf("counts %u %u %u %u, CLOCKS_PER_SEC %u\n", (unsigned)counts[0], (unsigned)counts[1],
            (unsigned)counts[2], (unsigned)counts[3], (unsigned)CLOCKS_PER_SEC);
    }
    return 0;
}
