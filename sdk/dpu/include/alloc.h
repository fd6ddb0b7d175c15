/* OpenPIM DPU: <alloc.h> — WRAM heap allocators.
 * mem_alloc: 8-aligned bump allocator over the WRAM heap (from __sys_heap_start to the end of
 *   WRAM; reset by the loader before every launch), thread-safe; a DPU fault (heap exhausted)
 *   when the heap is full. mem_reset: frees everything mem_alloc gave (not thread-safe).
 * buddy_*: a buddy allocator inside a block taken from mem_alloc by buddy_init.
 * fsb_*: fixed-size-block allocators inside a block taken from mem_alloc. */
#ifndef _OPENPIM_ALLOC_H
#define _OPENPIM_ALLOC_H
#include <stddef.h>
#include <stdint.h>

void *mem_alloc(size_t size);
void *mem_reset(void);

/* size_of_heap: a power of two (rounded up), 64 .. 32768 bytes. */
void buddy_init(size_t size_of_heap);
void *buddy_alloc(size_t size);   /* NULL when no block is free */
void buddy_free(void *pointer);
void *buddy_realloc(void *pointer, size_t size);
void buddy_reset(void);

typedef struct fsb_allocator_s *fsb_allocator_t;
fsb_allocator_t fsb_alloc(unsigned int block_size, unsigned int nb_of_blocks);
void *fsb_get(fsb_allocator_t allocator);   /* NULL when every block is in use */
void fsb_free(fsb_allocator_t allocator, void *pointer);

/* The bump allocator's pointer (written by the loader before each launch). */
extern volatile uint32_t __sys_heap_pointer;
extern uint8_t __sys_heap_start[];

#endif
