/* OpenPIM DPU: <mram.h> — DMA transfers between MRAM and WRAM.
 * Both addresses 8-byte aligned; size a multiple of 8 in 8..2048. A constant wrong size is a
 * compile-time error; anything wrong at run time is a DPU fault (the DMA environment call
 * checks it). */
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

/* Compile-time size check for constant sizes (non-constant sizes are checked at run time). */
#define __MRAM_SIZE_OK(n) ((n) >= 8 && (n) <= 2048 && ((n) & 7) == 0)
#define __MRAM_CHECK_SIZE(fn, n)                                                             \
    _Static_assert(__MRAM_SIZE_OK(__builtin_choose_expr(__builtin_constant_p(n), (n), 8)),     \
                   fn ": the size must be a multiple of 8 between 8 and 2048 bytes")

#define mram_read(from, to, n)                                                               \
    ({                                                                                       \
        __MRAM_CHECK_SIZE("mram_read", n);                                                   \
        (mram_read)((from), (to), (n));                                                      \
    })
#define mram_write(from, to, n)                                                              \
    ({                                                                                       \
        __MRAM_CHECK_SIZE("mram_write", n);                                                  \
        (mram_write)((from), (to), (n));                                                     \
    })

#endif
