/* OpenPIM DPU runtime: fixed-size-block allocators. Thread-safe (one atomic bit). */
#include <stddef.h>
#include <stdint.h>
#include <alloc.h>
#include <atomic_bit.h>
#include <openpim_ecall.h>

struct fsb_allocator_s {
    void *free_list;
    uint8_t *first;
    uint32_t block_size;
    uint32_t nb_of_blocks;
};

ATOMIC_BIT_INIT(__sys_fsb_lock);

fsb_allocator_t fsb_alloc(unsigned int block_size, unsigned int nb_of_blocks)
{
    uint32_t bs = (block_size + 7u) & ~7u;
    if (bs < 8u) {
        bs = 8u;
    }
    struct fsb_allocator_s *a = mem_alloc(sizeof(*a));
    uint8_t *blocks = mem_alloc((size_t)bs * nb_of_blocks);
    a->first = blocks;
    a->block_size = bs;
    a->nb_of_blocks = nb_of_blocks;
    a->free_list = NULL;
    for (uint32_t i = nb_of_blocks; i > 0; i--) {
        void **b = (void **)(blocks + (i - 1) * bs);
        *b = a->free_list;
        a->free_list = b;
    }
    return a;
}

void *fsb_get(fsb_allocator_t allocator)
{
    ATOMIC_BIT_ACQUIRE(__sys_fsb_lock);
    void **b = allocator->free_list;
    if (b) {
        allocator->free_list = *b;
    }
    ATOMIC_BIT_RELEASE(__sys_fsb_lock);
    return b;
}

void fsb_free(fsb_allocator_t allocator, void *pointer)
{
    if (!pointer) {
        return;
    }
    uint8_t *p = pointer;
    if (p < allocator->first || p >= allocator->first + allocator->block_size * allocator->nb_of_blocks) {
        __dpu_fault(__FAULT_ALLOCATOR, (unsigned int)(uintptr_t)pointer);
    }
    ATOMIC_BIT_ACQUIRE(__sys_fsb_lock);
    *(void **)pointer = allocator->free_list;
    allocator->free_list = pointer;
    ATOMIC_BIT_RELEASE(__sys_fsb_lock);
}
