/* OpenPIM DPU runtime: barriers and semaphores.
 * Waiting tasklets form a circular list through __sys_wait_next[]: the structure's
 * wait_queue holds the last waiter, __sys_wait_next[last] the first. A tasklet waits in at
 * most one queue at a time. Sleeping relies on the SLEEP/RESUME environment calls, whose
 * pending wake-up makes "unlock, then sleep" race-free. */
#include <stdint.h>
#include <barrier.h>
#include <sem.h>
#include <defs.h>
#include <openpim_ecall.h>

#define EMPTY 0xffu
#define MAX_TASKLETS 24

uint8_t __sys_wait_next[MAX_TASKLETS];

static inline void queue_push(uint8_t *wait_queue, uint32_t id)
{
    uint32_t last = *wait_queue;
    if (last == EMPTY) {
        __sys_wait_next[id] = (uint8_t)id;
    } else {
        __sys_wait_next[id] = __sys_wait_next[last];
        __sys_wait_next[last] = (uint8_t)id;
    }
    *wait_queue = (uint8_t)id;
}

static inline uint32_t queue_pop_first(uint8_t *wait_queue)
{
    uint32_t last = *wait_queue;
    uint32_t first = __sys_wait_next[last];
    if (first == last) {
        *wait_queue = EMPTY;
    } else {
        __sys_wait_next[last] = __sys_wait_next[first];
    }
    return first;
}

void barrier_wait(barrier_t *barrier)
{
    uint32_t lock = barrier->lock;
    __dpu_lock(lock);
    uint32_t count = barrier->count;
    if (count <= 1) {
        /* Last one in: open the barrier and wake everybody. */
        uint32_t last = barrier->wait_queue;
        barrier->count = barrier->initial_count;
        barrier->wait_queue = EMPTY;
        __dpu_unlock(lock);
        if (last != EMPTY) {
            uint32_t t = __sys_wait_next[last];
            for (;;) {
                uint32_t next = __sys_wait_next[t];
                __dpu_resume(t);
                if (t == last) {
                    break;
                }
                t = next;
            }
        }
    } else {
        barrier->count = (uint8_t)(count - 1);
        queue_push(&barrier->wait_queue, me());
        __dpu_unlock(lock);
        __dpu_sleep();
    }
}

void sem_take(sem_t *sem)
{
    uint32_t lock = sem->lock;
    __dpu_lock(lock);
    int8_t count = (int8_t)sem->count;
    count--;
    sem->count = (uint8_t)count;
    if (count < 0) {
        queue_push(&sem->wait_queue, me());
        __dpu_unlock(lock);
        __dpu_sleep();
    } else {
        __dpu_unlock(lock);
    }
}

void sem_give(sem_t *sem)
{
    uint32_t lock = sem->lock;
    __dpu_lock(lock);
    int8_t count = (int8_t)sem->count;
    count++;
    sem->count = (uint8_t)count;
    if (count <= 0 && sem->wait_queue != EMPTY) {
        uint32_t t = queue_pop_first(&sem->wait_queue);
        __dpu_unlock(lock);
        __dpu_resume(t);
    } else {
        __dpu_unlock(lock);
    }
}
