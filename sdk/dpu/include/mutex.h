/* OpenPIM DPU: <mutex.h> — mutual exclusion on atomic bits (spinning, as the hardware does). */
#ifndef _OPENPIM_MUTEX_H
#define _OPENPIM_MUTEX_H
#include <stdint.h>
#include <stdbool.h>
#include <attributes.h>
#include <atomic_bit.h>
#include <openpim_ecall.h>

/* A mutex is the address of its atomic bit. */
typedef uint8_t *mutex_id_t;

#define MUTEX_GET(_name) _name
/* Defines the mutex `_name` (a mutex_id_t constant). */
#define MUTEX_INIT(_name)                                                                    \
    ATOMIC_BIT_INIT(__CONCAT(__mutex_, _name));                                              \
    mutex_id_t const _name = &ATOMIC_BIT_GET(__CONCAT(__mutex_, _name))
#define MUTEX_EXTERN(_name) extern mutex_id_t const _name

static __inline__ void mutex_lock(mutex_id_t mutex)
{
    __dpu_lock((unsigned int)(uintptr_t)mutex);
}

/* true when the mutex was free and is now held by the caller. */
static __inline__ bool mutex_trylock(mutex_id_t mutex)
{
    return __dpu_acquire((unsigned int)(uintptr_t)mutex) != 0;
}

static __inline__ void mutex_unlock(mutex_id_t mutex)
{
    __dpu_unlock((unsigned int)(uintptr_t)mutex);
}

#endif
