/* OpenPIM DPU: <vmutex.h> — many "virtual" mutexes (one bit each in WRAM) protected by a
 * few hardware mutexes. */
#ifndef _OPENPIM_VMUTEX_H
#define _OPENPIM_VMUTEX_H
#include <stdint.h>
#include <atomic_bit.h>
#include <openpim_ecall.h>

typedef struct vmutex {
    uint8_t *locks;   /* one bit per virtual mutex */
    uint8_t *bits;    /* hardware atomic bits */
    uint32_t nr_vmutexes;
    uint32_t nr_hw_mutexes;
} vmutex_t;

/* Ends with its own ';' as the SDK's does, so both `VMUTEX_INIT(v, n, m)` and
 * `VMUTEX_INIT(v, n, m);` compile (the second adds an empty declaration; -Wpedantic warns). */
#define VMUTEX_INIT(_name, _nb_vmutexes, _nb_hw_mutexes)                                     \
    _Static_assert((_nb_hw_mutexes) > 0 && (_nb_hw_mutexes) <= 256, "invalid number of hardware mutexes"); \
    ATOMIC_BIT_INIT(__CONCAT(__vmutex_, _name))[_nb_hw_mutexes];                             \
    uint8_t __CONCAT(__vmutex_locks_, _name)[((_nb_vmutexes) + 7) / 8];                      \
    vmutex_t _name = { __CONCAT(__vmutex_locks_, _name), &ATOMIC_BIT_GET(__CONCAT(__vmutex_, _name))[0], \
                       (_nb_vmutexes), (_nb_hw_mutexes) };

void vmutex_lock(vmutex_t *vmutex, uint32_t id);
void vmutex_unlock(vmutex_t *vmutex, uint32_t id);

#endif
