/* OpenPIM DPU: <mram.h> — DMA transfers between MRAM and WRAM.
 * Meant: both addresses 8-byte aligned, size a multiple of 8 in 8..2048. As on the DPU, other
 * requests are performed, not refused: the length is what the DMA instruction's 8-bit field
 * encodes (0 or 1 moves 2048 bytes, 12 moves 8), addresses lose their low 3 bits, and an MRAM
 * offset below 64 MiB is accepted without the MRAM base. The run report's advice names each
 * such request; the profile key strictDma=true makes them faults. Ranges past the WRAM or the
 * 64 MiB of MRAM always fault. */
#ifndef _OPENPIM_MRAM_H
#define _OPENPIM_MRAM_H
#include <stdint.h>
#include <attributes.h>
#include <openpim_ecall.h>

/* First free byte of MRAM after the program's MRAM variables (8-aligned): the MRAM heap. */
extern __mram_ptr __dma_aligned uint8_t __sys_used_mram_end[];
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void *)(&__sys_used_mram_end[0]))

#define MRAM_SIZE (64u * 1024u * 1024u)
#define DPU_MRAM_DMA_MIN 8
#define DPU_MRAM_DMA_MAX 2048

static __inline__ __attribute__((__always_inline__)) void
mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes)
{
    __ecall3(__ECALL_DMA_MRAM_TO_WRAM, (unsigned int)(uintptr_t)from, (unsigned int)(uintptr_t)to,
             nb_of_bytes);
}

static __inline__ __attribute__((__always_inline__)) void
mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes)
{
    __ecall3(__ECALL_DMA_WRAM_TO_MRAM, (unsigned int)(uintptr_t)from, (unsigned int)(uintptr_t)to,
             nb_of_bytes);
}

#endif
