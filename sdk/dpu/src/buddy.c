/* OpenPIM DPU runtime: buddy allocator (blocks of 16 << k bytes inside a heap taken from
 * mem_alloc by buddy_init). Thread-safe (one atomic bit). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <alloc.h>
#include <atomic_bit.h>
#include <openpim_ecall.h>

#define MIN_SHIFT 4u /* 16-byte minimum block */
#define MAX_ORDERS 12u
#define TAG_USED 0x80u

struct free_node {
    struct free_node *next;
    struct free_node *prev;
};

static uint8_t *heap;
static uint8_t *tags;      /* per 16-byte unit: 0 = not a block head, else (order + 1) | TAG_USED? */
static uint32_t heap_size;
static uint32_t max_order; /* heap_size == 16 << max_order */
static struct free_node *free_lists[MAX_ORDERS];

ATOMIC_BIT_INIT(__sys_buddy_lock);

static void list_push(uint32_t order, uint8_t *block)
{
    struct free_node *n = (struct free_node *)block;
    n->prev = NULL;
    n->next = free_lists[order];
    if (n->next) {
        n->next->prev = n;
    }
    free_lists[order] = n;
    tags[(uint32_t)(block - heap) >> MIN_SHIFT] = (uint8_t)(order + 1);
}

static void list_remove(uint32_t order, uint8_t *block)
{
    struct free_node *n = (struct free_node *)block;
    if (n->prev) {
        n->prev->next = n->next;
    } else {
        free_lists[order] = n->next;
    }
    if (n->next) {
        n->next->prev = n->prev;
    }
    tags[(uint32_t)(block - heap) >> MIN_SHIFT] = 0;
}

static void reset_locked(void)
{
    memset(tags, 0, heap_size >> MIN_SHIFT);
    for (uint32_t i = 0; i < MAX_ORDERS; i++) {
        free_lists[i] = NULL;
    }
    list_push(max_order, heap);
}

void buddy_init(size_t size_of_heap)
{
    uint32_t size = 64;
    while (size < size_of_heap && size < 32768u) {
        size <<= 1;
    }
    ATOMIC_BIT_ACQUIRE(__sys_buddy_lock);
    heap = mem_alloc(size);
    tags = mem_alloc(size >> MIN_SHIFT);
    heap_size = size;
    max_order = 0;
    while ((16u << max_order) < size) {
        max_order++;
    }
    reset_locked();
    ATOMIC_BIT_RELEASE(__sys_buddy_lock);
}

void buddy_reset(void)
{
    if (!heap) {
        return;
    }
    ATOMIC_BIT_ACQUIRE(__sys_buddy_lock);
    reset_locked();
    ATOMIC_BIT_RELEASE(__sys_buddy_lock);
}

void *buddy_alloc(size_t size)
{
    if (!heap) {
        __dpu_fault(__FAULT_ALLOCATOR, 0); /* buddy_init was not called */
    }
    uint32_t order = 0;
    while ((16u << order) < size) {
        order++;
        if (order > max_order) {
            return NULL;
        }
    }
    ATOMIC_BIT_ACQUIRE(__sys_buddy_lock);
    uint32_t k = order;
    while (k <= max_order && !free_lists[k]) {
        k++;
    }
    if (k > max_order) {
        ATOMIC_BIT_RELEASE(__sys_buddy_lock);
        return NULL;
    }
    uint8_t *block = (uint8_t *)free_lists[k];
    list_remove(k, block);
    while (k > order) {
        k--;
        list_push(k, block + (16u << k));
    }
    tags[(uint32_t)(block - heap) >> MIN_SHIFT] = (uint8_t)((order + 1) | TAG_USED);
    ATOMIC_BIT_RELEASE(__sys_buddy_lock);
    return block;
}

static uint32_t block_order(void *pointer)
{
    uint8_t *p = pointer;
    if (!heap || p < heap || p >= heap + heap_size || (((uint32_t)(p - heap)) & 15u) != 0) {
        __dpu_fault(__FAULT_ALLOCATOR, (unsigned int)(uintptr_t)pointer);
    }
    uint8_t tag = tags[(uint32_t)(p - heap) >> MIN_SHIFT];
    if (!(tag & TAG_USED)) {
        __dpu_fault(__FAULT_ALLOCATOR, (unsigned int)(uintptr_t)pointer); /* double free */
    }
    return (uint32_t)(tag & 0x7fu) - 1u;
}

void buddy_free(void *pointer)
{
    if (!pointer) {
        return;
    }
    ATOMIC_BIT_ACQUIRE(__sys_buddy_lock);
    uint32_t order = block_order(pointer);
    uint32_t offset = (uint32_t)((uint8_t *)pointer - heap);
    tags[offset >> MIN_SHIFT] = 0;
    while (order < max_order) {
        uint32_t buddy = offset ^ (16u << order);
        if (tags[buddy >> MIN_SHIFT] != order + 1) {
            break;
        }
        list_remove(order, heap + buddy);
        offset &= ~(16u << order);
        order++;
    }
    list_push(order, heap + offset);
    ATOMIC_BIT_RELEASE(__sys_buddy_lock);
}

void *buddy_realloc(void *pointer, size_t size)
{
    if (!pointer) {
        return buddy_alloc(size);
    }
    if (size == 0) {
        buddy_free(pointer);
        return NULL;
    }
    ATOMIC_BIT_ACQUIRE(__sys_buddy_lock);
    uint32_t capacity = 16u << block_order(pointer);
    ATOMIC_BIT_RELEASE(__sys_buddy_lock);
    if (size <= capacity) {
        return pointer;
    }
    void *fresh = buddy_alloc(size);
    if (!fresh) {
        return NULL;
    }
    memcpy(fresh, pointer, capacity);
    buddy_free(pointer);
    return fresh;
}
