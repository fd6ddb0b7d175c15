/* OpenPIM DPU: <barrier.h> — barriers for a fixed number of tasklets.
 * Layout and meaning as the UPMEM SDK (programs fill barriers by hand):
 *   wait_queue    id of the last tasklet waiting (0xff: nobody waits)
 *   count         tasklets still expected before the barrier opens
 *   initial_count the number of tasklets the barrier is for (count is reset to it)
 *   lock          index (low byte of the address) of the atomic bit protecting the barrier */
#ifndef _OPENPIM_BARRIER_H
#define _OPENPIM_BARRIER_H
#include <stdint.h>
#include <atomic_bit.h>
#include <sem.h>

typedef struct barrier_t {
    uint8_t wait_queue;
    uint8_t count;
    uint8_t initial_count;
    uint8_t lock;
} barrier_t;

/* Ends with its own ';' as the SDK's does, so both `BARRIER_INIT(b, n)` and
 * `BARRIER_INIT(b, n);` compile (the second adds an empty declaration; -Wpedantic warns). */
#define BARRIER_INIT(_name, _counter)                                                        \
    _Static_assert((_counter) > 0 && (_counter) < 128, "barrier counter must be in 1..127"); \
    ATOMIC_BIT_INIT(__CONCAT(__barrier_, _name));                                            \
    __OPENPIM_LOCK_BYTE_INIT(_name, ATOMIC_BIT_GET(__CONCAT(__barrier_, _name)));            \
    __attribute__((__section__(".data.__sync." __STR(_name)), __used__, __aligned__(4)))     \
    barrier_t _name = { 0xff, (uint8_t)(_counter), (uint8_t)(_counter), 0 };
#define BARRIER_EXTERN(_name) extern barrier_t _name

/* Blocks until `initial_count` tasklets have called barrier_wait on this barrier. */
void barrier_wait(barrier_t *barrier);

#endif
