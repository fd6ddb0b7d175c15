/* OpenPIM DPU runtime: mem_alloc / mem_reset (bump allocator over the WRAM heap). */
#include <stddef.h>
#include <stdint.h>
#include <alloc.h>
#include <atomic_bit.h>
#include <openpim_ecall.h>

#define WRAM_END 0x10000u

ATOMIC_BIT_INIT(__sys_heap_lock);

void *mem_alloc(size_t size)
{
    ATOMIC_BIT_ACQUIRE(__sys_heap_lock);
    uint32_t p = (__sys_heap_pointer + 7u) & ~7u;
    uint32_t rounded = ((uint32_t)size + 7u) & ~7u;
    uint32_t end = p + rounded;
    if (rounded < (uint32_t)size || end < p || end > WRAM_END) {
        ATOMIC_BIT_RELEASE(__sys_heap_lock);
        __dpu_fault(__FAULT_HEAP_EXHAUSTED, (unsigned int)size);
    }
    __sys_heap_pointer = end;
    ATOMIC_BIT_RELEASE(__sys_heap_lock);
    return (void *)(uintptr_t)p;
}

void *mem_reset(void)
{
    uint32_t start = ((uint32_t)(uintptr_t)__sys_heap_start + 7u) & ~7u;
    __sys_heap_pointer = start;
    return (void *)(uintptr_t)start;
}
