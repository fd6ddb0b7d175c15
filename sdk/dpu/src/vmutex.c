/* OpenPIM DPU runtime: virtual mutexes. */
#include <stdint.h>
#include <vmutex.h>
#include <openpim_ecall.h>

/* The virtual mutexes of one lock byte share its hardware bit: their read-modify-writes of
 * the byte must exclude each other (a bit per id, id % nr_hw_mutexes, let two tasklets update
 * the same byte under different bits and lose one update: a lock held forever). */
static inline uint32_t hw_bit(vmutex_t *v, uint32_t id)
{
    return (uint32_t)(uintptr_t)&v->bits[(id >> 3) % v->nr_hw_mutexes];
}

void vmutex_lock(vmutex_t *vmutex, uint32_t id)
{
    uint32_t bit = hw_bit(vmutex, id);
    uint8_t mask = (uint8_t)(1u << (id & 7u));
    volatile uint8_t *byte = &vmutex->locks[id >> 3];
    for (;;) {
        __dpu_lock(bit);
        uint8_t v = *byte;
        if (!(v & mask)) {
            *byte = (uint8_t)(v | mask);
            __dpu_unlock(bit);
            return;
        }
        __dpu_unlock(bit);
        /* Wait for the holder's unlock without the hardware bit: releasing and taking the bit
         * back to back could keep it from the holder, which needs it to unlock (a livelock the
         * revolver's fixed order can sustain). */
        while (*byte & mask) {
        }
    }
}

void vmutex_unlock(vmutex_t *vmutex, uint32_t id)
{
    uint32_t bit = hw_bit(vmutex, id);
    __dpu_lock(bit);
    vmutex->locks[id >> 3] &= (uint8_t) ~(1u << (id & 7u));
    __dpu_unlock(bit);
}
