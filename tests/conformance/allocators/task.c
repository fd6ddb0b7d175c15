/* WRAM allocators and semaphores:
 *  - mem_alloc: 8-aligned blocks that do not overlap;
 *  - buddy_init / buddy_alloc / buddy_free / buddy_realloc, NULL when too big;
 *  - fsb_alloc / fsb_get / fsb_free, NULL when all blocks are in use;
 *  - SEMAPHORE_INIT(alloc_sem, 1) used as a lock around the buddy and fsb calls,
 *    SEMAPHORE_INIT(slots, 3) limiting how many tasklets are in a section
 *    (the maximum occupancy, tracked under a mutex, must be <= 3). */
#include <stdint.h>
#include <defs.h>
#include <alloc.h>
#include <barrier.h>
#include <mutex.h>
#include <sem.h>

#define ROUNDS 4
#define FSB_BLOCK 32
#define NR_SLOTS 3

__host uint32_t results[NR_TASKLETS];
__host uint32_t errors;
__host uint32_t max_inside;
__host uint32_t checks_done;

static uint32_t inside;
static fsb_allocator_t fsb;
static void *bump[NR_TASKLETS];

SEMAPHORE_INIT(alloc_sem, 1);
SEMAPHORE_INIT(slots, NR_SLOTS);
MUTEX_INIT(count_mutex);
BARRIER_INIT(bar, NR_TASKLETS);

static void error(void)
{
    mutex_lock(count_mutex);
    errors++;
    mutex_unlock(count_mutex);
}

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        mem_reset();
        errors = 0;
        max_inside = 0;
        inside = 0;
        checks_done = 0;
        buddy_init(8192);
        fsb = fsb_alloc(FSB_BLOCK, 2 * NR_TASKLETS);
    }
    barrier_wait(&bar);

    /* mem_alloc: 8-aligned, distinct blocks */
    uint32_t *m = mem_alloc(24);
    if (((uintptr_t)m & 7) != 0)
        error();
    for (int k = 0; k < 6; k++)
        m[k] = t;
    bump[t] = m;

    uint32_t sum = 0;
    for (uint32_t round = 0; round < ROUNDS; round++) {
        uint32_t words = (64u << (round % 3)) / 4;
        sem_take(&alloc_sem);
        uint32_t *p = buddy_alloc(words * 4);
        uint32_t *q = fsb_get(fsb);
        sem_give(&alloc_sem);
        if (p == NULL || q == NULL || ((uintptr_t)p & 7) != 0) {
            error();
            continue;
        }
        for (uint32_t k = 0; k < words; k++)
            p[k] = t * 100000 + round * 1000 + k;
        for (uint32_t k = 0; k < FSB_BLOCK / 4; k++)
            q[k] = t + round * 7 + k;

        sem_take(&slots);
        mutex_lock(count_mutex);
        inside++;
        if (inside > max_inside)
            max_inside = inside;
        mutex_unlock(count_mutex);
        /* stay a while so that other tasklets pile up on the semaphore */
        for (uint32_t k = 0; k < words; k++)
            sum += p[k];
        for (uint32_t k = 0; k < FSB_BLOCK / 4; k++)
            sum += q[k];
        mutex_lock(count_mutex);
        inside--;
        mutex_unlock(count_mutex);
        sem_give(&slots);

        /* nobody else wrote into our blocks */
        for (uint32_t k = 0; k < words; k++)
            if (p[k] != t * 100000 + round * 1000 + k)
                error();
        sem_take(&alloc_sem);
        buddy_free(p);
        fsb_free(fsb, q);
        sem_give(&alloc_sem);
    }
    results[t] = sum;
    barrier_wait(&bar);

    if (t == 0) {
        uint32_t checks = 0;
        /* every mem_alloc block kept its owner's pattern */
        for (int o = 0; o < NR_TASKLETS; o++)
            for (int k = 0; k < 6; k++)
                if (((uint32_t *)bump[o])[k] != (uint32_t)o)
                    error();
        checks++;
        /* buddy: too large -> NULL; realloc keeps the contents */
        if (buddy_alloc(16384) != NULL)
            error();
        checks++;
        uint8_t *r = buddy_alloc(32);
        for (int k = 0; k < 32; k++)
            r[k] = (uint8_t)(k * 3);
        r = buddy_realloc(r, 512);
        if (r == NULL) {
            error();
        } else {
            for (int k = 0; k < 32; k++)
                if (r[k] != (uint8_t)(k * 3))
                    error();
            buddy_free(r);
        }
        checks++;
        /* fsb: exactly 2 * NR_TASKLETS blocks, then NULL; freed blocks come back */
        void *blocks[2 * NR_TASKLETS];
        for (int k = 0; k < 2 * NR_TASKLETS; k++)
            if ((blocks[k] = fsb_get(fsb)) == NULL)
                error();
        if (fsb_get(fsb) != NULL)
            error();
        fsb_free(fsb, blocks[5]);
        if (fsb_get(fsb) == NULL)
            error();
        checks++;
        /* buddy_reset frees everything: a block of half the heap fits again */
        buddy_reset();
        if (buddy_alloc(4096) == NULL)
            error();
        checks++;
        checks_done = checks;
    }
    return 0;
}
