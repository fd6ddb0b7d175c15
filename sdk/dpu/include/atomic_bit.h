/* OpenPIM DPU: <atomic_bit.h> — direct use of the 256 atomic bits.
 * An atomic bit is a uint8_t variable in section .atomic (at 0xF0000000 + bit index). */
#ifndef _OPENPIM_ATOMIC_BIT_H
#define _OPENPIM_ATOMIC_BIT_H
#include <stdint.h>
#include <stdbool.h>
#include <attributes.h>
#include <macro_utils.h>
#include <openpim_ecall.h>

#define ATOMIC_BIT_GET(_name) __CONCAT(__atomic_bit_, _name)
/* Declares an atomic bit; may be followed by [n] to declare an array of bits. */
#define ATOMIC_BIT_INIT(_name) uint8_t __atomic_bit ATOMIC_BIT_GET(_name)
#define ATOMIC_BIT_EXTERN(_name) extern ATOMIC_BIT_INIT(_name)

extern uint8_t __atomic_start[];
/* Index (0..255) of an atomic bit. */
#define ATOMIC_BIT_INDEX(_name) ((uint32_t)((uintptr_t)&ATOMIC_BIT_GET(_name) - (uintptr_t)__atomic_start))

/* Sets the bit; true if it was clear (i.e. the caller acquired it). */
static __inline__ bool __atomic_bit_acquire(const volatile void *bit)
{
    return __dpu_acquire((unsigned int)(uintptr_t)bit) != 0;
}
/* Clears the bit; true if it was set. */
static __inline__ bool __atomic_bit_release(const volatile void *bit)
{
    return __ecall1(__ECALL_ATOMIC_RELEASE, (unsigned int)(uintptr_t)bit) != 0;
}
/* Spins until the bit is acquired. */
#define ATOMIC_BIT_ACQUIRE(_name) __dpu_lock((unsigned int)(uintptr_t)&ATOMIC_BIT_GET(_name))
#define ATOMIC_BIT_RELEASE(_name) __dpu_unlock((unsigned int)(uintptr_t)&ATOMIC_BIT_GET(_name))
#define ATOMIC_BIT_TRY_ACQUIRE(_name) __atomic_bit_acquire(&ATOMIC_BIT_GET(_name))

#endif
