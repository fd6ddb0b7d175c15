/* OpenPIM DPU: <seqread.h> — sequential reading of MRAM through a WRAM cache.
 *   seqreader_buffer_t cache = seqread_alloc();
 *   T *p = seqread_init(cache, mram_address, &reader);   // p: WRAM copy of *mram_address
 *   p = seqread_get(p, sizeof(T), &reader);               // next element
 * An element obtained with seqread_get(p, inc, ...) has at least SEQREAD_CACHE_SIZE valid
 * bytes behind it (inc <= SEQREAD_CACHE_SIZE). SEQREAD_CACHE_SIZE: 32..1024, a power of two
 * (default 256); define it before including this header. */
#ifndef _OPENPIM_SEQREAD_H
#define _OPENPIM_SEQREAD_H
#include <stdint.h>
#include <mram.h>

#ifndef SEQREAD_CACHE_SIZE
#define SEQREAD_CACHE_SIZE 256
#endif
_Static_assert(SEQREAD_CACHE_SIZE >= 32 && SEQREAD_CACHE_SIZE <= 1024 &&
                   (SEQREAD_CACHE_SIZE & (SEQREAD_CACHE_SIZE - 1)) == 0,
               "SEQREAD_CACHE_SIZE must be a power of two between 32 and 1024");

typedef uintptr_t seqreader_buffer_t;

typedef struct {
    seqreader_buffer_t wram_cache; /* 2 * SEQREAD_CACHE_SIZE bytes, 8-aligned */
    uintptr_t mram_addr;           /* MRAM address of wram_cache[0] (8-aligned) */
} seqreader_t;

seqreader_buffer_t __seqread_alloc(unsigned int cache_size);
void *__seqread_init(seqreader_buffer_t cache, uintptr_t mram_addr, seqreader_t *reader, unsigned int cache_size);
void *__seqread_refill(void *ptr, seqreader_t *reader, unsigned int cache_size);

/* A cache for one reader (from mem_alloc). */
static __inline__ seqreader_buffer_t seqread_alloc(void)
{
    return __seqread_alloc(SEQREAD_CACHE_SIZE);
}

static __inline__ void *seqread_init(seqreader_buffer_t cache, __mram_ptr void *mram_addr, seqreader_t *reader)
{
    return __seqread_init(cache, (uintptr_t)mram_addr, reader, SEQREAD_CACHE_SIZE);
}

static __inline__ void *seqread_get(void *ptr, uint32_t inc, seqreader_t *reader)
{
    uint8_t *next = (uint8_t *)ptr + inc;
    if (__builtin_expect((uintptr_t)next - reader->wram_cache >= SEQREAD_CACHE_SIZE, 0)) {
        return __seqread_refill(next, reader, SEQREAD_CACHE_SIZE);
    }
    return next;
}

static __inline__ void *seqread_seek(__mram_ptr void *mram_addr, seqreader_t *reader)
{
    return __seqread_init(reader->wram_cache, (uintptr_t)mram_addr, reader, SEQREAD_CACHE_SIZE);
}

static __inline__ __mram_ptr void *seqread_tell(void *ptr, seqreader_t *reader)
{
    return (__mram_ptr void *)(reader->mram_addr + ((uintptr_t)ptr - reader->wram_cache));
}

#endif
