/* A correct program on the other primitives: a virtual mutex per bin, a semaphore handing a
 * value from tasklet 0 to tasklet 1, a chain of handshakes passing a running sum from tasklet
 * to tasklet, and printf from every tasklet. */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>
#include <attributes.h>
#include <vmutex.h>
#include <sem.h>
#include <handshake.h>
#include <barrier.h>

__host uint32_t seed;
__host uint32_t result;
uint32_t bins[8];
uint32_t handed;
uint32_t chain[NR_TASKLETS];
VMUTEX_INIT(bin_locks, 8, 2);
SEMAPHORE_INIT(handoff, 0);
BARRIER_INIT(done, NR_TASKLETS);

int main(void)
{
    uint32_t id = me();
    for (uint32_t i = 0; i < 16; i++) {
        uint32_t b = (i + id) % 8;
        vmutex_lock(&bin_locks, b);
        bins[b] += seed;
        vmutex_unlock(&bin_locks, b);
    }
    if (id == 0) {
        handed = seed * 3;
        sem_give(&handoff);
    } else if (id == 1) {
        sem_take(&handoff);
        chain[1] = handed;
    }
    /* The running sum: tasklet t waits for t - 1, then notifies t + 1. */
    if (id > 0) {
        handshake_wait_for(id - 1);
        chain[id] += chain[id - 1] + id;
    }
    if (id + 1 < NR_TASKLETS) {
        handshake_notify();
    }
    printf("tasklet %u done\n", id);
    barrier_wait(&done);
    if (id == 0) {
        uint32_t sum = chain[NR_TASKLETS - 1];
        for (uint32_t b = 0; b < 8; b++) {
            sum += bins[b];
        }
        result = sum;
    }
    return 0;
}
