/* OpenPIM DPU runtime: handshakes (rendezvous of a notifier and a waiter). */
#include <stdint.h>
#include <errno.h>
#include <defs.h>
#include <handshake.h>
#include <atomic_bit.h>
#include <openpim_ecall.h>

#define NOBODY 0xffu
#define MAX_TASKLETS 24

/* __sys_hs_waiter[n]: the tasklet waiting for notifier n (NOBODY: none).
 * __sys_hs_notifying[n]: 1 while n sleeps in handshake_notify() with nobody waiting. */
static uint8_t __sys_hs_waiter[MAX_TASKLETS] = {
    NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY,
    NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY, NOBODY,
};
static uint8_t __sys_hs_notifying[MAX_TASKLETS];

ATOMIC_BIT_INIT(__sys_handshake_lock);

void handshake_notify(void)
{
    uint32_t self = me();
    ATOMIC_BIT_ACQUIRE(__sys_handshake_lock);
    uint32_t waiter = __sys_hs_waiter[self];
    if (waiter != NOBODY) {
        __sys_hs_waiter[self] = NOBODY;
        ATOMIC_BIT_RELEASE(__sys_handshake_lock);
        __dpu_resume(waiter);
    } else {
        __sys_hs_notifying[self] = 1;
        ATOMIC_BIT_RELEASE(__sys_handshake_lock);
        __dpu_sleep();
    }
}

int handshake_wait_for(sysname_t notifier)
{
    uint32_t self = me();
    if (notifier >= __sys_nr_tasklets || notifier >= MAX_TASKLETS || notifier == self) {
        return EINVAL;
    }
    ATOMIC_BIT_ACQUIRE(__sys_handshake_lock);
    if (__sys_hs_notifying[notifier]) {
        __sys_hs_notifying[notifier] = 0;
        ATOMIC_BIT_RELEASE(__sys_handshake_lock);
        __dpu_resume(notifier);
        return 0;
    }
    if (__sys_hs_waiter[notifier] != NOBODY) {
        ATOMIC_BIT_RELEASE(__sys_handshake_lock);
        return EBUSY;
    }
    __sys_hs_waiter[notifier] = (uint8_t)self;
    ATOMIC_BIT_RELEASE(__sys_handshake_lock);
    __dpu_sleep();
    return 0;
}
