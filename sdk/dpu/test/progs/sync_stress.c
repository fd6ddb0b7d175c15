/* Synchronisation under any interleaving: every check failure is an assertion fault. */
#include <assert.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mutex.h>
#include <sem.h>
#include <stdint.h>
#include <stdio.h>
#include <alloc.h>
#include <attributes.h>

#define ROUNDS 6

BARRIER_INIT(bar, NR_TASKLETS);
MUTEX_INIT(mtx);
SEMAPHORE_INIT(sem_lock, 1);
SEMAPHORE_INIT(sem_two, 2);

__host volatile uint32_t mutex_counter;
__host volatile uint32_t sem_counter;
__host volatile uint32_t inside_two;
__host volatile uint32_t arrivals[ROUNDS];
__host volatile uint32_t chain[NR_TASKLETS];
__host volatile uint32_t allocs[NR_TASKLETS];

int main(void)
{
    sysname_t id = me();
    for (int r = 0; r < ROUNDS; r++) {
        /* barrier: nobody passes round r before everybody arrived */
        mutex_lock(mtx);
        arrivals[r] = arrivals[r] + 1;
        mutex_unlock(mtx);
        barrier_wait(&bar);
        assert(arrivals[r] == NR_TASKLETS);

        /* mutual exclusion through a binary semaphore (non-atomic read-modify-write) */
        sem_take(&sem_lock);
        uint32_t v = sem_counter;
        for (volatile int k = 0; k < 3; k++) {
        }
        sem_counter = v + 1;
        sem_give(&sem_lock);

        /* counting semaphore: at most 2 inside */
        sem_take(&sem_two);
        mutex_lock(mtx);
        inside_two = inside_two + 1;
        assert(inside_two <= 2);
        mutex_unlock(mtx);
        mutex_lock(mtx);
        inside_two = inside_two - 1;
        mutex_unlock(mtx);
        sem_give(&sem_two);

        mutex_lock(mtx);
        mutex_counter = mutex_counter + 1;
        mutex_unlock(mtx);
        barrier_wait(&bar);
    }
    assert(sem_counter == ROUNDS * NR_TASKLETS);
    assert(mutex_counter == ROUNDS * NR_TASKLETS);

    /* handshake chain: tasklet i waits for i-1, then notifies i+1 */
    for (int r = 0; r < 3; r++) {
        if (id > 0) {
            assert(handshake_wait_for(id - 1) == 0);
            assert(chain[id - 1] == (uint32_t)r + 1);
        }
        chain[id] = (uint32_t)r + 1;
        if (id + 1 < NR_TASKLETS) {
            handshake_notify();
        }
        barrier_wait(&bar);
    }
    assert(handshake_wait_for(id) != 0);
    assert(handshake_wait_for(NR_TASKLETS + 3) != 0);

    /* mem_alloc: distinct, 8-aligned blocks */
    uint32_t *p = mem_alloc(12);
    assert(((uintptr_t)p & 7) == 0);
    *p = id;
    allocs[id] = (uint32_t)(uintptr_t)p;
    barrier_wait(&bar);
    for (uint32_t i = 0; i < NR_TASKLETS; i++) {
        assert(*(uint32_t *)(uintptr_t)allocs[i] == i);
    }
    if (id == 0) {
        printf("sync ok %u %u\n", mutex_counter, sem_counter);
    }
    return 0;
}
