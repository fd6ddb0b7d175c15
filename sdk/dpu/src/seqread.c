/* OpenPIM DPU runtime: sequential MRAM reader. The cache holds 2 * cache_size bytes of MRAM
 * starting at reader->mram_addr; the current element always starts in the first half, so
 * cache_size bytes behind it are valid. */
#include <stdint.h>
#include <alloc.h>
#include <seqread.h>
#include <openpim_ecall.h>

#define MRAM_BASE 0x08000000u
#define MRAM_END (0x08000000u + 64u * 1024u * 1024u)

seqreader_buffer_t __seqread_alloc(unsigned int cache_size)
{
    return (seqreader_buffer_t)(uintptr_t)mem_alloc(2u * cache_size);
}

static void load(seqreader_t *reader, unsigned int cache_size)
{
    uint32_t addr = reader->mram_addr;
    uint32_t len = 2u * cache_size;
    if (addr < MRAM_BASE || addr >= MRAM_END) {
        __dpu_fault(__FAULT_SEQREAD, addr);
    }
    if (len > MRAM_END - addr) {
        len = MRAM_END - addr;
    }
    __ecall3(__ECALL_DMA_MRAM_TO_WRAM, addr, (unsigned int)reader->wram_cache, len);
}

void *__seqread_init(seqreader_buffer_t cache, uintptr_t mram_addr, seqreader_t *reader, unsigned int cache_size)
{
    if ((cache & 7u) != 0 || cache == 0) {
        __dpu_fault(__FAULT_SEQREAD, (unsigned int)cache);
    }
    reader->wram_cache = cache;
    reader->mram_addr = mram_addr & ~(uintptr_t)7u;
    load(reader, cache_size);
    return (void *)(cache + (mram_addr & 7u));
}

void *__seqread_refill(void *ptr, seqreader_t *reader, unsigned int cache_size)
{
    uint32_t offset = (uint32_t)((uintptr_t)ptr - reader->wram_cache);
    uint32_t advance = offset & ~(cache_size - 1u);
    reader->mram_addr += advance;
    load(reader, cache_size);
    return (void *)((uintptr_t)ptr - advance);
}
