/* OpenPIM DPU: <mutex_pool.h> — a pool of hardware mutexes indexed by key. */
#ifndef _OPENPIM_MUTEX_POOL_H
#define _OPENPIM_MUTEX_POOL_H
#include <stdint.h>
#include <atomic_bit.h>
#include <openpim_ecall.h>

typedef struct mutex_pool {
    uint8_t *bits;
    uint32_t nr_mutexes;
} mutex_pool_t;

/* Ends with its own ';' as the SDK's does, so both `MUTEX_POOL_INIT(p, n)` and
 * `MUTEX_POOL_INIT(p, n);` compile (the second adds an empty declaration; -Wpedantic warns). */
#define MUTEX_POOL_INIT(_name, _nb_mutexes)                                                  \
    _Static_assert((_nb_mutexes) > 0 && (_nb_mutexes) <= 256, "invalid mutex pool size");    \
    ATOMIC_BIT_INIT(__CONCAT(__mutex_pool_, _name))[_nb_mutexes];                            \
    mutex_pool_t _name = { &ATOMIC_BIT_GET(__CONCAT(__mutex_pool_, _name))[0], (_nb_mutexes) };
#define MUTEX_POOL_EXTERN(_name) extern mutex_pool_t _name

static __inline__ uint32_t __mutex_pool_bit(mutex_pool_t *pool, uint32_t key)
{
    uint32_t n = pool->nr_mutexes;
    uint32_t idx = ((n & (n - 1)) == 0) ? (key & (n - 1)) : (key % n);
    return (uint32_t)(uintptr_t)&pool->bits[idx];
}
static __inline__ void mutex_pool_lock(mutex_pool_t *pool, uint32_t key)
{
    __dpu_lock(__mutex_pool_bit(pool, key));
}
static __inline__ void mutex_pool_unlock(mutex_pool_t *pool, uint32_t key)
{
    __dpu_unlock(__mutex_pool_bit(pool, key));
}

#endif
